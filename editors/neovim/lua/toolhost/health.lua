---`:checkhealth toolhost`: Neovim's version, the sidecar command, a real start of
---the sidecar (initialize must answer toolhost protocol 1), ripgrep, config problems,
---the bash sandbox (or that commands run unsandboxed) and the runtime of JS/TS custom tools
---(Bun or Node.js), both from `toolhost doctor`.
local M = {}

local health = vim.health

---Starts the sidecar over stdio, initializes it like the plugin does, lists the
---tools and shuts it down. Returns what happened.
---@param cmd string[]
---@param root string
---@return table report {init?, init_ms?, tools?, messages, error?}
local function probe(cmd, root)
  local config = require("toolhost.config")
  local report = { messages = {} }
  local dispatchers = {
    notification = function(method, params)
      if
        (method == "window/showMessage" or method == "window/logMessage")
        and type(params) == "table"
      then
        -- MessageType 1 error, 2 warning: what the sidecar shows a user, and the
        -- errors it logs (its logged warnings repeat what it shows).
        if params.type == 1 or (params.type == 2 and method == "window/showMessage") then
          table.insert(report.messages, { type = params.type, message = params.message })
        end
      end
    end,
    server_request = function()
      return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound)
    end,
  }
  local ok, rpc =
    pcall(vim.lsp.rpc.start, cmd, dispatchers, { cwd = root, env = config.options.cmd_env })
  if not ok or not rpc then
    report.error = ("could not start %s: %s"):format(table.concat(cmd, " "), tostring(rpc))
    return report
  end
  local started = vim.uv.hrtime()
  local function call(method, params, timeout)
    local done, err, result = false, nil, nil
    rpc.request(method, params, function(e, r)
      done, err, result = true, e, r
    end)
    vim.wait(timeout, function()
      return done or rpc.is_closing()
    end, 10)
    if not done then
      return nil,
        {
          message = rpc.is_closing() and "the sidecar exited"
            or ("no answer in %d ms"):format(timeout),
        }
    end
    return result, err
  end
  local result, err = call("initialize", {
    processId = vim.fn.getpid(),
    clientInfo = { name = "Neovim :checkhealth toolhost" },
    rootUri = vim.uri_from_fname(root),
    workspaceFolders = { { uri = vim.uri_from_fname(root), name = root } },
    capabilities = vim.empty_dict(),
    initializationOptions = config.init_options(),
  }, 20000)
  if not result then
    report.error = "initialize failed: " .. tostring(err and err.message)
  else
    report.init = result
    report.init_ms = math.floor((vim.uv.hrtime() - started) / 1e6)
    rpc.notify("initialized", vim.empty_dict())
    local listed, list_err = call("tools/list", vim.empty_dict(), 20000)
    report.tools = listed and listed.tools or nil
    report.list_error = list_err and list_err.message
    call("shutdown", vim.NIL, 5000)
    rpc.notify("exit", vim.NIL)
  end
  vim.wait(2000, function()
    return rpc.is_closing()
  end, 20)
  if not rpc.is_closing() then
    rpc.terminate()
  end
  return report
end

