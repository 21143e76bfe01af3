---The sidecar as a Neovim LSP client: one per project root, started with
---vim.lsp.start, attached to every normal file buffer of that root so the sidecar
---sees what the user sees (unsaved text included). Calls made before the client
---has answered `initialize` wait in a queue.
local config = require("toolhost.config")
local log = require("toolhost.log")
local util = require("toolhost.util")

local M = {}

local has_011 = vim.fn.has("nvim-0.11") == 1
local is_windows = vim.fn.has("win32") == 1

---@type table<string, integer> project root -> client id
M.by_root = {}

---@type table<integer, fun(client?: vim.lsp.Client, err?: table)[]> client id -> callers waiting for initialize
local waiting = {}

---@type table<integer, table<table, fun(err?: table, result?: any)>> client id -> callbacks of requests in flight
local inflight = {}

---@type table<integer, boolean> clients stopped on purpose (their exit is not an error)
local stopping = {}

local reported

---@return string
function M.venv_dir()
  return config.options.install.venv
    or vim.fs.joinpath(vim.fn.stdpath("data") --[[@as string]], "toolhost", "venv")
end

---The `toolhost` console script inside the venv made by `:Toolhost install`.
---@return string
function M.venv_toolhost()
  if is_windows then
    return vim.fs.joinpath(M.venv_dir(), "Scripts", "toolhost.exe")
  end
  return vim.fs.joinpath(M.venv_dir(), "bin", "toolhost")
end

---The command that starts the sidecar, and where it came from (or nil and why not).
---@return string[]? cmd
---@return string source_or_error
function M.resolve_cmd()
  if config.options.cmd then
    return vim.deepcopy(config.options.cmd), "the cmd option"
  end
  local venv = M.venv_toolhost()
  if vim.fn.executable(venv) == 1 then
    return { venv, "serve" }, ":Toolhost install's venv"
  end
  local on_path = vim.fn.exepath("toolhost")
  if on_path ~= "" then
    return { on_path, "serve" }, "PATH"
  end
  return nil,
    "no toolhost command found: run :Toolhost install, put the `toolhost` console script on PATH, "
      .. "or set the cmd option"
end

---@param path string
---@return string
local function normalize(path)
  local full = vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
  if #full > 1 then
    full = full:gsub("/$", "")
  end
  return full
end

