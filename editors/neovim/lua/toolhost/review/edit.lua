---Editing a proposal: a diff tab with the file as it is (left, read-only) and the
---proposed text (right, editable, where the cursor starts). `:w` there keeps the person's version for the answer (sent as
---`edited`), and the accept key writes, closes the tab and accepts.
local config = require("toolhost.config")
local hunks = require("toolhost.review.hunks")
local model = require("toolhost.review.model")
local queue = require("toolhost.review.queue")
local view = require("toolhost.review.view")

local M = {}

---Opens the diff tab for the file under the cursor in the review window; on the
---header (where :Toolhost review starts), for the review's first file.
function M.edit()
  local review = queue.shown()
  if not review then
    return
  end
  local file = view.here().file or review.files[1]
  if not file then
    vim.notify("toolhost: this review proposes no file to edit", vim.log.levels.INFO)
    return
  end
  if review.stale and review.stale[file] then
    vim.notify(
      ("toolhost: %s changed before this proposal reached you, so it cannot be edited here; accept it (toolhost moves it onto the file's new text, or says it cannot) or reject it"):format(
        file
      ),
      vim.log.levels.WARN
    )
    return
  end
  local base, proposed = hunks.texts(review, file)
  if review.edited[file] then
    proposed = vim.split(review.edited[file]:gsub("\n$", ""), "\n", { plain = true })
  end
  vim.cmd("tabnew")
  local left = vim.api.nvim_get_current_buf()
  vim.bo[left].buftype = "nofile"
  vim.bo[left].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(left, 0, -1, false, base)
  vim.bo[left].modifiable = false
  pcall(vim.api.nvim_buf_set_name, left, "toolhost://current/" .. file)
  vim.cmd("diffthis")
  -- The proposal on the right, as in :help toolhost-review-keys and VS Code's diff.
  vim.cmd("rightbelow vnew")
  local right = vim.api.nvim_get_current_buf()
  vim.bo[right].buftype = "acwrite"
  vim.bo[right].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, right, "toolhost://proposed/" .. file)
  vim.api.nvim_buf_set_lines(right, 0, -1, false, proposed)
  vim.bo[right].modified = false
  local ft = vim.filetype.match({ filename = file })
  if ft then
    vim.bo[left].filetype, vim.bo[right].filetype = ft, ft
  end
  vim.cmd("diffthis")
  local review_id = review.id
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = right,
    callback = function()
      local still = queue.find(review_id)
      if still then
        local text = table.concat(vim.api.nvim_buf_get_lines(right, 0, -1, false), "\n") .. "\n"
        still.edited[file] = text
        vim.bo[right].modified = false
        queue.changed()
        vim.notify(("toolhost: your version of %s is kept for the answer"):format(file))
      end
    end,
  })
  local accept_all = config.options.review.keys.accept_all
  if accept_all then
    vim.keymap.set("n", accept_all, function()
      vim.cmd("silent write")
      vim.cmd("tabclose")
      local still = queue.find(review_id)
      if still then
        queue.answer(review_id, model.accept_reply(still))
      end
    end, { buffer = right, desc = "toolhost: accept with your version" })
  end
end

return M
