-- :CrankMcp restart / disable / enable NAME (issue 27), in a real headless Neovim
-- against the real server and the real @modelcontextprotocol/server-everything from
-- npm (installed by ./dev into ~/.cache/crank-test/mcp-servers, or CRANK_MCP_SERVERS;
-- the server test is skipped, saying so, when it is not there). The state is what the
-- server reports (crank/state `mcp`, mcp_changed): a new pid after a restart, none
-- while disabled, and the old process gone.
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
vim.cmd("runtime plugin/crank.lua")

local client = require("crank.client")
local mcp = require("crank.mcp")

H.after_each = H.reset
H.cleanup = H.reset

--- The everything server's executable, or nil when ./dev has not installed it.
local function everything_bin()
  local dir = vim.env.CRANK_MCP_SERVERS or (vim.env.HOME .. "/.cache/crank-test/mcp-servers")
  local bin = dir .. "/node_modules/.bin/mcp-server-everything"
  return vim.uv.fs_stat(bin) and bin or nil
end

--- Whether the process runs (gone or a zombie: no).
local function running(pid)
  local stat = io.open("/proc/" .. pid .. "/stat")
  if not stat then
    return false
  end
  local text = stat:read("*a")
  stat:close()
  return text:match("^%d+ %b() (%a)") ~= "Z"
end

H.test(":CrankMcp's arguments: an action and a name, or nothing; anything else says how", function()
  H.eq({ nil, nil }, { mcp.parse("") })
  H.eq({ action = "disable", name = "everything" }, (mcp.parse("  disable   everything ")))
  local _, unknown = mcp.parse("kill everything")
  H.contains(unknown, 'unknown action "kill"')
  H.contains(unknown, ":CrankMcp [restart|disable|enable NAME]")
  local _, missing = mcp.parse("restart")
  H.contains(missing, "restart needs the server's name")
  local _, extra = mcp.parse("restart a b")
  H.contains(extra, "restart needs the server's name, and only it")
  H.eq({ "restart", "disable", "enable" }, mcp.complete("", "CrankMcp "))
  H.eq({ "disable" }, mcp.complete("d", "CrankMcp d"))
end)

H.test(":CrankMcp disable / enable / restart act on the real everything server; names complete", function()
  local bin = everything_bin()
  if not bin then
    io.stdout:write("skip: @modelcontextprotocol/server-everything is not installed (./dev test installs it with npm)\n")
    return
  end
  local port = H.model_server({ { text = "hi" } })
  H.setup_crank(port, { mcp_servers = { everything = { command = bin, args = { "stdio" } } } })
  local root = H.project({ ["notes.md"] = "mcp\n" })
  vim.cmd.edit(root .. "/notes.md")
  local ws = assert(client.attach(0))
  local function server()
    return (ws.mcp or {})[1] or {}
  end
  local function wait_state(state, what, not_pid)
    H.wait_for(function()
      return server().state == state and (not_pid == nil or (server().pid ~= nil and server().pid ~= not_pid))
    end, what, 120000) -- a hang guard: node starts slowly on a loaded machine
  end
  wait_state("ready", "the everything server to be ready")
  local first = server().pid
  H.ok(first and running(first), "the server reports the live process")
  H.eq({ "everything" }, mcp.complete("", "CrankMcp disable "))
  H.eq({}, mcp.complete("", "CrankMcp enable "), "enable offers only disabled servers")

  vim.cmd("CrankMcp disable everything")
  wait_state("disabled", "the server to be disabled")
  H.eq(nil, server().pid)
  H.wait_for(function()
    return not running(first)
  end, "the disabled server's process to end")
  H.eq({}, server().tools)
  H.eq({ "everything" }, mcp.complete("ev", "CrankMcp enable ev"))

  vim.cmd("CrankMcp enable everything")
  wait_state("ready", "the server to be ready again", first)
  local second = server().pid
  H.contains(table.concat(server().tools, " "), "mcp__everything__echo")

  vim.cmd("CrankMcp restart everything")
  wait_state("ready", "a new process after the restart", second)
  H.wait_for(function()
    return not running(second)
  end, "the restarted server's old process to end")

  local since = #H.notifications
  vim.cmd("CrankMcp restart nosuch")
  H.wait_for(function()
    return H.notified("no MCP server 'nosuch' here", since)
  end, "the refusal naming the unknown server")
  H.ok(H.notified("restart of the MCP server nosuch failed", since))
  vim.cmd("CrankMcp frobnicate everything")
  H.ok(H.notified('unknown action "frobnicate"', since))
end)

H.run()
