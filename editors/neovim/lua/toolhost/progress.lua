---Running tools as LSP progress. Each tools/execute made through the Lua API
---reports begin (when sent), report (each tools/update) and end (the result)
---through Neovim's own `$/progress` handler, so `client.progress`,
---`vim.lsp.status()` and the `LspProgress` event (fidget.nvim, statuslines) show
---them like any language server's work. `$/progress` the sidecar sends itself is
---handled natively. tools/update is also published as `User ToolhostUpdate`.
local config = require("toolhost.config")

local M = {}

---@type table<string, {client_id: integer, token: string, on_update?: fun(update: table)}>
local calls = {}

---@param client_id integer
---@param token string
---@param value table
local function emit(client_id, token, value)
  if not config.options.progress or not vim.lsp.get_client_by_id(client_id) then
    return
  end
  vim.lsp.handlers["$/progress"](nil, { token = token, value = value }, {
    client_id = client_id,
    method = "$/progress",
  })
end

---A short description of a call's arguments, for the progress message.
---@param args table
---@return string?
function M.summary(args)
  if type(args) ~= "table" then
    return nil
  end
  for _, key in ipairs({ "description", "filePath", "path", "pattern", "command", "url", "query" }) do
    local value = args[key]
    if type(value) == "string" and value ~= "" then
      if key == "filePath" or key == "path" then
        value = vim.fn.fnamemodify(value, ":~:.")
      end
      local first = value:match("[^\n]*")
      return #first > 80 and (first:sub(1, 77) .. "...") or first
    end
  end
  return nil
end

---@param client_id integer
---@param call_id string
---@param tool string
---@param args table
---@param on_update? fun(update: table)
function M.start(client_id, call_id, tool, args, on_update)
  local token = "toolhost/" .. call_id
  calls[call_id] = { client_id = client_id, token = token, on_update = on_update }
  emit(
    client_id,
    token,
    { kind = "begin", title = tool, message = M.summary(args), cancellable = true }
  )
end

---@param call_id string
---@param result? table the ToolResult
---@param err? table
function M.finish(call_id, result, err)
  local call = calls[call_id]
  calls[call_id] = nil
  if not call then
    return
  end
  local message
  if err then
    message = err.code == -32800 and "cancelled" or ("failed: " .. tostring(err.message))
  elseif type(result) == "table" then
    message = (result.isError and "error: " or "") .. tostring(result.title or "")
  end
  emit(call.client_id, call.token, { kind = "end", message = message })
end

---The last non-empty line of a running command's output, if any.
---@param metadata any
---@return string?
local function last_output_line(metadata)
  local output = type(metadata) == "table" and metadata.output
  if type(output) ~= "string" then
    return nil
  end
  local last
  for line in output:gmatch("[^\n]+") do
    if vim.trim(line) ~= "" then
      last = line
    end
  end
  return last
end

---A running sub-agent (`task`) in one line: what its latest call is, and how many are done.
---@param params table a tools/update
---@return string?
function M.task_line(params)
  local calls = type(params.metadata) == "table" and params.metadata.calls
  if type(calls) ~= "table" or #calls == 0 then
    return nil
  end
  local last, finished = calls[#calls], 0
  for _, call in ipairs(calls) do
    finished = finished + (call.status ~= "running" and 1 or 0)
  end
  local now = last.status == "running" and tostring(last.title)
    or ("%s (%s)"):format(tostring(last.title), tostring(last.status))
  return ("%s: %s [%d/%d calls done]"):format(tostring(params.title or "task"), now, finished, #calls)
end

---tools/update handler.
function M.on_update(_, params, ctx)
  if type(params) ~= "table" then
    return
  end
  vim.api.nvim_exec_autocmds("User", {
    pattern = "ToolhostUpdate",
    modeline = false,
    data = { client_id = ctx.client_id, update = params },
  })
  local call = type(params.callID) == "string" and calls[params.callID]
  if not call then
    return
  end
  if call.on_update then
    local ok, err = pcall(call.on_update, params)
    if not ok then
      require("toolhost.log").warn("an on_update callback failed: %s", err)
    end
  end
  local message = M.task_line(params) or last_output_line(params.metadata) or params.title
  emit(
    call.client_id,
    call.token,
    { kind = "report", message = type(message) == "string" and message or nil }
  )
end

return M
