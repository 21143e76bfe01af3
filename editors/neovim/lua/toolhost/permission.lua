---permission/ask: one vim.ui.select prompt per ask (so telescope, fzf-lua, snacks or
---dressing show it the way the user chose), with the edit's diff shown beside it.
---Asks are answered one at a time.
local config = require("toolhost.config")
local log = require("toolhost.log")
local util = require("toolhost.util")

local M = {}

---@alias toolhost.PermissionReply {reply: "once"|"always"|"reject", message?: string}

---The prompt's choices: label and the reply it gives.
---@param params table permission/ask params
---@return {label: string, reply: string, feedback?: boolean}[]
function M.choices(params)
  local always = type(params.always) == "table" and #params.always > 0 and params.always
    or (type(params.patterns) == "table" and params.patterns)
    or {}
  return {
    { label = "Allow once", reply = "once" },
    { label = ("Always allow (%s)"):format(table.concat(always, ", ")), reply = "always" },
    { label = "Reject", reply = "reject" },
    { label = "Reject with feedback…", reply = "reject", feedback = true },
  }
end

---@param params table
---@return string
function M.prompt_text(params)
  local patterns = type(params.patterns) == "table" and table.concat(params.patterns, ", ") or ""
  local title = type(params.title) == "string" and params.title ~= "" and params.title
    or ("%s call"):format(tostring(params.tool))
  return ("toolhost: %s — allow %s on %s?"):format(title, tostring(params.permission), patterns)
end

---Opens the diff in a scratch window that does not take the focus; returns a closer.
---@param diff string
---@param title string
---@return fun()
local function show_diff(diff, title)
  local where = config.options.permission.diff
  if not where or diff == "" then
    return function() end
  end
  local lines = vim.split(diff, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local win
  if where == "float" then
    local width = math.max(20, math.min(vim.o.columns - 4, 120))
    local height = math.max(3, math.min(#lines, vim.o.lines - 8))
    win = vim.api.nvim_open_win(buf, false, {
      relative = "editor",
      row = 1,
      col = math.floor((vim.o.columns - width) / 2),
      width = width,
      height = height,
      border = "rounded",
      title = " " .. title .. " ",
      title_pos = "center",
      style = "minimal",
    })
  else
    local height = math.max(3, math.min(#lines, math.floor(vim.o.lines * 0.4)))
    win = vim.api.nvim_open_win(buf, false, { split = "below", win = -1, height = height })
  end
  vim.wo[win].wrap = false
  vim.wo[win].foldenable = false
  vim.cmd("redraw")
  return function()
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
end

---Asks the user; calls `answer(reply)` once.
---@param params table
---@param answer fun(reply: toolhost.PermissionReply)
function M.prompt(params, answer)
  local diff = type(params.metadata) == "table" and params.metadata.diff
  local close =
    show_diff(type(diff) == "string" and diff or "", tostring(params.title or params.tool))
  local function reply(value)
    close()
    answer(value)
  end
  vim.ui.select(M.choices(params), {
    prompt = M.prompt_text(params),
    kind = "toolhost.permission",
    format_item = function(item)
      return item.label
    end,
  }, function(choice)
    if not choice then
      return reply({ reply = "reject" }) -- dismissed: no
    end
    if not choice.feedback then
      return reply({ reply = choice.reply })
    end
    -- vim.ui.input may be implemented with a window the select has not closed yet.
    vim.schedule(function()
      vim.ui.input({ prompt = "Tell the agent what to do instead: " }, function(text)
        if type(text) == "string" and vim.trim(text) ~= "" then
          reply({ reply = "reject", message = text })
        else
          reply({ reply = "reject" })
        end
      end)
    end)
  end)
end

-- One prompt at a time: a second ask waits for the first to be answered.
local busy = false
local queue = {} ---@type fun()[]

local function next_prompt()
  local start = table.remove(queue, 1)
  if start then
    busy = true
    start()
  else
    busy = false
  end
end

---permission/ask handler.
---@return toolhost.PermissionReply
function M.ask(_, params)
  if type(params) ~= "table" then
    return { reply = "reject", message = "permission/ask arrived without params" }
  end
  local reply = util.await(function(done)
    queue[#queue + 1] = function()
      local ok, err = pcall(M.prompt, params, function(value)
        vim.schedule(next_prompt)
        done(value)
      end)
      if not ok then
        log.error("the permission prompt failed: %s", err)
        vim.schedule(next_prompt)
        done({ reply = "reject", message = "The editor's permission prompt failed." })
      end
    end
    if not busy then
      next_prompt()
    end
  end)
  log.info(
    "permission %s for %s %s: %s",
    tostring(params.permission),
    tostring(params.tool),
    vim.inspect(params.patterns),
    reply and reply.reply
  )
  return reply or { reply = "reject" }
end

return M
