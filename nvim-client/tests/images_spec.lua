-- Images from Neovim, against the real server (python -m crank.lsp) and the loopback
-- model server: :CrankAttach {path} attaches an image file to the next prompt or steer,
-- the server reads it and sends it in the API's shape, and the chat shows it as
-- [image: name, type, size]; an image a tool returned shows on the tool's card, and
-- gx / :CrankImage open it, live and after the session is reopened (crank/image).
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
vim.cmd("runtime plugin/crank.lua")

local client = require("crank.client")

local original_open = vim.ui.open
H.after_each = function()
  vim.ui.open = original_open
  H.reset()
end
H.cleanup = H.reset

local settled = 0
local note = client.Workspace.note_event
client.Workspace.note_event = function(self, params)
  if params.event and params.event.type == "agent_settled" then
    settled = settled + 1
  end
  return note(self, params)
end

-- A real 2x2 PNG (signature, IHDR, IDAT, IEND with their CRCs).
local PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGNgYGjQYGhgYLBp0LBpAAAPugLJHpRxBAAAAABJRU5ErkJggg=="

local function write_png(root)
  local path = root .. "/dot.png"
  local f = assert(io.open(path, "wb"))
  f:write(vim.base64.decode(PNG_B64))
  f:close()
  return path
end

H.test(":CrankAttach sends the image with the next prompt and the chat shows its name", function()
  local port = H.model_server({ { text = "A tiny picture." } })
  H.setup_crank(port, { provider = { images = true } })
  local root = H.project({})
  write_png(root)
  vim.cmd("CrankAttach dot.png")
  H.ok(H.notified("[image: dot.png] goes with the next message"), "the attachment is confirmed")
  local before = settled
  vim.cmd("Crank what is in the picture?")
  H.wait_for(function()
    return settled > before
  end, "the run to settle")
  H.contains(H.transcript(), "## You\n\nwhat is in the picture?\n\n[image: dot.png, image/png, 2x2, 79 B]")
  H.contains(H.transcript(), "A tiny picture.")
  local body = H.model_requests(port)[1].body
  local user = body.messages[#body.messages]
  H.eq("what is in the picture?", user.content[1].text)
  H.eq("image_url", user.content[2].type)
  H.eq("data:image/png;base64," .. PNG_B64, user.content[2].image_url.url)
end)

H.test("a file that is no image is refused by the server and stays attached for a retry", function()
  local port = H.model_server({ { text = "never" } })
  H.setup_crank(port, { provider = { images = true } })
  local root = H.project({ ["notes.png"] = "just text" })
  vim.cmd("CrankAttach " .. root .. "/notes.png")
  vim.cmd("Crank look")
  H.wait_for(function()
    return H.notified("not a PNG, JPEG, GIF or WebP image")
  end, "the refusal")
  H.eq(0, #H.model_requests(port), "nothing reached the model")
  local ws = select(2, H.chat())
  H.eq(1, #(ws.attached or {}), "the image is kept for the next try")
  vim.cmd("CrankAttach!")
  H.eq(0, #ws.attached, ":CrankAttach! drops it")
end)

H.test(":CrankAttach then :CrankSteer during a run: the image goes with the steering", function()
  local port = H.model_server(H.slow_read_script("Steered by a picture."))
  H.setup_crank(port, { provider = { images = true }, permission_mode = "auto" })
  local root = H.project({ ["README.md"] = "demo readme" })
  write_png(root)
  local before = settled
  vim.cmd("Crank look at the readme")
  local ws
  H.wait_for(function()
    ws = select(2, H.chat())
    return ws and ws.running and H.transcript():find("Reading", 1, true)
  end, "the first reply to be streaming")
  vim.cmd("CrankAttach dot.png")
  vim.cmd("CrankSteer like this one")
  H.wait_for(function()
    return settled > before
  end, "the run to settle")
  H.eq(0, #ws.attached, "the steering took the image")
  H.contains(H.transcript(), "## You\n\nlike this one\n\n[image: dot.png, image/png, 2x2, 79 B]")
  local requests = H.model_requests(port)
  H.eq(2, #requests)
  H.ok(not vim.json.encode(requests[1].body):find(PNG_B64, 1, true), "not in the first request")
  H.contains(vim.json.encode(requests[2].body), "data:image/png;base64," .. PNG_B64, "the steered request")
end)

-- A tool's image: the model reads a PNG over 8 KB (so the session stores it as a blob
-- beside the session file), the read card shows it, and it opens. vim.ui.open is
-- replaced to record the path it is given: there is no image viewer (nor a desktop)
-- on the test machine; what is checked is the file handed over, byte for byte.

--- A real incompressible 60x60 PNG (tests/support/images.py), written into `root`.
local function write_big_png(root)
  local python = vim.env.CRANK_PYTHON or "python3"
  local code = "import sys; sys.path.insert(0, sys.argv[1]); import images; "
    .. "open(sys.argv[2], 'wb').write(images.png(60, 60, noise=True))"
  local path = root .. "/big.png"
  local done = vim.system({ python, "-c", code, H.repo .. "/tests/support", path }):wait()
  H.eq(0, done.code, done.stderr)
  return path, H.read_bytes(path)
end

local function capture_open()
  local opened = {}
  vim.ui.open = function(path)
    opened[#opened + 1] = path
    return vim.system({ "true" }), nil
  end
  return opened
end

local CARD = "- ✓ **read** `big.png`"
local LINE = "[image: big.png, image/png, 60x60, 11 KB"

--- Run a prompt whose model reads big.png; returns what the other steps need.
local function run_reading_png()
  local port = H.model_server({
    { toolCalls = { { id = "call_img", name = "read", arguments = { path = "big.png" } } } },
    { text = "A noisy picture." },
  })
  local session_dir = H.setup_crank(port, { provider = { images = true } })
  local root = H.project({})
  local _, png = write_big_png(root)
  H.ok(#png > 8 * 1024, "the PNG is over the inline limit (" .. #png .. " bytes)")
  local before = settled
  vim.cmd("Crank read the picture big.png")
  H.wait_for(function()
    return settled > before
  end, "the run to settle")
  return { port = port, session_dir = session_dir, root = root, png = png }
end

--- The 1-based line of the chat showing `text`, or an error with the transcript.
local function line_of(text)
  for i, line in ipairs(H.chat():transcript()) do
    if line:find(text, 1, true) then
      return i
    end
  end
  error(text .. " not in the chat:\n" .. H.transcript(), 2)
end

H.test("the image a tool read shows on its card, and :CrankImage opens the bytes it read", function()
  local run = run_reading_png()
  local lines = H.chat():transcript()
  local card = line_of(CARD)
  local image = line_of(LINE)
  H.eq("  " .. LINE .. ", stored]", lines[image], "live: the image line as a replay shows it (issue 34.7)")
  H.ok(image > card and lines[image - 1] == "  ```", "the line is the card's last, under its text")
  H.contains(H.transcript(), "A noisy picture.")
  local blobs = vim.fn.glob(run.session_dir .. "/**/*.blobs/*.png", false, true)
  H.eq(1, #blobs, "the session stored the image as a blob")

  local opened = capture_open()
  H.chat():show()
  vim.api.nvim_win_set_cursor(0, { image, 4 })
  vim.cmd("CrankImage")
  H.wait_for(function()
    return #opened == 1
  end, "the image to open")
  H.eq(run.png, H.read_bytes(opened[1]), "the file handed to vim.ui.open holds the PNG's bytes")
  H.ok(vim.endswith(opened[1], ".png"), opened[1])
  H.eq("600", string.format("%o", bit.band(vim.uv.fs_stat(opened[1]).mode, 511)))
  H.eq("700", string.format("%o", bit.band(vim.uv.fs_stat(vim.fs.dirname(opened[1])).mode, 511)))
end)

-- The same session opened by a Neovim started afresh: it has nothing but what the
-- server replays (the image as a reference), so the bytes can only come from crank/image.
local CHILD = [[
local H = dofile(%q)
vim.cmd("runtime plugin/crank.lua")
local out = {}
H.test("reopened", function()
  H.setup_crank(%d, { session_dir = %q, provider = { images = true } })
  vim.cmd.cd(%q)
  H.stub_select(function(label)
    return label:find("read the picture", 1, true) ~= nil
  end)
  vim.cmd("CrankSessions")
  H.wait_for(function()
    return H.transcript():find("A noisy picture.", 1, true)
  end, "the reopened transcript")
  out.transcript = H.transcript()
  local opened
  vim.ui.open = function(path)
    opened = path
    return vim.system({ "true" }), nil
  end
  local chat = H.chat()
  chat:show()
  for i, line in ipairs(chat:transcript()) do
    if line:find("[image: big.png", 1, true) then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  vim.api.nvim_feedkeys("gx", "x", false)
  H.wait_for(function()
    if H.notified("crank: cannot open") then
      error(H.notifications[#H.notifications])
    end
    return opened ~= nil
  end, "gx to open the image")
  out.path = opened
  out.data = vim.base64.encode(H.read_bytes(opened))
end)
H.after_each = function()
  out.notifications = H.notifications
  vim.fn.writefile({ vim.json.encode(out) }, %q)
end
H.cleanup = H.reset
H.run()
]]

H.test("reopened in a fresh Neovim, the card still shows the image and gx opens its bytes through crank/image", function()
  local run = run_reading_png()
  local live = H.transcript()
  require("crank.client").stop_all() -- the session is free for the other Neovim's server
  H.wait_for(function()
    return next(vim.lsp.get_clients({ name = "crank" })) == nil
  end, "the server to exit")

  local dir = H.tmpdir("child")
  local result = dir .. "/result.json"
  vim.fn.writefile(vim.split(CHILD:format(H.here .. "/helpers.lua", run.port, run.session_dir, run.root, result), "\n"), dir .. "/child.lua")
  local done = vim.system({ vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-l", dir .. "/child.lua" }, { text = true }):wait(120000)
  H.eq(0, done.code, "the fresh Neovim's run:\n" .. tostring(done.stdout) .. tostring(done.stderr))
  local out = vim.json.decode(table.concat(vim.fn.readfile(result), "\n"))
  H.contains(out.transcript, CARD)
  H.contains(out.transcript, "  " .. LINE .. ", stored]")
  H.eq(live, out.transcript, "the same transcript live and reopened (issue 34.7)")
  H.eq(run.png, vim.base64.decode(out.data), "the opened file holds the original bytes")

  -- Its blob gone: opening it says which image and the server's reason.
  local blobs = vim.fn.glob(run.session_dir .. "/**/*.blobs/*.png", false, true)
  H.eq(1, #blobs)
  os.remove(blobs[1])
  vim.cmd("silent! bwipeout! crank://chat") -- the chat from the live run holds the bytes
  H.setup_crank(run.port, { session_dir = run.session_dir, provider = { images = true } })
  H.stub_select(function(label)
    return label:find("read the picture", 1, true) ~= nil
  end)
  vim.cmd("CrankSessions")
  H.wait_for(function()
    return H.transcript():find(LINE .. ", stored]", 1, true)
  end, "the session again")
  local opened = capture_open()
  H.chat():show()
  vim.api.nvim_win_set_cursor(0, { line_of(LINE), 0 })
  local since = #H.notifications
  vim.cmd("CrankImage")
  H.wait_for(function()
    return H.notified("crank: cannot open " .. LINE .. ", stored]: no image ", since)
  end, "the error")
  H.ok(H.notified("the blob is missing", since), "the server's own reason")
  H.eq(0, #opened, "nothing was opened")
end)

H.run()
