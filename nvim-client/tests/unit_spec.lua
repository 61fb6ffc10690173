-- Pure parts and the chat renderer, without a server. The chat tests drive the buffer
-- with protocol-shaped crank/event params; the workspace they use is a stand-in that
-- answers crank/messages from a list (a mock: these tests are about rendering; the
-- e2e_*.lua tests run the same code against the real server). One test replays the run
-- recorded from the real server (tests/fixtures/run.json).
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
local format = require("crank.format")
local config = require("crank.config")

H.test("config rejects a bad option, naming it", function()
  local ok, err = pcall(config.apply, { permission_mode = "yolo" })
  H.ok(not ok, "apply should fail")
  H.contains(err, "permission_mode")
  ok, err = pcall(config.apply, { provider = { api = "gemini" } })
  H.ok(not ok)
  H.contains(err, "provider.api")
  ok, err = pcall(config.apply, { provider = { contextWindow = "8k" } })
  H.ok(not ok, "a context window that is not a number is refused")
  H.contains(err, "provider.contextWindow")
  config.apply({ provider = { api = "openai", contextWindow = 4096 } })
  H.eq(4096, config.init_options().crank.provider.contextWindow)
  config.apply({})
end)

H.test("init options carry the provider, session dir, mode and context in camelCase", function()
  config.apply({ provider = { api = "openai", model = "m" }, session_dir = "/tmp/s", permission_mode = "autoEdit", trusted = true, context = { keepRecentTokens = 50 } })
  local expected = { provider = { api = "openai", model = "m" }, sessionDir = "/tmp/s", permissionMode = "autoEdit", trusted = true, context = { keepRecentTokens = 50 } }
  H.eq({ crank = expected }, config.init_options())
  local ok, err = pcall(config.apply, { context = 50 })
  H.ok(not ok, "a context that is not a table is refused")
  H.contains(err, "option context")
  config.apply({})
end)

H.test("mcp_servers goes to the server as mcpServers; :CrankMcp's lines name state and error", function()
  local servers = { everything = { command = "npx", args = { "-y", "@modelcontextprotocol/server-everything" } } }
  config.apply({ mcp_servers = servers })
  H.eq(servers, config.init_options().crank.mcpServers)
  local ok, err = pcall(config.apply, { mcp_servers = "npx" })
  H.ok(not ok, "mcp_servers that is not a table is refused")
  H.contains(err, "mcp_servers")
  config.apply({ mcp_start = "firstUse" })
  H.eq("firstUse", config.init_options().crank.mcpStart)
  ok, err = pcall(config.apply, { mcp_start = "later" })
  H.ok(not ok, "an mcp_start that is neither open nor firstUse is refused")
  H.contains(err, "mcp_start")
  config.apply({})
  H.eq({ "No MCP servers are configured (see docs/mcp.md)." }, format.mcp_lines(nil))
  local lines = format.mcp_lines({
    { name = "everything", source = "editor", transport = "stdio", state = "ready", tools = { "mcp__everything__echo" } },
    { name = "ghost", source = "user", transport = "stdio", state = "failed", tools = {}, error = "not found\nstderr tail" },
  })
  H.eq({
    "everything (editor, stdio): ready, 1 tool",
    "    mcp__everything__echo",
    "ghost (user, stdio): failed, 0 tools",
    "  ! not found",
    "  ! stderr tail",
  }, lines)
  local ws = setmetatable({}, { __index = require("crank.client").Workspace })
  if ws.note_event then
    ws:note_event({ sessionId = "s", event = { type = "mcp_changed", servers = { { name = "x" } } } })
    H.eq("x", ws.mcp[1].name)
  end
end)

H.test("crank/saveDocument writes the buffer named by its uri, and refuses what is not open", function()
  local save = require("crank.save")
  local dir = H.tmpdir("save")
  local path = dir .. "/a.txt"
  vim.fn.writefile({ "old" }, path)
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "new" })
  H.eq({ saved = true }, save.handle({ uri = vim.uri_from_fname(path) }))
  H.eq({ "new" }, vim.fn.readfile(path))
  H.ok(not vim.bo[buf].modified, "written")
  local missing = save.handle({ uri = vim.uri_from_fname(dir .. "/nope.txt") })
  H.eq(false, missing.saved)
  H.contains(missing.reason, "not open")
  H.eq(false, save.handle({}).saved)
  vim.cmd("bwipeout!")
end)

H.test("tool summaries show the telling argument", function()
  H.eq("**read** `src/a.py`", format.tool_summary("read", { path = "src/a.py" }))
  H.eq("**bash** `ls -la`", format.tool_summary("bash", { command = "ls -la" }))
  H.eq("**think**", format.tool_summary("think", {}))
  H.eq("- ✓ **edit** `a.py`", format.tool_header("edit", { path = "a.py" }, "ok"))
end)

