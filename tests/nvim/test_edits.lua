-- Edits of open buffers go through Neovim: workspace/applyEdit, then
-- editor/saveDocuments. Undo history, unsaved work and the disk are checked.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("edits", {
  ["open.txt"] = "one\ntwo\nthree\n",
  ["dirty.txt"] = "alpha\nbeta\ngamma\n",
  ["closed.txt"] = "closed file\n",
  ["versioned.txt"] = "v1\n",
  ["behind.txt"] = "old disk\n",
  ["save.txt"] = "saved?\n",
  ["insert.txt"] = "first\nsecond\nthird\n",
  ["append.txt"] = "a\nb\n",
  ["late.txt"] = "late\n",
})
vim.cmd.cd(root)
require("toolhost").setup({ cmd = T.toolhost, review = { enabled = false } })
local sidecar = T.client(root)

local function read_first(path)
  T.eq(T.run_tool("read", { filePath = path }).isError, false, "read " .. path)
end

---A WorkspaceEdit that puts `text` over as many characters at the start of `path`'s
---first line, for the buffer at `version`.
local function first_line_edit(path, version, text)
  local range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = #text } }
  return {
    documentChanges = {
      {
        textDocument = { uri = vim.uri_from_fname(path), version = version },
        edits = { { range = range, newText = text } },
      },
    },
  }
end

---The workspace/applyEdit handler's answer to `edit`, as the sidecar would get it.
local function apply_edit(edit)
  return require("toolhost.documents").apply_edit(nil, { edit = edit }, { client_id = sidecar.id })
end

T.test(
  "an edit of an open buffer changes the buffer, saves it, and :undo brings the old text back",
  function()
    local path = root .. "/open.txt"
    vim.cmd.edit(path)
    local buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_cursor(0, { 3, 2 })
    read_first(path)
    local result = T.run_tool("edit", { filePath = path, oldString = "two", newString = "TWO" })
    T.eq(result.isError, false, "edit isError: " .. tostring(result.output))
    T.eq(T.buf_text(buf), "one\nTWO\nthree\n", "the buffer")
    T.eq(vim.bo[buf].modified, false, "the buffer is saved")
    T.eq(T.read(path), "one\nTWO\nthree\n", "the disk")
    T.eq(vim.api.nvim_win_get_cursor(0), { 3, 2 }, "the cursor stays")
    vim.cmd("silent undo")
    T.eq(T.buf_text(buf), "one\ntwo\nthree\n", "the buffer after :undo")
    vim.cmd("silent redo")
    T.eq(T.buf_text(buf), "one\nTWO\nthree\n", "the buffer after :redo")
  end
)

T.test("a line the agent adds at the end of an open file leaves no blank line after it", function()
  local path = root .. "/append.txt"
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  read_first(path)
  local result = T.run_tool("write", { filePath = path, content = "a\nb\nc\n" })
  T.eq(result.isError, false, result.output)
  T.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { "a", "b", "c" }, "the buffer")
  T.eq(T.read(path), "a\nb\nc\n", "the disk")
  -- The end of the document as LSP names it (line = line count): Neovim's own handler
  -- would add an empty line for it.
  local range = { start = { line = 3, character = 0 }, ["end"] = { line = 3, character = 0 } }
  local edit = {
    documentChanges = {
      {
        textDocument = { uri = vim.uri_from_fname(path), version = vim.lsp.util.buf_versions[buf] },
        edits = { { range = range, newText = "d\n" } },
      },
    },
  }
  T.eq(apply_edit(edit).applied, true, "applied")
  T.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { "a", "b", "c", "d" }, "no blank line")
  vim.cmd("silent! bwipeout!")
end)

