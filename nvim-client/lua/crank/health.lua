--- :checkhealth crank — does the server start, which version answered, which provider.
local M = {}

local health = vim.health

--- Start the server once, send `initialize`, and stop it. Returns the result or an error.
---@param cmd string[]
---@param opts {cwd: string, env: table|nil, init_options: table, timeout: integer|nil}
---@return table|nil result, string|nil err
function M.probe(cmd, opts)
  local stderr = {}
  local dispatchers = {
    notification = function() end,
    server_request = function(method, params)
      if method == "workspace/configuration" then
        local out = {}
        for i = 1, #((params or {}).items or {}) do
          out[i] = vim.NIL
        end
        return out
      end
      return vim.NIL
    end,
    on_error = function(_, err)
      stderr[#stderr + 1] = tostring(err)
    end,
    on_exit = function() end,
  }
  local ok, rpc = pcall(vim.lsp.rpc.start, cmd, dispatchers, { cwd = opts.cwd, env = opts.env })
  if not ok then
    return nil, tostring(rpc)
  end
  local done, response, failure, state = false, nil, nil, nil
  rpc.request("initialize", {
    processId = vim.fn.getpid(),
    rootUri = vim.uri_from_fname(opts.cwd),
    workspaceFolders = { { uri = vim.uri_from_fname(opts.cwd), name = vim.fs.basename(opts.cwd) } },
    initializationOptions = opts.init_options,
    capabilities = { experimental = { crank = { events = true, permissionRequests = true } } },
  }, function(err, result)
    done, response, failure = true, result, err
  end)
  local finished = vim.wait(opts.timeout or 15000, function()
    return done
  end, 20)
  if done and failure == nil then
    -- The workspace's state (the sandbox) once its host is up: until the server has
    -- made the host (after `initialized`), crank/state is refused, so ask again.
    local answered, last_error, stopped = false, nil, false
    local function ask()
      if stopped then
        return
      end
      rpc.request("crank/state", vim.empty_dict(), function(err, result)
        if err == nil then
          answered, state = true, result
        else
          last_error = err
          vim.defer_fn(ask, 50)
        end
      end)
    end
    rpc.notify("initialized", {})
    ask()
    vim.wait(opts.timeout or 15000, function()
      return answered
    end, 20)
    stopped = true
    if not answered and last_error then
      stderr[#stderr + 1] = "crank/state: " .. tostring(last_error.message or vim.inspect(last_error))
    end
    rpc.request("shutdown", nil, function()
      rpc.notify("exit", nil)
    end)
    vim.wait(2000, function()
      return rpc.is_closing()
    end, 20)
  end
  rpc.terminate()
  if not finished then
    return nil, "no answer to initialize within " .. tostring(opts.timeout or 15000) .. " ms " .. table.concat(stderr, "; ")
  end
  if failure then
    return nil, "initialize failed: " .. tostring(failure.message or vim.inspect(failure))
  end
  return response, nil, state
end

local function report_sandbox(sb)
  local text, ok = require("crank.format").sandbox_line(sb)
  if text == nil then
    health.info("sandbox: the server did not say")
  elseif ok then
    health.ok(text)
  else
    health.warn(text, { "install bubblewrap (Linux) for the command sandbox; see docs/tools.md" })
  end
end

local function report_mcp(servers)
  if type(servers) ~= "table" or #servers == 0 then
    health.info("MCP: no server configured (mcp_servers in setup(), or see docs/mcp.md)")
    return
  end
  for _, s in ipairs(servers) do
    local line = require("crank.format").mcp_lines({ s })[1]
    if s.state == "failed" then
      health.warn("MCP " .. line, { tostring(s.error or "") })
    elseif s.state == "ready" then
      health.ok("MCP " .. line)
    else
      health.info("MCP " .. line .. " (servers start in the background; :CrankMcp shows them later)")
    end
  end
end

local function describe_provider(p)
  if p == nil then
    local env = {}
    for _, name in ipairs({ "CRANK_PROVIDER", "CRANK_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY" }) do
      if vim.env[name] and vim.env[name] ~= "" then
        env[#env + 1] = name
      end
    end
    if #env == 0 then
      return nil
    end
    return "from the environment (" .. table.concat(env, ", ") .. ") or the server's config file"
  end
  return string.format(
    "api=%s model=%s baseUrl=%s apiKey=%s",
    tostring(p.api or "?"),
    tostring(p.model or "(server default)"),
    tostring(p.baseUrl or "(default)"),
    p.apiKey and "set" or "(from the environment)"
  )
end

function M.check()
  local config = require("crank.config")
  local client = require("crank.client")
  health.start("crank")
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.10 or newer is needed")
  end
  local cfg = config.values
  local provider = describe_provider(cfg.provider)
  if provider then
    health.ok("provider: " .. provider)
  else
    health.warn("no provider configured", {
      "pass provider = { api = 'anthropic', model = '...', apiKey = ... } to setup()",
      "or set ANTHROPIC_API_KEY / OPENAI_API_KEY",
    })
  end
  local cmd = cfg.cmd
  local root = client.root_for(0)
  if type(cmd) == "function" then
    cmd = cmd(root)
  end
  if vim.fn.executable(cmd[1]) == 0 then
    health.error("server command not found: " .. tostring(cmd[1]), { "set cmd = { 'crank', 'serve' } (or a path) in setup()" })
    return
  end
  health.ok("server command: " .. table.concat(cmd, " "))
  local ws = client.by_root[root]
  if ws and ws:client() then
    health.ok(string.format("running for %s: %s %s", root, tostring(ws.server_name or "?"), tostring(ws.server_version or "")))
    report_sandbox(ws.sandbox)
    report_mcp(ws.mcp)
    return
  end
  local result, err, state = M.probe(cmd, { cwd = root, env = cfg.cmd_env, init_options = config.init_options() })
  if result == nil then
    health.error("the server did not start: " .. tostring(err))
    return
  end
  local info = result.serverInfo or {}
  local caps = result.capabilities or {}
  local version = caps.experimental and caps.experimental.crank and caps.experimental.crank.protocolVersion
  health.ok(string.format("server starts: %s %s (protocol %s)", tostring(info.name), tostring(info.version or ""), tostring(version)))
  if version ~= 1 then
    health.warn("this plugin speaks Crank protocol 1; the server says " .. tostring(version))
  end
  report_sandbox(state and state.sandbox)
  report_mcp(state and state.mcp)
end

return M