H.test("long tool results are fenced for folding, short ones are not", function()
  local long = format.tool_result_lines(string.rep("x\n", 20), false, 8)
  H.contains(long[1], format.FOLD_OPEN)
  H.eq("  " .. format.FOLD_CLOSE, long[#long])
  H.eq(22, #long)
  local short = format.tool_result_lines("one\ntwo", false, 8)
  H.eq({ "  ```", "  one", "  two", "  ```" }, short)
end)

H.test("statusline text: idle or running, context percent, cost", function()
  H.eq("", format.status(nil))
  H.eq("crank: idle", format.status({ running = false }))
  H.eq(
    "crank: running 25% $0.0123",
    format.status({ running = true, usage = { contextTokens = 50, contextWindow = 200, cost = 0.0123 } })
  )
end)

H.test("the sandbox: a statusline mark when commands are not confined, one health line", function()
  local confined = { mode = "workspace-write", network = false, available = true, confined = true, detail = "bubblewrap (/usr/bin/bwrap)" }
  H.eq("crank: idle", format.status({ running = false, sandbox = confined }))
  local none = { mode = "workspace-write", network = false, available = false, confined = false, detail = "bubblewrap (bwrap) is not installed" }
  H.eq("crank: idle [no sandbox]", format.status({ running = false, sandbox = none }))
  H.eq("crank: idle [sandbox off]", format.status({ running = false, sandbox = { mode = "off", confined = false } }))
  local text, ok = format.sandbox_line(confined)
  H.eq("sandbox: workspace-write, network off (bubblewrap (/usr/bin/bwrap))", text)
  H.ok(ok)
  text, ok = format.sandbox_line(none)
  H.contains(text, "every command asks first")
  H.ok(not ok)
  config.apply({ sandbox = { mode = "off", network = true } })
  H.eq({ mode = "off", network = true }, config.init_options().crank.sandbox)
  local bad = pcall(config.apply, { sandbox = { mode = "none" } })
  H.ok(not bad, "an unknown sandbox mode is refused")
  config.apply({})
end)

H.test("notices for retries, compaction and abort", function()
  H.contains(format.notice({ type = "retry_start", attempt = 2, delayMs = 1500, error = "overloaded" }), "attempt 2")
  H.contains(format.notice({ type = "compaction_start", reason = "threshold" }), "threshold")
  H.eq("_Aborted._", format.notice({ type = "agent_end", stopReason = "aborted" }))
  H.eq(nil, format.notice({ type = "turn_start", turn = 1 }))
end)

H.test("permission preview shows a unified diff", function()
  local lines = format.permission_lines({
    toolName = "edit",
    arguments = { path = "a.py" },
    preview = { kind = "diff", path = "a.py", oldText = "x = 1\n", newText = "x = 2\n" },
  })
  H.contains(lines, "-x = 1")
  H.contains(lines, "+x = 2")
  H.ok(not table.concat(lines, "\n"):find("unsaved", 1, true), "no unsaved-changes line for a saved file")
  local unsaved = format.permission_lines({
    toolName = "edit",
    arguments = { path = "a.py" },
    preview = { kind = "diff", path = "a.py", oldText = "x = 1\n", newText = "x = 2\n", unsavedChanges = true },
  })
  H.contains(unsaved, "Your unsaved changes to this file are saved with it.")
  local huge = format.permission_lines({
    toolName = "write",
    arguments = { path = "big.log" },
    preview = { kind = "diff", path = "big.log", oldText = "", newText = "x\n", oldTextOmitted = 2147483648 },
  })
  H.contains(huge, "2147483648 bytes, is too large or not text")
  local cmd = format.permission_lines({ toolName = "bash", arguments = {}, preview = { kind = "command", command = "rm -rf build" } })
  H.contains(cmd, "$ rm -rf build")
end)

H.test("permission float: plain text (no markdown marks), one slash before an absolute path", function()
  local lines = format.permission_lines({
    toolName = "edit",
    arguments = { path = "calc.py" },
    preview = { kind = "diff", path = "/srv/project/calc.py", oldText = "x = 1\n", newText = "x = 2\n" },
  })
  H.eq("Crank wants to run edit calc.py", lines[1])
  H.contains(lines, "--- /srv/project/calc.py")
  H.contains(lines, "+++ /srv/project/calc.py")
  H.ok(not table.concat(lines, "\n"):find("//", 1, true), "no double slash: " .. table.concat(lines, "\n"))
  local cwd = vim.fn.getcwd()
  local here = format.permission_lines({
    toolName = "write",
    arguments = { path = "n.py" },
    preview = { kind = "diff", path = cwd .. "/n.py", oldText = "", newText = "y\n" },
  })
  H.contains(here, "--- a/n.py")
  H.contains(here, "+++ b/n.py")
  -- the chat keeps its markdown
  H.eq("**edit** `calc.py`", format.tool_summary("edit", { path = "calc.py" }))
end)

H.test(":CrankPrompt names each tool, path and skipped reason", function()
  local lines = require("crank.actions").system_prompt_lines({
    text = "x",
    hash = "h",
    sources = {
      { kind = "tool", name = "read" },
      { kind = "tool", name = "edit" },
      { kind = "contextFile", path = "AGENTS.md" },
      { kind = "skipped", path = ".crank/x.md", reason = "not trusted" },
    },
  })
  H.contains(lines, "- tool: read")
  H.contains(lines, "- tool: edit")
  H.contains(lines, "- contextFile: AGENTS.md")
  H.contains(lines, "- skipped: .crank/x.md (not trusted)")
end)

-- the chat renderer ------------------------------------------------------------

local function stand_in(messages)
  local Workspace = require("crank.client").Workspace
  local ws = setmetatable({ root = "/tmp/unit-root", uri = "file:///tmp/unit-root", running = false, queue = { steering = {}, followUp = {} }, last_seq = {}, session_id = "s1", reloads = 0 }, Workspace)
  ws.commands_asked = 0
  ws.request = function(self, method, _, callback)
    if method == "crank/commands" then
      self.commands_asked = self.commands_asked + 1
      return callback(nil, { commands = self.command_list or {} })
    end
    assert(method == "crank/messages", "unexpected request " .. method)
    self.reloads = self.reloads + 1
    callback(nil, { messages = messages })
  end
  return ws
end

local seq = 0
local function ev(chat, event)
  seq = seq + 1
  chat.ws:note_event({ sessionId = "s1", seq = seq, event = event })
  chat:on_event({ workspace = chat.ws.uri, sessionId = "s1", runId = "r1", seq = seq, event = event })
end

local function fresh_chat(messages)
  require("crank.chat").by_root["/tmp/unit-root"] = nil
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):match("crank://chat") then
      vim.api.nvim_buf_delete(b, { force = true })
    end
  end
  seq = 0
  return require("crank.chat").get(stand_in(messages or {}))
end

--- Record each span `crank.highlight.apply` is asked to parse ({first, last}) until
--- the returned function is called.
local function spy_apply()
  local hl = require("crank.highlight")
  local apply, spans = hl.apply, {}
  hl.apply = function(buf, first, last)
    spans[#spans + 1] = { first, last }
    return apply(buf, first, last)
  end
  return spans, function()
    hl.apply = apply
  end
end

--- The most rows one of `spans` (spy_apply's) covered.
local function widest(spans)
  local rows = 0
  for _, span in ipairs(spans) do
    rows = math.max(rows, span[2] - span[1])
  end
  return rows
end

H.test("streamed deltas become the reply text, tool calls get their own lines", function()
  local chat = fresh_chat()
  ev(chat, { type = "agent_start" })
  ev(chat, { type = "message_start", message = { role = "user", content = "fix it" } })
  ev(chat, { type = "message_start", message = { role = "assistant", content = {} } })
  for _, piece in ipairs({ "Let me ", "look.\nFirst", " line two." }) do
    ev(chat, { type = "message_update", delta = { kind = "text", contentIndex = 0, text = piece } })
  end
  ev(chat, { type = "message_end", message = { role = "assistant", content = { { type = "text", text = "Let me look.\nFirst line two." } }, stopReason = "toolUse" } })
  ev(chat, { type = "tool_execution_start", toolCallId = "c1", toolName = "read", arguments = { path = "a.py" } })
  ev(chat, { type = "tool_execution_end", toolCallId = "c1", result = { content = "x = 1", isError = false } })
  ev(chat, { type = "message_start", message = { role = "assistant", content = {} } })
  ev(chat, { type = "message_update", delta = { kind = "text", contentIndex = 0, text = "Done." } })
  ev(chat, { type = "message_end", message = { role = "assistant", content = { { type = "text", text = "Done." } }, stopReason = "stop" } })
  ev(chat, { type = "agent_end", stopReason = "stop" })
  ev(chat, { type = "agent_settled" })
  H.eq({
    "## You",
    "",
    "fix it",
    "",
    "## Crank",
    "",
    "Let me look.",
    "First line two.",
    "",
    "- ✓ **read** `a.py`",
    "  ```",
    "  x = 1",
    "  ```",
    "",
    "Done.",
  }, chat:transcript())
  H.ok(not chat.ws.running, "settled")
  if require("crank.highlight").available() then
    local hl = require("crank.highlight")
    local groups = {}
    for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, 0, -1, { details = true })) do
      groups[mark[4].hl_group] = (groups[mark[4].hl_group] or 0) + 1
    end
    H.ok(groups["@markup.heading.2.markdown"] ~= nil, "the headers are highlighted: " .. vim.inspect(groups))
    for row, line in ipairs(chat:transcript()) do
      if line:match("^## ") then -- each written alone, as the last line of its block
        local marks = vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, { row - 1, 0 }, { row - 1, 0 }, { details = true })
        H.ok(#marks > 0 and marks[1][4].hl_group == "@markup.heading.2.markdown", "row " .. row .. " (" .. line .. ") is a heading")
      end
    end
    H.ok(groups["@markup.strong.markdown_inline"] ~= nil, "the card's bold name is highlighted")
    H.ok(groups["@markup.raw.markdown_inline"] ~= nil, "the card's path is highlighted as code")
    H.ok(vim.treesitter.highlighter.active[chat.buf] == nil, "no live highlighter parses the buffer at each change")
  end
end)

H.test("replaying crank/messages gives the same transcript as streaming", function()
  local messages = {
    { role = "user", content = "fix it" },
    { role = "assistant", content = { { type = "text", text = "Let me look.\nFirst line two." }, { type = "toolCall", id = "c1", name = "read", arguments = { path = "a.py" } } }, stopReason = "toolUse" },
    { role = "toolResult", toolCallId = "c1", toolName = "read", content = "x = 1", isError = false },
    { role = "assistant", content = { { type = "text", text = "Done." } }, stopReason = "stop" },
  }
  local chat = fresh_chat(messages)
  H.eq("- ✓ **read** `a.py`", chat:transcript()[10])
  H.eq("Done.", chat:transcript()[15])
  H.eq(15, #chat:transcript())
end)

H.test("a highlighted block draws what the live highlighter drew: groups, conceal, a link's target", function()
  if not require("crank.highlight").available() then
    return -- no markdown parser: nothing is highlighted
  end
  local hl = require("crank.highlight")
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "intro", "", "see **[the docs](https://example.org/a)**", "## Last" })
  hl.apply(buf, 2, 4)
  local found = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, hl.ns, 0, -1, { details = true })) do
    local d = mark[4]
    found[#found + 1] = { mark[2], d.hl_group or "", d.url or "", d.conceal or "-" }
  end
  local function has(row, group, url)
    for _, f in ipairs(found) do
      if f[1] == row and f[2] == group and (url == nil or f[3] == url) then
        return true
      end
    end
    return false
  end
  H.ok(not has(0, "@markup.heading.2.markdown") and #found > 0, "only rows 2 and 3: " .. vim.inspect(found))
  H.ok(has(2, "@markup.strong.markdown_inline"), "bold")
  H.ok(has(2, "", "https://example.org/a"), "the link's label carries its target")
  H.ok(has(3, "@markup.heading.2.markdown"), "a heading on the block's last line")
  vim.api.nvim_buf_delete(buf, { force = true })
end)

H.test("a streamed block is highlighted from its first row, whatever its first write holds", function()
  if not require("crank.highlight").available() then
    return -- no markdown parser: nothing is highlighted
  end
  local chat = fresh_chat()
  ev(chat, { type = "message_start", message = { role = "assistant", content = {} } })
  -- One write of several lines into the block's empty first line, then more.
  ev(chat, { type = "message_update", delta = { kind = "text", contentIndex = 0, text = "Intro:\n```python\n" } })
  chat:_write_held()
  ev(chat, { type = "message_update", delta = { kind = "text", contentIndex = 0, text = "# not a heading\nprint(1)\n```\nend" } })
  chat:_write_held()
  ev(chat, { type = "message_end", message = { role = "assistant", content = { { type = "text", text = "Intro:\n```python\n# not a heading\nprint(1)\n```\nend" } }, stopReason = "stop" } })
  local rows = chat:transcript()
  local fence = nil
  for i, line in ipairs(rows) do
    if line == "# not a heading" then
      fence = i - 1
    end
  end
  H.ok(fence ~= nil, "the code line is in: " .. vim.inspect(rows))
  local hl = require("crank.highlight")
  local opening = vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, { fence - 1, 0 }, { fence - 1, -1 }, { details = true })
  H.ok(#opening > 0 and opening[1][4].hl_group == "@markup.raw.block.markdown", "the fence of the first write is highlighted: " .. vim.inspect(opening))
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, { fence, 0 }, { fence, -1 }, { details = true })) do
    H.ok(not mark[4].hl_group:find("heading", 1, true), "a comment in a code fence is no heading: " .. mark[4].hl_group)
  end
