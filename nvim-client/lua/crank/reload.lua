--- Files a tool changed on disk behind an open buffer (a command the agent ran:
--- `sed -i`, a formatter, `git checkout`) are read again, so the buffer never shows
--- stale text that a later :w would write back over the agent's work.
---
--- Only buffers of files under the workspace root that the user has not changed are
--- checked, and only where 'autoread' is on (Neovim's default): :checktime then reloads
--- them silently. A buffer with unsaved changes is left alone; Neovim itself warns
--- before writing it over a file that changed. The edit and write tools need none of
--- this: they change an open buffer through the editor (workspace/applyEdit).
local M = {}

--- 'autoread' for `buf`: its local value when it has one, else the global one (a
--- global-local option reads as nil locally until set there).
local function autoread(buf)
  local value = vim.api.nvim_get_option_value("autoread", { buf = buf })
  if value == nil then
    return vim.go.autoread
  end
  return value
end

--- Check the clean buffers of files under `root` against the disk.
---@param root string
function M.changed_on_disk(root)
  local prefix = root:gsub("/+$", "") .. "/"
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if
      vim.api.nvim_buf_is_loaded(buf)
      and vim.bo[buf].buftype == ""
      and not vim.bo[buf].modified
      and vim.startswith(name, prefix)
      and autoread(buf)
    then
      vim.cmd.checktime(buf)
    end
  end
end

return M
