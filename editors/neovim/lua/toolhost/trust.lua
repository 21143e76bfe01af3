-- Whether the user trusts a folder's own config and tool files, in Neovim's words.
--
-- A folder with project config or tools (opencode.json[c], .opencode/, tools.yaml)
-- could loosen the user's rules or ship code the sidecar would run. Neovim keeps a
-- trust database for exactly this (`:trust`, vim.secure): the folder is asked about
-- once, with vim.secure.read() (ignore / view / deny / allow), and the answer is kept
-- there. The sidecar gets it as initializationOptions.trusted; it then reads an
-- untrusted folder's config for its restrictions only and loads none of its tools.
-- A folder with none of those files is not asked about: there is nothing to trust.
local M = {}

-- The files that decide what the agent may do (the sidecar's tools/permission/trust.py).
M.project_files = { "opencode.json", "opencode.jsonc", "tools.yaml", ".opencode" }

---@param root string
---@return boolean
function M.has_project_files(root)
  for _, name in ipairs(M.project_files) do
    if vim.uv.fs_stat(vim.fs.joinpath(root, name)) then
      return true
    end
  end
  return false
end

---The value for initializationOptions.trusted: nil when there is nothing to trust,
---else the user's answer (asked once per folder; remembered by vim.secure).
---@param root string
---@param mode "ask"|"trusted"|"untrusted"
---@return boolean?
function M.decide(root, mode)
  if mode == "trusted" then
    return true
  end
  if mode == "untrusted" then
    return false
  end
  if not M.has_project_files(root) then
    return nil
  end
  -- vim.secure.read on a folder returns true when it is trusted, asking if unknown.
  local ok, answer = pcall(vim.secure.read, root)
  return ok and answer == true
end

return M
