-- repl.lua: the Lua half of volua's REPL (src/repl.c reads the lines and calls in here):
-- compiles what was typed (an expression is printed, a trailing ";" hides it, "?name" asks for
-- help), runs it with the JIT off so that Ctrl-C can stop any loop, prints results, errors and
-- timings, and completes names for the Tab key.
local vol = require "volua"
local pretty = require "volua.pretty"
local help = require "volua.help"

local M = {}

-- At a terminal, commands taking at least this many seconds show their time, e.g. "(1.23 s)";
-- 0 shows it always, false never. Piped input (volua -i < file) never shows it, so that its
-- output does not depend on the machine's speed.
M.time_threshold = 0.1

-- Set by repl.c: now() (monotonic seconds), screen_width(), interactive (stdin is a
-- terminal), color (dim the timing line). Defaults for using this module without it:
M.now = os.clock
M.screen_width = function() return 80 end
M.interactive = false
M.color = false

local write = function(...) io.stdout:write(...) end

-- -- the banner ----

function M.banner()
  local device
  if type(vol.cuda_info) == "function" then
    local ok, name, reason = pcall(vol.cuda_info)
    if ok and name then device = "GPU: " .. tostring(name)
    else device = "CPU only (" .. tostring(ok and reason or name or "no GPU") .. ")" end
  elseif type(vol.cuda_available) == "function" and vol.cuda_available() then
    device = "GPU"
  else
    device = "CPU only"
  end
  return string.format("%s (%s) -- %s\n%s", vol._VERSION or "volua", jit and jit.version or _VERSION,
    device, "help() lists topics, ?vol.conv3d shows a function's doc, Tab completes, Ctrl-D quits.")
end

function M.start()
  rawset(_G, "help", help.help)
  pretty.function_name = help.name_of
  if M.interactive then write(M.banner(), "\n") end
end

-- -- compiling what was typed ----

local CHUNK = "=stdin"

-- A syntax error that more input could fix: the parser met the end of the chunk.
local function is_incomplete(err)
  return type(err) == "string" and err:sub(-7) == "'<eof>'"
end

-- "?expr" -> a function printing the help of expr (by value, or by name when it is not one).
local function help_command(expr)
  expr = expr:gsub("^%s+", ""):gsub("%s+$", "")
  if expr == "" then return function() help.help() end end
  local path = expr:gsub(":([%a_][%w_]*)$", ".%1") -- ?x:reshape looks up x.reshape
  local get = loadstring("return " .. path, CHUNK)
  return function()
    local v
    if get then
      local ok, r = pcall(get)
      if ok then v = r end
    end
    help.help(v, expr)
  end
end

-- Returns "empty", "incomplete", "error", message or "ok", function, show_results.
function M.compile(buf)
  if buf:match("^%s*$") then return "empty" end
  local q = buf:match("^%s*%?(.*)$")
  if q then return "ok", help_command(q), false end
  local src = buf:gsub("^%s*=", "", 1) -- Lua 5.1's "=expr" still works
  local show = not src:match(";%s*$")
  -- select(1, ...) keeps every result, and keeps error("x") from being a tail call (which
  -- would blame this module rather than stdin:1).
  local f = loadstring("return select(1, " .. src:gsub(";%s*$", "") .. "\n)", CHUNK)
  if not f then
    local err_stmt
    f, err_stmt = loadstring(src, CHUNK)
    if not f then
      local _, err_expr = loadstring("return " .. src, CHUNK)
      if is_incomplete(err_stmt) or is_incomplete(err_expr) then return "incomplete" end
      return "error", err_stmt
    end
  end
  -- LuaJIT runs no hooks inside compiled traces: with the JIT off for what was typed (and the
  -- functions defined in it), the Ctrl-C hook stops even `while true do end`.
  if jit and jit.off then jit.off(f, true) end
  return "ok", f, show
end

-- -- running and printing ----

local function format_time(dt)
  if dt < 10 then return string.format("(%.2f s)", dt) end
  if dt < 60 then return string.format("(%.1f s)", dt) end
  return string.format("(%d min %.0f s)", math.floor(dt / 60), dt % 60)
end
M.format_time = format_time

-- Once the GPU has been used (it has allocated), commands are timed up to vol.sync(); before
-- that, syncing would only start CUDA for nothing.
local function gpu_in_use()
  if type(vol.cuda_available) ~= "function" or type(vol.sync) ~= "function" then return false end
  if not vol.cuda_available() then return false end
  if type(vol.memory_stats) ~= "function" then return true end
  local stats = vol.memory_stats()
  return type(stats) == "table" and (stats.num_mallocs or 1) > 0
end

local function finish(t0, show, ...)
  if gpu_in_use() then vol.sync() end -- time the GPU work too, not only its queueing
  local dt = M.now() - t0
  M.last_time = dt
  if show and select("#", ...) > 0 then
    pretty.width = M.screen_width()
    write(pretty.format_results(...), "\n")
  end
  local threshold = M.time_threshold
  if threshold and M.interactive and dt >= threshold then
    local s = format_time(dt)
    write(M.color and ("\27[2m" .. s .. "\27[0m") or s, "\n")
  end
end

-- Runs a compiled command and prints what it returned (when show) and its time.
function M.execute(f, show)
  local t0 = M.now()
  return finish(t0, show, f())
end

-- What repl.c calls for each line (buf holds every line of the command so far); returns true
-- when the command is incomplete and needs another line.
function M.eval(buf)
  local kind, a, b = M.compile(buf)
  if kind == "incomplete" then return true end
  if kind == "error" then M.show_error(a) return false end
  if kind == "ok" then M.execute(a, b) end
  return false
