-- Images from Neovim: :CrankAttach {path} attaches an image file to the next prompt,
-- the real server (python -m crank.lsp) reads it and sends it to the loopback model
-- server in the API's shape, and the chat shows it as [image: name, type, size].
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
  H.ok(H.notified("[image: dot.png] goes with the next prompt"), "the attachment is confirmed")
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
  H.eq("  " .. LINE .. "]", lines[image], "live: the image line (its bytes came with the event)")
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

H.run()
