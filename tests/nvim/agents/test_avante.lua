-- avante.nvim (the real plugin, pinned) with toolhost's tools registered by
-- require("toolhost.integrations.avante").setup(). avante's chat needs its Rust
-- library, which cannot be built offline, so this drives its Lua directly:
-- llm_tools.get_tools (what a chat offers), llm_tools.process_tool_use (how a chat
-- runs a tool call, with its on_complete callback API) and the OpenAI provider's
-- transform_tool (the schema a chat sends).
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")
local plugins = assert(vim.env.TOOLHOST_NVIM_PLUGINS, "TOOLHOST_NVIM_PLUGINS is not set")
-- By name: avante's log module fills its number -> name table while iterating it with
-- pairs(), so a level given as a number is sometimes missing and its require fails
-- ("Invalid log level: 3", about one Neovim in several); the names are always there.
vim.g.avante = { log_level = "WARN" }
for _, name in ipairs({ "plenary.nvim", "nui.nvim", "avante.nvim" }) do
  vim.opt.runtimepath:append(plugins .. "/" .. name)
end

local root = T.project("avante", {
  ["notes.txt"] = "saved on disk\n",
  ["opencode.json"] = vim.json.encode({ permission = { edit = "ask" } }),
})
vim.cmd.cd(root)

-- Count tools/list requests, to prove lookups are served from the cache.
local toolhost = require("toolhost")
local lists = 0
local list = toolhost.list
toolhost.list = function(...)
  lists = lists + 1
  return list(...)
end
toolhost.setup({ cmd = T.toolhost, trust = "trusted" })
require("avante.config").setup({ provider = "openai" })
require("toolhost.integrations.avante").setup()

local llm_tools = require("avante.llm_tools")

local function find(name)
  for _, tool in ipairs(llm_tools.get_tools("", {})) do
    if tool.name == name then
      return tool
    end
  end
end

---process_tool_use as avante's chat calls it; waits for on_complete. `review`, if
---given, runs once the call has started: it answers toolhost's review of the call
---(as a person does in the review window) while the call waits for it.
local function use(name, input, review)
  local done, result, err = false, nil, nil
  local logs = {}
  local ret, ret_err = llm_tools.process_tool_use(llm_tools.get_tools("", {}), {
    id = "toolu_" .. name,
    name = name,
    input = input,
  }, {
    on_log = function(_, _, log)
      table.insert(logs, log)
    end,
    on_complete = function(r, e)
      done, result, err = true, r, e
    end,
  })
  T.eq(ret, nil, "process_tool_use answers through on_complete (result)")
  T.eq(ret_err, nil, "process_tool_use answers through on_complete (error)")
  if review then
    review()
  end
  T.wait(function()
    return done
  end, name .. " to complete", 30000)
  return result, err, logs
end

---The edit ask toolhost's review holds for notes.txt (the only one pending).
local function edit_review()
  local ask = T.pending_review(function(ask)
    return ask.permission == "edit"
  end, "toolhost's review of the edit")
  T.eq(#require("toolhost").pending(), 1, "asks pending")
  T.eq(ask.files, { "notes.txt" }, "the files under review")
  return ask
end

T.test("every toolhost tool is an avante custom tool, and lookups use the cache", function()
  T.wait(function()
    return find("toolhost_read") ~= nil
  end, "toolhost_read among avante's tools", 30000)
  local names = vim.tbl_map(function(tool)
    return tool.name
  end, llm_tools.get_tools("", {}))
  local ids = { "read", "edit", "write", "multiedit", "bash", "grep", "glob", "todowrite" }
  for _, id in ipairs(ids) do
    local name = "toolhost_" .. id
    T.ok(vim.tbl_contains(names, name), name .. " in " .. table.concat(names, ", "))
  end
  T.ok(vim.tbl_contains(names, "glob"), "avante's own tools are kept")
  local before = lists
  for _ = 1, 50 do
    llm_tools.get_tools("", {})
    llm_tools.get_tool_names()
  end
  T.eq(lists, before, "tools/list requests made by 50 lookups")
end)

T.test("the schema avante sends keeps enums, array items and nested objects", function()
  local openai = require("avante.providers.openai")
  local todo = openai:transform_tool(find("toolhost_todowrite"))
  local todos = todo["function"].parameters.properties.todos
  T.eq(todos.type, "array", "todos type")
  T.eq(todos.items.type, "object", "todos items type")
  local statuses = { "pending", "in_progress", "completed", "cancelled" }
  T.eq(todos.items.properties.status.enum, statuses, "status enum")
  T.ok(vim.tbl_contains(todos.items.required, "content"), "nested required")
  local multiedit = openai:transform_tool(find("toolhost_multiedit"))
  local edits = multiedit["function"].parameters.properties.edits
  T.eq(edits.items.properties.oldString.type, "string", "edits items")
  local encoded = vim.json.encode(openai:transform_tool(find("toolhost_todoread")))
  T.contains(encoded, '"properties":{}', "an empty object stays an object in JSON")
end)

T.test("process_tool_use runs toolhost_read on the unsaved buffer", function()
  vim.cmd.edit(root .. "/notes.txt")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "typed, not saved" })
  T.wait(function()
    return T.client(root) ~= nil
  end, "the client")
  local result, err, logs = use("toolhost_read", { filePath = root .. "/notes.txt" })
  T.eq(err, nil, "read error")
  T.contains(result, "1: typed, not saved")
  T.ok(#logs > 0, "on_log was called")
end)

