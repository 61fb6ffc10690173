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

H.test("vim.pack.add() from a file:// clone installs and loads it (Neovim 0.12's own manager)", function()
  if vim.pack == nil then
    io.stdout:write("   (this Neovim has no vim.pack: nothing to check)\n")
    return
  end
  local src = H.tmpdir("src") .. "/crank"
  local cloned = vim.system({ "git", "clone", "-q", H.repo, src }):wait(60000)
  H.eq(0, cloned.code, cloned.stderr)
  -- Exactly what the README says to put in init.lua, with this clone's URL.
  local result = try({
    "vim.pack.add({ " .. vim.inspect("file://" .. src) .. " })",
    "vim.g.crank_spec_rtp = vim.api.nvim_get_runtime_file('lua/crank/init.lua', false)[1]",
  })
  H.eq(ALL, { command = result.command, require = result.require, help = result.help, plug = result.plug })
  H.ok(
    result.rtp and result.rtp:find("/nvim/site/pack/core/opt/crank/lua/crank/init.lua$"),
    "loaded from vim.pack's own folder: " .. tostring(result.rtp)
  )
end)

--- `:checkhealth crank` in a fresh Neovim that has the plugin as a native package and
--- runs `init_lines`; the report's text. `env` replaces HOME, PATH and the like.
local function health(init_lines, env)
  local dir = H.tmpdir("health")
  local site = dir .. "/site"
  vim.fn.mkdir(site .. "/pack/crank/start", "p")
  vim.uv.fs_symlink(H.repo, site .. "/pack/crank/start/crank")
  local project = dir .. "/project"
  vim.fn.mkdir(project .. "/.git", "p")
  local init = dir .. "/init.lua"
  vim.fn.writefile(vim.list_extend({ "vim.opt.packpath = { " .. vim.inspect(site) .. " }" }, init_lines), init)
  local out = dir .. "/health.txt"
  local argv = { vim.v.progpath, "--headless", "-u", init, "-i", "NONE", "+checkhealth crank", "+write! " .. out, "+qa!" }
  local full = { XDG_CONFIG_HOME = dir, XDG_DATA_HOME = dir, XDG_STATE_HOME = dir, HOME = dir .. "/home" }
  vim.fn.mkdir(full.HOME, "p")
  for k, v in pairs(env or {}) do
    full[k] = v
  end
  local done = vim.system(argv, { cwd = project, env = full, text = true }):wait(90000)
  H.eq(0, done.code, done.stderr)
  return table.concat(vim.fn.readfile(out), "\n"), full.HOME
end

H.test(":checkhealth crank: the server not installed says how to install it", function()
  local empty = H.tmpdir("empty-path")
  local text = health({}, { PATH = empty })
  H.contains(text, "server command not found: crank")
  H.contains(text, "`pipx install .` (or `uv tool install .`)")
end)

H.test(":checkhealth crank: crank in ~/.local/bin but not on Neovim's PATH says so", function()
  local empty = H.tmpdir("empty-path")
  local dir = H.tmpdir("health-home")
  vim.fn.mkdir(dir .. "/.local/bin", "p")
  vim.fn.writefile({ "#!/bin/sh", "exit 0" }, dir .. "/.local/bin/crank")
  vim.uv.fs_chmod(dir .. "/.local/bin/crank", 493) -- 0755
  local text = health({}, { PATH = empty, HOME = dir })
  H.contains(text, "server command not found: crank")
  H.contains(text, dir .. "/.local/bin/crank is installed, but ~/.local/bin is not on the PATH Neovim was started with")
  H.contains(text, "pipx ensurepath")
end)

H.test(":checkhealth crank: a Python without Crank in cmd says what it printed and what to do", function()
  -- -S: no site-packages at all, so no Crank whatever this machine has installed
  local python = vim.env.CRANK_PYTHON or "python3"
  local text = health({ "require('crank').setup({ cmd = { " .. vim.inspect(python) .. ", '-I', '-S', '-m', 'crank.lsp' } })" })
  H.contains(text, "the server did not start: it exited (code 1) before answering")
  H.contains(text, "No module named 'crank'")
  H.contains(text, "does not have Crank installed")
  H.ok(not text:find("no answer to initialize within", 1, true), "not a 15 s wait for an answer: " .. text)
end)

H.test(":checkhealth crank: a crank whose Python is gone says to reinstall it", function()
  local dir = H.tmpdir("broken")
  -- What pipx leaves when the Python its venv was made with is removed.
  vim.fn.writefile({ "#!" .. dir .. "/venv/bin/python", "print('never')" }, dir .. "/crank")
  vim.uv.fs_chmod(dir .. "/crank", 493)
  local text = health({ "require('crank').setup({ cmd = { " .. vim.inspect(dir .. "/crank") .. ", 'serve' } })" })
  H.contains(text, "the server did not start:")
  H.contains(text, "pipx reinstall crank-agent")
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
