---agent/task (docs/protocol.md): the sidecar's `task` tool starts a sub-agent and
---an agent plugin runs its loop, through the function given as
---`setup({ task = function(request, done) … end })`. The plugin is advertised as a
---task runner (`initializationOptions.editor.task`) only when that function is set.
---
---`request` carries what the sidecar sent (`sessionID` of the child session,
---`prompt`, `description`, `subagentType`, `agent = {name, description, prompt,
---model, steps, temperature}`, `model`, `resume`) plus helpers bound to the child
---session, where the child's rules apply:
---
---  request.list(cb)                  cb(err, tools): the child's catalogue
---  request.execute(tool, args, cb)   cb(err, result): a tool call in the child session
---  request.on_cancel(fn)             fn() runs if the task is cancelled
---  request.cancelled                 true once it was
---
---`done(text)` answers with the sub-agent's last text; `done(nil, message)` fails it
---(the model reads `Subagent failed (task_id: …): message`).
local config = require("toolhost.config")
local log = require("toolhost.log")
local util = require("toolhost.util")

local M = {}

---@type table<string, fun()> task run id -> cancel it
local running = {}

---Builds the request table the runner function gets.
---@param client vim.lsp.Client
---@param params table
---@return table request
function M.request(client, params)
  local request = vim.deepcopy(params)
  local on_cancel = {} ---@type fun()[]
  local inflight = {} ---@type table<integer, boolean>
  request.cancelled = false

  function request.list(cb)
    util.request(client, "tools/list", { sessionID = params.sessionID }, function(err, result)
      cb(err, type(result) == "table" and result.tools or nil)
    end)
  end

  function request.execute(tool, args, cb)
    local call = {
      tool = tool,
      args = util.object(args),
      sessionID = params.sessionID,
      callID = util.new_id("call"),
    }
    local id
    local ok, sent = util.request(client, "tools/execute", call, function(err, result)
      inflight[id or -1] = nil
      cb(err, result)
    end)
    if ok then
      id = sent
      inflight[sent] = true
    else
      cb({ code = -32099, message = "the toolhost sidecar is not running" }, nil)
    end
  end

  function request.on_cancel(fn)
    on_cancel[#on_cancel + 1] = fn
  end

  ---Cancels the child's calls still in flight and runs the on_cancel functions.
  function request._cancel()
    request.cancelled = true
    for id in pairs(inflight) do
      util.cancel_request(client, id)
    end
    for _, fn in ipairs(on_cancel) do
      local ok, err = pcall(fn)
      if not ok then
        log.warn("a task's on_cancel function failed: %s", err)
      end
    end
  end
  return request
end

---agent/task handler.
function M.run(_, params, ctx)
  local runner = config.options.task
  if type(runner) ~= "function" then
    return nil,
      vim.lsp.rpc.rpc_response_error(-32601, "no task function is set (setup{task = …})")
  end
  if type(params) ~= "table" or type(params.sessionID) ~= "string" then
    return nil, vim.lsp.rpc.rpc_response_error(-32602, "agent/task needs a sessionID")
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client then
    return nil, vim.lsp.rpc.rpc_response_error(-32603, "the toolhost client is gone")
  end
  local request = M.request(client, params)
  local id = type(params.id) == "string" and params.id or params.sessionID
  log.info(
    "agent/task %s (%s): %s",
    tostring(params.subagentType),
    params.sessionID,
    params.description
  )
  local output, failure = util.await(function(done)
    local finished = false
    local function finish(text, message)
      if not finished then
        finished = true
        running[id] = nil
        done(text, message)
      end
    end
    running[id] = function()
      request._cancel()
      finish(nil, "cancelled")
    end
    local ok, err = pcall(runner, request, function(text, message)
      vim.schedule(function()
        if type(text) == "string" then
          finish(text)
        else
          finish(nil, type(message) == "string" and message or "the task function gave no text")
        end
      end)
    end)
    if not ok then
      log.error("the task function failed: %s", err)
      finish(nil, "the task function failed: " .. tostring(err))
    end
  end)
  if type(output) == "string" then
    return { output = output }
  end
  return nil, vim.lsp.rpc.rpc_response_error(-32001, failure or "the sub-agent did not finish")
end

---The sidecar cancelled the task.
---@param id string
function M.cancel(id)
  local cancel = running[id]
  if cancel then
    cancel()
  end
end

return M