T.test("an edit keeps the user's unsaved work in the buffer and out of the disk", function()
  local path = root .. "/dirty.txt"
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "alpha (typed, not saved)" })
  vim.api.nvim_win_set_cursor(0, { 1, 5 })
  read_first(path)
  local result = T.run_tool("edit", { filePath = path, oldString = "gamma", newString = "GAMMA" })
  T.eq(result.isError, false, "edit isError: " .. tostring(result.output))
  T.eq(T.buf_text(buf), "alpha (typed, not saved)\nbeta\nGAMMA\n", "the buffer has both")
  T.eq(T.read(path), "alpha\nbeta\nGAMMA\n", "the disk has the agent's change only")
  T.eq(vim.bo[buf].modified, true, "the user's part is still unsaved")
  T.eq(vim.api.nvim_win_get_cursor(0), { 1, 5 }, "the cursor stays")
  vim.cmd("silent undo")
  T.eq(
    T.buf_text(buf),
    "alpha (typed, not saved)\nbeta\ngamma\n",
    "one undo takes back only the edit"
  )
  vim.cmd("silent redo")
  -- Saving later does not stop on "the file has been changed since reading it".
  local ok, err = pcall(vim.cmd, "write")
  T.ok(ok, "the save went through: " .. tostring(err))
  T.eq(T.read(path), "alpha (typed, not saved)\nbeta\nGAMMA\n", "the user's save")
end)

T.test("a file that is not open is written by the sidecar, and no buffer is created", function()
  local path = root .. "/closed.txt"
  read_first(path)
  -- The read prewarmed it: unload it so the file is really closed.
  local buf = vim.fn.bufnr(path)
  if buf > 0 then
    vim.api.nvim_buf_delete(buf, { force = true })
  end
  local result = T.run_tool("write", { filePath = path, content = "written by the sidecar\n" })
  T.eq(result.isError, false, "write isError: " .. tostring(result.output))
  T.eq(T.read(path), "written by the sidecar\n", "the disk")
  T.eq(vim.fn.bufloaded(path), 0, "still not loaded")
end)

T.test("workspace/applyEdit refuses an edit made for an older version of the buffer", function()
  local path = root .. "/versioned.txt"
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  -- A buffer not changed since it was opened is version 0 (Neovim's own handler
  -- would not check that version at all).
  local opened = vim.lsp.util.buf_versions[buf]
  T.eq(opened, 0, "the version of a fresh buffer")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "v2" })
  local version = vim.lsp.util.buf_versions[buf]
  local edit = first_line_edit(path, opened, "XX")
  local result = apply_edit(edit)
  T.eq(result.applied, false, "applied")
  T.contains(result.failureReason, "changed in the editor")
  T.eq(T.buf_text(buf), "v2\n", "the buffer is untouched")
  edit.documentChanges[1].textDocument.version = version
  result = apply_edit(edit)
  T.eq(result.applied, true, "applied with the current version")
  T.eq(T.buf_text(buf), "XX\n", "the buffer")
end)

T.test("a clean buffer older than its file is reloaded, never edited", function()
  local path = root .. "/behind.txt"
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  vim.uv.sleep(20) -- a different mtime
  T.write(path, "new disk\n")
  local result = apply_edit(first_line_edit(path, vim.lsp.util.buf_versions[buf], "OLD"))
  T.eq(result.applied, false, "applied")
  T.contains(result.failureReason, "changed on disk")
  T.eq(T.buf_text(buf), "new disk\n", "the buffer was reloaded from disk")
  T.eq(T.read(path), "new disk\n", "the disk")
end)

T.test("after a tool changed a file on disk, its clean buffer is reloaded", function()
  local path = root .. "/behind.txt"
  local buf = vim.fn.bufnr(path)
  vim.uv.sleep(20)
  local result = T.run_tool(
    "bash",
    { command = "printf 'from a command\\n' > behind.txt", description = "overwrite" }
  )
  T.eq(result.isError, false, "bash isError: " .. tostring(result.output))
  T.eq(T.buf_text(buf), "from a command\n", "the buffer")
  T.eq(vim.bo[buf].modified, false, "still clean")
end)

T.test("editor/saveDocuments writes modified buffers and reports each saved uri", function()
  local path = root .. "/save.txt"
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "saved!" })
  local uri = vim.uri_from_fname(path)
  local missing = vim.uri_from_fname(root .. "/not-open.txt")
  local result = require("toolhost.documents").save(
    nil,
    { uris = { uri, missing } },
    { client_id = sidecar.id }
  )
  T.eq(result.saved, { uri }, "saved")
  T.eq(T.read(path), "saved!\n", "the disk")
  T.eq(vim.bo[buf].modified, false, "modified")
