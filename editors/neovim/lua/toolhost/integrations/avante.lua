---toolhost's tools as avante.nvim `custom_tools`, in one line:
---
---    require("toolhost.integrations.avante").setup()
---
---after `require("avante").setup(...)`, or in avante's own options:
---
---    custom_tools = require("toolhost.integrations.avante").custom_tools
---
---Every tool of the catalogue becomes `toolhost_<id>`; its JSON Schema becomes
---avante's field list with enums (`choices`), array `items` and nested objects
---(`fields`) kept, since avante builds the provider's schema from those. A call
---runs in the sidecar through avante's current callback API (`func(input, opts)`
---answering with `opts.on_complete(result, err)`), with toolhost's review prompts.
---The list is cached (a lookup never waits for the sidecar once it has answered)
---and follows `tools/listChanged`. `:help toolhost-avante`.
local catalogue = require("toolhost.integrations.catalogue")

local M = {}

---@type table[]? avante tools built from the last catalogue
local built = nil

---The first JSON type that is not "null" (`{"string", "null"}` -> "string").
---@param t any
---@return string?
local function json_type(t)
  if type(t) == "table" then
    for _, name in ipairs(t) do
      if name ~= "null" then
        return name
      end
    end
    return nil
  end
  return t
end

---What avante's field list cannot say (defaults, bounds), kept in the description.
---@param prop table
---@return string
local function describe(prop)
  local text = prop.description or ""
  local notes = {}
  local kept = { "default", "minimum", "maximum", "exclusiveMinimum", "minItems", "format" }
  for _, key in ipairs(kept) do
    if prop[key] ~= nil and prop[key] ~= vim.NIL then
      table.insert(notes, ("%s: %s"):format(key, vim.json.encode(prop[key])))
    end
  end
  if #notes > 0 then
    text = (text ~= "" and (text .. " ") or "") .. "(" .. table.concat(notes, ", ") .. ")"
  end
  return text
end

local fields

---One JSON Schema property as an avante field.
---@param name string
---@param prop table
---@param optional boolean
---@return table
function M.field(name, prop, optional)
  local kind = json_type(prop.type)
  local field = { name = name, description = describe(prop), optional = optional or nil }
  if type(prop.enum) == "table" then
    field.choices = prop.enum
  end
  if kind == "object" or (kind == nil and type(prop.properties) == "table") then
    field.type = "object"
    field.fields = fields(prop)
  elseif kind == "array" then
    field.type = "array"
    if type(prop.items) == "table" then
      field.items = M.field("items", prop.items, false)
    end
  else
    field.type = kind or "string"
  end
  return field
end

---An object schema's properties as avante fields: required ones first, then by name.
---@param schema table
---@return table[]
fields = function(schema)
  local required = {}
  for _, name in ipairs(schema.required or {}) do
    required[name] = true
  end
  local names = vim.tbl_keys(schema.properties or {})
  table.sort(names, function(a, b)
    if (required[a] or false) ~= (required[b] or false) then
      return required[a] == true
    end
    return a < b
  end)
  local out = {}
  for _, name in ipairs(names) do
    table.insert(out, M.field(name, schema.properties[name], not required[name]))
  end
  return out
end
M.fields = fields

---One toolhost tool as an avante custom tool.
---@param tool table a tools/list entry
---@return table
function M.tool(tool)
  return {
    name = catalogue.name(tool.id),
    description = tool.description,
    param = { type = "table", fields = fields(tool.parameters or {}) },
    returns = {
      { name = "output", description = "What the tool reports", type = "string" },
      { name = "error", description = "Why the call failed", type = "string", optional = true },
    },
    ---@param input table|string the model's arguments
    ---@param opts {on_complete?: fun(result: string?, err: string?), on_log?: fun(log: string)}
    func = function(input, opts)
      opts = opts or {}
      if type(input) == "string" then
        local ok, decoded = pcall(vim.json.decode, input)
        input = ok and decoded or {}
      end
      local on_log = opts.on_log
      local function progress(update)
        if on_log and type(update) == "table" and type(update.title) == "string" then
          on_log(update.title)
        end
      end
      if not opts.on_complete then -- an older avante that wants the answer returned
        local done, text = nil, nil
        catalogue.run(tool.id, input, function(ok, out)
          done, text = ok, out
        end, progress)
        vim.wait(120000, function()
          return done ~= nil
        end, 20)
        if done then
          return text, nil
        end
        return nil, text or ("toolhost's %s did not answer"):format(tool.id)
      end
      catalogue.run(tool.id, input, function(ok, text)
        if ok then
          opts.on_complete(text, nil)
        else
          opts.on_complete(nil, text)
        end
      end, progress)
      return nil, nil -- answered through on_complete
    end,
  }
end

---The avante tools for the catalogue (cached; rebuilt when the list changes).
---@return table[]
function M.custom_tools()
  if built == nil then
    built = vim.tbl_map(M.tool, catalogue.get())
  end
  return built
end

---Make avante's `custom_tools` include toolhost's, keeping the user's own.
local function install()
  local ok, config = pcall(require, "avante.config")
  if not ok or type(config) ~= "table" or type(config._options) ~= "table" then
    return
  end
  local own = config._options.custom_tools
  if own == M._installed then
    return
  end
  M._installed = function()
    local mine = type(own) == "function" and own() or own or {}
    local theirs = vim.tbl_filter(function(t)
      return not vim.startswith(t.name or "", catalogue.name(""))
    end, mine)
    return vim.list_extend(vim.list_extend({}, theirs), M.custom_tools())
  end
  config._options.custom_tools = M._installed
end

---avante's ACP provider `name` (e.g. "opencode", "claude-code", "codex") with its
---agent run through `toolhost acp`, for `acp_providers`:
---
---    acp_providers = { ["toolhost-opencode"] = require("toolhost.integrations.avante").acp("opencode") }
---
---`opts.provider` is laid over the entry (`env`, `auth_method`, ...). A name avante
---does not know needs `opts.provider.command` (and `args`).
---@param name string
---@param opts? toolhost.integrations.AcpOptions|{ provider?: table }
---@return table
function M.acp(name, opts)
  opts = opts or {}
  local ok, config = pcall(require, "avante.config")
  local known = ok and config._defaults and config._defaults.acp_providers or {}
  local entry = vim.tbl_deep_extend("force", {}, known[name] or {}, opts.provider or {})
  if type(entry.command) ~= "string" then
    error(("toolhost: avante has no ACP provider named %q; give provider.command"):format(name), 0)
  end
  local command = require("toolhost.integrations.acp").wrap({ entry.command }, opts)
  entry.command = table.remove(command, 1)
  entry.args = vim.list_extend(command, entry.args or {})
  return entry
end

---@param opts? toolhost.integrations.Options
function M.setup(opts)
  catalogue.configure(opts)
  if not M._listening then
    M._listening = true
    catalogue.on_change(function(list)
      built = vim.tbl_map(M.tool, list)
    end)
  end
  catalogue.start()
  install()
end

return M
