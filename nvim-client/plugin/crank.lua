-- Crank's user commands. The modules load on first use.
if vim.g.loaded_crank then
  return
end
vim.g.loaded_crank = true

-- First, before anything that needs a recent Neovim: say which version is needed.
local too_old = require("crank").version_problem()
if too_old then
  vim.notify(too_old, vim.log.levels.ERROR)
  return
end

local function actions()
  require("crank").ensure_setup()
  return require("crank.actions")
end

local command = vim.api.nvim_create_user_command

--- Completes the @ word being typed: @selection, @problems, a workspace file.
local function complete_at(lead)
  if lead:sub(1, 1) ~= "@" then
    return {}
  end
  -- The workspace's root without starting its server (completion must not).
  local buf = vim.api.nvim_get_current_buf()
  local ok, root = pcall(function()
    return vim.b[buf].crank_root or require("crank.client").root_for(buf)
  end)
  if not ok or type(root) ~= "string" then
    return {}
  end
  return require("crank.context").complete(lead, root)
end

command("Crank", function(o)
  actions().chat(o.args)
end, { nargs = "*", complete = complete_at, desc = "Open the Crank chat; send the text if given (@selection, @problems, @file add context)" })

command("CrankAdd", function(o)
  actions().add({ range = o.range > 0 and { o.line1, o.line2 } or nil, what = o.args, drop = o.bang })
end, {
  nargs = "?",
  range = true,
  bang = true,
  complete = function()
    return { "problems" }
  end,
  desc = "Add this file (a range: its lines; 'problems': its diagnostics) to the next Crank prompt; ! drops them",
})

command("CrankSteer", function(o)
  actions().steer(o.args)
end, { nargs = "+", desc = "Steer the running Crank agent" })

command("CrankFollowUp", function(o)
  actions().follow_up(o.args)
end, { nargs = "+", desc = "Queue a follow-up for after the current run" })

command("CrankAbort", function()
  actions().abort()
end, { desc = "Stop the running Crank agent" })

command("CrankFix", function(o)
  local range
  if o.range > 0 then
    range = { start = { line = o.line1 - 1, character = 0 }, ["end"] = { line = o.line2 - 1, character = 0 } }
  end
  actions().fix({ instruction = o.args, range = range })
end, { nargs = "*", range = true, desc = "Ask Crank to fix this buffer (or the range) using its diagnostics" })

command("CrankAttach", function(o)
  actions().attach(o.args, o.bang)
end, { nargs = "?", bang = true, complete = "file", desc = "Attach an image file to the next Crank prompt" })

command("CrankImage", function()
  require("crank").ensure_setup()
  require("crank.images").open_under_cursor()
end, { desc = "Open the image on the cursor's line of the Crank chat" })

command("CrankSessions", function()
  actions().sessions()
end, { desc = "Pick a Crank session and open it" })

command("CrankEarlier", function()
  actions().earlier()
end, { desc = "Show a page more of the Crank chat's earlier messages" })

command("CrankNew", function()
  actions().new_session()
end, { desc = "Start a new Crank session" })

command("CrankModel", function(o)
  actions().model(o.args)
end, { nargs = "?", desc = "Pick the model (or give api/model-id)" })

command("CrankCompact", function(o)
  actions().compact(o.args)
end, { nargs = "*", desc = "Compact the Crank conversation" })

command("CrankPrompt", function()
  actions().system_prompt()
end, { desc = "Show Crank's system prompt and its sources" })

command("CrankMcp", function(o)
  actions()
  require("crank.mcp").run(o.args)
end, {
  nargs = "*",
  complete = function(arglead, cmdline)
    return require("crank.mcp").complete(arglead, cmdline)
  end,
  desc = "Show Crank's MCP servers, or restart / disable / enable one",
})

command("CrankMode", function(o)
  actions().permission_mode(o.args)
end, {
  nargs = 1,
  complete = function()
    return { "ask", "autoEdit", "auto", "readOnly" }
  end,
  desc = "Set the permission mode",
})

command("CrankChanges", function(o)
  require("crank").ensure_setup()
  require("crank.review").changes(o.args)
end, { nargs = "?", desc = "List the files the last run (a runId, or all) changed, in quickfix" })

command("CrankChangeDiff", function()
  require("crank").ensure_setup()
  local index = vim.fn.getqflist({ idx = 0 }).idx
  require("crank.review").diff_entry(index)
end, { desc = "Diff the current Crank change (quickfix entry) against the file now" })

command("CrankRevert", function(o)
  require("crank").ensure_setup()
  require("crank.review").revert(o.args, o.bang)
end, { nargs = "*", bang = true, complete = "file", desc = "Put back the files the last run (or runId) changed; ! forces" })

command("CrankKeep", function(o)
  require("crank").ensure_setup()
  require("crank.review").keep(o.args)
end, { nargs = "*", complete = "file", desc = "Keep what the last run (or runId) changed in these files (all, without paths)" })

-- Mappings to bind (none is bound by default; see :help crank-mappings).
local plug = function(modes, name, rhs, desc)
  vim.keymap.set(modes, "<Plug>(" .. name .. ")", rhs, { desc = desc, silent = true })
end
plug("n", "crank-chat", "<cmd>Crank<cr>", "Crank: open the chat")
plug("n", "crank-fix", "<cmd>CrankFix<cr>", "Crank: fix this buffer")
plug("x", "crank-fix", ":CrankFix<cr>", "Crank: fix the selected lines")
plug("n", "crank-abort", "<cmd>CrankAbort<cr>", "Crank: stop the agent")
plug("n", "crank-sessions", "<cmd>CrankSessions<cr>", "Crank: pick a session")
