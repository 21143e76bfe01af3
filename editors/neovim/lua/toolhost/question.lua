---editor/question (docs/protocol.md): the `question` tool asks the user with
---vim.ui.select, one question after another, so telescope, fzf-lua, snacks or
---dressing show it the way the user chose. A question that allows several answers is
---a list with marks: picking an option marks or unmarks it and shows the list again,
---"Done" accepts the marked ones. "Type your own answer…" asks with vim.ui.input.
---Dismissing a prompt dismisses the questions. When the sidecar withdraws them (the
---call was cancelled: `editor/withdrawn`), the answer is dropped and an open picker
---prompt is closed. Each question set fires `User ToolhostQuestion` with
---`data = {event = "asked"|"answered"|"dismissed"|"withdrawn", id, questions}`.
local log = require("toolhost.log")

local M = {}

M.OWN = "Type your own answer…"
M.DONE = "Done"

---@type table<string, fun()> question set id -> withdraw it
local open = {}

local function fire(event, id, questions)
  vim.api.nvim_exec_autocmds("User", {
    pattern = "ToolhostQuestion",
    modeline = false,
    data = { event = event, id = id, questions = questions },
  })
end

---@param item {label: string, description?: string}
---@return string
local function describe(item)
  local text = type(item.description) == "string" and vim.trim(item.description) or ""
  return text ~= "" and (item.label .. " — " .. text) or item.label
end

---Asks one question; `cb(labels)`, or `cb(nil)` when dismissed.
---@param question table
---@param index integer
---@param count integer
---@param cb fun(labels: string[]?)
function M.ask_one(question, index, count, cb)
  local header = type(question.header) == "string"
      and question.header ~= ""
      and (question.header .. ": ")
    or ""
  local title = ("toolhost: %s%s"):format(header, tostring(question.question))
  if count > 1 then
    title = ("%s (%d/%d)"):format(title, index, count)
  end
  local options = type(question.options) == "table" and question.options or {}
  local custom = question.custom ~= false

  local function typed(labels)
    -- vim.ui.input may be implemented with a window the select has not closed yet.
    vim.schedule(function()
      vim.ui.input({ prompt = tostring(question.question) .. " " }, function(text)
        if text == nil then
          return cb(nil)
        end
        if vim.trim(text) ~= "" then
          labels[#labels + 1] = vim.trim(text)
        end
        cb(labels)
      end)
    end)
  end

  if not question.multiple then
    local items = {}
    for _, option in ipairs(options) do
      items[#items + 1] = { label = option.label, description = option.description }
    end
    if custom then
      items[#items + 1] = { label = M.OWN, own = true }
    end
    vim.ui.select(items, {
      prompt = title,
      kind = "toolhost.question",
      format_item = function(item)
        return item.own and item.label or describe(item)
      end,
    }, function(choice)
      if not choice then
        return cb(nil)
      end
      if choice.own then
        return typed({})
      end
      cb({ choice.label })
    end)
    return
  end

  local marked = {} ---@type table<integer, boolean>
  local function labels()
    local chosen = {}
    for i, option in ipairs(options) do
      if marked[i] then
        chosen[#chosen + 1] = option.label
      end
    end
    return chosen
  end
  local function show()
    local items = { { label = M.DONE, done = true } }
    for i, option in ipairs(options) do
      items[#items + 1] = { label = option.label, description = option.description, index = i }
    end
    if custom then
      items[#items + 1] = { label = M.OWN, own = true }
    end
    vim.ui.select(items, {
      prompt = ("%s — pick to mark, then %s (%d marked)"):format(title, M.DONE, #labels()),
      kind = "toolhost.question",
      format_item = function(item)
        if item.done or item.own then
          return item.label
        end
        return (marked[item.index] and "[x] " or "[ ] ") .. describe(item)
      end,
    }, function(choice)
      if not choice then
        return cb(nil)
      end
      if choice.done then
        return cb(labels())
      end
      if choice.own then
        return typed(labels())
      end
      marked[choice.index] = not marked[choice.index]
      vim.schedule(show)
    end)
  end
  show()
end

-- Pickers whose prompt window can be closed when the questions are withdrawn.
local PICKER_FILETYPES = {
  TelescopePrompt = true,
  snacks_picker_input = true,
  fzf = true,
  DressingSelect = true,
  DressingInput = true,
}

local function close_prompt()
  local ft = vim.bo[vim.api.nvim_get_current_buf()].filetype
  local mode = vim.api.nvim_get_mode().mode
  if PICKER_FILETYPES[ft] or mode == "c" or mode:sub(1, 1) == "r" then
    vim.api.nvim_feedkeys(vim.keycode("<C-c>"), "n", false)
  end
end

---editor/question handler: `{answers = {{label, …}, …}}`, or `{dismissed = true}`.
function M.ask(_, params)
  if type(params) ~= "table" or type(params.questions) ~= "table" then
    return nil, vim.lsp.rpc.rpc_response_error(-32602, "editor/question needs a questions list")
  end
  local id = type(params.id) == "string" and params.id or require("toolhost.util").new_id("que")
  local questions = params.questions
  local util = require("toolhost.util")
  local outcome = util.await(function(done)
    local finished = false
    local function finish(value)
      if not finished then
        finished = true
        open[id] = nil
        done(value)
      end
    end
    open[id] = function()
      finish({ withdrawn = true })
      close_prompt()
    end
    fire("asked", id, questions)
    local answers = {}
    local function step(i)
      if finished then
        return
      end
      if i > #questions then
        return finish({ answers = answers })
      end
      M.ask_one(questions[i], i, #questions, function(labels)
        if finished then
          return -- withdrawn meanwhile: the answer is not wanted any more
        end
        if labels == nil then
          return finish({ dismissed = true })
        end
        answers[#answers + 1] = labels
        step(i + 1)
      end)
    end
    local ok, err = pcall(step, 1)
    if not ok then
      log.error("the question prompt failed: %s", err)
      finish({ failed = tostring(err) })
    end
  end)
  outcome = outcome or { dismissed = true }
  if outcome.withdrawn then
    fire("withdrawn", id, questions)
    return nil, vim.lsp.rpc.rpc_response_error(-32800, "the questions were withdrawn")
  end
  if outcome.failed then
    return nil, vim.lsp.rpc.rpc_response_error(-32603, "the prompt failed: " .. outcome.failed)
  end
  fire(outcome.dismissed and "dismissed" or "answered", id, questions)
  log.info("question %s: %s", id, outcome.dismissed and "dismissed" or vim.inspect(outcome.answers))
  return outcome
end

---The sidecar no longer waits for these questions.
---@param id string
function M.withdraw(id)
  local withdraw = open[id]
  if withdraw then
    withdraw()
  end
end

return M
