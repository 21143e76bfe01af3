---A file under review as text: as it was when the ask arrived (its loaded buffer, else
---the disk: what the agent's diff was made against) and as proposed, with every hunk of
---the review put in. The edit tab shows the two side by side. The text is taken when the
---ask arrives, so typing in the file while the review is open never moves a hunk to the
---wrong line; a file whose text did not match the hunks even then is marked stale.
local model = require("toolhost.review.model")
local util = require("toolhost.util")

local M = {}

---One side of `hunk`, unprefixed: its ' ' lines and those marked `mark` ("+": the lines
---it leaves in place of its old ones; "-": the lines it replaces).
---@param hunk toolhost.Hunk
---@param mark "+"|"-"
---@return string[]
local function side(hunk, mark)
  local lines = {}
  for _, line in ipairs(hunk.lines) do
    local kind = line:sub(1, 1)
    if kind == " " or kind == mark then
      lines[#lines + 1] = line:sub(2)
    end
  end
  return lines
end

---The text the hunks of `file` were made against: for a change the agent proposes, the
---file now (its loaded buffer, else the disk); for one made outside review, the file's
---text before the turn (the hunks run from it to the disk's).
---@param review toolhost.Review
---@param file string
---@return string[]
function M.current(review, file)
  local path, before
  local metadata = model.metadata(review.params)
  local files = metadata.files
  for _, entry in ipairs(type(files) == "table" and files or {}) do
    if type(entry) == "table" and entry.relativePath == file then
      path = entry.filePath -- for a move too: the text comes from its source
      before = entry.before
    end
  end
  if metadata.kind == "afterTheFact" then
    local base = type(before) == "string" and vim.split(before, "\n", { plain = true }) or {}
    if base[#base] == "" then
      table.remove(base)
    end
    return base
  end
  local buf = path and util.loaded_buffer(path)
  if buf then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  elseif path and vim.fn.filereadable(path) == 1 then
    return vim.fn.readfile(path)
  end
  return {}
end

---@param hunk toolhost.Hunk
---@return integer first the 0-based index of the first line it replaces, integer count
local function position(hunk)
  local start, count = hunk.header:match("^@@ %-(%d+),?(%d*)")
  start, count = tonumber(start) or 0, tonumber(count ~= "" and count or "1")
  return count == 0 and start or start - 1, count
end

---Takes each file's text as the ask arrives (what its hunks were made against), and
---marks the files whose text no longer holds the hunks' old lines where they say.
---@param review toolhost.Review
function M.snapshot(review)
  review.base, review.stale = {}, {}
  for _, file in ipairs(review.files) do
    local base = M.current(review, file)
    review.base[file] = base
    for _, hunk in ipairs(review.hunks) do
      if hunk.file == file then
        local first = position(hunk)
        local old = side(hunk, "-")
        for i, line in ipairs(old) do
          if base[first + i] ~= line then
            review.stale[file] = true
          end
        end
      end
    end
  end
end

---The proposed text of `file`: its text as the ask arrived with every hunk put in.
---@param review toolhost.Review
---@param file string
---@return string[] base, string[] proposed
function M.texts(review, file)
  local base = review.base and review.base[file] or M.current(review, file)
  local proposed = vim.deepcopy(base)
  local hunks = vim.tbl_filter(function(h)
    return h.file == file
  end, review.hunks)
  -- Last hunk first, so the line numbers of the earlier headers still hold.
  for i = #hunks, 1, -1 do
    local hunk = hunks[i]
    local first, count = position(hunk)
    local new = side(hunk, "+")
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
