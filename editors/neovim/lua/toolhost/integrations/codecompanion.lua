---toolhost's tools as codecompanion.nvim (v19) tools, in one line:
---
---    require("toolhost.integrations.codecompanion").setup()
---
---after `require("codecompanion").setup(...)`, or as an extension:
---
---    extensions = { toolhost = { callback = "toolhost.integrations.codecompanion", opts = {} } }
---
---Every tool of the catalogue becomes `toolhost_<id>` with its full JSON Schema
---(top-level `schema`, OpenAI function format), and the group `toolhost` holds
---them all: type `@{toolhost}` in a chat. Each call runs in the sidecar, so
---toolhost's own review prompts ask (codecompanion's approval is off for these
---tools), edits land in your buffers and the diagnostics come back. The list is
---cached and follows `tools/listChanged`. `:help toolhost-codecompanion`.
local catalogue = require("toolhost.integrations.catalogue")

local M = {}

---@class toolhost.integrations.CodeCompanionOptions: toolhost.integrations.Options
---@field group? string|false the tool group's name (default "toolhost"; false: no group)
---@field require_approval? boolean also ask codecompanion's approval (default false)

---@type toolhost.integrations.CodeCompanionOptions
local options = { group = "toolhost", require_approval = false }
---@type table<string, true> the names this module put in codecompanion's config
local registered = {}

---codecompanion's tool config table (`interactions.chat.tools`), or nil before its setup.
---@return table?
local function tools_config()
  local ok, config = pcall(require, "codecompanion.config")
  if not ok or type(config) ~= "table" then
    return nil
  end
  local interactions = config.interactions or config.strategies
  return interactions and interactions.chat and interactions.chat.tools or nil
end

---The last result of a run of cmds (codecompanion hands a list): what the model reads,
---and the one line the chat shows the person (the raw output, `<path>…</content>`
---and all, would fill the chat and fold badly).
---@param output any
---@return string for_llm, string? for_user
local function last(output)
  if type(output) == "table" and not output.for_llm then
    output = output[#output]
  end
  if type(output) == "table" and output.for_llm then
    return tostring(output.for_llm), output.for_user
  end
  if type(output) == "table" then
    return vim.json.encode(output)
  end
  return tostring(output or "")
end

---The line the chat shows for one result: the tool, its title, and for a failure the
---first line of what went wrong.
---@param name string
---@param ok boolean
---@param text string
---@param result? table
---@return string
function M.user_line(name, ok, text, result)
  local title = type(result) == "table" and type(result.title) == "string" and result.title or ""
  local first = text:match("[^\n]+") or ""
  if #first > 80 then
    first = first:sub(1, 77) .. "…"
  end
  if not ok then
    return ("**%s** failed: %s"):format(name, first ~= "" and first or "no output")
  end
  if title ~= "" then
    return ("**%s**: `%s`"):format(name, title)
  end
  return ("**%s**%s"):format(name, first ~= "" and (": " .. first) or "")
end

---One toolhost tool as a resolved codecompanion tool (built afresh per resolve).
---@param tool table a tools/list entry
---@return table
function M.tool(tool)
  local name = catalogue.name(tool.id)
  return {
    name = name,
    schema = {
      type = "function",
      ["function"] = {
        name = name,
        description = tool.description,
        -- The catalogue's schema unchanged (enums, array items, nested objects).
        parameters = vim.deepcopy(tool.parameters),
      },
    },
    cmds = {
      function(self, args, opts)
        catalogue.run(tool.id, args, function(ok, text, result)
          local data = { for_llm = text, for_user = M.user_line(name, ok, text, result) }
          opts.output_cb({ status = ok and "success" or "error", data = data })
        end)
      end,
    },
    output = {
      prompt = function(self)
        return ("Run toolhost's %s?"):format(tool.id)
      end,
      success = function(self, stdout, meta)
        meta.tools.chat:add_tool_output(self, last(stdout))
      end,
      error = function(self, stderr, meta)
        meta.tools.chat:add_tool_output(self, last(stderr))
      end,
      rejected = function(self, meta)
        meta.tools.chat:add_tool_output(self, ("The user declined to run %s."):format(name))
      end,
    },
  }
end

---The config entry codecompanion resolves (a `callback` returning the tool).
---@param tool table
---@return table
local function entry(tool)
  return {
    description = catalogue.summary(tool.description),
    callback = function()
      return M.tool(tool)
    end,
    opts = {
      require_approval_before = options.require_approval == true,
      _toolhost = { id = tool.id },
    },
  }
end

---Put `list` into codecompanion's config, replacing what was registered before.
---@param list table[]
function M.register(list)
  local config = tools_config()
  if not config then
    return
  end
  for name in pairs(registered) do
    config[name] = nil
  end
  registered = {}
  local names = {}
  for _, tool in ipairs(list) do
    local name = catalogue.name(tool.id)
    config[name] = entry(tool)
    registered[name] = true
    table.insert(names, name)
  end
  if options.group then
    config.groups = config.groups or {}
    config.groups[options.group] = {
      description = "toolhost: OpenCode's tools on your buffers, with toolhost's review",
      system_prompt = "The toolhost_* tools read, search and change files in the user's editor; "
        .. "a read sees unsaved buffers, and edits may be reviewed by the user first.",
      tools = names,
      opts = { collapse_tools = true },
    }
  end
end

---@param opts? toolhost.integrations.CodeCompanionOptions
function M.setup(opts)
  opts = opts or {}
  options = vim.tbl_extend("force", options, opts)
  catalogue.configure(opts)
  if not M._listening then
    M._listening = true
    catalogue.on_change(M.register)
  end
  catalogue.start()
end

---The names registered now (for tests and `:checkhealth`).
---@return string[]
function M.registered()
  local names = vim.tbl_keys(registered)
  table.sort(names)
  return names
end

---codecompanion's ACP adapter `name` (e.g. "opencode", "claude_code", "codex") with
---its agent run through `toolhost acp`, for `adapters.acp`:
---
---    adapters = { acp = { toolhost_opencode = function()
---      return require("toolhost.integrations.codecompanion").acp("opencode")
---    end } }
---
---`opts.adapter` is laid over the adapter (as codecompanion's `extend` does).
---@param name string
---@param opts? toolhost.integrations.AcpOptions|{ adapter?: table }
---@return table
function M.acp(name, opts)
  opts = opts or {}
  local ok, base = pcall(require, "codecompanion.adapters.acp." .. name)
  if not ok or type(base) ~= "table" or type(base.commands) ~= "table" then
    error(("toolhost: codecompanion has no ACP adapter named %q"):format(name), 0)
  end
  local adapter = vim.deepcopy(base)
  for key, command in pairs(base.commands) do
    adapter.commands[key] = require("toolhost.integrations.acp").wrap(command, opts)
  end
  adapter.formatted_name = (base.formatted_name or name) .. " (toolhost)"
  return require("codecompanion.adapters").extend(adapter, opts.adapter or {})
end

-- codecompanion's extension interface: `setup(opts)` and `exports`.
M.exports = {
  refresh = function()
    catalogue.refresh()
  end,
  registered = M.registered,
}

return M
