-- A review left unanswered for a full minute is still there and still answerable:
-- nothing in the plugin or the sidecar expires an ask. Real time, not a fake clock
-- (no timer to fake would prove anything): test_neovim.py runs this file in the
-- background while the other files run, so the minute overlaps their time.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local WAIT_MS = 61000
local root = T.project("long", { ["slow.txt"] = "before\n" })
vim.cmd.cd(root)
require("toolhost").setup({ cmd = T.toolhost })
T.client(root)

T.test("a review left unanswered for 60 s is still answerable", function()
  local path = root .. "/slow.txt"
  T.eq(T.run_tool("read", { filePath = path }).isError, false, "read")
  local call = {}
  require("toolhost").execute(
    "edit",
    { filePath = path, oldString = "before", newString = "after" },
    {},
    function(err, result)
      call = { done = true, err = err, result = result }
    end
  )
  T.wait(function()
    return #require("toolhost").pending() == 1
  end, "the review")
  local started = vim.uv.hrtime()
  vim.wait(WAIT_MS, function()
    return call.done
  end, 200)
  local waited = (vim.uv.hrtime() - started) / 1e6
  T.ok(waited >= 60000, ("waited %d ms"):format(waited))
  T.ok(not call.done, "the call still waits")
  local pending = require("toolhost").pending()
  T.eq(#pending, 1, "still pending")
  T.ok(require("toolhost.review").window(), "the review window is still open")
  T.ok(require("toolhost").answer(pending[1].id, { reply = "once" }))
  T.wait(function()
    return call.done
  end, "the answer")
  T.ok(not call.err, vim.inspect(call.err))
  T.eq(call.result.isError, false, tostring(call.result.output))
  T.eq(T.read(path), "after\n", "written after a minute")
end)

T.run()
