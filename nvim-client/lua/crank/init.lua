--- Crank for Neovim: the Crank agent through Neovim's built-in LSP client.
---
--- `require("crank").setup(opts)` configures the plugin (see :help crank-setup);
--- the commands are defined by plugin/crank.lua and work with the defaults too.
local M = {}

local did_setup = false

--- The oldest Neovim the plugin runs on (vim.system, vim.fs, the LSP client's API).
M.NEEDS = { 0, 10, 0 }

--- Why this Neovim cannot run Crank, or nil. Written for Neovim 0.7 too (Debian 12's),
--- so the user reads this rather than an error from deep inside the plugin.
---@param v table|nil {major, minor, patch} (default: the running Neovim)
---@return string|nil
function M.version_problem(v)
  v = v or vim.version()
  local major, minor, patch = v.major or v[1] or 0, v.minor or v[2] or 0, v.patch or v[3] or 0
  if major > M.NEEDS[1] or (major == M.NEEDS[1] and minor >= M.NEEDS[2]) then
    return nil
  end
  return string.format(
    "crank.nvim needs Neovim 0.10 or newer; this is %d.%d.%d. Debian 12 and Ubuntu 22.04 ship "
      .. "older ones: install a release from https://github.com/neovim/neovim/releases "
      .. "(nvim-linux-x86_64.tar.gz, unpacked into ~/.local) and see the plugin's README.",
    major,
    minor,
    patch
  )
end

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
  local problem = M.version_problem()
  if problem then
    vim.notify(problem, vim.log.levels.ERROR)
    return
  end
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
