---Reviews: every permission/ask waits in a queue, shown in a review window that
---never takes the focus when it opens (a float or a split), answered with
---buffer-local keys: all, per hunk, per file, with an edited proposal, or "always"
---with what it covers and where it is kept. Nothing modal opens by itself, so what
---you type (insert mode included) always goes where you type it.
---`require("toolhost").pending()` and `.answer()` are the same queue without the UI.
local config = require("toolhost.config")
local log = require("toolhost.log")
local util = require("toolhost.util")

local M = {}

---@class toolhost.Hunk
---@field id string
---@field file string
---@field header string
---@field lines string[]

---@class toolhost.Review
---@field id string
---@field client_id integer
---@field params table the permission/ask params
---@field hunks toolhost.Hunk[]
---@field files string[]
---@field decisions table<string, boolean> hunk id -> accepted (nil: undecided)
---@field edited table<string, string> relative path -> the text the person wants
---@field unsaved_choice? "editor"|"save"
---@field done fun(reply: table)

---@type toolhost.Review[]
M.queue = {}
M.current = 1

local ns = vim.api.nvim_create_namespace("toolhost.review")
local view = { buf = nil, win = nil, lines = {} } ---@type {buf?: integer, win?: integer, lines: table<integer, {file?: string, hunk?: string}>}

