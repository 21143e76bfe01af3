-- The question tool asked with vim.ui.select (one answer, several marked in a list, a
-- typed one, dismissed, withdrawn on cancel), and sub-agents run by the plugin's task
-- hook (setup{task = function(request, done)}): its calls land in the child session,
-- the parent gets the envelope, progress names the child's calls, cancel reaches it.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("subagents", {
  ["notes.txt"] = "alpha\nbeta\ngamma\n",
})
vim.cmd.cd(root)

-- What the task hook does: set per test.
local hook = nil ---@type fun(request: table, done: fun(text?: string, err?: string))?

require("toolhost").setup({
  cmd = T.toolhost,
  task = function(request, done)
    assert(hook, "no hook set")(request, done)
  end,
})

local QUESTIONS = {
  {
    header = "Database",
    question = "Which database?",
    options = {
      { label = "Postgres", description = "What the other services use" },
      { label = "SQLite", description = "One file" },
    },
  },
  {
    header = "Extras",
    question = "Which extras?",
    options = {
      { label = "Migrations", description = "Alembic" },
      { label = "Seed data", description = "A few rows" },
      { label = "Backups", description = "Nightly" },
    },
    multiple = true,
  },
}

local session = 0
local function ask(questions)
  session = session + 1
  return T.run_tool("question", { questions = questions }, { sessionID = "ses_nvim_q" .. session })
end

T.test("question is offered, since the plugin answers editor/question", function()
  local tools = assert(require("toolhost").list_sync())
  T.eq(tools[1].id, "question", "first tool")
  T.ok(
    vim.tbl_contains(
      vim.tbl_map(function(t)
        return t.id
      end, tools),
      "task"
    ),
    "task is offered: the plugin has a task function"
  )
end)

T.test("one answer picked, several marked in a list then Done", function()
  local marks = { "[ ] Migrations — Alembic", "[ ] Backups — Nightly", "Done" }
  local seen = T.answer_prompts(function(items, opts)
    if opts.prompt:find("Which database", 1, true) then
      return "SQLite — One file"
    end
    return table.remove(marks, 1)
  end)
  local result = ask(QUESTIONS)
  T.eq(result.isError, false, result.output)
  T.eq(result.metadata.answers, { { "SQLite" }, { "Migrations", "Backups" } }, "answers")
  T.contains(seen[1].prompt, "toolhost: Database: Which database? (1/2)")
  T.eq(
    seen[1].labels,
    { "Postgres — What the other services use", "SQLite — One file", "Type your own answer…" }
  )
  T.eq(seen[1].kind, "toolhost.question")
  -- The list shows its marks: after two picks, both are marked.
  T.eq(seen[4].labels, {
    "Done",
    "[x] Migrations — Alembic",
    "[ ] Seed data — A few rows",
    "[x] Backups — Nightly",
    "Type your own answer…",
  })
  T.contains(seen[4].prompt, "(2 marked)")
  T.contains(result.output, '"Which extras?"="Migrations, Backups"')
end)

T.test("a typed answer; dismissing rejects the call", function()
  T.answer_prompts(function()
    return "Type your own answer…"
  end, "MariaDB")
  local typed = ask({ QUESTIONS[1] })
  T.eq(typed.metadata.answers, { { "MariaDB" } })
  T.answer_prompts(function()
    return nil
  end)
  local dismissed = ask(QUESTIONS)
  T.eq(dismissed.isError, true)
  T.eq(dismissed.output, "The user dismissed this question")
end)

