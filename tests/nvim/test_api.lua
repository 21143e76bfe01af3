-- The Lua API against the real sidecar: calls queued before the client is ready,
-- reads of unsaved buffers, prewarm, progress, cancellation and the commands.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("api", {
  ["notes.txt"] = "first line\nsecond line\n",
  ["cold.txt"] = "never opened\n",
  ["src/app.py"] = "print('hi')\n",
})
vim.cmd.cd(root)
-- autostart off: the sidecar starts on the first call, which is then queued.
require("toolhost").setup({ cmd = T.toolhost, autostart = false, review = { enabled = false } })

T.test("list and execute work before the client is ready (queued)", function()
  local client = require("toolhost.client")
  T.eq(client.get(root), nil, "no sidecar before the first call")
  local tools, listed_err
  local read_result, read_err
  require("toolhost").list({}, function(err, result)
    listed_err, tools = err, result
  end)
  require("toolhost").execute("read", { filePath = root .. "/notes.txt" }, {}, function(err, result)
    read_err, read_result = err, result
  end)
  local c = T.ok(client.get(root), "the first call starts the sidecar")
  T.ok(not c.initialized, "the calls were made before initialize was answered")
  T.wait(function()
    return tools and read_result
  end, "both queued calls to answer", 15000)
  T.eq(listed_err, nil, "list error")
  T.eq(read_err, nil, "execute error")
  local ids = vim.tbl_map(function(tool)
    return tool.id
  end, tools)
  for _, id in ipairs({ "read", "edit", "write", "grep", "glob" }) do
    T.ok(vim.tbl_contains(ids, id), id .. " is listed: " .. table.concat(ids, ", "))
  end
  T.eq(tools[1].parameters.type, "object", "a tool's parameters are a JSON Schema object")
  T.eq(read_result.isError, false, "read isError")
  T.contains(read_result.output, "1: first line")
  T.contains(read_result.output, "2: second line")
end)

T.test("a call with no arguments sends an object, and a bad one is an isError result", function()
  local result = T.run_tool("read", {})
  T.eq(result.isError, true, "read without filePath fails")
  T.eq(result.metadata.error, "invalid_arguments", "error kind")
  local unknown = T.run_tool("no_such_tool", { x = 1 })
  T.eq(unknown.metadata.error, "unknown_tool", "error kind")
end)

T.test("a read of a buffer with unsaved changes returns the buffer's text", function()
  vim.cmd.edit(root .. "/notes.txt")
  local buf = vim.api.nvim_get_current_buf()
  T.ok(
    vim.lsp.buf_is_attached(buf, require("toolhost.client").get(root).id),
    "the buffer is synced"
  )
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "EDITED IN THE BUFFER" })
  T.ok(vim.bo[buf].modified, "the buffer has unsaved changes")
  local result = T.run_tool("read", { filePath = root .. "/notes.txt" })
  T.contains(result.output, "1: EDITED IN THE BUFFER")
  T.eq(T.read(root .. "/notes.txt"), "first line\nsecond line\n", "the disk is untouched")
  -- Once saved, the disk is what a read serves again.
  vim.cmd("silent write")
  T.write(root .. "/notes.txt", "changed on disk\n")
  local after = T.run_tool("read", { filePath = root .. "/notes.txt" })
  T.contains(after.output, "1: changed on disk")
end)

T.test("prewarm: a read of a file that is not open loads it in a hidden buffer", function()
  local cold = root .. "/cold.txt"
  T.eq(vim.fn.bufloaded(cold), 0, "not loaded before")
  local result = T.run_tool("read", { filePath = cold })
  T.contains(result.output, "never opened")
  T.wait(function()
    return vim.fn.bufloaded(cold) == 1
  end, "editor/openDocument to load " .. cold)
  local buf = vim.fn.bufnr(cold)
  T.eq(vim.bo[buf].buflisted, false, "the prewarmed buffer stays out of the buffer list")
  T.eq(vim.fn.bufwinid(buf), -1, "and out of every window")
  T.ok(
    vim.lsp.buf_is_attached(buf, require("toolhost.client").get(root).id),
    "and is synced to the sidecar"
  )
end)

T.test("prewarm detects the filetype, so language servers can start", function()
  local file = root .. "/src/app.py"
  T.run_tool("read", { filePath = file })
  T.wait(function()
    return vim.fn.bufloaded(file) == 1
  end, "the Python file to be loaded")
  T.eq(vim.bo[vim.fn.bufnr(file)].filetype, "python", "filetype")
end)