---The project root of a buffer: the nearest folder with a root marker, else the cwd.
---@param buf? integer
---@return string
function M.root_for(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == "" then
    local name = vim.api.nvim_buf_get_name(buf)
    if name ~= "" and not name:match("^%a[%w+.-]*://") then
      local root = vim.fs.root(buf, config.options.root_markers)
      if root then
        return normalize(root)
      end
    end
  end
  return normalize(vim.fn.getcwd())
end

---Whether a buffer is a normal file buffer that should be synced to the sidecar.
---@param buf integer
---@return boolean
function M.attachable(buf)
  if not vim.api.nvim_buf_is_valid(buf) or not vim.api.nvim_buf_is_loaded(buf) then
    return false
  end
  if vim.bo[buf].buftype ~= "" then
    return false
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or name:match("^%a[%w+.-]*://") or vim.fn.isdirectory(name) == 1 then
    return false
  end
  local attach = config.options.attach
  if attach == false then
    return false
  elseif type(attach) == "function" then
    local ok, wanted = pcall(attach, buf)
    return ok and wanted == true
  end
  return true
end

---@param root string
---@return vim.lsp.Client?
function M.get(root)
  local id = M.by_root[root]
  return id and vim.lsp.get_client_by_id(id) or nil
end

---@param buf integer
---@param id integer
local function attach_buffer(buf, id)
  if not vim.lsp.buf_is_attached(buf, id) then
    vim.lsp.buf_attach_client(buf, id)
  end
  require("toolhost.documents").track(buf)
end

---Attaches a buffer to the sidecar of its root (starting it when autostart is on).
---@param buf integer
function M.attach(buf)
  if not M.attachable(buf) then
    return
  end
  local root = M.root_for(buf)
  local id = M.by_root[root]
  if not id then
    if not config.options.autostart then
      return
    end
    id = M.start(root)
  elseif vim.lsp.get_client_by_id(id) then
    attach_buffer(buf, id)
  end
end

---Lazily required handlers for every request and notification the sidecar sends.
---@return table<string, function>
function M.handlers()
  local function lazy(module, name)
    return function(...)
      return require(module)[name](...)
    end
  end
  return {
    ["permission/ask"] = lazy("toolhost.review", "ask"),
    ["permission/withdrawn"] = function(_, params)
      if type(params) == "table" and type(params.id) == "string" then
        require("toolhost.review").withdraw(params.id)
      end
    end,
    ["editor/diskWritten"] = lazy("toolhost.documents", "disk_written"),
    ["checkpoints/restored"] = lazy("toolhost.checkpoints", "restored"),
    ["workspace/applyEdit"] = lazy("toolhost.documents", "apply_edit"),
    ["editor/saveDocuments"] = lazy("toolhost.documents", "save"),
    ["editor/openDocument"] = lazy("toolhost.documents", "open"),
    ["editor/diagnostics"] = lazy("toolhost.diagnostics", "collect"),
    ["editor/lsp"] = lazy("toolhost.lsp", "request"),
    ["editor/question"] = lazy("toolhost.question", "ask"),
    ["agent/task"] = lazy("toolhost.task", "run"),
    ["editor/withdrawn"] = function(_, params)
      if type(params) == "table" and type(params.id) == "string" then
        if params.method == "editor/question" then
          require("toolhost.question").withdraw(params.id)
        elseif params.method == "agent/task" then
          require("toolhost.task").cancel(params.id)
        end
      end
    end,
    ["tools/update"] = lazy("toolhost.progress", "on_update"),
    ["tools/listChanged"] = function(_, _, ctx)
      vim.api.nvim_exec_autocmds("User", {
        pattern = "ToolhostToolsChanged",
        modeline = false,
        data = { client_id = ctx.client_id },
      })
    end,
    ["window/showMessage"] = function(_, params)
      if type(params) == "table" and type(params.message) == "string" then
        local level = ({ vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO })[params.type]
        log.log(level or vim.log.levels.INFO, "sidecar: %s", params.message) -- whole, in the log
        util.say(params.message, level)
      end
    end,
    ["window/logMessage"] = function(err, params, ctx)
      if type(params) == "table" and type(params.message) == "string" then
        -- LSP MessageType: 1 error, 2 warning, 3 info, 4 log.
        local level = ({ vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO })[params.type]
        log.log(level or vim.log.levels.DEBUG, "sidecar: %s", params.message)
      end
      return vim.lsp.handlers["window/logMessage"](err, params, ctx)
    end,
  }
end

---@param id integer
---@param err table
local function fail_pending(id, err)
  local callers = waiting[id] or {}
  waiting[id] = nil
  for _, cb in ipairs(callers) do
    cb(nil, err)
  end
  local calls = inflight[id] or {}
  inflight[id] = nil
  for _, cb in pairs(calls) do
    cb(err)
  end
end

-- Start failures already told to the user: every buffer that attaches retries the
-- start, and the same message once is enough (still logged each time).
reported = {} ---@type table<string, boolean>

---@param message string
---@param quiet? boolean the caller tells the user itself
local function start_failed(message, quiet)
  if quiet or reported[message] then
    log.warn("%s", message)
  else
    reported[message] = true
    log.error("%s", message)
  end
  return nil, message
end

---Starts the sidecar for `root` (or returns the one running) and attaches that
---root's loaded buffers to it.
---@param root string
---@param opts? {quiet?: boolean} quiet: do not notify a failure (the caller does)
---@return integer? client_id
---@return string? error
function M.start(root, opts)
  local quiet = opts and opts.quiet
  local existing = M.get(root)
  if existing then
    return existing.id
  end
  local cmd, source = M.resolve_cmd()
  if not cmd then
    return start_failed(source, quiet)
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    local message = ("the sidecar command %q (from %s) is not executable"):format(cmd[1], source)
    return start_failed(message, quiet)
  end
  ---@type vim.lsp.ClientConfig
  local client_config = {
    name = "toolhost",
    cmd = cmd,
    cmd_cwd = root,
    cmd_env = config.options.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = vim.tbl_extend("force", config.init_options(), {
      -- nil (nothing to trust) leaves it out: the sidecar decides.
      trusted = require("toolhost.trust").decide(root, config.options.trust),
    }),
    handlers = M.handlers(),
    -- Every change at once (as VS Code does): the sidecar waits for the didChange of
    -- an edit it applied before saving, and a read right after typing sees the text.
    flags = { debounce_text_changes = 0 },
    on_init = function(client, result)
      local protocol =
        vim.tbl_get(result or {}, "capabilities", "experimental", "toolhost", "protocol")
      if protocol ~= 1 then
        log.error(
          "the sidecar for %s speaks toolhost protocol %s, this plugin speaks 1: update one of them",
          root,
          vim.inspect(protocol)
        )
      end
      log.info("sidecar ready for %s (client %d, %s)", root, client.id, table.concat(cmd, " "))
      local callers = waiting[client.id] or {}
      waiting[client.id] = nil
      for _, cb in ipairs(callers) do
        cb(client)
      end
    end,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        for r, id in pairs(M.by_root) do
          if id == client_id then
            M.by_root[r] = nil
          end
        end
        local on_purpose = stopping[client_id]
        stopping[client_id] = nil
        local message = ("the toolhost sidecar for %s exited (code %s, signal %s)"):format(
          root,
          code,
          signal
        )
        fail_pending(client_id, { code = -32099, message = message })
        if on_purpose or (code == 0 and signal == 0) then
          log.info("%s", message)
        else
          log.error(
            "%s; its output is in :LspLog, details in :Toolhost log and :checkhealth toolhost",
            message
          )
        end
      end)
    end,
  }
  local id
  if has_011 then
    id = vim.lsp.start(client_config, {
      attach = false,
      -- This module keeps one client per root itself; a client that is still
      -- stopping (:Toolhost restart) must not be handed back.
      reuse_client = function()
        return false
      end,
    })
  else
    id = vim.lsp.start_client(client_config)
  end
  if not id then
    return start_failed(("could not start the sidecar (%s)"):format(table.concat(cmd, " ")), quiet)
  end
  M.by_root[root] = id
  log.info("starting the sidecar for %s: %s", root, table.concat(cmd, " "))
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if M.attachable(buf) and M.root_for(buf) == root then
      attach_buffer(buf, id)
    end
  end
  return id
