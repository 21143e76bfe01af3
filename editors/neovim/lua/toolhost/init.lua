---toolhost for Neovim: OpenCode's agent tools served by the toolhost sidecar,
---working on your buffers. `:help toolhost`.
local M = {}

local did_setup = false

---@class toolhost.CallOpts
---@field root? string project root whose sidecar runs the call (default: the current buffer's)
---@field sessionID? string
---@field messageID? string
---@field callID? string
---@field agent? string
---@field model? {providerID: string, modelID: string}
---@field on_update? fun(update: table) each tools/update of this call (execute only)

---@alias toolhost.Callback fun(err: {code?: integer, message: string}?, result: any)

---Configures the plugin; starts the sidecar for the current project unless
---`autostart = false`. Calling it again replaces the options.
---@param opts? toolhost.Config|table
function M.setup(opts)
  if vim.fn.has("nvim-0.10") ~= 1 then
    vim.notify("toolhost needs Neovim 0.10 or newer", vim.log.levels.ERROR)
    return
  end
  local config = require("toolhost.config")
  local problems = config.setup(opts)
  for _, problem in ipairs(problems) do
    require("toolhost.log").warn("setup: %s", problem)
    vim.notify("toolhost: " .. problem, vim.log.levels.WARN)
  end
  did_setup = true

  local group = vim.api.nvim_create_augroup("toolhost", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufFilePost" }, {
    group = group,
    desc = "toolhost: sync file buffers to the sidecar",
    callback = function(args)
      require("toolhost.client").attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufWritePre", {
    group = group,
    desc = "toolhost: a save after the agent wrote the file does not warn about it",
    callback = function(args)
      require("toolhost.documents").before_write(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ "BufWritePost", "FileChangedShellPost" }, {
    group = group,
    desc = "toolhost: remember when a buffer matched its file",
    callback = function(args)
      require("toolhost.documents").remember(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufModifiedSet", {
    group = group,
    desc = "toolhost: an undo back to the last save is not the disk after the agent wrote it",
    callback = function(args)
      require("toolhost.documents").keep_modified(args.buf)
    end,
  })
  require("toolhost.diagnostics").setup(group)
  M.set_keymaps()
  M.ensure_helptags()

  if config.options.autostart then
    local client = require("toolhost.client")
    client.start(client.root_for(0))
    -- Buffers of other roots already open get their own sidecar.
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      client.attach(buf)
    end
  end
end

local mapped = {} ---@type string[] global keymaps set by the last setup()

---The global keymaps (`keys` in setup()): review and cancel.
function M.set_keymaps()
  for _, lhs in ipairs(mapped) do
    pcall(vim.keymap.del, "n", lhs)
  end
  mapped = {}
  local keys = require("toolhost.config").options.keys
  local function map(lhs, fn, desc)
    if type(lhs) == "string" and lhs ~= "" then
      vim.keymap.set("n", lhs, fn, { desc = "toolhost: " .. desc })
      mapped[#mapped + 1] = lhs
    end
  end
  map(keys.review, function()
    M.review()
  end, "open the pending review")
  map(keys.cancel, function()
    require("toolhost.commands").cancel()
  end, "stop the running tool calls")
end

---`:help toolhost` works however the plugin was installed: a plugin manager that only
---indexes the repository root's doc/ (the plugin lives in editors/neovim) leaves this
---doc without tags, so they are made here when missing or older than the doc.
function M.ensure_helptags()
  local here = debug.getinfo(1, "S").source:gsub("^@", "")
  local doc = vim.fs.joinpath(vim.fn.fnamemodify(here, ":p:h:h:h"), "doc")
  local txt, tags = vim.fs.joinpath(doc, "toolhost.txt"), vim.fs.joinpath(doc, "tags")
  local txt_stat, tags_stat = vim.uv.fs_stat(txt), vim.uv.fs_stat(tags)
  if txt_stat and (not tags_stat or tags_stat.mtime.sec < txt_stat.mtime.sec) then
    local ok, err = pcall(vim.cmd.helptags, vim.fn.fnameescape(doc))
    if not ok then
      require("toolhost.log").warn("could not make the help tags in %s: %s", doc, err)
    end
  end
end

local function ensure_setup()
  if not did_setup then
    M.setup({})
  end
end

---@param opts table
---@param keys string[]
---@return table
local function pick(opts, keys)
  local out = {}
  for _, key in ipairs(keys) do
    if opts[key] ~= nil then
      out[key] = opts[key]
    end
  end
  return out
end

---Lists the tools a model is offered: `callback(err, tools)` with the array of
---`{id, description, parameters, kind, annotations}` (PROTOCOL.md tools/list).
---Works before the sidecar has finished starting (the call waits for it).
---@param opts? toolhost.CallOpts
---@param callback toolhost.Callback
---@return fun() cancel
function M.list(opts, callback)
  ensure_setup()
  opts = opts or {}
  local client = require("toolhost.client")
  local params = require("toolhost.util").object(pick(opts, { "model", "agent", "sessionID" }))
  return client.request(opts.root or client.root_for(0), "tools/list", params, function(err, result)
    if err then
      return callback(err, nil)
    end
    callback(nil, type(result) == "table" and result.tools or {})
  end)
end

---Runs a tool: `callback(err, result)` with the ToolResult `{title, output,
---metadata, attachments, isError}`. `err` is set only for protocol faults, a
---cancelled call, or a sidecar that could not start; a failing tool is a result
---with `isError = true` whose `output` is written for the model.
---Works before the sidecar has finished starting (the call waits for it).
---@param tool string tool id, e.g. "read"
---@param args? table the tool's arguments
---@param opts? toolhost.CallOpts
---@param callback toolhost.Callback
---@return fun() cancel stops the call ($/cancelRequest); the callback then gets err.code -32800
function M.execute(tool, args, opts, callback)
  ensure_setup()
  opts = opts or {}
  local util = require("toolhost.util")
  local client = require("toolhost.client")
  local progress = require("toolhost.progress")
  local call_id = opts.callID or util.new_id("call")
  local params = pick(opts, { "sessionID", "messageID", "agent", "model", "turnID" })
  params.tool = tool
  params.args = util.object(args)
  params.callID = call_id
  local cancel = client.request(
    opts.root or client.root_for(0),
    "tools/execute",
    params,
    function(err, result)
      progress.finish(call_id, result, err)
      require("toolhost.documents").refresh_stale()
      callback(err, result)
    end,
    function(c)
      progress.start(c.id, call_id, tool, args or {}, opts.on_update)
      if cancel then
        progress.set_cancel(call_id, cancel)
      end
    end
  )
  progress.set_cancel(call_id, cancel) -- when it was sent at once (the sidecar was ready)
  return cancel
end

---The asks waiting for an answer, oldest first (bash included): each `{id, tool, title,
---permission, patterns, files, hunks, unsaved, always}`; a hunk is `{id, file, header,
---lines}`. An ask is listed as soon as it arrives and gone once answered or withdrawn.
---@return table[]
function M.pending()
  return require("toolhost.review").pending()
end

---Answers a pending ask: `answer = {reply = "once"|"always"|"reject", hunks?, files?,
---message?, edited?, scope?, alwaysOption?, unsaved?}` (`:help toolhost-review`).
---@param id string
---@param answer table
---@return boolean ok
---@return string? error
function M.answer(id, answer)
  return require("toolhost.review").answer(id, answer)
end

---Opens the review window (and moves into it, unless `focus = false`).
---@param opts? {focus?: boolean}
function M.review(opts)
  require("toolhost.review").open({ focus = not opts or opts.focus ~= false })
end

---Begins a turn (the calls for one user message: `execute` with `opts.turnID` joins it),
---so `:Toolhost undo` puts back exactly what it changed. Agent plugins call it per prompt.
---@param turn_id string
---@param title? string
---@param opts? {root?: string, sessionID?: string}
function M.begin_turn(turn_id, title, opts)
  opts = opts or {}
  local client = require("toolhost.client")
  client.with_client(opts.root or client.root_for(0), function(c)
    if c then
      local params = { turnID = turn_id, title = title or "", sessionID = opts.sessionID }
      require("toolhost.util").notify(c, "turn/begin", params)
    end
  end)
end

---Stops the running tool calls made through this API (or the one with `call_id`).
---@param call_id? string
---@return integer stopped
function M.cancel(call_id)
  return require("toolhost.progress").cancel(call_id)
end

---@param start fun(cb: toolhost.Callback): fun()
---@param timeout_ms integer
---@return any result, table? err
local function wait(start, timeout_ms)
  local done, err, result = false, nil, nil
  local cancel = start(function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(timeout_ms, function()
    return done
  end, 10) then
    cancel()
    return nil, { code = -32800, message = ("no answer within %d ms"):format(timeout_ms) }
  end
  return result, err
end

---Blocking `list` for config-time code (e.g. registering tools in an agent plugin).
---Not for use inside a fast event or an LSP handler.
---@param opts? toolhost.CallOpts
---@param timeout_ms? integer default 10000
---@return table[]? tools
---@return table? err
function M.list_sync(opts, timeout_ms)
  return wait(function(cb)
    return M.list(opts, cb)
  end, timeout_ms or 10000)
end

---Blocking `execute`; the editor keeps processing events while it waits (a
---permission prompt can still be answered).
---@param tool string
---@param args? table
---@param opts? toolhost.CallOpts
---@param timeout_ms? integer default 120000
---@return table? result
---@return table? err
function M.execute_sync(tool, args, opts, timeout_ms)
  return wait(function(cb)
    return M.execute(tool, args, opts, cb)
  end, timeout_ms or 120000)
end

return M
