---`:Toolhost undo` and `:Toolhost checkpoints`: an agent's turns, what each changed, and
---putting one back (its dry run shown first), over the sidecar's `checkpoints/*`.
local M = {}

local function notify(message, level)
  vim.notify("toolhost: " .. message, level or vim.log.levels.INFO)
end

local function request(method, params, cb)
  local client = require("toolhost.client")
  client.request(client.root_for(0), method, params, function(err, result)
    if err then
      return notify(method .. ": " .. tostring(err.message), vim.log.levels.ERROR)
    end
    cb(result)
  end)
end

---The lines a restore's answer (or its dry run) is told in.
---@param result table {restored, skipped}
---@param verb string
---@return string[]
function M.describe(result, verb)
  local lines = {}
  for _, path in ipairs(result.restored or {}) do
    lines[#lines + 1] = ("  %s: %s"):format(verb, path)
  end
  for _, skipped in ipairs(result.skipped or {}) do
    lines[#lines + 1] = ("  skipped: %s (%s)"):format(skipped.path, skipped.reason)
  end
  return lines
end

---Undoes checkpoint `id` once the person has seen its dry run and said yes.
---@param checkpoint table a checkpoints/list entry
---@param done? fun(result: table)
function M.restore(checkpoint, done)
  request("checkpoints/restore", { id = checkpoint.id, dryRun = true }, function(dry)
    local title = checkpoint.title ~= "" and checkpoint.title or checkpoint.id
    if #(dry.restored or {}) == 0 then
      local lines = M.describe(dry, "would put back")
      return notify(
        ("nothing to put back for %q%s"):format(
          title,
          #lines > 0 and ":\n" .. table.concat(lines, "\n") or ""
        )
      )
    end
    local prompt = ("Undo %q (%s)? It would:\n%s"):format(
      title,
      checkpoint.time,
      table.concat(M.describe(dry, "put back"), "\n")
    )
    vim.ui.select(
      { "Undo", "Cancel" },
      { prompt = prompt, kind = "toolhost.undo" },
      function(choice)
        if choice ~= "Undo" then
          return notify("undo cancelled: nothing was changed")
        end
        request("checkpoints/restore", { id = checkpoint.id }, function(result)
          vim.cmd("checktime")
          notify(
            ("undid %q:\n%s\n(undo this undo from :Toolhost checkpoints)"):format(
              title,
              table.concat(M.describe(result, "put back"), "\n")
            )
          )
          if done then
            done(result)
          end
        end)
      end
    )
  end)
end

---`:Toolhost undo`: the last turn, back as it was before it.
---@param done? fun(result: table)
function M.undo(done)
  request("checkpoints/list", vim.empty_dict(), function(result)
    local listed = result.checkpoints or {}
    if #listed == 0 then
      return notify("nothing to undo: no agent turn changed files here")
    end
    M.restore(listed[#listed], done)
  end)
end

---`:Toolhost checkpoints`: every turn with its files in a split; `<CR>` on a file shows
---its diff (before the turn, now), `u` on a turn (or one of its files) undoes it, `R`
---reloads.
function M.list()
  request("checkpoints/list", vim.empty_dict(), function(result)
    local listed = result.checkpoints or {}
    local lines = {
      "# toolhost checkpoints (u: undo the turn under the cursor, <CR>: diff, R: reload)",
    }
    local at = {}
    for i = #listed, 1, -1 do -- newest first
      local entry = listed[i]
      lines[#lines + 1] = ("%s  %s  %s  %s%s"):format(
        entry.time,
        entry.client,
        entry.kind == "restore" and "[undo]" or "[turn]",
        entry.title ~= "" and entry.title or "(untitled)",
        entry.open and "  (running)" or ""
      )
      at[#lines] = { checkpoint = entry }
      for _, file in ipairs(entry.files or {}) do
        lines[#lines + 1] = ("    %-12s %s  (%s)"):format(
          file.action,
          file.path,
          table.concat(file.by, ", ")
        )
        at[#lines] = { checkpoint = entry, file = file }
      end
      for _, file in ipairs(entry.outside or {}) do
        lines[#lines + 1] = ("    %-12s %s  (changed outside review)"):format(
          file.action,
          file.path
        )
        at[#lines] = { checkpoint = entry, file = file }
      end
      if entry.git then
        lines[#lines + 1] = ("    git: HEAD moved %s -> %s (undo a commit with git)"):format(
          tostring(entry.git.before),
          tostring(entry.git.after)
        )
      end
    end
    if #listed == 0 then
      lines[#lines + 1] = "(no checkpoints: no agent turn changed files here)"
    end
    local buf = M.show("toolhost://checkpoints", lines)
    local function here()
      return at[vim.api.nvim_win_get_cursor(0)[1]]
    end
    vim.keymap.set("n", "u", function()
      local item = here()
      if item then
        M.restore(item.checkpoint, function()
          M.list()
        end)
      end
    end, { buffer = buf, desc = "toolhost: undo this turn" })
    vim.keymap.set("n", "<CR>", function()
      local item = here()
      if item and item.file then
        M.diff(item.checkpoint.id, item.file.path)
      end
    end, { buffer = buf, desc = "toolhost: the diff of this file" })
    vim.keymap.set("n", "R", M.list, { buffer = buf, desc = "toolhost: reload" })
  end)
end

---The file's diff from before the checkpoint to now, in a split.
---@param id string
---@param path string
function M.diff(id, path)
  request("checkpoints/diff", { id = id, path = path }, function(result)
    local text = result.diff ~= "" and result.diff or "(no difference in text)"
    M.show("toolhost://checkpoints/" .. path, vim.split(text, "\n", { plain = true }), "diff")
  end)
end

---A scratch buffer in a split (the `:Toolhost` commands' own).
function M.show(name, lines, filetype)
  return require("toolhost.commands").show(name, lines, filetype)
end

---`checkpoints/restored`: a restore changed these files; clean buffers reload (a buffer
---with unsaved changes is the person's and stays as it is).
function M.restored(_, params)
  for _, uri in ipairs(params and params.uris or {}) do
    local buf = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified then
      vim.api.nvim_buf_call(buf, function()
        vim.cmd("checktime")
      end)
    end
  end
end

return M
