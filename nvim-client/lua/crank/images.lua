--- Opening an image shown in the chat (`[image: …]` lines of user messages and tool
--- cards) in the system's viewer.
---
--- The bytes come from the image block itself when it carries them (`data`, as live
--- events and small stored images do), else from the server's `crank/image` for the
--- session the chat shows (an image stored beside the session: only its `sha256`),
--- fetched only when asked for and kept per workspace by hash. They are written to a
--- file of their own, readable by the user only (0600, in a 0700 folder inside
--- Neovim's private temporary folder), named by the image's hash with the extension of
--- its type, and handed to `vim.ui.open`. Every failure is a notification naming the
--- image and saying why (the server's own message for a request that failed).
local format = require("crank.format")

local M = {}

local uv = vim.uv or vim.loop

--- Why an open failed, for the notification: the server's message when it answered
--- with an error, else the text given.
local function message_of(err)
  if type(err) == "table" then
    return tostring(err.message or vim.inspect(err))
  end
  return tostring(err)
end

local function name_of(image)
  return format.image_line(image)
end

--- The image's raw bytes: `done(nil, bytes)` or `done(message)`.
---@param ws crank.Workspace
---@param image table an image block
---@param done fun(err: string|nil, bytes: string|nil)
function M.bytes(ws, image, done)
  if type(image.data) == "string" then
    local ok, raw = pcall(vim.base64.decode, image.data)
    if not ok then
      return done("the image's data is not base64")
    end
    return done(nil, raw)
  end
  local sha = image.sha256
  if type(sha) ~= "string" then
    return done("the message keeps neither the image's bytes nor a reference to them")
  end
  ws.image_cache = ws.image_cache or {}
  if ws.image_cache[sha] then
    return done(nil, ws.image_cache[sha])
  end
  ws:request("crank/image", { sessionId = ws.session_id, sha256 = sha }, function(err, result)
    if err and err.code == vim.lsp.protocol.ErrorCodes.MethodNotFound then
      return done("this Crank server cannot send stored images (it has no crank/image; update crank)")
    elseif err then
      return done(message_of(err))
    end
    if type(result) ~= "table" or type(result.data) ~= "string" then
      return done("the server's answer has no image data")
    end
    local ok, raw = pcall(vim.base64.decode, result.data)
    if not ok then
      return done("the server's image data is not base64")
    end
    ws.image_cache[sha] = raw
    done(nil, raw)
  end)
end

--- The folder the opened images are written to: `crank-images` in Neovim's own
--- temporary folder (per process, 0700), made 0700 itself; nil and why when it cannot
--- be made or is not a folder of ours.
---@return string|nil dir, string|nil err
function M.dir()
  local dir = vim.fs.dirname(vim.fn.tempname()) .. "/crank-images"
  local made, mkdir_err = uv.fs_mkdir(dir, tonumber("700", 8))
  local stat = uv.fs_lstat(dir)
  if stat == nil or stat.type ~= "directory" then
    return nil, "cannot make the folder " .. dir .. ": " .. tostring(mkdir_err)
  end
  if not made and stat.uid ~= uv.getuid() then
    return nil, dir .. " belongs to someone else"
  end
  uv.fs_chmod(dir, tonumber("700", 8))
  return dir, nil
end

--- A file name safe in any folder: the image's own name's letters, digits, `.`, `-`
--- and `_` (the name came from a model or a message), cut short.
local function stem(image)
  local name = type(image.name) == "string" and image.name or "image"
  name = vim.fn.fnamemodify(name, ":t:r"):gsub("[^%w%._%-]", "_"):sub(1, 40)
  if name == "" or name:match("^%.") then
    name = "image" .. name
  end
  return name
end

--- Write `bytes` to a new 0600 file for `image`; returns its path, or nil and why.
---@return string|nil path, string|nil err
function M.write(image, bytes)
  local dir, err = M.dir()
  if dir == nil then
    return nil, err
  end
  -- Named by the hash (of the bytes when stored, of their base64 when inline).
  local hash = type(image.sha256) == "string" and image.sha256 or vim.fn.sha256(image.data)
  local ext = format.IMAGE_EXTENSIONS[image.mimeType] or "bin"
  local path = string.format("%s/%s-%s.%s", dir, stem(image), hash:sub(1, 12), ext)
  uv.fs_unlink(path) -- a file left from an earlier open is written again, never trusted
  local fd, open_err = uv.fs_open(path, "wx", tonumber("600", 8))
  if fd == nil then
    return nil, "cannot write " .. path .. ": " .. tostring(open_err)
  end
  local written, write_err = uv.fs_write(fd, bytes, 0)
  uv.fs_close(fd)
  if written ~= #bytes then
    uv.fs_unlink(path)
    return nil, "cannot write " .. path .. ": " .. tostring(write_err)
  end
  uv.fs_chmod(path, tonumber("600", 8))
  return path, nil
end

--- Get `image`'s bytes, write them to a private file and open it with vim.ui.open;
--- `done(path)` after a successful hand-over (nil after a failure, already notified).
---@param ws crank.Workspace
---@param image table
---@param done fun(path: string|nil)|nil
function M.open(ws, image, done)
  done = done or function() end
  local function fail(why)
    vim.notify(string.format("crank: cannot open %s: %s", name_of(image), why), vim.log.levels.ERROR)
    done(nil)
  end
  M.bytes(ws, image, function(err, bytes)
    if err then
      return fail(err)
    end
    local path, write_err = M.write(image, bytes)
    if path == nil then
      return fail(write_err)
    end
    if vim.ui.open == nil then
      return fail("this Neovim has no vim.ui.open (0.10+); the image is in " .. path)
    end
    local ok, cmd, open_err = pcall(vim.ui.open, path)
    if not ok or (cmd == nil and open_err ~= nil) then
      return fail(tostring(ok and open_err or cmd) .. " (the image is in " .. path .. ")")
    end
    done(path)
  end)
end

--- :CrankImage and the chat's `open_image` key: open the image on the cursor's line.
--- `fallback` runs instead when the line shows no image (the key's usual meaning).
---@param fallback fun()|nil
function M.open_under_cursor(fallback)
  local chat
  local buf = vim.api.nvim_get_current_buf()
  for _, c in pairs(require("crank.chat").by_root) do
    if c.buf == buf then
      chat = c
    end
  end
  if chat == nil then
    return vim.notify("crank: :CrankImage works in the Crank chat, on an [image: …] line", vim.log.levels.WARN)
  end
  local image = chat:image_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
  if image == nil then
    if fallback then
      return fallback()
    end
    return vim.notify("crank: no image on this line (put the cursor on an [image: …] line)", vim.log.levels.WARN)
  end
  M.open(chat.ws, image)
end

return M
