-- Each documented way of installing the plugin, in a fresh headless Neovim: the
-- commands exist, `require("crank")` works and `:help crank` finds its tags.
--
-- Native packages are Neovim's own mechanism and run for real. lazy.nvim and packer
-- cannot be installed here (no download outside the package registries), so their
-- step is done the way they do it: put the plugin's folder on 'runtimepath' after
-- start-up and source its plugin/ files. The folder given is the repository's root,
-- exactly what they clone.
local H = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/helpers.lua")

local CHECK = [[
local out = {}
out.command = vim.fn.exists(":Crank") == 2
out.require = pcall(require, "crank")
out.help = pcall(vim.cmd.help, "crank-mappings") and vim.fn.expand("%:t") == "crank.txt"
out.plug = vim.fn.maparg("<Plug>(crank-chat)", "n") ~= ""
vim.fn.writefile({ vim.json.encode(out) }, vim.env.CRANK_INSTALL_RESULT)
]]

local function try(init_lines, after)
  local dir = H.tmpdir("install")
  local init = dir .. "/init.lua"
  vim.fn.writefile(init_lines, init)
  local check = dir .. "/check.lua"
  vim.fn.writefile(vim.split(CHECK, "\n"), check)
  local result = dir .. "/result.json"
  local argv = { vim.v.progpath, "--headless", "-u", init, "-i", "NONE" }
  if after then
    argv[#argv + 1] = "+lua " .. after
  end
  vim.list_extend(argv, { "+luafile " .. check, "+qa!" })
  local env = { CRANK_INSTALL_RESULT = result, XDG_CONFIG_HOME = dir, XDG_DATA_HOME = dir, XDG_STATE_HOME = dir }
  local done = vim.system(argv, { env = env, text = true }):wait(60000)
  H.eq(0, done.code, done.stderr)
  return vim.json.decode(table.concat(vim.fn.readfile(result), "\n"))
end

local ALL = { command = true, require = true, help = true, plug = true }

H.test("a clone in a package directory (pack/*/start) loads with no extra step", function()
  local site = H.tmpdir("site")
  vim.fn.mkdir(site .. "/pack/crank/start", "p")
  vim.uv.fs_symlink(H.repo, site .. "/pack/crank/start/crank")
  H.eq(ALL, try({ "vim.opt.packpath = { " .. vim.inspect(site) .. " }" }))
end)

H.test("a plugin manager pointed at the repository (lazy.nvim, packer) loads it", function()
  local load = string.format(
    "vim.opt.rtp:prepend(%s); vim.cmd('runtime! plugin/**/*.lua')",
    vim.inspect(H.repo)
  )
  H.eq(ALL, try({}, load))
end)

H.test("dir = nvim-client, as before, still loads", function()
  local load = string.format(
    "vim.opt.rtp:prepend(%s); vim.cmd('runtime! plugin/**/*.lua')",
    vim.inspect(H.plugin)
  )
  H.eq(ALL, try({}, load))
end)

H.test("the shipped help tags are current (regenerate: nvim -l with :helptags nvim-client/doc)", function()
  local copy = H.tmpdir("doc")
  vim.fn.writefile(vim.fn.readfile(H.plugin .. "/doc/crank.txt"), copy .. "/crank.txt")
  vim.cmd.helptags(copy)
  H.eq(vim.fn.readfile(copy .. "/tags"), vim.fn.readfile(H.plugin .. "/doc/tags"))
end)

H.run()
