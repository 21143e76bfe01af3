---`:Toolhost list|run|log|restart|install`.
local M = {}

local SUBCOMMANDS = { "list", "run", "log", "restart", "install" }

---Tool ids seen by the last list, for completion.
local known_tools = {}

local function notify(message, level)
  vim.notify("toolhost: " .. message, level or vim.log.levels.INFO)
end

---Shows text in a scratch buffer in a split (replacing the previous one of the same name).
---@param name string
---@param lines string[]
---@param filetype? string
---@return integer buf
local function show(name, lines, filetype)
  local existing = vim.fn.bufnr(name)
  if existing > 0 then
    vim.api.nvim_buf_delete(existing, { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, buf)
  return buf
end

function M.list()
  require("toolhost").list({}, function(err, tools)
    if err then
      return notify("list failed: " .. tostring(err.message), vim.log.levels.ERROR)
    end
    known_tools = {}
    local width = 0
    for _, tool in ipairs(tools) do
      width = math.max(width, #tool.id)
      known_tools[#known_tools + 1] = tool.id
    end
    local lines = {}
    for _, tool in ipairs(tools) do
      local first = (tool.description or ""):match("^%s*([^\n]*)") or ""
      lines[#lines + 1] = ("%-" .. width .. "s  %-7s  %s"):format(tool.id, tool.kind or "", first)
    end
    show("toolhost://tools", lines)
  end)
end

---@param tool string
---@param json string
function M.run_tool(tool, json)
  local args = vim.empty_dict()
  if json and vim.trim(json) ~= "" then
    local ok, decoded = pcall(vim.json.decode, json)
    if not ok or type(decoded) ~= "table" then
      return notify(
        ('the arguments must be a JSON object, e.g. :Toolhost run read {"filePath": "README.md"} (%s)'):format(
          ok and "got " .. type(decoded) or tostring(decoded)
        ),
        vim.log.levels.ERROR
      )
    end
    args = decoded
  end
  require("toolhost").execute(tool, args, {}, function(err, result)
    if err then
      return notify(("%s failed: %s"):format(tool, tostring(err.message)), vim.log.levels.ERROR)
    end
    local header = ("%s%s — %s"):format(
      result.isError and "[error] " or "",
      tool,
      tostring(result.title)
    )
    local lines = { header, "" }
    vim.list_extend(lines, vim.split(tostring(result.output or ""), "\n", { plain = true }))
    show("toolhost://run/" .. tool, lines)
  end)
end

function M.log()
  vim.cmd("botright split " .. vim.fn.fnameescape(require("toolhost.log").path()))
end

function M.restart()
  local roots = require("toolhost.client").restart()
  notify("restarted the sidecar for " .. table.concat(roots, ", "))
end

---@param args table nvim_create_user_command's args
function M.run(args)
  local fargs = args.fargs
  local sub = fargs[1]
  if sub == "list" then
    M.list()
  elseif sub == "run" then
    if not fargs[2] then
      return notify("usage: :Toolhost run {tool} {json}", vim.log.levels.ERROR)
    end
    -- The JSON is everything after the tool id, spaces included.
    local json = args.args:match("^%s*run%s+%S+%s*(.*)$") or ""
    M.run_tool(fargs[2], json)
  elseif sub == "log" then
    M.log()
  elseif sub == "restart" then
    M.restart()
  elseif sub == "install" then
    require("toolhost.install").run()
  else
    notify(
      ("unknown subcommand %q; use one of: %s"):format(
        tostring(sub),
        table.concat(SUBCOMMANDS, ", ")
      ),
      vim.log.levels.ERROR
    )
  end
end

function M.complete(arg_lead, cmd_line, _)
  local words = vim.split(vim.trim(cmd_line), "%s+")
  local completing = #words - (arg_lead == "" and 0 or 1)
  local candidates = {}
  if completing <= 1 then
    candidates = SUBCOMMANDS
  elseif completing == 2 and words[2] == "run" then
    if #known_tools == 0 then
      -- Only when a sidecar is ready: completion must not start one, nor wait long.
      local client = require("toolhost.client").get(require("toolhost.client").root_for(0))
      if client and client.initialized then
        local tools = require("toolhost").list_sync({}, 2000) or {}
        known_tools = vim.tbl_map(function(tool)
          return tool.id
        end, tools)
      end
    end
    candidates = known_tools
  end
  return vim.tbl_filter(function(item)
    return vim.startswith(item, arg_lead)
  end, candidates)
end

return M
