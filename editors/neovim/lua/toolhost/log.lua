---The plugin's log file (stdpath("log")/toolhost.log): plugin events and the
---sidecar's window/logMessage lines. `:Toolhost log` opens it.
local M = {}

local LEVEL_NAMES = { [0] = "TRACE", "DEBUG", "INFO", "WARN", "ERROR" }

---@return string
function M.path()
  local options = require("toolhost.config").options
  return options.log.file or vim.fs.joinpath(vim.fn.stdpath("log") --[[@as string]], "toolhost.log")
end

local function write(level, message)
  local options = require("toolhost.config").options
  if level < (options.log.level or vim.log.levels.INFO) then
    return
  end
  local path = M.path()
  local file = io.open(path, "a")
  if not file then
    vim.fn.mkdir(vim.fs.dirname(path), "p")
    file = io.open(path, "a")
    if not file then
      return
    end
  end
  local line = ("%s [%s] %s\n"):format(
    os.date("%Y-%m-%d %H:%M:%S"),
    LEVEL_NAMES[level] or "?",
    message
  )
  file:write(line)
  file:close()
end

local function format(fmt, ...)
  local ok, message = pcall(string.format, fmt, ...)
  return ok and message or fmt
end

---@param level integer vim.log.levels.*
---@param fmt string
function M.log(level, fmt, ...)
  write(level, format(fmt, ...))
end

function M.debug(fmt, ...)
  write(vim.log.levels.DEBUG, format(fmt, ...))
end

function M.info(fmt, ...)
  write(vim.log.levels.INFO, format(fmt, ...))
end

function M.warn(fmt, ...)
  write(vim.log.levels.WARN, format(fmt, ...))
end

---Logs, and tells the user unless `notify_on_error` is off.
function M.error(fmt, ...)
  local message = format(fmt, ...)
  write(vim.log.levels.ERROR, message)
  if require("toolhost.config").options.notify_on_error then
    vim.schedule(function()
      vim.notify("toolhost: " .. message, vim.log.levels.ERROR)
    end)
  end
end

return M
