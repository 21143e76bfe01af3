---The `toolhost acp -- AGENT` command line the ACP adapters wrap an agent in.
---
---The proxy runs the agent as its child, gives it toolhost's tools over MCP (attached
---to this Neovim's sidecar when it has the folder open, so reviews come here), turns
---the agent's own file and shell tools off where the agent allows it, and answers
---the agent's `fs/*` and `terminal/*` itself. `:help toolhost-acp`.
local M = {}

---@class toolhost.integrations.AcpOptions
---@field cmd? string[] the toolhost command to run `acp` with (default: the sidecar's)
---@field review? boolean false: `--no-review` (the config's rules still ask)
---@field keep_agent_tools? boolean true: leave the agent's own tools on

---The command that runs `toolhost acp`, up to and including its `--`.
---@param opts? toolhost.integrations.AcpOptions
---@return string[]
function M.prefix(opts)
  opts = opts or {}
  local base = opts.cmd and vim.deepcopy(opts.cmd)
  if not base then
    local cmd, why = require("toolhost.client").resolve_cmd()
    if not cmd then
      error("toolhost: " .. why, 0)
    end
    -- The sidecar is `<toolhost> serve [flags]`: the same script runs `acp`.
    local serve = vim.iter(ipairs(cmd)):find(function(_, word)
      return word == "serve"
    end)
    if not serve then
      error(
        ("toolhost: the cmd option (%s) has no `serve`; pass acp's cmd"):format(
          table.concat(cmd, " ")
        ),
        0
      )
    end
    base = vim.list_slice(cmd, 1, serve - 1)
  end
  -- ACP clients start the agent without a shell: name the program by its full path.
  local found = vim.fn.exepath(base[1])
  base[1] = found ~= "" and found or base[1]
  table.insert(base, "acp")
  if opts.review == false then
    table.insert(base, "--no-review")
  end
  if opts.keep_agent_tools then
    table.insert(base, "--keep-agent-tools")
  end
  table.insert(base, "--")
  return base
end

---`agent` (a command line) wrapped in `toolhost acp`.
---@param agent string[]
---@param opts? toolhost.integrations.AcpOptions
---@return string[]
function M.wrap(agent, opts)
  return vim.list_extend(M.prefix(opts), agent)
end

return M