end)

H.test("a transcript read into a shown chat fills the window above the prompt", function()
  local chat = fresh_chat()
  local win = chat:show() -- the cursor in the prompt area, as :Crank leaves it
  vim.cmd("redraw") -- drawn before the transcript comes, as it is
  local messages = {}
  for i = 1, 100 do
    messages[#messages + 1] = { role = "user", content = "step " .. i }
    messages[#messages + 1] = { role = "assistant", content = { { type = "text", text = "done " .. i }, { type = "toolCall", id = "v" .. i, name = "read", arguments = { path = "a" } } }, stopReason = "toolUse" }
    messages[#messages + 1] = { role = "toolResult", toolCallId = "v" .. i, toolName = "read", content = string.rep("line\n", 40), isError = false }
  end
  chat:render_messages(messages, 0)
  vim.cmd("redraw")
  local sep = chat:sep_row()
  H.eq(sep + 2, vim.api.nvim_win_get_cursor(win)[1], "the cursor stays in the prompt")
  -- Screen rows from the window's top to the cursor (a closed fold is one).
  local rows, lnum = 0, vim.fn.line("w0", win)
  vim.api.nvim_win_call(win, function()
    while lnum <= sep + 2 do
      rows = rows + 1
      local fold_end = vim.fn.foldclosedend(lnum)
      lnum = (fold_end > 0 and fold_end or lnum) + 1
    end
  end)
  local height = vim.api.nvim_win_get_height(win)
  H.ok(rows >= height - 1, ("%d of the window's %d rows show the transcript and the prompt"):format(rows, height))
  vim.cmd("only")
end)

H.test("each write of a long streamed reply parses the rows it wrote (a code fence whole), the message's end the reply once", function()
  if not require("crank.highlight").available() then
    return -- no markdown parser: nothing parses
  end
  local chat = fresh_chat()
  local hl = require("crank.highlight")
  local spans, restore = spy_apply()
  local text = {}
  local ok, err = pcall(function()
    ev(chat, { type = "message_start", message = { role = "assistant", content = {} } })
    local function write(piece)
      text[#text + 1] = piece
      ev(chat, { type = "message_update", delta = { kind = "text", contentIndex = 0, text = piece } })
      chat:_write_held()
    end
    for i = 1, 60 do
      write("line **" .. i .. "** of a long paragraph\n")
    end
    write("```lua\n")
    for i = 1, 5 do
      write("-- code " .. i .. "\n")
    end
    write("```\n\nend")
    local during = widest(spans)
    H.ok(during <= 9, "no write parsed more than its rows or its fence (7) and what follows: " .. during)
    for i = #spans, 1, -1 do
      spans[i] = nil
    end
    ev(chat, { type = "message_end", message = { role = "assistant", content = { { type = "text", text = table.concat(text) } }, stopReason = "stop" } })
    H.eq(1, #spans, "the message's end parses the reply once")
    H.ok(widest(spans) >= 68, "all of it: " .. widest(spans))
  end)
  restore()
  assert(ok, err)
  local rows = chat:transcript()
  for row, line in ipairs(rows) do
    if line == "-- code 3" then
      local marks = vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, { row - 1, 0 }, { row - 1, -1 }, { details = true })
      for _, mark in ipairs(marks) do
        H.ok(not (mark[4].hl_group or ""):find("heading", 1, true), "code is no heading")
      end
    end
  end
end)

H.test("a code fence streamed a character at a time keeps its colour after every write", function()
  if not require("crank.highlight").available() then
    return -- no markdown parser: nothing is highlighted
  end
  local hl = require("crank.highlight")
  local chat = fresh_chat()
  -- A real llama-server reply: a fence's colour was lost at the write after it, whose
  -- clearing dropped the mark that ended on its row.
  local text = "Here's the output:\n\n```\n1\n2\n```\n\nThis is it:\n\n```\n# python\n```\n\nOutput:"
  ev(chat, { type = "message_start", message = { role = "assistant", content = {} } })
  local lost = {}
  for at = 1, #text do
    ev(chat, { type = "message_update", delta = { kind = "text", contentIndex = 0, text = text:sub(at, at) } })
    chat:_write_held()
    for row, line in ipairs(chat:transcript()) do
      if line == "2" or line == "# python" then -- inside a fence once its closing row is written
        local covered = false
        for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, 0, { row - 1, -1 }, { details = true, overlap = true })) do
          covered = covered or (mark[4].hl_group == "@markup.raw.block.markdown" and (mark[4].end_row or mark[2]) >= row - 1)
        end
        if not covered then
          lost[#lost + 1] = ("after character %d, row %d (%s)"):format(at, row, line)
        end
      end
    end
  end
  H.eq({}, vim.list_slice(lost, 1, 3), #lost .. " rows of a fence without its colour")
end)

H.test("a reloaded transcript highlights the messages a window shows, each when first shown", function()
  if not require("crank.highlight").available() then
    return -- no markdown parser: nothing is highlighted
  end
  local chat_mod = require("crank.chat")
  local chat = fresh_chat()
  local hl = require("crank.highlight")
  local spans, restore = spy_apply()
  local messages = {}
  for i = 1, 60 do
    messages[#messages + 1] = { role = "user", content = "step " .. i }
    messages[#messages + 1] = { role = "assistant", content = { { type = "text", text = "done **" .. i .. "**" } }, stopReason = "stop" }
  end
  local function marks_on(row)
    return vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, { row, 0 }, { row, -1 }, { details = true })
  end
  local ok, err = pcall(function()
    chat:render_messages(messages, 0)
    local sep = chat:sep_row()
    H.ok(sep > 2 * chat_mod.HIGHLIGHT_AT_ONCE, "longer than what is highlighted at once: " .. sep)
    for _, span in ipairs(spans) do
      H.ok(span[1] >= sep - chat_mod.HIGHLIGHT_AT_ONCE - 4 and span[2] - span[1] <= 4, "a message near the end: " .. vim.inspect(span))
    end
    local last = sep - 1
    H.eq("done **60**", vim.api.nvim_buf_get_lines(chat.buf, last, last + 1, false)[1])
    local concealed = 0
    for _, mark in ipairs(marks_on(last)) do
      concealed = concealed + (mark[4].conceal and 1 or 0)
    end
    H.ok(concealed >= 2, "the last reply's ** are concealed")
    H.eq(0, #marks_on(0), "the first message waits until it is shown")
    local all = #vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, 0, -1, {})
    -- A window shows the top: its redraw has those messages highlighted, and no others.
    local win = chat:show()
    vim.api.nvim_win_set_cursor(win, { 1, 0 })
    vim.cmd("redraw")
    H.wait_for(function()
      return #marks_on(0) > 0
    end, "the shown messages to be highlighted")
    H.eq("@markup.heading.2.markdown", marks_on(0)[1][4].hl_group)
    local middle = math.floor(sep / 2)
    H.eq(0, #marks_on(middle), "a message no window showed is not parsed")
    -- Read again, the transcript keeps no marks of the rows it replaced.
    chat:close()
    chat:render_messages(messages, 0)
    H.eq(all, #vim.api.nvim_buf_get_extmarks(chat.buf, hl.ns, 0, -1, {}))
    vim.cmd("only")
  end)
  restore()
  assert(ok, err)
end)

H.test("a streamed reply costs a parse of its own block, a key typed in the prompt none, however long the transcript", function()
  if not require("crank.highlight").available() then
    return -- no markdown parser: nothing parses
  end
  -- A user's config that starts treesitter for every markdown buffer: the chat stops it.
  local group = vim.api.nvim_create_augroup("crank_spec_ts_start", { clear = true })
  vim.api.nvim_create_autocmd("FileType", { group = group, pattern = "markdown", callback = function(ev)
    pcall(vim.treesitter.start, ev.buf, "markdown")
  end })
  local messages = {}
  for i = 1, 300 do
    messages[#messages + 1] = { role = "user", content = "step " .. i }
    messages[#messages + 1] = { role = "assistant", content = { { type = "text", text = "done **" .. i .. "**\n\nwith `code`" } }, stopReason = "stop" }
  end
  local chat = fresh_chat(messages)
  vim.api.nvim_del_augroup_by_id(group)
  local win = chat:show()
  H.eq(2, vim.wo[win].conceallevel)
  H.ok(vim.treesitter.highlighter.active[chat.buf] == nil, "the live highlighter a FileType autocommand started is stopped")
  local transcript_rows = chat:sep_row()
  H.ok(transcript_rows > 1500, "a long transcript: " .. transcript_rows .. " rows")
  local chat_mod = require("crank.chat")
  local spans, restore = spy_apply()
  -- The window folds by expression: a write must not have it evaluated back to line 1.
  H.eq("expr", vim.wo[win].foldmethod)
  local foldexpr, folds = chat_mod.foldexpr, 0
  chat_mod.foldexpr = function(lnum)
    folds = folds + 1
    return foldexpr(lnum)
  end
  local ok, err = pcall(function()
    ev(chat, { type = "message_start", message = { role = "assistant", content = {} } })
    for i = 1, 40 do
      ev(chat, { type = "message_update", delta = { kind = "text", contentIndex = 0, text = "word **" .. i .. "**" .. (i % 8 == 0 and "\n" or " ") } })
      chat:_write_held() -- as the timer would: every delta written
    end
    H.ok(folds < 40 * 20, "the fold expression was evaluated " .. folds .. " times for 40 writes")
    ev(chat, { type = "tool_execution_start", toolCallId = "p1", toolName = "read", arguments = { path = "f" } })
    ev(chat, { type = "tool_execution_end", toolCallId = "p1", result = { content = "a\nb\n", isError = false } })
    local sep = chat:sep_row()
    local before = #spans
    for i = 1, 20 do -- keys typed in the prompt
      vim.api.nvim_buf_set_lines(chat.buf, sep + 1, sep + 2, false, { string.rep("x", i) })
    end
    H.eq(before, #spans, "typing parses nothing")
  end)
  restore()
  chat_mod.foldexpr = foldexpr
  assert(ok, err)
  H.ok(#spans >= 40, "each write highlighted its block: " .. #spans)
  H.ok(widest(spans) <= 8, "no parse wider than the block written: " .. widest(spans) .. " rows of " .. transcript_rows)
  H.ok(vim.treesitter.highlighter.active[chat.buf] == nil, "still no live highlighter")
  local text = table.concat(chat:transcript(), "\n")
  H.ok(text:find("word **40**", 1, true) ~= nil, "the reply is in")
  vim.cmd("only")
end)

H.test("a long session shows its newest page; :CrankEarlier shows a page more, the window kept on its lines", function()
  local chat_mod = require("crank.chat")
  local page = chat_mod.TRANSCRIPT_PAGE
  chat_mod.TRANSCRIPT_PAGE = 4
  local whole = {}
  for i = 1, 5 do
    whole[#whole + 1] = { role = "user", content = "question " .. i }
    whole[#whole + 1] = { role = "assistant", content = { { type = "text", text = "answer " .. i } }, stopReason = "stop" }
  end
  local chat = fresh_chat()
  local asked = {}
  -- Pages as crank/messages cuts them (tests/lsp/test_sessions.py runs the real one).
  chat.ws.request = function(_, method, params, callback)
    assert(method == "crank/messages", method)
    asked[#asked + 1] = params.limit
    local start = math.max(#whole - params.limit, 0)
    callback(nil, { messages = vim.list_slice(whole, start + 1), start = start, total = #whole })
  end
  local ok, err = pcall(function()
    local loaded = false
    chat:reload(function()
      loaded = true
    end)
    H.ok(loaded, "loaded")
    local lines = chat:transcript()
    H.eq("_6 earlier messages not shown: :CrankEarlier shows more_", lines[1])
    H.ok(not vim.tbl_contains(lines, "question 3"), "older than the page: not shown")
    H.contains(lines, "question 4")
    H.contains(lines, "answer 5")
    local win = chat:show()
    local row = vim.fn.index(chat:transcript(), "question 5") + 1
    vim.api.nvim_win_set_cursor(win, { row, 0 })
    chat:earlier()
    H.eq({ 4, 8 }, asked)
    H.eq("_2 earlier messages not shown: :CrankEarlier shows more_", chat:transcript()[1])
    H.contains(chat:transcript(), "question 2")
    H.eq("question 5", vim.api.nvim_get_current_line(), "the cursor stays on the line it was on")
    -- :CrankEarlier while a reload is on its way asks for its own page, not that one's.
    local held = {}
    local answer = chat.ws.request
    chat.ws.request = function(ws, method, params, callback)
      held[#held + 1] = function()
        answer(ws, method, params, callback)
      end
    end
    chat.wanted = 4
    chat:reload()
    chat:earlier()
    chat.ws.request = answer
    H.eq(2, #held, "two requests")
    for _, release in ipairs(held) do
      release()
    end
    H.eq({ 4, 8, 4, 8 }, asked)
    chat:earlier()
    H.eq("## You", chat:transcript()[1], "from its start: no line about earlier ones")
    H.contains(chat:transcript(), "question 1")
    local since = #H.notifications
    chat:earlier()
    H.eq(5, #asked, "nothing more to ask for")
    H.ok(H.notified("the whole transcript is shown", since), "said so")
    -- Another session starts again from one page, as does a chat whose session is not
    -- known yet (the server resumed one before the client asked which).
    chat.ws.session_id = "s2"
    chat:reload()
    H.eq(4, asked[#asked])
    chat.wanted, chat.wanted_session, chat.ws.session_id = nil, nil, nil
    chat:reload()
    H.eq(4, asked[#asked])
  end)
  chat_mod.TRANSCRIPT_PAGE = page
  assert(ok, err)
end)

H.test("a transcript is rendered with the window's folds off, and folds once it is in", function()
  local chat = fresh_chat()
  chat:show()
  local win = vim.fn.win_findbuf(chat.buf)[1]
  local Chat = require("crank.chat").Chat
  local insert, folding = Chat._insert, 0
  Chat._insert = function(self, lines)
    if vim.wo[win].foldmethod == "expr" then
      folding = folding + 1 -- each such insert had the fold expression evaluated again
    end
    return insert(self, lines)
  end
  local long = {}
  for i = 1, 30 do
    long[i] = "line " .. i
  end
  local messages = {
    { role = "user", content = "go" },
    { role = "assistant", content = { { type = "toolCall", id = "r", name = "read", arguments = { path = "a" } } }, stopReason = "toolUse" },
    { role = "toolResult", toolCallId = "r", toolName = "read", content = table.concat(long, "\n"), isError = false },
    { role = "assistant", content = { { type = "text", text = "done" } }, stopReason = "stop" },
  }
  local ok, err = pcall(chat.render_messages, chat, messages)
  Chat._insert = insert
  assert(ok, err)
  H.eq(0, folding)
  H.eq("expr", vim.wo[win].foldmethod)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  local open = vim.fn.search(format.FOLD_OPEN)
  H.ok(open > 0, "fold fence present")
  H.ok(vim.fn.foldclosed(open + 3) ~= -1, "long result folded after the render")
  vim.cmd("only")
end)

H.test("a reload asked while the same one is on its way waits for it, unless a run is active", function()
  local chat = fresh_chat()
  local answers = {}
  chat.ws.request = function(_, method, params, callback)
    assert(method == "crank/messages")
    answers[#answers + 1] = { params.sessionId, callback }
  end
  local heard = {}
  chat:reload(function() heard[#heard + 1] = "open" end)
  chat:reload(function() heard[#heard + 1] = "session_changed" end)
  H.eq(1, #answers)
  answers[1][2](nil, { messages = { { role = "user", content = "once" } } })
  H.eq({ "open", "session_changed" }, heard)
  H.contains(chat:transcript(), "once")
  chat:reload()
  H.eq(2, #answers) -- none on its way: asked anew
  chat.ws.running = true
  chat:reload()
  H.eq(3, #answers) -- a run adds messages: the later answer may hold more
  chat.ws.session_id = "s2"
  chat.ws.running = false
  chat:reload()
  H.eq(4, #answers)
  H.eq("s2", answers[4][1])
end)

H.test("live tool output is replaced by the result; long results fold", function()
  local chat = fresh_chat()
  ev(chat, { type = "tool_execution_start", toolCallId = "b", toolName = "bash", arguments = { command = "make" } })
  ev(chat, { type = "tool_execution_update", toolCallId = "b", output = "building\n" })
  H.contains(chat:transcript(), "building")
  H.contains(chat:transcript(), "⋯ **bash**")
  local long = {}
  for i = 1, 30 do
    long[i] = "line " .. i
  end
  ev(chat, { type = "tool_execution_end", toolCallId = "b", result = { content = table.concat(long, "\n"), isError = true } })
  local t = chat:transcript()
  H.contains(t, "✗ **bash** `make`")
  H.ok(not table.concat(t, "\n"):find("building", 1, true), "live output replaced")
  ev(chat, { type = "tool_execution_start", toolCallId = "c", toolName = "read", arguments = { path = "b" } })
  ev(chat, { type = "tool_execution_end", toolCallId = "c", result = { content = "short", isError = false } })
  chat:show()
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local open = vim.fn.search(format.FOLD_OPEN)
  H.ok(open > 0, "fold fence present")
  H.ok(vim.fn.foldclosed(open + 3) ~= -1, "long result folded")
  local short = vim.fn.search("  short")
  H.ok(short > 0, "short result present")
  H.eq(-1, vim.fn.foldclosed(short), "short result after a folded one stays open")
  vim.cmd("only")
end)

H.test("a chatty tool's output is drawn at most every STREAM_WRITE_MS, and its result is never drawn over", function()
  local chat = fresh_chat()
  local Chat = require("crank.chat").Chat
  local replace, draws = Chat._replace_tool, 0
  Chat._replace_tool = function(...)
    draws = draws + 1
    return replace(...)
  end
  local ok, err = pcall(function()
    ev(chat, { type = "tool_execution_start", toolCallId = "b", toolName = "bash", arguments = { command = "make" } })
    for i = 1, 5 do
      ev(chat, { type = "tool_execution_update", toolCallId = "b", output = "step " .. i .. "\n" })
    end
    H.eq(1, draws, "the first update drawn at once, the others held")
    H.wait_for(function()
      return table.concat(chat:transcript(), "\n"):find("step 5", 1, true) ~= nil
    end, "the held output to be drawn")
    H.eq(2, draws, "the four held updates drawn together")
    ev(chat, { type = "tool_execution_update", toolCallId = "b", output = "step 6\n" })
    ev(chat, { type = "tool_execution_end", toolCallId = "b", result = { content = "built", isError = false } })
    vim.wait(3 * require("crank.chat").STREAM_WRITE_MS)
    local text = table.concat(chat:transcript(), "\n")
    H.ok(text:find("built", 1, true) and not text:find("step 6", 1, true), "the result stays: " .. text)
  end)
  Chat._replace_tool = replace
  assert(ok, err)
end)

H.test("errors, retries and thinking are shown; a seq gap reloads at settle", function()
  local chat = fresh_chat()
  ev(chat, { type = "message_start", message = { role = "assistant", content = {} } })
  ev(chat, { type = "message_update", delta = { kind = "thinking", contentIndex = 0, text = "hmm\nmaybe" } })
  ev(chat, { type = "retry_start", attempt = 1, delayMs = 1000, error = "429" })
  ev(chat, { type = "message_end", message = { role = "assistant", content = {}, stopReason = "error", errorMessage = "boom" } })
  local t = chat:transcript()
  H.contains(t, "> hmm\n> maybe")
  H.contains(t, "Retrying (attempt 1)")
  H.contains(t, "**Error:** boom")
  local before = chat.ws.reloads
  seq = seq + 5
  ev(chat, { type = "agent_settled" })
  H.eq(before + 1, chat.ws.reloads, "reload after a gap")
end)

H.test("a /command's user message shows what was typed, not its expansion, streamed and replayed", function()
  local message = { role = "user", content = '<skill name="review">SKILL BODY</skill>\n\nsrc/', typed = "/skill:review src/" }
  local chat = fresh_chat({ message })
  H.contains(chat:transcript(), "/skill:review src/")
  H.ok(not table.concat(chat:transcript(), "\n"):find("SKILL BODY", 1, true), "replay shows what was typed")
  chat = fresh_chat()
  ev(chat, { type = "message_start", message = message })
  H.contains(chat:transcript(), "## You\n\n/skill:review src/")
  H.ok(not table.concat(chat:transcript(), "\n"):find("SKILL BODY", 1, true), "streaming shows what was typed")
end)

H.test("the prompt area: typed text is read back, cleared and restored", function()
  local chat = fresh_chat()
  vim.api.nvim_buf_set_lines(chat.buf, -1, -1, false, { "hello", "there" })
  H.eq("hello\nthere", chat:prompt_text())
  chat:clear_prompt()
  H.eq("", chat:prompt_text())
  chat:set_prompt("again")
  H.eq("again", chat:prompt_text())
  H.eq(0, #chat:transcript())
end)

H.test("the statusline follows the workspace state", function()
  local crank = require("crank")
  local chat = fresh_chat()
  require("crank.client").by_root[chat.ws.root] = chat.ws
  chat.ws.usage = { contextTokens = 10, contextWindow = 100, cost = 0.5 }
  vim.api.nvim_set_current_buf(chat.buf)
  H.eq("crank: idle 10% $0.5000", crank.statusline())
  require("crank.client").by_root[chat.ws.root] = nil
end)

H.test("a session change reloads; events of another session are ignored", function()
  local chat = fresh_chat({ { role = "user", content = "from the other session" } })
  local before = chat.ws.reloads
  chat:on_event({ sessionId = "old", seq = 99, event = { type = "message_start", message = { role = "user", content = "stray" } } })
  H.ok(not table.concat(chat:transcript(), "\n"):find("stray", 1, true), "other session ignored")
  chat.ws:note_event({ sessionId = "s1", seq = 100, event = { type = "session_changed", sessionId = "s2" } })
  chat:on_event({ sessionId = "s1", seq = 100, event = { type = "session_changed", sessionId = "s2" } })
  H.eq(before + 1, chat.ws.reloads)
  H.eq("s2", chat.ws.session_id)
  H.contains(chat:transcript(), "from the other session")
end)

H.test(":CrankFix's diagnostics: LSP ones kept as they are, others converted, range filters", function()
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a", "b", "c", "d" })
  local ns1 = vim.api.nvim_create_namespace("unit.lint")
  local lsp_original = { range = { start = { line = 3, character = 0 }, ["end"] = { line = 3, character = 1 } }, message = "from lsp", code = "E1" }
  vim.diagnostic.set(ns1, buf, {
    { lnum = 0, col = 0, end_col = 1, message = "first", severity = 1, source = "lint" },
    { lnum = 2, col = 0, message = "third", severity = 2 },
    { lnum = 3, col = 0, message = "from lsp", severity = 1, user_data = { lsp = lsp_original } },
  })
  local actions = require("crank.actions")
  local all = actions.lsp_diagnostics(buf)
  H.eq(3, #all)
  local by_message = {}
  for _, d in ipairs(all) do
    by_message[d.message] = d
  end
  H.eq({ start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 1 } }, by_message.first.range)
  H.eq("lint", by_message.first.source)
  H.eq(lsp_original, by_message["from lsp"])
  local ranged = actions.lsp_diagnostics(buf, { start = { line = 1, character = 0 }, ["end"] = { line = 2, character = 0 } })
  H.eq(1, #ranged)
  H.eq("third", ranged[1].message)
end)

H.test("crank/diagnostics answers a language server's Diagnostic as sent, others converted", function()
  local path = vim.fn.tempname() .. ".py"
  vim.fn.writefile({ "a", "b" }, path)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  local ns = vim.api.nvim_create_namespace("unit.review")
  local lsp_original = {
    range = { start = { line = 1, character = 0 }, ["end"] = { line = 1, character = 1 } },
    message = "from lsp",
    tags = { 1 },
  }
  vim.diagnostic.set(ns, buf, {
    { lnum = 0, col = 0, end_col = 1, message = "plain", severity = 2, source = "lint" },
    { lnum = 1, col = 0, message = "from lsp", severity = 1, user_data = { lsp = lsp_original } },
  })
  local uri = vim.uri_from_bufnr(buf)
  local answer = require("crank.review").diagnostics({ uris = { uri } })
  H.eq(uri, answer.items[1].uri)
  local by_message = {}
  for _, d in ipairs(answer.items[1].diagnostics) do
    by_message[d.message] = d
  end
  H.eq(lsp_original, by_message["from lsp"])
  H.eq({ start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 1 } }, by_message.plain.range)
  H.eq("lint", by_message.plain.source)
  vim.diagnostic.reset(ns, buf)
  vim.cmd("bwipeout! " .. buf)
end)

H.test("a refused prompt goes back into the prompt area", function()
  local chat = fresh_chat()
  chat.ws.request = function(_, method, params, callback)
    if method == "crank/prompt" then
      H.eq("followUp", params.whileRunning)
      return callback({ code = 1001, message = "a run is in progress" })
    end
    callback(nil, { messages = {} })
  end
  chat:set_prompt("do not lose me")
  require("crank.actions").send_from_chat(chat, nil)
  H.eq("do not lose me", chat:prompt_text())
end)

-- / commands -------------------------------------------------------------------

local COMMANDS = {
  { name = "compact", description = "Summarise the older part of the session", kind = "builtin", argumentHint = "[instructions]" },
  { name = "model", description = "Pick or set the model", kind = "builtin", argumentHint = "[api/id]" },
  { name = "new", description = "Start a new session", kind = "builtin" },
  { name = "skill:review", description = "Review the change in a folder", kind = "skill", argumentHint = "[path]" },
  { name = "fix-tests", description = "Fix the failing tests", kind = "template" },
}

--- A chat whose stand-in server lists COMMANDS, shown in the current window.
local function command_chat()
  local chat = fresh_chat()
  chat.ws.command_list = COMMANDS
  require("crank.commands").refresh(chat.ws)
  vim.api.nvim_set_current_buf(chat.buf)
  return chat
end

local function words(items)
  return vim.tbl_map(function(it)
    return it.word
  end, items)
end

H.test("the chat's completefunc and omnifunc offer the server's commands for a leading /", function()
  local commands = require("crank.commands")
  local chat = command_chat()
  H.eq("v:lua.require'crank.commands'.complete", vim.bo[chat.buf].completefunc)
  H.eq("v:lua.require'crank.commands'.complete", vim.bo[chat.buf].omnifunc)
  H.ok(chat.ws.commands_asked >= 1, "the list is fetched when the chat opens")
  local function at(line, col)
    chat:set_prompt(line)
    vim.api.nvim_win_set_cursor(0, { chat:sep_row() + 2, col })
    return commands.complete(1, "")
  end
  H.eq(0, at("/re", 3), "a leading /name: completion starts at the slash")
  H.eq(-3, at("//re", 4), "// sends a slash verbatim: no completion")
  H.eq(-3, at("look at /re", 11), "a slash later in the text is not a command")
  H.eq(-3, at("/compact now", 12), "past the name, typing arguments")
  chat:set_prompt("first line\n/re")
  vim.api.nvim_win_set_cursor(0, { chat:sep_row() + 3, 3 })
  H.eq(-3, commands.complete(1, ""), "only the start of the prompt")
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  H.eq(-3, commands.complete(1, ""), "not in the transcript")

  H.eq({ "/compact", "/model", "/new", "/skill:review", "/fix-tests" }, words(commands.complete(0, "/")))
  H.eq({ "/model", "/compact" }, words(commands.complete(0, "/m")), "prefix matches first, then names containing it")
  local review = commands.complete(0, "/REV")
  H.eq({ "/skill:review" }, words(review))
  H.eq("Review the change in a folder", review[1].menu)
  H.eq("/skill:review [path]", review[1].info)
  H.eq("skill", review[1].kind)
end)

H.test("<C-x><C-o> and <C-x><C-u> in the prompt complete a command; / at the start opens the list", function()
  local chat = command_chat()
  vim.o.showmode = false -- no "-- INSERT --" in the test's output
  chat:set_prompt("")
  vim.api.nvim_win_set_cursor(0, { chat:sep_row() + 2, 0 })
  vim.api.nvim_feedkeys(vim.keycode("i/ski<C-x><C-o> src/<Esc>"), "xt", false)
  H.eq("/skill:review src/", chat:prompt_text(), "the one match is inserted")
  chat:set_prompt("")
  vim.api.nvim_win_set_cursor(0, { chat:sep_row() + 2, 0 })
  vim.api.nvim_feedkeys(vim.keycode("i/fix<C-x><C-u><Esc>"), "xt", false)
  H.eq("/fix-tests", chat:prompt_text())

  -- Typing / alone opens the menu with every command (TextChangedI asks for <C-x><C-o>),
  -- leaving the slash as typed. Neovim fires TextChangedI only when no keys are waiting,
  -- which never happens while feedkeys() runs keys: the <Cmd> fires it as the pause would.
  chat:set_prompt("")
  vim.api.nvim_win_set_cursor(0, { chat:sep_row() + 2, 0 })
  local seen
  vim.api.nvim_create_autocmd("CompleteChanged", {
    buffer = chat.buf,
    once = true,
    callback = function()
      seen = vim.fn.complete_info({ "items" }).items
    end,
  })
  vim.api.nvim_feedkeys(vim.keycode("i/<Cmd>lua vim.api.nvim_exec_autocmds('TextChangedI', { buffer = 0 })<CR>"), "xt", false)
  H.ok(seen ~= nil, "the completion menu opened after /")
  H.eq(5, #seen, "every command is listed")
  H.eq("/compact", seen[1].word)
  H.eq("/", chat:prompt_text(), "the slash stays as typed until a command is picked")
end)

H.test("crank/commandsChanged fetches the list again", function()
  local chat = command_chat()
  require("crank").setup({ global_keymaps = false })
  local asked = chat.ws.commands_asked
  chat.ws.command_list = { { name = "only-one", description = "The one template left", kind = "template" } }
  require("crank.client").on_commands_changed(chat.ws)
  H.eq(asked + 1, chat.ws.commands_asked)
  H.eq({ "/only-one" }, words(require("crank.commands").complete(0, "/")))
end)

H.test("a built-in's answer does what its command does: /new shows the new session, /compact and /model report", function()
  local actions = require("crank.actions")
  local chat = command_chat()
  local answers = {
    ["/new"] = { sessionId = "s2", command = "new", result = { sessionId = "s2" } },
    ["/compact"] = { sessionId = "s1", command = "compact", result = { compacted = true, tokensBefore = 900, tokensAfter = 120 } },
    ["/model"] = { sessionId = "s1", command = "model", result = { models = { { api = "openai", id = "m1", contextWindow = 8192 }, { api = "openai", id = "m2" } } } },
  }
  local set = {}
  chat.ws.request = function(self, method, params, callback)
    if method == "crank/prompt" then
      return callback(nil, answers[params.text])
    elseif method == "crank/setModel" then
      set[#set + 1] = params.id
      return callback(nil, { model = { api = params.api, id = params.id } })
    end
    self.reloads = self.reloads + 1
    callback(nil, { messages = {} })
  end
  local reloads = chat.ws.reloads
  chat:set_prompt("/new")
  actions.send_from_chat(chat, nil)
  H.eq("s2", chat.ws.session_id, "the chat is on the new session")
  H.eq(reloads + 1, chat.ws.reloads, "and shows it")
  H.ok(not chat.ws.running, "no run started")
  local since = #H.notifications
  chat:set_prompt("/compact")
  actions.send_from_chat(chat, nil)
  H.ok(H.notified("compacted (900 → 120 tokens)", since), "the compaction is reported as :CrankCompact does")
  local original_select = vim.ui.select
  local calls = H.stub_select(function(label)
    return label:find("m2", 1, true) ~= nil
  end)
  chat:set_prompt("/model")
  actions.send_from_chat(chat, nil)
  local ok, err = pcall(H.wait_for, function()
    return #set == 1
  end, "the model picked")
  vim.ui.select = original_select
  assert(ok, err)
  H.eq("crank.model", calls[1].kind)
  H.eq(2, #calls[1].labels)
  H.eq({ "m2" }, set)
end)

H.test("error hints are found by the names the server gives its codes", function()
  local client = require("crank.client")
  local actions = require("crank.actions")
  local original = vim.notify
  local said = {}
  vim.notify = function(msg)
    said[#said + 1] = msg
  end
  client.by_client[-7] = { error_codes = { runInProgress = 4242, sessionLocked = 4343 } }
  actions.report("sending", { code = 4242, message = "a run is in progress" })
  actions.report("sending", { code = 1001, message = "an unnamed code" })
  client.by_client[-7] = nil
  vim.notify = original
  H.eq("crank: sending failed: a run is in progress (use :CrankSteer or :CrankFollowUp, or :CrankAbort)", said[1])
  H.eq("crank: sending failed: an unnamed code", said[2])
end)

H.test("a question still open when its run settles is withdrawn: rejected once, preview closed, a late pick ignored", function()
  local permission = require("crank.permission")
  local original = vim.ui.select
  local picks = {}
  vim.ui.select = function(_, _, on_choice)
    picks[#picks + 1] = on_choice
  end
  local answers = {}
  local params = { toolName = "bash", runId = "run-1", arguments = { command = "make" }, preview = { kind = "command", command = "make" } }
  permission.ask(params, function(a)
    answers[#answers + 1] = a
  end)
  local other = { kind = "command", command = "make test" }
  permission.ask(vim.tbl_extend("force", params, { runId = "run-2", preview = other }), function(a)
    answers[#answers + 1] = a
  end)
  local function float_texts()
    local out = {}
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(w).relative ~= "" then
        out[#out + 1] = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), "\n")
      end
    end
    return out
  end
  H.eq(2, #float_texts(), "both previews are open")
  H.eq(1, permission.withdraw("run-1"))
  H.eq(1, #answers)
  H.eq("reject", answers[1].decision)
  local left = float_texts()
  H.eq(1, #left, "the withdrawn question's preview is closed")
  H.contains(left[1], "make test", "the other run's question stays")
  picks[1]({ decision = "allow", label = "Allow" })
  H.eq(1, #answers, "a late pick for a withdrawn question answers nothing")
  picks[2]({ decision = "allow", label = "Allow" })
  H.eq("allow", answers[2].decision)
  H.eq(0, permission.withdraw(nil))
  vim.ui.select = original
end)

H.test("the permission preview is drawn before the stock vim.ui.select asks", function()
  -- The stock select (not a picker plugin) blocks in inputlist() before the screen is
  -- updated. inputlist is the one stand-in here: it records what was on screen then.
  local permission = require("crank.permission")
  local order = {}
  local stock_select, stock_inputlist = vim.ui.select, vim.fn.inputlist
  vim.ui.select = require("vim.ui").select
  local redraw = vim.cmd.redraw
  vim.cmd.redraw = function(...)
    order[#order + 1] = "redraw"
    return redraw(...)
  end
  vim.fn.inputlist = function()
    local floats = 0
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(w).relative ~= "" then
        floats = floats + 1
      end
    end
    order[#order + 1] = "asked with " .. floats .. " preview"
    return 1
  end
  local answer
  local ok, err = pcall(permission.ask, { toolName = "bash", preview = { kind = "command", command = "make" } }, function(a)
    answer = a
  end)
  vim.ui.select, vim.fn.inputlist, vim.cmd.redraw = stock_select, stock_inputlist, nil
  H.ok(ok, tostring(err))
  H.eq({ "redraw", "asked with 1 preview" }, order)
  H.eq("allow", answer and answer.decision)
end)

H.test("setup() maps no global keys by default; the <Plug> maps are there to bind", function()
  vim.cmd.runtime("plugin/crank.lua")
  require("crank").setup({})
  H.eq("", vim.fn.maparg("<leader>cc", "n"))
  H.eq("", vim.fn.maparg("<leader>cf", "n"))
  H.contains(vim.fn.maparg("<Plug>(crank-chat)", "n"), "Crank")
  H.contains(vim.fn.maparg("<Plug>(crank-fix)", "x"), "CrankFix")
  require("crank").setup({ global_keymaps = { ["<leader>xc"] = "Crank" } })
  H.contains(vim.fn.maparg("<leader>xc", "n"), "Crank")
  vim.keymap.del("n", "<leader>xc")
  local ok, err = pcall(require("crank").setup, { global_keymaps = "yes" })
  H.ok(not ok)
  H.contains(err, "global_keymaps")
  config.apply({})
end)

H.test("the API key can come from a function or a command, resolved at each start", function()
  local calls = 0
  config.apply({ provider = { api = "anthropic", apiKey = function()
    calls = calls + 1
    return "from-function"
  end } })
  H.eq("from-function", config.init_options().crank.provider.apiKey)
  H.eq(1, calls)
  H.eq("function", type(config.values.provider.apiKey), "the function is kept, not its key")
  config.apply({ provider = { api = "anthropic", apiKey = "cmd:printf 'from-command\\n'" } })
  H.eq("from-command", config.init_options().crank.provider.apiKey)
  config.apply({ provider = { api = "anthropic", apiKey = "cmd:exit 3" } })
  local ok, err = pcall(config.init_options)
  H.ok(not ok, "a failing key command is an error")
  H.contains(err, "exit 3")
  local bad, why = pcall(config.apply, { provider = { apiKey = 42 } })
  H.ok(not bad)
  H.contains(why, "provider.apiKey")
  config.apply({})
end)

H.test("on 0.11+, vim.lsp.config('crank', ...) is merged over what the plugin starts", function()
  if vim.fn.has("nvim-0.11") == 0 then
    return
  end
  local client = require("crank.client")
  local base = {
    name = "crank",
    cmd = { "crank", "serve" },
    root_dir = "/tmp/p",
    cmd_cwd = "/tmp/p",
    workspace_folders = { { uri = "file:///tmp/p", name = "p" } },
    handlers = { ["crank/event"] = print },
    init_options = { crank = { trusted = true } },
  }
  H.eq(base.cmd, client.with_user_config(base).cmd, "nothing configured: the plugin's own")
  vim.lsp.config("crank", {
    cmd = { "/opt/crank/bin/crank", "serve" },
    cmd_env = { CRANK_LOG_LEVEL = "debug" },
    root_dir = "/elsewhere",
    handlers = { ["crank/event"] = error, ["window/logMessage"] = print },
  })
  local merged = client.with_user_config(base)
  H.eq({ "/opt/crank/bin/crank", "serve" }, merged.cmd)
  H.eq("debug", merged.cmd_env.CRANK_LOG_LEVEL)
  H.eq("/tmp/p", merged.root_dir, "the root stays the plugin's")
  H.eq(print, merged.handlers["crank/event"], "Crank's handlers stay the plugin's")
  H.eq(print, merged.handlers["window/logMessage"], "the user's other handlers are kept")
  H.eq(true, merged.init_options.crank.trusted)
  vim.lsp.config("crank", { cmd = false, cmd_env = false, root_dir = false, handlers = false })
end)

H.test("a message's images show by name, type, size and where they are, and images_omitted is a notice", function()
  local fmt = require("crank.format")
  H.eq({ "[image: dot.png, image/png, 2x2, 75 B]", "[image: image/jpeg]" }, fmt.image_lines({ { name = "dot.png", mimeType = "image/png", width = 2, height = 2, bytes = 75, data = "AA==" }, { mimeType = "image/jpeg" } }))
  local stored = { type = "image", name = "chart.png", mimeType = "image/png", width = 60, height = 60, bytes = 10874, sha256 = string.rep("a", 64) }
  H.eq("[image: chart.png, image/png, 60x60, 11 KB, stored]", fmt.image_line(stored))
  H.eq("[image: image/gif, 2.4 MB]", fmt.image_line({ mimeType = "image/gif", bytes = 2.4 * 1024 * 1024 }))
  H.eq("[image: x.webp, image/webp, 1.5 KB]", fmt.image_line({ name = "x.webp", mimeType = "image/webp", bytes = 1536 }))
  H.eq({}, fmt.image_lines(nil))
  H.eq("_test does not accept images_", fmt.notice({ type = "images_omitted", count = 1, message = "test does not accept images" }))
end)

H.test("a server's notice (it cannot call tools, the window it runs) is one line in the chat", function()
  local fmt = require("crank.format")
  local line = "this server cannot call tools: the agent can only talk; see docs/vendors.md"
  H.eq("_" .. line .. "_", fmt.notice({ type = "notice", kind = "tools_unsupported", message = line }))
end)

-- Images on tool cards, and opening one. vim.ui.open is replaced to record the path:
-- there is no image viewer on the test machine (nor a desktop to show one on).
local PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGNgYGjQYGhgYLBp0LBpAAAPugLJHpRxBAAAAABJRU5ErkJggg=="
local SHA = string.rep("b", 64)

local function mode_of(path)
  return bit.band((vim.uv or vim.loop).fs_stat(path).mode, tonumber("777", 8))
end

local function row_of(chat, text)
  for i, line in ipairs(chat:transcript()) do
    if line:find(text, 1, true) then
      return i
    end
  end
  error(text .. " not in the transcript:\n" .. table.concat(chat:transcript(), "\n"))
end

H.test("a tool's images show on its card, live (after its text) and replayed", function()
  local chat = fresh_chat()
  local inline = { type = "image", name = "dot.png", mimeType = "image/png", width = 2, height = 2, bytes = 75, data = PNG_B64 }
  ev(chat, { type = "tool_execution_start", toolCallId = "r1", toolName = "read", arguments = { path = "dot.png" } })
  ev(chat, { type = "tool_execution_start", toolCallId = "r2", toolName = "read", arguments = { path = "b.txt" } })
  ev(chat, { type = "tool_execution_end", toolCallId = "r1", result = { content = "Image file dot.png, attached below.", isError = false } })
  ev(chat, { type = "message_end", message = { role = "toolResult", toolCallId = "r1", toolName = "read", content = "Image file dot.png, attached below.", isError = false, images = { inline } } })
  ev(chat, { type = "tool_execution_end", toolCallId = "r2", result = { content = "text", isError = false } })
  ev(chat, { type = "message_end", message = { role = "toolResult", toolCallId = "r2", toolName = "read", content = "text", isError = false } })
  H.eq({
    "- ✓ **read** `dot.png`",
    "  ```",
    "  Image file dot.png, attached below.",
    "  ```",
    "  [image: dot.png, image/png, 2x2, 75 B]",
    "- ✓ **read** `b.txt`",
    "  ```",
    "  text",
    "  ```",
  }, vim.list_slice(chat:transcript(), 3))
  H.eq(inline, chat:image_at(row_of(chat, "[image: dot.png") - 1), "the line knows its image")
  H.eq(nil, chat:image_at(row_of(chat, "  text") - 1), "a text line has none")

  local stored = { type = "image", name = "big.png", mimeType = "image/png", width = 60, height = 60, bytes = 10874, sha256 = SHA }
  local replay = fresh_chat({
    { role = "user", content = "look", images = { inline } },
    { role = "assistant", content = { { type = "toolCall", id = "r1", name = "read", arguments = { path = "big.png" } } }, stopReason = "toolUse" },
    { role = "toolResult", toolCallId = "r1", toolName = "read", content = "Image file big.png.", isError = false, images = { stored } },
  })
  local t = replay:transcript()
  H.eq("[image: dot.png, image/png, 2x2, 75 B]", t[5], "a user message's image: the same line")
  H.eq("  [image: big.png, image/png, 60x60, 11 KB, stored]", t[#t])
  H.eq(inline, replay:image_at(4))
  H.eq(stored, replay:image_at(#t - 1))
  replay:reload()
  H.eq(stored, replay:image_at(#replay:transcript() - 1), "a reload marks the lines again")
  H.eq(2, vim.tbl_count(replay.images), "and forgets the old marks")
end)

H.test("opening an image writes its bytes to a private file and hands it to vim.ui.open", function()
  local chat = fresh_chat({
    { role = "user", content = "look", images = { { type = "image", name = "../../etc/dot.png", mimeType = "image/png", bytes = 75, data = PNG_B64 } } },
    { role = "toolResult", toolCallId = "r1", toolName = "read", content = "Image.", isError = false, images = { { type = "image", name = "big.png", mimeType = "image/png", bytes = 75, sha256 = SHA } } },
  })
  local asked = {}
  local request = chat.ws.request
  chat.ws.request = function(self, method, params, callback)
    if method ~= "crank/image" then
      return request(self, method, params, callback)
    end
    asked[#asked + 1] = params
    if params.sha256 == SHA then
      return callback(nil, { mimeType = "image/png", data = PNG_B64, bytes = 75 })
    elseif params.sha256 == string.rep("d", 64) then
      return callback({ code = vim.lsp.protocol.ErrorCodes.MethodNotFound, message = "method not found: crank/image" })
    end
    callback({ code = 1009, message = "no image " .. params.sha256:sub(1, 12) .. "… in session s1: the blob is missing" })
  end
  local opened = {}
  local original = vim.ui.open
  vim.ui.open = function(path)
    opened[#opened + 1] = path
    return { wait = function() end }, nil
  end
  chat:show()
  local ok, err = pcall(function()
    vim.api.nvim_win_set_cursor(0, { row_of(chat, "[image: ../../etc/dot.png"), 0 })
    vim.cmd("CrankImage")
    H.eq(1, #opened, "the inline image opened at once, with no request")
    H.eq(0, #asked)
    H.eq(vim.base64.decode(PNG_B64), H.read_bytes(opened[1]), "the file holds the image's bytes")
    H.ok(opened[1]:match("/dot%-[0-9a-f]+%.png$"), "named by the image, never a path from it: " .. opened[1])
    H.eq(tonumber("600", 8), mode_of(opened[1]), "the file is the user's only")
    H.eq(tonumber("700", 8), mode_of(vim.fs.dirname(opened[1])), "so is its folder")

    -- A stored one: crank/image once, then from the cache; gx does the same.
    vim.api.nvim_win_set_cursor(0, { row_of(chat, "[image: big.png"), 0 })
    vim.cmd("CrankImage")
    H.wait_for(function()
      return #opened == 2
    end, "the stored image to open")
    H.eq({ { sessionId = "s1", sha256 = SHA } }, asked)
    H.ok(opened[2]:match("/big%-bbbbbbbbbbbb%.png$"), opened[2])
    H.eq(vim.base64.decode(PNG_B64), H.read_bytes(opened[2]))
    vim.api.nvim_feedkeys("gx", "x", false)
    H.eq(3, #opened, "gx opens it too")
    H.eq(1, #asked, "from the cache")

    -- Not an image line: :CrankImage says so; gx does what the global gx does.
    local since = #H.notifications
    vim.api.nvim_win_set_cursor(0, { row_of(chat, "look"), 0 })
    vim.cmd("CrankImage")
    H.ok(H.notified("no image on this line", since), "told there is none")
    local global_gx = 0
    vim.keymap.set("n", "gx", function()
      global_gx = global_gx + 1
    end)
    vim.api.nvim_feedkeys("gx", "x", false)
    H.eq(1, global_gx, "gx off an image line is the usual gx")
    H.eq(3, #opened)

    -- The server's error, with the image's name.
    local bad = { type = "image", name = "gone.png", mimeType = "image/png", bytes = 9000, sha256 = string.rep("c", 64) }
    since = #H.notifications
    require("crank.images").open(chat.ws, bad)
    H.ok(H.notified("cannot open [image: gone.png, image/png, 8.8 KB, stored]: no image cccccccccccc… in session s1: the blob is missing", since), "the server's message, named")
    since = #H.notifications
    require("crank.images").open(chat.ws, { type = "image", mimeType = "image/png", bytes = 9000, sha256 = string.rep("d", 64) })
    H.ok(H.notified("cannot open [image: image/png, 8.8 KB, stored]: this Crank server cannot send stored images", since), "an older server: said so")
    H.eq(3, #opened, "nothing opened")
  end)
  vim.ui.open = original
  vim.cmd("silent! only")
  if not ok then
    error(err, 0)
  end
end)

H.test("without a viewer, vim.ui.open's own error is shown with where the file is", function()
  local chat = fresh_chat({ { role = "user", content = "look", images = { { type = "image", name = "dot.png", mimeType = "image/png", bytes = 75, data = PNG_B64 } } } })
  local path = vim.env.PATH
  vim.env.PATH = H.tmpdir("empty-path") -- no xdg-open, wslview or open to find
  local since = #H.notifications
  local ok, err = pcall(require("crank.images").open, chat.ws, chat.images[next(chat.images)])
  vim.env.PATH = path
  H.ok(ok, err)
  H.ok(H.notified("crank: cannot open [image: dot.png, image/png, 75 B]: ", since), "a clear error")
  H.ok(H.notified("(the image is in ", since), "saying where the file is")
end)

-- The run recorded from the real server (tests/support/record_run.py writes
-- tests/fixtures/run.json; the Python suite fails when it is stale).
local function recorded_run()
  local file = assert(io.open(H.here .. "/fixtures/run.json", "r"))
  local run = vim.json.decode(file:read("*a"), { luanil = { object = true, array = true } })
  file:close()
  return run
end

H.test("the recorded run streamed renders as its crank/messages replay does", function()
  local run = recorded_run()
  local chat = fresh_chat()
  chat.ws.session_id = run.sessionId
  local question, usage
  for _, step in ipairs(run.steps) do
    if step.notify and step.params.event.type == "usage_update" then
      usage = step.params.event
    end
    if step.notify then
      chat.ws:note_event(step.params)
      chat:on_event(step.params)
    else
      question = step.params
    end
  end
  local streamed = chat:transcript()
  H.ok(not chat.ws.running, "the aborted run settled")
  H.eq({ steering = {}, followUp = {} }, chat.ws.queue, "the cleared queue is empty")
  H.eq(usage, chat.ws.usage, "the meter shows the last usage_update")
  H.contains(streamed, "> The user says add() is wrong.")
  H.contains(streamed, "✗ **bash** `python3 test_calc.py`")
  H.contains(streamed, "FAILED test_calc.py::test_add - assert -1 == 5")
  H.contains(streamed, "Retrying (attempt 1)")
  H.contains(streamed, "Aborted by the user before it finished.")
  -- What a reload shows (crank/messages) is what the stream showed, minus its notices.
  local function without_notices(lines)
    local out = {}
    for _, line in ipairs(lines) do
      local notice = line:match("^_.+_$") ~= nil
      if not notice and not (line == "" and out[#out] == "") then
        out[#out + 1] = line
      end
    end
    if out[#out] == "" then
      out[#out] = nil
    end
    return out
  end
  local replayed = fresh_chat(run.answers.messages.messages):transcript()
  H.eq(without_notices(replayed), without_notices(streamed))
  -- The question as the server asked it: the edit's diff of calc.py.
  local lines = format.permission_lines(question)
  H.contains(lines, "Crank wants to run")
  H.contains(lines, "-    return a - b")
  H.contains(lines, "+    return a + b")
end)

H.run()
