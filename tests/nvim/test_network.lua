-- Network by domain (issue 27): a command's connection to a host no rule covers waits in
-- toolhost's review window ("Allow network access to … for this command?") while the
-- command runs; ga lets it through, gr refuses it, gA keeps a rule. The far end is a
-- server on this Neovim's loopback, named `*.corp.test` through TOOLHOST_NETWORK_HOSTS
-- (the sidecar inherits it) and listed literally by its address, as a private address
-- must be.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local hits = {}
local server = assert(vim.uv.new_tcp())
server:bind("127.0.0.1", 0)
server:listen(16, function()
  local peer = assert(vim.uv.new_tcp())
  server:accept(peer)
  local buffer = ""
  peer:read_start(function(_, chunk)
    if not chunk then
      peer:close()
      return
    end
    buffer = buffer .. chunk
    if buffer:find("\r\n\r\n", 1, true) then
      local path = buffer:match("^%u+ (%S+)")
      hits[#hits + 1] = path
      local body = "hello " .. tostring(path) .. "\n"
      peer:read_stop()
      peer:write(
        ("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"):format(#body, body),
        function()
          peer:close()
        end
      )
    end
  end)
end)
local port = server:getsockname().port
vim.env.TOOLHOST_NETWORK_HOSTS = "files.corp.test=127.0.0.1,other.corp.test=127.0.0.1"

local root = T.project("network", {})
vim.cmd.cd(root)
require("toolhost").setup({
  cmd = T.toolhost,
  config = {
    permission = { bash = "allow" }, -- only the network asks
    sandbox = { network = { allow = { "127.0.0.1:" .. port } } },
  },
})
T.client(root)
local api = require("toolhost")

local function curl(host, path)
  return ("curl -sS --max-time 30 http://%s:%d%s"):format(host, port, path)
end

local function network_ask()
  return T.pending_review(function(ask)
    return ask.permission == "network"
  end, "the network ask")
end

local function reached(path)
  return vim.tbl_contains(hits, path)
end

T.test("a connection no rule covers waits in the review window, and ga lets it through", function()
  local command = curl("files.corp.test", "/once")
  local call = T.start("bash", { command = command, description = "fetch" })
  local ask = network_ask()
  T.eq(ask.patterns, { "files.corp.test" }, "the host asked about")
  T.eq(ask.always[1].label, "network access to files.corp.test", "always: the host")
  T.eq(ask.always[2].label, "network access to every name below corp.test", "or its parent")
  T.ok(not call.done and not reached("/once"), "the command waits on the answer")
  local shown = T.review_keys("ga")
  local title = ("Allow network access to files.corp.test (port %d) for this command?"):format(port)
  T.contains(shown, title, "the title")
  T.contains(shown, "bash would connect to:", "what would happen")
  T.contains(shown, ("    files.corp.test (port %d)"):format(port), "the host and port")
  T.contains(shown, "# the command:\n    " .. command, "the command")
  T.contains(shown, "always would allow: network access to files.corp.test", "what always covers")
  local result = T.finished(call)
  T.contains(result.output, "hello /once", "the command got its answer")
  T.eq(result.metadata.sandbox.network.reached, { ("files.corp.test:%d"):format(port) })
end)

T.test("gr refuses it, and the command's result says so", function()
  vim.ui.input = function(_, on_confirm)
    vim.schedule(function()
      on_confirm("") -- Enter: no reason
    end)
  end
  local call = T.start("bash", { command = curl("files.corp.test", "/no"), description = "fetch" })
  network_ask()
  T.review_keys("gr")
  local result = T.finished(call)
  T.ok(not reached("/no"), "nothing reached the server")
  T.contains(result.output, ("Network access to files.corp.test:%d was refused"):format(port))
  T.eq(result.metadata.sandbox.network.refused[1].reason, "the user refused it")
end)

T.test("gA keeps a rule for every name below the parent, in this session", function()
  T.answer_prompts(function(items, opts)
    if opts.kind == "toolhost.scope" then
      return "for this session (kept in memory, nothing is written)"
    end
    return "network access to every name below corp.test"
  end)
  local call = T.start("bash", { command = curl("files.corp.test", "/always"), description = "a" })
  network_ask()
  vim.cmd("Toolhost review")
  vim.api.nvim_feedkeys("gA", "x", false)
  T.contains(T.finished(call).output, "hello /always")
  local again = T.start("bash", { command = curl("other.corp.test", "/after"), description = "b" })
  T.contains(T.finished(again).output, "hello /after", "covered without asking")
  T.eq(#api.pending(), 0, "nothing was asked")
end)

T.run()