end

-- End of piped input in the middle of a command: report why it is not complete.
function M.finish_incomplete(buf)
  local _, err = loadstring(buf, CHUNK)
  M.show_error(err or "incomplete command at the end of input")
end

-- -- errors ----

local function is_repl_frame(line)
  return line:find("volua/repl.lua", 1, true) or line:find("volua.repl", 1, true)
end

-- The message, with the traceback only when it says more than where the typed line failed
-- (frames of this module and below are dropped); Ctrl-C shows as "interrupted".
function M.format_error(err)
  if type(err) ~= "string" then return "error object: " .. pretty.format(err) end
  local msg, tb = err:match("^(.-)\nstack traceback:\n(.*)$")
  msg = msg or err
  if msg:match("interrupted$") then return "interrupted" end
  if not tb then return msg end
  local keep, telling = {}, false
  for line in tb:gmatch("[^\n]+") do
    if is_repl_frame(line) then break end
    keep[#keep + 1] = line
  end
  -- the last frame left is the typed command itself: the message already says where
  if keep[#keep] and keep[#keep]:match("^%s*stdin:%d+:") then keep[#keep] = nil end
  for _, line in ipairs(keep) do
    if not (line:match("^%s*%[C%]: in function '[%w_.]+'$") or line:match("^%s*%(tail call%)")) then
      telling = true
    end
  end
  if not telling then return msg end
  return msg .. "\nstack traceback:\n" .. table.concat(keep, "\n")
end

function M.show_error(err)
  io.stdout:flush()
  local s = M.format_error(err)
  if M.interactive and s == "interrupted" then s = "\n" .. s end -- after the terminal's ^C
  io.stderr:write(s, "\n")
  io.stderr:flush()
end

-- -- completion ----

local keywords = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
                  "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true",
                  "until", "while"}

-- Fields that tensors answer through their C __index but that no table lists.
local probe_fields = {"shape", "dtype", "device"}

local function safe_index(v, k)
  local ok, r = pcall(function() return v[k] end)
  if ok then return r end
  return nil
end

-- Adds the string keys reachable from v (its own, then through metatables: __methods tables,
-- __index tables and their metatables in turn) to out, the first value seen winning.
local function collect(v, out, seen)
  if v == nil or seen[v] then return end
  seen[v] = true
  if type(v) == "table" then
    for k, val in next, v do
      if type(k) == "string" and out[k] == nil then out[k] = val end
    end
  end
  local mt = debug.getmetatable(v)
  if type(mt) ~= "table" then return end
  local methods = rawget(mt, "__methods")
  if type(methods) == "table" then collect(methods, out, seen) end
  local idx = rawget(mt, "__index")
  if type(idx) == "table" then
    collect(idx, out, seen)
  elseif idx ~= nil and type(v) == "userdata" then
    for _, k in ipairs(probe_fields) do
      if out[k] == nil then
        local r = safe_index(v, k)
        if r ~= nil then out[k] = r end
      end
    end
  end
end

-- The value a dotted path of names stands for ("vol", "vol.Tensor", "m.conv"), or nil.
local function resolve(path)
  if not path:match("^[%a_][%w_]*$") and not path:match("^[%a_][%w_]*[%.%w_]*[%w_]$") then return nil end
  local v = _G
  for name in path:gmatch("[^.]+") do
    if not name:match("^[%a_][%w_]*$") then return nil end
    v = safe_index(v, name)
    if v == nil then return nil end
  end
  return v
end

-- Inside an unclosed string literal (or a comment), nothing is completed.
local function in_string(line)
  local quote, i = nil, 1
  while i <= #line do
    local c = line:sub(i, i)
    if quote then
      if c == "\\" then i = i + 1 elseif c == quote then quote = nil end
    elseif c == '"' or c == "'" then
      quote = c
    elseif line:sub(i, i + 1) == "--" or line:sub(i, i + 1) == "[[" then
      return true
    end
    i = i + 1
  end
  return quote ~= nil
end

local function is_callable(v)
  if type(v) == "function" then return true end
  local mt = debug.getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

-- line: the text before the cursor; word: the part readline will replace ("vol.conv",
-- "x:res", "pri"). Returns the sorted full candidates and the character to append after a
-- single one ("(" after a function, " " after a keyword, "" otherwise).
function M.complete(line, word)
  if in_string(line) then return {}, "" end
  local path, sep, prefix = word:match("^(.-)([.:])([%w_]*)$")
  local fields, names = {}, {}
  if path then
    local obj = resolve(path)
    if obj == nil then return {}, "" end
    collect(obj, fields, {})
  else
    prefix = word
    if not prefix:match("^[%w_]*$") then return {}, "" end
    collect(_G, fields, {})
    for _, k in ipairs(keywords) do if fields[k] == nil then fields[k] = keywords end end
  end
  local show_private = prefix:sub(1, 1) == "_"
  for k, v in pairs(fields) do
    if k:sub(1, #prefix) == prefix and pretty.is_identifier(k) or (v == keywords and k:sub(1, #prefix) == prefix) then
      if (show_private or not k:match("^_")) and (sep ~= ":" or is_callable(v)) then
        names[#names + 1] = k
      end
    end
  end
  table.sort(names)
  local out = {}
  for i, k in ipairs(names) do out[i] = path and (path .. sep .. k) or k end
  local append = ""
  if #names == 1 then
    local v = fields[names[1]]
    if v == keywords then append = " " elseif is_callable(v) then append = "(" end
  end
  return out, append
end

return M
