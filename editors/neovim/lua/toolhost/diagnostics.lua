---editor/diagnostics {uris, waitMs}: what the user's language servers report for
---those files once they have caught up with the latest change, as LSP diagnostics.
---
---Pull servers (textDocument/diagnostic, e.g. ruff): Neovim 0.11 only pulls for
---buffers shown in a window, but the files an agent reads and edits are mostly
---hidden. So this module also pulls for hidden buffers when a server attaches and
---after each change, and editor/diagnostics asks again directly (after the pending
---changes are flushed) when the last answer is for older text: even with waitMs 0,
---up to a second, because a baseline taken from stale results would make old
---errors look new. Push-only servers: the handler waits for a DiagnosticChanged on
---the buffer after its latest change. Never longer than waitMs (or that second);
---the handler yields meanwhile, so the editor stays responsive.
local log = require("toolhost.log")
local util = require("toolhost.util")

local M = {}

---@type table<integer, integer> buffer -> its LSP version when diagnostics last arrived (not from our pulls)
local reported = {}
---@type table<integer, table<integer, integer>> buffer -> client id -> version its last pull answered
local pulled = {}
-- How long a waitMs-0 call may still take to refresh stale pull results.
local BASELINE_PULL_MS = 1000
local pulling = 0
local watchers = {} ---@type table<integer, fun()[]> buffer -> callbacks for the next DiagnosticChanged

function M.setup(group)
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    group = group,
    desc = "toolhost: note when a buffer's diagnostics arrive",
    callback = function(args)
      local buf = args.buf
      if pulling == 0 then
        reported[buf] = vim.lsp.util.buf_versions[buf]
      end
      local callbacks = watchers[buf]
      if callbacks then
        watchers[buf] = nil
        for _, cb in ipairs(callbacks) do
          cb()
        end
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    callback = function(args)
      reported[args.buf] = nil
      pulled[args.buf] = nil
      watchers[args.buf] = nil
    end,
  })
  -- Pull for hidden buffers too (Neovim pulls only for buffers in a window).
  vim.api.nvim_create_autocmd("LspAttach", {
    group = group,
    desc = "toolhost: pull diagnostics for hidden buffers",
    callback = function(args)
      M.pull_hidden(args.buf, args.data and args.data.client_id)
    end,
  })
  vim.api.nvim_create_autocmd("LspNotify", {
    group = group,
    desc = "toolhost: pull diagnostics for hidden buffers after a change",
    callback = function(args)
      local method = args.data and args.data.method
      if method == "textDocument/didChange" or method == "textDocument/didOpen" then
        M.pull_hidden(args.buf, args.data.client_id)
      end
    end,
  })
end

---@param client vim.lsp.Client
---@param buf integer
---@return boolean
local function pulls(client, buf)
  return util.supports_method(client, "textDocument/diagnostic", buf)
end

---Language servers other than toolhost attached to `buf`.
---@param buf integer
---@return vim.lsp.Client[]
local wait_attach

local function other_clients(buf)
  return vim.tbl_filter(function(client)
    return not util.is_toolhost(client)
  end, vim.lsp.get_clients({ bufnr = buf }))
end

---Whether a language server is about to attach to `buf`: one is still starting, or
---one serves its filetype (by its config, or by the buffers it has).
---@param buf integer
---@return boolean
local function server_coming(buf)
  local ft = vim.bo[buf].filetype
  if ft == "" then
    return false
  end
  for _, client in ipairs(vim.lsp.get_clients()) do
    if not util.is_toolhost(client) and not client.attached_buffers[buf] then
      local filetypes = client.config and client.config.filetypes
      if not client.initialized or (filetypes and vim.tbl_contains(filetypes, ft)) then
        return true
      end
      for other in pairs(client.attached_buffers) do
        if vim.api.nvim_buf_is_valid(other) and vim.bo[other].filetype == ft then
          return true
        end
      end
    end
  end
  return false
end

