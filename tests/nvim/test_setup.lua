-- Setup as a new user meets it: the review default and how to turn it off or
-- override it, :help right after installing, and start failures said once.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("setup", { ["a.txt"] = "a\n" })
vim.cmd.cd(root)

local notes = {}
vim.notify = function(message, level)
  notes[#notes + 1] = { message = tostring(message), level = level }
  io.stderr:write(("[notify %s] %s\n"):format(tostring(level), tostring(message)))
end

local function count(needle)
  local n = 0
  for _, note in ipairs(notes) do
    if note.message:find(needle, 1, true) then
      n = n + 1
    end
  end
  return n
end

T.test(
  "two buffers before the sidecar is installed give one start error, and no 'restarted'",
  function()
    local missing = root .. "/no-such-toolhost"
    require("toolhost").setup({ cmd = { missing, "serve" } })
    vim.cmd.edit(root .. "/a.txt")
    vim.cmd("new " .. root .. "/b.txt")
    vim.wait(200)
    T.eq(count("is not executable"), 1, "one error for the same failure")
    notes = {}
    vim.cmd("Toolhost restart")
    vim.wait(200)
    T.eq(count("restarted the sidecar"), 0, "no claim of a restart")
    T.eq(count("could not start the sidecar"), 1, "the failure, said once")
    vim.cmd("only")
  end
)

T.test(":help toolhost works right after setup and lands on the top", function()
  local tags = T.repo .. "/editors/neovim/doc/tags"
  os.remove(tags) -- as after a fresh clone: no tags (lazy.nvim indexes only <repo>/doc)
  require("toolhost").setup({ cmd = T.toolhost, autostart = false })
  local ok, err = pcall(vim.cmd, "help toolhost")
  T.ok(ok, "no E149: " .. tostring(err))
  T.contains(vim.api.nvim_buf_get_name(0), "toolhost.txt")
  T.ok(vim.api.nvim_win_get_cursor(0)[1] <= 3, "at the top, not in a section")
  vim.cmd("helpclose")
end)

T.test("review is the default; review.enabled = false and a user's config turn it off", function()
  local config = require("toolhost.config")
  config.setup({})
  T.eq(config.init_options().permissionDefaults, { edit = "ask", bash = "ask" }, "default")
  config.setup({ review = { enabled = false } })
  T.eq(config.init_options().permissionDefaults, nil, "switched off")
  -- The user's own rule wins over the review default (the sidecar reads it above).
  require("toolhost").setup({ cmd = T.toolhost, config = { permission = { edit = "allow" } } })
  T.client(root)
  T.eq(T.run_tool("read", { filePath = root .. "/a.txt" }).isError, false, "read")
  local result = T.run_tool("write", { filePath = root .. "/a.txt", content = "b\n" })
  T.eq(result.isError, false, "the edit ran without asking: " .. tostring(result.output))
  T.eq(#require("toolhost").pending(), 0, "nothing asked")
end)

T.test("with permissionAsk off, the sidecar falls back to Neovim's showMessageRequest", function()
  require("toolhost").setup({ cmd = T.toolhost, editor = { permissionAsk = false } })
  vim.cmd("Toolhost restart")
  T.client(root)
  local seen = T.answer_prompts(function()
    return "Allow once"
  end)
  local result = T.run_tool("bash", { command = "echo fallback", description = "fallback" })
  T.eq(result.isError, false, "bash isError: " .. tostring(result.output))
  T.eq(#seen, 1, "one prompt")
  T.eq(seen[1].kind, "lsp_message", "Neovim's own window/showMessageRequest handler asked")
  T.eq(seen[1].labels, { "Allow once", "Always allow: commands starting `echo`", "Reject" })
end)

T.test("a long message from the sidecar is one line that fits: no Press ENTER", function()
  vim.o.columns = 80
  notes = {}
  local long = "toolhost: You did not allow writing to /tmp/outside-folder, so the command did not "
    .. "run again. Its first run's changes stay: ran.txt (created), more.txt (changed)."
  local show = require("toolhost.client").handlers()["window/showMessage"]
  show(nil, { type = 2, message = long }, {})
  T.eq(#notes, 1, "said once")
  T.ok(vim.fn.strdisplaywidth(notes[1].message) < vim.o.columns, "fits: " .. notes[1].message)
  T.contains(notes[1].message, "toolhost: You did not allow writing")
  T.contains(notes[1].message, "(:Toolhost log)")
  T.eq(notes[1].level, vim.log.levels.WARN, "a warning")
  local short = "toolhost: installed."
  show(nil, { type = 3, message = short }, {})
  T.eq(notes[2].message, short, "a short one whole")
end)

T.run()
