--- Options for the Crank plugin: defaults, merging and validation.
---
--- Everything the user may set goes through `config.apply`, which fails loudly
--- (naming the option) rather than silently ignoring a typo'd value.
local M = {}

---@class crank.Keymaps
---@field send string|false      send the prompt typed at the bottom of the chat
---@field steer string|false     send it as steering for the running agent
---@field abort string|false     stop the running agent
---@field close string|false     close the chat window
---@field open_image string|false open the image on the cursor's line (:CrankImage)

---@class crank.Config
M.defaults = {
  --- Command that starts the server; a list (argv) or a function(root) -> list.
  cmd = { "crank", "serve" },
  --- Extra environment for the server process.
  cmd_env = nil,
  --- Provider settings sent as initializationOptions.crank.provider (api, baseUrl,
  --- model, apiKey, contextWindow, maxOutputTokens). nil: the server's own fallbacks.
  provider = nil,
  --- Where session files go (nil: the server's default).
  session_dir = nil,
  --- "ask" | "autoEdit" | "auto" | "readOnly" (nil: the server's default).
  permission_mode = nil,
  --- Whether the workspace is trusted (nil: the server decides).
  trusted = nil,
  --- How the agent's commands are confined, sent as initializationOptions.crank.sandbox:
  --- { mode = "workspace-write" | "read-only" | "off", network = false }. nil: the
  --- server's default (workspace-write, network off) or the user config file.
  sandbox = nil,
  --- Compaction settings sent as initializationOptions.crank.context (policy,
  --- reserveTokens, keepRecentTokens, clearAtTokens). nil: the server's defaults.
  context = nil,
  --- The editor's diagnostics after each agent edit, sent as
  --- initializationOptions.crank.diagnostics: { enabled = true, settleMs = 1000 }.
  --- nil: the server's defaults (on, 1000 ms).
  diagnostics = nil,
  --- MCP servers, sent as initializationOptions.crank.mcpServers, in the format of
  --- Claude Code's mcpServers: { name = { command = "npx", args = {...}, env = {...} } }
  --- or { name = { type = "http", url = "...", headers = {...} } } (docs/mcp.md).
  mcp_servers = nil,
  --- When those servers start (initializationOptions.crank.mcpStart): "open" (when the
  --- workspace opens; nil means that) or "firstUse" (at the workspace's first prompt).
  mcp_start = nil,
  --- Files or folders that mark a project root.
  root_markers = { ".git", ".hg", "pyproject.toml", "package.json", "Cargo.toml", "go.mod" },
  --- Attach to file buffers inside a root automatically (so code actions and
  --- edits work there). When false, attach happens on the first Crank command.
  auto_attach = true,
  --- What a prompt sent while a run is active becomes: "followUp" | "steer" | "reject".
  while_running = "followUp",
  chat = {
    --- "right" | "left" | "above" | "below" | "tab" | "current"
    position = "right",
    width = 0.4,
    height = 0.4,
    --- Tool results longer than this many lines are folded.
    fold_lines = 8,
    --- Show thinking blocks (as quoted text).
    show_thinking = true,
    --- Open the `/` command list (omnifunc) when `/` is typed at the start of the prompt.
    complete_commands = true,
  },
  keymaps = {
    send = "<C-s>",
    steer = "<M-s>",
    abort = "<C-c>",
    close = "q",
    open_image = "gx",
  },
  --- Global keymaps set by setup(), each `lhs = "Command"` (default: none, so no
  --- other plugin's maps are taken; the <Plug>(crank-...) maps are there to bind).
  global_keymaps = false,
}

local POSITIONS = { right = true, left = true, above = true, below = true, tab = true, current = true }
local MODES = { ask = true, autoEdit = true, auto = true, readOnly = true }
local WHILE = { followUp = true, steer = true, reject = true }

---@type crank.Config
M.values = vim.deepcopy(M.defaults)

local function fail(name, expected, got)
  error(string.format("crank: option %s must be %s (got %s)", name, expected, vim.inspect(got)), 0)
end

local function check(cfg)
  local cmd = cfg.cmd
  if type(cmd) ~= "function" and (type(cmd) ~= "table" or #cmd == 0) then
    fail("cmd", "a non-empty list or a function", cmd)
  end
  if cfg.cmd_env ~= nil and type(cfg.cmd_env) ~= "table" then
    fail("cmd_env", "a table", cfg.cmd_env)
  end
  if cfg.provider ~= nil then
    if type(cfg.provider) ~= "table" then
      fail("provider", "a table", cfg.provider)
    end
    local api = cfg.provider.api
    if api ~= nil and api ~= "anthropic" and api ~= "openai" and api ~= "scripted" then
      fail("provider.api", '"anthropic", "openai" or "scripted"', api)
    end
    local window = cfg.provider.contextWindow
    if window ~= nil and (type(window) ~= "number" or window < 1 or window % 1 ~= 0) then
      fail("provider.contextWindow", "a positive whole number of tokens", window)
    end
    local key = cfg.provider.apiKey
    if key ~= nil and type(key) ~= "string" and type(key) ~= "function" then
      fail("provider.apiKey", 'a string, "cmd:<shell command>" or a function', key)
    end
  end
  if cfg.sandbox ~= nil then
    if type(cfg.sandbox) ~= "table" then
      fail("sandbox", "a table", cfg.sandbox)
    end
    local mode = cfg.sandbox.mode
    if mode ~= nil and mode ~= "workspace-write" and mode ~= "read-only" and mode ~= "off" then
      fail("sandbox.mode", '"workspace-write", "read-only" or "off"', mode)
    end
    if cfg.sandbox.network ~= nil and type(cfg.sandbox.network) ~= "boolean" then
      fail("sandbox.network", "true or false", cfg.sandbox.network)
    end
  end
  if cfg.diagnostics ~= nil and type(cfg.diagnostics) ~= "table" then
    fail("diagnostics", "a table", cfg.diagnostics)
  end
  if cfg.context ~= nil and type(cfg.context) ~= "table" then
    fail("context", "a table", cfg.context)
  end
  if cfg.mcp_servers ~= nil then
    if type(cfg.mcp_servers) ~= "table" then
      fail("mcp_servers", "a table of servers by name", cfg.mcp_servers)
    end
    for name, server in pairs(cfg.mcp_servers) do
      if type(name) ~= "string" or type(server) ~= "table" then
        fail("mcp_servers", "a table of servers by name", cfg.mcp_servers)
      end
    end
  end
  if cfg.mcp_start ~= nil and cfg.mcp_start ~= "open" and cfg.mcp_start ~= "firstUse" then
    fail("mcp_start", '"open" or "firstUse"', cfg.mcp_start)
  end
  if cfg.permission_mode ~= nil and not MODES[cfg.permission_mode] then
    fail("permission_mode", '"ask", "autoEdit", "auto" or "readOnly"', cfg.permission_mode)
  end
  if not WHILE[cfg.while_running] then
    fail("while_running", '"followUp", "steer" or "reject"', cfg.while_running)
  end
  if not POSITIONS[cfg.chat.position] then
    fail("chat.position", "right, left, above, below, tab or current", cfg.chat.position)
  end
  if type(cfg.chat.fold_lines) ~= "number" or cfg.chat.fold_lines < 1 then
    fail("chat.fold_lines", "a positive number", cfg.chat.fold_lines)
  end
  if cfg.global_keymaps ~= false and type(cfg.global_keymaps) ~= "table" then
    fail("global_keymaps", "false or a table of lhs = command", cfg.global_keymaps)
  end
  if type(cfg.root_markers) ~= "table" then
    fail("root_markers", "a list", cfg.root_markers)
  end
end

--- Merge user options over the defaults and validate them.
---@param opts table|nil
---@return crank.Config
function M.apply(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    fail("setup()", "a table", opts)
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- Lists replace, they do not merge element-wise.
  for _, key in ipairs({ "cmd", "root_markers", "global_keymaps" }) do
    if opts[key] ~= nil then
      merged[key] = opts[key]
    end
  end
  check(merged)
  M.values = merged
  return merged
end

--- Options passed to the server, and their camelCase names there.
local INIT_KEYS = {
  provider = "provider",
  session_dir = "sessionDir",
  permission_mode = "permissionMode",
  trusted = "trusted",
  context = "context",
  sandbox = "sandbox",
  diagnostics = "diagnostics",
  mcp_servers = "mcpServers",
  mcp_start = "mcpStart",
}

--- The API key as the server gets it. `provider.apiKey` may be the key, a function
--- returning it, or "cmd:<shell command>" whose output is the key (a password manager:
--- "cmd:pass show anthropic"); either is run at each server start and never kept.
---@param key string|fun():string|nil
---@return string|nil
function M.resolve_api_key(key)
  if type(key) == "function" then
    local ok, value = pcall(key)
    if not ok or type(value) ~= "string" or value == "" then
      error("crank: the provider.apiKey function gave no key: " .. tostring(value), 0)
    end
    return value
  end
  if type(key) == "string" and key:sub(1, 4) == "cmd:" then
    local command = key:sub(5)
    local done = vim.system({ vim.o.shell, vim.o.shellcmdflag, command }, { text = true }):wait()
    local value = vim.trim(done.stdout or "")
    if done.code ~= 0 or value == "" then
      error(
        string.format(
          "crank: the provider.apiKey command `%s` gave no key (exit %d): %s",
          command,
          done.code,
          vim.trim(done.stderr or "")
        ),
        0
      )
    end
    return value
  end
  return key
end

--- The `initializationOptions.crank` object the server reads.
---@return table
function M.init_options()
  local crank = vim.empty_dict()
  for option, key in pairs(INIT_KEYS) do
    if M.values[option] ~= nil then
      crank[key] = M.values[option]
    end
  end
  if crank.provider and crank.provider.apiKey ~= nil then
    crank.provider = vim.deepcopy(crank.provider)
    crank.provider.apiKey = M.resolve_api_key(crank.provider.apiKey)
  end
  return { crank = crank }
end

return M
