-- codecompanion.nvim v19 (the real plugin, pinned) with toolhost's tools registered
-- by require("toolhost.integrations.codecompanion").setup(), chatting with the
-- scripted OpenAI-compatible model that tests/nvim/test_agent_plugins.py serves on
-- 127.0.0.1 ($TOOLHOST_SCRIPTED_MODEL): the model calls toolhost_read, then
-- toolhost_edit, then answers; each tool result must reach it in the next request.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")
local plugins = assert(vim.env.TOOLHOST_NVIM_PLUGINS, "TOOLHOST_NVIM_PLUGINS is not set")
local model_url = assert(vim.env.TOOLHOST_SCRIPTED_MODEL, "TOOLHOST_SCRIPTED_MODEL is not set")
for _, name in ipairs({ "plenary.nvim", "codecompanion.nvim" }) do
  vim.opt.runtimepath:append(plugins .. "/" .. name)
end
vim.cmd("runtime! plugin/codecompanion.lua")

local root = T.project("codecompanion", {
  ["greet.py"] = "def greet():\n    return 'hi'\n",
  ["opencode.json"] = vim.json.encode({ permission = { edit = "ask" } }),
})
vim.cmd.cd(root)

require("toolhost").setup({ cmd = T.toolhost, trust = "trusted" })
require("codecompanion").setup({
  adapters = {
    http = {
      scripted = function()
        return require("codecompanion.adapters").extend("openai_compatible", {
          name = "scripted",
          env = { url = model_url, api_key = "not-needed", chat_url = "/v1/chat/completions" },
          schema = { model = { default = "scripted" } },
        })
      end,
    },
  },
  interactions = { chat = { adapter = "scripted" } },
  opts = { log_level = "ERROR" },
})
require("toolhost.integrations.codecompanion").setup()

local function recorded()
  local out = vim.system({ "curl", "-s", model_url .. "/recorded" }, { text = true }):wait()
  return vim.json.decode(out.stdout)
end

local function tool_results(request)
  local found = {}
  for _, message in ipairs(request.messages or {}) do
    if message.role == "tool" then
      local content = message.content
      table.insert(found, type(content) == "string" and content or vim.json.encode(content))
    end
  end
  return found
end

T.test("every toolhost tool is registered, with the group toolhost", function()
  local tools_config = require("codecompanion.config").interactions.chat.tools
  T.wait(function()
    return tools_config.toolhost_read ~= nil
  end, "toolhost_read in codecompanion's tools", 30000)
  local group = T.ok(tools_config.groups.toolhost, "the toolhost group")
  for _, id in ipairs({ "read", "edit", "write", "bash", "grep", "todowrite" }) do
    T.ok(vim.tbl_contains(group.tools, "toolhost_" .. id), "toolhost_" .. id .. " in the group")
  end
  local tools = require("codecompanion.interactions.chat.tools")
  local resolved = tools.resolve(tools_config.toolhost_todowrite)
  T.eq(resolved.schema["function"].name, "toolhost_todowrite", "top-level schema")
  T.eq(type(resolved.cmds[1]), "function", "cmds are functions")
end)

