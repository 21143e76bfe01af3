---The review window: a scratch diff buffer (`toolhost://review`) drawn from the review
---the queue points at, in a float or a split below (`review.layout`), opened without
---taking the focus unless asked. It redraws on every change to the queue and closes
---when nothing is pending.
---
---The float never covers the line being typed on: it sits at the top right when the
---cursor is in the lower part of the screen and at the bottom right otherwise, as tall
---as its text or as the room there allows (and, with no room at all, waits hidden
---until there is). It moves as the cursor does. It cannot be entered by <C-w>w or the
---mouse (`focusable = false`, and any other way in is sent back): only `:Toolhost
---review` moves the focus into it, so keys meant for a buffer never act on a review.
local config = require("toolhost.config")
local keymaps = require("toolhost.review.keymaps")
local layout = require("toolhost.review.layout")
local queue = require("toolhost.review.queue")
local view = require("toolhost.review.view")

local M = {}

local ns = vim.api.nvim_create_namespace("toolhost.review")
local group = vim.api.nvim_create_augroup("toolhost.review.window", { clear = true })
local MIN_ROWS = 3 -- fewer lines of review than this is not worth showing
---Whether the window should be on screen (opened, not hidden with q or by an answer
---that emptied the queue); the float may still be off for want of room.
local wanted = false
local placed ---@type string? the last float placement, to skip needless updates

local function ensure_buf()
  if view.buf and vim.api.nvim_buf_is_valid(view.buf) then
    return view.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "toolhost://review")
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
  view.buf = buf
  keymaps.map(buf)
  return buf
end

local function is_float()
  return config.options.review.layout ~= "split"
end

---The float's width: room for a diff, never the whole screen.
---@return integer
function M.width()
  if not is_float() then
    return math.max(20, vim.o.columns - 1)
  end
  return math.max(
    30,
    math.min(vim.o.columns - 4, 100, math.max(60, math.floor(vim.o.columns * 0.6)))
  )
end

---The screen row (1-based) of the cursor in the window being typed in, if shown.
---@return integer?
local function cursor_row()
  local win = vim.api.nvim_get_current_win()
  if win == view.win then
    win = view.from
  end
  if not (win and vim.api.nvim_win_is_valid(win)) then
    return nil
  end
  local cursor = vim.api.nvim_win_get_cursor(win)
  local pos = vim.fn.screenpos(win, cursor[1], cursor[2] + 1)
  return pos.row > 0 and pos.row or nil
end

---Where the float goes so that it leaves the cursor's line free: `{row, height}` (row
---0-based, of its top border), or nil when there is no room.
---@param lines integer how many lines the review has
---@return {row: integer, height: integer}?
function M.place(lines)
  local last = vim.o.lines - vim.o.cmdheight -- the last screen row above the command line
  if vim.o.laststatus > 0 then
    last = last - 1 -- keep a status line readable
  end
  local cursor = cursor_row() or 0
  local above = cursor - 1 -- rows 1 .. cursor-1
  local below = last - cursor -- rows cursor+1 .. last
  local top = above >= below
  local room = (top and above or below) - 2 -- the border takes two rows
  local height = math.min(lines, room, math.max(MIN_ROWS, math.floor(vim.o.lines * 0.5)))
  if height < MIN_ROWS then
    return nil
  end
  return { row = top and 0 or (last - height - 2), height = height }
end

local function float_config(spot)
  return {
    relative = "editor",
    anchor = "NW",
    row = spot.row,
    col = math.max(0, vim.o.columns - M.width() - 2),
    width = M.width(),
    height = spot.height,
    border = "rounded",
    title = " toolhost review ",
    title_pos = "center",
    style = "minimal",
    focusable = false,
    zindex = 60,
  }
end

