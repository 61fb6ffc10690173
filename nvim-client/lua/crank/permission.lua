--- Permission requests (`crank/requestPermission`): preview, then ask with vim.ui.select.
---
--- The diff or command is shown in a floating window first, then the choice is asked
--- through vim.ui.select, so any picker the user has installed (telescope, fzf-lua,
--- dressing, snacks) takes it. The LSP request handler runs in a coroutine, so it
--- waits for an asynchronous picker without blocking Neovim.
local format = require("crank.format")

local M = {}

M.CHOICES = {
  { decision = "allow", label = "Allow" },
  { decision = "allowSession", label = "Allow for this session" },
  { decision = "allowAlways", label = "Always allow" },
  { decision = "reject", label = "Reject" },
  { decision = "reject", label = "Reject, with a reason…", ask_reason = true },
}

--- Open the preview float; returns its window (or nil when there is no UI room).
---@param params crank.PermissionRequest
---@return integer|nil win, integer buf
function M.preview(params)
  local lines = format.permission_lines(params)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local preview = params.preview
  vim.bo[buf].filetype = (type(preview) == "table" and preview.kind == "diff") and "diff" or "sh"
  vim.bo[buf].bufhidden = "wipe"
  local width = math.max(40, math.min(vim.o.columns - 4, 100))
  local height = math.max(3, math.min(#lines, vim.o.lines - 8))
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = "editor",
    row = 1,
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = " Crank: permission ",
    title_pos = "center",
  })
  if not ok then
    return nil, buf
  end
  return win, buf
end

--- Questions being asked, each `{run_id, finish}`, so a run that ends can withdraw them.
---@type table<table, {run_id: string|nil, finish: fun(answer: table)}>
M.open = {}

--- Ask the user; `callback({decision, reason?})` once. Closes the preview afterwards.
---@param params crank.PermissionRequest
---@param callback fun(answer: crank.PermissionResponse)
function M.ask(params, callback)
  local win = M.preview(params)
  M.last_preview = win and vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false) or nil
  local key, done = {}, false
  local function finish(answer)
    -- A picker answered after the question was withdrawn (or twice) changes nothing.
    if done then
      return
    end
    done = true
    M.open[key] = nil
    if win and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
    callback(answer)
  end
  M.open[key] = { run_id = params.runId, finish = finish }
  -- The stock vim.ui.select blocks in inputlist() before the screen is updated: draw
  -- the preview first, so the question is never asked without the diff in view.
  vim.cmd.redraw()
  vim.ui.select(M.CHOICES, {
    prompt = string.format("Crank: allow %s?", params.toolName or "this tool"),
    kind = "crank.permission",
    format_item = function(item)
      return item.label
    end,
  }, function(choice)
    if choice == nil then
      return finish({ decision = "reject", reason = "The user dismissed the request." })
    end
    if choice.ask_reason then
      return vim.ui.input({ prompt = "Reason: " }, function(reason)
        finish({ decision = "reject", reason = reason })
      end)
    end
    finish({ decision = choice.decision })
  end)
end

--- Withdraw the open questions of `run_id` (every one when nil): the run settled, so
--- the server asks nothing more (an abort cancels its question). Each is answered
--- "reject" (which resumes the waiting handler) and its preview closed; the picker's
--- later answer is ignored. Returns how many were withdrawn.
---@param run_id string|nil
---@return integer
function M.withdraw(run_id)
  local n = 0
  for _, q in pairs(M.open) do
    if run_id == nil or q.run_id == nil or q.run_id == run_id then
      n = n + 1
      q.finish({ decision = "reject", reason = "The run ended before an answer." })
    end
  end
  if n > 0 then
    vim.notify("crank: the run ended; its permission question was withdrawn", vim.log.levels.INFO)
  end
  return n
end

--- The crank/requestPermission handler body: waits (in the RPC coroutine) for the user.
---@param params crank.PermissionRequest
---@return crank.PermissionResponse
function M.handle(_, params)
  local co, main = coroutine.running()
  local answer
  local waiting = false
  M.ask(params or {}, function(result)
    answer = result
    if waiting then
      local ok, err = coroutine.resume(co)
      if not ok then
        vim.notify("crank: permission reply failed: " .. tostring(err), vim.log.levels.ERROR)
      end
    end
  end)
  if answer == nil then
    if co == nil or main then
      return { decision = "reject", reason = "The Neovim client could not wait for an answer." }
    end
    waiting = true
    coroutine.yield()
  end
  return answer
end

return M
