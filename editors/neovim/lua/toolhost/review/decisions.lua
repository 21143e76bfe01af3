---Deciding the review the window shows: the hunk or the file under the cursor accepted
---or rejected, the whole change accepted (all but the rejected hunks) or rejected with
---an optional reason, "always" with what it covers and where it is kept, and the
---choice for overlapping unsaved lines.
local model = require("toolhost.review.model")
local queue = require("toolhost.review.queue")
local view = require("toolhost.review.view")

local M = {}

---Marks the hunk under the cursor (or every hunk of its file) accepted or rejected;
---after a single hunk the cursor moves on to the next one.
---@param value boolean accepted
---@param whole_file boolean
function M.decide(value, whole_file)
  local review = queue.shown()
  if not review then
    return
  end
  local at = view.here()
  for _, hunk in ipairs(review.hunks) do
    if (whole_file and at.file == hunk.file) or (not whole_file and at.hunk == hunk.id) then
      review.decisions[hunk.id] = value
    end
  end
  queue.changed()
  if not whole_file then
    view.jump(1)
  end
end

---Answers the review shown, then puts the focus back where it came from: the next
---keys typed go to the buffer, never to the next review by accident.
---@param review toolhost.Review
---@param reply table
local function answer(review, reply)
  -- A rejection takes the agent's other queued asks with it (the sidecar withdraws them
  -- a moment later): they are not "more to review".
  local going = reply.reply == "reject" and queue.session_mates(review) or {}
  queue.answer(review.id, reply)
  view.leave()
  local left = #queue.list - #going
  if left > 0 then
    local key = require("toolhost.config").options.keys.review
    vim.notify(
      ("toolhost: %d more to review (:Toolhost review%s)"):format(
        left,
        key and (" or " .. key) or ""
      ),
      vim.log.levels.INFO
    )
  end
end

function M.accept_all()
  local review = queue.shown()
  if review then
    answer(review, model.accept_reply(review))
  end
end

---Asks for an optional reason, then rejects; Esc in the prompt backs out, nothing
---answered. The prompt says when the rejection takes the session's queued asks too.
function M.reject_all()
  local review = queue.shown()
  if not review then
    return
  end
  local mates = #queue.session_mates(review)
  local also = mates > 0
      and (" — rejects this and the %d other%s queued from this agent"):format(
        mates,
        mates == 1 and "" or "s"
      )
    or ""
  vim.ui.input({
    prompt = ("Reason for the agent (optional; Enter rejects%s, Esc goes back): "):format(also),
  }, function(text)
    if text == nil or not queue.find(review.id) then
      return -- Esc: nothing is answered
    end
    local message = vim.trim(text) ~= "" and text or nil
    answer(review, { reply = "reject", message = message })
  end)
end

---Where an "always" is kept, in words; the saved scopes name their real file (the
---ask's `ruleFiles`, e.g. under $XDG_CONFIG_HOME), else a generic place.
---@param review toolhost.Review
---@return table[]
function M.scopes(review)
  local files = type(review.params.ruleFiles) == "table" and review.params.ruleFiles or {}
  local function at(scope, fallback)
    local file = files[scope]
    return type(file) == "string" and vim.fn.fnamemodify(file, ":~:.") or fallback
  end
  return {
    { scope = "session", label = "for this session (kept in memory, nothing is written)" },
    {
      scope = "project",
      label = ("for this project (saved in %s)"):format(at("project", "its opencode.json")),
    },
    {
      scope = "user",
      label = ("for all my projects (saved in %s)"):format(at("user", "my OpenCode config")),
    },
  }
end

---Asks which of the ask's alwaysOptions, then where to keep it, and answers "always".
function M.always()
  local review = queue.shown()
  local options = review
    and type(review.params.alwaysOptions) == "table"
    and review.params.alwaysOptions
  if not review or not options or #options == 0 then
    return
  end
  vim.ui.select(options, {
    prompt = "Always allow:",
    kind = "toolhost.always",
    format_item = function(item)
      return tostring(item.label)
    end,
  }, function(option)
    if not option then
      return
    end
    vim.schedule(function()
      vim.ui.select(M.scopes(review), {
        prompt = ("Always allow %s:"):format(tostring(option.label)),
        kind = "toolhost.scope",
        format_item = function(item)
          return item.label
        end,
      }, function(scope)
        if scope and queue.find(review.id) then
          local reply = model.accept_reply(review)
          reply.reply, reply.alwaysOption, reply.scope = "always", option.id, scope.scope
          answer(review, reply)
        end
      end)
    end)
  end)
end

---Where a change that overlaps unsaved lines goes: "editor" (the buffer only) or
---"save" (the buffer, saved with the person's own changes).
---@param choice "editor"|"save"
function M.unsaved(choice)
  local review = queue.shown()
  if review then
    review.unsaved_choice = choice
    queue.changed()
  end
end

return M
