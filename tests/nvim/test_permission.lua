-- Permission prompts: vim.ui.select with the four answers, the diff shown while
-- asking, and what each answer does to the file and to the tool's output.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("permission", {
  ["a.txt"] = "alpha\n",
  ["b.txt"] = "bravo\n",
  ["c.txt"] = "charlie\n",
})
vim.cmd.cd(root)

-- Edits of an existing file need a read of it first (as in OpenCode).
local function read_first(name)
  T.eq(T.run_tool("read", { filePath = root .. "/" .. name }).isError, false, "read " .. name)
end

require("toolhost").setup({
  cmd = T.toolhost,
  -- The default config allows edits; this makes every edit ask.
  config = { permission = { edit = "ask", bash = "ask" } },
})

T.test("the prompt offers the four answers and shows the diff while asking", function()
  local seen = T.answer_prompts(function()
    return "Allow once"
  end)
  read_first("a.txt")
  local result =
    T.run_tool("edit", { filePath = root .. "/a.txt", oldString = "alpha", newString = "ALPHA" })
  T.eq(result.isError, false, "edit isError: " .. tostring(result.output))
  T.eq(T.read(root .. "/a.txt"), "ALPHA\n", "the file after Allow once")
  T.eq(#seen, 1, "one prompt")
  local labels = seen[1].labels
  T.eq(#labels, 4, "four choices")
  T.eq(labels[1], "Allow once", "first choice")
  -- The pattern is the ask's `always` list: for edits OpenCode's is "*" (the session).
  T.ok(labels[2]:match("^Always allow %(.+%)$"), "second choice: " .. labels[2])
  T.eq({ labels[3], labels[4] }, { "Reject", "Reject with feedback…" }, "last choices")
  T.contains(seen[1].prompt, "edit")
  T.contains(seen[1].prompt, "a.txt")
  T.eq(#seen[1].diffs, 1, "one diff window while asking")
  T.contains(seen[1].diffs[1], "-alpha")
  T.contains(seen[1].diffs[1], "+ALPHA")
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    T.ok(
      vim.bo[vim.api.nvim_win_get_buf(win)].filetype ~= "diff",
      "the diff window is closed after the answer"
    )
  end
end)

T.test("the diff can be a float, or not shown", function()
  T.write(root .. "/f.txt", "float\n")
  read_first("f.txt")
  local options = require("toolhost.config").options
  options.permission.diff = "float"
  local seen = T.answer_prompts(function()
    return "Reject"
  end)
  T.run_tool("write", { filePath = root .. "/f.txt", content = "x\n" })
  T.eq(#seen[1].diffs, 1, "a diff window")
  T.eq(seen[1].floats, 1, "a float")
  options.permission.diff = false
  T.run_tool("write", { filePath = root .. "/f.txt", content = "y\n" })
  T.eq(#seen[2].diffs, 0, "no diff window")
  options.permission.diff = "split"
  T.eq(T.read(root .. "/f.txt"), "float\n", "rejected both times")
end)

T.test("Reject leaves the file untouched", function()
  T.answer_prompts(function()
    return "Reject"
  end)
  read_first("b.txt")
  local result = T.run_tool("write", { filePath = root .. "/b.txt", content = "overwritten\n" })
  T.eq(result.isError, true, "write isError")
  T.eq(result.metadata.error, "permission_rejected", "error kind")
  T.eq(T.read(root .. "/b.txt"), "bravo\n", "the file")
end)

T.test("Reject with feedback reaches the tool's output", function()
  local seen = T.answer_prompts(function()
    return "Reject with feedback…"
  end, "use uppercase BRAVO instead")
  local result =
    T.run_tool("edit", { filePath = root .. "/b.txt", oldString = "bravo", newString = "b" })
  T.eq(#seen, 1, "one prompt")
  T.eq(result.isError, true, "edit isError")
  T.eq(result.metadata.error, "permission_rejected", "error kind")
  T.contains(result.output, "use uppercase BRAVO instead")
  T.eq(T.read(root .. "/b.txt"), "bravo\n", "the file")
end)

T.test("a dismissed prompt is a rejection", function()
  T.answer_prompts(function()
    return nil
  end)
  read_first("c.txt")
  local result = T.run_tool("write", { filePath = root .. "/c.txt", content = "x\n" })
  T.eq(result.metadata.error, "permission_rejected", "error kind")
  T.eq(T.read(root .. "/c.txt"), "charlie\n", "the file")
end)

T.test("Always allow is remembered for the pattern", function()
  local seen = T.answer_prompts(function(items, opts)
    return opts.format_item(items[2])
  end)
  T.eq(
    T.run_tool("write", { filePath = root .. "/c.txt", content = "one\n" }).isError,
    false,
    "first write"
  )
  T.eq(
    T.run_tool("write", { filePath = root .. "/c.txt", content = "two\n" }).isError,
    false,
    "second write"
  )
  T.eq(#seen, 1, "asked once")
  T.eq(T.read(root .. "/c.txt"), "two\n", "the file")
end)

T.test("concurrent asks are shown one at a time", function()
  local open_prompts, most = 0, 0
  vim.ui.select = function(items, _, on_choice)
    open_prompts = open_prompts + 1
    most = math.max(most, open_prompts)
    vim.defer_fn(function()
      open_prompts = open_prompts - 1
      on_choice(items[1], 1)
    end, 50)
  end
  local outputs = {}
  for _, word in ipairs({ "first", "second" }) do
    require("toolhost").execute(
      "bash",
      { command = "echo " .. word, description = word },
      {},
      function(err, result)
        T.ok(not err and not result.isError, "bash " .. word)
        outputs[#outputs + 1] = vim.trim(result.output)
      end
    )
  end
  T.wait(function()
    return #outputs == 2
  end, "both commands")
  T.eq(most, 1, "prompts open at once")
  table.sort(outputs)
  T.eq(outputs, { "first", "second" }, "outputs")
end)

T.test("initializationOptions.editor says exactly what the plugin answers", function()
  local sent = T.client(root).config.init_options
  T.eq(sent.editor, {
    permissionAsk = true,
    applyEdit = true,
    diagnostics = true,
    openDocument = true,
    lsp = true,
    question = true,
    task = false,
  }, "editor flags")
end)

T.test("with permissionAsk off, the sidecar falls back to Neovim's showMessageRequest", function()
  require("toolhost").setup({
    cmd = T.toolhost,
    config = { permission = { edit = "ask", bash = "ask" } },
    editor = { permissionAsk = false },
  })
  vim.cmd("Toolhost restart")
  T.client(root)
  local seen = T.answer_prompts(function()
    return "Allow once"
  end)
  local result = T.run_tool("bash", { command = "echo fallback", description = "fallback" })
  T.eq(result.isError, false, "bash isError: " .. tostring(result.output))
  T.eq(#seen, 1, "one prompt")
  T.eq(seen[1].kind, "lsp_message", "Neovim's own window/showMessageRequest handler asked")
  T.eq(seen[1].labels, { "Allow once", "Always allow", "Reject" }, "the fallback's choices")
end)

T.run()