local function fire(event, review)
  vim.api.nvim_exec_autocmds("User", {
    pattern = "ToolhostReview",
    modeline = false,
    data = { event = event, id = review.id, count = #M.queue },
  })
end

---@param params table
---@return toolhost.Hunk[], string[]
local function parts(params)
  local metadata = type(params.metadata) == "table" and params.metadata or {}
  local hunks = {}
  for _, hunk in ipairs(type(metadata.hunks) == "table" and metadata.hunks or {}) do
    if type(hunk) == "table" and type(hunk.id) == "string" then
      hunks[#hunks + 1] = {
        id = hunk.id,
        file = tostring(hunk.file),
        header = tostring(hunk.header),
        lines = type(hunk.lines) == "table" and hunk.lines or {},
      }
    end
  end
  local files = {}
  for _, entry in ipairs(type(metadata.files) == "table" and metadata.files or {}) do
    if type(entry) == "table" and type(entry.relativePath) == "string" then
      files[#files + 1] = entry.relativePath
    end
  end
  return hunks, files
end

---@param review toolhost.Review
---@return table[]
local function overlaps(review)
  local metadata = type(review.params.metadata) == "table" and review.params.metadata or {}
  return vim.tbl_filter(function(item)
    return type(item) == "table" and item.overlaps == true
  end, type(metadata.unsaved) == "table" and metadata.unsaved or {})
end

---@param id string
---@return toolhost.Review?, integer?
local function find(id)
  for index, review in ipairs(M.queue) do
    if review.id == id then
      return review, index
    end
  end
end

---The pending asks, oldest first: `{id, tool, title, permission, patterns, files, hunks,
---unsaved, always}` (`always`: the ask's alwaysOptions, `{id, patterns, label}`).
---@return table[]
function M.pending()
  return vim.tbl_map(function(review)
    local metadata = type(review.params.metadata) == "table" and review.params.metadata or {}
    return {
      id = review.id,
      tool = review.params.tool,
      title = review.params.title,
      permission = review.params.permission,
      patterns = review.params.patterns,
      files = vim.deepcopy(review.files),
      hunks = vim.deepcopy(review.hunks),
      unsaved = vim.deepcopy(metadata.unsaved),
      always = vim.deepcopy(review.params.alwaysOptions),
    }
  end, M.queue)
end

local REPLY_FIELDS = { "message", "hunks", "files", "edited", "scope", "alwaysOption", "unsaved" }

---Answers a pending ask. `answer`: `{reply = "once"|"always"|"reject", hunks?, files?,
---message?, edited?, scope?, alwaysOption?, unsaved?}` (docs/protocol.md).
---@param id string
---@param answer table
---@return boolean ok
---@return string? error
function M.answer(id, answer)
  local review, index = find(id)
  if not review then
    return false, ("no pending review %s"):format(tostring(id))
  end
  if
    type(answer) ~= "table" or not vim.tbl_contains({ "once", "always", "reject" }, answer.reply)
  then
    return false, 'answer.reply must be "once", "always" or "reject"'
  end
  local reply = { reply = answer.reply }
  for _, key in ipairs(REPLY_FIELDS) do
    if answer[key] ~= nil then
      reply[key] = answer[key]
    end
  end
  table.remove(M.queue, index)
  if M.current > #M.queue then
    M.current = math.max(1, #M.queue)
  end
  log.info("review %s (%s): %s", id, tostring(review.params.title), reply.reply)
  fire("answered", review)
  M.render()
  review.done(reply)
  return true
end

---The sidecar no longer waits for this ask (answered elsewhere, or the call was cancelled).
---@param id string
function M.withdraw(id)
  local review, index = find(id)
  if not review then
    return
  end
  table.remove(M.queue, index)
  if M.current > #M.queue then
    M.current = math.max(1, #M.queue)
  end
  fire("withdrawn", review)
  M.render()
  review.done({ reply = "reject" }) -- frees the handler; the sidecar has moved on
end

---One line, short enough never to cause a hit-enter prompt (which would eat a key).
---@param text string
local function notify(text)
  local room = math.max(20, (vim.v.echospace or vim.o.columns) - 12)
  if #text > room then
    text = text:sub(1, room - 1) .. "…"
  end
  vim.notify("toolhost: " .. text, vim.log.levels.WARN)
end

---permission/ask: queue it, show it without taking the focus, wait for the answer.
---@return table reply
function M.ask(_, params, ctx)
  if type(params) ~= "table" then
    return { reply = "reject", message = "permission/ask arrived without params" }
  end
  local hunks, files = parts(params)
  local review = {
    id = type(params.id) == "string" and params.id or util.new_id("ask"),
    client_id = ctx and ctx.client_id or 0,
    params = params,
    hunks = hunks,
    files = files,
    decisions = {},
    edited = {},
  }
  local reply = util.await(function(done)
    review.done = done
    M.queue[#M.queue + 1] = review
    fire("added", review)
    local key = config.options.keys.review
    notify(
      ("review: %s — :Toolhost review%s"):format(
        tostring(params.title or params.tool),
        key and (" or " .. key) or ""
      )
    )
    if config.options.review.auto_open then
      M.open({ focus = false })
    end
  end)
  return reply or { reply = "reject" }
end

-- --- the review window ----------------------------------------------------------------------

local function keys()
  return config.options.review.keys
end

---@param review toolhost.Review
---@return string[] lines, table<integer, table> info, table[] marks
local function layout(review)
  local lines, info, marks = {}, {}, {}
  local function add(text, meta)
    lines[#lines + 1] = text
    info[#lines] = meta or {}
  end
  local k = keys()
  local params = review.params
  add(
    ("# toolhost review %d/%d: %s"):format(
      M.current,
      #M.queue,
      tostring(params.title or params.tool)
    )
  )
  local hints = {}
  local function hint(name, words)
    if k[name] then
      hints[#hints + 1] = k[name] .. " " .. words
    end
  end
  local option = type(params.alwaysOptions) == "table" and params.alwaysOptions[1]
  hint("accept_all", #review.hunks > 0 and "accept" or "allow once")
  hint("reject_all", "reject…")
  if option then
    hint("always", "always…")
  end
  if #review.hunks > 0 then
    if k.accept and k.reject then
      hints[#hints + 1] = k.accept .. "/" .. k.reject .. " hunk"
    end
    if k.accept_file and k.reject_file then
      hints[#hints + 1] = k.accept_file .. "/" .. k.reject_file .. " file"
    end
    hint("edit", "edit")
  end
  hint("close", "hide")
  add("# " .. table.concat(hints, " · "))
  if option then
    add(("# always would allow: %s"):format(tostring(option.label)))
  end
  for _, item in ipairs(overlaps(review)) do
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
    local metadata = type(params.metadata) == "table" and params.metadata or {}
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

local function valid_win()
  return view.win and vim.api.nvim_win_is_valid(view.win)
end

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
  M.map(buf)
  return buf
end

local function size(lines)
  local width = math.max(40, math.min(vim.o.columns - 4, 100, math.floor(vim.o.columns * 0.7)))
  local height = math.max(4, math.min(#lines, math.floor(vim.o.lines * 0.5)))
  return width, height
end

---Draws the current review; closes the window when nothing is pending.
function M.render()
  if #M.queue == 0 then
    if valid_win() then
      vim.api.nvim_win_close(view.win, true)
    end
    view.win = nil
    return
  end
  if not (view.buf and vim.api.nvim_buf_is_valid(view.buf)) then
    return
  end
  local review = M.queue[M.current] or M.queue[1]
  local lines, info, marks = layout(review)
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
  if valid_win() and vim.api.nvim_win_get_config(view.win).relative ~= "" then
    local width, height = size(lines)
    vim.api.nvim_win_set_config(view.win, { width = width, height = height })
  end
end

---Opens (or refreshes) the review window. `focus`: move the cursor into it.
---@param opts? {focus?: boolean}
function M.open(opts)
  opts = opts or {}
  if #M.queue == 0 then
    if opts.focus then
      vim.notify("toolhost: nothing to review", vim.log.levels.INFO)
    end
    return
  end
  local buf = ensure_buf()
  M.render()
  if not valid_win() then
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

---The window showing the reviews, if open.
---@return integer?
function M.window()
  return valid_win() and view.win or nil
end

-- --- acting on the review under the cursor ----------------------------------------------------

local function current()
  return M.queue[M.current]
end

---@return {file?: string, hunk?: string}
local function here()
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  for line = lnum, 1, -1 do
    local info = view.lines[line]
    if info and (info.hunk or info.file) then
      if line ~= lnum and not info.hunk and info.file then
        return { file = info.file }
      end
      return info
    end
  end
  return {}
end

local function decide(value, whole_file)
  local review = current()
  if not review then
    return
  end
  local at = here()
  for _, hunk in ipairs(review.hunks) do
    if (whole_file and at.file == hunk.file) or (not whole_file and at.hunk == hunk.id) then
      review.decisions[hunk.id] = value
    end
  end
  M.render()
  if not whole_file then
    M.jump(1)
  end
end

---The reply for "accept" as the hunks are marked: rejected hunks are left out.
---@param review toolhost.Review
---@return table
function M.accept_reply(review)
  local reply = { reply = "once", unsaved = review.unsaved_choice }
  local kept, rejected = {}, false
  for _, hunk in ipairs(review.hunks) do
    if review.decisions[hunk.id] == false then
      rejected = true
    else
      kept[#kept + 1] = hunk.id
    end
  end
  if rejected then
    reply.hunks = kept
  end
  if next(review.edited) then
    reply.edited = review.edited
  end
  return reply
end

function M.accept_all()
  local review = current()
  if review then
    M.answer(review.id, M.accept_reply(review))
  end
end

function M.reject_all()
  local review = current()
  if not review then
    return
  end
  vim.ui.input({ prompt = "Reason for the agent (optional): " }, function(text)
    local message = type(text) == "string" and vim.trim(text) ~= "" and text or nil
    M.answer(review.id, { reply = "reject", message = message })
  end)
end

local SCOPES = {
  { scope = "session", label = "for this session" },
  { scope = "project", label = "for this project (saved in its opencode.json)" },
  { scope = "user", label = "for all my projects (saved in my OpenCode config)" },
}

function M.always()
  local review = current()
  local options = review
    and type(review.params.alwaysOptions) == "table"
    and review.params.alwaysOptions
  if not review or not options or #options == 0 then
    return
  end
  vim.ui.select(options, {
    prompt = "Always allow:",
    kind = "toolhost.always",
    format_item = function(item)
      return tostring(item.label)
    end,
  }, function(option)
    if not option then
      return
    end
    vim.schedule(function()
      vim.ui.select(SCOPES, {
        prompt = ("Always allow %s:"):format(tostring(option.label)),
        kind = "toolhost.scope",
        format_item = function(item)
          return item.label
        end,
      }, function(scope)
        if scope then
          local reply = M.accept_reply(review)
          reply.reply, reply.alwaysOption, reply.scope = "always", option.id, scope.scope
          M.answer(review.id, reply)
        end
      end)
    end)
  end)
end

---Moves to the next (1) or previous (-1) hunk header.
---@param step integer
function M.jump(step)
  if not valid_win() or vim.api.nvim_get_current_win() ~= view.win then
    return
  end
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  local last = vim.api.nvim_buf_line_count(view.buf)
  local line = lnum + step
  while line >= 1 and line <= last do
    local info = view.lines[line]
    local prev = view.lines[line - 1]
    if info and info.hunk and not (prev and prev.hunk == info.hunk) then
      vim.api.nvim_win_set_cursor(0, { line, 0 })
      return
    end
    line = line + step
  end
end

function M.cycle(step)
  if #M.queue == 0 then
    return
  end
  M.current = (M.current - 1 + step) % #M.queue + 1
  M.render()
end

---The proposed text of `file`: its current text with every hunk of the review put in.
---@param review toolhost.Review
---@param file string
---@return string[] base, string[] proposed
function M.texts(review, file)
  local entries = type(review.params.metadata) == "table" and review.params.metadata.files or {}
  local path
  for _, entry in ipairs(entries) do
    if entry.relativePath == file then
      path = entry.movePath or entry.filePath
      if entry.movePath then
        path = entry.filePath -- the text comes from the source of a move
      end
    end
  end
  local base = {}
  local buf = path and util.loaded_buffer(path)
  if buf then
    base = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  elseif path and vim.fn.filereadable(path) == 1 then
    base = vim.fn.readfile(path)
  end
  local proposed = vim.deepcopy(base)
  local hunks = vim.tbl_filter(function(h)
    return h.file == file
  end, review.hunks)
  for i = #hunks, 1, -1 do
    local hunk = hunks[i]
    local start, count = hunk.header:match("^@@ %-(%d+),?(%d*)")
    start, count = tonumber(start), tonumber(count ~= "" and count or "1")
    local first = count == 0 and start or start - 1
    local new = {}
    for _, line in ipairs(hunk.lines) do
      local kind = line:sub(1, 1)
      if kind == " " or kind == "+" then
        new[#new + 1] = line:sub(2)
      end
    end
    for _ = 1, count do
      table.remove(proposed, first + 1)
    end
    for j = #new, 1, -1 do
      table.insert(proposed, first + 1, new[j])
    end
  end
  return base, proposed
end

---Opens a diff tab: the file as it is (left) and the proposal (right, editable; `:w`
---keeps your version for the answer, and the review keys work there too).
function M.edit()
  local review = current()
  local file = here().file
  if not review or not file then
    return
  end
  local base, proposed = M.texts(review, file)
  if review.edited[file] then
    proposed = vim.split(review.edited[file]:gsub("\n$", ""), "\n", { plain = true })
  end
  vim.cmd("tabnew")
  local left = vim.api.nvim_get_current_buf()
  vim.bo[left].buftype = "nofile"
  vim.bo[left].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(left, 0, -1, false, base)
  vim.bo[left].modifiable = false
  pcall(vim.api.nvim_buf_set_name, left, "toolhost://current/" .. file)
  vim.cmd("diffthis")
  vim.cmd("vnew")
  local right = vim.api.nvim_get_current_buf()
  vim.bo[right].buftype = "acwrite"
  vim.bo[right].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, right, "toolhost://proposed/" .. file)
  vim.api.nvim_buf_set_lines(right, 0, -1, false, proposed)
  vim.bo[right].modified = false
  local ft = vim.filetype.match({ filename = file })
  if ft then
    vim.bo[left].filetype, vim.bo[right].filetype = ft, ft
  end
  vim.cmd("diffthis")
  local review_id = review.id
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = right,
    callback = function()
      local still = find(review_id)
      if still then
        local text = table.concat(vim.api.nvim_buf_get_lines(right, 0, -1, false), "\n") .. "\n"
        still.edited[file] = text
        vim.bo[right].modified = false
        M.render()
        vim.notify(("toolhost: your version of %s is kept for the answer"):format(file))
      end
    end,
  })
  local k = keys()
  if k.accept_all then
    vim.keymap.set("n", k.accept_all, function()
      vim.cmd("silent write")
      vim.cmd("tabclose")
      local still = find(review_id)
      if still then
        M.answer(review_id, M.accept_reply(still))
      end
    end, { buffer = right, desc = "toolhost: accept with your version" })
  end
end

---Sets the review keys on `buf` (buffer-local; `review.keys` in setup()).
---@param buf integer
function M.map(buf)
  local k = keys()
  local function map(name, fn, desc)
    if k[name] then
      vim.keymap.set("n", k[name], fn, { buffer = buf, nowait = true, desc = "toolhost: " .. desc })
    end
  end
  map("accept_all", M.accept_all, "accept the change (all but the rejected hunks)")
  map("reject_all", M.reject_all, "reject the change, with an optional reason")
  map("always", M.always, "allow always: what it covers and where it is kept")
  map("accept", function()
    decide(true, false)
  end, "accept the hunk under the cursor")
  map("reject", function()
    decide(false, false)
  end, "reject the hunk under the cursor")
  map("accept_file", function()
    decide(true, true)
  end, "accept every hunk of this file")
  map("reject_file", function()
    decide(false, true)
  end, "reject every hunk of this file")
  map("edit", M.edit, "edit the proposed text in a diff tab")
  map("unsaved_editor", function()
    local review = current()
    if review then
      review.unsaved_choice = "editor"
      M.render()
    end
  end, "overlapping unsaved changes: apply in the editor only")
  map("unsaved_save", function()
    local review = current()
    if review then
      review.unsaved_choice = "save"
      M.render()
    end
  end, "overlapping unsaved changes: save yours too")
  map("next_hunk", function()
    M.jump(1)
  end, "next hunk")
  map("prev_hunk", function()
    M.jump(-1)
  end, "previous hunk")
  map("next_review", function()
    M.cycle(1)
  end, "next pending review")
  map("prev_review", function()
    M.cycle(-1)
  end, "previous pending review")
  map("close", function()
    if valid_win() then
      vim.api.nvim_win_close(view.win, true)
    end
    view.win = nil
  end, "hide (the review stays pending)")
end

return M
