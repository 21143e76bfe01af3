---What the review window shows for one review: its lines (a header with the keys, what
---"always" would allow, the overlapping unsaved changes, then the diff or the command),
---which file and hunk each line belongs to, and the decision mark of each hunk.
local config = require("toolhost.config")
local model = require("toolhost.review.model")

local M = {}

---The hint line: each bound key with what it does (`review.keys`; false hides one).
---@param review toolhost.Review
---@param keys table
---@param option? table the first alwaysOption
---@return string
local function hints(review, keys, option)
  local parts = {}
  local function hint(name, words)
    if keys[name] then
      parts[#parts + 1] = keys[name] .. " " .. words
    end
  end
  hint("accept_all", #review.hunks > 0 and "accept" or "allow once")
  hint("reject_all", "reject…")
  if option then
    hint("always", "always…")
  end
  if #review.hunks > 0 then
    if keys.accept and keys.reject then
      parts[#parts + 1] = keys.accept .. "/" .. keys.reject .. " hunk"
    end
    if keys.accept_file and keys.reject_file then
      parts[#parts + 1] = keys.accept_file .. "/" .. keys.reject_file .. " file"
    end
    hint("edit", "edit")
  end
  hint("close", "hide")
  return "# " .. table.concat(parts, " · ")
end

---@param review toolhost.Review
---@param position integer the review's place in the queue
---@param count integer how many are pending
---@return string[] lines, table<integer, table> info, table[] marks
function M.build(review, position, count)
  local lines, info, marks = {}, {}, {}
  local function add(text, meta)
    lines[#lines + 1] = text
    info[#lines] = meta or {}
  end
  local k = config.options.review.keys
  local params = review.params
  add(
    ("# toolhost review %d/%d: %s"):format(position, count, tostring(params.title or params.tool))
  )
  local option = type(params.alwaysOptions) == "table" and params.alwaysOptions[1]
  add(hints(review, k, option))
  if option then
    add(("# always would allow: %s"):format(tostring(option.label)))
  end
  for _, item in ipairs(model.overlaps(review)) do
    local choice = review.unsaved_choice == "save" and "save yours too" or "the editor only"
    add(
      ("# ! %s: the change overlaps your unsaved lines; chosen: %s (%s editor only, %s save yours too)"):format(
        tostring(item.file),
        choice,
        k.unsaved_editor or "-",
        k.unsaved_save or "-"
      )
    )
  end
  if #review.hunks == 0 then
    add("")
    add(("%s asks for `%s` on:"):format(tostring(params.tool), tostring(params.permission)))
    for _, pattern in ipairs(type(params.patterns) == "table" and params.patterns or {}) do
      add("    " .. tostring(pattern))
    end
    local metadata = model.metadata(params)
    if type(metadata.command) == "string" then
      add("")
      for _, line in ipairs(vim.split(metadata.command, "\n", { plain = true })) do
        add("    " .. line)
      end
    end
    return lines, info, marks
  end
  local last_file
  for _, hunk in ipairs(review.hunks) do
    if hunk.file ~= last_file then
      last_file = hunk.file
      local edited = review.edited[hunk.file] and "  (your edited version)" or ""
      add(("diff --git a/%s b/%s%s"):format(hunk.file, hunk.file, edited), { file = hunk.file })
    end
    add(hunk.header, { file = hunk.file, hunk = hunk.id })
    local decided = review.decisions[hunk.id]
    marks[#marks + 1] = {
      line = #lines,
      text = decided == true and "  ✓ accept"
        or decided == false and "  ✗ reject"
        or "  · undecided",
      hl = decided == true and "DiffAdd" or decided == false and "DiffDelete" or "Comment",
      id = hunk.id,
    }
    for _, line in ipairs(hunk.lines) do
      add(line, { file = hunk.file, hunk = hunk.id })
    end
  end
  return lines, info, marks
end

return M
