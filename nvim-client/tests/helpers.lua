-- Shared by the headless tests: a tiny runner, waiting, and the real server setup.
--
-- Run a test file with: nvim --headless -u NONE -l tests/<file>.lua
-- It exits non-zero when any test fails.
local H = {}

H.here = vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h"))
H.plugin = vim.fs.dirname(H.here)
H.repo = vim.fs.dirname(H.plugin)

vim.opt.runtimepath:prepend(H.plugin)
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. "F"

-- Messages from the plugin (and Neovim's LSP handlers) on lines of their own, and
-- kept in H.notifications for tests that check what the user was told.
H.notifications = {}
vim.notify = function(msg)
  H.notifications[#H.notifications + 1] = tostring(msg)
  io.stderr:write("[notify] " .. tostring(msg) .. "\n")
end

--- Whether a notification since index `since` contains `text`.
function H.notified(text, since)
  for i = (since or 0) + 1, #H.notifications do
    if H.notifications[i]:find(text, 1, true) then
      return true
    end
  end
  return false
end
_G.print = function(...)
  local parts = {}
  for i = 1, select("#", ...) do
    parts[i] = tostring((select(i, ...)))
  end
  io.stderr:write("[print] " .. table.concat(parts, " ") .. "\n")
end

local results = { passed = 0, failed = 0 }
local cases = {}

--- Register a test. CRANK_SPEC_FILTER=text runs only the tests whose name has it.
function H.test(name, fn)
  local only = vim.env.CRANK_SPEC_FILTER
  if only and only ~= "" and not name:find(only, 1, true) then
    return
  end
  cases[#cases + 1] = { name = name, fn = fn }
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(string.format("%s: expected %s, got %s", what or "value", vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function H.ok(cond, what)
  if not cond then
    error(what or "assertion failed", 2)
  end
end

function H.contains(haystack, needle, what)
  if type(haystack) == "table" then
    haystack = table.concat(haystack, "\n")
  end
  if not tostring(haystack):find(needle, 1, true) then
    error(string.format("%s: %q not found in:\n%s", what or "text", needle, haystack), 2)
  end
end

--- Wait (running the event loop) until `cond()` is truthy, or fail naming `what`.
function H.wait_for(cond, what, timeout)
  local failure
  local ok = vim.wait(timeout or 20000, function()
    local good, value = pcall(cond)
    if not good then
      failure = value
      return true
    end
    return value
  end, 10)
  if failure then
    error(tostring(failure) .. " (while waiting for " .. (what or "a condition") .. ")", 2)
  end
  if not ok then
    error("timed out waiting for " .. (what or "a condition"), 2)
  end
end

function H.run()
  for _, case in ipairs(cases) do
    local ok, err = xpcall(case.fn, debug.traceback)
    if ok then
      results.passed = results.passed + 1
      io.stdout:write("ok   " .. case.name .. "\n")
    else
      results.failed = results.failed + 1
      io.stdout:write("FAIL " .. case.name .. "\n" .. tostring(err) .. "\n")
    end
    if H.after_each then
      pcall(H.after_each)
    end
  end
  io.stdout:write(string.format("%d passed, %d failed\n", results.passed, results.failed))
  if H.cleanup then
    pcall(H.cleanup)
  end
  os.exit(results.failed == 0 and 0 or 1)
end

--- A file's bytes.
function H.read_bytes(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("*a")
  f:close()
  return data
end

--- A fresh temporary directory.
function H.tmpdir(name)
  local dir = vim.fn.tempname() .. "-" .. (name or "crank")
  vim.fn.mkdir(dir, "p")
  return vim.fs.normalize(vim.uv.fs_realpath(dir) or dir)
end

local model_servers = {}

--- Start tests/support/model_server.py with `script`; returns its port.
function H.model_server(script)
  local python = vim.env.CRANK_PYTHON or "python3"
  local file = vim.fn.tempname() .. ".json"
  vim.fn.writefile({ vim.json.encode(script) }, file)
  local port, exited
  local out = ""
  local proc = vim.system({ python, H.repo .. "/tests/support/model_server.py", "--script", file }, {
    stdout = function(_, data)
      if data then
        out = out .. data
        port = port or tonumber(out:match("PORT (%d+)"))
      end
    end,
    stderr = function(_, data)
      if data and data ~= "" then
        io.stderr:write("[model server] " .. data)
      end
    end,
  }, function(done)
    exited = done.code
  end)
  model_servers[#model_servers + 1] = proc
  H.wait_for(function()
    return port ~= nil or exited ~= nil
  end, "the model server's PORT line", 15000)
  H.ok(port, "the model server exited (code " .. tostring(exited) .. ") before printing its port")
  return port
end

--- A model script for a run that can be steered: a first reply streamed slowly that
--- reads README.md (so a steer sent while it streams goes in after the tool batch),
--- then `answer`.
function H.slow_read_script(answer)
  return {
    {
      text = "Reading the readme first, slowly.",
      chunks = 6,
      delayMs = 120,
      toolCalls = { { id = "call_r1", name = "read", arguments = { path = "README.md" } } },
    },
    { text = answer },
  }
end

--- Requests the model server received (its GET /_requests).
function H.model_requests(port)
  local res = vim.system({ "curl", "-s", "http://127.0.0.1:" .. port .. "/_requests" }):wait()
  return vim.json.decode(res.stdout)
end

function H.stop_model_servers()
  for _, proc in ipairs(model_servers) do
    proc:kill(15)
  end
  model_servers = {}
end

--- The server command: the real `python -m crank.lsp` from this checkout.
function H.server_cmd()
  return { vim.env.CRANK_PYTHON or "python3", "-m", "crank.lsp" }
end

function H.server_env()
  return { PYTHONPATH = vim.env.PYTHONPATH or (H.repo .. "/server") }
end

--- setup() pointing Crank at the loopback model server on `port`.
function H.setup_crank(port, extra)
  local session_dir = H.tmpdir("sessions")
  local opts = vim.tbl_deep_extend("force", {
    cmd = H.server_cmd(),
    cmd_env = H.server_env(),
    provider = { api = "openai", baseUrl = "http://127.0.0.1:" .. port .. "/v1", model = "test", apiKey = "x" },
    session_dir = session_dir,
    trusted = true,
    global_keymaps = false,
  }, extra or {})
  require("crank").setup(opts)
  return session_dir
end

--- A project folder (with a .git marker) and `files` in it; cwd moves there.
function H.project(files)
  local root = H.tmpdir("project")
  vim.fn.mkdir(root .. "/.git", "p")
  for name, text in pairs(files or {}) do
    local path = root .. "/" .. name
    vim.fn.mkdir(vim.fs.dirname(path), "p")
    vim.fn.writefile(vim.split(text:gsub("\n$", ""), "\n", { plain = true }), path)
  end
  vim.cmd.cd(root)
  return root
end

--- The chat for the current project and its transcript lines.
function H.chat()
  local client = require("crank.client")
  local ws = client.by_root[client.root_for(0)] or select(2, next(client.by_root))
  return ws and require("crank.chat").by_root[ws.root], ws
end

function H.transcript()
  local chat = H.chat()
  return chat and table.concat(chat:transcript(), "\n") or ""
end

--- Stand in for a person answering vim.ui.select: record the call, pick by label.
function H.stub_select(pick)
  local calls = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for i, item in ipairs(items) do
      labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
    end
    calls[#calls + 1] = { prompt = opts.prompt, kind = opts.kind, labels = labels }
    vim.schedule(function()
      for i, label in ipairs(labels) do
        if pick(label, items[i]) then
          return on_choice(items[i], i)
        end
      end
      on_choice(nil, nil)
    end)
  end
  return calls
end

function H.stop_all()
  require("crank.client").stop_all()
  H.stop_model_servers()
end

local original_select = vim.ui.select

--- After each test against the real server: stop the servers (Crank's and the model
--- servers), put back vim.ui.select, and leave one empty window with no other buffer.
function H.reset()
  vim.ui.select = original_select
  H.stop_all()
  vim.cmd("silent! only")
  vim.cmd("enew!")
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if b ~= vim.api.nvim_get_current_buf() then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
  require("crank.chat").by_root = {}
end

--- Count each workspace's agent_settled events (`ws.settled_count`, the protocol's "run
--- is over" signal) and keep the event types it got (`ws.events`).
function H.count_settled()
  local Workspace = require("crank.client").Workspace
  local note = Workspace.note_event
  Workspace.note_event = function(self, params)
    if params.event and params.event.type == "agent_settled" then
      self.settled_count = (self.settled_count or 0) + 1
    end
    self.events = self.events or {}
    table.insert(self.events, params.event and params.event.type)
    return note(self, params)
  end
end

return H
