--- Markdown highlights for a span of a buffer's rows, parsed once and kept as extmarks.
---
--- The chat was highlighted by treesitter's live highlighter, which parses the buffer
--- again after every change, and tree-sitter-markdown reuses next to nothing of an
--- edited document: after one edit at the end of 4,000 lines the parse took 139 ms
--- against 161 ms from scratch. A chat showing a long session holds thousands of lines,
--- so every key typed in its prompt and every streamed write cost the editor's one
--- thread a parse of the whole transcript (6,000 lines: 99 ms of CPU per keystroke,
--- against 0.5 ms without it; `bench/stream_ui.sh`). Here the chat hands over the rows
--- of the block it has just written (a message, a tool card, the reply streaming so
--- far); they are parsed alone, as a string, injections included (inline markup, the
--- languages of code fences), and their captures are set as extmarks with the
--- highlight group, priority and conceal the live highlighter would draw. A finished
--- block is never parsed again and the prompt area never is: what a change costs
--- follows the block it touches, not the transcript.
local M = {}

M.ns = vim.api.nvim_create_namespace("crank.chat.highlight")

--- Each language's highlights query, read once (false: the language has none).
---@type table<string, vim.treesitter.Query|false>
local queries = {}

--- The markdown highlights query with its `conceal_lines` left out: those hide a code
--- fence's lines, and a fence that shows is how the chat tells a result from the
--- reply around it.
---@return vim.treesitter.Query|nil
local function markdown_query()
  local parts = {}
  for _, file in ipairs(vim.treesitter.query.get_files("markdown", "highlights")) do
    parts[#parts + 1] = table.concat(vim.fn.readfile(file), "\n")
  end
  local text = table.concat(parts, "\n"):gsub('%(#set!%s+conceal_lines%s+""%)', "")
  local ok, query = pcall(vim.treesitter.query.parse, "markdown", text)
  return ok and query or nil
end

---@param lang string
---@return vim.treesitter.Query|nil
local function query_of(lang)
  local query = queries[lang]
  if query == nil then
    if lang == "markdown" then
      query = markdown_query() or false
    else
      local ok, found = pcall(vim.treesitter.query.get, lang, "highlights")
      query = ok and found or false
    end
    queries[lang] = query
  end
  return query or nil
end

--- Whether markdown can be highlighted here (its parser is installed: it ships with
--- Neovim 0.10 and later).
---@return boolean
function M.available()
  return (pcall(vim.treesitter.language.inspect, "markdown"))
end

local PRIORITY = (vim.hl or vim.highlight).priorities.treesitter

--- The target a capture links to (a terminal that knows OSC 8 makes it clickable): the
--- query's `url` is the text itself, or the id of the capture that holds it (a link's
--- label points at its destination), as the live highlighter reads it.
---@return string|nil
local function url_of(url, match, metadata, text)
  if url == nil or type(url) == "string" then
    return url
  end
  local captured = match and match.captures and match:captures()[url]
  if captured == nil or captured[1] == nil then
    return nil
  end
  return vim.treesitter.get_node_text(captured[1], text, { metadata = metadata[url] })
end

--- Highlight rows `first` to `last` (0-based, `last` excluded) of `buf` as one markdown
--- document, replacing the highlights that begin on them. They must begin where a
--- markdown block may begin (the chat gives a block it wrote whole, or the whole
--- transcript). Does nothing where markdown has no parser.
---@param buf integer
---@param first integer
---@param last integer
function M.apply(buf, first, last)
  if last <= first then
    return
  end
  -- The marks that begin on these rows, not `nvim_buf_clear_namespace`: that also drops
  -- a mark that only ends here (a code fence highlighted before, whose range ends on
  -- the row after it), and the fence would lose its colour until its block is redone.
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, M.ns, { first, 0 }, { last - 1, -1 }, {})) do
    vim.api.nvim_buf_del_extmark(buf, M.ns, mark[1])
  end
  -- Each line ends in a newline, the last too: tree-sitter-markdown reads a heading (or
  -- a closing fence) on a last line without one as an error, and what follows from it.
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, first, last, false), "\n") .. "\n"
  local ok, parser = pcall(vim.treesitter.get_string_parser, text, "markdown")
  if not ok or parser == nil then
    return
  end
  parser:parse(true)
  parser:for_each_tree(function(tree, ltree)
    local lang = ltree:lang()
    local query = query_of(lang)
    if query == nil then
      return
    end
    -- Injected languages (inline markup, a fence's code) are drawn over the blocks they
    -- are in, as the live highlighter orders its subtrees.
    local over = ltree == parser and 0 or 1
    for id, node, metadata, match in query:iter_captures(tree:root(), text, 0, -1) do
      local name = query.captures[id]
      local own = metadata[id] or {}
      -- a name that begins with "_" draws nothing, but may carry a link's target
      local hidden = name:sub(1, 1) == "_"
      local url = url_of(own.url, match, metadata, text)
      if (url ~= nil or not hidden) and name ~= "spell" and name ~= "nospell" then
        local range = vim.treesitter.get_range(node, text, own)
        pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, first + range[1], range[2], {
          end_row = first + range[4],
          end_col = range[5],
          hl_group = not hidden and "@" .. name .. "." .. lang or nil,
          priority = (tonumber(metadata.priority or own.priority) or PRIORITY) + over,
          conceal = metadata.conceal or own.conceal,
          url = url,
          strict = false,
        })
      end
    end
  end)
end

return M
