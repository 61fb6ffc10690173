-- End to end: the plugin against the real server (`python -m crank.lsp` from this
-- checkout) and the loopback model server (tests/support/model_server.py). Each test
-- gets its own project folder, model script and server process.
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
vim.cmd("runtime plugin/crank.lua")

local client = require("crank.client")
local permission = require("crank.permission")

H.after_each = H.reset
H.cleanup = H.reset
H.count_settled()

local function current_ws()
  return client.by_root[client.root_for(0)] or select(2, next(client.by_root))
end

local function wait_settled(what)
  H.wait_for(function()
    local ws = current_ws()
    if ws and ws:client() == nil then
      error("the server exited (code " .. tostring(ws.exit_code) .. ")")
    end
    return ws and ws.settled_count and ws.settled_count > 0 and not ws.running
  end, what or "the run to settle")
end

local function wait_next_settle(ws, settled, what)
  H.wait_for(function()
    return ws.settled_count > settled and not ws.running
  end, what)
end

H.test(":Crank shows the streamed answer in the chat buffer", function()
  local reply = "Hello from the loopback model, streamed in pieces."
  local port = H.model_server({ { text = reply, chunks = 6, delayMs = 30 }, { text = "Typed prompt answered." } })
  H.setup_crank(port)
  H.project({ ["README.md"] = "demo" })
  local snapshots = {}
  vim.cmd("Crank say hello")
  local chat = H.chat()
  H.ok(chat, "the chat exists")
  H.eq("crank://chat", vim.api.nvim_buf_get_name(chat.buf))
  H.eq("markdown", vim.bo[chat.buf].filetype)
  vim.api.nvim_buf_attach(chat.buf, false, {
    on_lines = function()
      snapshots[#snapshots + 1] = table.concat(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false), "\n")
    end,
  })
  wait_settled()
  local text = H.transcript()
  H.contains(text, "## You\n\nsay hello")
  H.contains(text, "## Crank\n\n" .. reply)
  local partial = false
  for _, snap in ipairs(snapshots) do
    if snap:find("## Crank", 1, true) and not snap:find(reply, 1, true) and snap:find("Hello", 1, true) then
      partial = true
    end
  end
  H.ok(partial, "a part of the reply was shown before the whole of it")
  H.contains(require("crank").statusline(), "crank: idle")

  -- A prompt typed under the separator goes with the send key (<C-s>).
  local ws = current_ws()
  local settled = ws.settled_count
  H.eq(chat.buf, vim.api.nvim_get_current_buf(), "the chat has the focus")
  chat:set_prompt("and a second one")
  vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
  H.eq("", chat:prompt_text(), "the prompt area is cleared once sent")
  wait_next_settle(ws, settled, "the run of the typed prompt")
  H.contains(H.transcript(), "## You\n\nand a second one")
  H.contains(H.transcript(), "Typed prompt answered.")
end)

H.test(":CrankFix leaves the fixed text in the buffer (through workspace/applyEdit), saved", function()
  local port = H.model_server({
    { text = "The add function subtracts.", toolCalls = { { id = "call_fix", name = "edit", arguments = { path = "calc.py", oldText = "return a - b", newText = "return a + b" } } } },
    { text = "Fixed: add now adds." },
  })
  H.setup_crank(port, { permission_mode = "autoEdit" })
  local root = H.project({ ["calc.py"] = "def add(a, b):\n    return a - b\n" })
  vim.cmd.edit(root .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  local diag_ns = vim.api.nvim_create_namespace("test.linter")
  vim.diagnostic.set(diag_ns, buf, { { lnum = 1, col = 4, message = "add() returns a - b", severity = vim.diagnostic.severity.ERROR } })
  vim.cmd("CrankFix")
  H.eq(buf, vim.api.nvim_get_current_buf(), "the cursor stays in the file being fixed")
  wait_settled()
  H.eq({ "def add(a, b):", "    return a + b" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  H.ok(not vim.bo[buf].modified, "the plugin wrote the buffer when the server asked (crank/saveDocument)")
  H.eq("    return a + b", vim.fn.readfile(root .. "/calc.py")[2], "the file on disk holds the fix too")
  H.contains(H.transcript(), "✓ **edit** `calc.py`")
  H.contains(H.transcript(), "Fixed: add now adds.")
  local bodies = vim.json.encode(H.model_requests(port))
  H.contains(bodies, "add() returns a - b", "the diagnostic reached the model")
end)

H.test(":CrankAbort settles the run, and the next prompt works", function()
  local port = H.model_server({ { text = "Working on it, slowly", chunks = 4, hangAfter = 3 }, { text = "After the abort." } })
  H.setup_crank(port)
  H.project({})
  vim.cmd("Crank start something long")
  H.wait_for(function()
    return H.transcript():find("Working", 1, true)
  end, "the first part of the reply")
  local ws = current_ws()
  H.ok(ws.running, "running before the abort")
  local stop_reason
  require("crank.actions").abort(ws, function(reason)
    stop_reason = reason
  end)
  H.wait_for(function()
    return stop_reason ~= nil
  end, "crank/abort's answer")
  H.eq("aborted", stop_reason)
  H.ok(not ws.running, "idle after the abort")
  H.ok(vim.tbl_contains(ws.events, "agent_settled"), "agent_settled arrived before the abort's answer")
  H.contains(H.transcript(), "_Aborted._")
  local settled = ws.settled_count
  vim.cmd("Crank and now")
  wait_next_settle(ws, settled, "the second run to settle")
  H.contains(H.transcript(), "After the abort.")
end)

H.test("a permission request is answered through vim.ui.select", function()
  local port = H.model_server({
    { toolCalls = { { id = "call_w1", name = "edit", arguments = { path = "notes.txt", oldText = "draft", newText = "final" } } } },
    { text = "Edited." },
    { toolCalls = { { id = "call_w2", name = "edit", arguments = { path = "notes.txt", oldText = "final", newText = "gone" } } } },
    { text = "Understood, left as is." },
  })
  H.setup_crank(port, { permission_mode = "ask" })
  local root = H.project({ ["notes.txt"] = "draft" })
  -- The stub stands in for a person: it picks "Allow" the first time, "Reject" after.
  local answer = "Allow"
  local calls = H.stub_select(function(label)
    return label == answer
  end)
  vim.cmd("Crank please edit notes.txt")
  wait_settled()
  H.eq(1, #calls, "asked once")
  H.eq("crank.permission", calls[1].kind)
  H.eq({ "Allow", "Allow for this session", "Always allow", "Reject", "Reject, with a reason…" }, calls[1].labels)
  H.contains(permission.last_preview or {}, "+final", "the diff was shown in a float first")
  H.eq({ "final" }, vim.fn.readfile(root .. "/notes.txt"))
  H.contains(H.transcript(), "Edited.")

  answer = "Reject"
  local ws = current_ws()
  local settled = ws.settled_count
  vim.cmd("Crank change it again")
  wait_next_settle(ws, settled, "the second run to settle")
  H.eq(2, #calls, "asked again")
  H.eq({ "final" }, vim.fn.readfile(root .. "/notes.txt"), "rejected: the file is unchanged")
  H.contains(H.transcript(), "✗ **edit** `notes.txt`")
end)

--- A project whose session holds two exchanges ("first question", "First answer.",
--- "second question", "Second answer."), both settled.
local function two_exchanges()
  local port = H.model_server({ { text = "First answer." }, { text = "Second answer." } })
  H.setup_crank(port)
  H.project({})
  vim.cmd("Crank first question")
  wait_settled()
  local ws = current_ws()
  local settled = ws.settled_count
  vim.cmd("Crank second question")
  wait_next_settle(ws, settled, "the second run")
end

H.test("reopening the chat restores the transcript (crank/messages)", function()
  two_exchanges()
  local before = H.transcript()
  H.contains(before, "Second answer.")

  -- Close the chat and wipe its buffer: reopening rebuilds it from the server.
  local old = H.chat().buf
  vim.cmd("bwipeout! " .. old)
  vim.cmd("Crank")
  H.wait_for(function()
    return H.transcript():find("Second answer.", 1, true)
  end, "the restored transcript")
  H.eq(before, H.transcript())
  H.ok(H.chat().buf ~= old, "a new buffer")
end)

H.test("a reopened chat shows the newest page of the server's transcript; :CrankEarlier the rest", function()
  two_exchanges()
  local whole = H.transcript()

  local chat_mod = require("crank.chat")
  local page = chat_mod.TRANSCRIPT_PAGE
  chat_mod.TRANSCRIPT_PAGE = 2
  local ok, err = pcall(function()
    vim.cmd("bwipeout! " .. H.chat().buf)
    vim.cmd("Crank")
    H.wait_for(function()
      return H.transcript():find("Second answer.", 1, true)
    end, "the newest page")
    local shown = H.transcript()
    H.ok(shown:find("^_2 earlier messages not shown: :CrankEarlier shows more_\n") ~= nil, shown)
    H.ok(not shown:find("First answer.", 1, true), "the first exchange is not read")
    vim.cmd("CrankEarlier")
    H.wait_for(function()
      return H.transcript():find("First answer.", 1, true)
    end, "the earlier page")
    H.eq(whole, H.transcript())
  end)
  chat_mod.TRANSCRIPT_PAGE = page
  assert(ok, err)
end)

H.test("a session picked with :CrankSessions in a new server process comes back whole", function()
  local port = H.model_server({ { text = "Answer from before the restart." } })
  local session_dir = H.setup_crank(port)
  H.project({})
  vim.cmd("Crank question before the restart")
  wait_settled()
  local before = H.transcript()
  local id = current_ws().client_id
  client.stop_all()
  H.wait_for(function()
    return vim.lsp.get_client_by_id(id) == nil
  end, "the first server to exit")
  vim.cmd("silent! bwipeout! crank://chat")

  H.setup_crank(port, { session_dir = session_dir })
  local calls = H.stub_select(function(label)
    return label:find("question before the restart", 1, true) ~= nil
  end)
  vim.cmd("CrankSessions")
  H.wait_for(function()
    return #calls == 1
  end, "the session picker")
  H.eq("crank.session", calls[1].kind)
  H.wait_for(function()
    return H.transcript():find("Answer from before the restart.", 1, true)
  end, "the session's transcript from the new server")
  H.eq(before, H.transcript())
end)

H.test(":checkhealth crank reports the server version and the provider", function()
  local port = H.model_server({})
  H.setup_crank(port)
  H.project({})
  vim.cmd("checkhealth crank")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(text, "server starts: crank")
  H.contains(text, "api=openai model=test")
  H.ok(not text:find("apiKey=x", 1, true), "the key is never shown")
  H.ok(text:find("sandbox: workspace-write, network off", 1, true) or text:find("no sandbox (", 1, true), "the sandbox is reported: " .. text)
end)

H.test(":checkhealth crank checks that the model server answers", function()
  local port = H.model_server({})
  H.setup_crank(port)
  H.project({})
  vim.cmd("checkhealth crank")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(text, "model server http://127.0.0.1:" .. port .. "/v1 answers (HTTP 404")
  H.ok(not text:find("ERROR", 1, true), "no error when everything works: " .. text)
end)

H.test(":checkhealth crank checks the model server the environment names (none in setup())", function()
  local port = H.model_server({})
  local url = "http://127.0.0.1:" .. port .. "/v1"
  require("crank").setup({
    cmd = H.server_cmd(),
    cmd_env = vim.tbl_extend("force", H.server_env(), { OPENAI_BASE_URL = url, CRANK_MODEL = "test" }),
    session_dir = H.tmpdir("sessions"),
    global_keymaps = false,
  })
  H.project({})
  vim.cmd("checkhealth crank")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(text, "no provider in setup(): the server's own settings apply")
  H.contains(text, "model: openai/test at " .. url)
  H.contains(text, "model server " .. url .. " answers (HTTP 404")
  H.ok(not text:find("api.openai.com", 1, true), "not the hosted default: " .. text)
  H.ok(not text:find("WARNING", 1, true) and not text:find("ERROR", 1, true), "all well: " .. text)
end)

H.test(":checkhealth crank: a model server that does not answer is an error", function()
  -- a port that was just free: nothing listens there
  local probe = vim.uv.new_tcp()
  probe:bind("127.0.0.1", 0)
  local dead = probe:getsockname().port
  probe:close()
  H.setup_crank(dead)
  H.project({})
  vim.cmd("checkhealth crank")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(text, "model server http://127.0.0.1:" .. dead .. "/v1 does not answer")
  H.contains(text, "ERROR")
end)

H.test(":checkhealth crank: no key anywhere is an error with the server's own words", function()
  -- the hosted API's default URL needs a key (a local baseUrl would not)
  require("crank").setup({
    cmd = H.server_cmd(),
    cmd_env = H.server_env(),
    provider = { api = "anthropic", model = "claude-x" },
    session_dir = H.tmpdir("sessions"),
    global_keymaps = false,
  })
  local saved = { vim.env.ANTHROPIC_API_KEY, vim.env.OPENAI_API_KEY, vim.env.CRANK_PROVIDER }
  vim.env.ANTHROPIC_API_KEY, vim.env.OPENAI_API_KEY, vim.env.CRANK_PROVIDER = nil, nil, nil
  H.project({})
  vim.cmd("checkhealth crank")
  vim.env.ANTHROPIC_API_KEY, vim.env.OPENAI_API_KEY, vim.env.CRANK_PROVIDER = saved[1], saved[2], saved[3]
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(text, "the server has no usable provider:")
  H.contains(text, "ERROR")
  H.contains(text, "ANTHROPIC_API_KEY")
  H.ok(not text:find("api.anthropic.com answers", 1, true), "no network check when the provider is not usable")
end)

H.test("settings from setup() are the user's: no 'this folder is not trusted ... ignored' in the log", function()
  local logged = {}
  local stock = vim.lsp.handlers["window/logMessage"]
  vim.lsp.handlers["window/logMessage"] = function(err, result, ctx)
    logged[#logged + 1] = result and result.message or ""
    return stock(err, result, ctx)
  end
  local port = H.model_server({})
  -- not trusted: the server asks workspace/configuration for the folder, and Neovim
  -- answers with the same settings (client-wide: setup() / vim.lsp.config)
  H.setup_crank(port, { trusted = false })
  local root = H.project({ ["a.py"] = "x = 1" })
  vim.cmd.edit(root .. "/a.py")
  local ws = client.attach(vim.api.nvim_get_current_buf())
  local state
  H.wait_for(function()
    local c = ws:client()
    if c and c.initialized and state == nil then
      ws:refresh_state(function(err, result)
        if not err then
          state = result
        end
      end)
    end
    return state ~= nil
  end, "crank/state")
  vim.lsp.handlers["window/logMessage"] = stock
  for _, message in ipairs(logged) do
    H.ok(not message:find("not trusted, so its", 1, true), "misattributed: " .. message)
  end
  H.eq("openai", state.model.api)
  H.eq(nil, state.configError)
end)

H.test("code actions offer Crank's fixes to vim.lsp; :CrankPrompt and :CrankModel answer", function()
  local port = H.model_server({})
  H.setup_crank(port)
  local root = H.project({ ["a.py"] = "x = undefined_name" })
  vim.cmd.edit(root .. "/a.py")
  local buf = vim.api.nvim_get_current_buf()
  local ws = client.attach(buf)
  H.wait_for(function()
    local c = ws:client()
    return c and c.initialized
  end, "the client to be initialized")
  local diag = { range = { start = { line = 0, character = 4 }, ["end"] = { line = 0, character = 18 } }, message = "undefined name", severity = 1 }
  local answers = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = diag.range,
    context = { diagnostics = { diag } },
  }, 10000)
  local titles, commands = {}, {}
  for _, answer in pairs(answers or {}) do
    for _, action in ipairs(answer.result or {}) do
      titles[#titles + 1] = action.title
      local cmd = action.command
      commands[#commands + 1] = type(cmd) == "table" and cmd.command or cmd
    end
  end
  H.ok(vim.tbl_contains(titles, "Fix with Crank"), "quick fix offered: " .. vim.inspect(titles))
  H.ok(vim.tbl_contains(titles, "Crank: fix this file"), "source action offered")
  H.ok(vim.tbl_contains(commands, "crank.fixFile"), "actions carry crank.fixFile")

  vim.cmd("CrankPrompt")
  H.wait_for(function()
    return vim.api.nvim_buf_get_name(0):find("crank://system-prompt", 1, true)
  end, "the system prompt buffer")
  H.contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), "Sources:")

  local calls = H.stub_select(function(_, item)
    return item.api == "openai" and item.id == "test"
  end)
  vim.cmd("CrankModel")
  H.wait_for(function()
    return ws.model and ws.model.id == "test" and #calls == 1
  end, "the model picker and crank/setModel")
  H.eq("crank.model", calls[1].kind)
end)

H.test(":CrankFollowUp queues a message that runs after the current one", function()
  local port = H.model_server({ { text = "one two three four five", chunks = 5, delayMs = 150 }, { text = "Followed up." } })
  H.setup_crank(port)
  H.project({})
  vim.cmd("Crank first")
  local ws
  H.wait_for(function()
    ws = current_ws()
    return ws and ws.running
  end, "the first run")
  vim.cmd("CrankFollowUp then this")
  H.wait_for(function()
    return ws.settled_count and ws.settled_count >= 1 and not ws.running and H.transcript():find("Followed up.", 1, true)
  end, "the follow-up's reply")
  local t = H.transcript()
  local first, follow = t:find("one two three four five", 1, true), t:find("## You\n\nthen this", 1, true)
  H.ok(first and follow and first < follow, "the follow-up comes after the first reply:\n" .. t)
end)

H.test(":CrankNew starts an empty session and the chat follows it", function()
  local port = H.model_server({ { text = "Old answer." } })
  H.setup_crank(port)
  H.project({})
  vim.cmd("Crank old question")
  wait_settled()
  local ws = current_ws()
  local old = ws.session_id
  H.contains(H.transcript(), "Old answer.")
  vim.cmd("CrankNew")
  H.wait_for(function()
    return ws.session_id ~= old and not H.transcript():find("Old answer.", 1, true)
  end, "the new, empty session")
  local err, state = ws:request_wait("crank/state", {})
  H.eq(nil, err)
  H.eq(ws.session_id, state.sessionId)
  -- the server names its error codes at initialize, so the hints copy no numbers
  H.eq(1001, ws.error_codes.runInProgress)
  H.eq("sessionLocked", require("crank.client").error_name(1007))
end)

H.test("one client per project root, attached to the file buffers inside it", function()
  local port = H.model_server({})
  H.setup_crank(port)
  local a = H.project({ ["one.py"] = "1", ["sub/two.py"] = "2" })
  vim.cmd.edit(a .. "/one.py")
  vim.cmd("Crank")
  local ws_a = current_ws()
  vim.cmd("wincmd p")
  vim.cmd.edit(a .. "/sub/two.py")
  local two = vim.api.nvim_get_current_buf()
  H.ok(vim.lsp.buf_is_attached(two, ws_a.client_id), "a file opened later is attached to the root's client")
  local b = H.project({ ["three.py"] = "3" })
  vim.cmd.edit(b .. "/three.py")
  vim.cmd("Crank")
  local ws_b = client.by_root[b]
  H.ok(ws_b and ws_b.client_id ~= ws_a.client_id, "a second root gets its own client")
  H.wait_for(function()
    return #vim.lsp.get_clients({ name = "crank" }) == 2
  end, "both clients to be running")
  H.eq(ws_b.uri, vim.uri_from_fname(b))
  local names = {}
  for _, chat in pairs(require("crank.chat").by_root) do
    names[#names + 1] = vim.api.nvim_buf_get_name(chat.buf)
  end
  table.sort(names)
  H.eq({ "crank://chat", "crank://chat/" .. vim.fs.basename(b) }, names)
end)

--- Positions of `needles` in `text`, failing unless each is found after the one before.
local function in_order(text, needles)
  local at = 0
  for _, needle in ipairs(needles) do
    local found = text:find(needle, at + 1, true)
    H.ok(found, string.format("%q not found after position %d in:\n%s", needle, at, text))
    at = found
  end
end

H.test(":CrankSteer during a run: the text enters after the current tool batch", function()
  local port = H.model_server(H.slow_read_script("Steered: doing it your way."))
  H.setup_crank(port, { permission_mode = "auto" })
  H.project({ ["README.md"] = "demo readme" })
  vim.cmd("Crank look at the readme")
  local ws
  H.wait_for(function()
    ws = current_ws()
    return ws and ws.running and H.transcript():find("Reading", 1, true)
  end, "the first reply to be streaming")
  vim.cmd("CrankSteer use the other approach")
  H.wait_for(function()
    return vim.tbl_contains(ws.queue.steering or {}, "use the other approach")
  end, "the steering text in the queue")
  H.ok(not H.transcript():find("use the other approach", 1, true), "not in the transcript while queued")
  wait_settled()
  in_order(H.transcript(), {
    "## You\n\nlook at the readme",
    "Reading the readme first, slowly.",
    "✓ **read** `README.md`",
    "## You\n\nuse the other approach",
    "## Crank\n\nSteered: doing it your way.",
  })
  H.eq({}, ws.queue.steering, "the queue is empty once the steering went in")
  local requests = H.model_requests(port)
  H.eq(2, #requests, "one request per turn")
  H.ok(not vim.json.encode(requests[1].body):find("use the other approach", 1, true), "not in the first request")
  local second = vim.json.encode(requests[2].body)
  local result_at = second:find("demo readme", 1, true)
  local steer_at = second:find("use the other approach", 1, true)
  H.ok(result_at and steer_at and result_at < steer_at, "the second request has the steering after the tool result")
end)

H.test(":CrankCompact shows the notice; reopening shows the summary", function()
  local long = string.rep("This answer is long enough to be worth summarising. ", 8)
  local port = H.model_server({
    estimateUsage = true,
    replies = {
      { text = "First: " .. long },
      { text = "Second: " .. long },
      { text = "Third: " .. long },
      { text = "We talked about three questions and their long answers." },
    },
  })
  H.setup_crank(port, { context = { keepRecentTokens = 60 } })
  H.project({})
  vim.cmd("Crank first question")
  wait_settled()
  local ws = current_ws()
  for _, q in ipairs({ "second question", "third question" }) do
    local settled = ws.settled_count
    vim.cmd("Crank " .. q)
    wait_next_settle(ws, settled, "the run of " .. q)
  end
  local told = #H.notifications
  vim.cmd("CrankCompact")
  H.wait_for(function()
    return H.notified("crank: compacted (", told)
  end, "crank/compact's answer")
  -- Let anything the answer set off (requests, redraws) finish before looking.
  H.eq(nil, (ws:request_wait("crank/state", {})))
  vim.wait(50)
  in_order(H.transcript(), {
    "Third: ",
    "_Compacting the conversation (manual)…_",
    "_Conversation compacted._",
  })
  local requests = H.model_requests(port)
  H.eq(4, #requests, "three prompts and one summary request")

  vim.cmd("bwipeout! " .. H.chat().buf)
  vim.cmd("Crank")
  H.wait_for(function()
    return H.transcript():find("Previous conversation summary:", 1, true)
  end, "the summary in the reopened chat")
  in_order(H.transcript(), {
    "## You\n\nPrevious conversation summary:",
    "We talked about three questions and their long answers.",
    "Third: ",
  })
  H.ok(not H.transcript():find("First: ", 1, true), "the summarised answers are gone from the transcript")
end)

H.test(":CrankMode readOnly offers no mutating tool and a write changes nothing; back to ask", function()
  local port = H.model_server({
    { toolCalls = { { id = "call_w1", name = "write", arguments = { path = "notes.txt", content = "overwritten" } } } },
    { text = "I cannot write in read-only mode." },
  })
  H.setup_crank(port, { permission_mode = "ask" })
  local root = H.project({ ["notes.txt"] = "keep me" })
  local calls = H.stub_select(function(label)
    return label == "Allow"
  end)
  vim.cmd("Crank")
  local ws = current_ws()
  vim.cmd("CrankMode readOnly")
  H.wait_for(function()
    return ws.permission_mode == "readOnly"
  end, "crank/setPermissionMode")
  local mutating = { write = true, edit = true, bash = true }
  local function offered_tools()
    local err, prompt = ws:request_wait("crank/systemPrompt", {})
    H.eq(nil, err)
    local names = {}
    for _, source in ipairs(prompt.sources or {}) do
      if source.kind == "tool" then
        names[#names + 1] = source.name
      end
    end
    for name in pairs(mutating) do
      local listed = prompt.text:find("\n- " .. name .. ":", 1, true) ~= nil
      if listed and not vim.tbl_contains(names, name) then
        names[#names + 1] = name
      end
    end
    return names
  end
  local names = offered_tools()
  H.ok(vim.tbl_contains(names, "read"), "read is still offered: " .. vim.inspect(names))
  for _, name in ipairs(names) do
    H.ok(not mutating[name], "readOnly offers " .. name)
  end

  vim.cmd("Crank overwrite notes.txt")
  wait_settled()
  H.eq({ "keep me" }, vim.fn.readfile(root .. "/notes.txt"), "the file is unchanged")
  H.eq(0, #calls, "nothing to ask about: the tool does not exist in readOnly")
  H.contains(H.transcript(), "✗ **write** `notes.txt`")
  local request_tools = {}
  for _, tool in ipairs(H.model_requests(port)[1].body.tools or {}) do
    request_tools[#request_tools + 1] = tool["function"] and tool["function"].name or tool.name
  end
  H.ok(#request_tools > 0 and not vim.tbl_contains(request_tools, "write"), "the model was not offered write: " .. vim.inspect(request_tools))

  vim.cmd("CrankMode ask")
  H.wait_for(function()
    return ws.permission_mode == "ask"
  end, "back to ask")
  H.ok(vim.tbl_contains(offered_tools(), "write"), "ask offers write again")
end)

H.test("retry notices come from the server's retry events (a 529, then success)", function()
  local port = H.model_server({
    { status = 529, retryAfter = 0.1, errorMessage = "Overloaded, try again" },
    { text = "Answered after the retry." },
  })
  H.setup_crank(port, { provider = { api = "anthropic", baseUrl = "http://127.0.0.1:" .. port, model = "test" } })
  H.project({})
  vim.cmd("Crank are you there")
  wait_settled()
  local ws = current_ws()
  in_order(table.concat(ws.events, " "), { "retry_start", "retry_end", "agent_settled" })
  in_order(H.transcript(), {
    "## You\n\nare you there",
    "_Retrying (attempt 1) in 0.1s: ",
    "_Retry succeeded._",
    "Answered after the retry.",
  })
  H.contains(H.transcript(), "Overloaded")
  H.eq(2, #H.model_requests(port))
end)

H.test("a compaction the server starts mid-run (threshold) shows its notices in the chat", function()
  -- About 2,000 tokens of reply in a 3,000-token window: the second prompt passes the
  -- threshold whatever the system prompt's size (it is about 1,750 tokens today).
  local long = string.rep("This answer is long enough to be worth summarising. ", 150)
  local port = H.model_server({
    estimateUsage = true,
    replies = {
      { text = "First: " .. long },
      { text = "A summary of the first question." },
      { text = "Second answer, after the compaction." },
    },
  })
  H.setup_crank(port, { provider = { contextWindow = 3000 }, context = { keepRecentTokens = 60 } })
  H.project({})
  vim.cmd("Crank first question")
  wait_settled()
  local ws = current_ws()
  local settled = ws.settled_count
  vim.cmd("Crank second question")
  wait_next_settle(ws, settled, "the second run")
  in_order(H.transcript(), {
    "## You\n\nsecond question",
    "_Compacting the conversation (threshold)…_",
    "_Conversation compacted._",
    "Second answer, after the compaction.",
  })
  H.contains(vim.json.encode(H.model_requests(port)[3].body), "A summary of the first question.", "the summary went to the model")
end)

H.test("/ commands: the chat completes the project's skill, /skill:review runs it, built-ins and unknown names", function()
  local port = H.model_server({ { text = "Reviewed by the skill." } })
  H.setup_crank(port)
  H.project({
    [".crank/skills/review/SKILL.md"] = "---\nname: review\ndescription: Review the change in a folder (e2e)\n---\nSKILL-BODY-MARKER-5e1: review the files named in the arguments.\n",
  })
  vim.cmd("Crank")
  local chat, ws = H.chat()
  local commands = require("crank.commands")
  local function listed(name)
    for _, c in ipairs(commands.by_root[ws.root] or {}) do
      if c.name == name then
        return c
      end
    end
  end
  H.wait_for(function()
    return listed("skill:review")
  end, "the server's command list with the project's skill")
  H.ok(listed("new") and listed("compact") and listed("model"), "the built-ins are listed")
  H.eq("skill", listed("skill:review").kind)

  -- A template added while the chat is open: the server says the list changed, the plugin asks again.
  vim.fn.mkdir(ws.root .. "/.crank/prompts", "p")
  vim.fn.writefile({ "---", "description: Fix the failing tests (e2e)", "argument-hint: <test>", "---", "Fix the test $1." }, ws.root .. "/.crank/prompts/fix-tests.md")
  H.wait_for(function()
    return listed("fix-tests")
  end, "crank/commandsChanged and the new list with the template")
  H.eq("template", listed("fix-tests").kind)
  H.eq("<test>", listed("fix-tests").argumentHint)

  -- An unknown command is refused with the list of commands; the text stays in the prompt.
  local since = #H.notifications
  chat:set_prompt("/nosuch-e2e keep me")
  vim.api.nvim_set_current_win(chat:window())
  vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
  H.wait_for(function()
    return chat:prompt_text() == "/nosuch-e2e keep me" and H.notified("nosuch-e2e", since)
  end, "the refusal, and the text back in the prompt")
  H.ok(H.notified("skill:review", since), "the refusal lists the commands")

  -- Completed with the omnifunc, then sent: the model gets the skill's text, the chat shows what was typed.
  vim.o.showmode = false
  chat:set_prompt("")
  vim.api.nvim_win_set_cursor(0, { chat:sep_row() + 2, 0 })
  vim.api.nvim_feedkeys(vim.keycode("i/skill:r<C-x><C-o> src/<Esc>"), "xt", false)
  H.eq("/skill:review src/", chat:prompt_text())
  vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
  wait_settled("the skill's run")
  local text = H.transcript()
  H.contains(text, "## You\n\n/skill:review src/")
  H.contains(text, "Reviewed by the skill.")
  H.ok(not text:find("SKILL-BODY-MARKER-5e1", 1, true), "the chat shows what was typed, not the skill's body:\n" .. text)
  local bodies = vim.json.encode(H.model_requests(port))
  H.contains(bodies, "SKILL-BODY-MARKER-5e1", "the model received the skill's text")

  -- /new: the chat moves to the new, empty session; /compact there has nothing to do.
  local old = ws.session_id
  chat:set_prompt("/new")
  vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
  H.wait_for(function()
    return ws.session_id ~= old and not H.transcript():find("Reviewed by the skill.", 1, true)
  end, "the new session in the chat")
  H.ok(not ws.running, "a built-in starts no run")
  since = #H.notifications
  chat:set_prompt("/compact")
  vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
  H.wait_for(function()
    return H.notified("not compacted", since)
  end, "the compaction's answer")
  -- /model without arguments: the model picker.
  local calls = H.stub_select(function()
    return false
  end)
  chat:set_prompt("/model")
  vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
  H.wait_for(function()
    return #calls == 1
  end, "the model picker")
  H.eq("crank.model", calls[1].kind)
  H.ok(#calls[1].labels >= 1, "the picker lists models")
end)

H.run()
