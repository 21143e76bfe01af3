-- Reviews with the plugin's defaults (edits and commands ask): the review window,
-- per-hunk answers, unsaved work, insert mode, the public API, cancel and rules.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local LINES = {}
for n = 1, 20 do
  LINES[#LINES + 1] = "line " .. n
end
local TWENTY = table.concat(LINES, "\n") .. "\n"

local root = T.project("review", {
  ["two.txt"] = TWENTY,
  ["dirty.txt"] = TWENTY,
  ["overlap.txt"] = "one\ntwo\nthree\n",
  ["typing.txt"] = "typed here\n",
  ["a.txt"] = "alpha\n",
})
vim.cmd.cd(root)
require("toolhost").setup({ cmd = T.toolhost }) -- the defaults: review on
local sidecar = T.client(root)
local api = require("toolhost")
local review = require("toolhost.review")

local function read_first(path)
  local result = T.run_tool("read", { filePath = path })
  T.eq(result.isError, false, "read " .. path)
end

local start, wait_pending, finished = T.start, T.wait_pending, T.finished

local function window_text()
  local win = review.window()
  T.ok(win, "the review window is open")
  return table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
end

T.test("with the defaults an edit and a bash call wait for an answer", function()
  local sent = sidecar.config.init_options
  T.eq(sent.permissionDefaults, { edit = "ask", bash = "ask" }, "review by default")
  read_first(root .. "/a.txt")
  local edit =
    start("edit", { filePath = root .. "/a.txt", oldString = "alpha", newString = "ALPHA" })
  local bash = start("bash", { command = "echo reviewed", description = "echo" })
  local pending = wait_pending(2)
  vim.wait(300)
  T.ok(not edit.done and not bash.done, "both wait")
  T.eq(T.read(root .. "/a.txt"), "alpha\n", "nothing written yet")
  local by_tool = {}
  for _, item in ipairs(pending) do
    by_tool[item.tool] = item
  end
  local e, b = T.ok(by_tool.edit, "the edit is listed"), T.ok(by_tool.bash, "bash is listed")
  T.eq(e.files, { "a.txt" }, "the edit's files")
  T.eq(e.hunks[1].id, "a.txt#1", "a hunk id")
  T.eq(e.hunks[1].file, "a.txt", "a hunk's file")
  T.contains(table.concat(e.hunks[1].lines, "\n"), "+ALPHA")
  T.eq(b.hunks, {}, "bash has no hunks")
  T.eq(b.always[1].label, "commands starting `echo`", "what always would cover")
  T.ok(api.answer(e.id, { reply = "once" }))
  T.eq(finished(edit).isError, false, "the edit ran")
  T.eq(#api.pending(), 1, "gone once answered")
  T.ok(api.answer(b.id, { reply = "once" }))
  T.eq(vim.trim(finished(bash).output), "reviewed", "bash ran")
  T.eq(#api.pending(), 0, "nothing pending")
  T.eq(T.read(root .. "/a.txt"), "ALPHA\n", "the edit landed")
end)

T.test("the review window opens without taking the focus and shows the diff", function()
  local before = vim.api.nvim_get_current_win()
  local call = start("write", { filePath = root .. "/new.txt", content = "fresh\n" })
  wait_pending(1)
  T.wait(function()
    return review.window()
  end, "the review window")
  T.eq(vim.api.nvim_get_current_win(), before, "the focus stays where it was")
  local text = window_text()
  T.contains(text, "toolhost review 1/1")
  T.contains(text, "+fresh")
  T.contains(text, "@@ -0,0 +1 @@")
  local buf = vim.api.nvim_win_get_buf(review.window())
  local maps = {}
  for _, map in ipairs(vim.api.nvim_buf_get_keymap(buf, "n")) do
    maps[map.lhs] = map.desc
  end
  for _, lhs in ipairs({ "ga", "gr", "a", "r", "A", "R", "e", "]h", "[h", "q" }) do
    T.ok(maps[lhs], "buffer-local key " .. lhs)
  end
  -- :Toolhost review moves into it; ga accepts.
  vim.cmd("Toolhost review")
  T.eq(vim.api.nvim_get_current_win(), review.window(), "focused on request")
  vim.api.nvim_feedkeys("ga", "x", false)
  T.eq(finished(call).isError, false, "accepted")
  T.eq(T.read(root .. "/new.txt"), "fresh\n", "written")
  T.ok(not review.window(), "the window closes with nothing left to review")
end)

T.test("per-hunk accept of a two-hunk edit lands one hunk and the result says which", function()
  local path = root .. "/two.txt"
  read_first(path)
  local new = TWENTY:gsub("line 2\n", "LINE 2\n"):gsub("line 18\n", "LINE 18\n")
  local call = start("write", { filePath = path, content = new })
  local pending = wait_pending(1)
  T.eq(#pending[1].hunks, 2, "two hunks")
  api.review()
  -- The cursor goes to the second hunk; r rejects it; ga accepts the rest.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.api.nvim_feedkeys("]h]hr", "x", false)
  T.eq(review.queue[1].decisions, { ["two.txt#2"] = false }, "the second hunk is rejected")
  vim.api.nvim_feedkeys("ga", "x", false)
  local result = finished(call)
  T.eq(result.isError, false, "write isError: " .. tostring(result.output))
  T.eq(T.read(path), TWENTY:gsub("line 2\n", "LINE 2\n"), "only the first hunk landed")
  T.contains(result.output, "Applied: two.txt#1")
  T.contains(result.output, "Not applied: two.txt#2")
  T.contains(result.output, "18: line 18")
end)

T.test(
  "an agent edit keeps the user's unsaved line out of the disk; one undo takes it back",
  function()
    local path = root .. "/dirty.txt"
    vim.cmd.edit(path)
    local buf = vim.api.nvim_get_current_buf()
    read_first(path)
    vim.api.nvim_buf_set_lines(buf, 17, 18, false, { "line 18 typed, not saved" })
    vim.api.nvim_win_set_cursor(0, { 18, 4 })
    local call = start("edit", { filePath = path, oldString = "line 2\n", newString = "TWO\n" })
    local pending = wait_pending(1)
    T.eq(pending[1].unsaved, { { file = "dirty.txt", overlaps = false, lines = {} } }, "unsaved")
    api.answer(pending[1].id, { reply = "once" })
    T.eq(finished(call).isError, false, "edit")
    local both = TWENTY:gsub("line 2\n", "TWO\n"):gsub("line 18\n", "line 18 typed, not saved\n")
    T.eq(T.buf_text(buf), both, "the buffer has both")
    T.eq(T.read(path), TWENTY:gsub("line 2\n", "TWO\n"), "the disk has only the agent's change")
    T.eq(vim.bo[buf].modified, true, "still modified")
    T.eq(vim.api.nvim_win_get_cursor(0), { 18, 4 }, "the cursor stays")
    vim.cmd("silent undo")
    T.eq(T.buf_text(buf), TWENTY:gsub("line 18\n", "line 18 typed, not saved\n"), "one undo")
    vim.cmd("silent! bwipeout!")
  end
)

T.test("an edit overlapping unsaved lines offers editor only, save yours too, or reject", function()
  local path = root .. "/overlap.txt"
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  read_first(path)
  local function typed(line)
    vim.api.nvim_buf_set_lines(buf, 1, 2, false, { line })
  end
  local function ask(new)
    local current = vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1]
    local call = start("edit", { filePath = path, oldString = current, newString = new })
    return call, wait_pending(1)[1]
  end
  -- 1. the editor only: the disk keeps its text.
  typed("two typed")
  local call, pending = ask("2a")
  T.eq(pending.unsaved, { { file = "overlap.txt", overlaps = true, lines = { { 2, 2 } } } })
  T.contains(pending.title, "overlaps your unsaved changes")
  api.review({ focus = false })
  local text = window_text():gsub("\n#   ", " ")
  T.contains(text, "overlaps your unsaved lines")
  T.contains(text, "gu editor only, gs save yours too")
  T.contains(text, "gu/gs your unsaved lines: editor only / save too", "the hint line names gu/gs")
  api.answer(pending.id, { reply = "once", unsaved = "editor" })
  T.contains(finished(call).output, "applied in the editor only")
  T.eq(T.read(path), "one\ntwo\nthree\n", "disk untouched")
  T.eq(T.buf_text(buf), "one\n2a\nthree\n", "the buffer has it")
  -- 2. save yours too.
  call, pending = ask("2b")
  api.answer(pending.id, { reply = "once", unsaved = "save" })
  finished(call)
  T.eq(T.read(path), "one\n2b\nthree\n", "saved with the user's changes")
  T.eq(vim.bo[buf].modified, false, "saved")
  -- 3. reject.
  typed("two typed again")
  call, pending = ask("2c")
  api.answer(pending.id, { reply = "reject", message = "leave my line alone" })
  T.eq(finished(call).metadata.error, "permission_rejected", "rejected")
  T.eq(T.buf_text(buf), "one\ntwo typed again\nthree\n", "the buffer as typed")
  vim.cmd("silent! bwipeout!")
end)

T.test("a reply typed while in insert mode is not eaten", function()
  -- Typeahead is only handled by a Neovim sitting in its main loop, so this one runs in
  -- a second Neovim (--embed), driven over RPC as a UI would: keys go in with nvim_input.
  local chan = vim.fn.jobstart(
    { vim.v.progpath, "--embed", "--headless", "-u", "NONE", "-i", "NONE", "-n" },
    { rpc = true, cwd = root }
  )
  local function lua(code, ...)
    return vim.rpcrequest(chan, "nvim_exec_lua", code, { ... })
  end
  local ok, err = pcall(function()
    lua(
      [[
      local repo, cmd, path = ...
      vim.opt.runtimepath:prepend(repo .. "/editors/neovim")
      vim.cmd("runtime plugin/toolhost.lua")
      vim.o.swapfile = false
      require("toolhost").setup({ cmd = cmd })
      vim.cmd.edit(path)
    ]],
      T.repo,
      T.toolhost,
      root .. "/typing.txt"
    )
    T.wait(function()
      return lua(
        "local c = require('toolhost.client').get(...); return c ~= nil and c.initialized",
        root
      )
    end, "the embedded Neovim's sidecar", 15000)
    vim.rpcrequest(chan, "nvim_input", "A")
    T.wait(function()
      return vim.rpcrequest(chan, "nvim_get_mode").mode == "i"
    end, "insert mode")
    local win = lua("return vim.api.nvim_get_current_win()")
    lua([[
      _G.call = {}
      require("toolhost").execute("bash", { command = "echo typed", description = "echo" }, {},
        function(e, r) _G.call = { done = true, err = e, result = r } end)
    ]])
    T.wait(function()
      return lua("return #require('toolhost').pending()") == 1
    end, "the ask to arrive")
    -- Keys a modal prompt would have taken ("y", "a", <CR>) stay the user's.
    vim.rpcrequest(chan, "nvim_input", " ya ga<CR>")
    vim.wait(300)
    T.eq(vim.rpcrequest(chan, "nvim_get_mode").mode, "i", "still in insert mode")
    T.eq(
      lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
      { "typed here ya ga", "" },
      "the typing went into the buffer"
    )
    T.eq(lua("return vim.api.nvim_get_current_win()"), win, "the focus never moved")
    T.eq(lua("return #require('toolhost').pending()"), 1, "the ask is still pending")
    T.eq(lua("return _G.call.done == true"), false, "the call still waits")
    vim.rpcrequest(chan, "nvim_input", "<Esc>")
    lua(
      "local p = require('toolhost').pending()[1]; require('toolhost').answer(p.id, { reply = 'reject' })"
    )
    T.wait(function()
      return lua("return _G.call.done == true")
    end, "the answer to reach the call")
    T.eq(lua("return _G.call.result.metadata.error"), "permission_rejected", "answered afterwards")
  end)
  pcall(lua, "for _, c in ipairs(vim.lsp.get_clients()) do c:stop(true) end")
  vim.wait(300)
  vim.fn.jobstop(chan)
  T.ok(ok, tostring(err))
end)

T.test("cancel from the UI stops a running sleep with 0 survivors", function()
  local marker = "97.125"
  local call = start("bash", { command = "echo started; sleep " .. marker, description = "wait" })
  api.answer(wait_pending(1)[1].id, { reply = "once" })
  local function alive()
    local out = vim.system({ "pgrep", "-f", "sleep " .. marker }):wait()
    return out.code == 0
  end
  T.wait(alive, "the sleep to start", 10000)
  -- The progress float shows the call and its latest output line.
  local ok = vim.wait(10000, function()
    local lines = require("toolhost.progress").lines()
    return lines[1] and lines[1]:find("bash: wait", 1, true) and lines[1]:find("started", 1, true)
  end, 20)
  T.ok(
    ok,
    "the progress float shows the latest line: "
      .. vim.inspect(require("toolhost.progress").lines())
  )
  vim.cmd("Toolhost cancel")
  T.wait(function()
    return call.done
  end, "the cancelled call")
  T.eq(call.err and call.err.code, -32800, "cancelled")
  T.wait(function()
    return not alive()
  end, "no sleep left", 10000)
end)

T.test(":Toolhost rules lists an always and deletes it", function()
  local call = start("bash", { command = "printf ok", description = "printf" })
  local pending = wait_pending(1)
  api.answer(pending[1].id, { reply = "always", scope = "session" })
  finished(call)
  vim.cmd("Toolhost rules")
  T.wait(function()
    return vim.fn.bufnr("toolhost://rules") > 0
  end, "the rules buffer")
  local buf = vim.fn.bufnr("toolhost://rules")
  T.wait(function()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"):find("printf", 1, true)
  end, "the rule listed")
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  T.contains(lines[2], "commands starting `printf`")
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.api.nvim_feedkeys("dd", "x", false)
  T.wait(function()
    local b = vim.fn.bufnr("toolhost://rules")
    return b > 0
      and table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"):find("no rules", 1, true)
  end, "the rule revoked")
  call = start("bash", { command = "printf again", description = "printf" })
  api.answer(wait_pending(1)[1].id, { reply = "once" })
  finished(call)
end)

T.run()
