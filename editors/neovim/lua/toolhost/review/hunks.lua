---A file under review as text: as it is now (its loaded buffer, else the disk) and as
---proposed, with every hunk of the review put in. The edit tab shows the two side by side.
local model = require("toolhost.review.model")
local util = require("toolhost.util")

local M = {}

---The lines `hunk` leaves in place of its old ones (its ' ' and '+' lines, unprefixed).
---@param hunk toolhost.Hunk
---@return string[]
local function new_side(hunk)
  local new = {}
  for _, line in ipairs(hunk.lines) do
    local kind = line:sub(1, 1)
    if kind == " " or kind == "+" then
      new[#new + 1] = line:sub(2)
    end
  end
  return new
end

---The proposed text of `file`: its current text with every hunk of the review put in.
---@param review toolhost.Review
---@param file string
---@return string[] base, string[] proposed
function M.texts(review, file)
  local path, before
  for _, entry in ipairs(model.metadata(review.params).files or {}) do
    if entry.relativePath == file then
      path = entry.filePath -- for a move too: the text comes from its source
      before = entry.before
    end
  end
  local base = {}
  local buf = path and util.loaded_buffer(path)
  if model.metadata(review.params).kind == "afterTheFact" then
    -- Changed outside review: the hunks run from the text before the turn to the disk's.
    base = before and vim.split(before, "\n", { plain = true }) or {}
    if base[#base] == "" then
      table.remove(base)
    end
  elseif buf then
    base = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  elseif path and vim.fn.filereadable(path) == 1 then
    base = vim.fn.readfile(path)
  end
  local proposed = vim.deepcopy(base)
  local hunks = vim.tbl_filter(function(h)
    return h.file == file
  end, review.hunks)
  -- Last hunk first, so the line numbers of the earlier headers still hold.
  for i = #hunks, 1, -1 do
    local hunk = hunks[i]
    local start, count = hunk.header:match("^@@ %-(%d+),?(%d*)")
    start, count = tonumber(start), tonumber(count ~= "" and count or "1")
    local first = count == 0 and start or start - 1
    local new = new_side(hunk)
    for _ = 1, count do
      table.remove(proposed, first + 1)
    end
    for j = #new, 1, -1 do
      table.insert(proposed, first + 1, new[j])
    end
  end
  return base, proposed
end

return M
