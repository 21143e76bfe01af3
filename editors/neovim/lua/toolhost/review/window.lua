---The review window: a scratch diff buffer (`toolhost://review`) drawn from the review
---the queue points at, in a float at the top right or a split below (`review.layout`),
---opened without taking the focus unless asked. It redraws on every change to the
---queue and closes when nothing is pending.
local config = require("toolhost.config")
local keymaps = require("toolhost.review.keymaps")
local layout = require("toolhost.review.layout")
local queue = require("toolhost.review.queue")
local view = require("toolhost.review.view")

local M = {}

local ns = vim.api.nvim_create_namespace("toolhost.review")

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

local function size(lines)
  local width = math.max(40, math.min(vim.o.columns - 4, 100, math.floor(vim.o.columns * 0.7)))
  local height = math.max(4, math.min(#lines, math.floor(vim.o.lines * 0.5)))
  return width, height
end

---Draws the current review; closes the window when nothing is pending.
function M.render()
  if #queue.list == 0 then
    view.hide()
    return
  end
  if not (view.buf and vim.api.nvim_buf_is_valid(view.buf)) then
    return
  end
  local review = queue.shown() or queue.list[1]
  local lines, info, marks = layout.build(review, queue.current, #queue.list)
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
  if view.valid_win() and vim.api.nvim_win_get_config(view.win).relative ~= "" then
    local width, height = size(lines)
    vim.api.nvim_win_set_config(view.win, { width = width, height = height })
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
  local buf = ensure_buf()
  M.render()
  if not view.valid_win() then
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local width, height = size(lines)
    if config.options.review.layout == "split" then
      view.win = vim.api.nvim_open_win(buf, false, { split = "below", win = -1, height = height })
    else
      view.win = vim.api.nvim_open_win(buf, false, {
        relative = "editor",
        anchor = "NE",
        row = 1,
        col = vim.o.columns - 1,
        width = width,
        height = height,
        border = "rounded",
        title = " toolhost review ",
        title_pos = "center",
        style = "minimal",
        zindex = 60,
      })
    end
    vim.wo[view.win].wrap = false
    vim.wo[view.win].foldenable = false
    vim.wo[view.win].cursorline = true
  end
  if opts.focus then
    vim.api.nvim_set_current_win(view.win)
  end
end

-- The window shows the queue, so any change to it (or to a review in it) redraws.
queue.on_change(M.render)

return M
