-- Commands only; every module loads on first use.
if vim.g.loaded_toolhost then
  return
end
vim.g.loaded_toolhost = true

vim.api.nvim_create_user_command("Toolhost", function(args)
  require("toolhost.commands").run(args)
end, {
  nargs = "+",
  desc = "toolhost: list | run {tool} {json} | review | cancel | rules | log | restart | install",
  complete = function(arg_lead, cmd_line, cursor_pos)
    return require("toolhost.commands").complete(arg_lead, cmd_line, cursor_pos)
  end,
})
