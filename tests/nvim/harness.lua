-- A small test runner for headless Neovim: `T.test(name, fn)` registers a test,
-- `T.run()` runs them in order and prints one line per test ("TOOLHOST-TEST ok NAME
-- (N ms)" or "TOOLHOST-TEST not ok NAME (N ms): ERROR", continued by "# " lines),
-- then "N passed, N failed", and exits non-zero on failure.
-- tests/nvim/test_neovim.py runs each file and turns every line into a pytest result.
--
-- Environment (set by test_neovim.py): TOOLHOST_TEST_REPO (the repository),
-- TOOLHOST_TEST_BIN (the venv's bin: nvim, toolhost, ruff, jedi-language-server),
-- TOOLHOST_TEST_TMP (a scratch folder for this file's projects).

local T = { tests = {} }

T.repo = assert(vim.env.TOOLHOST_TEST_REPO, "TOOLHOST_TEST_REPO is not set")
T.bin = assert(vim.env.TOOLHOST_TEST_BIN, "TOOLHOST_TEST_BIN is not set")
T.tmp = assert(vim.env.TOOLHOST_TEST_TMP, "TOOLHOST_TEST_TMP is not set")
T.toolhost = { T.bin .. "/toolhost", "serve" }

vim.opt.runtimepath:prepend(T.repo .. "/editors/neovim")
vim.cmd("filetype on")
vim.cmd("runtime plugin/toolhost.lua")
vim.o.swapfile = false
-- Messages go to stderr: stdout carries only the result lines.
vim.notify = function(message, level)
  io.stderr:write(("[notify %s] %s\n"):format(tostring(level), tostring(message)))
end
_G.print = function(...)
  io.stderr:write(table.concat(vim.tbl_map(tostring, { ... }), " ") .. "\n")
end
vim.o.shortmess = vim.o.shortmess .. "F"

---@param name string
---@param fn fun()
function T.test(name, fn)
  table.insert(T.tests, { name = name, fn = fn })
end

---@param cond fun(): any
---@param what string what was awaited, for the failure message
---@param ms? integer default 10000
function T.wait(cond, what, ms)
  local ok = vim.wait(ms or 10000, function()
    return cond() and true or false
  end, 20)
  if not ok then
    error("timed out waiting for " .. what, 2)
  end
end

function T.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(
      ("%s: expected %s, got %s"):format(
        what or "value",
        vim.inspect(expected),
        vim.inspect(actual)
      ),
      2
    )
  end
end

function T.ok(value, what)
  if not value then
    error(what or "expected a true value", 2)
  end
  return value
end

---Asserts that `text` contains `needle` (plain).
function T.contains(text, needle, what)
  if type(text) ~= "string" or not text:find(needle, 1, true) then
    error(
      ("%s: %s does not contain %s"):format(what or "text", vim.inspect(text), vim.inspect(needle)),
      2
    )
  end
end

function T.not_contains(text, needle, what)
  if type(text) == "string" and text:find(needle, 1, true) then
    error(("%s: %s contains %s"):format(what or "text", vim.inspect(text), vim.inspect(needle)), 2)
  end
end

---A fresh project folder (a git root) under this file's scratch folder.
---@param name string
---@param files? table<string, string> relative path -> content
---@return string root
function T.project(name, files)
  local root = vim.fs.joinpath(T.tmp, name)
  vim.fn.mkdir(vim.fs.joinpath(root, ".git"), "p")
  for rel, content in pairs(files or {}) do
    T.write(vim.fs.joinpath(root, rel), content)
  end
  return vim.fs.normalize(vim.fn.resolve(root))
end

function T.write(path, content)
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local file = assert(io.open(path, "wb"))
  file:write(content)
  file:close()
end

function T.read(path)
  local file = io.open(path, "rb")
  if not file then
    return nil
  end
  local content = file:read("*a")
  file:close()
  return content
end

---The README's Lua snippet NAME (the block after `<!-- snippet: NAME -->`), evaluated as
---the fields of a table: what a user pastes into their plugin's setup.
---@param name string
---@return table
function T.readme_snippet(name)
  local readme = assert(T.read(T.repo .. "/README.md"), "README.md not found")
  local code = readme:match("<!%-%- snippet: " .. vim.pesc(name) .. " %-%->\n```lua\n(.-)\n```")
  assert(code, "README.md has no Lua snippet " .. name)
  return assert(load("return {\n" .. code .. "\n}", "README snippet " .. name))()
end

function T.buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
end

---Runs a tool through the plugin's Lua API and returns the ToolResult (errors on a
---protocol error).
function T.run_tool(tool, args, opts, timeout)
  local result, err = require("toolhost").execute_sync(tool, args, opts, timeout or 30000)
  if err then
    error(("%s failed: %s"):format(tool, vim.inspect(err)), 2)
  end
  return result
end

---Starts a tool call through the plugin's API; the table returned gets `.result` (or
---`.err`) and `.done` when it ends, and has `.cancel`.
function T.start(tool, args, opts)
  local call = {}
  call.cancel = require("toolhost").execute(tool, args, opts or {}, function(err, result)
    call.err, call.result, call.done = err, result, true
  end)
  return call
end

---Waits until `n` reviews are pending; returns them.
function T.wait_pending(n)
  T.wait(function()
    return #require("toolhost").pending() >= n
  end, n .. " pending review(s)")
  return require("toolhost").pending()
end

---Waits for a call from T.start to end (with no protocol error); its result.
function T.finished(call)
  T.wait(function()
    return call.done
  end, "the call to end", 20000)
  T.ok(not call.err, "no protocol error: " .. vim.inspect(call.err))
  return call.result
end

---The toolhost client for `root`, once it is ready.
function T.client(root)
  local client = require("toolhost.client")
  T.wait(function()
    local c = client.get(root)
    return c and c.initialized
  end, "the toolhost client for " .. root, 15000)
  return client.get(root)
end

---Replaces vim.ui.select (and vim.ui.input) with a scripted answer. `choose`
---gets (items, opts) and returns the item label to pick (nil: dismiss). Answers
---arrive asynchronously, as from a real picker. Returns the list of prompts seen.
---@param choose fun(items: table[], opts: table): string?
---@param feedback? string what vim.ui.input answers
function T.answer_prompts(choose, feedback)
  local seen = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = vim.tbl_map(opts.format_item or tostring, items)
    local diff_windows, floats = {}, 0
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.bo[vim.api.nvim_win_get_buf(win)].filetype == "diff" then
        floats = floats + (vim.api.nvim_win_get_config(win).relative ~= "" and 1 or 0)
        diff_windows[#diff_windows + 1] = table.concat(
          vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false),
          "\n"
        )
      end
    end
    table.insert(seen, {
      prompt = opts.prompt,
      labels = labels,
      diffs = diff_windows,
      floats = floats,
      kind = opts.kind,
    })
    local label = choose(items, opts)
    vim.defer_fn(function()
      for i, item in ipairs(items) do
        if labels[i] == label then
          return on_choice(item, i)
        end
      end
      on_choice(nil, nil)
    end, 10)
  end
  vim.ui.input = function(_, on_confirm)
    vim.defer_fn(function()
      on_confirm(feedback)
    end, 10)
  end
  return seen
