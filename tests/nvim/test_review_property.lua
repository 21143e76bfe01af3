-- A property of the review, measured rather than hoped: over many random interleavings
-- of agent changes (one or two hunks; accepted, rejected, accepted in part, edited by
-- the person; overlapping the user's unsaved lines or not; reviewed or allowed by a
-- rule) with the user typing, undoing and saving in the same buffer, while a review is
-- open and between calls:
--
--   * every word the user typed (and has not undone) is in the buffer exactly once;
--   * every hunk the answer accepted is in the buffer exactly once, every other not at all;
--   * one `u` takes back exactly one step: a whole insert of the user's, or the agent's
--     whole change;
--   * the disk never holds a word the user typed and did not save, nor a rejected hunk;
--     a buffer without unsaved changes is the disk, and after `:w` they are equal.
--
-- One Neovim and one sidecar run every case. The suite runs 50 cases with a new seed
-- each time (about 10 s; 1000 cases take 2-9 minutes, by load): TOOLHOST_PROPERTY_CASES=1000
-- runs the full property, TOOLHOST_PROPERTY_SEED replays a run (the seed is printed
-- first, and with every failure).
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local SEED = tonumber(vim.env.TOOLHOST_PROPERTY_SEED or "") or (os.time() % 1000000)
local CASES = tonumber(vim.env.TOOLHOST_PROPERTY_CASES or "") or 50
io.stderr:write(("property seed %d, %d cases\n"):format(SEED, CASES))

