-- codecompanion.nvim v19's ACP client (the real plugin, pinned) driving
-- `toolhost acp -- opencode acp` through require("toolhost.integrations.codecompanion")
-- .acp("opencode"). OpenCode 1.18.33 ($TOOLHOST_OPENCODE) talks to the scripted model
-- that tests/nvim/test_agent_plugins.py serves on 127.0.0.1 ($TOOLHOST_ACP_MODEL): it
-- reads greet.txt, then changes two of its lines with toolhost_multiedit. The proxy
-- attaches to this Neovim's sidecar, so the change waits in toolhost's review window,
-- where one hunk is accepted and the other rejected.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")
local plugins = assert(vim.env.TOOLHOST_NVIM_PLUGINS, "TOOLHOST_NVIM_PLUGINS is not set")
local model_url = assert(vim.env.TOOLHOST_ACP_MODEL, "TOOLHOST_ACP_MODEL is not set")
local opencode = assert(vim.env.TOOLHOST_OPENCODE, "TOOLHOST_OPENCODE is not set")
for _, name in ipairs({ "plenary.nvim", "codecompanion.nvim" }) do
  vim.opt.runtimepath:append(plugins .. "/" .. name)
end
vim.cmd("runtime! plugin/codecompanion.lua")

local lines = {}
for i = 1, 20 do
  lines[i] = ("line %02d"):format(i)
end
local BEFORE = table.concat(lines, "\n") .. "\n"
local root = T.project("acp", { ["greet.txt"] = BEFORE })
vim.cmd.cd(root)
local home = vim.fs.joinpath(T.tmp, "acp-home")
vim.fn.mkdir(home, "p")

-- OpenCode's own config (the scripted model as its provider) in the layer toolhost
-- does not read; its data under a scratch HOME.
local opencode_config = vim.json.encode({
  provider = {
    scripted = {
      npm = "@ai-sdk/openai-compatible",
      name = "Scripted",
      options = { baseURL = model_url .. "/v1", apiKey = "not-needed" },
      models = { scripted = { name = "Scripted", tool_call = true } },
    },
  },
  model = "scripted/scripted",
  small_model = "scripted/scripted",
})
local plain = {
  HOME = home,
  PWD = root, -- OpenCode takes its directory from $PWD
  XDG_DATA_HOME = home .. "/.local/share",
  XDG_CACHE_HOME = home .. "/.cache",
  OPENCODE_CONFIG_CONTENT = opencode_config,
  OPENCODE_DISABLE_MODELS_FETCH = "true",
  OPENCODE_DISABLE_AUTOUPDATE = "true",
  OPENCODE_DISABLE_LSP_DOWNLOAD = "true",
  PATH = vim.fs.dirname(opencode) .. ":" .. T.bin .. ":" .. vim.env.PATH,
  TOOLHOST_ACP_SENT_LOG = home .. "/acp-sent.jsonl", -- what the proxy sent, for failures
}
-- codecompanion's adapter env: a function per value (a plain string would be looked up
-- as an environment variable's name, or read as a file).
local env = {}
for name, v in pairs(plain) do
  env[name] = function()
    return v
  end
end
-- HOME is fresh: the chat below is submitted at once, so codecompanion starts two
-- agents (see the note in the chat test), and toolhost acp starts their two OpenCodes
-- one after the other (two first starts at once break OpenCode's new database:
-- "database is locked").

