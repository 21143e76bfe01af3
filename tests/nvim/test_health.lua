-- :checkhealth toolhost against the real sidecar, and a broken command.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("health", { ["a.txt"] = "a\n" })
vim.cmd.cd(root)

local function checkhealth()
  vim.cmd("checkhealth toolhost")
  local buf = vim.api.nvim_get_current_buf()
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  return text
end

T.test(":checkhealth toolhost reports OK and no ERROR", function()
  require("toolhost").setup({ cmd = T.toolhost })
  local report = checkhealth()
  T.not_contains(report, "ERROR", "the report")
  T.contains(report, "OK Neovim 0.")
  T.contains(report, "answers initialize in")
  T.contains(report, "protocol 1")
  T.contains(report, "ripgrep found")
  T.contains(report, "JS/TS custom tools: ")
  T.contains(report, "OK bash sandbox: commands run under ")
  T.contains(report, "tools for " .. root)
  T.contains(report, root .. ": client ")
end)

T.test(":checkhealth toolhost warns when commands would run unsandboxed", function()
  require("toolhost").setup({
    cmd = T.toolhost,
    autostart = false,
    -- Takes every mechanism away from the sidecar's own probe (never widens anything).
    cmd_env = { TOOLHOST_SANDBOX_SIMULATE = "none" },
  })
  local report = checkhealth()
  T.contains(report, "WARNING bash sandbox: commands run UNSANDBOXED (sandbox.mode: auto)")
  T.contains(report, "apt install bubblewrap")
end)

T.test(":checkhealth toolhost reports a sidecar that cannot start as an ERROR", function()
  require("toolhost").setup({ cmd = { root .. "/no-such-toolhost", "serve" }, autostart = false })
  local report = checkhealth()
  T.contains(report, "ERROR")
  T.contains(report, "no-such-toolhost")
  T.contains(report, ":Toolhost install")
end)

T.test(":checkhealth toolhost shows an invalid config as an ERROR", function()
  require("toolhost").setup({
    cmd = T.toolhost,
    autostart = false,
    config = { permission = { edit = "maybe" } },
  })
  local report = checkhealth()
  T.contains(report, "ERROR")
  T.contains(report, "sidecar: ")
  T.contains(report, "permission")
end)

T.run()
