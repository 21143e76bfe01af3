---editor/lsp {method, params}: a read-only request answered by the user's own
---language servers (every client of the file except toolhost), for the `lsp` tool.
---Positions are converted between toolhost's offset encoding and each server's.
local config = require("toolhost.config")
local log = require("toolhost.log")
local util = require("toolhost.util")

local M = {}

-- Read-only requests only: the sidecar never gets to make the editor change text.
M.methods = {
  ["textDocument/definition"] = true,
  ["textDocument/declaration"] = true,
  ["textDocument/typeDefinition"] = true,
  ["textDocument/implementation"] = true,
  ["textDocument/references"] = true,
  ["textDocument/hover"] = true,
  ["textDocument/documentSymbol"] = true,
  ["workspace/symbol"] = true,
  ["textDocument/prepareCallHierarchy"] = true,
  ["callHierarchy/incomingCalls"] = true,
  ["callHierarchy/outgoingCalls"] = true,
}

local RANGE_KEYS = {
  range = true,
  selectionRange = true,
  targetRange = true,
  targetSelectionRange = true,
  originSelectionRange = true,
}

local function error_response(code, message)
  return nil, vim.lsp.rpc.rpc_response_error(code, message)
end

---The document a request is about: textDocument.uri, or a call hierarchy item's uri.
---@param params table
---@return string?
local function document_uri(params)
  return vim.tbl_get(params, "textDocument", "uri") or vim.tbl_get(params, "item", "uri")
end

---Converts positions between encodings, reading each file's lines once.
---@param from string
---@param to string
local function converter(from, to)
  local cache = {}
  local function lines_of(uri)
    if cache[uri] == nil then
      local fname = util.uri_to_fname(uri)
      local buf = fname and util.loaded_buffer(fname)
      if buf then
        cache[uri] = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      else
        local ok, lines = pcall(vim.fn.readfile, fname or "")
        cache[uri] = ok and lines or {}
      end
    end
    return cache[uri]
  end
  local function position(pos, uri)
    if type(pos) ~= "table" or type(pos.line) ~= "number" or type(pos.character) ~= "number" then
      return pos
    end
    local line = lines_of(uri)[pos.line + 1] or ""
    local byte = util.byte_index(line, pos.character, from)
    return { line = pos.line, character = util.char_index(line, byte, to) }
  end
  local function range(r, uri)
    if type(r) ~= "table" or type(r.start) ~= "table" then
      return r
    end
    return { start = position(r.start, uri), ["end"] = position(r["end"], uri) }
  end
  ---Walks a request's params or a result, converting every position and range.
  ---@param value any
  ---@param uri string? the document positions refer to, unless the value names its own
  ---@param origin string? the document of the request (for originSelectionRange, fromRanges)
  local function walk(value, uri, origin)
    if type(value) ~= "table" then
      return value
    end
    local here = value.uri or value.targetUri or uri
    if type(here) ~= "string" then
      here = uri
    end
    local out = {}
    for key, item in pairs(value) do
      if RANGE_KEYS[key] and here then
        out[key] = range(item, key == "originSelectionRange" and origin or here)
      elseif key == "position" and here then
        out[key] = position(item, here)
      elseif key == "fromRanges" and type(item) == "table" then
        -- incomingCalls: in the caller (`from`); outgoingCalls: in the request's item.
        local in_doc = vim.tbl_get(value, "from", "uri") or origin
        out[key] = vim.tbl_map(function(r)
          return range(r, in_doc)
        end, item)
      elseif key == "location" and type(item) == "table" then
        out[key] = walk(item, item.uri or here, origin)
      else
        out[key] = walk(item, here, origin)
      end
    end
    return setmetatable(out, getmetatable(value))
  end
  return walk
end

