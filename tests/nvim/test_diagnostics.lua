-- Diagnostics from a real language server (ruff server, attached to Python buffers
-- as a user's config would) in the output of an edit: only the errors it introduced.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("diagnostics", {
  ["hidden.py"] = "value = 1\nprint(missing_before)\n",
  ["shown.py"] = "value = 2\nprint(missing_before)\n",
  ["direct.py"] = "x = 'é'; print(nope)\n",
})
vim.cmd.cd(root)
T.python_server("ruff", root)
require("toolhost").setup({ cmd = T.toolhost, review = { enabled = false } })
T.client(root)

local function ruff_attached(path)
  local buf = vim.fn.bufnr(path)
  return buf > 0 and #vim.lsp.get_clients({ bufnr = buf, name = "ruff" }) > 0
end

local function undefined_names(diagnostics)
  local names = {}
  for _, d in ipairs(diagnostics or {}) do
    local name = (d.message or ""):match("Undefined name `([^`]+)`")
    if name then
      names[#names + 1] = name
    end
  end
  table.sort(names)
  return names
end

T.test(
  "an edit that introduces an undefined name reports it, and only it (file read, not shown)",
  function()
    local path = root .. "/hidden.py"
    local read = T.run_tool("read", { filePath = path })
    T.eq(read.isError, false, "read")
    -- The read prewarmed the file: ruff starts on it while the agent thinks.
    T.wait(function()
      return ruff_attached(path)
    end, "ruff to attach to the prewarmed buffer")
    T.eq(vim.fn.bufwinid(vim.fn.bufnr(path)), -1, "the buffer is in no window")
    local result = T.run_tool("edit", {
      filePath = path,
      oldString = "value = 1",
      newString = "value = brand_new_name",
    })
    T.eq(result.isError, false, "edit isError: " .. tostring(result.output))
    T.contains(result.output, "<diagnostics file=")
    T.contains(result.output, "brand_new_name")
    T.not_contains(result.output, "missing_before", "a pre-existing error is not repeated")
    local by_uri = result.metadata.diagnostics or {}
    local reported = by_uri[vim.uri_from_fname(path)]
    T.eq(undefined_names(reported), { "brand_new_name" }, "metadata.diagnostics")
    T.eq(reported[1].range.start, { line = 0, character = 8 }, "0-based LSP position")
    T.eq(T.read(path), "value = brand_new_name\nprint(missing_before)\n", "the disk")
  end
)

T.test("the same for a file open in a window", function()
  local path = root .. "/shown.py"
  vim.cmd.edit(path)
  T.wait(function()
    return ruff_attached(path)
  end, "ruff to attach")
  T.eq(T.run_tool("read", { filePath = path }).isError, false, "read")
  local result = T.run_tool(
    "edit",
    { filePath = path, oldString = "value = 2", newString = "value = other_new" }
  )
  T.eq(result.isError, false, "edit isError: " .. tostring(result.output))
  T.contains(result.output, "other_new")
  T.not_contains(result.output, "missing_before")
end)

T.test("an edit that adds no error reports none", function()
  local path = root .. "/shown.py"
  local result = T.run_tool(
    "edit",
    { filePath = path, oldString = "value = other_new", newString = "value = 3" }
  )
  T.eq(result.isError, false, "edit isError: " .. tostring(result.output))
  T.not_contains(result.output, "<diagnostics")
end)

T.test("editor/diagnostics pulls for a hidden buffer and converts to LSP positions", function()
  local path = root .. "/direct.py"
  require("toolhost.documents").open(nil, { uri = vim.uri_from_fname(path) })
  T.wait(function()
    return ruff_attached(path)
  end, "ruff to attach")
  local c = T.client(root)
  local answer = require("toolhost.diagnostics").collect(
    nil,
    { uris = { vim.uri_from_fname(path) }, waitMs = 3000 },
    { client_id = c.id }
  )
  T.eq(#answer.items, 1, "one item")
  local item = answer.items[1]
  T.eq(item.uri, vim.uri_from_fname(path), "uri")
  T.eq(undefined_names(item.diagnostics), { "nope" }, "names")
  local d = item.diagnostics[1]
  T.eq(d.severity, 1, "severity")
  T.eq(d.source, "Ruff", "source")
  T.eq(d.code, "F821", "code")
  -- "x = 'é'; print(" is 16 bytes and 15 characters: positions are in toolhost's encoding.
  local expected = c.offset_encoding == "utf-8" and 16 or 15
  T.eq(d.range.start, { line = 0, character = expected }, "start (" .. c.offset_encoding .. ")")
end)

T.test("a write of a new file reports the errors the language server finds in it", function()
  local path = root .. "/brand_new.py"
  local result = T.run_tool("write", { filePath = path, content = "print(not_defined_anywhere)\n" })
  T.eq(result.isError, false, "write isError: " .. tostring(result.output))
  T.contains(result.output, "not_defined_anywhere", "the new file's error in the output")
  T.ok(ruff_attached(path), "ruff runs on the new file")
end)

T.run()
