-- host_spec.lua: the volua command line, run as a separate process: -v, --help, -e, script
-- arguments (arg and ...), the #! line, - (stdin), -i after a script, errors and exit codes,
-- require "volua" and the global vol. VOLUA=path tests another binary (the sanitizer build).
local BIN = os.getenv("VOLUA") or "build/bin/volua"

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

local temp_files = {}
local function temp(text)
  local path = os.tmpname()
  temp_files[#temp_files + 1] = path
  if text then write_file(path, text) end
  return path
end

-- Runs volua with the given argument string (already quoted) and stdin text; returns stdout,
-- stderr and the exit status.
local function run(args, stdin)
  local inp, out, err, rc = temp(stdin or ""), temp(), temp(), temp()
  os.execute(string.format("%s %s < %s > %s 2> %s; echo $? > %s",
    quote(BIN), args, quote(inp), quote(out), quote(err), quote(rc)))
  return read_file(out), read_file(err), tonumber(read_file(rc))
end

describe("volua host", function()
  teardown(function()
    for _, p in ipairs(temp_files) do os.remove(p) end
  end)

  it("finds the binary under test", function()
    local f = io.open(BIN, "rb")
    assert.is_not_nil(f, "no volua binary at " .. BIN .. " (set VOLUA=path)")
    f:close()
  end)

  it("prints its version with -v and exits 0", function()
    local out, _, rc = run("-v")
    assert.equal(0, rc)
    assert.matches("^volua %d+%.%d+", out)
    assert.matches("LuaJIT", out)
  end)

  it("lists its options with --help and -h", function()
    for _, opt in ipairs {"--help", "-h"} do
      local out, err, rc = run(opt)
      assert.equal(0, rc)
      local text = out .. err
      assert.matches("usage: volua", text)
      for _, o in ipairs {"-e", "-i", "-v", "-l", "--"} do
        assert.is_truthy(text:find("\n%s+" .. o:gsub("%-", "%%-") .. " "), "missing option " .. o)
      end
    end
  end)

  it("rejects an unknown option with the usage and a non-zero exit", function()
    local _, err, rc = run("-z")
    assert.not_equal(0, rc)
    assert.matches("unrecognized option '%-z'", err)
    assert.matches("usage: volua", err)
  end)

  it("runs -e chunks in order, with vol global and require \"volua\" the same table", function()
    local out, err, rc = run("-e " .. quote("x = 20") .. " -e " ..
      quote("print(x + 22, require('volua') == vol, type(vol.conv3d), vol.zeros({2, 3}):numel())"))
    assert.equal("", err)
    assert.equal(0, rc)
    assert.equal("42\ttrue\tfunction\t6\n", out)
  end)

  it("needs an argument after -e", function()
    local _, err, rc = run("-e")
    assert.not_equal(0, rc)
    assert.matches("'%-e' needs an argument", err)
  end)

  it("gives a script arg (with the interpreter at arg[-1]) and its arguments as ...", function()
    local script = temp([[
print(arg[0], arg[1], arg[2], #arg)
print(select("#", ...), ...)
print(arg[-1] ~= nil)
]])
    local out, err, rc = run(quote(script) .. " alpha 'b c'")
    assert.equal("", err)
    assert.equal(0, rc)
    assert.equal(script .. "\talpha\tb c\t2\n2\talpha\tb c\ntrue\n", out)
  end)

  it("skips a #! first line", function()
    local script = temp("#!/usr/bin/env volua\nprint('shebang ok', vol ~= nil)\n")
    local out, err, rc = run(quote(script))
    assert.equal("", err)
    assert.equal(0, rc)
    assert.equal("shebang ok\ttrue\n", out)
  end)

  it("runs standard input as a script with -", function()
    local out, err, rc = run("- one two", "print(select('#', ...), ...)\nprint(2 * 21)\n")
    assert.equal("", err)
    assert.equal(0, rc)
    assert.equal("2\tone\ttwo\n42\n", out)
  end)

  it("runs piped standard input as a script when given no arguments", function()
    local out, err, rc = run("", "local t = vol.ones({2, 2})\nprint(t:sum())\n")
    assert.equal("", err)
    assert.equal(0, rc)
    assert.equal("4\n", out)
  end)

  it("enters the REPL after a script with -i, keeping the script's globals", function()
    local script = temp("from_script = 21\n")
    local out, err, rc = run("-i " .. quote(script), "from_script * 2\nprint('done')\n")
    assert.equal("", err)
    assert.equal(0, rc)
    assert.equal("42\ndone\n", out)
  end)

  it("reports a runtime error as 'volua: msg' with a traceback and exits non-zero", function()
    local script = temp("local function inner() error('kaput') end\ninner()\nprint('not reached')\n")
    local out, err, rc = run(quote(script))
    assert.not_equal(0, rc)
    assert.equal("", out)
    assert.matches("^volua: [^\n]*:1: kaput\n", err)
    assert.matches("stack traceback:", err)
    assert.matches("in function 'inner'", err)
  end)

  it("reports an error from an op with its message", function()
    local _, err, rc = run("-e " .. quote("vol.conv3d(vol.zeros({1, 3, 4, 4, 4}), vol.zeros({2, 2, 3, 3, 3}))"))
    assert.not_equal(0, rc)
    assert.matches("^volua: conv3d: [^\n]*3[^\n]*2", err) -- names the op and both channel counts
    assert.matches("in function 'conv3d'", err)
  end)

  it("reports a syntax error and a missing script", function()
    local bad = temp("x = = 1\n")
    local _, err, rc = run(quote(bad))
    assert.not_equal(0, rc)
    assert.matches("^volua: [^\n]*:1: unexpected symbol near '='", err)
    local _, err2, rc2 = run(quote(bad .. ".does-not-exist"))
    assert.not_equal(0, rc2)
    assert.matches("^volua: cannot open ", err2)
  end)

  it("exits non-zero when -e fails, without running what follows", function()
    local out, err, rc = run("-e " .. quote("error('first')") .. " -e " .. quote("print('second')"))
    assert.not_equal(0, rc)
    assert.equal("", out)
    assert.matches("^volua: %(command line%):1: first", err)
  end)
end)