---Waits (up to `ms`) until the language servers about to attach to `uris`' buffers
---(a new file the sidecar just had loaded) have attached.
---@param uris string[]
---@param ms integer
wait_attach = function(uris, ms)
  local waiting = {}
  for _, uri in ipairs(uris) do
    local fname = util.uri_to_fname(uri)
    local buf = fname and util.loaded_buffer(fname)
    if buf and #other_clients(buf) == 0 and server_coming(buf) then
      waiting[#waiting + 1] = buf
    end
  end
  if #waiting == 0 or ms <= 0 then
    return
  end
  util.await(function(done)
    local stop_timer, autocmd
    local function attached()
      for _, buf in ipairs(waiting) do
        if vim.api.nvim_buf_is_valid(buf) and #other_clients(buf) == 0 then
          return false
        end
      end
      return true
    end
    local function finish()
      if stop_timer then
        stop_timer()
      end
      if autocmd then
        pcall(vim.api.nvim_del_autocmd, autocmd)
        autocmd = nil
      end
      done()
    end
    autocmd = vim.api.nvim_create_autocmd("LspAttach", {
      callback = function()
        if attached() then
          vim.schedule(finish)
        end
      end,
    })
    stop_timer = util.after(ms, finish)
  end)
end

---Asks every pull server of `buf` for fresh diagnostics; `done()` when all answered.
---@param buf integer
---@param clients vim.lsp.Client[]
---@param done fun()
local function pull(buf, clients, done)
  local pending = #clients
  if pending == 0 then
    return done()
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) } }
  local version = vim.lsp.util.buf_versions[buf]
  for _, client in ipairs(clients) do
    local ok = util.request(client, "textDocument/diagnostic", params, function(err, result, ctx)
      if not err then
        pulled[buf] = pulled[buf] or {}
        pulled[buf][client.id] = math.max(pulled[buf][client.id] or -1, version)
      end
      local handler = client.handlers["textDocument/diagnostic"]
        or vim.lsp.handlers["textDocument/diagnostic"]
      pulling = pulling + 1
      local handled, handler_err = pcall(handler, err, result, ctx)
      pulling = pulling - 1
      if not handled then
        log.warn("textDocument/diagnostic from %s failed: %s", client.name, handler_err)
      end
      pending = pending - 1
      if pending == 0 then
        done()
      end
    end, buf)
    if not ok then
      pending = pending - 1
    end
  end
  if pending == 0 then
    done()
  end
end

---Whether a pull server's last answer for `buf` is for its current text.
---@param buf integer
---@param client vim.lsp.Client
---@return boolean
local function pulled_current(buf, client)
  local version = pulled[buf] and pulled[buf][client.id]
  return version ~= nil and version >= vim.lsp.util.buf_versions[buf]
end

---Pulls diagnostics for `buf` if no window shows it (Neovim handles shown buffers).
---@param buf integer
---@param client_id? integer only this client
function M.pull_hidden(buf, client_id)
  if not vim.api.nvim_buf_is_loaded(buf) or #vim.fn.win_findbuf(buf) > 0 then
    return
  end
  local clients = vim.tbl_filter(function(client)
    return (client_id == nil or client.id == client_id)
      and not util.is_toolhost(client)
      and pulls(client, buf)
  end, vim.lsp.get_clients({ bufnr = buf }))
  if #clients > 0 then
    pull(buf, clients, function() end)
  end
end

---Waits until push servers have reported on `buf` after its latest change.
---@param buf integer
---@param done fun()
local function await_push(buf, done)
  local function fresh()
    return (reported[buf] or -1) >= vim.lsp.util.buf_versions[buf]
  end
  if fresh() then
    return done()
  end
  local function check()
    if fresh() then
      done()
    else
      watchers[buf] = watchers[buf] or {}
      table.insert(watchers[buf], check)
    end
  end
  check()
end

---Names of the diagnostic namespaces toolhost itself owns (never reported back).
---@param namespace integer
---@return boolean
local function own_namespace(namespace)
  local meta = vim.diagnostic.get_namespaces()[namespace]
  local name = meta and meta.name or ""
  return name:match("^vim%.lsp%.toolhost%.") ~= nil
end

