-- What the chat costs the editor in a real terminal, where Neovim redraws (the headless
-- bench/render.lua never does, so it cannot see the highlighter or the folds): loaded
-- into a Neovim that bench/stream_ui.sh starts in tmux, it shows a chat holding a
-- transcript of CRANK_BENCH_MESSAGES exchanges, then either streams CRANK_BENCH_DELTAS
-- text deltas CRANK_BENCH_INTERVAL ms apart (mode "stream"), as many chunks of a
-- running command's output (mode "tool"), or waits for keys typed
-- into the prompt (mode "type": the driver sends them; `bench_typed(n)` is called
-- after the last). It writes one line to CRANK_BENCH_OUT: the transcript's rows and
-- the CPU time the Neovim process spent per delta, chunk or key (getrusage).
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
vim.opt.runtimepath:prepend(vim.env.CRANK_BENCH_CLIENT or vim.fs.dirname(here))
local chat_mod = require("crank.chat")
local Workspace = require("crank.client").Workspace

local out = vim.env.CRANK_BENCH_OUT
local exchanges = tonumber(vim.env.CRANK_BENCH_MESSAGES or "0")
local messages = {}
for i = 1, exchanges do
  messages[#messages + 1] = { role = "user", content = "question " .. i }
  local paragraphs = {}
  for p = 1, 3 do
    paragraphs[#paragraphs + 1] = ("word **%d** `x` "):format(p):rep(6) .. "\nmore text " .. i
  end
  messages[#messages + 1] = { role = "assistant", content = { { type = "text", text = table.concat(paragraphs, "\n\n") } }, stopReason = "stop" }
end
local ws = setmetatable({ root = "/bench", uri = "file:///bench", running = false, queue = {}, last_seq = {}, session_id = "s" }, Workspace)
ws.request = function(_, _, _, callback)
  callback(nil, { messages = messages })
end
local chat = chat_mod.get(ws)
local win = chat:show()
vim.cmd("only")
vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(chat.buf), 0 })

local function cpu_us()
  local usage = vim.uv.getrusage()
  return (usage.utime.sec + usage.stime.sec) * 1e6 + usage.utime.usec + usage.stime.usec
end

local function report(count, what, began)
  local rows = chat:sep_row()
  local file = assert(io.open(out, "w"))
  file:write(string.format("%d %.3f %s\n", rows, (cpu_us() - began) / 1000 / count, what))
  file:close()
  vim.cmd("qa!")
end

if vim.env.CRANK_BENCH_MODE == "type" then
  local began
  _G.bench_typing = function()
    began = cpu_us()
  end
  _G.bench_typed = function(count)
    report(count, "key", began)
  end
  return
end

local deltas = tonumber(vim.env.CRANK_BENCH_DELTAS or "300")
local interval = tonumber(vim.env.CRANK_BENCH_INTERVAL or "10")
local seq = 0
local function event(e)
  seq = seq + 1
  chat:on_event({ sessionId = "s", seq = seq, event = e })
end
local tool = vim.env.CRANK_BENCH_MODE == "tool"
vim.defer_fn(function()
  if tool then -- a command's output, a chunk each interval (a build, a test run)
    event({ type = "tool_execution_start", toolCallId = "t", toolName = "bash", arguments = { command = "make" } })
  else
    event({ type = "message_start", message = { role = "assistant", content = {} } })
  end
  local sent, began = 0, cpu_us()
  local timer = vim.uv.new_timer()
  timer:start(interval, interval, vim.schedule_wrap(function()
    sent = sent + 1
    if tool then
      event({ type = "tool_execution_update", toolCallId = "t", output = "compiling `src/" .. sent .. ".c` ...\n" })
    else
      local text = "word **" .. sent .. "** `x` " .. (sent % 60 == 0 and "\n\n" or sent % 12 == 0 and "\n" or " ")
      event({ type = "message_update", delta = { kind = "text", contentIndex = 0, text = text } })
    end
    if sent == deltas then
      timer:stop()
      -- the last write (held up to crank.chat.STREAM_WRITE_MS) and its redraw
      vim.defer_fn(function()
        report(deltas, tool and "update" or "delta", began)
      end, 300)
    end
  end))
end, 500)
