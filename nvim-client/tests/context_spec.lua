-- Context for the next prompt, end to end against the real server and the loopback
-- model: :CrankAdd problems (the buffer's diagnostics), @selection (the last visual
-- selection's lines) and @file typed in the prompt reach the model as the server's
-- <problems> and <context> blocks; an @ word that names nothing stays text; the
-- completion of @ words.
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
vim.cmd("runtime plugin/crank.lua")

local client = require("crank.client")
local context = require("crank.context")

H.after_each = H.reset
H.cleanup = H.reset
H.count_settled()

local function current_ws()
  return client.by_root[client.root_for(0)] or select(2, next(client.by_root))
end

H.test(":CrankAdd problems, @selection and @file reach the model; @nothing stays text", function()
  local port = H.model_server({ { text = "I see them." } })
  H.setup_crank(port)
  local root = H.project({ ["calc.py"] = "def add(a, b):\n    return a - b\n", ["notes.md"] = "a note\n" })
  vim.cmd.edit(root .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  local ns = vim.api.nvim_create_namespace("context-spec")
  vim.diagnostic.set(ns, buf, {
    { lnum = 1, col = 4, end_lnum = 1, end_col = 16, severity = vim.diagnostic.severity.ERROR, message = "planted: minus where plus is meant", source = "spec" },
  })
  vim.api.nvim_buf_set_mark(buf, "<", 1, 0, {})
  vim.api.nvim_buf_set_mark(buf, ">", 2, 0, {})

  H.eq({ "@selection" }, context.complete("@sel", root))
  H.ok(vim.tbl_contains(context.complete("@ca", root), "@calc.py"), "files complete after @")
  H.eq({}, context.complete("ca", root), "only @ words complete")

  vim.cmd("CrankAdd problems")
  vim.cmd("Crank look at @selection and @notes.md, not @nothing")
  local ws = current_ws()
  H.wait_for(function()
    return ws and ws.settled_count and ws.settled_count > 0 and not ws.running
  end, "the run to settle")
  local requests = H.model_requests(port)
  H.eq(1, #requests)
  local users = vim.tbl_filter(function(m)
    return m.role == "user"
  end, requests[1].body.messages)
  local sent = users[#users].content
  sent = type(sent) == "string" and sent or vim.json.encode(sent)
  H.contains(sent, "look at @selection and @notes.md, not @nothing")
  H.contains(sent, '<problems path="calc.py">\nline 2: error: planted: minus where plus is meant (spec)\n</problems>')
  H.contains(sent, '<context path="calc.py" lines="1-2">\ndef add(a, b):\n    return a - b\n</context>')
  H.contains(sent, '<context path="notes.md">\na note\n')
  H.ok(not sent:find('path="nothing"', 1, true), "an @ word that names nothing adds nothing")
  H.eq(0, #(ws.context or {}), "what :CrankAdd added went with that prompt")
end)

H.run()
