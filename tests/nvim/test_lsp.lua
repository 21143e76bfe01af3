-- The `lsp` tool answered by a real language server through editor/lsp
-- (jedi-language-server: ruff server has no go-to-definition).
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("lsp", {
  ["lib.py"] = "def helper():\n    return 42\n",
  ["main.py"] = "from lib import helper\n\nprint(helper())\n",
  ["wide.py"] = "from lib import helper\ns = 'ééé'; helper()\n",
})
vim.cmd.cd(root)
-- jedi is made to speak UTF-16 (toolhost speaks UTF-8 with Neovim), so positions
-- must be converted on the way in and out.
vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    local capabilities = vim.lsp.protocol.make_client_capabilities()
    capabilities.general.positionEncodings = { "utf-16" }
    vim.lsp.start({
      name = "jedi",
      cmd = { T.bin .. "/jedi-language-server" },
      root_dir = root,
      capabilities = capabilities,
    }, { bufnr = args.buf })
  end,
})
require("toolhost").setup({ cmd = T.toolhost, review = { enabled = false } })
local sidecar = T.client(root)

T.test("the lsp tool is listed for this client", function()
  local tools = T.ok(require("toolhost").list_sync(), "list")
  local ids = vim.tbl_map(function(tool)
    return tool.id
  end, tools)
  T.ok(vim.tbl_contains(ids, "lsp"), "lsp is listed: " .. table.concat(ids, ", "))
end)

T.test("goToDefinition through the lsp tool finds the definition (file not open before)", function()
  local main = root .. "/main.py"
  T.eq(vim.fn.bufloaded(main), 0, "main.py is not loaded")
  local result =
    T.run_tool("lsp", { operation = "goToDefinition", filePath = main, line = 3, character = 7 })
  T.eq(result.isError, false, "lsp isError: " .. tostring(result.output))
  T.contains(result.output, vim.uri_from_fname(root .. "/lib.py"))
  local found = result.metadata.result
  found = found[1] or found
  T.eq(found.uri or found.targetUri, vim.uri_from_fname(root .. "/lib.py"), "uri")
  local range = found.range or found.targetSelectionRange
  T.eq(range.start.line, 0, "line of def helper")
  T.eq(range.start.character, 4, "column of helper")
end)

T.test("hover and documentSymbol answer too", function()
  local hover = T.run_tool(
    "lsp",
    { operation = "hover", filePath = root .. "/main.py", line = 3, character = 7 }
  )
  T.eq(hover.isError, false, "hover isError: " .. tostring(hover.output))
  T.contains(hover.output, "helper")
  local symbols = T.run_tool(
    "lsp",
    { operation = "documentSymbol", filePath = root .. "/lib.py", line = 1, character = 1 }
  )
  T.eq(symbols.isError, false, "documentSymbol isError")
  T.contains(symbols.output, "helper")
end)

T.test("editor/lsp converts positions between toolhost's and the server's encodings", function()
  T.eq(sidecar.offset_encoding, "utf-8", "toolhost's encoding")
  local wide = root .. "/wide.py"
  local uri = vim.uri_from_fname(wide)
  -- "s = 'ééé'; helper()": helper is bytes 14-19 (UTF-8) but characters 11-16 (UTF-16).
  -- Byte 19 (its last letter) read as UTF-16 would be past the end of the line.
  local result, err = require("toolhost.lsp").request(nil, {
    method = "textDocument/definition",
    params = { textDocument = { uri = uri }, position = { line = 1, character = 19 } },
  }, { client_id = sidecar.id })
  T.eq(err, nil, "error")
  local jedi = vim.lsp.get_clients({ bufnr = vim.fn.bufnr(wide), name = "jedi" })[1]
  T.eq(jedi and jedi.offset_encoding, "utf-16", "jedi's encoding")
  local found = result[1] or result
  T.eq(found.uri or found.targetUri, vim.uri_from_fname(root .. "/lib.py"), "definition")
  -- And a result in the same file comes back in UTF-8: references of helper in wide.py.
  local refs = require("toolhost.lsp").request(nil, {
    method = "textDocument/references",
    params = {
      textDocument = { uri = uri },
      position = { line = 1, character = 14 },
      context = { includeDeclaration = false },
    },
  }, { client_id = sidecar.id })
  local in_wide = vim.tbl_filter(function(loc)
    return loc.uri == uri and loc.range.start.line == 1
  end, refs)
  T.eq(#in_wide, 1, "one reference on line 2 of wide.py: " .. vim.inspect(refs))
  T.eq(in_wide[1].range.start.character, 14, "UTF-8 column of the reference")
  T.eq(in_wide[1].range["end"].character, 20, "UTF-8 end column")
end)

T.test(
  "editor/lsp refuses a request that is not read-only, and says when no server answers",
  function()
    local _, err = require("toolhost.lsp").request(nil, {
      method = "textDocument/rename",
      params = {
        textDocument = { uri = vim.uri_from_fname(root .. "/lib.py") },
        position = { line = 0, character = 4 },
        newName = "x",
      },
    }, { client_id = sidecar.id })
    T.eq(err and err.code, vim.lsp.protocol.ErrorCodes.InvalidParams, "rename is refused")
    T.write(root .. "/notes.txt", "no language server here\n")
    local _, none = require("toolhost.lsp").request(nil, {
      method = "textDocument/definition",
      params = {
        textDocument = { uri = vim.uri_from_fname(root .. "/notes.txt") },
        position = { line = 0, character = 0 },
      },
    }, { client_id = sidecar.id })
    T.eq(none and none.code, vim.lsp.protocol.ErrorCodes.RequestFailed, "no server")
    T.contains(none.message, "No language server")
  end
)

T.run()
