---`:Toolhost install`: a venv under stdpath("data") with the toolhost package
---pip-installed from this plugin's own repository checkout (the plugin lives in
---editors/neovim of that repository), so no PyPI release is needed. setup() finds
---the venv's `toolhost` before looking on PATH.
local config = require("toolhost.config")
local log = require("toolhost.log")

local M = {}

---The repository checkout this plugin came from (editors/neovim/lua/toolhost/ → ../../../..).
---@return string? root
---@return string? error
function M.repo_root()
  local here = debug.getinfo(1, "S").source:gsub("^@", "")
  local root = vim.fs.normalize(vim.fn.fnamemodify(here, ":p:h:h:h:h:h"))
  if vim.fn.filereadable(vim.fs.joinpath(root, "pyproject.toml")) ~= 1 then
    return nil,
      ("%s has no pyproject.toml: the plugin must stay inside the toolhost repository checkout (editors/neovim)"):format(
        root
      )
  end
  return root
end

---@param exe string
---@return boolean
local function python_ok(exe)
  if vim.fn.executable(exe) ~= 1 then
    return false
  end
  local result = vim
    .system({ exe, "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)" })
    :wait(10000)
  return result.code == 0
end

---The Python to create the venv with (3.11 or newer).
---@return string? exe
---@return string? error
function M.find_python()
  local wanted = config.options.install.python
  if wanted then
    if python_ok(wanted) then
      return wanted
    end
    return nil, ("install.python = %q is not a Python 3.11 or newer"):format(wanted)
  end
  for _, exe in ipairs({ "python3.13", "python3.12", "python3.11", "python3", "python" }) do
    if python_ok(exe) then
      return vim.fn.exepath(exe)
    end
  end
  return nil, "no Python 3.11 or newer found on PATH (set install.python to one)"
end

---The steps, as argv lists.
---@return {title: string, cmd: string[]}[]? steps
---@return string? error
function M.steps()
  local root, root_err = M.repo_root()
  if not root then
    return nil, root_err
  end
  local client = require("toolhost.client")
  local venv = client.venv_dir()
  local venv_python =
    vim.fs.joinpath(venv, vim.fn.has("win32") == 1 and "Scripts/python.exe" or "bin/python")
  local steps = {}
  if vim.fn.executable(venv_python) ~= 1 then
    local python, python_err = M.find_python()
    if not python then
      return nil, python_err
    end
    steps[#steps + 1] = { title = "creating " .. venv, cmd = { python, "-m", "venv", venv } }
  end
  local pip = { venv_python, "-m", "pip", "install", "--disable-pip-version-check", "--upgrade" }
  vim.list_extend(pip, config.options.install.pip_args or {})
  pip[#pip + 1] = root
  steps[#steps + 1] = { title = "installing toolhost from " .. root, cmd = pip }
  return steps
end

local running = false

---Runs the install asynchronously; `on_done(ok, message)` when finished, and the
---`User ToolhostInstalled` event with data `{ ok, message }`.
---@param on_done? fun(ok: boolean, message: string)
function M.run(on_done)
  if running then
    vim.notify("toolhost: an install is already running", vim.log.levels.WARN)
    return
  end
  running = true
  local function finish(ok, message)
    running = false
    if ok then
      log.info("%s", message)
      vim.notify("toolhost: " .. message)
    else
      log.error("%s", message)
    end
    if on_done then
      on_done(ok, message)
    end
    vim.api.nvim_exec_autocmds("User", {
      pattern = "ToolhostInstalled",
      modeline = false,
      data = { ok = ok, message = message },
    })
  end
  local steps, err = M.steps()
  if not steps then
    return finish(false, "install: " .. err)
  end
  local index = 0
  local function next_step()
    index = index + 1
    local step = steps[index]
    if not step then
      local toolhost = require("toolhost.client").venv_toolhost()
      return finish(true, ("installed %s; :Toolhost restart to use it"):format(toolhost))
    end
    vim.notify(("toolhost: %s…"):format(step.title))
    log.info("install: %s", table.concat(step.cmd, " "))
    vim.system(step.cmd, { text = true }, function(result)
      vim.schedule(function()
        if result.code ~= 0 then
          local output = vim.trim((result.stderr or "") .. "\n" .. (result.stdout or ""))
          log.warn("install output:\n%s", output)
          local tail = table.concat(
            vim.list_slice(vim.split(output, "\n"), math.max(1, #vim.split(output, "\n") - 5)),
            "\n"
          )
          return finish(
            false,
            ("install failed while %s (exit %d):\n%s\n(full output: :Toolhost log)"):format(
              step.title,
              result.code,
              tail
            )
          )
        end
        next_step()
      end)
    end)
  end
  next_step()
end

return M