end

---Calls `cb(client)` once the sidecar for `root` has answered initialize (starting it
---if needed), or `cb(nil, err)` when it cannot start or exits first.
---@param root string
---@param cb fun(client?: vim.lsp.Client, err?: table)
function M.with_client(root, cb)
  local id, err = M.start(root)
  if not id then
    return cb(nil, { code = -32099, message = err })
  end
  local client = vim.lsp.get_client_by_id(id)
  if client and client.initialized then
    return cb(client)
  end
  waiting[id] = waiting[id] or {}
  table.insert(waiting[id], cb)
end

---Sends a request to the sidecar of `root`, queued until it is ready.
---@param root string
---@param method string
---@param params table
---@param cb fun(err?: table, result?: any, client?: vim.lsp.Client)
---@param on_sent? fun(client: vim.lsp.Client)
---@return fun() cancel
function M.request(root, method, params, cb, on_sent)
  local state = { cancelled = false, done = false }
  local function finish(err, result, client)
    if not state.done then
      state.done = true
      cb(err, result, client)
    end
  end
  M.with_client(root, function(client, err)
    if state.cancelled then
      return
    end
    if not client then
      return finish(err)
    end
    local key = {}
    inflight[client.id] = inflight[client.id] or {}
    state.pending = function(exit_err)
      finish(exit_err, nil, client)
    end
    inflight[client.id][key] = state.pending
    local ok, request_id = util.request(client, method, params, function(rpc_err, result)
      if inflight[client.id] then
        inflight[client.id][key] = nil
      end
      finish(rpc_err, result, client)
    end)
    if not ok then
      inflight[client.id][key] = nil
      return finish({ code = -32099, message = "the toolhost sidecar is not running" }, nil, client)
    end
    state.client, state.id = client, request_id
    if on_sent then
      on_sent(client)
    end
  end)
  return function()
    if state.cancelled or state.done then
      return
    end
    state.cancelled = true
    if state.client and state.id then
      -- The sidecar stops the call and answers -32800, but Neovim's RPC layer drops
      -- RequestCancelled answers, so the callback is told here.
      util.cancel_request(state.client, state.id)
      if inflight[state.client.id] then
        for key, pending in pairs(inflight[state.client.id]) do
          if pending == state.pending then
            inflight[state.client.id][key] = nil
          end
        end
      end
      finish({ code = -32800, message = "cancelled" }, nil, state.client)
    else
      finish({ code = -32800, message = "cancelled before the sidecar was ready" })
    end
  end
end

---Stops every sidecar this plugin started.
---@return integer[] ids of the clients stopped
function M.stop_all()
  local ids = {}
  for root, id in pairs(M.by_root) do
    local client = vim.lsp.get_client_by_id(id)
    if client then
      stopping[id] = true
      util.stop_client(client)
      ids[#ids + 1] = id
    end
    M.by_root[root] = nil
  end
  return ids
end

---Stops every sidecar and starts one again for each root that had one (or the
---current one), re-attaching the buffers.
---@return string[] started roots whose sidecar is starting again
---@return {root: string, error: string}[] failed roots whose sidecar could not start
function M.restart()
  local roots = vim.tbl_keys(M.by_root)
  M.stop_all()
  reported = {} -- a restart may be after an install: say it again if it still fails
  if #roots == 0 then
    roots = { M.root_for(0) }
  end
  local started, failed = {}, {}
  for _, root in ipairs(roots) do
    local id, err = M.start(root, { quiet = true })
    if id then
      started[#started + 1] = root
    else
      failed[#failed + 1] = { root = root, error = err or "unknown error" }
    end
  end
  return started, failed
end

return M
