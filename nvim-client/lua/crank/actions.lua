--- What the user commands do: each takes a workspace and talks to the server.
---
--- Errors from the server are shown with vim.notify, naming the request; nothing the
--- user typed is dropped (a prompt that was refused goes back into the prompt area).
local chat_mod = require("crank.chat")
local context_mod = require("crank.context")
local client = require("crank.client")
local config = require("crank.config")
local format = require("crank.format")

local M = {}

--- What the user can do about the server's own errors, by the names the server gives
--- their codes (so no number is copied here).
local HINTS = {
  runInProgress = "use :CrankSteer or :CrankFollowUp, or :CrankAbort",
  noProvider = "see :help crank-setup",
  refusedWhileRunning = ":CrankAbort first",
  sessionLocked = "another Neovim or crank process has this session open",
}

local function report(what, err)
  local msg = err.message or vim.inspect(err)
  local hint = HINTS[client.error_name(err.code) or ""]
  if hint then
    msg = msg .. " (" .. hint .. ")"
  end
  vim.notify(string.format("crank: %s failed: %s", what, msg), vim.log.levels.ERROR)
end
M.report = report

--- The current workspace, or nil after telling the user why not.
---@return crank.Workspace|nil
function M.workspace()
  local ws, err = client.current()
  if ws == nil then
    vim.notify("crank: " .. tostring(err), vim.log.levels.ERROR)
  end
  return ws
end

local function update_status(ws)
  local chat = chat_mod.by_root[ws.root]
  if chat then
    chat:update_status()
  end
end

--- Send `method` for the current workspace; `on_result(ws, result)` when it succeeds,
--- a notification naming `what` when it fails.
local function call(what, method, params, on_result)
  local ws = M.workspace()
  if ws == nil then
    return
  end
  ws:request(method, params or {}, function(err, result)
    if err then
      return report(what, err)
    end
    on_result(ws, result or {})
  end)
end

--- Open the chat (focusing its prompt); `then_` runs once the transcript is loaded.
function M.open_chat(ws, then_)
  local chat = chat_mod.get(ws)
  chat:show()
  if then_ then
    if chat.loaded then
      then_(chat)
    else
      local waited = 0
      local function poll()
        if chat.loaded or waited > 100 then
          then_(chat)
        else
          waited = waited + 1
          vim.defer_fn(poll, 20)
        end
      end
      poll()
    end
  end
  return chat
end

--- Put the images attached with :CrankAttach on `params` (the message that carries
--- them takes them); returns a function that gives them back when it is refused.
local function take_attached(ws, params)
  local images = ws.attached or {}
  if #images == 0 then
    return function() end
  end
  params.images = images
  ws.attached = {}
  return function()
    ws.attached = images -- kept for the next try, like the text
  end
end

--- Put the context added with :CrankAdd and the items the @ words of `text` name
--- (crank.context) on `params`; returns a function that gives the added ones back
--- when the prompt is refused.
local function take_context(ws, params, text)
  local added = ws.context or {}
  local typed = context_mod.from_text(text, ws.root)
  local all = vim.list_extend(vim.list_extend({}, added), typed)
  if #all == 0 then
    return function() end
  end
  params.context = all
  ws.context = {}
  return function()
    ws.context = added
  end
end

