--- What the next prompt points at (`crank/prompt` `context`): files, line ranges and
--- a file's problems, added with :CrankAdd or typed as @ words in the prompt
--- (`@selection`, `@problems`, `@path/to/file`). The text is sent as typed; each @
--- word that names something adds its item. A word that names nothing stays text.
local format = require("crank.format")

local M = {}

--- The file buffer the user worked in last (the chat's own buffer is not one), under
--- `root` when given: the current buffer if it is a file, else the most recently used.
---@param root string|nil
---@return integer|nil
function M.file_buffer(root)
  local function usable(buf)
    if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= "" then
      return false
    end
    local name = vim.api.nvim_buf_get_name(buf)
    return name ~= "" and (root == nil or vim.startswith(name, root))
  end
  local current = vim.api.nvim_get_current_buf()
  if usable(current) then
    return current
  end
  local infos = vim.fn.getbufinfo({ buflisted = 1 })
  table.sort(infos, function(a, b)
    return (a.lastused or 0) > (b.lastused or 0)
  end)
  for _, info in ipairs(infos) do
    if usable(info.bufnr) then
      return info.bufnr
    end
  end
  return nil
end

--- `@problems`: the buffer's diagnostics, as the language servers reported them.
function M.problems(buf)
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    diagnostics[#diagnostics + 1] = format.lsp_diagnostic(d)
  end
  return { uri = vim.uri_from_bufnr(buf), diagnostics = diagnostics }
end

--- `@selection`: the lines of the buffer's last visual selection (its '< and '> marks);
--- nil when it never had one.
function M.selection(buf)
  local first = vim.api.nvim_buf_get_mark(buf, "<")[1]
  local last = vim.api.nvim_buf_get_mark(buf, ">")[1]
  if first == 0 or last == 0 then
    return nil
  end
  return {
    uri = vim.uri_from_bufnr(buf),
    range = { start = { line = first - 1, character = 0 }, ["end"] = { line = last - 1, character = 0 } },
  }
end

--- A line range of a buffer (:'<,'>CrankAdd), 1-based and inclusive.
function M.lines(buf, first, last)
  return {
    uri = vim.uri_from_bufnr(buf),
    range = { start = { line = first - 1, character = 0 }, ["end"] = { line = last - 1, character = 0 } },
  }
end

--- The items the @ words of `text` name, for a workspace at `root`.
---@param text string
---@param root string
---@return table[] items, string[] labels
function M.from_text(text, root)
  local items, labels = {}, {}
  for word in text:gmatch("%f[%S]@([^%s]+)") do
    word = word:gsub("[%.,;:!%?%)]+$", "")
    local item
    if word == "selection" or word == "problems" then
      local buf = M.file_buffer(root)
      if buf then
        item = word == "selection" and M.selection(buf) or M.problems(buf)
      end
    else
      local path = vim.fs.normalize(root .. "/" .. word)
      if vim.fn.filereadable(path) == 1 then
        item = { uri = vim.uri_from_fname(path) }
      end
    end
    if item then
      items[#items + 1] = item
      labels[#labels + 1] = "@" .. word
    end
  end
  return items, labels
end

--- Completion for an @ word: `@selection`, `@problems` and the workspace's files whose
--- path starts with what follows the @ (at most 200).
---@param lead string the word typed so far, "@..." (anything else completes nothing)
---@param root string
---@return string[]
function M.complete(lead, root)
  if lead:sub(1, 1) ~= "@" then
    return {}
  end
  local typed = lead:sub(2)
  local out = {}
  for _, word in ipairs({ "selection", "problems" }) do
    if vim.startswith(word, typed) then
      out[#out + 1] = "@" .. word
    end
  end
  local base = vim.fs.normalize(root)
  for _, path in ipairs(vim.fn.globpath(base, typed .. "*", false, true)) do
    local rel = path:sub(#base + 2)
    if vim.fn.isdirectory(path) == 1 then
      rel = rel .. "/"
    end
    out[#out + 1] = "@" .. rel
    if #out >= 200 then
      break
    end
  end
  return out
end

return M
