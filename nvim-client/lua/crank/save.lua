--- Answers `crank/saveDocument`: the server asks Neovim to write a buffer the agent
--- has just changed, so the commands the agent runs next see what the buffer shows.
---
--- The buffer is written with `:write` (so BufWritePre/Post run, formatters included,
--- and the LSP client sends didSave). When the server says the buffer also held the
--- user's unsaved changes (`unsavedChanges`), they are written with it, and the user
--- is told so: nothing they typed is lost, and `u` takes back only the agent's change.
local M = {}

--- The loaded buffer whose LSP URI is `uri` (Neovim's own URI for it), or nil.
---@param uri string
---@return integer|nil
function M.buffer_of(uri)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.uri_from_bufnr(bufnr) == uri then
      return bufnr
    end
  end
  return nil
end

---@param params table {uri: string, unsavedChanges?: boolean}
---@return table {saved: boolean, reason?: string}
function M.handle(params)
  local uri = type(params) == "table" and params.uri or nil
  if type(uri) ~= "string" then
    return { saved = false, reason = "crank/saveDocument needs a uri" }
  end
  local bufnr = M.buffer_of(uri)
  if bufnr == nil then
    return { saved = false, reason = "the document is not open in Neovim" }
  end
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("silent keepalt write")
  end)
  if not ok then
    return { saved = false, reason = tostring(err) }
  end
  if params.unsavedChanges then
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":~:.")
    vim.notify(
      string.format(
        "crank: saved %s with your unsaved changes in it, so the agent's commands see what the buffer shows (u undoes only Crank's change)",
        name
      ),
      vim.log.levels.WARN
    )
  end
  return { saved = true }
end

return M