end

---Waits until toolhost's review queue (require("toolhost").pending()) holds an ask
---for which `matches(ask)` is true, and returns it. The wait is generous: an ask
---usually arrives within a second, but a loaded 2-core machine may take far longer.
---@param matches fun(ask: table): boolean
---@param what string what was awaited, for the failure message
---@param ms? integer default 30000
---@return table ask
function T.pending_review(matches, what, ms)
  local found
  T.wait(function()
    for _, ask in ipairs(require("toolhost").pending()) do
      if matches(ask) then
        found = ask
        return true
      end
    end
  end, what, ms or 30000)
  return found
end

---Answers the review shown first as a person does: `:Toolhost review` moves into the
---review window, where `keys` are typed (e.g. "ga" accept, "gr" reject, "gs" save
---yours too), with the typeahead run to its end. Returns the window's text as the
---person saw it before typing (wrapped header lines joined again), and puts the focus
---back where it was.
---@param keys string
---@return string shown
function T.review_keys(keys)
  local before = vim.api.nvim_get_current_win()
  vim.cmd("Toolhost review")
  local win = T.ok(require("toolhost.review").window(), "the review window is open")
  T.eq(vim.api.nvim_get_current_win(), win, ":Toolhost review moved into the review window")
  local shown = table
    .concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
    :gsub("\n#   ", " ")
  vim.api.nvim_feedkeys(vim.keycode(keys), "x", false)
  if vim.api.nvim_win_is_valid(before) then
    vim.api.nvim_set_current_win(before)
  end
  return shown
end

---Starts a real language server for every Python buffer, as a user's config would.
---@param name string "ruff" or "jedi"
---@param root string
function T.python_server(name, root)
  local cmd = name == "ruff" and { T.bin .. "/ruff", "server" }
    or { T.bin .. "/jedi-language-server" }
  vim.api.nvim_create_autocmd("FileType", {
    pattern = "python",
    callback = function(args)
      vim.lsp.start({ name = name, cmd = cmd, root_dir = root }, { bufnr = args.buf })
    end,
  })
end

function T.run()
  local failed, passed = 0, 0
  for _, test in ipairs(T.tests) do
    local started = vim.uv.hrtime()
    local ok, err = xpcall(test.fn, debug.traceback)
    local ms = math.floor((vim.uv.hrtime() - started) / 1e6)
    if ok then
      passed = passed + 1
      io.stdout:write(("\nTOOLHOST-TEST ok %s (%d ms)\n"):format(test.name, ms))
    else
      failed = failed + 1
      local message = tostring(err):gsub("\n", "\n# ")
      io.stdout:write(("\nTOOLHOST-TEST not ok %s (%d ms): %s\n"):format(test.name, ms, message))
    end
    io.stdout:flush()
  end
  io.stdout:write(("%d passed, %d failed\n"):format(passed, failed))
  io.stdout:flush()
  -- Stop the sidecars and language servers before leaving, so none outlives the run.
  local stopping = vim.uv.hrtime()
  for _, client in ipairs(vim.lsp.get_clients()) do
    client:stop()
  end
  vim.wait(1000, function()
    return #vim.lsp.get_clients() == 0
  end, 20)
  for _, client in ipairs(vim.lsp.get_clients()) do
    io.stderr:write(("%s did not stop within 1 s; terminated\n"):format(client.name))
    client:stop(true)
  end
  io.stderr:write(
    ("stopped the language servers in %d ms\n"):format((vim.uv.hrtime() - stopping) / 1e6)
  )
  os.exit(failed == 0 and 0 or 1)
end

return T
