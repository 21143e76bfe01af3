---The review window's state: its buffer, its window, which file and hunk each of its
---lines shows; and what needs that alone: the file or hunk under the cursor, moving
---between hunk headers, hiding the window (the reviews stay pending).
local M = {}

M.buf = nil ---@type integer?
M.win = nil ---@type integer?
M.lines = {} ---@type table<integer, {file?: string, hunk?: string}>

---@return boolean
function M.valid_win()
  return M.win and vim.api.nvim_win_is_valid(M.win)
end

---The window showing the reviews, if open.
---@return integer?
function M.window()
  return M.valid_win() and M.win or nil
end

---Closes the window, if open; the buffer and the queue stay.
function M.hide()
  if M.valid_win() then
    vim.api.nvim_win_close(M.win, true)
  end
  M.win = nil
end

---The hunk (or, above its first hunk, the file) under the cursor.
---@return {file?: string, hunk?: string}
function M.here()
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  for line = lnum, 1, -1 do
    local info = M.lines[line]
    if info and (info.hunk or info.file) then
      if line ~= lnum and not info.hunk and info.file then
        return { file = info.file }
      end
      return info
    end
  end
  return {}
end

---Moves to the next (1) or previous (-1) hunk header.
---@param step integer
function M.jump(step)
  if not M.valid_win() or vim.api.nvim_get_current_win() ~= M.win then
    return
  end
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  local last = vim.api.nvim_buf_line_count(M.buf)
  local line = lnum + step
  while line >= 1 and line <= last do
    local info = M.lines[line]
    local prev = M.lines[line - 1]
    if info and info.hunk and not (prev and prev.hunk == info.hunk) then
      vim.api.nvim_win_set_cursor(0, { line, 0 })
      return
    end
    line = line + step
  end
end

return M
