-- :Toolhost install: a real venv under stdpath("data"), the package pip-installed
-- from this checkout, and setup() preferring that venv's toolhost over PATH.
-- test_neovim.py runs this file in the background while the other files run: the
-- install waits on pip's index, which then overlaps their time.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("install", { ["a.txt"] = "installed\n" })
vim.cmd.cd(root)
-- No cmd option: the command is resolved (venv first, then PATH).
require("toolhost").setup({ autostart = false })
-- What is tested is the install's steps, not pip compiling bytecode (a third of its time).
vim.env.PIP_NO_COMPILE = "1"

T.test(":Toolhost install creates the venv and setup() then uses its toolhost", function()
  local client = require("toolhost.client")
  local venv_toolhost = client.venv_toolhost()
  T.ok(vim.startswith(venv_toolhost, vim.fn.stdpath("data")), "the venv is under stdpath('data')")
  T.eq(vim.fn.executable(venv_toolhost), 0, "no venv before the install")
  local cmd, source = client.resolve_cmd()
  T.eq(source, "PATH", "before the install the command comes from PATH")
  T.eq(cmd[1], vim.fn.exepath("toolhost"), "PATH's toolhost")

  local finished, ok, message = false, nil, nil
  vim.api.nvim_create_autocmd("User", {
    pattern = "ToolhostInstalled",
    once = true,
    callback = function(args)
      finished, ok, message = true, args.data.ok, args.data.message
    end,
  })
  vim.cmd("Toolhost install") -- runs asynchronously; the event tells the outcome
  T.wait(function()
    return finished
  end, "the install to finish", 240000)
  T.ok(ok, "install: " .. tostring(message))
  -- The end says what to do next, and so does the README a person installs from.
  T.contains(message, ":Toolhost restart to use it")
  T.contains(T.read(T.repo .. "/README.md"), "run `:Toolhost restart` (or restart Neovim)")
  T.eq(vim.fn.executable(venv_toolhost), 1, "the venv's toolhost exists")

  cmd, source = client.resolve_cmd()
  T.eq(cmd, { venv_toolhost, "serve" }, "the venv's toolhost comes before PATH")
  T.eq(source, ":Toolhost install's venv", "source")

  -- And it works: the plugin runs a tool with it.
  local result = T.run_tool("read", { filePath = root .. "/a.txt" })
  T.contains(result.output, "installed")
  T.eq(client.get(root).config.cmd[1], venv_toolhost, "the running sidecar is the venv's")
end)

T.run()
