---Reviews: every permission/ask waits in a queue, shown in a review window that
---never takes the focus when it opens (a float or a split), answered with
---buffer-local keys: all, per hunk, per file, with an edited proposal, or "always"
---with what it covers and where it is kept. Nothing modal opens by itself, so what
---you type (insert mode included) always goes where you type it.
---`require("toolhost").pending()` and `.answer()` are the same queue without the UI.
---
---This file is the feature's one entry point; the parts, one job each:
---  ask.lua        the permission/ask handler (queue, one-line notice, auto open, wait)
---  model.lua      a review as data (built from the ask; its summary; the accept reply)
---  queue.lua      the pending reviews, which one is shown, answer / withdraw / cycle
---  hunks.lua      a file's current and proposed text
---  layout.lua     the lines the window shows for a review, and their decision marks
---  view.lua       the window's state, the hunk under the cursor, hunk jumps, hide
---  window.lua     the buffer and the float or split; redraws on every queue change
---  decisions.lua  accept / reject (hunk, file, all), always, unsaved choice
---  edit.lua       the diff tab for editing a proposal
---  keymaps.lua    the buffer-local review keys
local ask = require("toolhost.review.ask")
local decisions = require("toolhost.review.decisions")
local edit = require("toolhost.review.edit")
local hunks = require("toolhost.review.hunks")
local keymaps = require("toolhost.review.keymaps")
local model = require("toolhost.review.model")
local queue = require("toolhost.review.queue")
local view = require("toolhost.review.view")
local window = require("toolhost.review.window")

local M = {
  queue = queue.list, -- the queue's own table: the pending reviews, oldest first
  ask = ask.ask,
  pending = queue.pending,
  answer = queue.answer,
  withdraw = queue.withdraw,
  cycle = queue.cycle,
  render = window.render,
  open = window.open,
  window = view.window,
  jump = view.jump,
  accept_reply = model.accept_reply,
  accept_all = decisions.accept_all,
  reject_all = decisions.reject_all,
  always = decisions.always,
  texts = hunks.texts,
  edit = edit.edit,
  map = keymaps.map,
}

-- `current` (the index of the review shown) is reassigned by the queue, so it is read
-- through rather than copied.
return setmetatable(M, {
  __index = function(_, key)
    if key == "current" then
      return queue.current
    end
  end,
})
