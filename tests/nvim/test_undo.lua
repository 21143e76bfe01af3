-- Undo of an agent's turn as a person does it in Neovim: `:Toolhost undo` (the dry run
-- in the prompt, then the files back and their clean buffers reloaded), `:Toolhost
-- checkpoints` (the turns, their files, a diff preview), and the review of a change
-- made outside toolhost once its turn has ended.
local T = dofile(vim.env.TOOLHOST_TEST_REPO .. "/tests/nvim/harness.lua")

local root = T.project("undo", {
  ["a.txt"] = "alpha\n",
  ["b.txt"] = "beta\n",
  ["c.txt"] = "gamma\n",
})
vim.cmd.cd(root)
require("toolhost").setup({ cmd = T.toolhost, review = { enabled = false } })
local sidecar = T.client(root)
local api = require("toolhost")

local function lines_of(name)
  local buf = vim.fn.bufnr(name)
  return buf > 0 and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
end

T.test("Toolhost undo puts the agent's last turn back after showing its dry run", function()
  vim.cmd.edit(vim.fs.joinpath(root, "a.txt"))
  local a = vim.api.nvim_get_current_buf()
  T.run_tool("read", { filePath = vim.fs.joinpath(root, "c.txt") })
  T.eq(
    T.run_tool(
      "edit",
      { filePath = vim.fs.joinpath(root, "c.txt"), oldString = "gamma", newString = "GAMMA" }
    ).isError,
    false,
    "edit"
  )
  local ran = T.run_tool(
    "bash",
    { command = "echo agent > a.txt && rm b.txt && mkdir -p d/e && echo x > d/e/f" }
  )
  T.eq(ran.isError, false, "bash: " .. tostring(ran.output))
  vim.cmd("checktime")
  T.wait(function()
    return T.buf_text(a) == "agent\n"
  end, "the buffer to show the agent's change")
  local prompts = T.answer_prompts(function(items)
    return items[1] == "Undo" and "Undo" or nil
  end)
  vim.cmd("Toolhost undo")
  T.wait(function()
    return T.read(vim.fs.joinpath(root, "a.txt")) == "alpha\n"
  end, "a.txt back as it was", 20000)
  -- The restore writes its files one after another: b.txt may come back a moment later.
  T.wait(function()
    return T.read(vim.fs.joinpath(root, "b.txt")) == "beta\n"
  end, "b.txt back", 5000)
  T.eq(T.read(vim.fs.joinpath(root, "c.txt")), "gamma\n", "c.txt back (the edit tool's change)")
  T.eq(vim.fn.isdirectory(vim.fs.joinpath(root, "d")), 0, "the folders the command made are gone")
  local prompt = prompts[1].prompt
  for _, path in ipairs({ "a.txt", "b.txt", "c.txt", "d/e/f" }) do
    T.ok(prompt:find("put back: " .. path, 1, true), "the dry run names " .. path .. ": " .. prompt)
  end
  T.wait(function()
    return T.buf_text(a) == "alpha\n"
  end, "the clean buffer reloaded")
  io.stderr:write("[capture] the undo prompt:\n" .. prompt .. "\n")
end)

T.test(
  "Toolhost checkpoints lists the turns and their files, shows a diff, undoes the undo",
  function()
    vim.cmd("Toolhost checkpoints")
    T.wait(function()
      return #lines_of("toolhost://checkpoints") > 2
    end, "the checkpoints list")
    local lines = lines_of("toolhost://checkpoints")
    io.stderr:write("[capture] :Toolhost checkpoints\n" .. table.concat(lines, "\n") .. "\n")
    T.ok(lines[2]:find("[undo]", 1, true), "the newest is the undo: " .. lines[2])
    local turn_line
    for i, line in ipairs(lines) do
      if line:find("[turn]", 1, true) then
        turn_line = i
      end
    end
    T.ok(turn_line, "the agent's turn is listed")
    T.ok(lines[turn_line + 1]:find("a.txt", 1, true), "the turn's a.txt: " .. lines[turn_line + 1])
    T.ok(lines[turn_line + 1]:find("(bash)", 1, true), "changed by bash")
    local file_line = 3 -- the undo's a.txt: the diff from before the undo to now
    T.ok(lines[file_line]:find("a.txt", 1, true), "the undo's a.txt: " .. lines[file_line])
    vim.api.nvim_win_set_cursor(0, { file_line, 0 })
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
    T.wait(function()
      return #lines_of("toolhost://checkpoints/a.txt") > 0
    end, "the diff preview")
    local diff = table.concat(lines_of("toolhost://checkpoints/a.txt"), "\n")
    T.eq(vim.bo[vim.fn.bufnr("toolhost://checkpoints/a.txt")].filetype, "diff", "a diff buffer")
    T.ok(diff:find("+alpha", 1, true) or diff:find("-alpha", 1, true), "the diff: " .. diff)
    -- Undo the undo: the newest checkpoint (line 2) with `u`.
    vim.api.nvim_buf_delete(vim.fn.bufnr("toolhost://checkpoints"), { force = true })
    vim.cmd("Toolhost checkpoints")
    T.wait(function()
      return vim.api.nvim_buf_get_name(0):match("toolhost://checkpoints$")
        and #lines_of("toolhost://checkpoints") > 2
    end, "the checkpoints list again")
    T.answer_prompts(function()
      return "Undo"
    end)
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
    vim.api.nvim_feedkeys("u", "x", false)
    T.wait(function()
      return T.read(vim.fs.joinpath(root, "a.txt")) == "agent\n"
    end, "the undo undone", 20000)
    T.eq(T.read(vim.fs.joinpath(root, "b.txt")), nil, "b.txt deleted again")
  end
)

T.test("a change made outside toolhost during a turn is reviewed in the review window", function()
  local turn = "turn_outside"
  api.begin_turn(turn, "outside")
  T.run_tool("bash", { command = "echo again > c.txt" }, { turnID = turn })
  local list = {}
  T.wait(function()
    local result = sidecar:request_sync("checkpoints/list", vim.empty_dict(), 5000, 0)
    list = result and result.result and result.result.checkpoints or {}
    local last = list[#list]
    return last and last.turnID == turn and last.watching
  end, "the turn's first scan")
  local before = T.read(vim.fs.joinpath(root, "b.txt"))
  T.write(vim.fs.joinpath(root, "b.txt"), "a script wrote this\n") -- not through toolhost
  api.begin_turn("turn_next", "next") -- the turn ends
  T.wait(function()
    for _, pending in ipairs(api.pending()) do
      if pending.title and pending.title:find("Changed outside review", 1, true) then
        return true
      end
    end
  end, "the after-the-fact review", 20000)
  local pending = api.pending()[1]
  T.ok(pending.title:find("b.txt", 1, true), "it names b.txt: " .. pending.title)
  local ok, why = api.answer(pending.id, { reply = "reject" }) -- undo it
  T.ok(ok, "answered: " .. tostring(why))
  T.wait(function()
    return T.read(vim.fs.joinpath(root, "b.txt")) == before
  end, "b.txt back as it was before the turn", 20000)
end)

T.run()
