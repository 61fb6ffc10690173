-- Images from Neovim: :CrankAttach {path} attaches an image file to the next prompt,
-- the real server (python -m crank.lsp) reads it and sends it to the loopback model
-- server in the API's shape, and the chat shows it as [image: name].
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")
vim.cmd("runtime plugin/crank.lua")

local client = require("crank.client")

H.after_each = H.reset
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
  H.contains(H.transcript(), "## You\n\nwhat is in the picture?\n\n[image: dot.png]")
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

H.run()
