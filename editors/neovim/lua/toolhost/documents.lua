---Buffers as the sidecar needs them: editor/openDocument (load a file so language
---servers start on it), workspace/applyEdit (Neovim's own handler, guarded) and
---editor/saveDocuments (write the buffers an edit changed).
local config = require("toolhost.config")
local log = require("toolhost.log")
local util = require("toolhost.util")

local M = {}

---@param fname string
---@return {sec: integer, nsec: integer, size: integer}?
local function stat(fname)
  local st = vim.uv.fs_stat(fname)
  return st and { sec = st.mtime.sec, nsec = st.mtime.nsec, size = st.size } or nil
end

---Remembers when a buffer was last read or written, so an edit can tell a clean
---buffer that is older than its file (something else wrote the file since).
---@param buf integer
function M.track(buf)
  if vim.b[buf].toolhost_disk == nil then
    M.remember(buf)
  end
end

---@param buf integer
function M.remember(buf)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local fname = vim.api.nvim_buf_get_name(buf)
  vim.b[buf].toolhost_disk = fname ~= "" and stat(fname) or false
end

---Whether a buffer without unsaved changes no longer matches its file.
---@param buf integer
---@return boolean
local function stale(buf)
  local known = vim.b[buf].toolhost_disk
  if vim.bo[buf].modified or type(known) ~= "table" then
    return false
  end
  local now = stat(vim.api.nvim_buf_get_name(buf))
  return now ~= nil and (now.sec ~= known.sec or now.nsec ~= known.nsec or now.size ~= known.size)
end

---editor/openDocument {uri}: load the file into a hidden, unlisted buffer (filetype
---detected), so the user's language servers attach before the agent edits it.
---@return table
function M.open(_, params)
  local fname = util.uri_to_fname(type(params) == "table" and params.uri or nil)
  if not fname or vim.fn.filereadable(fname) ~= 1 then
    return vim.empty_dict()
  end
  local buf = vim.fn.bufadd(fname)
  if not vim.api.nvim_buf_is_loaded(buf) then
    -- bufload never prompts about a swap file; BufReadPost runs filetype detection
    -- (and so FileType, which starts language servers) and attaches toolhost.
    local ok, err = pcall(vim.fn.bufload, buf)
    if not ok then
      log.warn("could not load %s for the language servers: %s", fname, err)
      return vim.empty_dict()
    end
    if vim.bo[buf].filetype == "" then
      local ft = vim.filetype.match({ buf = buf })
      if ft then
        vim.bo[buf].filetype = ft
      end
    end
    log.debug("loaded %s (buffer %d, filetype %s)", fname, buf, vim.bo[buf].filetype)
  end
  return vim.empty_dict()
end

---@param edit table lsp.WorkspaceEdit
---@return {buf: integer?, fname: string, version: integer?}[]
local function edited_documents(edit)
  local docs = {}
  for _, change in ipairs(type(edit.documentChanges) == "table" and edit.documentChanges or {}) do
    local doc = type(change) == "table" and change.textDocument
    local fname = doc and util.uri_to_fname(doc.uri)
    if fname then
      local version = not util.is_null(doc.version) and doc.version or nil
      docs[#docs + 1] = { buf = util.loaded_buffer(fname), fname = fname, version = version }
    end
  end
  for uri in pairs(type(edit.changes) == "table" and edit.changes or {}) do
    local fname = util.uri_to_fname(uri)
    if fname then
      docs[#docs + 1] = { buf = util.loaded_buffer(fname), fname = fname }
    end
  end
  return docs
end

---While the user is in insert mode in a buffer the edit changes, the edit waits until
---they leave it: landing mid-insert would cut their typing into two undo steps (Neovim
---closes the undo block around a change made from outside). If they typed meanwhile,
---the version check below refuses the edit and the sidecar makes it again on the new
---text (server/editor_writes.py).
---@param edit table lsp.WorkspaceEdit
function M.wait_for_insert(edit)
  local function typing()
    local mode = vim.api.nvim_get_mode().mode
    if not (mode:sub(1, 1) == "i" or mode:sub(1, 1) == "R") then
      return nil
    end
    local current = vim.api.nvim_get_current_buf()
    for _, doc in ipairs(edited_documents(edit)) do
      if doc.buf == current then
        return doc
      end
    end
  end
  local doc = typing()
  if not doc then
    return
  end
  log.info("an edit of %s waits until you leave insert mode", doc.fname)
  util.await(function(done)
    vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, { once = true, callback = done })
  end)
end

---An edit that ends at the position after a buffer's final newline (line = line count,
---character 0: the end of the document in LSP) is made to end at the end of the last line
---instead: Neovim's handler adds an empty line for it ("a\nb\n" + "c\n" at 2:0 gives
---a, b, c and ""), so an agent appending a line would leave a blank one behind.
---@param edit table lsp.WorkspaceEdit
---@param encoding string the client's offset encoding
local function end_at_last_line(edit, encoding)
  local function fix(buf, edits)
    local count = vim.api.nvim_buf_line_count(buf)
    if count == 0 or not vim.bo[buf].eol then
      return
    end
    local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
    local finish = { line = count - 1, character = vim.str_utfindex(last, encoding) }
    for _, e in ipairs(type(edits) == "table" and edits or {}) do
      local range, text = type(e) == "table" and e.range, type(e) == "table" and e.newText
      if
        type(range) == "table"
        and type(text) == "string"
        and text:sub(-1) == "\n"
        and range["end"].line == count
        and range["end"].character == 0
      then
        text = text:sub(1, -2)
        if range.start.line >= count then
          range.start, text = finish, "\n" .. text
        end
        e.range = { start = range.start, ["end"] = finish }
        e.newText = text
      end
    end
  end
  for _, change in ipairs(type(edit.documentChanges) == "table" and edit.documentChanges or {}) do
    local fname = type(change) == "table"
      and change.textDocument
      and util.uri_to_fname(change.textDocument.uri)
    local buf = fname and util.loaded_buffer(fname)
    if buf then
      fix(buf, change.edits)
    end
  end
  for uri, edits in pairs(type(edit.changes) == "table" and edit.changes or {}) do
    local fname = util.uri_to_fname(uri)
    local buf = fname and util.loaded_buffer(fname)
    if buf then
      fix(buf, edits)
    end
  end
