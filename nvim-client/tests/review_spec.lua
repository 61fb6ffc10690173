-- Reviewing a run's changes (issue 30), in a real headless Neovim against the real
-- server: a run edits a.py, creates b.txt and deletes c.txt with commands and rewrites
-- d.py with sed -i. :CrankChanges lists all four in the quickfix list, a diff shows
-- d.py before the run, :CrankRevert puts everything back except the file the user
-- changed since; `K` in the list (:CrankKeep) keeps a file, which the list then says and
-- a revert of the whole run leaves alone. And the editor's diagnostics: an edit that a language server flags
-- gets the diagnostic (from vim.diagnostic.get) in its tool result.
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
vim.cmd("runtime plugin/crank.lua")

local client = require("crank.client")
local review = require("crank.review")

H.after_each = H.reset
H.cleanup = H.reset
H.count_settled()

local function four()
  local function call(id, name, arguments)
    return { toolCalls = { { id = id, name = name, arguments = arguments } } }
  end
  return {
    call("c1", "edit", { path = "a.py", oldText = "a - b", newText = "a + b" }),
    call("c2", "bash", { command = "printf 'made\\n' > b.txt" }),
    call("c3", "bash", { command = "rm c.txt" }),
    call("c4", "bash", { command = "sed -i 's/y = 2/y = 3/' d.py" }),
    { text = "done" },
  }
end

local function disk(path)
  return table.concat(vim.fn.readfile(path), "\n") .. "\n"
end

local function start(port, files, open, extra)
  H.setup_crank(port, vim.tbl_extend("force", { permission_mode = "auto" }, extra or {}))
  local root = H.project(files)
  vim.cmd.edit(root .. "/" .. open)
  local ws = assert(client.attach(0))
  H.wait_for(function()
    return ws:client() ~= nil and ws.session_id ~= nil
  end, "the server to start")
  return root, ws
end

--- Call `start(done)` and wait until it calls `done(value)`; the value.
local function answered(start_, what)
  local got
  start_(function(value)
    got = value
  end)
  H.wait_for(function()
    return got ~= nil
  end, what)
  return got
end

--- The quickfix list as file name -> entry text.
local function texts()
  local out = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    out[vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":t")] = item.text
  end
  return out
end

local function prompt(ws, text)
  local before = ws.settled_count or 0
  vim.cmd("Crank " .. text)
  H.wait_for(function()
    return (ws.settled_count or 0) > before
  end, "the run to settle", 60000)
end

H.test(":CrankChanges lists the run's four files, a diff shows before, :CrankRevert takes them back", function()
  local port = H.model_server(four())
  local root, ws = start(port, { ["a.py"] = "x = a - b\n", ["c.txt"] = "gone\n", ["d.py"] = "y = 2\n" }, "a.py")
  local a_buf = vim.api.nvim_get_current_buf()
  prompt(ws, "change four files")
  H.ok(ws.last_run_id, "the finished run is remembered")

  local listed = answered(function(done)
    review.changes(nil, done)
  end, "crank/changes")
  H.eq({ ["a.py"] = "modified +1 -1", ["b.txt"] = "added +1 -0", ["c.txt"] = "deleted +0 -1", ["d.py"] = "modified +1 -1" }, texts())

  local before_buf
  for _, f in ipairs(listed) do
    if f.path == "d.py" then
      review.diff(f, function(buf)
        before_buf = buf
      end)
    end
  end
  H.wait_for(function()
    return before_buf ~= nil
  end, "the diff")
  H.eq({ "y = 2" }, vim.api.nvim_buf_get_lines(before_buf, 0, -1, false), "the left side is d.py before the run")
  H.ok(vim.wo.diff, "shown as a diff")
  vim.cmd("tabonly")

  vim.fn.writefile({ "mine" }, root .. "/d.py") -- the user changes d.py since
  local result = answered(function(done)
    review.revert("", false, done)
  end, "crank/revert")
  table.sort(result.reverted)
  H.eq({ "a.py", "b.txt", "c.txt" }, result.reverted)
  H.eq("d.py", result.conflicts[1].path)
  H.contains(result.conflicts[1].reason, "changed since the run")
  H.eq("x = a - b\n", disk(root .. "/a.py"))
  H.eq({ "x = a - b" }, vim.api.nvim_buf_get_lines(a_buf, 0, -1, false), "the open buffer is reverted too")
  H.eq("gone\n", disk(root .. "/c.txt"))
  H.ok(vim.fn.filereadable(root .. "/b.txt") == 0, "b.txt is gone again")
  H.eq("mine\n", disk(root .. "/d.py"), "the user's change is not overwritten")
end)

H.test("K in the changes list keeps a file: the list says kept, a revert of the run leaves it", function()
  local port = H.model_server(four())
  local root, ws = start(port, { ["a.py"] = "x = a - b\n", ["c.txt"] = "gone\n", ["d.py"] = "y = 2\n" }, "a.py")
  prompt(ws, "change four files")
  answered(function(done)
    review.changes(nil, done)
  end, "crank/changes")
  local index
  for i, item in ipairs(vim.fn.getqflist()) do
    if vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":t") == "b.txt" then
      index = i
    end
  end
  H.ok(index, "b.txt is listed")
  H.eq("K", vim.fn.maparg("K", "n", false, true).lhs, "K is mapped in the quickfix window")
  local kept = answered(function(done)
    review.keep_entry(index, done)
  end, "crank/keep")
  H.eq({ "b.txt" }, kept.kept)
  H.eq("added +1 -0 (kept)", texts()["b.txt"], "the list is read again and says kept")

  local refused = answered(function(done)
    review.keep("nothing.py", done)
  end, ":CrankKeep of a path the run did not change")
  H.eq({ { path = "nothing.py", reason = "not changed by this run" } }, refused.conflicts)

  local result = answered(function(done)
    review.revert("", false, done)
  end, "crank/revert")
  table.sort(result.reverted)
  H.eq({ "a.py", "c.txt", "d.py" }, result.reverted, "the kept file is left alone")
  H.eq("made\n", disk(root .. "/b.txt"))
end)

H.test("an edit gets the buffer's diagnostics (vim.diagnostic.get) in its tool result", function()
  local port = H.model_server({
    { toolCalls = { { id = "e1", name = "edit", arguments = { path = "calc.py", oldText = "a - b", newText = "a + '1'" } } } },
    { text = "done" },
  })
  local _, ws = start(port, { ["calc.py"] = "def f(a, b):\n    return a - b\n" }, "calc.py", { diagnostics = { settleMs = 50 } })
  local buf = vim.api.nvim_get_current_buf()
  -- A language server's report, as Neovim keeps it (what vim.diagnostic.get returns).
  local ns = vim.api.nvim_create_namespace("fake-pyright")
  vim.diagnostic.set(ns, buf, {
    { lnum = 1, col = 11, end_lnum = 1, end_col = 18, severity = vim.diagnostic.severity.ERROR, message = 'Operator "+" not supported', source = "Pyright" },
  })
  prompt(ws, "break it")
  local seen
  for _, request in ipairs(H.model_requests(port)) do
    for _, message in ipairs(request.body.messages or {}) do
      if message.role == "tool" and message.tool_call_id == "e1" then
        seen = message.content
      end
    end
  end
  H.ok(seen, "the edit's result reached the model")
  H.contains(seen, "[The editor now reports 1 error(s) and 0 warning(s) in calc.py:")
  H.contains(seen, '- 2:12 error: Operator "+" not supported [Pyright]')
end)

H.run()