T.test("a running tool shows as LSP progress (begin and end)", function()
  local events = {}
  local id = vim.api.nvim_create_autocmd("LspProgress", {
    callback = function(args)
      local value = args.data.params.value
      table.insert(events, { kind = value.kind, title = value.title, message = value.message })
    end,
  })
  T.run_tool("glob", { pattern = "*.txt" })
  vim.api.nvim_del_autocmd(id)
  T.eq(events[1] and events[1].kind, "begin", "first event")
  T.eq(events[1].title, "glob", "progress title")
  T.eq(events[1].message, "*.txt", "progress message")
  T.eq(events[#events].kind, "end", "last event")
end)

T.test("tools/update reaches on_update and the User ToolhostUpdate event", function()
  local updates, events = {}, 0
  local id = vim.api.nvim_create_autocmd("User", {
    pattern = "ToolhostUpdate",
    callback = function()
      events = events + 1
    end,
  })
  local result = T.run_tool(
    "bash",
    { command = "echo one; sleep 0.3; echo two", description = "count" },
    {
      on_update = function(update)
        table.insert(updates, update)
      end,
    }
  )
  vim.api.nvim_del_autocmd(id)
  T.eq(result.isError, false, "bash isError: " .. tostring(result.output))
  T.contains(result.output, "two")
  T.ok(#updates > 0, "at least one tools/update for the call")
  T.ok(events >= #updates, "each update is also a User event")
end)

T.test("cancelling a call ends it with RequestCancelled", function()
  local got_err, got_result, done = nil, nil, false
  local started = vim.uv.now()
  -- An unusual duration, so the check below finds only this command.
  local command = "sleep 21.4375"
  local cancel = require("toolhost").execute(
    "bash",
    { command = command, description = "wait" },
    {},
    function(err, result)
      got_err, got_result, done = err, result, true
    end
  )
  vim.wait(500)
  cancel()
  T.wait(function()
    return done
  end, "the cancelled call to answer", 10000)
  T.ok(vim.uv.now() - started < 10000, "cancelled long before the command would end")
  T.eq(got_result, nil, "no result")
  T.eq(got_err and got_err.code, -32800, "error code")
  -- The sidecar ends the command too, not only the wait for it.
  T.wait(function()
    return vim.system({ "pgrep", "-f", command }):wait().code ~= 0
  end, "the cancelled command to be killed", 5000)
end)

T.test(":Toolhost run shows the result and :Toolhost list the catalogue", function()
  vim.cmd([[Toolhost run read {"filePath": "notes.txt"}]])
  T.wait(function()
    return vim.fn.bufnr("toolhost://run/read") > 0
  end, "the result buffer")
  local lines = vim.api.nvim_buf_get_lines(vim.fn.bufnr("toolhost://run/read"), 0, -1, false)
  T.contains(table.concat(lines, "\n"), "changed on disk")
  vim.cmd("Toolhost list")
  T.wait(function()
    return vim.fn.bufnr("toolhost://tools") > 0
  end, "the tool list buffer")
  local listing =
    table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr("toolhost://tools"), 0, -1, false), "\n")
  T.contains(listing, "read ")
  T.contains(listing, "grep ")
  T.eq(vim.fn.getcompletion("Toolhost ", "cmdline"), {
    "list",
    "run",
    "review",
    "cancel",
    "rules",
    "undo",
    "checkpoints",
    "log",
    "restart",
    "install",
  }, "subcommands")
  T.eq(vim.fn.getcompletion("Toolhost run re", "cmdline"), { "read" }, "tool ids")
  vim.cmd("Toolhost log")
  T.eq(vim.api.nvim_buf_get_name(0), require("toolhost.log").path(), ":Toolhost log opens the log")
  T.contains(T.buf_text(0), "sidecar ready for " .. root, "the log")
  vim.cmd("close")
end)

T.test(":Toolhost restart starts a new sidecar that serves the same buffers", function()
  local old = require("toolhost.client").get(root).id
  vim.cmd("Toolhost restart")
  local c = T.client(root)
  T.ok(c.id ~= old, "a new client")
  local buf = vim.fn.bufnr(root .. "/notes.txt")
  T.ok(vim.lsp.buf_is_attached(buf, c.id), "open buffers are attached to the new client")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "unsaved after the restart" })
  local result = T.run_tool("read", { filePath = root .. "/notes.txt" })
  T.contains(result.output, "1: unsaved after the restart")
end)

T.test("bad options are reported and keep their defaults", function()
  local config = require("toolhost.config")
  local problems = config.validate({
    bogus = true,
    cmd = "toolhost serve",
    editor = { task = true },
    review = { layout = "tab" },
  })
  local text = table.concat(problems, "\n")
  T.contains(text, 'unknown option "bogus"')
  T.contains(text, "option cmd must be table or nil, got string")
  T.contains(text, "editor.task is not a request this plugin answers")
  T.contains(text, 'review.layout must be "float" or "split"')
  T.eq(#config.validate({ cmd = T.toolhost, diagnostics = { wait_ms = 500 } }), 0, "good options")
  local saved = vim.deepcopy(config.options)
  config.setup({ cmd = "toolhost serve", diagnostics = { wait_ms = 500 }, editor = { task = true } })
  T.eq(config.options.cmd, nil, "a cmd of the wrong type keeps the default")
  T.eq(config.init_options().diagnostics, { waitMs = 500 }, "diagnostics.waitMs")
  T.eq(config.init_options().editor.task, false, "task is never claimed")
  config.options = saved
end)

T.test("the help file builds and documents every option and subcommand", function()
  local doc = T.repo .. "/editors/neovim/doc/toolhost.txt"
  local copy = T.tmp .. "/doc"
  vim.fn.mkdir(copy, "p")
  vim.fn.writefile(vim.fn.readfile(doc), copy .. "/toolhost.txt")
  vim.cmd.helptags(vim.fn.fnameescape(copy)) -- errors on a duplicate tag
  local tags = table.concat(vim.fn.readfile(copy .. "/tags"), "\n")
  for _, tag in ipairs({
    "toolhost.setup()",
    "toolhost.list()",
    "toolhost.execute()",
    ":Toolhost",
    "toolhost-options",
    "toolhost",
    "toolhost-review",
    "toolhost.pending()",
    "toolhost.answer()",
  }) do
    T.contains(tags, tag .. "\t", "tags")
  end
  local text = table.concat(vim.fn.readfile(doc), "\n")
  for option in pairs(require("toolhost.config").types) do
    T.contains(text, "      " .. option .. " = ", "the options block of the help file")
  end
  for flag in pairs(require("toolhost.config").defaults.editor) do
    T.contains(text, flag .. " = true", "the editor flags in the help file")
  end
  for _, sub in ipairs({
    "list",
    "run {tool} {json}",
    "review",
    "cancel",
    "rules",
    "log",
    "restart",
    "install",
  }) do
    T.contains(text, ":Toolhost " .. sub, "the commands in the help file")
  end
end)

T.run()
