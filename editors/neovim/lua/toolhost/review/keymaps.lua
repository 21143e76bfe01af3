---The review keys (`review.keys` in setup(); false disables one), set buffer-local on
---the review window's buffer.
local config = require("toolhost.config")
local decisions = require("toolhost.review.decisions")
local edit = require("toolhost.review.edit")
local queue = require("toolhost.review.queue")
local view = require("toolhost.review.view")

local M = {}

---Sets the review keys on `buf`.
---@param buf integer
function M.map(buf)
  local k = config.options.review.keys
  local function map(name, fn, desc)
    if k[name] then
      vim.keymap.set("n", k[name], fn, { buffer = buf, nowait = true, desc = "toolhost: " .. desc })
    end
  end
  map("accept_all", decisions.accept_all, "accept the change (all but the rejected hunks)")
  map("reject_all", decisions.reject_all, "reject the change, with an optional reason")
  map("always", decisions.always, "allow always: what it covers and where it is kept")
  map("accept", function()
    decisions.decide(true, false)
  end, "accept the hunk under the cursor")
  map("reject", function()
    decisions.decide(false, false)
  end, "reject the hunk under the cursor")
  map("accept_file", function()
    decisions.decide(true, true)
  end, "accept every hunk of this file")
  map("reject_file", function()
    decisions.decide(false, true)
  end, "reject every hunk of this file")
  map("edit", edit.edit, "edit the proposed text in a diff tab")
  map("unsaved_editor", function()
    decisions.unsaved("editor")
  end, "overlapping unsaved changes: apply in the editor only")
  map("unsaved_save", function()
    decisions.unsaved("save")
  end, "overlapping unsaved changes: save yours too")
  map("next_hunk", function()
    view.jump(1)
  end, "next hunk")
  map("prev_hunk", function()
    view.jump(-1)
  end, "previous hunk")
  map("next_review", function()
    queue.cycle(1)
  end, "next pending review")
  map("prev_review", function()
    queue.cycle(-1)
  end, "previous pending review")
  map("close", function()
    require("toolhost.review.window").close()
  end, "hide (the review stays pending)")
end

return M