---The last messages the proxy sent (to codecompanion and to OpenCode).
local function sent_tail()
  local ok, lines = pcall(vim.fn.readfile, home .. "/acp-sent.jsonl")
  return ok and table.concat(vim.list_slice(lines, math.max(1, #lines - 6)), "\n"):sub(-3000)
    or "(nothing sent)"
end

require("toolhost").setup({ cmd = T.toolhost, trust = "trusted" })
require("codecompanion").setup({
  adapters = {
    acp = {
      toolhost_opencode = function()
        return require("toolhost.integrations.codecompanion").acp("opencode", {
          adapter = { env = env, defaults = { timeout = 120000 } },
        })
      end,
    },
  },
  interactions = { chat = { adapter = "toolhost_opencode" } },
  opts = { log_level = "ERROR" },
})

local function recorded()
  local out = vim.system({ "curl", "-s", model_url .. "/recorded" }, { text = true }):wait()
  return vim.json.decode(out.stdout)
end

local function names(request)
  return vim.tbl_map(function(tool)
    return tool["function"].name
  end, request.tools or {})
end

T.test("the adapter runs the agent through toolhost acp, by absolute path", function()
  local adapter = require("codecompanion.adapters").resolve("toolhost_opencode")
  local cmd = adapter.commands.default
  -- The README's snippet makes the adapter the chat below runs (the test adds its env).
  local readme = T.readme_snippet("codecompanion-acp").adapters.acp.toolhost_opencode()
  T.eq(readme.commands.default, cmd, "the README's adapter runs the same command")
  T.eq(cmd[1], T.bin .. "/toolhost", "toolhost by absolute path")
  T.eq(vim.list_slice(cmd, 2), { "acp", "--", "opencode", "acp" }, "the rest of the command")
  T.eq(adapter.type, "acp", "an ACP adapter")
  T.eq(adapter.formatted_name, "OpenCode (toolhost)", "its name")
end)

T.test("an ACP chat's two-hunk change is reviewed here, hunk by hunk", function()
  local chat = T.ok(require("codecompanion").chat(), "a chat buffer")
  chat:add_buf_message({ role = "user", content = "Capitalise lines 2 and 18" })
  chat:submit()
  local reviewed, ask = pcall(T.pending_review, function(ask)
    return ask.permission == "edit"
  end, "the review", 120000)
  T.ok(reviewed, "toolhost's review of the agent's change; the proxy sent:\n" .. sent_tail())
  T.eq(ask.files, { "greet.txt" }, "the file under review")
  T.eq(#ask.hunks, 2, "two hunks")
  T.eq(T.read(root .. "/greet.txt"), BEFORE, "nothing written before the answer")

  vim.cmd("Toolhost review")
  local review = require("toolhost.review")
  T.eq(vim.api.nvim_get_current_win(), review.window(), "in the review window")
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.api.nvim_feedkeys("]h]hr", "x", false)
  T.eq(review.queue[1].decisions, { ["greet.txt#2"] = false }, "the second hunk is rejected")
  vim.api.nvim_feedkeys("ga", "x", false)

  -- What the proxy sent codecompanion: the agent's answer and the end of the turn. The
  -- chat buffer is not checked. A chat opens its connection in the background, and a
  -- submit() before that is ready (as here, at once) starts a second agent on the same
  -- Connection (codecompanion v19's connect_and_authenticate has no in-progress guard):
  -- both toolhost acp share one request-id counter, writes go to the second, and when
  -- both coroutines send session/new the Connection keeps whichever answer came last, so
  -- the prompt can run in the other session, whose updates codecompanion then drops
  -- (sessionId ~= self.session_id) though end_turn arrives: nothing is rendered.
  local function to_client()
    local ok, lines = pcall(vim.fn.readfile, home .. "/acp-sent.jsonl")
    local found = {}
    for _, line in ipairs(ok and lines or {}) do
      local entry = vim.json.decode(line)
      if entry.to == "ACP client" then
        table.insert(found, entry.message)
      end
    end
    return found
  end
  local function answered()
    local text, ended = false, false
    for _, message in ipairs(to_client()) do
      local update = message.params and message.params.update
      if update and update.sessionUpdate == "agent_message_chunk" then
        text = text or update.content.text == "One of the two changes landed."
      end
      ended = ended or (message.result and message.result.stopReason == "end_turn")
    end
    return text and ended
  end
  local done = pcall(T.wait, answered, "the answer", 120000)
  T.ok(done, "the agent's answer and end_turn reached codecompanion; sent:\n" .. sent_tail())
  T.eq(T.read(root .. "/greet.txt"), BEFORE:gsub("line 02", "LINE 02"), "only hunk 1 landed")

  local requests = recorded().requests
  T.eq(#requests, 3, "model requests that offered tools")
  local offered = names(requests[1])
  for _, tool in ipairs({ "toolhost_multiedit", "toolhost_read", "toolhost_bash" }) do
    T.ok(vim.tbl_contains(offered, tool), tool .. " offered")
  end
  for _, own in ipairs({ "bash", "edit", "write", "read" }) do
    T.ok(not vim.tbl_contains(offered, own), "OpenCode's own " .. own .. " is not offered")
  end
  local told = vim.json.encode(requests[3].messages)
  T.contains(told, "Applied: greet.txt#1", "the model is told which hunk landed")
  T.contains(told, "Not applied: greet.txt#2", "and which did not")
end)

T.run()