---Puts the float where it leaves the cursor's line free (opening or hiding it).
local function reposition()
  if not wanted or not is_float() or view.focused() or not view.buf then
    return
  end
  local spot = M.place(vim.api.nvim_buf_line_count(view.buf))
  if not spot then
    if view.valid_win() then
      vim.api.nvim_win_close(view.win, true)
      view.win, placed = nil, nil
    end
    return
  end
  local cfg = float_config(spot)
  local key = ("%d:%d:%d:%d"):format(cfg.row, cfg.col, cfg.width, cfg.height)
  if view.valid_win() then
    if key ~= placed then
      vim.api.nvim_win_set_config(view.win, cfg)
    end
  else
    view.win = vim.api.nvim_open_win(view.buf, false, cfg)
    vim.wo[view.win].wrap = false
    vim.wo[view.win].foldenable = false
    vim.wo[view.win].cursorline = true
  end
  placed = key
end

---Draws the current review; closes the window when nothing is pending.
function M.render()
  if #queue.list == 0 then
    wanted = false
    view.hide()
    return
  end
  if not (view.buf and vim.api.nvim_buf_is_valid(view.buf)) then
    return
  end
  local review = queue.shown() or queue.list[1]
  local lines, info, marks = layout.build(review, queue.current, #queue.list, M.width() - 1)
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.bo[view.buf].modified = false
  view.lines = info
  vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  for _, mark in ipairs(marks) do
    vim.api.nvim_buf_set_extmark(view.buf, ns, mark.line - 1, 0, {
      virt_text = { { mark.text, mark.hl } },
      virt_text_pos = "eol",
    })
  end
  if view.focused() and is_float() then
    -- In use: as tall as it needs, where it is.
    local height = math.max(MIN_ROWS, math.min(#lines, vim.o.lines - vim.o.cmdheight - 3))
    vim.api.nvim_win_set_config(view.win, { height = height })
  else
    placed = nil
    reposition()
  end
end

---Opens (or refreshes) the review window. `focus`: move the cursor into it.
---@param opts? {focus?: boolean}
function M.open(opts)
  opts = opts or {}
  if #queue.list == 0 then
    if opts.focus then
      vim.notify("toolhost: nothing to review", vim.log.levels.INFO)
    end
    return
  end
  wanted = true
  local buf = ensure_buf()
  if not view.focused() then
    view.from = vim.api.nvim_get_current_win()
  end
  M.render()
  if not view.valid_win() then
    local height = math.max(MIN_ROWS, math.min(vim.api.nvim_buf_line_count(buf), 15))
    if not is_float() then
      view.win = vim.api.nvim_open_win(buf, false, { split = "below", win = -1, height = height })
      vim.wo[view.win].wrap = false
      vim.wo[view.win].foldenable = false
      vim.wo[view.win].cursorline = true
    elseif opts.focus then
      -- No room away from the cursor: asked for, so over it (the focus moves in anyway).
      view.win = vim.api.nvim_open_win(buf, false, float_config({ row = 0, height = height }))
      vim.wo[view.win].wrap = false
      vim.wo[view.win].cursorline = true
    end
  end
  if opts.focus and view.valid_win() then
    view.entering = true
    vim.api.nvim_set_current_win(view.win)
    view.entering = false
    if is_float() then
      M.render() -- full height while in use
    end
  end
end

---Hides the window (the reviews stay pending) until it is opened again.
function M.close()
  wanted = false
  view.hide()
end

-- The window shows the queue, so any change to it (or to a review in it) redraws.
queue.on_change(M.render)

vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "WinScrolled", "VimResized" }, {
  group = group,
  callback = function()
    if wanted then
      reposition()
    end
  end,
})

-- Into the review window only through :Toolhost review; any other way is sent back.
vim.api.nvim_create_autocmd("WinEnter", {
  group = group,
  callback = function()
    local win = vim.api.nvim_get_current_win()
    if win == view.win and not view.entering then
      vim.schedule(function()
        if view.focused() and not view.entering then
          view.leave()
        end
      end)
    end
  end,
})

-- Leaving it (to the edit tab, or by :wincmd): the float goes back out of the way, and
-- its ruler (a float has no status line, so Neovim drew it in the command line) goes too.
vim.api.nvim_create_autocmd("WinLeave", {
  group = group,
  callback = function()
    if vim.api.nvim_get_current_win() == view.win then
      vim.schedule(function()
        placed = nil
        reposition()
        if vim.api.nvim_get_mode().mode:sub(1, 1) ~= "c" then
          vim.cmd("echo ''")
          vim.cmd("redraw")
        end
      end)
    end
  end,
})

return M
