---The queue of pending reviews, oldest first, and which one the review window shows.
---Adding, answering and withdrawing fire `User ToolhostReview`; every change is told
---to the listeners (the window redraws) before the waiting handler gets its reply.
---`require("toolhost").pending()` and `.answer()` are this queue without the UI.
local log = require("toolhost.log")
local model = require("toolhost.review.model")

local M = {}

---@type toolhost.Review[]
M.list = {}
---The index in `list` of the review the window shows.
M.current = 1

local listeners = {} ---@type fun()[]

---Calls `fn` after every change to the queue or to a queued review.
---@param fn fun()
function M.on_change(fn)
  listeners[#listeners + 1] = fn
end

---Tells the listeners that the queue, or a review in it, changed.
function M.changed()
  for _, fn in ipairs(listeners) do
    fn()
  end
end

local function fire(event, review)
  vim.api.nvim_exec_autocmds("User", {
    pattern = "ToolhostReview",
    modeline = false,
    data = { event = event, id = review.id, count = #M.list },
  })
end

---@param id string
---@return toolhost.Review?, integer?
function M.find(id)
  for index, review in ipairs(M.list) do
    if review.id == id then
      return review, index
    end
  end
end

---The review the window shows (and its keys act on), if any.
---@return toolhost.Review?
function M.shown()
  return M.list[M.current]
end

---The other queued reviews a rejection of `review` also rejects: the sidecar, as
---OpenCode, rejects every ask of the same agent session still waiting (the agent's
---turn ends). toolhost's own asks (config changes) are not among them.
---@param review toolhost.Review
---@return toolhost.Review[]
function M.session_mates(review)
  local session = review.params.sessionID
  if session == nil or review.params.tool == "toolhost" then
    return {}
  end
  return vim.tbl_filter(function(other)
    return other ~= review
      and other.client_id == review.client_id
      and other.params.sessionID == session
      and other.params.tool ~= "toolhost"
  end, M.list)
end

---Queues a review (its `done` set) and fires "added".
---@param review toolhost.Review
function M.add(review)
  M.list[#M.list + 1] = review
  fire("added", review)
end

---Takes the review at `index` off the queue, keeping `current` in range.
---@param index integer
local function remove(index)
  table.remove(M.list, index)
  if M.current > #M.list then
    M.current = math.max(1, #M.list)
  end
end

---The pending asks, oldest first (see model.summary).
---@return table[]
function M.pending()
  return vim.tbl_map(model.summary, M.list)
end

local REPLY_FIELDS = { "message", "hunks", "files", "edited", "scope", "alwaysOption", "unsaved" }

---Answers a pending ask. `answer`: `{reply = "once"|"always"|"reject", hunks?, files?,
---message?, edited?, scope?, alwaysOption?, unsaved?}` (docs/protocol.md).
---@param id string
---@param answer table
---@return boolean ok
---@return string? error
function M.answer(id, answer)
  local review, index = M.find(id)
  if not review then
    return false, ("no pending review %s"):format(tostring(id))
  end
  if
    type(answer) ~= "table" or not vim.tbl_contains({ "once", "always", "reject" }, answer.reply)
  then
    return false, 'answer.reply must be "once", "always" or "reject"'
  end
  local reply = { reply = answer.reply }
  for _, key in ipairs(REPLY_FIELDS) do
    if answer[key] ~= nil then
      reply[key] = answer[key]
    end
  end
  remove(index)
  log.info("review %s (%s): %s", id, tostring(review.params.title), reply.reply)
  fire("answered", review)
  M.changed()
  review.done(reply)
  return true
end

---The sidecar no longer waits for this ask (answered elsewhere, or the call was cancelled).
---@param id string
function M.withdraw(id)
  local review, index = M.find(id)
  if not review then
    return
  end
  remove(index)
  fire("withdrawn", review)
  M.changed()
  review.done({ reply = "reject" }) -- frees the handler; the sidecar has moved on
end

---Shows the next (1) or previous (-1) pending review, wrapping around.
---@param step integer
function M.cycle(step)
  if #M.list == 0 then
    return
  end
  M.current = (M.current - 1 + step) % #M.list + 1
  M.changed()
end

return M