end)

T.test("editor/saveDocuments leaves a buffer typed in since the version it names", function()
  local path = root .. "/late.txt"
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "the agent's" })
  local landed = vim.lsp.util.buf_versions[buf]
  vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "typed on" })
  local uri = vim.uri_from_fname(path)
  local documents = require("toolhost.documents")
  local stale = documents.save(nil, { uris = { uri }, versions = { [uri] = landed } }, {})
  T.eq(stale.saved, {}, "saved at a version typed past")
  T.eq(T.read(path), "late\n", "the disk keeps the user's typing off")
  T.eq(vim.bo[buf].modified, true, "still unsaved")
  local now = { [uri] = vim.lsp.util.buf_versions[buf] }
  T.eq(documents.save(nil, { uris = { uri }, versions = now }, {}).saved, { uri }, "saved")
  T.eq(T.read(path), "the agent's\ntyped on\n", "the disk")
end)

T.test(
  "an allowed edit landing while you type in the buffer leaves your insert one undo step",
  function()
    -- Typeahead needs a Neovim in its main loop: a second one (--embed), driven over RPC.
    local chan = vim.fn.jobstart(
      { vim.v.progpath, "--embed", "--headless", "-u", "NONE", "-i", "NONE", "-n" },
      { rpc = true, cwd = root }
    )
    local function lua(code, ...)
      return vim.rpcrequest(chan, "nvim_exec_lua", code, { ... })
    end
    local path = root .. "/insert.txt"
    local ok, err = pcall(function()
      lua(
        [[
      local repo, cmd, path = ...
      vim.opt.runtimepath:prepend(repo .. "/editors/neovim")
      vim.cmd("runtime plugin/toolhost.lua")
      vim.o.swapfile = false
      require("toolhost").setup({ cmd = cmd, review = { enabled = false } })
      vim.cmd.edit(path)
    ]],
        T.repo,
        T.toolhost,
        path
      )
      T.wait(function()
        return lua(
          "local c = require('toolhost.client').get(...); return c ~= nil and c.initialized",
          root
        )
      end, "the embedded Neovim's sidecar", 15000)
      lua(
        [[
      _G.call = {}
      require("toolhost").execute("read", { filePath = ... }, {}, function() _G.read = true end)
    ]],
        path
      )
      T.wait(function()
        return lua("return _G.read == true")
      end, "the read")
      vim.rpcrequest(chan, "nvim_input", "Gotyped ")
      T.wait(function()
        return vim.rpcrequest(chan, "nvim_get_mode").mode == "i"
      end, "insert mode")
      vim.wait(400) -- the sidecar sees the typing (didChange)
      lua(
        [[
      require("toolhost").execute("edit", { filePath = ..., oldString = "first", newString = "FIRST" },
        {}, function(e, r) _G.call = { done = true, err = e, result = r } end)
    ]],
        path
      )
      vim.wait(600)
      T.eq(lua("return _G.call.done == true"), false, "the edit waits while you type")
      vim.rpcrequest(chan, "nvim_input", "more<Esc>")
      T.wait(function()
        return lua("return _G.call.done == true")
      end, "the edit once you left insert mode", 15000)
      T.eq(lua("return _G.call.result.isError"), false, "the edit landed")
      local lines = lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
      T.eq(lines, { "FIRST", "second", "third", "typed more" }, "your typing and the edit")
      lua("vim.cmd('silent undo')")
      T.eq(
        lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        { "first", "second", "third", "typed more" },
        "one undo: the agent's edit"
      )
      lua("vim.cmd('silent undo')")
      T.eq(
        lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"),
        { "first", "second", "third" },
        "the next: your whole insert, in one step"
      )
      T.eq(
        T.read(path),
        "FIRST\nsecond\nthird\n",
        "the disk has the agent's change, not your typing"
      )
    end)
    pcall(lua, "for _, c in ipairs(vim.lsp.get_clients()) do c:stop(true) end")
    vim.wait(300)
    vim.fn.jobstop(chan)
    T.ok(ok, tostring(err))
  end
)

T.run()