end

---workspace/applyEdit: Neovim's own handler (the client's offset encoding, one undo
---step, cursor and marks kept), after two checks it does not make: a versioned edit
---for a buffer that changed since is refused (Neovim would only print a message and
---report success), and so is an edit of a clean buffer whose file changed on disk
---behind its back (the buffer is reloaded first, so the next attempt sees the file).
---@return table lsp.ApplyWorkspaceEditResult
function M.apply_edit(err, params, ctx)
  local edit = type(params) == "table" and params.edit
  if type(edit) ~= "table" then
    return {
      applied = false,
      failureReason = "workspace/applyEdit needs params.edit (a WorkspaceEdit)",
    }
  end
  M.wait_for_insert(edit)
  for _, doc in ipairs(edited_documents(edit)) do
    if doc.buf then
      local current = vim.lsp.util.buf_versions[doc.buf]
      -- Version 0 counts too: Neovim opens a buffer it has not changed yet as version 0
      -- (its own handler skips the check for 0).
      if type(doc.version) == "number" and current ~= doc.version then
        return {
          applied = false,
          failureReason = ("%s changed in the editor since the sidecar last saw it (version %d, now %d)"):format(
            doc.fname,
            doc.version,
            current
          ),
        }
      end
      if stale(doc.buf) then
        vim.api.nvim_buf_call(doc.buf, function()
          vim.cmd("silent! edit")
        end)
        M.remember(doc.buf)
        return {
          applied = false,
          failureReason = ("%s changed on disk after the editor loaded it; the buffer has been reloaded from disk"):format(
            doc.fname
          ),
        }
      end
    end
  end
  -- The agent's edit is its own undo step: never joined to what the user typed just
  -- before (or to the next change). Setting 'undolevels' to itself closes the block.
  local function break_undo()
    for _, doc in ipairs(edited_documents(edit)) do
      local buf = doc.buf or util.loaded_buffer(doc.fname)
      if buf then
        vim.api.nvim_buf_call(buf, function()
          vim.cmd("let &g:undolevels = &g:undolevels")
        end)
      end
    end
  end
  local client = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  end_at_last_line(edit, client and client.offset_encoding or "utf-16")
  break_undo()
  -- Without the label: Neovim would print it for every edit the agent makes.
  local result = vim.lsp.handlers["workspace/applyEdit"](err, { edit = edit }, ctx)
  break_undo()
  if type(result) == "table" and not result.applied then
    log.warn("workspace/applyEdit failed: %s", tostring(result.failureReason))
  end
  return result
end

---After a tool ran: reload the clean buffers whose files it (or a command it ran)
---changed on disk, as 'autoread' would on the next focus. Buffers with unsaved
---changes are left alone, and so is everything when 'autoread' is off.
function M.refresh_stale()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and stale(buf) then
      local autoread = vim.bo[buf].autoread
      if autoread == nil or autoread == -1 then
        autoread = vim.o.autoread
      end
      if autoread then
        vim.api.nvim_buf_call(buf, function()
          vim.cmd("silent! edit")
        end)
        M.remember(buf)
      end
    end
  end
end

