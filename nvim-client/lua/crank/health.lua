--- :checkhealth crank — does the server start, which version answered, which provider.
local M = {}

local health = vim.health

--- Start the server once, send `initialize`, and stop it. Returns the result or an error.
---@param cmd string[]
---@param opts {cwd: string, env: table|nil, init_options: table, timeout: integer|nil}
---@return table|nil result, string|nil err
function M.probe(cmd, opts)
  local stderr = {}
  local exited = nil
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
    on_exit = function(code, signal)
      exited = { code = code, signal = signal }
    end,
  }
  local ok, rpc = pcall(vim.lsp.rpc.start, cmd, dispatchers, { cwd = opts.cwd, env = opts.env })
  if not ok then
    -- Only the reason, not the Lua location of the LSP client's error().
    return nil, (tostring(rpc):gsub("^.-%.lua:%d+: ", ""))
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
    return done or exited ~= nil
  end, 20)
  if not done and exited then
    rpc.terminate()
    return nil, M.exit_reason(cmd, opts, exited)
  end
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

--- Why the server ended before it answered: its exit status and the last lines it
--- wrote to stderr. The LSP client sends stderr to its log only, so the command is run
--- once more (stdin closed, at most 10 s) to read them.
---@param cmd string[]
---@param opts {cwd: string, env: table|nil}
---@param exited {code: integer, signal: integer}
---@return string
function M.exit_reason(cmd, opts, exited)
  local how = exited.signal ~= 0 and ("signal " .. exited.signal) or ("code " .. tostring(exited.code))
  local ok, res = pcall(function()
    return vim.system(cmd, { cwd = opts.cwd, env = opts.env, stdin = true, text = true }):wait(10000)
  end)
  local lines = {}
  if ok then
    for _, line in ipairs(vim.split(vim.trim((res.stderr or "") .. "\n" .. (res.stdout or "")), "\n")) do
      if vim.trim(line) ~= "" then
        lines[#lines + 1] = vim.trim(line)
      end
    end
  end
  local tail = table.concat(vim.list_slice(lines, math.max(1, #lines - 2)), " | ")
  return string.format("it exited (%s) before answering%s", how, tail ~= "" and (": " .. tail) or "")
end

--- What to do about a server that did not start, from what it said (nil: nothing known).
---@param err string
---@param cmd string[]
---@return string[]
function M.start_advice(err, cmd)
  local line = table.concat(cmd, " ")
  if err:find("No module named", 1, true) then
    return {
      string.format("the Python in cmd (%s) does not have Crank installed", cmd[1]),
      "use cmd = { 'crank', 'serve' } after installing the server (README: `pipx install .` in your clone)",
      "or set cmd to the python of the environment Crank is installed in",
    }
  end
  -- The command is there (it was checked) yet cannot be spawned: a script whose
  -- interpreter is missing (execve's ENOENT; the LSP client says "Spawning ... failed").
  if err:find("ENOENT", 1, true) or err:find("bad interpreter", 1, true) or err:find("Spawning language server", 1, true) then
    return {
      string.format("%s exists but cannot be run: the Python it was installed with is gone (a system upgrade?)", cmd[1]),
      "reinstall it: `pipx reinstall crank-agent` (or `uv tool install --reinstall .` in your clone)",
    }
  end
  if err:find("SyntaxError", 1, true) or err:find("requires Python", 1, true) or err:find("Python 3.11", 1, true) then
    return { "Crank needs Python 3.11 or newer: install it with one (`pipx install --python python3.11 .`)" }
  end
  return { "run `" .. line .. "` in a terminal to see the whole error" }
end

--- Advice for a server command that is not on Neovim's PATH.
---@param name string
---@return string[]
function M.not_found_advice(name)
  if not name:find("/", 1, true) then
    local user_bin = vim.fs.normalize("~/.local/bin/" .. name)
    if vim.fn.executable(user_bin) == 1 then
      return {
        user_bin .. " is installed, but ~/.local/bin is not on the PATH Neovim was started with",
        "run `pipx ensurepath` (or `uv tool update-shell`) and start Neovim from a new terminal",
        "or set cmd = { " .. vim.inspect(user_bin) .. ", 'serve' } in setup()",
      }
    end
  end
  return {
    "install the server: in your clone of the repository, `pipx install .` (or `uv tool install .`); see the README",
    "or set cmd = { '/path/to/crank', 'serve' } in setup()",
  }
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

--- The provider as setup() gives it (nil: none given there), never the key itself.
local function describe_provider(p)
  if p == nil then
    return nil
  end
  return string.format(
    "api=%s model=%s baseUrl=%s apiKey=%s",
    tostring(p.api or "?"),
    tostring(p.model or "(server default)"),
    tostring(p.baseUrl or "(default)"),
    p.apiKey and "set" or "(not set here)"
  )
end

--- The model the server settled on from all its settings (setup(), its config file,
--- the environment), and where it asks it.
local function report_model(model)
  if type(model) ~= "table" or model.api == nil or model.api == "none" then
    return
  end
  local at = type(model.baseUrl) == "string" and model.baseUrl ~= "" and (" at " .. model.baseUrl) or ""
  health.ok(string.format("model: %s/%s%s", tostring(model.api), tostring(model.id), at))
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
    local why = ({ [6] = "its host name does not resolve", [7] = "the connection was refused (nothing listens there)" })[res.code]
    return nil, why or string.format("no answer within %d s (curl exit %s)", t, tostring(res.code))
  end
  return code, nil
end

--- One health line for the model server the state names (`model.baseUrl`; a server
--- too old to say: the one setup() sets, or the api's default).
local function report_model_server(provider, model)
  local api = model and model.api
  if api == "scripted" then
    return
  end
  local base = (model and type(model.baseUrl) == "string" and model.baseUrl ~= "" and model.baseUrl)
    or M.base_url(provider, api)
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
        "start the model server, or fix its URL where it is set: provider.baseUrl in setup(), ~/.config/crank/config.json, or OPENAI_BASE_URL / ANTHROPIC_BASE_URL",
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
    health.ok("provider in setup(): " .. provider)
  else
    health.info("no provider in setup(): the server's own settings apply (~/.config/crank/config.json, the environment)")
  end
  local cmd = cfg.cmd
  local root = client.root_for(0)
  if type(cmd) == "function" then
    cmd = cmd(root)
  end
  if vim.fn.executable(cmd[1]) == 0 then
    health.error("server command not found: " .. tostring(cmd[1]), M.not_found_advice(tostring(cmd[1])))
    return
  end
  health.ok("server command: " .. table.concat(cmd, " "))
  local ws = client.by_root[root]
  if ws and ws:client() then
    health.ok(string.format("running for %s: %s %s", root, tostring(ws.server_name or "?"), tostring(ws.server_version or "")))
    report_sandbox(ws.sandbox)
    report_mcp(ws.mcp)
    if not report_config_error(ws.config_error) then
      report_model(ws.model)
      report_model_server(cfg.provider, ws.model)
    end
    return
  end
  local result, err, state = M.probe(cmd, { cwd = root, env = cfg.cmd_env, init_options = config.init_options() })
  if result == nil then
    health.error("the server did not start: " .. tostring(err), M.start_advice(tostring(err), cmd))
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
    report_model(state.model)
    report_model_server(cfg.provider, state.model)
  end
end

return M