T.test("an edit asks toolhost's review; a rejection reaches avante as the error", function()
  -- notes.txt's only line was typed over and not saved (the test above): the edit
  -- overlaps it, so accepting applies it in the editor only and the disk keeps its text
  -- (the user's unsaved work is never saved on the agent's behalf).
  local buf = vim.fn.bufnr(root .. "/notes.txt")
  T.eq(vim.bo[buf].modified, true, "notes.txt has unsaved changes")
  local shown
  local result, err = use("toolhost_edit", {
    filePath = root .. "/notes.txt",
    oldString = "not saved",
    newString = "reviewed",
  }, function()
    local ask = edit_review()
    T.eq(ask.unsaved, { { file = "notes.txt", overlaps = true, lines = { { 1, 1 } } } })
    shown = T.review_keys("ga")
  end)
  T.contains(shown, "-typed, not saved", "the review showed the change")
  T.contains(shown, "+typed, reviewed", "the review showed the change")
  T.contains(shown, "overlaps your unsaved lines; chosen: the editor only", "the review said")
  T.eq(err, nil, "edit error")
  T.contains(result, "Edit applied successfully.")
  T.contains(result, "was applied in the editor only", "the model is told")
  T.eq(#require("toolhost").pending(), 0, "nothing left to review")
  T.eq(T.buf_text(buf), "typed, reviewed\n", "the buffer")
  T.eq(vim.bo[buf].modified, true, "the buffer is still unsaved")
  T.eq(T.read(root .. "/notes.txt"), "saved on disk\n", "the file (not saved for the user)")

  -- gr asks for a reason for the model (vim.ui.input, answered as an input plugin
  -- would: typed-ahead keys after "gr" would run Neovim's own gr… mappings instead).
  T.answer_prompts(function() end, "not this way")
  local rejected, why = use("toolhost_edit", {
    filePath = root .. "/notes.txt",
    oldString = "reviewed",
    newString = "changed",
  }, function()
    edit_review()
    T.review_keys("gr")
  end)
  T.eq(rejected, nil, "no result for a rejected edit")
  T.contains(why, "rejected")
  T.contains(why, "not this way", "the person's reason reaches avante")
  T.eq(T.buf_text(buf), "typed, reviewed\n", "the buffer unchanged")
  T.eq(T.read(root .. "/notes.txt"), "saved on disk\n", "the file unchanged")
end)

T.test("a new custom tool appears in avante after tools/listChanged", function()
  -- New tool code waits for a person's yes in the review (security: an agent's file
  -- cannot widen what the agent may do), then loads and reaches avante.
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
  local ask = T.pending_review(function(ask)
    return ask.permission == "config"
  end, "toolhost's review of the new tool file")
  T.contains(ask.title, "New or changed custom tool files: .opencode/tools/shout.py")
  T.eq(#require("toolhost").pending(), 1, "asks pending")
  T.eq(find("toolhost_shout"), nil, "not loaded before the person says yes")
  T.review_keys("ga")
  T.wait(function()
    return find("toolhost_shout") ~= nil
  end, "toolhost_shout among avante's tools", 30000)
  local result, err = use("toolhost_shout", { word = "hey" })
  T.eq(err, nil, "shout error")
  T.eq(result, "HEY", "shout result")
end)

T.test("acp() is an acp_providers entry that runs the agent through toolhost acp", function()
  local avante = require("toolhost.integrations.avante")
  local entry = avante.acp("opencode")
  local readme = T.readme_snippet("avante-acp").acp_providers["toolhost-opencode"]
  T.eq(readme, entry, "the README's entry is this one")
  T.eq(entry.command, T.bin .. "/toolhost", "toolhost by absolute path")
  T.eq(entry.args, { "acp", "--", "opencode", "acp" }, "then the agent avante runs")
  local codex = avante.acp("codex", { review = false, provider = { env = { A = "1" } } })
  T.eq(codex.args, { "acp", "--no-review", "--", "codex-acp" }, "codex, unreviewed")
  T.eq({ codex.env.NODE_NO_WARNINGS, codex.env.A }, { "1", "1" }, "avante's env and yours")
  T.eq(pcall(avante.acp, "nobody"), false, "an agent avante does not know needs a command")
  local config = require("avante.config")
  config.setup({ provider = "toolhost-opencode", acp_providers = { ["toolhost-opencode"] = entry } })
  T.eq(config.acp_providers["toolhost-opencode"].args, entry.args, "avante took the entry")
  T.eq(config.acp_providers.opencode.command, "opencode", "its own entries stay")
end)

T.run()