local root = T.project("property", {})
vim.cmd.cd(root)
require("toolhost").setup({
  cmd = T.toolhost,
  -- Files named auto-* are allowed without a review (unless the change overlaps the
  -- user's unsaved lines, which always asks); every other edit is reviewed (the
  -- plugin's default). One key only: a Lua table keeps no order.
  config = { permission = { edit = { ["auto-*"] = "allow" } } },
})
T.client(root)
local api = require("toolhost")
local review = require("toolhost.review")

local rng -- a small LCG, so a seed replays the same run on every Lua
local function random(n)
  rng = (rng * 1103515245 + 12345) % 2147483648
  return rng % n + 1
end
local function chance(p)
  return random(1000) <= p * 1000
end

local serial = 0
local function token(prefix)
  serial = serial + 1
  return prefix .. serial
end

local function count(text, word)
  local n = 0
  for _ in text:gmatch("%f[%w]" .. word .. "%f[%W]") do
    n = n + 1
  end
  return n
end

---One case's world: the buffer, what the person expects of it, and the log to print.
local function new_case(index)
  local auto = chance(0.3)
  local name = ("%s-%d.txt"):format(auto and "auto" or "rev", index)
  local path = root .. "/" .. name
  local lines = {}
  for i = 1, 6 + random(20) do
    lines[i] = ("c%dl%d"):format(index, i)
  end
  T.write(path, table.concat(lines, "\n") .. "\n")
  vim.cmd("silent edit " .. vim.fn.fnameescape(path))
  return {
    index = index,
    name = name,
    path = path,
    buf = vim.api.nvim_get_current_buf(),
    live = {}, -- user words typed and not undone
    gone = {}, -- user words undone
    saved = {}, -- user words that were in the buffer when it was saved
    applied = {}, -- agent words an answer accepted (and the user did not undo)
    refused = {}, -- agent words rejected, not applied, or undone
    blocks = {}, -- the undo steps, oldest first: { words = {...} }
    log = {},
  }
end

local function text(case)
  return table.concat(vim.api.nvim_buf_get_lines(case.buf, 0, -1, false), "\n") .. "\n"
end

local function fail(case, what)
  error(
    ("seed %d case %d (%s): %s\nsteps: %s\nbuffer:\n%s\ndisk:\n%s"):format(
      SEED,
      case.index,
      case.name,
      what,
      table.concat(case.log, "; "),
      text(case),
      tostring(T.read(case.path))
    ),
    0
  )
end

local function check(case, where)
  local now = text(case)
  for word in pairs(case.live) do
    if count(now, word) ~= 1 then
      fail(case, ("%s: the user's %s is there %d times"):format(where, word, count(now, word)))
    end
  end
  for word in pairs(case.gone) do
    if count(now, word) ~= 0 then
      fail(case, ("%s: the undone %s is still there"):format(where, word))
    end
  end
  for word in pairs(case.applied) do
    if count(now, word) ~= 1 then
      fail(case, ("%s: accepted %s is there %d times"):format(where, word, count(now, word)))
    end
  end
  for word in pairs(case.refused) do
    if count(now, word) ~= 0 then
      fail(case, ("%s: %s, not applied, is in the buffer"):format(where, word))
    end
  end
  local disk = T.read(case.path) or ""
  for word in disk:gmatch("%f[%w](u%d+)%f[%W]") do
    if not case.saved[word] then
      fail(case, ("%s: the user's unsaved %s reached the disk"):format(where, word))
    end
  end
  for word in disk:gmatch("%f[%w]([Ae]%d+)%f[%W]") do
    if count(disk, word) > 1 then
      fail(case, ("%s: %s is on disk twice"):format(where, word))
    end
  end
  if not vim.bo[case.buf].modified and disk ~= now then
    fail(case, where .. ": a buffer without unsaved changes is not what the disk holds")
  end
end

local function saved_now(case)
  for word in pairs(case.live) do
    case.saved[word] = true
  end
end

---What the user does: type a word (at the end of a line, or on a new line), undo, save.
local function user_step(case)
  local roll = random(10)
  local lines = vim.api.nvim_buf_line_count(case.buf)
  if roll <= 6 then
    local word = token("u")
    local line = random(lines)
    local keys = chance(0.5) and ("%dGA %s<Esc>"):format(line, word)
      or ("%dGo%s<Esc>"):format(line, word)
    -- Neovim's main loop closes the undo step between two commands typed; a script's
    -- feedkeys does not, so this does what the loop would.
    vim.cmd("let &g:undolevels = &g:undolevels")
    vim.api.nvim_feedkeys(vim.keycode(keys), "x", false)
    case.live[word] = true
    table.insert(case.blocks, { words = { word }, user = true })
    table.insert(case.log, "type " .. word .. "@" .. line)
  elseif roll <= 8 then
    local top = table.remove(case.blocks)
    if not top then
      return
    end
    local before = text(case)
    vim.api.nvim_feedkeys("u", "x", false)
    -- The main loop fires BufModifiedSet after a command; a script's feedkeys does not.
    vim.api.nvim_exec_autocmds("BufModifiedSet", { buffer = case.buf })
    local after = text(case)
    for _, word in ipairs(top.words) do
      if count(before, word) ~= count(after, word) + 1 then
        fail(case, ("one u did not take back exactly %s (the last step)"):format(word))
      end
      case.live[word], case.applied[word] = nil, nil
      if top.user then
        case.gone[word] = true
      else
        case.refused[word] = true
      end
    end
    for word in before:gmatch("%f[%w]([uAe]%d+)%f[%W]") do
      if count(before, word) ~= count(after, word) and not vim.tbl_contains(top.words, word) then
        fail(case, ("one u also took back %s"):format(word))
      end
    end
    table.insert(case.log, "undo")
  else
    if vim.env.PROPERTY_DEBUG then
      io.stderr:write("SAVE case " .. case.index .. ": " .. table.concat(case.log, "; ") .. "\n")
    end
    vim.cmd("silent write")
    saved_now(case)
    table.insert(case.log, "save")
  end
  check(case, case.log[#case.log])
end

---The agent's change: one or two lines (far apart: two hunks) get a word of its own.
local function agent_call(case)
  -- A different limit each time: the same call three times in a row would ask (doom loop).
  serial = serial + 1
  local read = T.run_tool("read", { filePath = case.path, limit = 100000 + serial })
  T.eq(read.isError, false, "read")
  local lines = vim.api.nvim_buf_get_lines(case.buf, 0, -1, false)
  local picks = { random(#lines) }
  if #lines >= 16 and chance(0.5) then
    local other = picks[1] > #lines / 2 and random(math.max(1, picks[1] - 8))
      or math.min(#lines, picks[1] + 8 + random(math.max(1, #lines - picks[1] - 7)))
    picks[2] = other
    table.sort(picks)
  end
  local edits, words = {}, {}
  for _, n in ipairs(picks) do
    local word = token("A")
    words[#words + 1] = word
    edits[#edits + 1] = { oldString = lines[n], newString = lines[n] .. " " .. word }
  end
  local unique = true
  local whole = table.concat(lines, "\n")
  for _, e in ipairs(edits) do
    local _, found = whole:gsub(vim.pesc(e.oldString), "")
    if found ~= 1 then
      unique = false -- the tool matches substrings: c1l1 is in c1l10 too
    end
  end
  if not unique or (#edits == 2 and edits[1].oldString == edits[2].oldString) then
    return -- the agent's oldString would be ambiguous: not this property's subject
  end
  local call = {}
  local tool, args = "edit", { filePath = case.path }
  if #edits == 1 then
    args.oldString, args.newString = edits[1].oldString, edits[1].newString
  else
    tool, args.edits = "multiedit", edits
  end
  table.insert(case.log, ("%s %s"):format(tool, table.concat(words, ",")))
  api.execute(tool, args, {}, function(err, result)
    call.err, call.result, call.done = err, result, true
  end)
  T.wait(function()
    return call.done or #api.pending() > 0
  end, "the ask or the result", 20000)
  local edited_word, ask
  if not call.done then
    ask = api.pending()[1]
    for _ = 1, random(4) - 1 do
      user_step(case) -- the user goes on working while the review is open
    end
    local reply = { reply = "once" }
    local roll = random(10)
    if roll <= 2 then
      reply = { reply = "reject" }
    elseif roll <= 4 and #ask.hunks > 1 then
      reply.hunks = { ask.hunks[random(#ask.hunks)].id }
    elseif roll <= 5 then
      local shown = review.queue[1]
      local _, proposed = review.texts(shown, ask.files[1])
      if not (shown.stale and shown.stale[ask.files[1]]) then
        edited_word = token("e")
        proposed[#proposed + 1] = edited_word
        reply.edited = { [ask.files[1]] = table.concat(proposed, "\n") .. "\n" }
      end
    end
    if ask.unsaved and ask.unsaved[1] and ask.unsaved[1].overlaps then
      reply.unsaved = chance(0.5) and "save" or "editor"
    end
    table.insert(
      case.log,
      "answer " .. vim.inspect(reply, { newline = "", indent = "" }):sub(1, 80)
    )
    if vim.env.PROPERTY_DEBUG then
      io.stderr:write("ASK " .. vim.inspect(ask) .. "\nREPLY " .. vim.inspect(reply) .. "\n")
      io.stderr:write("BUFFER " .. text(case) .. "\nDISK " .. tostring(T.read(case.path)) .. "\n")
    end
    T.ok(api.answer(ask.id, reply))
  end
  T.wait(function()
    return call.done
  end, "the call to end", 20000)
  if call.err then
    fail(case, "protocol error " .. vim.inspect(call.err))
  end
  local result = call.result
  if vim.env.PROPERTY_DEBUG then
    io.stderr:write("RESULT " .. vim.inspect(result) .. "\n")
  end
  local block = { words = {} }
  local offered = vim.deepcopy(words)
  if edited_word then
    offered[#offered + 1] = edited_word
  end
  for _, word in ipairs(offered) do
    local expected = not result.isError
    if expected and ask then
      -- Accepted unless the result names its hunk as not applied.
      for id in result.output:gmatch("Not applied: (%S+) %(") do
        for _, hunk in ipairs(ask.hunks) do
          if hunk.id == id and count(table.concat(hunk.lines, "\n"), word) > 0 then
            expected = false
          end
        end
      end
    end
    if expected then
      case.applied[word] = true
      block.words[#block.words + 1] = word
    else
      case.refused[word] = true
    end
  end
  if #block.words > 0 then
    table.insert(case.blocks, block)
  end
  if not vim.bo[case.buf].modified then
    saved_now(case)
  end
  table.insert(case.log, result.isError and ("error: " .. result.output:sub(1, 60)) or "applied")
  check(case, "after " .. tool)
end

T.test("random interleavings of agent changes with typing, undo and saves", function()
  rng = SEED
  for index = 1, CASES do
    local case = new_case(index)
    for _ = 1, random(3) do
      for _ = 1, random(3) - 1 do
        user_step(case)
      end
      agent_call(case)
    end
    if vim.env.PROPERTY_DEBUG then
      io.stderr:write("FINAL case " .. case.index .. ": " .. table.concat(case.log, "; ") .. "\n")
      io.stderr:write(vim.inspect({
        vim.b[case.buf].toolhost_agent_disk,
        vim.b[case.buf].toolhost_disk,
        vim.uv.fs_stat(case.path).mtime,
        vim.uv.fs_stat(case.path).size,
      }) .. "\n")
    end
    vim.cmd("silent write")
    saved_now(case)
    check(case, "after the last :w")
    if T.read(case.path) ~= text(case) then
      fail(case, "after :w the disk is not the buffer")
    end
    vim.cmd("silent bwipeout!")
  end
end)

T.run()