--- :CrankAdd: the current file (a range: its lines; "problems": its diagnostics) goes
--- with the next prompt; :CrankAdd! drops what was added.
---@param opts { range: integer[]|nil, what: string|nil, drop: boolean|nil }
function M.add(opts)
  local ws = M.workspace()
  if ws == nil then
    return
  end
  if opts.drop then
    ws.context = {}
    return vim.notify("crank: no context for the next prompt", vim.log.levels.INFO)
  end
  local buf = context_mod.file_buffer(ws.root)
  if buf == nil then
    return vim.notify("crank: :CrankAdd needs a file buffer of this workspace", vim.log.levels.ERROR)
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":.")
  local item, label
  if opts.what == "problems" then
    item = context_mod.problems(buf)
    label = string.format("problems of %s (%d)", name, #item.diagnostics)
  elseif opts.what ~= nil and opts.what ~= "" then
    return vim.notify("crank: :CrankAdd takes nothing or 'problems', not " .. opts.what, vim.log.levels.ERROR)
  elseif opts.range then
    item = context_mod.lines(buf, opts.range[1], opts.range[2])
    label = string.format("%s:%d-%d", name, opts.range[1], opts.range[2])
  else
    item = { uri = vim.uri_from_bufnr(buf) }
    label = name
  end
  ws.context = ws.context or {}
  table.insert(ws.context, item)
  vim.notify("crank: " .. label .. " goes with the next prompt", vim.log.levels.INFO)
end

--- The warning for images a model that takes none was not sent.
local function warn_omitted(result)
  if type(result) == "table" and result.imagesOmitted then
    vim.notify("crank: " .. result.imagesOmitted, vim.log.levels.WARN)
  end
end

--- Send `text` as a prompt; `mode` overrides config.while_running for a busy agent.
---@param ws crank.Workspace
---@param text string
---@param mode "steer"|"followUp"|"reject"|nil
---@param on_refused fun(text: string)|nil
function M.send(ws, text, mode, on_refused)
  if text == nil or vim.trim(text) == "" then
    return
  end
  local params = { text = text, whileRunning = mode or config.values.while_running }
  local give_back = take_attached(ws, params)
  local give_back_context = take_context(ws, params, text)
  ws:request("crank/prompt", params, function(err, result)
    if err then
      report("sending the prompt", err)
      give_back()
      give_back_context()
      if on_refused then
        on_refused(text)
      end
      return
    end
    warn_omitted(result)
    if result and result.command then
      return M.command_answered(ws, result)
    elseif result and result.queued then
      vim.notify("crank: queued as " .. result.queued, vim.log.levels.INFO)
    elseif result then
      ws.session_id = result.sessionId or ws.session_id
      ws.run_id = result.runId
      ws.running = true
    end
    update_status(ws)
  end)
end

--- :CrankAttach {path}: attach an image file (PNG, JPEG, GIF, WebP) to the next message sent (prompt, steer or follow-up).
--- The server reads and checks the file when the prompt is sent; with no path, the
--- attached images are listed, and `:CrankAttach!` drops them.
function M.attach(path, drop)
  local ws = M.workspace()
  if ws == nil then
    return
  end
  ws.attached = ws.attached or {}
  if drop then
    ws.attached = {}
    return vim.notify("crank: no images attached", vim.log.levels.INFO)
  end
  if path == nil or vim.trim(path) == "" then
    local names = {}
    for _, image in ipairs(ws.attached) do
      names[#names + 1] = image.name
    end
    local list = #names > 0 and table.concat(names, ", ") or "none"
    return vim.notify("crank: images for the next message: " .. list, vim.log.levels.INFO)
  end
  local full = vim.fn.fnamemodify(vim.fn.expand(vim.trim(path)), ":p")
  if vim.fn.filereadable(full) == 0 then
    return vim.notify("crank: cannot read " .. full, vim.log.levels.ERROR)
  end
  local name = vim.fn.fnamemodify(full, ":t")
  table.insert(ws.attached, { path = full, name = name })
  vim.notify("crank: [image: " .. name .. "] goes with the next message (prompt, steer or follow-up)", vim.log.levels.INFO)
  local chat = chat_mod.by_root[ws.root]
  if chat and chat.buf and vim.api.nvim_buf_is_valid(chat.buf) then
    chat:notice("_[image: " .. name .. "] attached to the next message_")
  end
end

--- Send what is typed in the chat's prompt area.
function M.send_from_chat(chat, mode)
  local text = chat:prompt_text()
  if text == "" then
    return
  end
  chat:clear_prompt()
  M.send(chat.ws, text, mode, function(refused)
    chat:set_prompt(refused)
  end)
end

--- :Crank [text]
function M.chat(text)
  local ws = M.workspace()
  if ws == nil then
    return
  end
  M.open_chat(ws, function(chat)
    if text and text ~= "" then
      M.send(ws, text, nil, function(refused)
        chat:set_prompt(refused)
      end)
    end
  end)
end

local function queue_request(method, label)
  return function(text)
    if text == nil or vim.trim(text) == "" then
      return vim.notify("crank: " .. label .. " needs text", vim.log.levels.WARN)
    end
    local ws = M.workspace()
    if ws == nil then
      return
    end
    local params = { text = text }
    local give_back = take_attached(ws, params)
    ws:request(method, params, function(err, result)
      if err then
        give_back()
        return report(label, err)
      end
      warn_omitted(result)
      ws.queue = result or {}
      update_status(ws)
    end)
  end
end

M.steer = queue_request("crank/steer", "steering")
M.follow_up = queue_request("crank/followUp", "follow-up")

--- :CrankAbort; `done(stopReason)` once the run has settled.
function M.abort(ws, done)
  ws = ws or M.workspace()
  if ws == nil then
    return
  end
  ws:request("crank/abort", {}, function(err, result)
    if err then
      return report("abort", err)
    end
    ws.running = false
    if done then
      done(result and result.stopReason)
    end
  end)
end

--- LSP-shaped diagnostics for a buffer (for crank.fixFile).
function M.lsp_diagnostics(bufnr, range)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local inside = range == nil or (d.lnum >= range.start.line and d.lnum <= range["end"].line)
    if inside then
      out[#out + 1] = format.lsp_diagnostic(d)
    end
  end
  return out
end

--- :CrankFix [instruction] on the current buffer (a range limits it).
function M.fix(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local ws, err = client.attach(bufnr)
  if ws == nil then
    vim.notify("crank: :CrankFix needs a file buffer (" .. tostring(err) .. ")", vim.log.levels.ERROR)
    return
  end
  local arg = { uri = vim.uri_from_bufnr(bufnr) }
  if opts.range then
    arg.range = opts.range
  end
  arg.diagnostics = M.lsp_diagnostics(bufnr, opts.range)
  if opts.instruction and opts.instruction ~= "" then
    arg.instruction = opts.instruction
  end
  local source_win = vim.api.nvim_get_current_win()
  M.open_chat(ws, function()
    ws:execute("crank.fixFile", { arg }, function(e, result)
      if e then
        return report(":CrankFix", e)
      end
      if result then
        ws.running = true
        ws.run_id = result.runId
      end
    end)
  end)
  -- The chat shows the progress; the cursor stays in the file being fixed.
  if vim.api.nvim_win_is_valid(source_win) then
    vim.api.nvim_set_current_win(source_win)
  end
end

local function show_new_session(ws, session_id)
  ws.session_id = session_id or ws.session_id
  ws.last_seq = {}
  M.open_chat(ws):reload()
end

--- :CrankNew
function M.new_session()
  call("new session", "crank/newSession", {}, function(ws, result)
    show_new_session(ws, result.sessionId)
  end)
end

--- Open a session by id and show it.
function M.open_session(ws, session_id, done)
  ws:request("crank/openSession", { sessionId = session_id }, function(err, result)
    if err then
      return report("opening the session", err)
    end
    ws.session_id = result.sessionId
    ws.last_seq = {}
    M.open_chat(ws):reload(done)
  end)
end

--- :CrankEarlier: the chat shows a page more of the session's earlier messages.
function M.earlier()
  local ws = M.workspace()
  if ws == nil then
    return
  end
  M.open_chat(ws, function(chat)
    chat:earlier()
  end)
end

--- :CrankSessions: pick one and open it.
function M.sessions()
  call("listing sessions", "crank/sessions", {}, function(ws, result)
    local sessions = result.sessions or {}
    if #sessions == 0 then
      return vim.notify("crank: no sessions yet in " .. ws.root, vim.log.levels.INFO)
    end
    local opts = { prompt = "Crank sessions", format_item = format.session_item, kind = "crank.session" }
    vim.ui.select(sessions, opts, function(choice)
      if choice then
        M.open_session(ws, choice.sessionId)
      end
    end)
  end)
end

local function model_set(ws, result)
  ws.model = result.model
  vim.notify(string.format("crank: model %s/%s", tostring(result.model.api), tostring(result.model.id)), vim.log.levels.INFO)
end

--- Set the model of `ws` (the workspace the picker was for, not whichever is current when the pick comes).
local function set_model(ws, api, id)
  ws:request("crank/setModel", { api = api, id = id }, function(err, result)
    if err then
      return report("setting the model", err)
    end
    model_set(ws, result or {})
  end)
end

local function model_item(m)
  local where = m.source == "server" and ", served here" or ""
  return string.format("%s/%s (%s tokens%s)", m.api, m.id, tostring(m.contextWindow or "?"), where)
end

local function pick_model(ws, models)
  local opts = { prompt = "Crank model", kind = "crank.model", format_item = model_item }
  vim.ui.select(models or {}, opts, function(choice)
    if choice then
      set_model(ws, choice.api, choice.id)
    end
  end)
end

--- :CrankModel [api/id]: pick or set the model.
function M.model(spec)
  if spec and spec ~= "" then
    local api, id = spec:match("^([^/]+)/(.+)$")
    if not api then
      local msg = "crank: :CrankModel takes api/model-id, e.g. anthropic/claude-sonnet-4-5"
      return vim.notify(msg, vim.log.levels.ERROR)
    end
    local ws = M.workspace()
    return ws and set_model(ws, api, id)
  end
  call("listing models", "crank/models", {}, function(ws, result)
    pick_model(ws, result.models)
  end)
end

local function report_compaction(result)
  if not result.compacted then
    return vim.notify("crank: not compacted: " .. tostring(result.reason or "nothing to do"), vim.log.levels.INFO)
  end
  local msg = string.format("crank: compacted (%s → %s tokens)", tostring(result.tokensBefore), tostring(result.tokensAfter))
  vim.notify(msg, vim.log.levels.INFO)
end

--- :CrankCompact [instructions]
---
--- The chat is not reloaded: the conversation stays readable where it was, with the
--- compaction notices (from the server's events) under it, as after a compaction the
--- server does on its own mid-run. Reopening the chat shows what the agent now sees.
function M.compact(instructions)
  local params = {}
  if instructions and instructions ~= "" then
    params.instructions = instructions
  end
  call("compaction", "crank/compact", params, function(_, result)
    report_compaction(result)
  end)
end

--- A built-in command typed in the prompt (`/new`, `/compact`, `/model`) ran on the
--- server instead of a run (its answer has `command` and `result`): do what the
--- matching command (:CrankNew, :CrankCompact, :CrankModel) does with its answer.
function M.command_answered(ws, answer)
  local result = type(answer.result) == "table" and answer.result or {}
  local name = answer.command
  if name == "new" then
    show_new_session(ws, result.sessionId or answer.sessionId)
  elseif name == "compact" then
    report_compaction(result)
  elseif name == "model" and type(result.models) == "table" then
    pick_model(ws, result.models)
  elseif name == "model" and type(result.model) == "table" then
    model_set(ws, result)
  else
    vim.notify("crank: /" .. tostring(name) .. " done", vim.log.levels.INFO)
  end
  update_status(ws)
end

--- The lines of the :CrankPrompt buffer.
function M.system_prompt_lines(result)
  local lines = { "# Crank system prompt", "", "Sources:" }
  for _, s in ipairs(result.sources or {}) do
    local what = s.path or s.name
    lines[#lines + 1] = "- " .. tostring(s.kind) .. (what and (": " .. what) or "") .. (s.reason and (" (" .. s.reason .. ")") or "")
  end
  vim.list_extend(lines, { "Hash: " .. tostring(result.hash), "", "---", "" })
  return vim.list_extend(lines, format.lines(result.text or ""))
end

--- :CrankPrompt: the system prompt and where it came from, in a scratch buffer.
function M.system_prompt()
  call("reading the system prompt", "crank/systemPrompt", {}, function(_, result)
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.system_prompt_lines(result))
    vim.bo[buf].filetype = "markdown"
    vim.bo[buf].modifiable = false
    vim.bo[buf].bufhidden = "wipe"
    pcall(vim.api.nvim_buf_set_name, buf, "crank://system-prompt")
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf })
  end)
end

--- :CrankMcp: the workspace's MCP servers, their state and tools (crank/state `mcp`).
function M.mcp()
  call("reading the MCP servers", "crank/state", {}, function(_, result)
    local buf = vim.api.nvim_create_buf(false, true)
    local lines = vim.list_extend({ "# Crank MCP servers", "" }, format.mcp_lines(result.mcp))
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].filetype = "markdown"
    vim.bo[buf].modifiable = false
    vim.bo[buf].bufhidden = "wipe"
    pcall(vim.api.nvim_buf_set_name, buf, "crank://mcp")
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf })
  end)
end

--- :CrankMode mode
function M.permission_mode(mode)
  call("setting the permission mode", "crank/setPermissionMode", { mode = mode }, function(ws, result)
    ws.permission_mode = result.mode
    vim.notify("crank: permission mode " .. tostring(result.mode), vim.log.levels.INFO)
  end)
end

return M
