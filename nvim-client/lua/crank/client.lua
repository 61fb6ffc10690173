--- One Crank language client per project root, through Neovim's built-in LSP client.
---
--- A `Workspace` holds what the plugin knows about one root: its client id, the folder
--- URI exactly as sent in `workspaceFolders` (the protocol's workspace id), the active
--- session, whether a run is going, usage and queues. `crank/event` notifications and
--- `crank/requestPermission` requests are routed to it by client id.
local config = require("crank.config")

local M = {}

local HAS_011 = vim.fn.has("nvim-0.11") == 1

---@class crank.Workspace
---@field root string
---@field uri string
---@field client_id integer
---@field session_id string|nil
---@field run_id string|nil
---@field running boolean
---@field usage table|nil
---@field model table|nil
---@field queue {steering: string[], followUp: string[]}
---@field last_seq table<string, integer>
---@field server_version string|nil
---@field listeners fun(ws: crank.Workspace, params: table)[]
local Workspace = {}
Workspace.__index = Workspace

---@type table<string, crank.Workspace>
M.by_root = {}
---@type table<integer, crank.Workspace>
M.by_client = {}

--- The name the server gives an error code (its `initialize` result advertises
--- `experimental.crank.errorCodes`, name -> code), or nil.
---@param code any
---@return string|nil
function M.error_name(code)
  for _, ws in pairs(M.by_client) do
    for name, number in pairs(ws.error_codes or {}) do
      if number == code then
        return name
      end
    end
  end
  return nil
end

--- Hooks other modules register (kept here so the layers stay one-way).
M.on_event = nil ---@type fun(ws: crank.Workspace, params: table)|nil
M.on_permission = nil ---@type fun(ws: crank.Workspace, params: table): table|nil
M.on_commands_changed = nil ---@type fun(ws: crank.Workspace)|nil

---@return vim.lsp.Client|nil
function Workspace:client()
  local client = vim.lsp.get_client_by_id(self.client_id)
  if client == nil then
    return nil
  end
  local stopped
  if HAS_011 then
    stopped = client:is_stopped()
  else
    stopped = client.is_stopped()
  end
  if stopped then
    return nil
  end
  return client
end

--- Send a request; `callback(err, result)` runs on the main loop. Adds `workspace`.
---@param method string
---@param params table|nil
---@param callback fun(err: table|nil, result: any)|nil
function Workspace:request(method, params, callback)
  local client = self:client()
  callback = callback or function(err)
    if err then
      vim.notify("crank: " .. method .. ": " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end
  if client == nil then
    callback({ code = -1, message = "the Crank server is not running for " .. self.root })
    return
  end
  params = vim.tbl_extend("keep", params or {}, { workspace = self.uri })
  local handler = function(err, result)
    callback(err, result)
  end
  if HAS_011 then
    client:request(method, params, handler)
  else
    client.request(method, params, handler)
  end
end

--- The same, waiting for the answer (for commands and tests).
---@return table|nil err, any result
function Workspace:request_wait(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  self:request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  local ok = vim.wait(timeout_ms or 10000, function()
    return done
  end, 10)
  if not ok then
    return { code = -2, message = method .. " timed out" }, nil
  end
  return err, result
end

function Workspace:execute(command, arguments, callback)
  self:request("workspace/executeCommand", { command = command, arguments = arguments }, callback)
end

--- Record an event's effect on the workspace state; true when it is new (not a replay).
---@param params crank.EventParams
function Workspace:note_event(params)
  local event = params.event or {}
  self.session_id = self.session_id or params.sessionId
  local t = event.type
  if t == "agent_start" then
    self.running = true
    self.run_id = params.runId
  elseif t == "agent_settled" then
    self.running = false
    self.last_run_id = params.runId or self.run_id
    self.run_id = nil
  elseif t == "usage_update" then
    self.usage = event
  elseif t == "queue_update" then
    self.queue = { steering = event.steering or {}, followUp = event.followUp or {} }
  elseif t == "session_changed" then
    self.session_id = event.sessionId
  elseif t == "mcp_changed" then
    self.mcp = event.servers
  end
end

--- Whether `seq` for this session jumped (a lost notification).
---@param params crank.EventParams
---@return boolean
function Workspace:seq_gap(params)
  local sid = params.sessionId or "?"
  local last = self.last_seq[sid]
  self.last_seq[sid] = params.seq
  return last ~= nil and type(params.seq) == "number" and params.seq ~= last + 1
end

---@param callback fun(err: table|nil, result: crank.StateResult|nil)|nil
function Workspace:refresh_state(callback)
  self:request("crank/state", {}, function(err, result)
    if not err and result then
      self.session_id = result.sessionId
      self.running = result.running and true or false
      self.run_id = result.runId
      self.usage = result.usage
      self.model = result.model
      self.queue = result.queue or self.queue
      self.permission_mode = result.permissionMode
      self.sandbox = result.sandbox
      self.mcp = result.mcp
      self.config_error = result.configError
    end
    if callback then
      callback(err, result)
    end
  end)
end

local function handle_event(_, params, ctx)
  local ws = M.by_client[ctx.client_id]
  if ws == nil or type(params) ~= "table" then
    return
  end
  ws:note_event(params)
  if M.on_event then
    M.on_event(ws, params)
  end
  -- Every window's statusline: the component shows the project's state wherever it is.
  vim.cmd("redrawstatus!")
end

local function handle_permission(_, params, ctx)
  local ws = M.by_client[ctx.client_id]
  if ws == nil or M.on_permission == nil then
    return { decision = "reject", reason = "The Neovim client could not ask the user." }
  end
  return M.on_permission(ws, params)
end

--- Find the project root for a buffer (or the current directory).
---@param bufnr integer|nil
---@return string
function M.root_for(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name ~= "" and not name:match("^%a[%w+.-]*://") then
    local found = vim.fs.root(bufnr, config.values.root_markers)
    if found then
      return vim.fs.normalize(found)
    end
    -- A file outside any marked project belongs to the workspace it lives under, if any.
    local path = vim.fs.normalize(vim.fn.fnamemodify(name, ":p"))
    for root in pairs(M.by_root) do
      if path:sub(1, #root + 1) == root .. "/" then
        return root
      end
    end
    return vim.fs.normalize(vim.fn.fnamemodify(name, ":p:h"))
  end
  return vim.fs.normalize(vim.fn.getcwd())
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental =
    { crank = { events = true, permissionRequests = true, saveDocuments = true, diagnostics = true } }
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  return caps
end

--- On Neovim 0.11+ servers are configured with `vim.lsp.config(name, cfg)` (or an
--- `lsp/<name>.lua` on the runtime path): what the user set for "crank" there is
--- merged over what the plugin starts (cmd, cmd_env, init_options, capabilities...).
--- The plugin still starts the server itself, once per project root, so
--- `vim.lsp.enable("crank")` is not needed; the name, root and Crank's own handlers
--- stay the plugin's.
---@param base table
---@return table
function M.with_user_config(base)
  if not HAS_011 then
    return base
  end
  local ok, user = pcall(function()
    return vim.lsp.config.crank
  end)
  if not ok or type(user) ~= "table" then
    return base
  end
  local merged = vim.tbl_deep_extend("force", base, user)
  merged.name, merged.root_dir, merged.cmd_cwd = base.name, base.root_dir, base.cmd_cwd
  merged.workspace_folders = base.workspace_folders
  for method, handler in pairs(base.handlers) do
    merged.handlers[method] = handler
  end
  for _, hook in ipairs({ "on_init", "on_exit" }) do
    merged[hook] = base[hook]
  end
  return merged
end

--- Start (or find) the client for `root`.
---@param root string
---@return crank.Workspace|nil ws, string|nil err
function M.ensure(root)
  local existing = M.by_root[root]
  if existing and existing:client() then
    return existing
  end
  local cfg = config.values
  local cmd = cfg.cmd
  if type(cmd) == "function" then
    cmd = cmd(root)
  end
  local uri = vim.uri_from_fname(root)
  -- Built once per start: resolving provider.apiKey may run the user's key command.
  local built, init = pcall(config.init_options)
  if not built then
    return nil, tostring(init)
  end
  local lsp_config = {
    name = "crank",
    cmd = cmd,
    cmd_env = cfg.cmd_env,
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = uri, name = vim.fs.basename(root) } },
    init_options = init,
    settings = init,
    capabilities = capabilities(),
    handlers = {
      ["crank/event"] = handle_event,
      ["crank/requestPermission"] = handle_permission,
      ["crank/commandsChanged"] = function(_, _, ctx)
        local ws = M.by_client[ctx.client_id]
        if ws and M.on_commands_changed then
          M.on_commands_changed(ws)
        end
      end,
      ["crank/saveDocument"] = function(_, params)
        return require("crank.save").handle(params)
      end,
      ["crank/diagnostics"] = function(_, params)
        return require("crank.review").diagnostics(params)
      end,
    },
    on_init = function(client, result)
      local ws = M.by_client[client.id]
      if ws and result and result.serverInfo then
        ws.server_version = result.serverInfo.version
        ws.server_name = result.serverInfo.name
      end
      local experimental = ws and result and result.capabilities and result.capabilities.experimental
      if experimental and type(experimental.crank) == "table" then
        ws.error_codes = experimental.crank.errorCodes
      end
      if ws then
        ws:refresh_state()
      end
    end,
    on_exit = function(code, signal, client_id)
      local ws = M.by_client[client_id]
      if ws then
        ws.running = false
        ws.exit_code = code
        if code ~= 0 then
          vim.schedule(function()
            vim.notify(
              string.format("crank: the server for %s exited (code %s, signal %s)", root, code, signal),
              vim.log.levels.WARN
            )
          end)
        end
      end
    end,
  }
  lsp_config = M.with_user_config(lsp_config)
  cmd = lsp_config.cmd
  local ok, id_or_err
  if vim.fn.executable(cmd[1]) == 0 then
    return nil, "cannot run " .. tostring(cmd[1]) .. " (set `cmd` in require('crank').setup())"
  end
  if HAS_011 then
    ok, id_or_err = pcall(vim.lsp.start, lsp_config, { attach = false })
  else
    ok, id_or_err = pcall(vim.lsp.start_client, lsp_config)
  end
  if not ok or id_or_err == nil then
    return nil, "could not start " .. table.concat(cmd, " ") .. ": " .. tostring(id_or_err)
  end
  local ws = setmetatable({
    root = root,
    uri = uri,
    client_id = id_or_err,
    running = false,
    queue = { steering = {}, followUp = {} },
    last_seq = {},
  }, Workspace)
  M.by_root[root] = ws
  M.by_client[ws.client_id] = ws
  return ws
end

--- Attach the root's client to a file buffer, so it sees the text and offers actions.
---@param bufnr integer
---@return crank.Workspace|nil, string|nil
function M.attach(bufnr)
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    return nil, "not a file buffer"
  end
  local ws, err = M.ensure(M.root_for(bufnr))
  if ws == nil then
    return nil, err
  end
  if not vim.lsp.buf_is_attached(bufnr, ws.client_id) then
    vim.lsp.buf_attach_client(bufnr, ws.client_id)
  end
  return ws
end

--- The workspace for the current buffer (starting it if needed).
---@return crank.Workspace|nil, string|nil
function M.current()
  local buf = vim.api.nvim_get_current_buf()
  local chat_ws = vim.b[buf].crank_root
  if chat_ws and M.by_root[chat_ws] then
    return M.ensure(chat_ws)
  end
  if vim.bo[buf].buftype == "" and vim.api.nvim_buf_get_name(buf) ~= "" then
    return M.attach(buf)
  end
  return M.ensure(M.root_for(buf))
end

--- Stop every client (used by tests and :CrankStop).
function M.stop_all()
  for root, ws in pairs(M.by_root) do
    local client = ws:client()
    if client then
      if HAS_011 then
        client:stop()
      else
        client.stop()
      end
    end
    M.by_root[root] = nil
    M.by_client[ws.client_id] = nil
  end
end

M.Workspace = Workspace
return M