---Waits (yielding) until a language server that answers `method` is attached to `buf`
---and initialized, as long as some are still starting or the buffer was just loaded.
---@param buf integer
---@param method string
---@param just_loaded boolean
---@return vim.lsp.Client[]
local function clients_for(buf, method, just_loaded)
  local function ready()
    return vim.tbl_filter(function(client)
      return not util.is_toolhost(client) and util.supports_method(client, method, buf)
    end, vim.lsp.get_clients({ bufnr = buf }))
  end
  local function starting()
    for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf, _uninitialized = true })) do
      if not util.is_toolhost(client) and not client.initialized then
        return true
      end
    end
    return false
  end
  local found = ready()
  if #found > 0 or not (just_loaded or starting()) then
    return found
  end
  local timeout = config.options.lsp.attach_timeout
  local started = vim.uv.now()
  return util.await(function(done)
    local timer = assert(vim.uv.new_timer())
    timer:start(
      50,
      50,
      vim.schedule_wrap(function()
        if timer:is_closing() then
          return
        end
        local now = ready()
        local elapsed = vim.uv.now() - started
        -- A server started from FileType may take a moment to appear at all.
        local may_come = starting() or (just_loaded and elapsed < 500)
        if #now > 0 or not may_come or elapsed >= timeout then
          timer:stop()
          timer:close()
          done(now)
        end
      end)
    )
  end, timeout + 1000) or {}
end

---@param result any
---@return boolean
local function empty(result)
  return util.is_null(result) or (type(result) == "table" and vim.tbl_isempty(result))
end

---editor/lsp handler.
function M.request(_, params, ctx)
  if type(params) ~= "table" or type(params.method) ~= "string" then
    return error_response(
      vim.lsp.protocol.ErrorCodes.InvalidParams,
      "editor/lsp needs {method, params}"
    )
  end
  local method, request = params.method, params.params
  if not M.methods[method] then
    return error_response(
      vim.lsp.protocol.ErrorCodes.InvalidParams,
      ("editor/lsp answers read-only requests only, not %s"):format(method)
    )
  end
  if type(request) ~= "table" then
    return error_response(
      vim.lsp.protocol.ErrorCodes.InvalidParams,
      "editor/lsp needs params.params"
    )
  end
  local toolhost = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = toolhost and toolhost.offset_encoding or "utf-16"
  local uri = document_uri(request)

  local clients, buf
  if uri then
    local fname = util.uri_to_fname(uri)
    if not fname or vim.fn.filereadable(fname) ~= 1 then
      return error_response(
        vim.lsp.protocol.ErrorCodes.RequestFailed,
        ("no such file: %s"):format(uri)
      )
    end
    buf = util.loaded_buffer(fname)
    local just_loaded = buf == nil
    if not buf then
      require("toolhost.documents").open(nil, { uri = uri })
      buf = util.loaded_buffer(fname)
    end
    if not buf then
      return error_response(
        vim.lsp.protocol.ErrorCodes.RequestFailed,
        ("could not load %s"):format(fname)
      )
    end
    clients = clients_for(buf, method, just_loaded)
    if #clients == 0 then
      local ft = vim.bo[buf].filetype
      return error_response(
        vim.lsp.protocol.ErrorCodes.RequestFailed,
        ("No language server attached to %s (filetype %s) answers %s."):format(
          vim.fn.fnamemodify(fname, ":~:."),
          ft ~= "" and ft or "none",
          method
        )
      )
    end
  else
    clients = vim.tbl_filter(function(client)
      return not util.is_toolhost(client) and util.supports_method(client, method)
    end, vim.lsp.get_clients())
    if #clients == 0 then
      return error_response(
        vim.lsp.protocol.ErrorCodes.RequestFailed,
        ("No running language server answers %s."):format(method)
      )
    end
  end

  local answers = util.await(function(done)
    local results, pending = {}, #clients
    local stop_timer = util.after(config.options.lsp.timeout, function()
      done(results)
    end)
    for i, client in ipairs(clients) do
      local convert_in = client.offset_encoding ~= encoding
        and converter(encoding, client.offset_encoding)
      local sent = convert_in and convert_in(request, uri, uri) or request
      local ok = util.request(client, method, sent, function(err, result)
        if err then
          log.debug("editor/lsp %s via %s failed: %s", method, client.name, err.message)
        else
          results[i] = { client = client, result = result }
        end
        pending = pending - 1
        if pending == 0 then
          stop_timer()
          done(results)
        end
      end, buf)
      if not ok then
        pending = pending - 1
      end
    end
    if pending == 0 then
      stop_timer()
      done(results)
    end
  end, config.options.lsp.timeout + 1000) or {}

  -- The first server (in attach order) with something to say answers.
  for i = 1, #clients do
    local answer = answers[i]
    if answer and not empty(answer.result) then
      local client = answer.client
      if client.offset_encoding ~= encoding then
        return converter(client.offset_encoding, encoding)(answer.result, uri, uri)
      end
      return answer.result
    end
  end
  return vim.NIL
end

return M
