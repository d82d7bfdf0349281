-- repl_spec.lua: the REPL. Its Lua parts (pretty printing, compiling, completion, help) are
-- called directly; then `volua -i` is fed piped input; then volua runs in a terminal (tmux on a
-- private socket, send-keys / capture-pane) for completion, printing, timing, Ctrl-C and
-- history. VOLUA=path tests another binary (the sanitizer build).
local vol = require "volua"
local pretty = require "volua.pretty"
local repl = require "volua.repl"
local help = require "volua.help"

local BIN = os.getenv("VOLUA") or "build/bin/volua"
local TIMEOUT = tonumber(os.getenv("VOLUA_SPEC_TIMEOUT") or "") or 20 -- seconds per wait

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function capture(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  return out
end

-- Wall-clock seconds (10 ms resolution): os.clock would not count the time spent waiting.
local function now()
  local f = io.open("/proc/uptime", "r")
  if not f then return os.time() end
  local t = f:read("*n")
  f:close()
  return t
end

local function sleep(s)
  os.execute("sleep " .. s)
end

-- -- pretty printing ----

describe("pretty", function()
  it("prints scalars and quotes strings on one line", function()
    assert.equal("42", pretty.format(42))
    assert.equal("1.5", pretty.format(1.5))
    assert.equal("nil", pretty.format(nil))
    assert.equal("true", pretty.format(true))
    assert.equal("'a\\nb\\t\"c\"'", pretty.format('a\nb\t"c"'))
    assert.equal('"it\'s \\"x\\""', pretty.format('it\'s "x"'))
    assert.equal("'say \"hi\"'", pretty.format('say "hi"'))
    assert.equal('"\\0001\\127"', pretty.format("\0" .. "1\127")) -- never "\01"
  end)

  it("elides long strings and says how long they were", function()
    local s = pretty.format(string.rep("x", 5000))
    assert.is_true(#s < 600)
    assert.matches("%.%.%. %(5000 bytes%)$", s)
  end)

  it("prints tables compactly: array part, then sorted keys, non-identifiers bracketed", function()
    assert.equal('{1, 2, 3, [10] = 0, a = "s", b = true, ["two words"] = 2}',
      pretty.format({1, 2, 3, a = "s", b = true, ["two words"] = 2, [10] = 0}))
    assert.equal("{}", pretty.format({}))
    assert.equal("{[1.5] = 1, [false] = 0, [true] = 1}", pretty.format({[1.5] = 1, [true] = 1, [false] = 0}))
  end)

  it("elides deep nesting, long tables and cycles", function()
    assert.equal("{a = {b = {c = {...}}}}", pretty.format({a = {b = {c = {d = 1}}}}))
    local long = {}
    for i = 1, 100 do long[i] = i end
    assert.equal("{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, ... (+80)}",
      (pretty.format(long):gsub("%s*\n%s*", " "):gsub("{ ", "{"):gsub(" }", "}")))
    assert.is_true(select(2, pretty.format(long):gsub("\n", "")) <= 3, "packed on few lines")
    local cyc = {name = "loop"}
    cyc.self = cyc
    assert.equal('{name = "loop", self = <cycle>}', pretty.format(cyc))
  end)

  it("breaks wide tables over lines and never floods the screen", function()
    local wide = {}
    for i = 1, 12 do wide["key_number_" .. i] = string.rep("v", 10) end
    local s = pretty.format(wide)
    assert.matches("^{\n  key_number_1 = \"vvvvvvvvvv\",\n", s)
    local huge = {}
    for i = 1, 20 do
      huge[i] = {}
      for j = 1, 20 do huge[i][j] = {string.rep("w", 30), string.rep("z", 30)} end
    end
    local h = pretty.format(huge)
    local lines = select(2, h:gsub("\n", "")) + 1
    assert.is_true(lines <= pretty.max_lines, "printed " .. lines .. " lines")
    assert.matches("%.%.%. %(%d+ more lines%)$", h)
  end)

  it("prints tensors through tostring, and only their first line inside a table", function()
    local t = vol.arange(6):reshape({2, 3})
    assert.equal(tostring(t), pretty.format(t))
    local s = pretty.format({t, 5})
    assert.equal("{" .. tostring(t):match("^[^\n]*") .. ", 5}", s)
    local big = pretty.format(vol.zeros({64, 64, 64}))
    assert.is_true(select(2, big:gsub("\n", "")) < pretty.max_lines)
  end)

  it("names documented functions and places Lua functions", function()
    pretty.function_name = help.name_of
    assert.equal("function: vol.conv3d", pretty.format(vol.conv3d))
    assert.equal("function: string.format", pretty.format(string.format))
    local f = loadstring("return function() end", "=typed")()
    assert.equal("function: typed:1", pretty.format(f))
  end)

  it("separates several results by tabs, or by newlines when one spans lines", function()
    assert.equal('1\t"two"\tnil', pretty.format_results(1, "two", nil))
    local t = vol.zeros({2, 2})
    assert.equal("1\n" .. tostring(t), pretty.format_results(1, t))
    assert.equal("", pretty.format_results())
  end)
end)

-- -- compiling typed lines ----

describe("repl.compile", function()
  it("turns expressions into printed results and statements into silent ones", function()
    local kind, f, show = repl.compile("1 + 1")
    assert.equal("ok", kind)
    assert.is_true(show)
    assert.equal(2, f())
    kind, f = repl.compile("compile_spec_global = 5")
    assert.equal("ok", kind)
    assert.equal(0, select("#", f()))
    assert.equal(5, rawget(_G, "compile_spec_global"))
    _G.compile_spec_global = nil
  end)

  it("keeps every result, nils included", function()
    local _, f = repl.compile("1, nil, 3, nil")
    assert.equal(4, select("#", f()))
  end)

  it("suppresses printing after a trailing ;", function()
    local kind, f, show = repl.compile("2 * 3;")
    assert.equal("ok", kind)
    assert.is_false(show)
    assert.equal(6, f())
  end)

  it("asks for more input when the chunk is unfinished, and reports real syntax errors", function()
    assert.equal("incomplete", (repl.compile("function f(a)")))
    assert.equal("incomplete", (repl.compile("{1,")))
    assert.equal("incomplete", (repl.compile("x = [[long")))
    assert.equal("ok", (repl.compile("function f(a)\nreturn a\nend")))
    local kind, err = repl.compile("x = = 1")
    assert.equal("error", kind)
    assert.matches("^stdin:1: unexpected symbol near '='", err)
    assert.equal("empty", (repl.compile("   ")))
  end)

  it("turns ?expr into help", function()
    local kind, _, show = repl.compile("?vol.conv3d")
    assert.equal("ok", kind)
    assert.is_false(show)
  end)

  it("formats errors: the message alone, a useful traceback, 'interrupted'", function()
    assert.equal("stdin:1: boom", repl.format_error("stdin:1: boom\nstack traceback:\n\t[C]: in function 'error'\n\tstdin:1: in function 'f'\n\t../lua/volua/repl.lua:120: in function <../lua/volua/repl.lua:118>\n\t[C]: at 0x1"))
    local deep = repl.format_error("stdin:1: deep\nstack traceback:\n\t[C]: in function 'error'\n\tstdin:1: in function 'g'\n\tstdin:1: in function 'f'\n\t../lua/volua/repl.lua:120: in function 'execute'")
    assert.equal("stdin:1: deep\nstack traceback:\n\t[C]: in function 'error'\n\tstdin:1: in function 'g'", deep)
    assert.equal("interrupted", repl.format_error("conv3d: interrupted\nstack traceback:\n\t[C]: in function 'conv3d'"))
    assert.equal("interrupted", repl.format_error("stdin:1: interrupted"))
    assert.equal("error object: {code = 1}", repl.format_error({code = 1}))
  end)

  it("formats times", function()
    assert.equal("(1.23 s)", repl.format_time(1.234))
    assert.equal("(12.3 s)", repl.format_time(12.34))
    assert.equal("(2 min 5 s)", repl.format_time(125))
  end)
end)

-- -- completion ----

describe("repl.complete", function()
  local saved = {}
  setup(function()
    saved.t, saved.nn_mod = rawget(_G, "spec_t"), rawget(_G, "spec_m")
    _G.spec_t = vol.rand({2, 3})
    _G.spec_nested = {inner = {leaf_one = 1, leaf_two = 2, _hidden = 3}}
  end)
  teardown(function()
    _G.spec_t, _G.spec_m, _G.spec_nested = saved.t, saved.nn_mod, nil
  end)

  it("completes module functions", function()
    local c = repl.complete("vol.conv", "vol.conv")
    assert.same({"vol.conv3d", "vol.conv3d_group_norm_mean", "vol.conv_transpose3d"}, c)
  end)

  it("completes tensor methods through the metatable's __methods, appending (", function()
    local c, append = repl.complete("spec_t:res", "spec_t:res")
    assert.same({"spec_t:reshape"}, c)
    assert.equal("(", append)
    local fields = repl.complete("spec_t.", "spec_t.")
    for _, want in ipairs {"spec_t.shape", "spec_t.dtype", "spec_t.device", "spec_t.reshape"} do
      assert.is_truthy(table.concat(fields, " "):find(want, 1, true), want)
    end
  end)

  it("completes nested tables, hiding _names unless asked", function()
    assert.same({"spec_nested.inner.leaf_one", "spec_nested.inner.leaf_two"},
      (repl.complete("spec_nested.inner.", "spec_nested.inner.")))
    assert.same({"spec_nested.inner._hidden"}, (repl.complete("spec_nested.inner._", "spec_nested.inner._")))
  end)

  it("completes globals and keywords, and string methods", function()
    local c = repl.complete("x = pri", "pri")
    assert.same({"print"}, c)
    local k, append = repl.complete("whi", "whi")
    assert.same({"while"}, k)
    assert.equal(" ", append)
    _G.spec_s = "text"
    assert.same({"spec_s:upper"}, (repl.complete("spec_s:up", "spec_s:up")))
    _G.spec_s = nil
  end)

  it("completes nn modules' methods through their class chain", function()
    local ok, nn = pcall(require, "volua.nn")
    if not ok then return pending("volua.nn is not built in") end
    _G.spec_m = nn.Conv3d(2, 4, 3)
    local c = repl.complete("spec_m:state", "spec_m:state")
    assert.is_truthy(table.concat(c, " "):find("spec_m:state_dict", 1, true))
    local f = repl.complete("spec_m.wei", "spec_m.wei")
    assert.same({"spec_m.weight"}, f)
  end)

  it("offers nothing inside strings or for unknown paths", function()
    assert.same({}, (repl.complete('print("vol.co', "vol.co")))
    assert.same({}, (repl.complete("no_such_global.x", "no_such_global.x")))
  end)
end)

-- -- help ----

-- The functions of ../shared/API.md (checked against the file itself when it is there).
local api_functions = {
  "vol.tensor", "vol.empty", "vol.zeros", "vol.ones", "vol.full", "vol.rand", "vol.randn",
  "vol.arange", "vol.max_abs_diff", "vol.allclose", "vol.load", "vol.save", "vol.load_safetensors",
  "vol.save_safetensors", "vol.max_pool3d", "vol.conv3d", "vol.conv_transpose3d", "vol.group_norm",
  "vol.mean", "vol.conv3d_group_norm_mean", "vol.cuda_available", "vol.default_device",
  "vol.set_default_device", "vol.sync", "vol.set_math", "vol.get_math",
  "Tensor:dim", "Tensor:numel", "Tensor:size", "Tensor:to", "Tensor:cpu", "Tensor:cuda",
  "Tensor:clone", "Tensor:contiguous", "Tensor:reshape", "Tensor:fill", "Tensor:copy",
  "Tensor:item", "Tensor:table", "Tensor:get", "Tensor:set", "Tensor:abs", "Tensor:relu",
  "Tensor:sum", "Tensor:max", "Tensor:min",
}

describe("help", function()
  local function help_text(...)
    return help.text(...)
  end

  it("has a text with a signature and an example for every API.md function", function()
    for _, name in ipairs(api_functions) do
      local text = help.texts[name]
      assert.is_not_nil(text, "no help text for " .. name)
      local short = name:gsub("^vol%.", ""):gsub("^Tensor:", "")
      assert.is_truthy(text:find(short .. "(", 1, true), name .. ": no signature")
      assert.is_truthy(text:find("Example:", 1, true), name .. ": no example")
    end
    local api = read_file(os.getenv("VOLUA_API_MD") or "../shared/API.md")
    if api then
      for name in api:gmatch("`(vol%.[%w_]+)%(") do
        assert.is_not_nil(help.texts[name], "API.md's " .. name .. " has no help text")
      end
      for name in api:gmatch("`t:([%w_]+)%(") do
        assert.is_not_nil(help.texts["Tensor:" .. name], "API.md's t:" .. name .. " has no help text")
      end
    end
  end)

  it("finds texts by function value, by name and for tensors", function()
    assert.matches("^vol%.conv3d%(x, weight", help_text(vol.conv3d))
    assert.matches("^vol%.conv3d%(x, weight", help_text("conv3d"))
    assert.matches("^vol%.conv3d%(x, weight", help_text(nil, "conv3d"))
    local t = vol.zeros({2})
    assert.matches("^t:reshape%(shape%)", help_text(t.reshape))
    assert.matches("^t:reshape%(shape%)", help_text(nil, "x:reshape"))
    local about = help_text(t)
    assert.matches("Methods", about)
    assert.matches("reshape", about)
    assert.matches("no help for 'nope_nothing': it is nil", help_text(nil, "nope_nothing"))
  end)

  it("lists topics with no argument", function()
    local topics = help.topics()
    for _, word in ipairs {"Tensors:", "Ops", "conv3d", "reshape", "load_safetensors", "repl"} do
      assert.is_truthy(topics:find(word, 1, true), word)
    end
  end)

  it("points standard functions to the Lua manual and places Lua functions", function()
    assert.matches("^string%.rep is a standard Lua function", help_text(string.rep))
    local f = loadstring("return function() end", "=typed")()
    assert.matches("a Lua function defined at typed:1", help_text(f, "f"))
  end)

  it("prints registered texts for a class and for its instances", function()
    local Class = {}
    Class.__index = Class
    local obj = setmetatable({}, Class)
    help.register(Class, "spec.Class(a, b)\n  A class for the spec.")
    assert.equal("spec.Class(a, b)\n  A class for the spec.", help_text(Class))
    assert.equal("spec.Class(a, b)\n  A class for the spec.", help_text(obj))
    assert.has_error(function() help.register(42, "x") end)
    local ok, nn = pcall(require, "volua.nn")
    if ok then assert.matches("^nn%.Conv3d%(", help_text(nn.Conv3d)) end
  end)
end)

-- -- volua -i with piped input ----

local temp_files = {}
local function temp(text)
  local path = os.tmpname()
  temp_files[#temp_files + 1] = path
  if text then write_file(path, text) end
  return path
end

local function run_piped(input, args)
  local inp, out, err = temp(input), temp(), temp()
  os.execute(string.format("%s %s < %s > %s 2> %s", quote(BIN), args or "-i", quote(inp), quote(out), quote(err)))
  return read_file(out), read_file(err)
end

describe("volua -i with piped input", function()
  teardown(function()
    for _, p in ipairs(temp_files) do os.remove(p) end
  end)

  it("prints expressions, nothing for statements or after ;, and no prompts or banner", function()
    local out, err = run_piped("6 * 7\nx = 5\nx + 1;\nx\n'str'\n{3 - 2, 2, k = 'v'}\n1, nil, 'three'\n")
    assert.equal("", err)
    assert.equal('42\n5\n"str"\n{1, 2, k = "v"}\n1\tnil\t"three"\n', out)
  end)

  it("continues unfinished chunks over lines", function()
    local out, err = run_piped("function twice(a)\n  return a * 2\nend\ntwice(21)\nt = {\n1,\n2}\n#t\n")
    assert.equal("", err)
    assert.equal("42\n2\n", out)
  end)

  it("prints errors to stderr and carries on with the session", function()
    local out, err = run_piped("keep = 41\nerror('boom')\nnil + 1\nx = = 2\nkeep + 1\n")
    assert.equal("42\n", out)
    assert.matches("^stdin:1: boom\n", err)
    assert.matches("\nstdin:1: attempt to perform arithmetic on a nil value\n", err)
    assert.matches("\nstdin:1: unexpected symbol near '='\n", err)
    assert.not_matches("stack traceback", err)
  end)

  it("shows a traceback when the error comes from deeper than the typed line", function()
    local _, err = run_piped("local function inner() error('deep') end inner()\n")
    assert.matches("^stdin:1: deep\nstack traceback:\n", err)
    assert.matches("in function 'inner'", err)
    assert.not_matches("repl%.lua", err)
  end)

  it("prints help for ?name and help(f), and topics for help()", function()
    local out, err = run_piped("?vol.conv3d\nhelp(vol.max_pool3d)\nhelp()\n?conv_transpose3d\n")
    assert.equal("", err)
    assert.matches("^vol%.conv3d%(x, weight %[, bias%]", out)
    assert.matches("\nvol%.max_pool3d%(x, {kernel_size=", out)
    assert.matches("\nTensors:\n", out)
    assert.matches("\nvol%.conv_transpose3d%(x, weight", out)
  end)

  it("shows no timing lines, whatever a command takes", function()
    local out = run_piped("local t0 = os.clock() while os.clock() - t0 < 0.2 do end\nprint('done')\n")
    assert.equal("done\n", out)
  end)

  it("reports an unfinished chunk at the end of input", function()
    local _, err = run_piped("for i = 1, 3 do\n")
    assert.matches("'end' expected", err)
  end)
end)

-- -- in a terminal: tmux on a private socket ----

local tmux_ok = os.execute("tmux -V > /dev/null 2>&1")
tmux_ok = tmux_ok == 0 or tmux_ok == true

local function pid()
  local f = io.open("/proc/self/stat", "r")
  local n = f and f:read("*n")
  if f then f:close() end
  return n or math.random(1, 1e9)
end

-- capture-pane drops trailing blanks: an empty prompt line reads ">" (or ">>").
local PROMPT = "\n> ?\n"
local CONTINUE = "\n>> ?\n"

describe("the REPL in a terminal", function()
  local socket = "volua_spec_" .. pid()
  local TMUX = "tmux -L " .. socket .. " -f /dev/null"
  local bin, cwd, socket_path
  local sessions = 0
  local history = os.tmpname()

  local function tmux(args)
    return capture(TMUX .. " " .. args)
  end

  setup(function()
    assert(tmux_ok, "tmux is needed for the terminal specs (apt-get install tmux)")
    cwd = capture("pwd"):gsub("\n$", "")
    bin = BIN:sub(1, 1) == "/" and BIN or (cwd .. "/" .. BIN)
    -- a session that outlives the tests keeps the server up; dead panes stay readable
    tmux("new-session -d -s keeper -x 80 -y 10 'sleep 3600'")
    tmux("set-option -g remain-on-exit on")
    tmux("set-option -g history-limit 5000")
    socket_path = tmux("display-message -p -t keeper '#{socket_path}'"):gsub("\n$", "")
  end)

  teardown(function()
    capture(TMUX .. " kill-server")
    if socket_path and socket_path:find(socket, 1, true) then os.remove(socket_path) end
    os.remove(history)
  end)

  -- Starts volua in a fresh 160x50 terminal; returns its session name.
  -- Starts volua in a fresh 160x50 terminal; returns its session name. The shell around it
  -- reports how volua ended as "[volua exited N]" (a dead pane's own status is not always known).
  local function start(env)
    sessions = sessions + 1
    local name = "s" .. sessions
    local cmd = string.format("env VOLUA_HISTORY=%s %s; echo \"[volua exited $?]\"",
      quote(env and env.history or history), quote(bin))
    tmux(string.format("new-session -d -s %s -x 160 -y 50 -c %s %s", name, quote(cwd), quote(cmd)))
    return name
  end

  local function screen(name)
    return tmux("capture-pane -p -J -S -1000 -t " .. name)
  end

  -- Polls the screen until it matches the Lua pattern; returns the screen and the time waited.
  local function wait_for(name, pattern, timeout)
    local t0 = now()
    local s
    repeat
      s = screen(name)
      if s:find(pattern) then return s, now() - t0 end
      sleep(0.05)
    until now() - t0 > (timeout or TIMEOUT)
    error("timed out waiting for " .. string.format("%q", pattern) .. "; the screen was:\n" .. s, 2)
  end

  local function keys(name, ...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = quote((select(i, ...))) end
    tmux("send-keys -t " .. name .. " " .. table.concat(parts, " "))
  end

  -- Waits until the REPL shows an empty prompt: keys typed earlier would be echoed by the
  -- terminal (typeahead) and show twice on the screen.
  local function wait_ready(name)
    local t0 = now()
    repeat
      local last = screen(name):gsub("%s+$", ""):match("([^\n]*)$")
      if last == ">" or last == ">>" then return end
      sleep(0.05)
    until now() - t0 > TIMEOUT
    error("timed out waiting for a prompt; the screen was:\n" .. screen(name), 2)
  end

  -- Types text (and Enter) on the current line.
  local function finish_line(name, text)
    -- tmux reads a ";" ending an argument as a command separator unless escaped
    tmux("send-keys -t " .. name .. " -l " .. quote((text:gsub(";$", "\\;"))))
    keys(name, "Enter")
  end

  local function type_line(name, text)
    wait_ready(name)
    finish_line(name, text)
  end

  local function stop(name)
    tmux("kill-session -t " .. name)
  end

  -- The screen after the last line containing marker.
  local function after(s, marker)
    local pos, last = 1, nil
    while true do
      local i = s:find(marker, pos, true)
      if not i then break end
      last, pos = i, i + 1
    end
    return last and s:sub(last) or ""
  end

  it("starts with a banner naming the version and the device", function()
    local s = start()
    local text = wait_for(s, PROMPT)
    assert.matches("volua %d+%.%d+", text)
    assert.is_truthy(text:find("GPU: ", 1, true) or text:find("CPU only (", 1, true))
    stop(s)
  end)

  it("lists completions on Tab Tab and completes tensor methods", function()
    local s = start()
    wait_for(s, PROMPT)
    type_line(s, "x = vol.rand({2, 3})")
    keys(s, "vol.conv", "Tab", "Tab")
    local text = wait_for(s, "conv_transpose3d")
    assert.matches("\nconv3d%s", text) -- listed by last name
    keys(s, "C-u")
    keys(s, "x:res", "Tab")
    wait_for(s, "> x:reshape%(")
    finish_line(s, "{3, 2})") -- the completed text is real input
    wait_for(s, "cpu %(3, 2%)")
    stop(s)
  end)

  it("prints results, hides them after ;, continues lines and survives errors", function()
    local s = start()
    wait_for(s, PROMPT)
    type_line(s, "{3 - 2, 2, x = 's'}")
    wait_for(s, '\n{1, 2, x = "s"}\n')
    type_line(s, "123456789 + 1;")
    type_line(s, "print('MARK' .. 'ER1')")
    local text = wait_for(s, "\nMARKER1\n")
    assert.is_nil(text:find("123456790", 1, true))
    type_line(s, "function twice(a)")
    wait_for(s, CONTINUE)
    type_line(s, "return a * 2")
    type_line(s, "end")
    type_line(s, "twice(1000 + 500)")
    wait_for(s, "\n3000\n")
    type_line(s, "error('bo' .. 'om')")
    wait_for(s, "stdin:1: boom\n")
    type_line(s, "twice(2 + 2)")
    wait_for(s, "\n8\n")
    stop(s)
  end)

  it("prints help for ?vol.conv3d", function()
    local s = start()
    wait_for(s, PROMPT)
    type_line(s, "?vol.conv3d")
    wait_for(s, "As torch%.nn%.functional%.conv3d")
    type_line(s, "help(vol.group_norm)")
    wait_for(s, "As torch%.nn%.functional%.group_norm")
    stop(s)
  end)

  it("shows the time of a slow command, and none for a quick one", function()
    local s = start()
    wait_for(s, PROMPT)
    type_line(s, "print('QUI' .. 'CK')")
    wait_for(s, "\nQUICK\n>")
    type_line(s, "local t0 = os.clock() while os.clock() - t0 < 0.3 do end")
    local text = wait_for(s, "\n%(%d+%.%d+ s%)\n")
    local shown = tonumber(text:match("\n%((%d+%.%d+) s%)\n"))
    assert.is_true(shown >= 0.3 and shown < 5, "shown " .. tostring(shown))
    assert.matches("^QUICK\n> ", after(text, "QUICK")) -- no time shown after the quick one
    stop(s)
  end)

  it("interrupts an endless Lua loop with Ctrl-C and keeps the session", function()
    local s = start()
    wait_for(s, PROMPT)
    type_line(s, "keep = 41")
    type_line(s, "io.write('LOO' .. 'PING\\n') while true do end")
    wait_for(s, "\nLOOPING\n")
    sleep(0.2)
    keys(s, "C-c")
    local _, waited = wait_for(s, "\ninterrupted" .. PROMPT, 5)
    assert.is_true(waited < 5)
    type_line(s, "keep + 1")
    wait_for(s, "\n42\n")
    assert.is_nil(screen(s):find("[volua exited", 1, true))
    stop(s)
  end)

  it("interrupts a long C op (conv3d) with Ctrl-C and keeps the session", function()
    local s = start()
    wait_for(s, PROMPT)
    type_line(s, "keep = 41; x = vol.rand({1, 32, 96, 96, 96}); w = vol.rand({32, 32, 7, 7, 7})")
    type_line(s, "io.write('CONV' .. 'OLVING\\n'); y = vol.conv3d(x, w)")
    wait_for(s, "\nCONVOLVING\n")
    sleep(0.5)
    local t0 = now()
    keys(s, "C-c")
    wait_for(s, "\ninterrupted" .. PROMPT, 10)
    assert.is_true(now() - t0 < 10)
    type_line(s, "keep + 1, y")
    wait_for(s, "\n42%s+nil\n") -- y never got the (interrupted) result
    stop(s)
  end)

  it("interrupts repeated allocations in a Lua loop", function()
    local s = start()
    wait_for(s, PROMPT)
    type_line(s, "io.write('ALLO' .. 'CATING\\n'); for i = 1, 1e9 do local r = vol.rand({64, 64, 64}) end")
    wait_for(s, "\nALLOCATING\n")
    sleep(0.3)
    keys(s, "C-c")
    wait_for(s, "\ninterrupted" .. PROMPT, 10)
    type_line(s, "print('STILL' .. 'HERE')")
    wait_for(s, "\nSTILLHERE\n")
    stop(s)
  end)

  it("clears the line on Ctrl-C at the prompt and at a continuation prompt", function()
    local s = start()
    wait_for(s, PROMPT)
    keys(s, "half_typed_garbage")
    wait_for(s, "> half_typed_garbage")
    keys(s, "C-c")
    wait_for(s, "half_typed_garbage%^C" .. PROMPT)
    type_line(s, "print('AF' .. 'TER')")
    local text = wait_for(s, "\nAFTER\n")
    assert.is_nil(text:find("unexpected symbol", 1, true))
    type_line(s, "for i = 1, 2 do")
    wait_for(s, CONTINUE)
    keys(s, "C-c")
    wait_for(s, "\n>> %^C" .. PROMPT)
    type_line(s, "print('BA' .. 'CK')")
    text = wait_for(s, "\nBACK\n")
    assert.is_nil(text:find("'end' expected", 1, true))
    assert.is_nil(screen(s):find("[volua exited", 1, true))
    stop(s)
  end)

  it("keeps history across sessions", function()
    local file = os.tmpname()
    os.remove(file)
    local s1 = start({history = file})
    wait_for(s1, PROMPT)
    type_line(s1, "hist_marker = 4711")
    type_line(s1, "print('SA' .. 'VED')")
    wait_for(s1, "\nSAVED\n")
    keys(s1, "C-d")
    wait_for(s1, "\n%[volua exited 0%]\n")
    stop(s1)
    local saved = read_file(file) or ""
    assert.matches("hist_marker = 4711\n", saved)
    local s2 = start({history = file})
    wait_for(s2, PROMPT)
    keys(s2, "Up", "Up")
    wait_for(s2, "\n> hist_marker = 4711")
    keys(s2, "Enter")
    type_line(s2, "hist_marker + 1")
    wait_for(s2, "\n4712\n")
    stop(s2)
    os.remove(file)
  end)
end)
