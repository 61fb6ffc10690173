--- Crank for Neovim: the Crank agent through Neovim's built-in LSP client.
---
--- `require("crank").setup(opts)` configures the plugin (see :help crank-setup);
--- the commands are defined by plugin/crank.lua and work with the defaults too.
local M = {}

local did_setup = false

local function wire()
  local client = require("crank.client")
  client.on_event = function(ws, params)
    local kind = type(params.event) == "table" and params.event.type or nil
    if kind == "agent_settled" then
      require("crank.permission").withdraw(params.runId)
    end
    require("crank.chat").dispatch(ws, params)
    if kind == "tool_execution_end" then
      vim.schedule(function()
        require("crank.reload").changed_on_disk(ws.root)
      end)
    end
  end
  client.on_permission = function(ws, params)
    return require("crank.permission").handle(ws, params)
  end
  client.on_commands_changed = function(ws)
    require("crank.commands").changed(ws)
  end
end

local function auto_attach()
  local group = vim.api.nvim_create_augroup("crank.attach", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    callback = function(args)
      local config = require("crank.config").values
      if not config.auto_attach then
        return
      end
      local client = require("crank.client")
      -- Only into roots that already have a server: starting one is the user's call.
      local root = client.root_for(args.buf)
      if client.by_root[root] then
        client.attach(args.buf)
      end
    end,
  })
end

--- Configure Crank. Safe to call more than once; later calls replace the options.
---@param opts table|nil see :help crank-options
function M.setup(opts)
  local config = require("crank.config")
  config.apply(opts)
  wire()
  auto_attach()
  for lhs, command in pairs(config.values.global_keymaps or {}) do
    if command then
      vim.keymap.set("n", lhs, "<cmd>" .. command .. "<cr>", { desc = "Crank: " .. command })
    end
  end
  did_setup = true
end

--- Make sure setup ran (commands call this, so the defaults work without setup()).
function M.ensure_setup()
  if not did_setup then
    M.setup({ global_keymaps = false })
  end
end

--- Statusline component: "crank: idle 12% $0.0042" for the current buffer's project.
---@return string
function M.statusline()
  local client = require("crank.client")
  local ok, root = pcall(function()
    return vim.b.crank_root or client.root_for(0)
  end)
  local ws = ok and client.by_root[root] or nil
  if ws == nil then
    local _, any = next(client.by_root)
    ws = any
  end
  return require("crank.format").status(ws)
end

return M