T.test("a chat calls toolhost_read and toolhost_edit and gets the results back", function()
  local chat = require("codecompanion").chat()
  T.ok(chat, "a chat buffer")
  chat.tool_registry:add("toolhost")
  chat:add_buf_message({ role = "user", content = "Make greet() say hello" })
  chat:submit()
  -- The model's toolhost_edit waits in toolhost's review; the person accepts it there.
  local ask = T.pending_review(function(ask)
    return ask.permission == "edit"
  end, "toolhost's review of the chat's edit", 60000)
  T.eq(#require("toolhost").pending(), 1, "asks pending (the read needs none)")
  T.eq(ask.files, { "greet.py" }, "the files under review")
  T.eq(ask.unsaved, nil, "greet.py is not open with unsaved changes")
  T.eq(T.read(root .. "/greet.py"), "def greet():\n    return 'hi'\n", "nothing written yet")
  local shown = T.review_keys("ga")
  T.contains(shown, "+    return 'hello'", "the review showed the change")
  T.wait(function()
    local text = table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
    return text:find("The greeting now says hello.", 1, true) ~= nil
  end, "the model's final answer in the chat", 60000)
  T.eq(T.read(root .. "/greet.py"), "def greet():\n    return 'hello'\n", "the file")
  T.eq(#require("toolhost").pending(), 0, "nothing left to review")
  -- The person's chat shows one line per result; the model gets the whole output.
  local shown_chat = table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
  T.not_contains(shown_chat, "<content>", "no raw read output in the chat")
  T.not_contains(shown_chat, "<path>", "no raw read output in the chat")
  T.contains(shown_chat, "**toolhost_read**: `greet.py`", "the read, in one line")
  T.contains(shown_chat, "**toolhost_edit**: `greet.py`", "the edit, in one line")

  local requests = recorded().requests
  T.eq(#requests, 3, "chat requests that offered tools")
  local read_results = tool_results(requests[2])
  T.contains(read_results[#read_results], "2:     return 'hi'", "the read result reached the model")
  local edit_results = tool_results(requests[3])
  local edited = edit_results[#edit_results]
  T.contains(edited, "Edit applied successfully.", "the edit result reached the model")

  local sent = {}
  for _, tool in ipairs(requests[1].tools) do
    sent[tool["function"].name] = tool["function"].parameters
  end
  local todos = T.ok(sent.toolhost_todowrite, "toolhost_todowrite was sent").properties.todos
  local statuses = { "pending", "in_progress", "completed", "cancelled" }
  T.eq(todos.items.properties.status.enum, statuses, "enum kept")
  local edits = sent.toolhost_multiedit.properties.edits
  T.eq(edits.items.properties.oldString.type, "string", "items kept")
  T.eq(vim.json.encode(sent.toolhost_todoread.properties), "{}", "an empty object stays an object")
end)

T.test("a new custom tool joins codecompanion's tools after tools/listChanged", function()
  -- New tool code waits for a person's yes in the review (security: an agent's file
  -- cannot widen what the agent may do), then loads and reaches codecompanion.
  T.write(
    root .. "/.opencode/tools/shout.py",
    table.concat({
      "from pydantic import BaseModel, Field",
      "from tools import tool",
      "",
      "class Args(BaseModel):",
      '    word: str = Field(description="what to shout")',
      "",
      "async def run(args, ctx):",
      "    return args.word.upper()",
      "",
      'default = tool(description="Shouts a word", args=Args, execute=run)',
      "",
    }, "\n")
  )
  local tools_config = require("codecompanion.config").interactions.chat.tools
  local ask = T.pending_review(function(ask)
    return ask.permission == "config"
  end, "toolhost's review of the new tool file")
  T.contains(ask.title, "New or changed custom tool files: .opencode/tools/shout.py")
  T.eq(#require("toolhost").pending(), 1, "asks pending")
  T.eq(tools_config.toolhost_shout, nil, "not loaded before the person says yes")
  T.review_keys("ga")
  T.wait(function()
    return tools_config.toolhost_shout ~= nil
  end, "toolhost_shout in codecompanion's tools", 30000)
  T.ok(vim.tbl_contains(tools_config.groups.toolhost.tools, "toolhost_shout"), "in the group")
  local tool = require("codecompanion.interactions.chat.tools").resolve(tools_config.toolhost_shout)
  local output
  tool.cmds[1](tool, { word = "hey" }, {
    output_cb = function(result)
      output = result
    end,
  })
  T.wait(function()
    return output ~= nil
  end, "the shout call", 30000)
  T.eq(output.status, "success", "output_cb's status")
  T.eq(output.data.for_llm, "HEY", "what the model reads")
  T.eq(output.data.for_user, "**toolhost_shout**: HEY", "the line the chat shows")
end)

T.run()
