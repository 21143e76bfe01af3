---What the review window shows for one review: its lines (a header with every key and
---what it does, what "always" would allow, the overlapping unsaved changes, then the
---diff or the command), which file and hunk each line belongs to, and the decision
---mark of each hunk. Header lines are wrapped to the window's width; diff lines are not
---(they scroll sideways, as in any diff).
local config = require("toolhost.config")
local model = require("toolhost.review.model")
local queue = require("toolhost.review.queue")

local M = {}

---`text` as lines of at most `width` cells, broken at spaces; continuation lines
---start with `lead`.
---@param text string
---@param width integer
---@param lead string
---@return string[]
function M.wrap(text, width, lead)
  width = math.max(width, #lead + 10)
  local out, line = {}, ""
  for word in text:gmatch("%S+") do
    local candidate = line == "" and word or (line .. " " .. word)
    if vim.fn.strdisplaywidth(candidate) > width and line ~= "" then
      out[#out + 1] = line
      line = lead .. word
    else
      line = candidate
    end
  end
  out[#out + 1] = line
  return out
end

---What the reject key answers, in words: this review and, as OpenCode does, every
---other review of the same agent session still queued.
---@param review toolhost.Review
---@return string
function M.reject_words(review)
  local mates = #queue.session_mates(review)
  if mates == 0 then
    return "reject…"
  end
  return ("reject… (and the %d other%s queued from this agent)"):format(
    mates,
    mates == 1 and "" or "s"
  )
end

---The key hints: every bound key with what it does (`review.keys`; false hides one).
---@param review toolhost.Review
---@param keys table
---@param option? table the first alwaysOption
---@param count integer how many reviews are pending
---@return string[] hints
local function hints(review, keys, option, count)
  local parts = {}
  local function hint(name, words)
    if keys[name] then
      parts[#parts + 1] = keys[name] .. " " .. words
    end
  end
  local function pair(a, b, words)
    if keys[a] and keys[b] then
      parts[#parts + 1] = keys[a] .. "/" .. keys[b] .. " " .. words
    end
  end
  local edit = #review.hunks > 0
  hint("accept_all", edit and "accept" or "allow once")
  hint("reject_all", M.reject_words(review))
  if option then
    hint("always", "always…")
  end
  if edit then
    pair("accept", "reject", "mark hunk")
    pair("accept_file", "reject_file", "mark file")
    hint("edit", "edit the proposal")
    pair("next_hunk", "prev_hunk", "next/previous hunk")
  end
  if #model.overlaps(review) > 0 then
    pair("unsaved_editor", "unsaved_save", "your unsaved lines: editor only / save too")
  end
  if count > 1 then
    pair("next_review", "prev_review", "next/previous review")
  end
  hint("close", "hide")
  local out = { "# " .. table.concat(parts, " · ") }
  if edit and keys.accept_all then
    out[#out + 1] = ("# Marks only choose: %s sends the answer (unmarked hunks are accepted)."):format(
      keys.accept_all
    )
  end
  return out
end

---@param review toolhost.Review
---@param position integer the review's place in the queue
---@param count integer how many are pending
---@param width? integer the window's width (header lines wrap to it)
---@return string[] lines, table<integer, table> info, table[] marks
function M.build(review, position, count, width)
  width = width or 100
  local lines, info, marks = {}, {}, {}
  local function add(text, meta)
    lines[#lines + 1] = text
    info[#lines] = meta or {}
  end
  local function header(text)
    for _, line in ipairs(M.wrap(text, width, "#   ")) do
      add(line)
    end
  end
  local k = config.options.review.keys
  local params = review.params
  header(
    ("# toolhost review %d/%d: %s"):format(position, count, tostring(params.title or params.tool))
  )
  local option = type(params.alwaysOptions) == "table" and params.alwaysOptions[1]
  for _, line in ipairs(hints(review, k, option, count)) do
    header(line)
  end
  if option then
    header(("# always would allow: %s"):format(tostring(option.label)))
  end
  for _, item in ipairs(model.overlaps(review)) do
    local choice = review.unsaved_choice == "save" and "save yours too" or "the editor only"
    header(
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
    header(model.asks_to(params))
    local metadata = model.metadata(params)
    if params.permission == "bash" and type(metadata.command) == "string" then
      for _, line in ipairs(vim.split(metadata.command, "\n", { plain = true })) do
        add("    " .. line)
      end
      if type(metadata.workdir) == "string" then
        header("# in " .. vim.fn.fnamemodify(metadata.workdir, ":~"))
      end
      return lines, info, marks
    end
    local port = params.permission == "network" and tonumber(metadata.port)
    for _, pattern in ipairs(type(params.patterns) == "table" and params.patterns or {}) do
      local shown = tostring(pattern)
      if port and port ~= 80 and port ~= 443 then
        shown = ("%s (port %d)"):format(shown, port)
      end
      add("    " .. shown)
    end
    if type(metadata.command) == "string" then
      add("")
      add("# the command:")
      for _, line in ipairs(vim.split(metadata.command, "\n", { plain = true })) do
        add("    " .. line)
      end
    end
    return lines, info, marks
  end
  local kinds = model.file_kinds(review)
  local last_file
  for _, hunk in ipairs(review.hunks) do
    if hunk.file ~= last_file then
      last_file = hunk.file
      local notes = {}
      if kinds[hunk.file] == "add" then
        notes[#notes + 1] = "new file"
      elseif kinds[hunk.file] == "delete" then
        notes[#notes + 1] = "deleted"
      end
      if review.edited[hunk.file] then
        notes[#notes + 1] = "your edited version"
      end
      local note = #notes > 0 and ("  (" .. table.concat(notes, ", ") .. ")") or ""
      add(("diff --git a/%s b/%s%s"):format(hunk.file, hunk.file, note), { file = hunk.file })
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
