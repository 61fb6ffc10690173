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
out.model = vim.g.crank_spec_model
out.rtp = vim.g.crank_spec_rtp
vim.fn.writefile({ vim.json.encode(out) }, vim.env.CRANK_INSTALL_RESULT)
]]

local function try(init_lines, after, extra_env)
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
  for k, v in pairs(extra_env or {}) do
    env[k] = v
  end
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

--- The lazy.nvim spec as the README gives it (the lua block after "lazy.nvim, with").
local function readme_lazy_spec()
  local text = table.concat(vim.fn.readfile(H.plugin .. "/README.md"), "\n")
  local from = text:find("lazy.nvim, with the clone", 1, true)
  H.ok(from, "the README has a lazy.nvim spec")
  local body = text:match("```lua\n(.-)\n```", from)
  H.ok(body, "a lua block after it")
  return body
end

H.test("the README's lazy.nvim spec: its shape, and the runtime path it yields loads Crank", function()
  local body = readme_lazy_spec()
  H.ok(not body:find("you/crank", 1, true), "no placeholder")
  local spec = assert(loadstring("return " .. body))()
  H.eq("~/crank", spec.dir)
  H.eq("crank", spec.name)
  H.eq("function", type(spec.config))
  -- What lazy.nvim does with `dir`: normalize it (~ is $HOME), put it on the runtime
  -- path, source its plugin/ files, run config(). A home whose ~/crank is this clone.
  local home = H.tmpdir("home")
  vim.uv.fs_symlink(H.repo, home .. "/crank")
  local spec_file = home .. "/spec.lua"
  vim.fn.writefile(vim.split("return " .. body, "\n"), spec_file)
  local load = table.concat({
    "local spec = dofile(" .. vim.inspect(spec_file) .. ")",
    "local dir = vim.fs.normalize(spec.dir)",
    "vim.opt.rtp:prepend(dir)",
    "vim.cmd('runtime! plugin/**/*.lua')",
    "spec.config()",
    "vim.g.crank_spec_model = require('crank.config').values.provider.model",
    "vim.g.crank_spec_rtp = vim.api.nvim_get_runtime_file('lua/crank/init.lua', false)[1]",
  }, "; ")
  local result = try({}, load, { HOME = home })
  H.eq(ALL, { command = result.command, require = result.require, help = result.help, plug = result.plug })
  H.eq("claude-sonnet-4-5", result.model, "config() ran setup() with the README's options")
  H.eq(home .. "/crank/lua/crank/init.lua", result.rtp, "loaded from the clone's root")
end)

H.test("an older Neovim is told plainly that Crank needs 0.10+, and how to get one", function()
  local crank = require("crank")
  local problem = crank.version_problem({ major = 0, minor = 7, patch = 2 })
  H.contains(problem, "needs Neovim 0.10 or newer; this is 0.7.2")
  H.contains(problem, "github.com/neovim/neovim/releases")
  H.eq(nil, crank.version_problem({ major = 0, minor = 10, patch = 0 }))
  H.eq(nil, crank.version_problem({ major = 0, minor = 12, patch = 0 }))
  H.eq(nil, crank.version_problem())
end)

H.test("the shipped help tags are current (regenerate: nvim -l with :helptags nvim-client/doc)", function()
  local copy = H.tmpdir("doc")
  vim.fn.writefile(vim.fn.readfile(H.plugin .. "/doc/crank.txt"), copy .. "/crank.txt")
  vim.cmd.helptags(copy)
  H.eq(vim.fn.readfile(copy .. "/tags"), vim.fn.readfile(H.plugin .. "/doc/tags"))
end)

H.run()