---editor/diskWritten {uris}: the sidecar wrote the agent's change to these files on
---disk while their buffers keep your unsaved changes (the buffer has the change too).
---The buffer takes the file's new timestamp without being reloaded, so Neovim does not
---warn that the file changed, neither on focus nor when you save.
function M.disk_written(_, params)
  local uris = type(params) == "table" and type(params.uris) == "table" and params.uris or {}
  for _, uri in ipairs(uris) do
    local fname = util.uri_to_fname(uri)
    local buf = fname and util.loaded_buffer(fname)
    if buf and vim.bo[buf].modified then
      -- Neovim warns on :write when the file's mtime is not the one it read: until you
      -- save, remember what it read and what the agent wrote (see BufWritePre in setup).
      local known = vim.b[buf].toolhost_agent_disk
      local read = known and known.read or vim.b[buf].toolhost_disk
      vim.b[buf].toolhost_agent_disk = { read = read, written = stat(fname) }
      -- FileChangedShell, when defined, replaces the prompt and stores the timestamp.
      local id = vim.api.nvim_create_autocmd("FileChangedShell", {
        buffer = buf,
        callback = function()
          vim.v.fcs_choice = ""
        end,
      })
      pcall(vim.cmd, "checktime " .. buf)
      pcall(vim.api.nvim_del_autocmd, id)
    elseif buf then
      M.remember(buf)
    end
  end
end

---BufModifiedSet: Neovim calls a buffer unmodified when undo takes it back to its last
---save; but if the sidecar wrote the agent's change to the file since (the buffer had your
---unsaved changes), the file is not that text any more. Such a buffer stays modified, so
---leaving Neovim still asks, and `:w` puts what you see on disk.
---@param buf integer
function M.keep_modified(buf)
  if vim.bo[buf].modified or type(vim.b[buf].toolhost_agent_disk) ~= "table" then
    return
  end
  local fname = vim.api.nvim_buf_get_name(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local ok, disk = pcall(vim.fn.readfile, fname, "b")
  if ok and type(disk) == "table" then
    if disk[#disk] == "" then
      disk[#disk] = nil -- the file's final newline
    end
    if vim.deep_equal(disk, lines) then
      return
    end
  end
  vim.bo[buf].modified = true
end

---BufWritePre: a buffer whose file the agent wrote (and nothing else since) gets the
---file's old mtime back for the moment of the save, so :write does not ask "the file
---has been changed since reading it" about the agent's own change. Needs a python3
---(to set the mtime to the nanosecond); without one Neovim asks as usual.
---@param buf integer
function M.before_write(buf)
  local agent = vim.b[buf].toolhost_agent_disk
  if type(agent) ~= "table" or type(agent.read) ~= "table" or type(agent.written) ~= "table" then
    return
  end
  vim.b[buf].toolhost_agent_disk = nil
  local fname = vim.api.nvim_buf_get_name(buf)
  local now = stat(fname)
  local w = agent.written
  if not now or now.sec ~= w.sec or now.nsec ~= w.nsec or now.size ~= w.size then
    return -- changed by someone else since: let Neovim ask
  end
  local python = vim.fn.exepath("python3")
  if python == "" then
    return
  end
  vim
    .system({
      python,
      "-c",
      "import os, sys; t = int(sys.argv[2]) * 10**9 + int(sys.argv[3]); os.utime(sys.argv[1], ns=(t, t))",
      fname,
      tostring(agent.read.sec),
      tostring(agent.read.nsec),
    })
    :wait(5000)
end

---editor/saveDocuments {uris, versions?}: write those buffers (autocommands run, so
---format-on-save applies, unless save.autocmds is off). A buffer with no unsaved
---changes counts as saved; a file that is not loaded is left to the sidecar. A buffer
---whose version is not the one in `versions` (the user typed in it since the edit
---landed) is not written: that typing is theirs, unsaved.
---@return {saved: string[]}
function M.save(_, params)
  local saved = {}
  local uris = type(params) == "table" and type(params.uris) == "table" and params.uris or {}
  local versions = type(params) == "table" and type(params.versions) == "table" and params.versions
    or {}
  for _, uri in ipairs(uris) do
    local fname = util.uri_to_fname(uri)
    local buf = fname and util.loaded_buffer(fname)
    local wanted = versions[uri]
    if buf and type(wanted) == "number" and vim.lsp.util.buf_versions[buf] ~= wanted then
      log.info("%s was typed in since the edit: left unsaved", fname)
    elseif buf then
      if vim.bo[buf].modified then
        local command = (config.options.save.autocmds and "" or "noautocmd ")
          -- write!: the edit was made for this buffer's text (versioned) and approved;
          -- a plain :write could stop on a "file changed since reading" prompt.
          .. "silent keepalt keepjumps lockmarks write!"
        local ok, write_err = pcall(vim.api.nvim_buf_call, buf, function()
          vim.cmd(command)
        end)
        if not ok then
          log.error("could not save %s: %s", fname, write_err)
        end
      end
      if not vim.bo[buf].modified then
        M.remember(buf)
        saved[#saved + 1] = uri
      end
    end
  end
  return { saved = saved }
end

return M