T.test("cancelling the call withdraws the question", function()
  local events = {}
  vim.api.nvim_create_autocmd("User", {
    pattern = "ToolhostQuestion",
    callback = function(args)
      events[#events + 1] = args.data.event
    end,
  })
  local answered_late
  vim.ui.select = function(_, _, on_choice)
    answered_late = on_choice -- the user has not answered yet
  end
  local result
  local cancel = require("toolhost").execute("question", { questions = QUESTIONS }, {
    sessionID = "ses_nvim_withdraw",
  }, function(err, res)
    result = err or res
  end)
  T.wait(function()
    return answered_late ~= nil
  end, "the prompt")
  cancel()
  T.wait(function()
    return vim.tbl_contains(events, "withdrawn")
  end, "the question to be withdrawn")
  T.eq(result.code, -32800, "the call was cancelled")
  answered_late({ label = "SQLite" }) -- too late: dropped
  T.eq(events, { "asked", "withdrawn" })
end)

T.test("the task hook runs the sub-agent in the child session", function()
  local got, listed, read
  hook = function(request, done)
    got = request
    request.list(function(err, tools)
      assert(not err, vim.inspect(err))
      listed = vim.tbl_map(function(t)
        return t.id
      end, tools)
      request.execute("read", { filePath = "notes.txt" }, function(err2, result)
        assert(not err2, vim.inspect(err2))
        read = result
        done("notes.txt holds alpha, beta and gamma.")
      end)
    end)
  end
  local updates = {}
  vim.api.nvim_create_autocmd("LspProgress", {
    callback = function(args)
      local value = args.data and args.data.params and args.data.params.value
      if type(value) == "table" and value.message then
        updates[#updates + 1] = value.message
      end
    end,
  })
  local result = T.run_tool("task", {
    description = "Count lines",
    prompt = "How long is notes.txt?",
    subagent_type = "explore",
  }, { sessionID = "ses_nvim_parent" })
  T.eq(result.isError, false, result.output)
  T.contains(result.output, '<task id="' .. got.sessionID .. '" state="completed">')
  T.contains(result.output, "notes.txt holds alpha, beta and gamma.")
  T.eq(got.parentSessionID, "ses_nvim_parent")
  T.eq(got.subagentType, "explore")
  T.eq(got.prompt, "How long is notes.txt?")
  T.contains(read.output, "2: beta")
  T.ok(vim.tbl_contains(listed, "read"), "read is the child's")
  T.ok(
    not vim.tbl_contains(listed, "task") and not vim.tbl_contains(listed, "edit"),
    vim.inspect(listed)
  )
  T.eq(result.metadata.calls[1].tool, "read")
  local shown = table.concat(updates, "\n")
  T.contains(shown, "Count lines: read", "progress names the child's call")
end)

T.test("cancelling the task reaches the hook", function()
  local cancelled = false
  hook = function(request, _)
    request.on_cancel(function()
      cancelled = true
    end)
  end
  local result
  local cancel = require("toolhost").execute("task", {
    description = "Wait",
    prompt = "wait",
    subagent_type = "general",
  }, { sessionID = "ses_nvim_cancel" }, function(err, res)
    result = err or res
  end)
  vim.wait(500)
  cancel()
  T.wait(function()
    return cancelled
  end, "the hook's on_cancel")
  T.eq(result.code, -32800)
end)

T.test("a failed sub-agent says why", function()
  hook = function(_, done)
    done(nil, "the agent plugin has no model configured")
  end
  local result = T.run_tool("task", { description = "x", prompt = "x", subagent_type = "general" })
  T.eq(result.isError, true)
  T.contains(result.output, "Subagent failed (task_id: ses_")
  T.contains(result.output, "the agent plugin has no model configured")
end)

T.test("the help file's example runner runs a sub-agent on an OpenAI-compatible model", function()
  local lines = vim.fn.readfile(T.repo .. "/editors/neovim/doc/toolhost.txt")
  local start
  for i, line in ipairs(lines) do
    if line:find("*toolhost-task-example*", 1, true) then
      start = i
    end
  end
  local code = {}
  for i = assert(start, "the example's tag") + 2, #lines do
    if lines[i] == "<" then
      break
    end
    code[#code + 1] = lines[i]:sub(5)
  end
  local setup_line = 'require("toolhost").setup({ task = run_subagent })'
  local source = table.concat(code, "\n")
  T.contains(source, setup_line)
  source = source:gsub(vim.pesc(setup_line), "return run_subagent")

  local script = T.tmp .. "/script.json"
  T.write(
    script,
    vim.json.encode({
      { calls = { { name = "read", arguments = { filePath = "notes.txt" } } } },
      { calls = { { name = "grep", arguments = { pattern = "beta" } } } },
      { text = "beta is on line 2 of notes.txt." },
    })
  )
  local url
  local server = vim.system({ T.bin .. "/python", "-m", "tests.openai_server", script }, {
    cwd = T.repo,
    stdin = true,
    stdout = function(_, data)
      url = url or (data and vim.trim(data))
    end,
  })
  T.wait(function()
    return url
  end, "the scripted model")
  vim.env.OPENAI_BASE_URL, vim.env.OPENAI_MODEL, vim.env.OPENAI_API_KEY = url, "scripted", "k"
  hook = assert(loadstring(source))()
  local result = T.run_tool("task", {
    description = "Find beta",
    prompt = "Where is beta?",
    subagent_type = "explore",
  }, { sessionID = "ses_nvim_example" }, 60000)
  server:write(nil)
  server:wait(10000)
  T.eq(result.isError, false, result.output)
  T.contains(result.output, "beta is on line 2 of notes.txt.")
  local requests = vim.json.decode(T.read(T.tmp .. "/script.requests"))
  T.eq(#requests, 3, "three turns")
  local second = requests[2].messages
  T.contains(second[#second].content, "2: beta", "the model's second request carried the read")
  T.eq(
    vim.tbl_map(function(c)
      return c.tool
    end, result.metadata.calls),
    { "read", "grep" }
  )
end)

T.test("without a task function or question prompts, neither is offered", function()
  require("toolhost").setup({ cmd = T.toolhost, editor = { question = false } })
  require("toolhost.client").restart()
  local ids = vim.tbl_map(function(t)
    return t.id
  end, assert(require("toolhost").list_sync(nil, 20000)))
  T.ok(not vim.tbl_contains(ids, "question"), vim.inspect(ids))
  T.ok(not vim.tbl_contains(ids, "task"), vim.inspect(ids))
end)

T.run()
