--- The chat buffer: a markdown transcript above a prompt area, one per workspace.
---
--- The transcript is rebuilt from `crank/messages` whenever the buffer is (re)created,
--- after a session change and after a lost event (a `seq` gap), and grows from
--- `crank/event`s in between. Streamed text is appended where it belongs; each tool
--- call is a line of its own whose result replaces a "running" body when it ends.
--- A separator line divides the transcript from the prompt typed at the bottom.
---
--- Images (a user message's, or those a tool returned, which come with the tool
--- result's `message_end` after the card has its text) are one `[image: …]` line each;
--- an extmark in `M.image_ns` on that line keeps the image block, so opening the image
--- under the cursor (crank.images) never parses text back into data.
local config = require("crank.config")
local format = require("crank.format")
local highlight = require("crank.highlight")

local M = {}

local ns = vim.api.nvim_create_namespace("crank.chat")
M.ns = ns
local image_ns = vim.api.nvim_create_namespace("crank.chat.images")
M.image_ns = image_ns
--- The messages of a reopened transcript not highlighted yet: one mark each, over its rows.
local region_ns = vim.api.nvim_create_namespace("crank.chat.regions")
M.region_ns = region_ns
M.SEPARATOR = "─── prompt ───"
--- How much live tool output (in bytes) the chat keeps while the tool runs.
M.LIVE_TAIL = 4000
--- How many of a session's newest messages the chat shows at first, and how many more
--- `:CrankEarlier` adds: a 50,000-message session took Neovim about 6 s to render whole,
--- all of it on the editor's one thread.
M.TRANSCRIPT_PAGE = 1000

-- highlighting --------------------------------------------------------------------

--- Set the chat buffer up to be highlighted by `crank.highlight` (each block parsed
--- once, as it is written), never by treesitter's live highlighter: that one parses
--- the whole transcript again at every change, so a key typed in a long chat's prompt
--- cost a tenth of a second (see crank/highlight.lua). A live highlighter that a
--- `FileType markdown` autocommand of the user's config attached is stopped, and the
--- regex syntax is turned off so that it does not draw under the extmarks. Returns
--- false where no markdown parser is installed: the chat stays plain markdown syntax.
---@param buf integer
---@return boolean
function M.highlight(buf)
  if not highlight.available() then
    return false
  end
  if vim.treesitter.highlighter.active[buf] ~= nil then
    vim.treesitter.stop(buf)
  end
  vim.bo[buf].syntax = "OFF"
  return true
end

---@class crank.Chat
---@field ws crank.Workspace
---@field buf integer
---@field sep_mark integer
---@field last_kind string|nil   "user" | "text" | "thinking" | "tool" | "notice" | nil
---@field in_assistant boolean   an assistant header is showing for the current reply
---@field stream_key string|nil  the content block being streamed ("text:0")
---@field streamed boolean       the current assistant message has had deltas
---@field tools table<string, crank.ToolCard>  running tool calls by toolCallId
---@field cards table<string, crank.ToolCard>  finished ones (the result's images may follow)
---@field images table<integer, table>  image blocks by their extmark id (in M.image_ns)
---@field stale boolean          an event was lost; reload at the next chance
---@field wanted integer|nil      how many of the newest messages a reload shows (`:CrankEarlier` adds a page)
---@field wanted_session string|nil  the session `wanted` is for: another starts from one page again
---@field shown_from integer     the transcript's place of the first message shown (0: from its start)
---@field held {text: string[], prefix: string}|nil  streamed text not in the buffer yet (`_hold`)
---@field held_timer uv.uv_timer_t|nil  writes `held` (and `live_due`) when its wait is over
---@field live_due table<crank.ToolCard, true>  running tools whose card is to be drawn again
---@field write_due boolean      `held_timer` is started
---@field written_at integer     when streamed text was last written (`vim.uv.now`, ms)
---@field block_mark integer|nil  an extmark (in `ns`) on the first row of the block written last
---@field block_scan {rows: integer, fence: integer|nil, writes: integer}  what `_changed_from` read of that block
---@field highlighted boolean    blocks are highlighted as they are written (`M.highlight`)
---@field rendering boolean      a whole transcript is going in (its messages are highlighted when shown)
---@field region_starts integer[]|nil  the rows where its messages begin, while it goes in
---@field asked_regions boolean  a redraw asked for regions to be highlighted, not done yet
local Chat = {}
Chat.__index = Chat

---@class crank.ToolCard
---@field mark integer
---@field nlines integer
---@field name string
---@field args table
---@field live string
---@field image_marks integer[]|nil

---@type table<string, crank.Chat>
M.by_root = {}
--- The same chats by buffer, for the decoration provider.
---@type table<integer, crank.Chat>
local by_buf = {}

-- A window about to draw rows of a reopened transcript not highlighted yet has them
-- highlighted right after (only extmarks are read here; what changes the buffer's
-- marks runs once the redraw is done, and marks it for the next).
vim.api.nvim_set_decoration_provider(region_ns, {
  on_win = function(_, _, buf, top, bot)
    local chat = by_buf[buf]
    if chat == nil or chat.asked_regions then
      return false
    end
    local pending = vim.api.nvim_buf_get_extmarks(buf, region_ns, { top, 0 }, { bot, -1 }, { limit = 1, overlap = true })
    if #pending > 0 then
      chat.asked_regions = true
      vim.schedule(function()
        chat.asked_regions = false
        if vim.api.nvim_buf_is_valid(buf) then
          chat:highlight_shown(top, bot)
        end
      end)
    end
    return false
  end,
})

local function chat_name(ws)
  local base = "crank://chat"
  for root, chat in pairs(M.by_root) do
    if root ~= ws.root and vim.api.nvim_buf_is_valid(chat.buf) and vim.api.nvim_buf_get_name(chat.buf) == base then
      return base .. "/" .. vim.fs.basename(ws.root)
    end
  end
  return base
end

-- buffer primitives ---------------------------------------------------------------

function Chat:sep_row()
  local pos = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, self.sep_mark, {})
  return pos[1]
end

--- The transcript as lines (everything above the separator), streamed text held back
--- for the next write written first, so it is the transcript as of now.
function Chat:transcript()
  self:_write_held()
  return vim.api.nvim_buf_get_lines(self.buf, 0, self:sep_row(), false)
end

function Chat:_insert(lines)
  self:_write_held()
  local sep = self:sep_row()
  vim.api.nvim_buf_set_lines(self.buf, sep, sep, false, lines)
  self:_follow()
end

--- Keep windows that were showing the end of the transcript at the end.
function Chat:_follow()
  local sep = self:sep_row()
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    local cursor = vim.api.nvim_win_get_cursor(win)
    if cursor[1] - 1 < sep and win ~= vim.api.nvim_get_current_win() then
      pcall(vim.api.nvim_win_set_cursor, win, { math.max(sep, 1), 0 })
    end
  end
end

--- Start a new block of lines, with a blank line before it unless it continues a list.
function Chat:_block(lines, kind)
  self:_write_held()
  self:_settle_block()
  local sep = self:sep_row()
  local out = {}
  local continues = kind == "tool" and self.last_kind == "tool"
  if sep > 0 and not continues then
    local last = vim.api.nvim_buf_get_lines(self.buf, sep - 1, sep, false)[1]
    if last ~= "" then
      out[1] = ""
    end
  end
  vim.list_extend(out, lines)
  self:_insert(out)
  self.last_kind = kind
  self.stream_key = nil
  local first = sep + #out - #lines
  if self.rendering and (kind == "user" or kind == "header") then
    self.region_starts[#self.region_starts + 1] = first
  end
  -- Left gravity: text streamed into the block's first line (empty at first) goes in at
  -- the mark, which must stay where the block begins, not move to the end of it.
  self.block_mark = vim.api.nvim_buf_set_extmark(self.buf, ns, first, 0, { id = self.block_mark, right_gravity = false })
  self.block_scan = { rows = 0, fence = nil, writes = 0 }
  self:_highlight(first, first + #lines)
end

--- Highlight rows `first` to `last` of the transcript (`crank.highlight`), unless the
--- chat is not highlighted or a whole transcript is going in (`render_messages`
--- leaves each of its messages to be highlighted when a window shows it).
function Chat:_highlight(first, last)
  if self.highlighted and not self.rendering then
    highlight.apply(self.buf, first, last)
  end
end

--- Append streamed text to the end of the transcript; new lines get `prefix`.
function Chat:_append(text, prefix)
  if text == "" then
    return
  end
  local parts = vim.split(text, "\n", { plain = true })
  for i = 2, #parts do
    parts[i] = prefix .. parts[i]
  end
  local last = self:sep_row() - 1
  local line = vim.api.nvim_buf_get_lines(self.buf, last, last + 1, false)[1]
  vim.api.nvim_buf_set_text(self.buf, last, #line, last, #line, parts)
  self:_follow()
  if self.block_mark and self.highlighted and not self.rendering then -- the rows this write may change
    local first = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, self.block_mark, {})[1]
    self:_highlight(self:_changed_from(first, last, last + #parts - 1), last + #parts)
  end
end

--- Where to highlight from after a write into the streamed block (its first row
--- `first`; the write began on row `began`, its last row `last` is still growing):
--- the row the write began on, or, inside a code fence, the fence's first row (a
--- fence's lines mean nothing alone: a comment would read as a heading). Parsing the
--- whole reply at each write made a reply of 300 deltas cost 12 ms a write by its
--- end; the rows before the write are as the writes before left them, and the whole
--- block is highlighted once when the next block begins or the message ends
--- (`_settle_block`: markup across lines, a setext heading). Reads only the lines it
--- has not read before.
---@return integer
function Chat:_changed_from(first, began, last)
  local scan = self.block_scan
  scan.writes = scan.writes + 1
  local from = began
  local rows = vim.api.nvim_buf_get_lines(self.buf, first + scan.rows, last, false)
  for i, line in ipairs(rows) do
    local text = line:gsub("^>%s?", "") -- a quote's (thinking) lines too
    if text:match("^ ? ? ?```") or text:match("^ ? ? ?~~~") then
      if scan.fence then
        from = math.min(from, first + scan.fence) -- the fence, closed by this write
        scan.fence = nil
      else
        scan.fence = scan.rows + i - 1
      end
    end
  end
  scan.rows = scan.rows + #rows
  return scan.fence and math.min(from, first + scan.fence) or from
end

--- Highlight the streamed block whole, once its writes are over, if it was written
--- in more than one (`_changed_from` highlighted it a write at a time).
function Chat:_settle_block()
  local scan = self.block_scan
  if self.block_mark == nil or scan == nil or scan.writes < 2 then
    return
  end
  scan.writes = 0
  local first = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, self.block_mark, {})[1]
  self:_highlight(first, self:sep_row())
end

--- How long streamed text may wait before it goes into the buffer (ms). Each write
--- highlights the block again (a parse of the reply so far) and has the window redrawn,
--- and a local model can stream a hundred deltas a second; twenty writes a second read
--- as streaming all the same (bench/stream_ui.sh). Text a model sends slower than this
--- goes in at once.
M.STREAM_WRITE_MS = 50

--- Stream `text` (new lines get `prefix`) to the end of the transcript: at once when
--- nothing was written in the last `M.STREAM_WRITE_MS`, else with what follows it when
--- that time is up. Anything else that touches the buffer writes it first (`_write_held`).
function Chat:_hold(text, prefix)
  if text == "" then
    return
  end
  local held = self.held
  if held == nil then
    held = { text = {}, prefix = prefix }
    self.held = held
  end
  held.text[#held.text + 1] = text
  self:_write_soon()
end

--- Write what is held (`_write_held`) now when nothing was written in the last
--- `M.STREAM_WRITE_MS`, else when that time is up.
function Chat:_write_soon()
  local wait = M.STREAM_WRITE_MS - (vim.uv.now() - (self.written_at or 0))
  if wait <= 0 then
    self:_write_held()
  elseif not self.write_due then
    self.write_due = true
    self.held_timer = self.held_timer or vim.uv.new_timer()
    self.held_timer:start(wait, 0, vim.schedule_wrap(function()
      if vim.api.nvim_buf_is_valid(self.buf) then
        self:_write_held()
      end
    end))
  end
end

--- Write the streamed text `_hold` kept back and draw the running tools' cards whose
--- output grew (`tool_update`), if any.
function Chat:_write_held()
  local held, due = self.held, self.live_due
  if held == nil and next(due) == nil then
    return
  end
  self.held, self.live_due, self.write_due = nil, {}, false
  if self.held_timer then
    self.held_timer:stop()
  end
  self.written_at = vim.uv.now()
  if held ~= nil then
    self:_append(table.concat(held.text), held.prefix)
  end
  for tool in pairs(due) do
    self:_draw_live(tool)
  end
end

function Chat:_assistant_header()
  if not self.in_assistant then
    self:_block({ format.ASSISTANT_HEADER }, "header")
    self.in_assistant = true
  end
end

-- images --------------------------------------------------------------------------

--- Mark rows `first`.. (0-based) as showing `images` (one row each), so that
--- `image_at` finds the block under the cursor; returns the marks' ids.
function Chat:_mark_images(first, images)
  local marks = {}
  for i, image in ipairs(images) do
    local id = vim.api.nvim_buf_set_extmark(self.buf, image_ns, first + i - 1, 0, {})
    self.images[id] = image
    marks[i] = id
  end
  return marks
end

function Chat:_unmark_images(marks)
  for _, id in ipairs(marks or {}) do
    vim.api.nvim_buf_del_extmark(self.buf, image_ns, id)
    self.images[id] = nil
  end
end

--- The image block shown on 0-based `row` of the transcript, or nil.
---@param row integer
---@return table|nil
function Chat:image_at(row)
  if row >= self:sep_row() then
    return nil
  end
  local line = vim.api.nvim_buf_get_lines(self.buf, row, row + 1, false)[1] or ""
  if not vim.startswith(vim.trim(line), "[image: ") then
    return nil -- a mark left on a line that is no longer the image's
  end
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(self.buf, image_ns, { row, 0 }, { row, -1 }, {})) do
    local image = self.images[mark[1]]
    if image then
      return image
    end
  end
  return nil
end

-- rendering -----------------------------------------------------------------------

---@param message crank.UserMessage
function Chat:user_message(message)
  -- A /command shows as typed (`typed`); the model was sent its expansion (`content`).
  local content = type(message.typed) == "string" and message.typed or message.content
  if type(content) ~= "string" then
    content = format.result_text(content)
  end
  local lines = { format.USER_HEADER, "" }
  vim.list_extend(lines, format.lines(content))
  local images = format.image_lines(message.images)
  if #images > 0 then
    lines[#lines + 1] = ""
    vim.list_extend(lines, images)
  end
  self:_block(lines, "user")
  if #images > 0 then
    self:_mark_images(self:sep_row() - #images, message.images)
  end
  self.in_assistant = false
end

--- Stream a delta of the content block `kind:index`.
---@param kind crank.DeltaKind
---@param index integer
---@param text string
function Chat:delta(kind, index, text)
  if kind == "toolCall" then
    return
  end
  if kind == "thinking" and not config.values.chat.show_thinking then
    return
  end
  self:_assistant_header()
  self.streamed = true
  local key = kind .. ":" .. tostring(index)
  local prefix = kind == "thinking" and "> " or ""
  if self.stream_key ~= key then
    self:_block({ prefix }, kind)
    self.stream_key = key
  end
  self:_hold(text, prefix)
end

--- Render an assistant message's text and thinking blocks whole (replay, or when
--- its deltas were lost), and its tool calls when `with_tools`.
function Chat:assistant_blocks(message, with_tools)
  for index, block in ipairs(type(message.content) == "table" and message.content or {}) do
    if block.type == "text" and block.text and block.text ~= "" then
      self:delta("text", index - 1, block.text)
    elseif block.type == "thinking" and block.thinking and block.thinking ~= "" then
      self:delta("thinking", index - 1, block.thinking)
    elseif block.type == "toolCall" and with_tools then
      self:tool_start(block.id, block.name, block.arguments)
    end
  end
  self:assistant_end(message)
end

---@param message crank.AssistantMessage
function Chat:assistant_end(message)
  self:_write_held()
  self:_settle_block()
  if message.stopReason == "error" then
    self:_block(format.error_lines(message.errorMessage), "notice")
  end
  self.stream_key = nil
  self.streamed = false
end

function Chat:tool_start(id, name, args)
  self:_assistant_header()
  self:_block({ format.tool_header(name, args, "running") }, "tool")
  local row = self:sep_row() - 1
  local mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, {})
  self.tools[id or ("?" .. row)] = { mark = mark, nlines = 1, name = name, args = args or {}, live = "" }
end

--- Replace the card's lines with `lines`, of which the last lines show `images`.
function Chat:_replace_tool(tool, lines, images)
  local row = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, tool.mark, {})[1]
  self:_unmark_images(tool.image_marks)
  vim.api.nvim_buf_set_lines(self.buf, row, row + tool.nlines, false, lines)
  vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, { id = tool.mark })
  tool.nlines = #lines
  self:_highlight(row, row + #lines)
  images = images or {}
  tool.image_marks = self:_mark_images(row + #lines - #images, images)
  self:_follow()
end

function Chat:tool_update(id, output)
  local tool = self.tools[id]
  if tool == nil or type(output) ~= "string" then
    return
  end
  tool.live = tool.live .. output
  -- Only the tail is shown while it runs, so long outputs cost the same per update.
  if #tool.live > M.LIVE_TAIL then
    tool.live = "…" .. tool.live:sub(-M.LIVE_TAIL)
  end
  self.live_due[tool] = true
  self:_write_soon()
end

--- Draw a running tool's card with the output it has so far (`tool_update`).
function Chat:_draw_live(tool)
  local lines = { format.tool_header(tool.name, tool.args, "running") }
  vim.list_extend(lines, format.tool_result_lines(tool.live, false, config.values.chat.fold_lines))
  self:_replace_tool(tool, lines)
end

--- Show a tool call's result on its card: `result` is a `tool_execution_end` result
--- or a toolResult message (which may carry `images`, shown under the text). A card
--- already finished is drawn again, so a result's images can follow its text.
function Chat:tool_end(id, name, result)
  local tool = self.tools[id] or self.cards[id]
  if tool ~= nil then
    self.live_due[tool] = nil -- its output so far is not drawn again: the result is
  end
  if tool == nil then
    self:tool_start(id, name or "tool", {})
    tool = self.tools[id]
  end
  result = type(result) == "table" and result or {}
  local images = type(result.images) == "table" and result.images or {}
  local lines = { format.tool_header(tool.name, tool.args, result.isError and "error" or "ok") }
  vim.list_extend(lines, format.tool_result_lines(result.content, result.isError, config.values.chat.fold_lines))
  local image_lines = format.image_lines(images)
  for _, line in ipairs(image_lines) do
    lines[#lines + 1] = "  " .. line
  end
  self:_replace_tool(tool, lines, images)
  self.tools[id] = nil
  if id ~= nil then
    self.cards[id] = tool
  end
  self.last_kind = "tool"
end

function Chat:notice(text)
  self:_block({ text }, "notice")
end

--- Wipe the transcript and render `messages` (a crank/messages result). Each message
--- is highlighted when a window first shows it (`_mark_regions`): a page of 1,000
--- messages is thousands of rows, and highlighting them all at once took longer than
--- drawing them (8,400 rows: 1.0 s against 84 ms), for rows most users never scroll to.
---@param messages crank.Message[]
---@param start? integer  the place of the first of them in the transcript (a page's `start`)
function Chat:render_messages(messages, start)
  -- A window folding by expression evaluates it again over the lines after every
  -- insert, most of the time of a long transcript's render: manual meanwhile.
  local folding = {}
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if vim.wo[win].foldmethod == "expr" then
      folding[#folding + 1] = win
      vim.wo[win].foldmethod = "manual"
    end
  end
  self.rendering, self.region_starts = true, {}
  local ok, err = pcall(self._render_messages, self, messages)
  self.rendering = false
  if not ok then
    error(err, 0)
  end
  self.shown_from = start or 0
  local above = 0
  if self.shown_from > 0 then
    local lines = M.earlier_lines(self.shown_from)
    vim.api.nvim_buf_set_lines(self.buf, 0, 0, false, lines)
    above = #lines
  end
  for _, win in ipairs(folding) do
    if vim.api.nvim_win_is_valid(win) then
      vim.wo[win].foldmethod = "expr"
    end
  end
  -- A window whose cursor is in the prompt shows the end of the transcript above it:
  -- the lines went in above its top row, which kept it on the separator, with every
  -- message out of sight until the user scrolled up.
  local sep = self:sep_row()
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] > sep then
      vim.api.nvim_win_call(win, function()
        vim.cmd("normal! zb")
      end)
    end
  end
  self:_mark_regions(above)
end

--- How many rows at the end of a reopened transcript are highlighted as it goes in
--- (what a window opened on it shows before any redraw asks).
M.HIGHLIGHT_AT_ONCE = 200

--- Mark each message of the transcript just rendered as a region to highlight (its
--- rows, `above` more rows before the first), and highlight those in the last
--- `M.HIGHLIGHT_AT_ONCE` rows now; a window that shows another asks for it as it
--- redraws (the decoration provider below).
function Chat:_mark_regions(above)
  local starts = self.region_starts or {}
  self.region_starts = nil
  if not self.highlighted then
    return
  end
  local bounds = { 0 }
  for _, row in ipairs(starts) do
    if row + above > bounds[#bounds] then
      bounds[#bounds + 1] = row + above
    end
  end
  local sep = self:sep_row()
  bounds[#bounds + 1] = sep
  for i = 1, #bounds - 1 do
    if bounds[i + 1] > bounds[i] then
      vim.api.nvim_buf_set_extmark(self.buf, region_ns, bounds[i], 0, { end_row = bounds[i + 1], end_col = 0 })
    end
  end
  self:highlight_shown(math.max(0, sep - M.HIGHLIGHT_AT_ONCE), sep)
end

--- Highlight the regions not highlighted yet that rows `top` to `bot` (0-based, both
--- shown) touch, each as a whole.
---@param top integer
---@param bot integer
function Chat:highlight_shown(top, bot)
  local opts = { details = true, overlap = true }
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(self.buf, region_ns, { top, 0 }, { bot, -1 }, opts)) do
    vim.api.nvim_buf_del_extmark(self.buf, region_ns, mark[1])
    highlight.apply(self.buf, mark[2], mark[4].end_row)
  end
end

---@param messages crank.Message[]
function Chat:_render_messages(messages)
  self.held, self.live_due = nil, {} -- what the transcript being replaced held back
  local sep = self:sep_row()
  -- the marks of the lines deleted would stay, all on the first row
  vim.api.nvim_buf_clear_namespace(self.buf, highlight.ns, 0, sep)
  vim.api.nvim_buf_clear_namespace(self.buf, region_ns, 0, -1)
  vim.api.nvim_buf_set_lines(self.buf, 0, sep, false, {})
  vim.api.nvim_buf_clear_namespace(self.buf, image_ns, 0, -1)
  self.tools, self.cards, self.images = {}, {}, {}
  self.last_kind, self.in_assistant, self.stream_key = nil, false, nil
  for _, message in ipairs(messages or {}) do
    if message.role == "user" then
      self:user_message(message)
    elseif message.role == "assistant" then
      self:assistant_blocks(message, true)
    elseif message.role == "toolResult" then
      self:tool_end(message.toolCallId, message.toolName, message)
    end
  end
  self:update_status()
end

--- The lines above a transcript shown from its `start`th message on.
---@param start integer
---@return string[]
function M.earlier_lines(start)
  local count = tostring(start):reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return { string.format("_%s earlier message%s not shown: :CrankEarlier shows more_", count, start == 1 and "" or "s"), "" }
end

--- Show `M.TRANSCRIPT_PAGE` more of the earlier messages (the transcript is read again
--- with them), each window kept on the lines it showed.
---@param callback? fun(err: table|nil)
function Chat:earlier(callback)
  if (self.shown_from or 0) == 0 then
    vim.notify("crank: the whole transcript is shown", vim.log.levels.INFO)
    if callback then
      callback(nil)
    end
    return
  end
  local before = vim.api.nvim_buf_line_count(self.buf)
  local views = {}
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    views[win] = vim.api.nvim_win_call(win, vim.fn.winsaveview)
  end
  -- the messages shown now, and a page more
  self.wanted = (self.wanted or M.TRANSCRIPT_PAGE) + M.TRANSCRIPT_PAGE
  self.wanted_session = self.ws.session_id
  self:reload(function(err)
    local added = vim.api.nvim_buf_line_count(self.buf) - before
    for win, view in pairs(views) do
      if vim.api.nvim_win_is_valid(win) and not err then
        view.lnum, view.topline = view.lnum + added, math.max(view.topline + added, 1)
        vim.api.nvim_win_call(win, function()
          vim.fn.winrestview(view)
        end)
      end
    end
    if callback then
      callback(err)
    end
  end)
end

--- Reload the transcript from the server.
--- Asked again for the same session while one is on its way and no run is active,
--- the answer on its way is the one awaited (opening a session asks twice: for the
--- open's answer and for its `session_changed`): a long transcript is rendered once.
function Chat:reload(callback)
  self.stale = self.ws.running and self.stale
  local session = self.ws.session_id
  if self.wanted == nil or self.wanted_session ~= session then
    self.wanted, self.wanted_session = M.TRANSCRIPT_PAGE, session
  end
  local pending = self.pending_reload
  -- (one asked for fewer messages, before :CrankEarlier, is not the answer awaited)
  if pending and pending.session == session and pending.limit == self.wanted and not self.ws.running then
    pending.callbacks[#pending.callbacks + 1] = callback
    return
  end
  pending = { session = session, limit = self.wanted, callbacks = { callback } }
  self.pending_reload = pending
  self.ws:request("crank/messages", { sessionId = session, limit = self.wanted }, function(err, result)
    if self.pending_reload == pending then
      self.pending_reload = nil
    end
    if err then
      self:notice("_Could not load the transcript: " .. tostring(err.message) .. "_")
    elseif vim.api.nvim_buf_is_valid(self.buf) then
      self:render_messages(result and result.messages or {}, result and result.start or 0)
    end
    self.loaded = true
    for _, waiting in ipairs(pending.callbacks) do
      waiting(err)
    end
  end)
end

function Chat:update_status()
  if not vim.api.nvim_buf_is_valid(self.buf) then
    return
  end
  local ws = self.ws
  local parts = {}
  local key = config.values.keymaps.send
  parts[#parts + 1] = { ws.running and "● running " or "○ idle ", ws.running and "DiagnosticWarn" or "Comment" }
  local q = ws.queue or {}
  local queued = #(q.steering or {}) + #(q.followUp or {})
  if queued > 0 then
    parts[#parts + 1] = { string.format("queued: %d ", queued), "DiagnosticInfo" }
  end
  local status = format.status(ws)
  local pct = format.context_percent(ws.usage)
  if pct then
    parts[#parts + 1] = { string.format("ctx %d%% ", pct), "Comment" }
  end
  if key then
    parts[#parts + 1] = { key .. " send", "Comment" }
  end
  vim.api.nvim_buf_set_extmark(self.buf, ns, self:sep_row(), 0, {
    id = self.sep_mark,
    virt_text = parts,
    virt_text_pos = "eol",
  })
  self.status_text = status
end

--- Apply one crank/event to the buffer.
---@param params crank.EventParams
function Chat:on_event(params)
  local event = params.event or {}
  if event.type == "session_changed" then
    self.ws.last_seq = {}
    self:reload()
    return
  end
  if params.sessionId and self.ws.session_id and params.sessionId ~= self.ws.session_id then
    return
  end
  local gap = self.ws:seq_gap(params)
  local t = event.type
  if t ~= "message_update" and t ~= "tool_execution_update" then
    self:_write_held() -- streamed text goes before whatever this event shows
  end
  if gap then
    self.stale = true
  end
  if t == "message_start" then
    local message = event.message or {}
    if message.role == "user" then
      self:user_message(message)
    elseif message.role == "assistant" then
      self.streamed = false
      self.stream_key = nil
    end
  elseif t == "message_update" then
    local delta = event.delta or {}
    self:delta(delta.kind, delta.contentIndex or 0, delta.text or "")
  elseif t == "message_end" then
    local message = event.message or {}
    if message.role == "assistant" then
      if self.streamed then
        self:assistant_end(message)
      else
        self:assistant_blocks(message, false)
      end
    elseif message.role == "toolResult" and type(message.images) == "table" and #message.images > 0 then
      -- The images a tool returned: on its card, under the text tool_execution_end showed.
      self:tool_end(message.toolCallId, message.toolName, message)
    end
  elseif t == "tool_execution_start" then
    self:tool_start(event.toolCallId, event.toolName, event.arguments)
  elseif t == "tool_execution_update" then
    self:tool_update(event.toolCallId, event.output)
  elseif t == "tool_execution_end" then
    self:tool_end(event.toolCallId, event.toolName, event.result)
  elseif t == "agent_settled" then
    self.in_assistant = false
    if self.stale then
      self:reload()
    end
  else
    local text = format.notice(event)
    if text then
      self:notice(text)
    end
  end
  self:update_status()
end

-- the prompt area -----------------------------------------------------------------

--- The text typed under the separator.
function Chat:prompt_text()
  local lines = vim.api.nvim_buf_get_lines(self.buf, self:sep_row() + 1, -1, false)
  return vim.trim(table.concat(lines, "\n"))
end

function Chat:clear_prompt()
  vim.api.nvim_buf_set_lines(self.buf, self:sep_row() + 1, -1, false, { "" })
end

function Chat:set_prompt(text)
  vim.api.nvim_buf_set_lines(self.buf, self:sep_row() + 1, -1, false, format.lines(text))
end

-- windows -------------------------------------------------------------------------

function Chat:window()
  local wins = vim.fn.win_findbuf(self.buf)
  return wins[1]
end

local function set_window_options(win)
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'crank.chat'.foldexpr(v:lnum)"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.conceallevel = 2
end

--- Show the chat in a window (reusing one that already shows it) and focus its prompt.
function Chat:show()
  local win = self:window()
  if win == nil then
    local c = config.values.chat
    local pos = c.position
    if pos == "tab" then
      vim.cmd("tabnew")
    elseif pos == "current" then
      -- the current window
    else
      local vertical = pos == "right" or pos == "left"
      local size = vertical and math.floor(vim.o.columns * c.width) or math.floor(vim.o.lines * c.height)
      local where = (pos == "right" or pos == "below") and "botright" or "topleft"
      vim.cmd(string.format("%s %s%dsplit", where, vertical and "vertical " or "", math.max(size, 20)))
    end
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, self.buf)
    set_window_options(win)
  else
    vim.api.nvim_set_current_win(win)
  end
  local last = vim.api.nvim_buf_line_count(self.buf)
  vim.api.nvim_win_set_cursor(win, { last, 0 })
  return win
end

function Chat:close()
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    end
  end
end

--- Fold level for the chat window: long tool results fold between their fences.
--- A line that does not begin with a space is in no fold (every line of a result is
--- indented, an empty one too) and says "0": at each change Neovim looks back from
--- the changed line for a line whose level is not "=", and with "=" on nearly every
--- line it looked back to the first, every line's expression evaluated again: a
--- streamed write into a chat of 6,000 lines cost 47 ms (`bench/stream_ui.sh`).
function M.foldexpr(lnum)
  local raw = vim.fn.getline(lnum)
  local line = raw:gsub("^%s+", "")
  if vim.startswith(line, format.FOLD_OPEN) then
    return ">1"
  elseif line == format.FOLD_CLOSE then
    return "<1"
  elseif #line == #raw then
    return "0"
  end
  return "="
end

-- creation ------------------------------------------------------------------------

local function set_keymaps(chat)
  local keys = config.values.keymaps
  local buf = chat.buf
  local actions = require("crank.actions")
  local function map(modes, lhs, fn, desc)
    if lhs then
      vim.keymap.set(modes, lhs, fn, { buffer = buf, desc = desc, nowait = true })
    end
  end
  map({ "n", "i" }, keys.send, function()
    actions.send_from_chat(chat, nil)
  end, "Crank: send the prompt")
  map("n", "<CR>", function()
    if vim.api.nvim_win_get_cursor(0)[1] - 1 > chat:sep_row() then
      actions.send_from_chat(chat, nil)
    else
      pcall(vim.cmd, "normal! za")
    end
  end, "Crank: send the prompt (in the prompt area) or toggle a fold")
  map({ "n", "i" }, keys.steer, function()
    actions.send_from_chat(chat, "steer")
  end, "Crank: steer the running agent")
  map("n", keys.abort, function()
    actions.abort(chat.ws)
  end, "Crank: abort the run")
  map("n", keys.close, function()
    chat:close()
  end, "Crank: close the chat")
  map("n", keys.open_image, function()
    require("crank.images").open_under_cursor(function()
      -- Not an image line: what the key does elsewhere (Neovim's own gx opens a URL).
      for _, m in ipairs(vim.api.nvim_get_keymap("n")) do
        if m.lhs == keys.open_image and m.callback then
          return m.callback()
        end
      end
    end)
  end, "Crank: open the image on this line (else the usual meaning of the key)")
end

--- The chat for a workspace, creating its buffer (and loading the transcript) if needed.
---@param ws crank.Workspace
---@return crank.Chat
function M.get(ws)
  local chat = M.by_root[ws.root]
  if chat and vim.api.nvim_buf_is_valid(chat.buf) then
    chat.ws = ws
    return chat
  end
  local buf = vim.api.nvim_create_buf(false, true)
  chat = setmetatable({ ws = ws, buf = buf, tools = {}, cards = {}, images = {}, live_due = {}, in_assistant = false }, Chat)
  M.by_root[ws.root] = chat
  by_buf[buf] = chat
  vim.api.nvim_buf_set_name(buf, chat_name(ws))
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.bufhidden = "hide"
  bo.swapfile = false
  bo.filetype = "markdown"
  -- Code blocks and tables highlighted where the markdown parser is installed (it ships
  -- with Neovim 0.10+); without it the chat stays plain markdown syntax.
  chat.highlighted = M.highlight(buf)
  vim.b[buf].crank_root = ws.root
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      by_buf[buf] = nil
      if chat.held_timer then
        chat.held_timer:close()
        chat.held_timer = nil
      end
      if M.by_root[ws.root] == chat then
        M.by_root[ws.root] = nil
      end
    end,
  })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { M.SEPARATOR, "" })
  chat.sep_mark = vim.api.nvim_buf_set_extmark(buf, ns, 0, 0, {})
  set_keymaps(chat)
  require("crank.commands").attach(chat)
  chat:update_status()
  -- Created mid-run: the reply so far is not in crank/messages yet; reload when it settles.
  chat.stale = ws.running
  chat:reload()
  return chat
end

--- Route a crank/event to the workspace's chat, if it has one.
function M.dispatch(ws, params)
  local chat = M.by_root[ws.root]
  if chat and vim.api.nvim_buf_is_valid(chat.buf) then
    chat:on_event(params)
  else
    ws:seq_gap(params)
  end
end

M.Chat = Chat
return M
