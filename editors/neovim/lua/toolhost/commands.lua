---`:Toolhost list|run|review|cancel|rules|undo|checkpoints|log|restart|install`.
local M = {}

local SUBCOMMANDS =
  { "list", "run", "review", "cancel", "rules", "undo", "checkpoints", "log", "restart", "install" }

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
M.show = show

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
  local client = require("toolhost.client")
  local started, failed = client.restart()
  if #started > 0 then
    notify("restarted the sidecar for " .. table.concat(started, ", "))
  end
  for _, failure in ipairs(failed) do
    notify(
      ("could not start the sidecar for %s: %s"):format(failure.root, failure.error),
      vim.log.levels.ERROR
    )
  end
end

function M.cancel()
  local stopped = require("toolhost.progress").cancel()
  notify(
    stopped > 0 and ("stopped %d running call%s"):format(stopped, stopped > 1 and "s" or "")
      or "no tool call is running"
  )
end

---`:Toolhost rules`: the "always" rules (this sidecar's and the saved ones) in a split;
---`dd` (or `x`) on a line revokes that rule, `R` reloads the list.
function M.rules()
  local client = require("toolhost.client")
  local root = client.root_for(0)
  client.request(root, "permission/rules", vim.empty_dict(), function(err, result)
    if err then
      return notify("rules: " .. tostring(err.message), vim.log.levels.ERROR)
    end
    local rules = type(result) == "table" and result.rules or {}
    local lines = {
      "# toolhost rules for " .. root .. " (dd: revoke the rule under the cursor, R: reload)",
    }
    local by_line = {}
    for _, rule in ipairs(rules) do
      local where = rule.scope == "session" and ("session " .. tostring(rule.sessionID))
        or rule.scope == "sidecar" and "until the sidecar stops"
        or (rule.scope .. ": " .. vim.fn.fnamemodify(tostring(rule.source), ":~:."))
      lines[#lines + 1] = ("%-8s %s  (%s %s)  [%s]"):format(
        rule.action,
        tostring(rule.label),
        rule.permission,
        rule.pattern,
        where
      )
      by_line[#lines] = rule
    end
    if #rules == 0 then
      lines[#lines + 1] = '(no rules: nothing was allowed with "always")'
    end
    local buf = show("toolhost://rules", lines)
    local function revoke()
      local rule = by_line[vim.api.nvim_win_get_cursor(0)[1]]
      if not rule then
        return
      end
      client.request(root, "permission/revoke", { id = rule.id }, function(revoke_err, answer)
        if revoke_err then
          return notify("revoke: " .. tostring(revoke_err.message), vim.log.levels.ERROR)
        end
        notify(
          answer and answer.revoked and ("revoked: " .. tostring(rule.label))
            or "that rule was already gone"
        )
        M.rules()
      end)
    end
    for _, lhs in ipairs({ "dd", "x" }) do
      vim.keymap.set("n", lhs, revoke, { buffer = buf, desc = "toolhost: revoke this rule" })
    end
    vim.keymap.set("n", "R", M.rules, { buffer = buf, desc = "toolhost: reload the rules" })
  end)
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
  elseif sub == "review" then
    require("toolhost").review()
  elseif sub == "cancel" then
    M.cancel()
  elseif sub == "rules" then
    M.rules()
  elseif sub == "undo" then
    require("toolhost.checkpoints").undo()
  elseif sub == "checkpoints" then
    require("toolhost.checkpoints").list()
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
