---The review window's state: its buffer, its window, which file and hunk each of its
---lines shows, and the window the person came from; and what needs that alone: the
---file or hunk under the cursor, moving between hunk headers, hiding the window, and
---leaving it (the focus goes back where it came from).
local M = {}

M.buf = nil ---@type integer?
M.win = nil ---@type integer?
M.lines = {} ---@type table<integer, {file?: string, hunk?: string}>
---The window the focus was in before `:Toolhost review` moved it here.
M.from = nil ---@type integer?
---True only while `:Toolhost review` moves the focus in (any other way in is sent back).
M.entering = false

---@return boolean
function M.valid_win()
  return M.win ~= nil and vim.api.nvim_win_is_valid(M.win)
end

---The window showing the reviews, if open.
---@return integer?
function M.window()
  return M.valid_win() and M.win or nil
end

---Whether the focus is in the review window.
---@return boolean
function M.focused()
  return M.valid_win() and vim.api.nvim_get_current_win() == M.win
end

---Moves the focus back to the window it came from (or any other normal window), and
---redraws, so nothing of the review window (its ruler, its cursor) stays on screen.
function M.leave()
  if not M.focused() then
    return
  end
  local back = M.from
  if not (back and vim.api.nvim_win_is_valid(back) and back ~= M.win) then
    back = nil
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if win ~= M.win and vim.api.nvim_win_get_config(win).relative == "" then
        back = win
        break
      end
    end
  end
  if back then
    vim.api.nvim_set_current_win(back)
  end
  -- A float has no status line, so its ruler was drawn in the command line; a redraw
  -- leaves it there (the window you are back in shows its own in its status line).
  vim.cmd("echo ''")
  vim.cmd("redraw")
end

---Closes the window, if open; the buffer and the queue stay.
function M.hide()
  M.leave()
  if M.valid_win() then
    vim.api.nvim_win_close(M.win, true)
  end
  M.win = nil
  vim.cmd("redraw")
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
  if not M.focused() then
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
