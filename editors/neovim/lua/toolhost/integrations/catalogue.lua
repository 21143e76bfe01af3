---The toolhost catalogue for agent plugins: fetched once, cached, refreshed when
---the sidecar says the list changed (`User ToolhostToolsChanged`: a custom tool
---or a config file changed), and run through the sidecar so every call gets
---toolhost's review prompts, your buffers and the diagnostics.
local M = {}

---@class toolhost.integrations.Options
---@field prefix? string the agent plugin's tool names are prefix .. id (default "toolhost_")
---@field root? string the project whose sidecar lists and runs the tools
---@field agent? string toolhost agent whose rules decide what is offered
---@field model? {providerID: string, modelID: string}
---@field sessionID? string

---@type table[]? the last tools/list answer
local tools = nil
---@type fun(tools: table[])[]
local listeners = {}
local subscribed = false
local refreshing = false
---@type toolhost.integrations.Options
local options = {}

---@param opts? toolhost.integrations.Options
function M.configure(opts)
  options = vim.tbl_extend("force", options, opts or {})
end

---@return toolhost.integrations.Options
function M.options()
  return options
end

local function call_opts()
  local out = {}
  for _, key in ipairs({ "root", "agent", "model", "sessionID" }) do
    out[key] = options[key]
  end
  return out
end

---@param list table[]
local function publish(list)
  tools = list
  for _, listener in ipairs(listeners) do
    local ok, err = pcall(listener, list)
    if not ok then
      require("toolhost.log").warn("integrations: a catalogue listener failed: %s", err)
    end
  end
end

---Fetch the catalogue again; `cb(err, tools)` when it arrives.
---@param cb? fun(err: table?, tools: table[]?)
function M.refresh(cb)
  if refreshing and not cb then
    return
  end
  refreshing = true
  require("toolhost").list(call_opts(), function(err, list)
    refreshing = false
    if err then
      require("toolhost.log").warn("integrations: tools/list failed: %s", err.message)
    else
      publish(list or {})
    end
    if cb then
      cb(err, list)
    end
  end)
end

---Listen for `tools/listChanged` once, and fetch the first catalogue.
function M.start()
  if not subscribed then
    subscribed = true
    vim.api.nvim_create_autocmd("User", {
      pattern = "ToolhostToolsChanged",
      group = vim.api.nvim_create_augroup("toolhost.integrations", { clear = true }),
      desc = "toolhost: refresh the tools registered in agent plugins",
      callback = function()
        M.refresh()
      end,
    })
  end
  if tools == nil then
    M.refresh()
  end
end

---Call `fn(tools)` now if the catalogue is known, and each time it changes.
---@param fn fun(tools: table[])
function M.on_change(fn)
  table.insert(listeners, fn)
  if tools then
    fn(tools)
  end
end

---The cached catalogue; the first time only, waits for it (up to `timeout_ms`).
---@param timeout_ms? integer
---@return table[]
function M.get(timeout_ms)
  if tools == nil then
    local list = require("toolhost").list_sync(call_opts(), timeout_ms or 10000)
    if list then
      publish(list)
    end
  end
  return tools or {}
end

---The agent plugin's name for a toolhost tool.
---@param id string
---@return string
function M.name(id)
  return (options.prefix or "toolhost_") .. id
end

---The first line of a description (for menus; the model gets all of it).
---@param text? string
---@return string
function M.summary(text)
  return ((text or ""):match("[^\n]*"))
end

---Run a tool in the sidecar; `cb(ok, text, result)`: the text is what the model
---reads (the output, or why the call could not run).
---@param id string
---@param args table?
---@param cb fun(ok: boolean, text: string, result: table?)
---@param on_update? fun(update: table)
---@return fun() cancel
function M.run(id, args, cb, on_update)
  local opts = call_opts()
  opts.on_update = on_update
  return require("toolhost").execute(id, args or vim.empty_dict(), opts, function(err, result)
    if err then
      return cb(false, ("toolhost could not run %s: %s"):format(id, err.message), nil)
    end
    local text = result.output or ""
    local attachments = result.attachments or {}
    if #attachments > 0 then
      local note = "\n(%d attachment(s) omitted: this agent plugin cannot show them)"
      text = text .. note:format(#attachments)
    end
    cb(not result.isError, text, result)
  end)
end

---For tests: forget the cache and the listeners.
function M._reset()
  tools, listeners, refreshing = nil, {}, false
end

return M
