-- How the chat's cost grows with the reply: stream N text deltas (and N/10 tool calls)
-- into a chat buffer and print the median microseconds per delta, for two sizes.
-- Constant per-delta cost means linear total cost.
-- Run: .nvim-venv/bin/nvim --headless -u NONE -l bench/render.lua
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
vim.opt.runtimepath:prepend(vim.fs.dirname(here))
local chat_mod = require("crank.chat")
local Workspace = require("crank.client").Workspace
-- Every delta written as it comes (a model slower than the chat's write interval): the
-- cost of a write, highlight and folds included, not of a delta held for the next one.
chat_mod.STREAM_WRITE_MS = 0

local function run(n)
  chat_mod.by_root = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):match("crank://") then
      vim.api.nvim_buf_delete(b, { force = true })
    end
  end
  local ws = setmetatable({ root = "/bench", uri = "file:///bench", running = false, queue = {}, last_seq = {}, session_id = "s" }, Workspace)
  ws.request = function(_, _, _, cb)
    cb(nil, { messages = {} })
  end
  local chat = chat_mod.get(ws)
  chat:show()
  local seq, times = 0, {}
  local function ev(event)
    seq = seq + 1
    chat:on_event({ sessionId = "s", seq = seq, event = event })
  end
  ev({ type = "message_start", message = { role = "assistant", content = {} } })
  for i = 1, n do
    local t0 = vim.uv.hrtime()
    ev({ type = "message_update", delta = { kind = "text", contentIndex = 0, text = "word " .. i .. (i % 12 == 0 and "\n" or " ") } })
    times[#times + 1] = (vim.uv.hrtime() - t0) / 1000
    if i % 10 == 0 then
      ev({ type = "tool_execution_start", toolCallId = "t" .. i, toolName = "read", arguments = { path = "f" .. i } })
      ev({ type = "tool_execution_end", toolCallId = "t" .. i, result = { content = string.rep("line\n", 20), isError = false } })
    end
  end
  table.sort(times)
  return times[math.floor(#times / 2) + 1], vim.api.nvim_buf_line_count(chat.buf)
end

run(200) -- warm up
for _, n in ipairs({ 2000, 8000 }) do
  local median, lines = run(n)
  print(string.format("deltas=%d  lines=%d  median %.1f us/delta", n, lines, median))
end
os.exit(0)
