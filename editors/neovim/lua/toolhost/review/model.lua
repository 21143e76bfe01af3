---One review as data: the Review built from a permission/ask's params (its hunks, its
---files, the unsaved lines it overlaps), what pending() shows of it, and the reply
---"accept" makes of its hunk decisions. No window, no queue.
local util = require("toolhost.util")

local M = {}

---@class toolhost.Hunk
---@field id string
---@field file string
---@field header string
---@field lines string[]

---@class toolhost.Review
---@field id string
---@field client_id integer
---@field params table the permission/ask params
---@field hunks toolhost.Hunk[]
---@field files string[]
---@field decisions table<string, boolean> hunk id -> accepted (nil: undecided)
---@field edited table<string, string> relative path -> the text the person wants
---@field unsaved_choice? "editor"|"save"
---@field base? table<string, string[]> per file, its text when the ask arrived (hunks.snapshot)
---@field stale? table<string, boolean> files whose text did not hold the hunks then
---@field done fun(reply: table)

---The ask's metadata, or an empty table when it sent none (or not a table).
---@param params table
---@return table
function M.metadata(params)
  return type(params.metadata) == "table" and params.metadata or {}
end

---@param params table
---@return toolhost.Hunk[], string[]
local function parts(params)
  local metadata = M.metadata(params)
  local hunks = {}
  for _, hunk in ipairs(type(metadata.hunks) == "table" and metadata.hunks or {}) do
    if type(hunk) == "table" and type(hunk.id) == "string" then
      hunks[#hunks + 1] = {
        id = hunk.id,
        file = tostring(hunk.file),
        header = tostring(hunk.header),
        lines = type(hunk.lines) == "table" and hunk.lines or {},
      }
    end
  end
  local files = {}
  for _, entry in ipairs(type(metadata.files) == "table" and metadata.files or {}) do
    if type(entry) == "table" and type(entry.relativePath) == "string" then
      files[#files + 1] = entry.relativePath
    end
  end
  return hunks, files
end

---A new, undecided review of the ask `params` (`done` is set by whoever waits for it).
---@param params table
---@param ctx? table the handler's context (its client_id)
---@return toolhost.Review
function M.new(params, ctx)
  local hunks, files = parts(params)
  return {
    id = type(params.id) == "string" and params.id or util.new_id("ask"),
    client_id = ctx and ctx.client_id or 0,
    params = params,
    hunks = hunks,
    files = files,
    decisions = {},
    edited = {},
  }
end

---The unsaved buffers the change overlaps (`metadata.unsaved` entries with `overlaps`).
---@param review toolhost.Review
---@return table[]
function M.overlaps(review)
  local metadata = M.metadata(review.params)
  return vim.tbl_filter(function(item)
    return type(item) == "table" and item.overlaps == true
  end, type(metadata.unsaved) == "table" and metadata.unsaved or {})
end

---Per file of an edit ask, its kind: "add", "update", "delete" or "move".
---@param review toolhost.Review
---@return table<string, string>
function M.file_kinds(review)
  local kinds = {}
  local files = M.metadata(review.params).files
  for _, entry in ipairs(type(files) == "table" and files or {}) do
    if type(entry) == "table" and type(entry.relativePath) == "string" then
      kinds[entry.relativePath] = entry.movePath and "move" or tostring(entry.type)
    end
  end
  return kinds
end

-- What an ask without a diff would do if allowed, in words (then its patterns).
local WOULD = {
  bash = "%s would run:",
  external_directory = "%s would reach these places outside the project:",
  webfetch = "%s would fetch:",
  network = "%s would connect to:",
  read = "%s would read:",
  glob = "%s would list the files matching:",
  grep = "%s would search the files for:",
  list = "%s would list:",
  skill = "%s would load the skill:",
  task = "%s would start a sub-agent:",
  doom_loop = "%s would make the same call a third time in a row:",
  config = "%s would apply this change to what the agent may do:",
}

---@param params table the ask
---@return string
function M.asks_to(params)
  local form = WOULD[params.permission]
  if form then
    return form:format(tostring(params.tool))
  end
  return ("%s asks for `%s` on:"):format(tostring(params.tool), tostring(params.permission))
end

---What pending() lists of a review: `{id, tool, title, permission, patterns, files, hunks,
---unsaved, always}` (`always`: the ask's alwaysOptions, `{id, patterns, label}`), copied.
---@param review toolhost.Review
---@return table
function M.summary(review)
  return {
    id = review.id,
    tool = review.params.tool,
    title = review.params.title,
    permission = review.params.permission,
    patterns = review.params.patterns,
    files = vim.deepcopy(review.files),
    hunks = vim.deepcopy(review.hunks),
    unsaved = vim.deepcopy(M.metadata(review.params).unsaved),
    always = vim.deepcopy(review.params.alwaysOptions),
  }
end

---The reply for "accept" as the hunks are marked: rejected hunks are left out.
---@param review toolhost.Review
---@return table
function M.accept_reply(review)
  local reply = { reply = "once", unsaved = review.unsaved_choice }
  local kept, rejected = {}, false
  for _, hunk in ipairs(review.hunks) do
    if review.decisions[hunk.id] == false then
      rejected = true
    else
      kept[#kept + 1] = hunk.id
    end
  end
  if rejected then
    reply.hunks = kept
  end
  if next(review.edited) then
    reply.edited = review.edited
  end
  return reply
end

return M