---A vim.Diagnostic as an LSP Diagnostic, positions in `encoding`.
---@param d vim.Diagnostic
---@param buf integer
---@param encoding string
---@return table
function M.to_lsp(d, buf, encoding)
  local file_lines ---@type string[]?
  local function line_text(lnum)
    if vim.api.nvim_buf_is_loaded(buf) then
      return vim.api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1] or ""
    end
    if not file_lines then
      local ok, lines = pcall(vim.fn.readfile, vim.api.nvim_buf_get_name(buf))
      file_lines = ok and lines or {}
    end
    return file_lines[lnum + 1] or ""
  end
  local function position(lnum, col)
    col = col or 0
    if encoding ~= "utf-8" then
      col = util.char_index(line_text(lnum), col, encoding)
    end
    return { line = lnum, character = col }
  end
  local original = vim.tbl_get(d, "user_data", "lsp") or {}
  local code = d.code
  if code == nil then
    code = original.code
  end
  local diagnostic = {
    range = {
      start = position(d.lnum, d.col),
      ["end"] = position(d.end_lnum or d.lnum, d.end_col or d.col),
    },
    -- vim.diagnostic.severity and LSP's DiagnosticSeverity number alike (1 = error).
    severity = d.severity,
    message = d.message,
    source = d.source,
    code = code,
    codeDescription = original.codeDescription,
  }
  if type(original.tags) == "table" and #original.tags > 0 then
    diagnostic.tags = original.tags
  end
  return diagnostic
end

---editor/diagnostics handler.
---@return {items: {uri: string, diagnostics: table[]}[]}
function M.collect(_, params, ctx)
  params = type(params) == "table" and params or {}
  local uris = type(params.uris) == "table" and params.uris or {}
  local wait_ms = tonumber(params.waitMs) or 3000
  local toolhost = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = toolhost and toolhost.offset_encoding or "utf-16"

  -- After a change (waitMs > 0): a new file the sidecar just had loaded
  -- (editor/openDocument) waits for the language servers starting on it.
  if wait_ms > 0 then
    wait_attach(uris, math.min(wait_ms, require("toolhost.config").options.lsp.attach_timeout))
  end

  local targets = {} ---@type {uri: string, buf: integer?}[]
  for _, uri in ipairs(uris) do
    local fname = util.uri_to_fname(uri)
    local known = fname and vim.fn.bufnr(fname) or -1
    targets[#targets + 1] = {
      uri = uri,
      buf = fname and util.loaded_buffer(fname),
      -- A file that is not loaded can still hold diagnostics a server pushed for it.
      known = known > 0 and known or nil,
    }
  end

  -- A baseline (waitMs 0) still refreshes pull results that are for older text.
  local bound = wait_ms
  if wait_ms <= 0 then
    bound = BASELINE_PULL_MS
  end
  if bound > 0 then
    util.await(function(done)
      local pending = 1
      local stop_timer
      local function one_done()
        pending = pending - 1
        if pending == 0 then
          if stop_timer then
            stop_timer()
          end
          done()
        end
      end
      for _, target in ipairs(targets) do
        local buf = target.buf
        local clients = buf and other_clients(buf) or {}
        local pullers = vim.tbl_filter(function(c)
          return pulls(c, buf)
        end, clients)
        local push_only = #clients > #pullers
        if wait_ms <= 0 then
          pullers = vim.tbl_filter(function(c)
            return not pulled_current(buf, c)
          end, pullers)
          push_only = false
        end
        if #pullers > 0 then
          pending = pending + 1
          pull(buf, pullers, one_done)
        end
        if push_only then
          pending = pending + 1
          await_push(buf, one_done)
        end
      end
      stop_timer = util.after(bound, done) -- the bound: whatever has arrived by then is the answer
      one_done()
    end, bound + 100)
  end

  local items = {}
  for _, target in ipairs(targets) do
    local diagnostics = {}
    local buf = target.buf or target.known
    if buf and vim.api.nvim_buf_is_valid(buf) then
      for _, d in ipairs(vim.diagnostic.get(buf)) do
        if not own_namespace(d.namespace) then
          diagnostics[#diagnostics + 1] = M.to_lsp(d, buf, encoding)
        end
      end
    end
    items[#items + 1] = { uri = target.uri, diagnostics = diagnostics }
  end
  return { items = items }
end

return M
