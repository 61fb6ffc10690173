--- `/` commands in the chat's prompt area: the server's list (`crank/commands`: built-ins,
--- skills, prompt templates), kept per workspace and fetched again on
--- `crank/commandsChanged`, offered as insert-mode completion.
---
--- The chat buffer's 'completefunc' and 'omnifunc' are `complete` below, so <C-x><C-u>,
--- <C-x><C-o> and completion plugins reading omnifunc (nvim-cmp's omni source, blink's)
--- all complete from the same list; with `chat.complete_commands` a `/` typed at the start
--- of the prompt opens it. Only the prompt's leading `/name` is a command (the server
--- expands nothing else), and `//` sends a slash verbatim, so neither opens the list.
--- Running a command is the server's job: the text is sent as an ordinary prompt.
local M = {}

--- Commands by workspace root, as the server last answered.
---@type table<string, table[]>
M.by_root = {}

local METHOD_NOT_FOUND = vim.lsp.protocol.ErrorCodes.MethodNotFound

--- Fetch the list for `ws` again; `done(commands)` when it has come.
---@param ws crank.Workspace
---@param done fun(commands: table[])|nil
function M.refresh(ws, done)
  ws:request("crank/commands", {}, function(err, result)
    local list = {}
    if err then
      -- An older server has no such request: no completion then, nothing else changes.
      if err.code ~= METHOD_NOT_FOUND then
        vim.notify("crank: listing the / commands failed: " .. tostring(err.message), vim.log.levels.WARN)
      end
    elseif type(result) == "table" and type(result.commands) == "table" then
      list = result.commands
    end
    M.by_root[ws.root] = list
    if done then
      done(list)
    end
  end)
end

--- The list for `ws` as last fetched. Completion cannot wait for the server (a wait
--- would run other handlers while the text is locked), so a list not fetched yet is
--- empty and asked for now; the chat fetches it when it opens, so that is rare.
---@param ws crank.Workspace
---@return table[]
function M.list(ws)
  if M.by_root[ws.root] == nil then
    M.by_root[ws.root] = {}
    M.refresh(ws)
  end
  return M.by_root[ws.root]
end

--- Commands whose name matches `query` (case-insensitively): names starting with it
--- first, then names containing it (`review` finds `skill:review`), each in the
--- server's order.
---@param commands table[]
---@param query string
---@return table[]
function M.match(commands, query)
  local q = query:lower()
  local starts, inside = {}, {}
  for _, c in ipairs(commands) do
    local name = tostring(c.name):lower()
    if name:sub(1, #q) == q then
      starts[#starts + 1] = c
    elseif q ~= "" and name:find(q, 1, true) then
      inside[#inside + 1] = c
    end
  end
  return vim.list_extend(starts, inside)
end

--- Complete items (`:help complete-items`) for the matches: word `/name`, menu the
--- description, info the argument hint, kind where the command comes from.
function M.items(commands, query)
  local out = {}
  for _, c in ipairs(M.match(commands, query)) do
    local hint = c.argumentHint and c.argumentHint ~= "" and c.argumentHint or nil
    out[#out + 1] = {
      word = "/" .. c.name,
      abbr = "/" .. c.name .. (hint and (" " .. hint) or ""),
      menu = c.description,
      info = hint and ("/" .. c.name .. " " .. hint) or "",
      kind = c.kind,
      icase = 1,
      dup = 0,
      user_data = { crank_command = c.name },
    }
  end
  return out
end

--- The chat (with its workspace) the buffer belongs to, if any.
local function chat_of(buf)
  for _, chat in pairs(require("crank.chat").by_root) do
    if chat.buf == buf then
      return chat
    end
  end
end

--- Where a command name starts on the cursor's line (0-based byte column of the `/`),
--- or nil when the cursor is not in the prompt's leading `/name`.
---@param chat crank.Chat
---@return integer|nil
function M.start_col(chat)
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local sep = chat:sep_row() -- 0-based row of the separator; the prompt starts under it
  if row - 1 <= sep then
    return nil
  end
  -- Only the first line with text is the start of the prompt (the prompt is trimmed when sent).
  for r = sep + 1, row - 2 do
    if vim.trim(vim.api.nvim_buf_get_lines(chat.buf, r, r + 1, false)[1] or "") ~= "" then
      return nil
    end
  end
  local before = vim.api.nvim_get_current_line():sub(1, col)
  local lead = before:match("^(%s*)/[^%s/]*$")
  if lead == nil then
    return nil
  end
  return #lead
end

--- 'completefunc' / 'omnifunc' for the chat buffer (`:help complete-functions`).
function M.complete(findstart, base)
  local chat = chat_of(vim.api.nvim_get_current_buf())
  if findstart == 1 then
    local col = chat and M.start_col(chat)
    return col or -3 -- -3: not here; leave completion mode quietly
  end
  if chat == nil then
    return {}
  end
  local query = tostring(base or ""):gsub("^/", "")
  return M.items(M.list(chat.ws), query)
end

--- Set the completion functions on a chat buffer and fetch its workspace's list.
---@param chat crank.Chat
function M.attach(chat)
  local buf = chat.buf
  local fn = "v:lua.require'crank.commands'.complete"
  vim.bo[buf].completefunc = fn
  vim.bo[buf].omnifunc = fn
  local config = require("crank.config").values
  if config.chat.complete_commands then
    vim.api.nvim_create_autocmd("TextChangedI", {
      buffer = buf,
      callback = function()
        if vim.fn.pumvisible() == 1 then
          return
        end
        local col = vim.api.nvim_win_get_cursor(0)[2]
        local line = vim.api.nvim_get_current_line()
        -- Just the slash so far: open the list (further typing filters it). Unless
        -- 'completeopt' says noinsert/noselect, <C-p> takes back the first match the
        -- menu would insert, so the slash stays as typed.
        if col > 0 and line:sub(1, col):match("^%s*/$") and M.start_col(chat) then
          local opt = vim.o.completeopt
          local keep = opt:find("noinsert", 1, true) or opt:find("noselect", 1, true)
          vim.api.nvim_feedkeys(vim.keycode(keep and "<C-x><C-o>" or "<C-x><C-o><C-p>"), "n", false)
        end
      end,
    })
  end
  M.refresh(chat.ws)
end

--- crank/commandsChanged for `ws`: fetch the list again.
function M.changed(ws)
  M.refresh(ws)
end

return M
