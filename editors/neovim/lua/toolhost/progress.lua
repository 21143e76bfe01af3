---Running tools as LSP progress. Each tools/execute made through the Lua API
---reports begin (when sent), report (each tools/update) and end (the result)
---through Neovim's own `$/progress` handler, so `client.progress`,
---`vim.lsp.status()` and the `LspProgress` event (fidget.nvim, statuslines) show
---them like any language server's work. `$/progress` the sidecar sends itself is
---handled natively. tools/update is also published as `User ToolhostUpdate`.
---With no setup at all, a small float at the bottom right shows each running call
---and the latest line it printed (`progress_float`), and `:Toolhost cancel` stops them.
local config = require("toolhost.config")

local M = {}

---@class toolhost.RunningCall
---@field client_id integer
---@field token string
---@field tool string
---@field summary? string
---@field last? string the latest output line (or update title)
---@field cancel? fun()
---@field on_update? fun(update: table)

---@type table<string, toolhost.RunningCall>
local calls = {}
local order = {} ---@type string[] call ids, oldest first
local float = { buf = nil, win = nil, key = nil }

---The running calls, oldest first: `{callID, tool, summary, last}`.
---@return table[]
function M.running()
  local out = {}
  for _, id in ipairs(order) do
    local call = calls[id]
    if call then
      out[#out + 1] = { callID = id, tool = call.tool, summary = call.summary, last = call.last }
    end
  end
  return out
end

---The float's lines, one per running call.
---@return string[]
function M.lines()
  local lines = {}
  for _, item in ipairs(M.running()) do
    local text = "⟳ " .. item.tool .. (item.summary and (": " .. item.summary) or "")
    if item.last and item.last ~= "" then
      text = text .. " │ " .. item.last
    end
    lines[#lines + 1] = text
  end
  local key = config.options.keys.cancel
  if #lines > 0 then
    lines[#lines + 1] = ("  :Toolhost cancel%s stops %s"):format(
      key and (" or " .. key) or "",
      #lines > 1 and "them" or "it"
    )
  end
  return lines
end

---The screen rows (1-based, borders included) the float must leave free: the line being
---typed on (every row of it, when it wraps), and the review window's float (which sits
---at the right too).
---@return {top: integer, bottom: integer}[]
local function taken_rows()
  local rows = {}
  local win = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_config(win).relative == "" then
    local lnum = vim.api.nvim_win_get_cursor(win)[1]
    local info = vim.fn.getwininfo(win)[1]
    local first = vim.fn.screenpos(win, lnum, 1).row
    -- The line's last row: its last character's, or the window's bottom when off screen.
    local length = #(
      vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), lnum - 1, lnum, false)[1] or ""
    )
    local last = vim.fn.screenpos(win, lnum, math.max(1, length + 1)).row
    if last == 0 then
      last = info.winrow + info.height - 1
    end
    if first > 0 then
      rows[#rows + 1] = { top = first, bottom = math.max(first, last) }
    end
  end
  local review = require("toolhost.review.view").window()
  if review and review ~= float.win then
    local cfg = vim.api.nvim_win_get_config(review)
    if cfg.relative ~= "" then
      local top = math.floor(cfg.row) + 1
      rows[#rows + 1] = { top = top, bottom = top + cfg.height + 1 }
    end
  end
  return rows
end

---The screen row of the float's bottom border: at the bottom, or just above whatever it
---would cover there (see taken_rows); nil when it fits nowhere.
---@param height integer its lines, without the border
---@return integer?
function M.float_bottom(height)
  local bottom = vim.o.lines - vim.o.cmdheight - 1
  local taken = taken_rows()
  for _ = 0, #taken do
    local top, above = bottom - height - 1, nil
    for _, rows in ipairs(taken) do
      if rows.top <= bottom and rows.bottom >= top then
        above = math.min(above or rows.top, rows.top)
      end
    end
    if not above then
      return top >= 1 and bottom or nil
    end
    bottom = above - 1
  end
  return nil
end

local function redraw_float()
  local lines = config.options.progress_float and M.lines() or {}
  if #lines == 0 then
    if float.win and vim.api.nvim_win_is_valid(float.win) then
      vim.api.nvim_win_close(float.win, true)
    end
    float.win = nil
    return
  end
  if not (float.buf and vim.api.nvim_buf_is_valid(float.buf)) then
    float.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[float.buf].bufhidden = "hide"
  end
  local width = 20
  for i, line in ipairs(lines) do
    if vim.fn.strdisplaywidth(line) > vim.o.columns - 6 then
      lines[i] = vim.fn.strcharpart(line, 0, vim.o.columns - 7) .. "…"
    end
    width = math.max(width, vim.fn.strdisplaywidth(lines[i]))
  end
  -- Never over the line being typed on (nor under the review window): above it, or hidden
  -- until there is room (the calls still show as LSP progress).
  local bottom = M.float_bottom(#lines)
  if not bottom then
    if float.win and vim.api.nvim_win_is_valid(float.win) then
      vim.api.nvim_win_close(float.win, true)
    end
    float.win = nil
    return
  end
  local key = ("%d:%d\n%s"):format(bottom, vim.o.columns, table.concat(lines, "\n"))
  if float.win and vim.api.nvim_win_is_valid(float.win) and float.key == key then
    return -- as it is on screen
  end
  float.key = key
  vim.api.nvim_buf_set_lines(float.buf, 0, -1, false, lines)
  local opts = {
    relative = "editor",
    anchor = "SE",
    row = bottom,
    col = vim.o.columns,
    width = width,
    height = #lines,
    style = "minimal",
    border = "rounded",
    focusable = false,
    zindex = 50,
  }
  if float.win and vim.api.nvim_win_is_valid(float.win) then
    vim.api.nvim_win_set_config(float.win, opts)
  else
    float.win = vim.api.nvim_open_win(float.buf, false, opts)
  end
end

local redraw_scheduled = false
local function schedule_redraw()
  if not redraw_scheduled then
    redraw_scheduled = true
    vim.schedule(function()
      redraw_scheduled = false
      redraw_float()
    end)
  end
end

-- The float moves out of the way as the cursor (or the review window) does.
vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "WinScrolled", "VimResized" }, {
  group = vim.api.nvim_create_augroup("toolhost.progress", { clear = true }),
  callback = function()
    if #order > 0 then
      schedule_redraw()
    end
  end,
})
vim.api.nvim_create_autocmd("User", {
  group = "toolhost.progress",
  pattern = "ToolhostReview",
  callback = function()
    if #order > 0 then
      schedule_redraw()
    end
  end,
})

---Remembers how to stop a running call (the function execute returned).
---@param call_id string
---@param cancel fun()
function M.set_cancel(call_id, cancel)
  if calls[call_id] then
    calls[call_id].cancel = cancel
  end
end

---Stops running calls: the one with `call_id`, or all. Returns how many were stopped.
---@param call_id? string
---@return integer
function M.cancel(call_id)
  local stopped = 0
  for _, id in ipairs(vim.list_slice(order)) do
    local call = calls[id]
    if call and call.cancel and (call_id == nil or call_id == id) then
      stopped = stopped + 1
      call.cancel()
    end
  end
  return stopped
end

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
  calls[call_id] = {
    client_id = client_id,
    token = token,
    tool = tool,
    summary = M.summary(args),
    on_update = on_update,
  }
  order[#order + 1] = call_id
  schedule_redraw()
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
  order = vim.tbl_filter(function(id)
    return id ~= call_id
  end, order)
  schedule_redraw()
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
  return ("%s: %s [%d/%d calls done]"):format(
    tostring(params.title or "task"),
    now,
    finished,
    #calls
  )
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
  -- A title that only repeats what the line already says (bash: "sleep 30") adds nothing.
  if type(message) == "string" and message ~= call.summary then
    call.last = message
  end
  schedule_redraw()
  emit(
    call.client_id,
    call.token,
    { kind = "report", message = type(message) == "string" and message or nil }
  )
end

return M