---ripgrep as the sidecar finds it: run the glob tool in an empty folder.
---@param cmd string[]
---@return boolean? ok
---@return string detail
local function check_rg(cmd)
  if cmd[#cmd] ~= "serve" then
    return nil,
      "the cmd option does not end in `serve`, so `toolhost run` cannot be derived from it"
  end
  local run = vim.list_slice(cmd, 1, #cmd - 1)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  vim.list_extend(run, { "run", "glob", '{"pattern": "toolhost-health-probe"}', "--cwd", dir })
  local result =
    vim.system(run, { text = true, env = require("toolhost.config").options.cmd_env }):wait(30000)
  vim.fn.delete(dir, "rf")
  if result.code == 0 then
    return true, "the glob tool ran ripgrep"
  end
  return false, vim.trim((result.stderr or "") .. (result.stdout or ""))
end

---The checks of `toolhost doctor --json`, by name (the bash sandbox, the JS/TS runtime).
---@param cmd string[]
---@param root string
---@return table<string, {ok: boolean, detail: string}>? checks nil when it could not run
---@return string? why
local function doctor_checks(cmd, root)
  if cmd[#cmd] ~= "serve" then
    return nil, "the cmd option does not end in `serve`"
  end
  local run = vim.list_slice(cmd, 1, #cmd - 1)
  vim.list_extend(run, { "doctor", "--json", "--cwd", root })
  local result =
    vim.system(run, { text = true, env = require("toolhost.config").options.cmd_env }):wait(30000)
  local ok, decoded = pcall(vim.json.decode, result.stdout or "")
  if not ok or type(decoded) ~= "table" then
    return nil, "toolhost doctor did not answer: " .. vim.trim(result.stderr or "")
  end
  local checks = {}
  for _, check in ipairs(decoded.checks or decoded) do
    if type(check) == "table" and type(check.name) == "string" then
      checks[check.name] = { ok = check.ok == true, detail = tostring(check.detail) }
    end
  end
  return checks
end

---Reports one doctor check: OK, a warning with advice, or not checked.
---@param checks table<string, {ok: boolean, detail: string}>?
---@param why string?
---@param name string
---@param label string
---@param advice string[]
local function report_check(checks, why, name, label, advice)
  local check = checks and checks[name]
  if not check then
    health.info(
      ("%s not checked: %s"):format(label, why or ("toolhost doctor has no " .. name .. " check"))
    )
  elseif check.ok then
    health.ok(label .. ": " .. check.detail)
  else
    health.warn(label .. ": " .. check.detail, advice)
  end
end

function M.check()
  local config = require("toolhost.config")
  local client = require("toolhost.client")

  health.start("toolhost: Neovim")
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. version)
  else
    health.error("Neovim " .. version .. " is too old", { "toolhost needs Neovim 0.10 or newer" })
  end
  for _, problem in ipairs(config.validate(config.options)) do
    health.warn("option: " .. problem)
  end
  health.info("log file: " .. require("toolhost.log").path())

  health.start("toolhost: sidecar")
  local cmd, source = client.resolve_cmd()
  if not cmd then
    health.error(source, {
      ":Toolhost install (creates a venv under stdpath('data') from this plugin's checkout)",
      "or install the toolhost-sidecar package from a toolhost checkout (pip install -e <checkout>; "
        .. "the PyPI package named toolhost is someone else's) and put `toolhost` on PATH",
      "or set the cmd option in setup()",
    })
    return
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    health.error(("%s (from %s) is not executable"):format(cmd[1], source), { ":Toolhost install" })
    return
  end
  health.ok(("command: %s (from %s)"):format(table.concat(cmd, " "), source))

  local root = client.root_for(0)
  local report = probe(cmd, root)
  if report.error then
    health.error(
      report.error,
      { "run the command in a terminal to see why", ":LspLog shows the sidecar's stderr" }
    )
    return
  end
  local info = report.init.serverInfo or {}
  local protocol = vim.tbl_get(report.init, "capabilities", "experimental", "toolhost", "protocol")
  if protocol == 1 then
    health.ok(
      ("answers initialize in %d ms: %s %s, protocol 1"):format(
        report.init_ms,
        tostring(info.name),
        tostring(info.version)
      )
    )
  else
    health.error(
      ("initialize answered protocol %s, this plugin speaks 1"):format(vim.inspect(protocol)),
      { "update the plugin and the sidecar together (:Toolhost install from the same checkout)" }
    )
  end
  if report.tools then
    local ids = vim.tbl_map(function(tool)
      return tool.id
    end, report.tools)
    health.ok(("%d tools for %s: %s"):format(#ids, root, table.concat(ids, ", ")))
  else
    health.error("tools/list failed: " .. tostring(report.list_error))
  end
  for _, message in ipairs(report.messages) do
    if message.type == 1 then
      health.error("sidecar: " .. message.message)
    else
      health.warn("sidecar: " .. message.message)
    end
  end

  local rg_ok, detail = check_rg(cmd)
  if rg_ok then
    health.ok("ripgrep found (" .. detail .. ")")
  elseif rg_ok == nil then
    health.info("ripgrep not checked: " .. detail)
  else
    health.error(
      "ripgrep: " .. detail,
      { "install ripgrep (the `ripgrep` wheel or your package manager)" }
    )
  end

  local checks, why = doctor_checks(cmd, root)
  report_check(checks, why, "sandbox", "bash sandbox", {
    "install bubblewrap (Debian: apt install bubblewrap) or use a kernel with Landlock",
    "`toolhost doctor` in a terminal lists every check",
    'set sandbox.mode to "required" to refuse commands rather than run them unsandboxed',
  })
  report_check(
    checks,
    why,
    "js-runtime",
    "JS/TS custom tools",
    { "put bun (or Node.js 20.6+) on PATH" }
  )

  health.start("toolhost: running sidecars")
  local any = false
  for r, id in pairs(client.by_root) do
    local c = vim.lsp.get_client_by_id(id)
    if c then
      any = true
      health.info(
        ("%s: client %d, %s, %d buffers synced"):format(
          r,
          id,
          c.initialized and "ready" or "starting",
          vim.tbl_count(c.attached_buffers or {})
        )
      )
    end
  end
  if not any then
    health.info("none running")
  end
end

return M
