---The permission/ask handler: queues the ask as a review, says so in one short line,
---opens the review window without taking the focus (`review.auto_open`), and waits,
---with no timeout, for the answer (or the withdrawal).
local config = require("toolhost.config")
local hunks = require("toolhost.review.hunks")
local model = require("toolhost.review.model")
local queue = require("toolhost.review.queue")
local util = require("toolhost.util")
local window = require("toolhost.review.window")

local M = {}

---One line, short enough never to cause a hit-enter prompt (which would eat a key).
---@param text string
local function notify(text)
  vim.notify("toolhost: " .. util.fit(text, "…"), vim.log.levels.WARN)
end

---permission/ask: queue it, show it without taking the focus, wait for the answer.
---@return table reply
function M.ask(_, params, ctx)
  if type(params) ~= "table" then
    return { reply = "reject", message = "permission/ask arrived without params" }
  end
  local review = model.new(params, ctx)
  hunks.snapshot(review) -- the text the diff was made against, before anyone types more
  local reply = util.await(function(done)
    review.done = done
    queue.add(review)
    local key = config.options.keys.review
    notify(
      ("review: %s — :Toolhost review%s"):format(
        tostring(params.title or params.tool),
        key and (" or " .. key) or ""
      )
    )
    if config.options.review.auto_open then
      window.open({ focus = false })
    end
  end)
  return reply or { reply = "reject" }
end

return M
