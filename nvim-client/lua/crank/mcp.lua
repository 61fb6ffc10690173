--- :CrankMcp [restart|disable|enable NAME]: without arguments the workspace's MCP
--- servers (crank/state `mcp`, shown by actions.mcp); with an action, crank/mcpServer
--- for that one server (the VS Code chat line's Restart / Disable / Enable). Names
--- complete from the servers the workspace last reported (crank/state, mcp_changed).
local M = {}

--- The actions crank/mcpServer takes (docs/protocol.md, docs/mcp.md).
M.ACTIONS = { "restart", "disable", "enable" }

--- `args` as typed after :CrankMcp: nil (show the servers), or the action and the name;
--- a second value is the error to show.
---@return { action: string, name: string }|nil, string|nil
function M.parse(args)
  local words = vim.split(vim.trim(args or ""), "%s+", { trimempty = true })
  if #words == 0 then
    return nil, nil
  end
  local usage = ":CrankMcp [" .. table.concat(M.ACTIONS, "|") .. " NAME]"
  if not vim.tbl_contains(M.ACTIONS, words[1]) then
    return nil, string.format("unknown action %q: %s", words[1], usage)
  end
  if #words ~= 2 then
    return nil, string.format("%s needs the server's name, and only it: %s", words[1], usage)
  end
  return { action = words[1], name = words[2] }, nil
end

--- The servers the current workspace last reported (nothing when there is none yet).
local function known()
  local client = require("crank.client")
  local ws = client.by_root[client.root_for(0) or ""]
  return ws and ws.mcp or {}
end

--- Completion for :CrankMcp: the action first, then the server names that action
--- applies to (enable: the disabled ones; restart and disable: the others).
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, "%s+", { trimempty = true })
  local typing = #words - (arglead == "" and 0 or 1) -- the words before the one typed
  local out = {}
  if typing <= 1 then
    out = vim.deepcopy(M.ACTIONS)
  elseif typing == 2 then
    for _, s in ipairs(known()) do
      if (words[2] == "enable") == (s.state == "disabled") then
        out[#out + 1] = s.name
      end
    end
  end
  return vim.tbl_filter(function(item)
    return vim.startswith(item, arglead)
  end, out)
end

local DONE = { restart = "restarting", disable = "disabled", enable = "starting" }

--- Run :CrankMcp with `args`; `on_done(servers)` (tests) when the server answered.
function M.run(args, on_done)
  local actions = require("crank.actions")
  local wanted, err = M.parse(args)
  if err then
    return vim.notify("crank: " .. err, vim.log.levels.ERROR)
  end
  if wanted == nil then
    return actions.mcp()
  end
  local ws = actions.workspace()
  if ws == nil then
    return
  end
  ws:request("crank/mcpServer", { name = wanted.name, action = wanted.action }, function(e, result)
    if e then
      return actions.report(wanted.action .. " of the MCP server " .. wanted.name, e)
    end
    ws.mcp = result and result.servers or ws.mcp
    vim.notify(string.format("crank: MCP server %s %s", wanted.name, DONE[wanted.action]), vim.log.levels.INFO)
    if on_done then
      on_done(ws.mcp)
    end
  end)
end

return M
