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

function M.accept_all()
  local review = queue.shown()
  if review then
    queue.answer(review.id, model.accept_reply(review))
  end
end

function M.reject_all()
  local review = queue.shown()
  if not review then
    return
  end
  vim.ui.input({ prompt = "Reason for the agent (optional): " }, function(text)
    local message = type(text) == "string" and vim.trim(text) ~= "" and text or nil
    queue.answer(review.id, { reply = "reject", message = message })
  end)
end

local SCOPES = {
  { scope = "session", label = "for this session" },
  { scope = "project", label = "for this project (saved in its opencode.json)" },
  { scope = "user", label = "for all my projects (saved in my OpenCode config)" },
}

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
      vim.ui.select(SCOPES, {
        prompt = ("Always allow %s:"):format(tostring(option.label)),
        kind = "toolhost.scope",
        format_item = function(item)
          return item.label
        end,
      }, function(scope)
        if scope then
          local reply = model.accept_reply(review)
          reply.reply, reply.alwaysOption, reply.scope = "always", option.id, scope.scope
          queue.answer(review.id, reply)
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
