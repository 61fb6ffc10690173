--- Pure text formatting for the chat, the statusline and pickers.
---
--- No buffers or windows here: every function maps data from the protocol to strings
--- or lines, so it can be tested without a server or a UI.
local M = {}

M.USER_HEADER = "## You"
M.ASSISTANT_HEADER = "## Crank"
--- Tool results folded in the chat sit between these fences (see chat.foldexpr).
M.FOLD_OPEN = "````output"
M.FOLD_CLOSE = "````"

local function one_line(s, max)
  s = tostring(s or ""):gsub("%s+", " ")
  max = max or 80
  if vim.fn.strchars(s) > max then
    s = vim.fn.strcharpart(s, 0, max - 1) .. "…"
  end
  return s
end
M.one_line = one_line

--- Split text into lines (a trailing newline does not add an empty line).
---@param text string
---@return string[]
function M.lines(text)
  text = tostring(text or "")
  local out = vim.split(text, "\n", { plain = true })
  if #out > 1 and out[#out] == "" then
    table.remove(out)
  end
  return out
end

local KEY_ARGS = { "path", "command", "pattern", "query", "url", "glob" }

--- A short description of a tool call: its name and its most telling argument.
---@param name string
---@param args table|nil
---@return string
function M.tool_summary(name, args, plain)
  args = type(args) == "table" and args or {}
  -- markdown for the chat buffer; plain text where nothing renders it (the float)
  local bold, code = "**%s**", "`%s`"
  if plain then
    bold, code = "%s", "%s"
  end
  for _, key in ipairs(KEY_ARGS) do
    if type(args[key]) == "string" then
      return string.format(bold .. " " .. code, name, one_line(args[key], 70))
    end
  end
  local keys = vim.tbl_keys(args)
  table.sort(keys)
  if #keys == 0 then
    return string.format(bold, name)
  end
  local parts = {}
  for _, k in ipairs(keys) do
    local v = args[k]
    local shown = type(v) == "string" and v or vim.json.encode(v)
    parts[#parts + 1] = k .. "=" .. one_line(shown, 30)
  end
  return string.format(bold .. " %s", name, one_line(table.concat(parts, " "), 70))
end

--- The line that heads a tool call in the chat.
---@param name string
---@param args table|nil
---@param status "running"|"ok"|"error"
function M.tool_header(name, args, status)
  local mark = ({ running = "⋯", ok = "✓", error = "✗" })[status] or "?"
  return string.format("- %s %s", mark, M.tool_summary(name, args))
end

--- Tool result content (a string, or content blocks) as plain text.
function M.result_text(content)
  if type(content) == "string" then
    return content
  end
  if type(content) == "table" then
    local parts = {}
    for _, block in ipairs(content) do
      if type(block) == "table" then
        if block.type == "text" then
          parts[#parts + 1] = block.text or ""
        elseif block.type == "image" then
          parts[#parts + 1] = "[image]"
        end
      elseif type(block) == "string" then
        parts[#parts + 1] = block
      end
    end
    return table.concat(parts, "\n")
  end
  return ""
end

--- The body under a tool header: short results inline, long ones fenced for folding.
---@param content any
---@param is_error boolean
---@param fold_lines integer
---@return string[]
function M.tool_result_lines(content, is_error, fold_lines)
  local text = M.result_text(content)
  local lines = M.lines(text)
  if #lines == 1 and lines[1] == "" then
    return { is_error and "  (error, no output)" or "  (no output)" }
  end
  local out = {}
  if #lines > fold_lines then
    out[1] = "  " .. M.FOLD_OPEN .. string.format(" (%d lines)", #lines)
    for _, l in ipairs(lines) do
      out[#out + 1] = "  " .. l
    end
    out[#out + 1] = "  " .. M.FOLD_CLOSE
    return out
  end
  out[1] = "  ```"
  for _, l in ipairs(lines) do
    out[#out + 1] = "  " .. l
  end
  out[#out + 1] = "  ```"
  return out
end

--- Lines for an error shown in the chat.
function M.error_lines(message)
  local out = {}
  for i, l in ipairs(M.lines(message or "unknown error")) do
    out[#out + 1] = (i == 1 and "> **Error:** " or "> ") .. l
  end
  return out
end

--- A byte count as people read it: `512 B`, `1.2 KB`, `35 KB`, `2.4 MB` (the same
--- rounding as the server's own image descriptions).
---@param size number
---@return string
function M.human_bytes(size)
  if size < 1024 then
    return string.format("%d B", size)
  elseif size < 1024 * 1024 then
    return string.format(size >= 10 * 1024 and "%.0f KB" or "%.1f KB", size / 1024)
  end
  return string.format("%.1f MB", size / (1024 * 1024))
end

--- Whether an image block is stored beside the session (a reference with no bytes of
--- its own: they come from `crank/image`).
function M.image_stored(image)
  return type(image) == "table" and image.data == nil and type(image.sha256) == "string"
end

--- The one line that shows an image in the chat, for user messages and tool cards
--- alike: `[image: chart.png, image/png, 640x480, 35 KB, stored]` (name, type, size in
--- pixels when known, size in bytes, and `stored` when its bytes are beside the session).
---@param image table an image block (`{type = "image", mimeType, bytes, name?, width?, height?, data? | sha256?}`)
---@return string
function M.image_line(image)
  local parts = {}
  if type(image.name) == "string" and image.name ~= "" then
    parts[#parts + 1] = one_line(image.name, 60)
  end
  parts[#parts + 1] = type(image.mimeType) == "string" and image.mimeType or "image"
  if tonumber(image.width) and tonumber(image.height) then
    parts[#parts + 1] = string.format("%dx%d", image.width, image.height)
  end
  if tonumber(image.bytes) then
    parts[#parts + 1] = M.human_bytes(tonumber(image.bytes))
  end
  if M.image_stored(image) then
    parts[#parts + 1] = "stored"
  end
  return "[image: " .. table.concat(parts, ", ") .. "]"
end

--- `image_line` for each of a message's images.
function M.image_lines(images)
  local out = {}
  for _, image in ipairs(type(images) == "table" and images or {}) do
    out[#out + 1] = M.image_line(image)
  end
  return out
end

--- The file name extension for an image's type (the four the server sends).
M.IMAGE_EXTENSIONS = { ["image/png"] = "png", ["image/jpeg"] = "jpg", ["image/gif"] = "gif", ["image/webp"] = "webp" }

--- A notice line for retries, compactions and the like (nil: nothing to show).
---@param event crank.CrankEvent a crank/event `event`
---@return string|nil
function M.notice(event)
  local t = event.type
  if t == "retry_start" then
    return string.format(
      "_Retrying (attempt %s) in %.1fs: %s_",
      tostring(event.attempt or "?"),
      (tonumber(event.delayMs) or 0) / 1000,
      one_line(event.error or "", 120)
    )
  elseif t == "retry_end" then
    if event.success then
      return "_Retry succeeded._"
    end
    return "_Retry failed: " .. one_line(event.error or "", 120) .. "_"
  elseif t == "compaction_start" then
    return "_Compacting the conversation (" .. tostring(event.reason or "?") .. ")…_"
  elseif t == "compaction_end" then
    if event.error then
      return "_Compaction failed: " .. one_line(event.error, 120) .. "_"
    end
    return event.compacted and "_Conversation compacted._" or "_Nothing to compact._"
  elseif t == "images_omitted" then
    return "_" .. one_line(event.message or "images were left out", 300) .. "_"
  elseif t == "notice" then
    return "_" .. one_line(event.message or "", 300) .. "_"
  elseif t == "agent_end" then
    if event.stopReason == "aborted" then
      return "_Aborted._"
    end
  end
  return nil
end

--- "12%" style context use; nil when unknown.
---@param usage crank.ContextUsage|crank.UsageUpdate|nil
---@return string|nil
function M.context_percent(usage)
  if type(usage) ~= "table" then
    return nil
  end
  local used, window = tonumber(usage.contextTokens), tonumber(usage.contextWindow)
  if not used or not window or window <= 0 then
    return nil
  end
  return math.floor(used * 100 / window + 0.5)
end

--- The statusline text for a workspace state (nil state: not started).
---@param state {running: boolean, usage: crank.ContextUsage|crank.UsageUpdate|nil}|nil
---@return string
function M.status(state)
  if state == nil then
    return ""
  end
  local parts = { state.running and "crank: running" or "crank: idle" }
  local pct = M.context_percent(state.usage)
  if pct then
    parts[#parts + 1] = pct .. "%"
  end
  local cost = state.usage and tonumber(state.usage.cost)
  if cost then
    parts[#parts + 1] = string.format("$%.4f", cost)
  end
  if type(state.sandbox) == "table" and not state.sandbox.confined then
    parts[#parts + 1] = state.sandbox.mode == "off" and "[sandbox off]" or "[no sandbox]"
  end
  return table.concat(parts, " ")
end

--- One sentence about the sandbox (crank/state's `sandbox`), and whether it is fine.
---@param sb crank.SandboxState|nil
---@return string|nil text, boolean ok
function M.sandbox_line(sb)
  if type(sb) ~= "table" then
    return nil, false
  end
  if sb.confined then
    local net = sb.network and "network on" or "network off"
    return string.format("sandbox: %s, %s (%s)", tostring(sb.mode), net, tostring(sb.detail)), true
  end
  if sb.mode == "off" then
    return "sandbox off: the agent's commands run unconfined, as you", false
  end
  return "no sandbox (" .. tostring(sb.detail) .. "): every command asks first", false
end

--- The lines :CrankMcp and :checkhealth show for crank/state's `mcp` list: a line per
--- server (name, source, transport, state, tool count), its error's lines under it.
---@param servers crank.McpServerState[]|nil
---@return string[]
function M.mcp_lines(servers)
  if type(servers) ~= "table" or #servers == 0 then
    return { "No MCP servers are configured (see docs/mcp.md)." }
  end
  local lines = {}
  for _, s in ipairs(servers) do
    local tools = s.tools or {}
    lines[#lines + 1] = string.format(
      "%s (%s, %s): %s, %d tool%s",
      tostring(s.name),
      tostring(s.source),
      tostring(s.transport or "stdio"),
      tostring(s.state),
      #tools,
      #tools == 1 and "" or "s"
    )
    if s.error then
      for _, line in ipairs(M.lines(s.error)) do
        lines[#lines + 1] = "  ! " .. line
      end
    end
    for _, name in ipairs(tools) do
      lines[#lines + 1] = "    " .. tostring(name)
    end
  end
  return lines
end

--- One line per session for a picker.
---@param s crank.SessionInfo
---@return string
function M.session_item(s)
  local title = s.title or s.firstMessage or s.sessionId
  return string.format(
    "%s  [%s, %s messages]",
    one_line(title, 60),
    tostring(s.modified or s.created or "?"),
    tostring(s.messageCount or "?")
  )
end

--- A unified diff of two texts (for permission previews).
function M.diff(old_text, new_text, path)
  local differ = (vim.text and vim.text.diff) or vim.diff
  local body = differ(old_text or "", new_text or "", { result_type = "unified", ctxlen = 3 })
  -- git's a/ b/ prefixes only before a relative path (`diff -u` shows an absolute
  -- one as it is): a path under the current directory is shown relative to it
  local shown = vim.fn.fnamemodify(path or "file", ":.")
  local old, new = "a/" .. shown, "b/" .. shown
  if shown:sub(1, 1) == "/" then
    old, new = shown, shown
  end
  local header = { "--- " .. old, "+++ " .. new }
  local out = vim.list_extend(header, M.lines(body or ""))
  return out
end

--- One `vim.diagnostic` entry as an LSP Diagnostic, for the server (`crank/diagnostics`,
--- crank.fixFile): the language server's own Diagnostic where the entry came from one
--- (`user_data.lsp`, which keeps its code, tags and related information as sent),
--- else one built from the entry's fields.
function M.lsp_diagnostic(d)
  local lsp = d.user_data and d.user_data.lsp
  if lsp and lsp.range then
    return lsp
  end
  return {
    range = {
      start = { line = d.lnum, character = d.col },
      ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
    },
    severity = d.severity,
    message = d.message,
    source = d.source,
    code = d.code,
  }
end

--- The lines of a permission preview (diff or command) for a floating window.
---@param params crank.PermissionRequest
---@return string[]
function M.permission_lines(params)
  local out = {}
  local preview = params.preview
  out[1] = string.format("Crank wants to run %s", M.tool_summary(params.toolName or "?", params.arguments, true))
  out[2] = ""
  if type(preview) == "table" and preview.kind == "diff" then
    if preview.unsavedChanges then
      out[#out + 1] = "Your unsaved changes to this file are saved with it."
      out[#out + 1] = ""
    end
    if preview.oldTextOmitted then
      out[#out + 1] = string.format(
        "(the old file, %s bytes, is too large or not text: it is replaced whole, with no diff)",
        tostring(preview.oldTextOmitted)
      )
    end
    vim.list_extend(out, M.diff(preview.oldText, preview.newText, preview.path))
  elseif type(preview) == "table" and preview.kind == "command" then
    out[#out + 1] = "$ " .. tostring(preview.command)
  else
    vim.list_extend(out, M.lines(vim.inspect(params.arguments or {})))
  end
  return out
end

return M
