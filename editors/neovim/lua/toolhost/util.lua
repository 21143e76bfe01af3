---Small helpers shared by the modules: waiting inside request handlers, Neovim
---0.10/0.11 differences, ids and JSON shapes.
local M = {}

local has_011 = vim.fn.has("nvim-0.11") == 1

---Runs `start(done)` and returns what `done(...)` is called with.
---
---Neovim runs each server-to-client request handler inside a coroutine (see
---`vim.lsp.rpc`), so a handler can yield while it waits for the user or another
---language server, and its return value is sent once it resumes: nothing blocks
---the editor meanwhile. Outside a coroutine (a caller of our own), it falls back
---to `vim.wait`, which keeps processing events.
---@param start fun(done: fun(...))
---@param timeout_ms? integer only for the vim.wait fallback (default: no limit)
---@return ...
function M.await(start, timeout_ms)
  local co, is_main = coroutine.running()
  local finished, values, yielded = false, nil, false
  local function done(...)
    if finished then
      return
    end
    finished = true
    values = vim.F.pack_len(...)
    if yielded then
      -- Resume from the main loop: `done` may run in a fast callback (a timer) or
      -- inside another handler.
      vim.schedule(function()
        local ok, err = coroutine.resume(co, vim.F.unpack_len(values))
        if not ok then
          require("toolhost.log").error("a request handler failed after waiting: %s", err)
        end
      end)
    end
  end
  start(done)
  if finished then
    return vim.F.unpack_len(values)
  end
  if co and not is_main then
    yielded = true
    return coroutine.yield()
  end
  vim.wait(timeout_ms or math.huge, function()
    return finished
  end, 10)
  if not finished then
    return nil
  end
  return vim.F.unpack_len(values)
end

---A timer that calls `fn` once on the main loop after `ms`; returns a stop function.
---@param ms integer
---@param fn fun()
---@return fun()
function M.after(ms, fn)
  local timer = assert(vim.uv.new_timer())
  local stopped = false
  local function stop()
    if not stopped then
      stopped = true
      timer:stop()
      timer:close()
    end
  end
  timer:start(ms, 0, function()
    vim.schedule(function()
      if not stopped then
        stop()
        fn()
      end
    end)
  end)
  return stop
end

---A fresh id such as `call_5f0c…` (ids only need to be unique per connection).
---@param prefix string
---@return string
function M.new_id(prefix)
  local bytes = vim.uv.random(10)
  local hex = bytes
      and bytes:gsub(".", function(c)
        return string.format("%02x", c:byte())
      end)
    or string.format("%x%x", vim.uv.hrtime(), math.random(0, 0xffffff))
  return prefix .. "_" .. hex
end

---A table that encodes as a JSON object even when empty (`{}` would encode as `[]`).
---@param t table|nil
---@return table
function M.object(t)
  if t == nil or (type(t) == "table" and next(t) == nil) then
    return vim.empty_dict()
  end
  return t
end

---@param value any
---@return boolean
function M.is_null(value)
  return value == nil or value == vim.NIL
end

---@param client vim.lsp.Client
---@param method string
---@param params any
---@param handler fun(err: lsp.ResponseError?, result: any, ctx: lsp.HandlerContext)
---@param bufnr? integer
---@return boolean ok, integer? request_id
function M.request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

---@param client vim.lsp.Client
---@param method string
---@param params table
function M.notify(client, method, params)
  if has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

---@param client vim.lsp.Client
---@param id integer
function M.cancel_request(client, id)
  if has_011 then
    client:cancel_request(id)
  else
    client.cancel_request(id)
  end
end

---@param client vim.lsp.Client
---@param method string
---@param bufnr? integer
---@return boolean
function M.supports_method(client, method, bufnr)
  if has_011 then
    return client:supports_method(method, bufnr)
  end
  return client.supports_method(method, { bufnr = bufnr })
end

---@param client vim.lsp.Client
---@param force? boolean
function M.stop_client(client, force)
  if has_011 then
    client:stop(force)
  else
    client.stop(force)
  end
end

---The character index of byte `col` in `line`, in `encoding` (LSP positions).
---@param line string
---@param col integer byte index, 0-based
---@param encoding string "utf-8"|"utf-16"|"utf-32"
---@return integer
function M.char_index(line, col, encoding)
  col = math.max(0, math.min(col, #line))
  if encoding == "utf-8" or not line:find("[\128-\255]") then
    return col
  end
  if has_011 then
    return vim.str_utfindex(line, encoding, col, false)
  end
  local utf32, utf16 = vim.str_utfindex(line, col)
  return encoding == "utf-16" and utf16 or utf32
end

---The byte index of character `index` (in `encoding`) in `line`.
---@param line string
---@param index integer
---@param encoding string
---@return integer
function M.byte_index(line, index, encoding)
  if encoding == "utf-8" or not line:find("[\128-\255]") then
    return math.max(0, math.min(index, #line))
  end
  if has_011 then
    return vim.str_byteindex(line, encoding, index, false)
  end
  local ok, byte = pcall(vim.str_byteindex, line, index, encoding == "utf-16")
  return ok and byte or #line
end

---The file behind a `file:` URI, or nil for any other scheme.
---@param uri any
---@return string?
function M.uri_to_fname(uri)
  if type(uri) ~= "string" or not uri:match("^file:") then
    return nil
  end
  return vim.uri_to_fname(uri)
end

---The loaded buffer of `fname`, without creating one.
---@param fname string
---@return integer?
function M.loaded_buffer(fname)
  local buf = vim.fn.bufnr(fname)
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    return buf
  end
  return nil
end

---@param client vim.lsp.Client
---@return boolean
function M.is_toolhost(client)
  return client.name == "toolhost"
end

---``text`` cut to fit the command line, ending in ``tail`` when cut: a message longer
---than the line stops Neovim at "Press ENTER", which eats a key and holds back every
---callback (an agent panel's result included) until one is pressed.
---@param text string
---@param tail string
---@return string
function M.fit(text, tail)
  local room = math.max(20, (vim.v.echospace or vim.o.columns) - 12)
  if vim.fn.strdisplaywidth(text) <= room then
    return text
  end
  return vim.fn.strcharpart(text, 0, room - vim.fn.strdisplaywidth(tail)) .. tail
end

---Says ``text`` on one line that fits, the rest left to `:Toolhost log`.
---@param text string
---@param level? integer vim.log.levels
function M.say(text, level)
  local line = text:gsub("%s*\n%s*", " ")
  vim.notify(M.fit(line, "… (:Toolhost log)"), level or vim.log.levels.INFO)
end

return M
