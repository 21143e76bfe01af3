-- The review as a person meets it: what each key says is what it does, the window
-- stays out of the way of what you type, and rules you keep do not come back as
-- questions or leave files behind.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local LINES = {}
for n = 1, 60 do
  LINES[#LINES + 1] = "line " .. n
end
local SIXTY = table.concat(LINES, "\n") .. "\n"

local root = T.project("keys", {
  ["long.txt"] = SIXTY,
  ["every.txt"] = SIXTY,
  ["edit.txt"] = "left\nalone\n",
})
vim.cmd.cd(root)
require("toolhost").setup({ cmd = T.toolhost })
T.client(root)
local api = require("toolhost")
local review = require("toolhost.review")

local start, wait_pending, finished = T.start, T.wait_pending, T.finished

local function window_lines()
  local win = T.ok(review.window(), "the review window is open")
  return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
end

local function joined()
  return (table.concat(window_lines(), "\n"):gsub("\n#   ", " "))
end

local function reject_everything()
  for _, ask in ipairs(api.pending()) do
    api.answer(ask.id, { reply = "reject" })
  end
end

T.test(
  "gr says it rejects the queued asks of the same agent too; Esc at the reason backs out",
  function()
    local first = start("bash", { command = "echo one", description = "one" })
    local second = start("bash", { command = "echo two", description = "two" })
    wait_pending(2)
    api.review({ focus = false })
    T.contains(joined(), "gr reject… (and the 1 other queued from this agent)")
    local prompts = {}
    vim.ui.input = function(opts, on_confirm)
      prompts[#prompts + 1] = opts.prompt
      vim.schedule(function()
        on_confirm(nil) -- Esc
      end)
    end
    vim.cmd("Toolhost review")
    T.wait(function()
      return review.window() and vim.api.nvim_get_current_win() == review.window()
    end, "the focus in the review window")
    vim.api.nvim_feedkeys("gr", "x", false)
    T.wait(function()
      return prompts[1]
    end, "the reason asked")
    vim.wait(200) -- Esc answered (scheduled)
    T.contains(prompts[1], "rejects this and the 1 other queued from this agent")
    T.contains(prompts[1], "Esc goes back")
    T.eq(#api.pending(), 2, "Esc answered nothing")
    T.ok(not first.done and not second.done, "both calls still wait")
    vim.ui.input = function(_, on_confirm)
      vim.schedule(function()
        on_confirm("") -- Enter with no reason
      end)
    end
    local told, notify = {}, vim.notify
    vim.notify = function(message, ...)
      told[#told + 1] = message
      return notify(message, ...)
    end
    vim.cmd("Toolhost review")
    T.wait(function()
      return review.window() and vim.api.nvim_get_current_win() == review.window()
    end, "the focus in the review window again")
    vim.api.nvim_feedkeys("gr", "x", false)
    T.eq(finished(first).metadata.error, "permission_rejected", "the one shown")
    T.eq(finished(second).metadata.error, "permission_rejected", "and the one queued, as it said")
    vim.notify = notify
    for _, message in ipairs(told) do
      T.not_contains(message, "more to review", "nothing is left to review, so none is announced")
    end
  end
)

T.test("<C-w>w never enters the review window; keys typed meanwhile stay in the buffer", function()
  vim.cmd.edit(root .. "/edit.txt")
  local buf, win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  local call = start("bash", { command = "echo stray", description = "stray" })
  wait_pending(1)
  T.wait(function()
    return review.window()
  end, "the review window")
  vim.api.nvim_feedkeys(vim.keycode("<C-w>w<C-w>w"), "x", false)
  T.eq(vim.api.nvim_get_current_win(), win, "<C-w>w did not go into the review")
  vim.api.nvim_feedkeys(vim.keycode("Ahello<Esc>"), "x", false)
  T.eq(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1], "lefthello", "typed into the buffer")
  T.eq(#api.pending(), 1, "the review was not touched")
  -- Any other way in (a plugin's :wincmd, a mouse click) is sent back at once.
  vim.api.nvim_set_current_win(review.window())
  T.wait(function()
    return vim.api.nvim_get_current_win() == win
  end, "the focus sent back")
  vim.wait(100) -- what else that scheduled runs, as before a person's next key
  -- Only :Toolhost review goes in, and an answer brings the focus back.
  vim.cmd("Toolhost review")
  T.eq(vim.api.nvim_get_current_win(), review.window(), ":Toolhost review moved in")
  vim.api.nvim_feedkeys("ga", "x", false)
  T.eq(vim.trim(finished(call).output), "stray", "ga allowed it")
  T.eq(vim.api.nvim_get_current_win(), win, "back where you were")
  vim.cmd("silent! bwipeout!")
end)

T.test("the float never covers the cursor line, wherever the cursor is", function()
  vim.cmd.edit(root .. "/long.txt")
  T.run_tool("read", { filePath = root .. "/long.txt" })
  local new = SIXTY:gsub("line (%d+)\n", "LINE %1 changed by the agent\n", 30)
  local call = start("write", { filePath = root .. "/long.txt", content = new })
  wait_pending(1)
  T.wait(function()
    return review.window()
  end, "the review window")
  local seen = {}
  for _, target in ipairs({ 1, 5, 10, 12, 15, 20, 22 }) do
    vim.fn.winrestview({ topline = 1 })
    vim.api.nvim_win_set_cursor(0, { target, 0 }) -- screen row `target`
    vim.api.nvim_exec_autocmds("CursorMoved", {})
    local row = vim.fn.screenpos(0, vim.fn.line("."), 1).row
    local float = review.window()
    if float then
      local cfg = vim.api.nvim_win_get_config(float)
      local top, bottom = cfg.row + 1, cfg.row + cfg.height + 2 -- screen rows, border included
      T.ok(
        row < top or row > bottom,
        ("cursor row %d under the float (rows %d-%d)"):format(row, top, bottom)
      )
      T.eq(cfg.focusable, false, "the float is not focusable")
      seen[#seen + 1] = { cursor = row, top = top, bottom = bottom }
    end
  end
  T.ok(#seen >= 5, "the float was shown: " .. vim.inspect(seen))
  local above = vim.tbl_filter(function(s)
    return s.bottom < s.cursor
  end, seen)
  local below = vim.tbl_filter(function(s)
    return s.top > s.cursor
  end, seen)
  T.ok(#above > 0 and #below > 0, "it moved to the other side: " .. vim.inspect(seen))
  -- Header lines are wrapped to the window, never cut.
  local width = vim.api.nvim_win_get_width(review.window())
  for _, line in ipairs(window_lines()) do
    if line:sub(1, 1) == "#" then
      T.ok(vim.fn.strdisplaywidth(line) <= width, "a header line fits: " .. line)
    end
  end
  api.answer(api.pending()[1].id, { reply = "reject" })
  finished(call)
  vim.cmd("silent! bwipeout!")
end)

T.test("the hint line names every key and says ga sends; a new file is marked as one", function()
  local one = start("write", { filePath = root .. "/brand-new.txt", content = "fresh\n" })
  local two = start("bash", { command = "echo queued", description = "queued" })
  wait_pending(2)
  api.review({ focus = false })
  local text = joined()
  for _, words in ipairs({
    "ga accept",
    "gA always…",
    "a/r mark hunk",
    "A/R mark file",
    "e edit the proposal",
    "]h/[h next/previous hunk",
    "]r/[r next/previous review",
    "q hide",
    "Marks only choose: ga sends the answer",
  }) do
    T.contains(text, words)
  end
  T.contains(text, "Create brand-new.txt (new file)", "the title")
  T.contains(text, "diff --git a/brand-new.txt b/brand-new.txt  (new file)", "the file's header")
  vim.cmd("Toolhost review")
  vim.api.nvim_feedkeys("]r", "x", false)
  local command = joined()
  T.contains(command, "bash would run:", "a command says what would happen")
  T.contains(command, "    echo queued")
  vim.api.nvim_feedkeys("q", "x", false)
  reject_everything()
  finished(one)
  finished(two)
end)

T.test("e opens your file on the left and the proposal on the right, as the help says", function()
  T.run_tool("read", { filePath = root .. "/edit.txt" })
  local call =
    start("edit", { filePath = root .. "/edit.txt", oldString = "alone", newString = "ALONE" })
  wait_pending(1)
  vim.cmd("Toolhost review")
  vim.api.nvim_feedkeys("]he", "x", false)
  local wins = vim.api.nvim_tabpage_list_wins(0)
  table.sort(wins, function(a, b)
    return vim.api.nvim_win_get_position(a)[2] < vim.api.nvim_win_get_position(b)[2]
  end)
  local names = vim.tbl_map(function(w)
    return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w))
  end, wins)
  T.contains(names[1], "toolhost://current/edit.txt", "left")
  T.contains(names[2], "toolhost://proposed/edit.txt", "right")
  T.eq(vim.api.nvim_get_current_win(), wins[2], "the cursor is in the proposal")
  T.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { "left", "ALONE" }, "the proposal")
  vim.cmd("tabclose")
  api.answer(api.pending()[1].id, { reply = "reject" })
  finished(call)
end)

T.test("e on the review's header opens the first file's edit tab", function()
  T.run_tool("read", { filePath = root .. "/edit.txt" })
  local call =
    start("edit", { filePath = root .. "/edit.txt", oldString = "alone", newString = "ALONE" })
  wait_pending(1)
  vim.cmd("Toolhost review")
  vim.api.nvim_win_set_cursor(0, { 1, 0 }) -- on the header, above any file
  T.eq(require("toolhost.review.view").here().file, nil, "no file under the cursor")
  vim.api.nvim_feedkeys("e", "x", false)
  T.contains(vim.api.nvim_buf_get_name(0), "toolhost://proposed/edit.txt", "the edit tab opened")
  T.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { "left", "ALONE" }, "the proposal")
  vim.cmd("tabclose")
  api.answer(api.pending()[1].id, { reply = "reject" })
  finished(call)
end)

T.test("answering with every hunk named is accepting it all, and the model is told so", function()
  local path = root .. "/every.txt"
  T.run_tool("read", { filePath = path })
  local new = SIXTY:gsub("line 2\n", "LINE 2\n"):gsub("line 50\n", "LINE 50\n")
  local call = start("write", { filePath = path, content = new })
  local ask = wait_pending(1)[1]
  T.eq(#ask.hunks, 2, "two hunks")
  T.ok(api.answer(ask.id, { reply = "once", hunks = { ask.hunks[1].id, ask.hunks[2].id } }))
  local result = finished(call)
  T.eq(T.read(path), new, "everything landed")
  T.not_contains(result.output, "only part", "the model is not told part")
  T.not_contains(result.output, "Not applied", "nothing is said to be left out")
end)

T.test("the running-calls float never covers the line being typed on", function()
  vim.cmd.edit(root .. "/long.txt")
  local call = start("bash", { command = "sleep 3", description = "Sleep a while" })
  api.answer(wait_pending(1)[1].id, { reply = "once" })
  local function progress_rows()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      local line = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, 1, false)[1]
      if vim.api.nvim_win_get_config(win).relative ~= "" and (line or ""):find("⟳", 1, true) then
        local cfg = vim.api.nvim_win_get_config(win)
        return cfg.row - cfg.height - 1, cfg.row -- screen rows of its top and bottom border
      end
    end
  end
  T.wait(progress_rows, "the running-calls float")
  local last = vim.o.lines - vim.o.cmdheight - 1 -- above the status line
  local seen = {}
  for _, row in ipairs({ last, last - 1, last - 2, last - 3, 3 }) do
    vim.fn.winrestview({ topline = 1 })
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.api.nvim_exec_autocmds("CursorMovedI", {})
    vim.wait(50) -- the float moves on the next tick
    local screen = vim.fn.screenpos(0, vim.fn.line("."), 1).row
    local top, bottom = progress_rows()
    T.ok(top, "the float is still shown with the cursor on row " .. screen)
    T.ok(
      screen < top or screen > bottom,
      ("cursor row %d under the running-calls float (rows %d-%d)"):format(screen, top, bottom)
    )
    seen[#seen + 1] = { screen, top, bottom }
  end
  T.eq(seen[#seen][3], last, "back at the bottom once the cursor is away: " .. vim.inspect(seen))
  -- A line typed past the window's width wraps: none of its rows is covered.
  vim.api.nvim_buf_set_lines(0, last - 2, last - 1, false, { string.rep("typed ", 20) })
  vim.fn.winrestview({ topline = 1 })
  vim.api.nvim_win_set_cursor(0, { last - 1, 119 })
  vim.api.nvim_exec_autocmds("CursorMovedI", {})
  vim.wait(50)
  local first, final = vim.fn.screenpos(0, last - 1, 1).row, vim.fn.screenpos(0, last - 1, 120).row
  T.ok(final > first, "the line wraps")
  local top, bottom = progress_rows()
  T.ok(
    bottom < first or top > final,
    ("the wrapped line's rows %d-%d under the float (rows %d-%d)"):format(first, final, top, bottom)
  )
  finished(call)
  vim.cmd("silent! bwipeout!")
end)

T.test("a running command's line does not repeat its description", function()
  local call = start("bash", { command = "echo begun; sleep 1.5", description = "Sleep a while" })
  api.answer(wait_pending(1)[1].id, { reply = "once" })
  T.wait(function()
    local line = require("toolhost.progress").lines()[1]
    return line and line:find("Sleep a while", 1, true)
  end, "the progress line")
  vim.wait(300)
  local line = require("toolhost.progress").lines()[1]
  T.not_contains(line, "Sleep a while │ Sleep a while", "no repeat")
  finished(call)
end)

T.test("leaving the review window (q, or e to the edit tab) leaves no ruler of its own", function()
  -- What a person sees needs a screen: a Neovim with a UI, run in a terminal here, whose
  -- screen is the terminal buffer's lines.
  local child = vim.fs.joinpath(T.tmp, "ruler.lua")
  local ready = vim.fs.joinpath(T.tmp, "ruler.ready")
  T.write(
    child,
    ([[
vim.opt.runtimepath:prepend(%q .. "/editors/neovim")
vim.cmd("runtime plugin/toolhost.lua")
vim.o.swapfile, vim.o.showcmd = false, false -- the rest as Neovim's defaults: ruler, laststatus=2
vim.o.shortmess = vim.o.shortmess .. "F"
vim.notify = function() end
require("toolhost").setup({ cmd = %s })
vim.cmd.edit(%q)
local timer = vim.uv.new_timer()
local asked = false
timer:start(100, 100, vim.schedule_wrap(function()
  local client = require("toolhost.client").get(%q)
  if not asked and client and client.initialized then
    asked = true
    require("toolhost").execute("bash", { command = "echo hi", description = "hi" }, {}, function()
      -- Then a new file, reviewed with hunks (its review has the edit key).
      local new = { filePath = "ruler-new.txt", content = "one\ntwo\nthree\n" }
      require("toolhost").execute("write", new, {}, function() end)
    end)
  end
  if #require("toolhost").pending() > 0 then
    timer:stop()
    vim.fn.writefile({ "ready" }, %q)
  end
end))
]]):format(T.repo, vim.inspect(T.toolhost), root .. "/long.txt", root, ready)
  )
  vim.cmd("tabnew")
  local term = vim.api.nvim_get_current_buf()
  local job = vim.fn.jobstart(
    { vim.v.progpath, "-u", "NONE", "-i", "NONE", "-n", "--cmd", "luafile " .. child },
    { term = true, cwd = root, env = { NVIM = "", TERM = "xterm-256color" } }
  )
  local function screen()
    return vim.api.nvim_buf_get_lines(term, 0, -1, false)
  end
  -- A float has no status line: its ruler is drawn in the command line (the last row).
  local function cmdline()
    local lines = screen()
    return lines[#lines] or ""
  end
  local function shows(text)
    return table.concat(screen(), "\n"):find(text, 1, true)
  end
  local ok, err = pcall(function()
    T.wait(function()
      return vim.uv.fs_stat(ready)
    end, "the child Neovim's pending review", 20000)
    vim.fn.chansend(job, "40G")
    T.wait(function()
      return shows("40,1")
    end, "your window's ruler at 40,1")
    vim.fn.chansend(job, ":Toolhost review\r")
    vim.wait(300)
    vim.fn.chansend(job, "2j")
    T.wait(function()
      return cmdline():find("%d+,%d+")
    end, "the review window's ruler in the command line")
    vim.fn.chansend(job, "q")
    T.wait(function()
      return not cmdline():find("%d+,%d+") and shows("40,1")
    end, "the command line without the review window's ruler: " .. cmdline())
    -- Out of the review window into the edit tab: its ruler does not stay behind either.
    vim.fn.chansend(job, ":Toolhost review\r")
    vim.wait(300)
    vim.fn.chansend(job, "ga")
    T.wait(function()
      return shows("Create ruler-new.txt")
    end, "the review of the new file")
    vim.fn.chansend(job, ":Toolhost review\r")
    vim.wait(300)
    vim.fn.chansend(job, "G")
    T.wait(function()
      return cmdline():find("%d+,%d+")
    end, "the review window's ruler in the command line")
    vim.fn.chansend(job, "e")
    T.wait(function()
      return (screen()[1] or ""):find("ruler-new.txt", 1, true) -- the tab line
    end, "the edit tab")
    T.wait(function()
      return not cmdline():find("%d+,%d+")
    end, "the command line without the review window's ruler: " .. cmdline(), 3000)
  end)
  vim.fn.chansend(job, "\27:qa!\r")
  vim.fn.jobwait({ job }, 5000)
  vim.cmd("silent! bwipeout! " .. term)
  if not ok then
    error(err, 0)
  end
end)

T.test(
  "always for this project is not asked about again, names its file, and leaves nothing when revoked",
  function()
    T.eq(
      require("toolhost.trust").has_project_files(root),
      false,
      "no project config to begin with"
    )
    local seen = T.answer_prompts(function(items, opts)
      if opts.kind == "toolhost.scope" then
        return "for this project (saved in opencode.json)"
      end
      return tostring(items[1].label)
    end)
    local call = start("bash", { command = "printf kept", description = "printf" })
    wait_pending(1)
    vim.cmd("Toolhost review")
    vim.api.nvim_feedkeys("gA", "x", false)
    T.eq(finished(call).isError, false, "allowed")
    local scopes = seen[2].labels
    T.eq(scopes[2], "for this project (saved in opencode.json)", "the project's file")
    local user_file = vim.fs.joinpath(vim.env.XDG_CONFIG_HOME, "opencode", "opencode.json")
    T.contains(
      scopes[3],
      vim.fn.fnamemodify(user_file, ":~:."),
      "the real user file ($XDG_CONFIG_HOME)"
    )
    T.ok(T.read(root .. "/opencode.json"), "saved in the project")
    vim.wait(1500) -- the sidecar's config watcher has seen the file
    T.eq(#api.pending(), 0, "the rule just chosen is not asked about as a config change")
    local again = start("bash", { command = "printf again", description = "printf" })
    T.eq(finished(again).isError, false, "covered without asking")
    vim.cmd("Toolhost rules")
    local buf
    T.wait(function()
      buf = vim.fn.bufnr("toolhost://rules")
      return buf > 0
        and table
          .concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
          :find("printf", 1, true)
    end, "the rule listed")
    vim.api.nvim_set_current_buf(buf)
    for n, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      if line:find("printf", 1, true) then
        vim.api.nvim_win_set_cursor(0, { n, 0 })
      end
    end
    vim.api.nvim_feedkeys("dd", "x", false)
    T.wait(function()
      return not T.read(root .. "/opencode.json")
    end, "the file toolhost created removed with the rule")
    T.eq(
      require("toolhost.trust").has_project_files(root),
      false,
      "nothing for the next start to ask trust about"
    )
    vim.cmd("silent! bwipeout!")
  end
)

T.run()
