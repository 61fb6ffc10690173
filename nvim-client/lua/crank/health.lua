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

--- The model server's base URL as the server will use it: the one set in setup(), or
--- the hosted API's default for `api` (nil for the scripted provider).
---@param provider table|nil
---@param api string|nil
---@return string|nil
function M.base_url(provider, api)
  local base = provider and provider.baseUrl
  if type(base) == "string" and base ~= "" then
    return base
  end
  local defaults = { anthropic = "https://api.anthropic.com", openai = "https://api.openai.com/v1" }
  return defaults[api or (provider and provider.api) or ""]
end

--- The URL of the models list under `base` (Anthropic's API lives under /v1).
---@param base string
---@param api string|nil
---@return string
function M.models_url(base, api)
  base = base:gsub("/+$", "")
  if api == "anthropic" and not base:find("/v1$") then
    base = base .. "/v1"
  end
  return base .. "/models"
end

--- Ask the models list once, without a key (the key stays with the server), at most
--- `timeout_s` seconds. Any HTTP answer means something is listening there; a 401 or
--- 403 is what a hosted API says to a request without a key.
---@param url string
---@param timeout_s number|nil
---@return integer|nil status, string|nil err
function M.ping(url, timeout_s)
  if vim.fn.executable("curl") == 0 then
    return nil, "curl is not installed, so it was not checked"
  end
  local t = timeout_s or 5
  local ok, res = pcall(function()
    return vim
      .system({ "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", tostring(t), url }, { text = true })
      :wait((t + 2) * 1000)
  end)
  if not ok then
    return nil, tostring(res)
  end
  local code = tonumber(vim.trim(res.stdout or ""))
  if code == nil or code == 0 then
    return nil, string.format("no answer within %d s (curl exit %s)", t, tostring(res.code))
  end
  return code, nil
end

--- One health line for the model server of `api` (from the state) and `provider`.
local function report_model_server(provider, api)
  if api == "scripted" then
    return
  end
  local base = M.base_url(provider, api)
  if base == nil then
    return
  end
  local url = M.models_url(base, api)
  local code, err = M.ping(url)
  if code == nil then
    if err and err:find("curl is not installed", 1, true) then
      health.info("model server " .. base .. ": " .. err)
    else
      health.error("model server " .. base .. " does not answer: " .. tostring(err), {
        "start the model server, or fix provider.baseUrl in setup()",
      })
    end
  elseif code == 401 or code == 403 then
    health.ok(string.format("model server %s answers (HTTP %d to a request without a key)", base, code))
  else
    health.ok(string.format("model server %s answers (HTTP %d for %s)", base, code, url))
  end
end

--- The server's own word on its configuration (`crank/state.configError`).
local function report_config_error(config_error)
  if type(config_error) == "string" and config_error ~= "" then
    health.error("the server has no usable provider: " .. config_error, {
      "pass provider = { api = ..., model = ..., apiKey = ... } to setup()",
      "or set ANTHROPIC_API_KEY / OPENAI_API_KEY in the environment Neovim starts the server with",
    })
    return true
  end
  return false
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
    if not report_config_error(ws.config_error) then
      report_model_server(cfg.provider, ws.model and ws.model.api)
    end
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
  if state == nil then
    return
  end
  if not report_config_error(state.configError) then
    report_model_server(cfg.provider, state.model and state.model.api)
  end
end

return M
