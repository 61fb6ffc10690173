--- Reviewing what a run changed, and the editor's diagnostics for the agent.
---
--- :CrankChanges [runId] puts the run's changed files (default: the last finished run;
--- `all`: the whole session) in the quickfix list, each with its status, and
--- :CrankChangeDiff (or `D` in the quickfix window) shows one as a diff: the content
--- before the run (from `crank/fileContent`) beside the file as it is now.
--- :CrankRevert [runId] [path...] takes the run's changes back (`crank/revert`); `!`
--- forces files the user changed since. What is not put back is listed with its reason.
--- :CrankKeep [runId] [path...] (or `K` in the quickfix window, for that file) accepts the
--- run's changes (`crank/keep`): recorded in the session, so the list says "kept" from
--- then on, here and in any other editor, and a revert of the whole run leaves them.
--- Each entry's text says how many lines the change added and removed (`+3 -1`).
---
--- `crank/diagnostics` is answered from `vim.diagnostic.get`: what the buffer's language
--- servers report now, as LSP Diagnostics (`format.lsp_diagnostic`; a file with no
--- loaded buffer has none).
local M = {}

local format = require("crank.format")

local function report(what, err)
  require("crank.actions").report(what, err)
end

--- The answer to `crank/diagnostics {uris}`.
function M.diagnostics(params)
  local items = {}
  for _, uri in ipairs((params or {}).uris or {}) do
    local diagnostics = {}
    local ok, bufnr = pcall(vim.uri_to_bufnr, uri)
    if ok and vim.api.nvim_buf_is_loaded(bufnr) then
      for _, d in ipairs(vim.diagnostic.get(bufnr)) do
        diagnostics[#diagnostics + 1] = format.lsp_diagnostic(d)
      end
    end
    items[#items + 1] = { uri = uri, diagnostics = diagnostics }
  end
  return { items = items }
end

--- The quickfix items for a `crank/changes` answer.
function M.quickfix_items(root, files)
  local items = {}
  for _, f in ipairs(files or {}) do
    local text = f.status
    if type(f.linesAdded) == "number" and type(f.linesRemoved) == "number" then
      text = string.format("%s +%d -%d", text, f.linesAdded, f.linesRemoved)
    end
    if f.kept then
      text = text .. " (kept)"
    elseif f.revertedBy then
      text = text .. " (undone by " .. f.revertedBy .. ")"
    end
    if not f.restorable then
      text = text .. " (not restorable: " .. tostring(f.reason) .. ")"
    end
    items[#items + 1] = { filename = root .. "/" .. f.path, lnum = 1, text = text, user_data = f }
  end
  return items
end

local function run_of(ws, arg)
  if arg == "all" then
    return nil
  end
  if arg and arg ~= "" then
    return arg
  end
  return ws.last_run_id
end

--- :CrankChanges [runId|all]
function M.changes(arg, done)
  local ws = require("crank.actions").workspace()
  if ws == nil then
    return
  end
  local run = run_of(ws, arg)
  ws:request("crank/changes", { runId = run }, function(err, result)
    if err then
      return report("listing the run's changes", err)
    end
    ws.changes = { run = run, files = result.files or {} }
    vim.fn.setqflist({}, " ", {
      title = "Crank changes" .. (run and (" of " .. run) or " of the session"),
      items = M.quickfix_items(ws.root, ws.changes.files),
    })
    if #ws.changes.files == 0 then
      vim.notify("crank: no changed files", vim.log.levels.INFO)
    else
      vim.cmd("copen")
      vim.keymap.set("n", "D", function()
        M.diff_entry(vim.fn.line("."))
      end, { buffer = true, desc = "Crank: diff this change" })
      vim.keymap.set("n", "K", function()
        M.keep_entry(vim.fn.line("."))
      end, { buffer = true, desc = "Crank: keep this change" })
    end
    if done then
      done(ws.changes.files)
    end
  end)
end

--- The diff of quickfix entry `index` (1-based): before the run vs now.
function M.diff_entry(index)
  local entry = vim.fn.getqflist()[index]
  local f = entry and entry.user_data
  if type(f) ~= "table" then
    return
  end
  M.diff(f)
end

--- Open `f` (a `crank/changes` file) as a diff: the content before, beside the file now.
function M.diff(f, done)
  local ws = require("crank.actions").workspace()
  if ws == nil then
    return
  end
  local function show(before_lines)
    vim.cmd("tabnew " .. vim.fn.fnameescape(ws.root .. "/" .. f.path))
    vim.cmd("diffthis")
    vim.cmd("leftabove vnew")
    local buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, before_lines)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].modifiable = false
    pcall(vim.api.nvim_buf_set_name, buf, "crank://before/" .. f.path)
    vim.cmd("diffthis")
    if done then
      done(buf)
    end
  end
  if not f.before then
    return show({})
  end
  ws:request("crank/fileContent", { sha256 = f.before }, function(err, result)
    if err then
      return report("reading the content before the run", err)
    end
    local text = (result.text or ""):gsub("\n$", "")
    show(vim.split(text, "\n", { plain = true }))
  end)
end

--- The workspace and the params a :CrankRevert / :CrankKeep line asks for: the run it
--- names (a first word `run-...` or `revert-...`; else the last finished run) and the
--- paths after it. Nil (and said why) when there is no workspace or no run.
local function run_params(args, what)
  local ws = require("crank.actions").workspace()
  if ws == nil then
    return nil
  end
  local words = vim.split(vim.trim(args or ""), "%s+", { trimempty = true })
  local run = ws.last_run_id
  if words[1] and words[1]:match("^run%-") or (words[1] or ""):match("^revert%-") then
    run = table.remove(words, 1)
  end
  if not run then
    vim.notify("crank: no run to " .. what .. " yet", vim.log.levels.WARN)
    return nil
  end
  return ws, { runId = run, paths = #words > 0 and words or nil }
end

--- One notification: `head`, then each conflict as "<refused>: path: reason" (a warning then).
local function tell(head, conflicts, refused)
  local lines = { head }
  for _, c in ipairs(conflicts or {}) do
    lines[#lines + 1] = "  " .. refused .. ": " .. c.path .. ": " .. c.reason
  end
  local level = #(conflicts or {}) > 0 and vim.log.levels.WARN or vim.log.levels.INFO
  vim.notify(table.concat(lines, "\n"), level)
end

--- :CrankRevert[!] [runId] [path...]
function M.revert(args, force, done)
  local ws, params = run_params(args, "revert")
  if ws == nil then
    return
  end
  local run = params.runId
  params.force = force or nil
  ws:request("crank/revert", params, function(err, result)
    if err then
      return report("reverting " .. run, err)
    end
    vim.cmd("checktime")
    tell(string.format("crank: %d file(s) put back as before %s", #result.reverted, run), result.conflicts, "not restored")
    if done then
      done(result)
    end
  end)
end

--- :CrankKeep [runId] [path...]: the run's changes to these files (all its files still
--- waiting, without paths) are accepted; the quickfix list of that run, when shown, is
--- read again.
function M.keep(args, done)
  local ws, params = run_params(args, "keep")
  if ws == nil then
    return
  end
  local run = params.runId
  ws:request("crank/keep", params, function(err, result)
    if err then
      return report("keeping " .. run .. "'s changes", err)
    end
    tell(string.format("crank: kept %d file(s) as %s left them", #result.kept, run), result.conflicts, "not kept")
    local function finish()
      if done then
        done(result)
      end
    end
    if ws.changes and ws.changes.run == run and vim.fn.getqflist({ title = 0 }).title:match("^Crank changes") then
      return M.changes(run, finish)
    end
    finish()
  end)
end

--- `K` in the quickfix window: keep the change of entry `index` (1-based).
function M.keep_entry(index, done)
  local ws = require("crank.actions").workspace()
  local entry = vim.fn.getqflist()[index]
  local f = entry and entry.user_data
  if ws == nil or type(f) ~= "table" then
    return
  end
  if not (ws.changes and ws.changes.run) then
    return vim.notify("crank: Keep takes one run's list (:CrankChanges [runId], not all)", vim.log.levels.WARN)
  end
  M.keep(ws.changes.run .. " " .. f.path, done)
end

return M
