---Every option, with its default, in one table (`:help toolhost-options` mirrors it).
local M = {}

---@class toolhost.Config
M.defaults = {
  -- The command that starts the sidecar. nil: the venv made by `:Toolhost install`
  -- (stdpath("data")/toolhost/venv/bin/toolhost), else `toolhost` on PATH, each with
  -- `serve` appended. A list is used as given, e.g. { "/path/to/toolhost", "serve" }.
  cmd = nil, ---@type string[]?
  -- Extra environment variables for the sidecar process.
  cmd_env = nil, ---@type table<string, string>?
  -- Start the sidecar for the current project in setup(); false: on first use
  -- (a Lua API call or a :Toolhost command). Either way buffers already open are synced.
  autostart = true,
  -- A buffer's project root is the nearest folder above it holding one of these,
  -- else the current directory. One sidecar runs per root.
  root_markers = { ".git" },
  -- Sync every normal file buffer to the sidecar of its root, so tools read unsaved
  -- text and edits land in the buffer. false: never; or a function(bufnr): boolean.
  attach = true, ---@type boolean|fun(bufnr: integer): boolean

  -- initializationOptions (nil: the sidecar's default).
  session_id = nil, ---@type string? session for calls that name none
  agent = nil, ---@type string? default agent, e.g. "build"
  model = nil, ---@type {providerID: string, modelID: string}? for per-model tool filtering
  config = nil, ---@type table? OpenCode-style config overrides, e.g. { permission = { edit = "ask" } }

  -- The sidecar requests this plugin answers. Switch one off to get the sidecar's
  -- fallback instead (e.g. permissionAsk = false: Neovim's own showMessageRequest prompt).
  editor = {
    permissionAsk = true, -- permission/ask: the review window (:Toolhost review)
    applyEdit = true, -- workspace/applyEdit + editor/saveDocuments: edits land in open buffers
    diagnostics = true, -- editor/diagnostics: what your language servers report after an edit
    openDocument = true, -- editor/openDocument: a read loads the file so language servers start early
    lsp = true, -- editor/lsp: the `lsp` tool asks your language servers
  },

  diagnostics = {
    -- How long an edit waits for your language servers to report on the changed file
    -- before answering (ms); nil: the sidecar's default (3000).
    wait_ms = nil, ---@type integer?
  },
  review = {
    -- Review by default: every edit and every command asks first (sent to the sidecar
    -- as permissionDefaults, beneath your own config, so e.g.
    -- config = { permission = { edit = "allow" } } still wins). false: the sidecar's
    -- own defaults (OpenCode's: edits and commands run without asking).
    enabled = true,
    -- Where a pending review opens: "float" (a window over the editor that does not
    -- take the focus) or "split" (below, without the focus).
    layout = "float",
    -- Open each review as it arrives (never taking the focus); false: only a
    -- notification, and :Toolhost review opens it.
    auto_open = true,
    -- Keys in the review window (buffer-local). false disables one.
    keys = {
      accept_all = "ga", -- accept (everything not rejected below)
      reject_all = "gr", -- reject all, asking for an optional reason for the model
      always = "gA", -- allow always: pick what it covers and where it is kept
      accept = "a", -- accept the hunk under the cursor
      reject = "r", -- reject the hunk under the cursor
      accept_file = "A", -- accept every hunk of the file under the cursor
      reject_file = "R", -- reject every hunk of the file under the cursor
      edit = "e", -- edit the proposed text of the file under the cursor (a diff tab)
      unsaved_editor = "gu", -- overlapping unsaved changes: apply in the editor only
      unsaved_save = "gs", -- overlapping unsaved changes: save yours too
      next_hunk = "]h",
      prev_hunk = "[h",
      next_review = "]r",
      prev_review = "[r",
      close = "q", -- hide the window (the review stays pending)
    },
  },
  -- Global keymaps (normal mode). false disables one.
  keys = {
    review = "<leader>tr", -- :Toolhost review (open and focus the pending review)
    cancel = "<leader>tc", -- :Toolhost cancel (stop the running tool calls)
  },
  lsp = {
    -- How long editor/lsp waits for a language server to start on a file it loaded (ms).
    attach_timeout = 5000,
    -- How long one request to a language server may take (ms).
    timeout = 10000,
  },
  save = {
    -- Run BufWritePre/BufWritePost autocommands (format-on-save) when the sidecar
    -- saves a buffer it edited.
    autocmds = true,
  },
  -- Show running tools as LSP progress (the LspProgress event: fidget.nvim, statuslines)
  -- and in a small float at the bottom right (the tool, its latest output line).
  progress = true,
  progress_float = true,
  log = {
    level = vim.log.levels.INFO, -- messages from this level on are written to the log file
    file = nil, ---@type string? default: stdpath("log")/toolhost.log
  },
  -- vim.notify errors (the sidecar failed to start, a save failed); they are always logged.
  notify_on_error = true,
  install = {
    python = nil, ---@type string? default: the first of python3.13 … python3.11, python3 that is >= 3.11
    venv = nil, ---@type string? default: stdpath("data")/toolhost/venv
    pip_args = {}, ---@type string[] extra `pip install` arguments, e.g. { "--index-url", "…" }
  },
}

---@type toolhost.Config
M.options = vim.deepcopy(M.defaults)

M.types = {
  cmd = { "table", "nil" },
  cmd_env = { "table", "nil" },
  autostart = { "boolean" },
  root_markers = { "table" },
  attach = { "boolean", "function" },
  session_id = { "string", "nil" },
  agent = { "string", "nil" },
  model = { "table", "nil" },
  config = { "table", "nil" },
  editor = { "table" },
  diagnostics = { "table" },
  review = { "table" },
  keys = { "table" },
  progress_float = { "boolean" },
  lsp = { "table" },
  save = { "table" },
  progress = { "boolean" },
  log = { "table" },
  notify_on_error = { "boolean" },
  install = { "table" },
}

---Problems with `opts`, one sentence each (unknown keys, wrong types).
---@param opts table
---@return string[]
function M.validate(opts)
  local problems = {}
  for key, value in pairs(opts) do
    local allowed = M.types[key]
    if not allowed then
      problems[#problems + 1] = ("unknown option %q (ignored)"):format(tostring(key))
    elseif not vim.tbl_contains(allowed, type(value)) then
      problems[#problems + 1] = ("option %s must be %s, got %s"):format(
        key,
        table.concat(allowed, " or "),
        type(value)
      )
    end
  end
  if type(opts.cmd) == "table" and (#opts.cmd == 0 or type(opts.cmd[1]) ~= "string") then
    problems[#problems + 1] = 'option cmd must be a list of strings, e.g. { "toolhost", "serve" }'
  end
  if type(opts.editor) == "table" then
    for flag in pairs(opts.editor) do
      if M.defaults.editor[flag] == nil then
        problems[#problems + 1] = ("editor.%s is not a request this plugin answers (ignored)"):format(
          flag
        )
      end
    end
  end
  local layout = type(opts.review) == "table" and opts.review.layout
  if layout ~= nil and layout ~= false and layout ~= "split" and layout ~= "float" then
    problems[#problems + 1] = 'review.layout must be "float" or "split"'
  end
  return problems
end

---Merges `opts` over the defaults; returns the problems found (bad options keep their default).
---@param opts? table
---@return string[]
function M.setup(opts)
  opts = opts or {}
  local problems = M.validate(opts)
  local clean = {}
  for key, value in pairs(opts) do
    local allowed = M.types[key]
    if allowed and vim.tbl_contains(allowed, type(value)) then
      clean[key] = value
    end
  end
  if type(clean.cmd) == "table" and type(clean.cmd[1]) ~= "string" then
    clean.cmd = nil
  end
  if type(clean.editor) == "table" then
    clean.editor = vim.tbl_extend("force", {}, clean.editor)
    for flag in pairs(clean.editor) do
      if M.defaults.editor[flag] == nil then
        clean.editor[flag] = nil
      end
    end
  end
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), clean)
  -- Lists replace, never merge by index.
  M.options.root_markers = clean.root_markers or M.defaults.root_markers
  M.options.cmd = clean.cmd
  return problems
end

---The `initializationOptions` sent to the sidecar.
---@return table
function M.init_options()
  local o = M.options
  local editor = { task = false }
  for flag in pairs(M.defaults.editor) do
    editor[flag] = o.editor[flag] == true
  end
  local wait_ms = o.diagnostics and o.diagnostics.wait_ms
  return {
    -- Review by default; the user's own config (files, `config`) is read over it.
    permissionDefaults = o.review.enabled and { edit = "ask", bash = "ask" } or nil,
    sessionID = o.session_id,
    agent = o.agent,
    model = o.model,
    config = o.config and require("toolhost.util").object(o.config),
    editor = editor,
    diagnostics = wait_ms and { waitMs = wait_ms } or nil,
  }
end

return M
