-- One truth for files (issue 14), in a real headless Neovim against the real server:
-- the agent edits calc.py while it is open, then runs `grep` on it. The change must be
-- in the buffer (one `u` takes it back) and on disk before that command runs, with the
-- buffer clean, and with the user's own unsaved edits in it (they are saved with the
-- agent's change and the user is told; `u` undoes only the agent's part). And a command
-- that rewrites an open file: a clean buffer is read again, one with unsaved changes is
-- left alone.
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
vim.cmd("runtime plugin/crank.lua")

local client = require("crank.client")

H.after_each = H.reset
H.cleanup = H.reset
H.count_settled()

local CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"

--- The model: edit add() (the first `return a - b`), grep the file, say done.
local function fix_then_grep()
  return {
    {
      text = "add subtracts.",
      toolCalls = {
        {
          id = "call_edit",
          name = "edit",
          arguments = { path = "calc.py", oldText = "def add(a, b):\n    return a - b", newText = "def add(a, b):\n    return a + b" },
        },
      },
    },
    { toolCalls = { { id = "call_grep", name = "bash", arguments = { command = "grep -n return calc.py" } } } },
    { text = "Fixed." },
  }
end

--- The text of the tool result `id` as the model received it.
local function tool_result(port, id)
  for _, request in ipairs(H.model_requests(port)) do
    for _, message in ipairs(request.body.messages or {}) do
      if message.role == "tool" and message.tool_call_id == id then
        return message.content
      end
    end
  end
  error("the model never received the result of " .. id)
end

--- Open calc.py, attach Crank to it, run one prompt to the end.
local function run_on_open_file(port, before_prompt)
  H.setup_crank(port, { permission_mode = "auto" })
  local root = H.project({ ["calc.py"] = CALC })
  vim.cmd.edit(root .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  local ws = assert(client.attach(buf))
  H.wait_for(function()
    return ws:client() ~= nil and ws.session_id ~= nil
  end, "the server to start")
  if before_prompt then
    before_prompt(buf)
  end
  local before = ws.settled_count or 0
  vim.cmd("Crank fix add")
  H.wait_for(function()
    return (ws.settled_count or 0) > before
  end, "the run to settle", 60000)
  return root, buf
end

local function lines(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
end

local function disk(path)
  return table.concat(vim.fn.readfile(path), "\n") .. "\n"
end

H.test("a clean buffer: the edit is saved before the next command, and one u undoes it", function()
  local port = H.model_server(fix_then_grep())
  local root, buf = run_on_open_file(port)
  local fixed = CALC:gsub("a %- b", "a + b", 1)
  H.eq(fixed, lines(buf), "the buffer shows the agent's change")
  H.eq(fixed, disk(root .. "/calc.py"), "the disk holds it")
  H.ok(not vim.bo[buf].modified, "the buffer is saved")
  local grep = tool_result(port, "call_grep")
  H.contains(grep, "2:    return a + b", "grep (a command) saw the change")
  H.contains(grep, "6:    return a - b")
  H.ok(not grep:find("differs from the disk", 1, true), "no divergence note: " .. grep)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("undo")
  end)
  H.eq(CALC, lines(buf), "one undo takes the agent's change back")
end)

H.test("unsaved user edits are saved with the agent's change, the user is told, u undoes only the agent's", function()
  local port = H.model_server(fix_then_grep())
  local since = #H.notifications
  local mine = "# the user's unsaved line"
  local root, buf = run_on_open_file(port, function(b)
    vim.api.nvim_buf_set_lines(b, -1, -1, false, { mine })
    H.ok(vim.bo[b].modified, "the user's edit is unsaved")
    -- Neovim sends didChange after a short debounce; the prompt's request flushes it.
  end)
  local both = CALC:gsub("a %- b", "a + b", 1) .. mine .. "\n"
  H.eq(both, lines(buf), "the buffer holds both")
  H.eq(both, disk(root .. "/calc.py"), "the disk holds both: nothing of the user's is lost")
  H.ok(not vim.bo[buf].modified, "saved")
  H.ok(H.notified("with your unsaved changes in it", since), "the user was told their changes were saved")
  local grep = tool_result(port, "call_grep")
  H.contains(grep, "2:    return a + b")
  local edit = tool_result(port, "call_edit")
  H.contains(edit, "The user had unsaved changes in calc.py; the editor saved them")
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("undo")
  end)
  H.eq(CALC .. mine .. "\n", lines(buf), "one undo takes back the agent's change and keeps the user's line")
end)


--- The model: rewrite calc.py with a command (not the edit tool), say done.
local function rewrite_with_a_command()
  return {
    { toolCalls = { { id = "call_sed", name = "bash", arguments = { command = "sed -i 's/a - b/a * b/' calc.py" } } } },
    { text = "Rewritten." },
  }
end

H.test("a command rewrites an open file: the clean buffer is read again", function()
  local port = H.model_server(rewrite_with_a_command())
  local root, buf = run_on_open_file(port)
  local rewritten = CALC:gsub("a %- b", "a * b")
  H.eq(rewritten, disk(root .. "/calc.py"), "the command changed the file")
  H.wait_for(function()
    return lines(buf) == rewritten
  end, "the buffer to show the file as the command left it")
  H.ok(not vim.bo[buf].modified, "the buffer is clean")
end)

H.test("a command rewrites an open file with unsaved changes: the buffer keeps them", function()
  local port = H.model_server(rewrite_with_a_command())
  local mine = "# mine\n" .. CALC
  local root, buf = run_on_open_file(port, function(b)
    vim.api.nvim_buf_set_lines(b, 0, 0, false, { "# mine" })
  end)
  H.eq(CALC:gsub("a %- b", "a * b"), disk(root .. "/calc.py"), "the command changed the file")
  -- A reload is scheduled at the tool's end, before the run settles: it would have run.
  H.eq(mine, lines(buf), "the user's unsaved text is still there")
  H.ok(vim.bo[buf].modified, "and still unsaved")
end)

H.run()
