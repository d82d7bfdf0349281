-- pretty.lua: renders Lua values for the REPL: tables compact and elided (depth, items, lines,
-- cycles, sorted keys), tensors and other objects through tostring, strings quoted.
local M = {}

M.max_depth = 3    -- tables nested deeper print as {...}
M.max_items = 20   -- entries shown per table, then "... (+N)"
M.max_lines = 40   -- lines per value, then "... (N more lines)"
M.max_string = 400 -- characters of a string shown, then "..." and its length
M.width = 80       -- a table that fits in this many columns stays on one line

local keywords = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
            repeat return then true until while]]):gmatch("%a+") do keywords[w] = true end

local function is_identifier(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil and not keywords[s]
end
M.is_identifier = is_identifier

local escapes = {["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t"}

-- A one-line Lua literal for the string: "..." (or '...' when that avoids escapes).
function M.quote(s, limit)
  limit = limit or M.max_string
  local shown, cut = s, nil
  if #s > limit then shown, cut = s:sub(1, limit), #s end
  local q = (shown:find('"', 1, true) and not shown:find("'", 1, true)) and "'" or '"'
  local body = shown:gsub("[%c\\" .. q .. "]", function(c)
    return escapes[c] or (c == q and "\\" .. q) or string.format("\\%03d", c:byte())
  end)
  if cut then return q .. body .. q .. "... (" .. cut .. " bytes)" end
  return q .. body .. q
end

local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  if ok and type(s) == "string" then return s end
  return "<" .. type(v) .. ": __tostring failed: " .. tostring(s) .. ">"
end

-- Functions print under their documented name where help knows it (vol.conv3d).
M.function_name = function(f) return nil end

local function render_function(f)
  local name = M.function_name(f)
  if name then return "function: " .. name end
  local info = debug.getinfo(f, "S")
  if info and info.what == "Lua" and info.short_src then
    return "function: " .. info.short_src .. ":" .. tostring(info.linedefined)
  end
  return safe_tostring(f)
end

local function first_line(s, mark)
  local line = s:match("^[^\n]*")
  if mark and #line < #s then return line .. " ..." end
  return line
end

local type_order = {number = 1, string = 2, boolean = 3}

local function key_less(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    local oa, ob = type_order[ta] or 9, type_order[tb] or 9
    if oa ~= ob then return oa < ob end
    return ta < tb
  end
  if ta == "number" or ta == "string" then return a < b end
  if ta == "boolean" then return b and not a end
  return safe_tostring(a) < safe_tostring(b)
end

local render

local function render_key(k, seen, indent)
  if is_identifier(k) then return k .. " = " end
  if type(k) == "string" then return "[" .. M.quote(k, 40) .. "] = " end
  if type(k) == "number" then return "[" .. tostring(k) .. "] = " end
  return "[" .. first_line(render(k, indent, M.max_depth, seen, true), true) .. "] = "
end

local function render_table(t, indent, depth, seen)
  if seen[t] then return "<cycle>" end
  if next(t) == nil then return "{}" end
  if depth >= M.max_depth then return "{...}" end
  seen[t] = true
  local parts, n = {}, 0
  local array_len = 0
  while rawget(t, array_len + 1) ~= nil do array_len = array_len + 1 end
  local keys = {}
  for k in next, t do
    if not (type(k) == "number" and k >= 1 and k <= array_len and k % 1 == 0) then keys[#keys + 1] = k end
  end
  table.sort(keys, key_less)
  local total = array_len + #keys
  for i = 1, array_len do
    if n >= M.max_items then break end
    n = n + 1
    parts[n] = render(rawget(t, i), indent + 2, depth + 1, seen, true)
  end
  for _, k in ipairs(keys) do
    if n >= M.max_items then break end
    n = n + 1
    parts[n] = render_key(k, seen, indent + 2) .. render(rawget(t, k), indent + 2, depth + 1, seen, true)
  end
  local packable = {} -- array items and the elision mark share lines; keyed entries do not
  for i = 1, math.min(array_len, n) do packable[i] = true end
  if total > n then
    parts[n + 1] = "... (+" .. (total - n) .. ")"
    packable[n + 1] = true
  end
  seen[t] = nil
  local one = "{" .. table.concat(parts, ", ") .. "}"
  if not one:find("\n", 1, true) and indent + #one <= M.width then return one end
  local rows, row, row_packable = {}, nil, false
  for i, part in ipairs(parts) do
    local pack = packable[i] and not part:find("\n", 1, true)
    if row and pack and row_packable and indent + 2 + #row + 2 + #part <= M.width then
      row = row .. ", " .. part
    else
      if row then rows[#rows + 1] = row end
      row, row_packable = part, pack
    end
  end
  rows[#rows + 1] = row
  local pad = string.rep(" ", indent + 2)
  return "{\n" .. pad .. table.concat(rows, ",\n" .. pad) .. "\n" .. string.rep(" ", indent) .. "}"
end

-- nested: inside a table, where a multi-line tostring (a tensor's values) shows its first line.
function render(v, indent, depth, seen, nested)
  local tv = type(v)
  if tv == "string" then return M.quote(v, nested and 80 or nil) end
  if tv == "number" or tv == "boolean" or tv == "nil" then return tostring(v) end
  if tv == "function" then return render_function(v) end
  local mt = getmetatable(v)
  if type(mt) == "table" and rawget(mt, "__tostring") ~= nil or tv ~= "table" then
    local s = safe_tostring(v)
    if not nested then return s end
    if tv == "table" then return (s:gsub("\n", "\n" .. string.rep(" ", indent))) end -- an nn module
    return first_line(s) -- a tensor's first line is its summary
  end
  return render_table(v, indent, depth, seen)
end

-- At most max_lines lines, the last one saying how many were left out.
local function limit_lines(s)
  local count, cut = 0, nil
  for pos in s:gmatch("()\n") do
    count = count + 1
    if count == M.max_lines - 1 then cut = pos end
  end
  local lines = count + 1
  if lines <= M.max_lines then return s end
  return s:sub(1, cut) .. "... (" .. (lines - M.max_lines + 1) .. " more lines)"
end

-- One value as a string that never floods the terminal.
function M.format(v)
  return limit_lines(render(v, 0, 0, {}, false))
end

-- Several values (a command's results): tab-separated when they all fit on one line,
-- otherwise one per line.
function M.format_results(...)
  local n = select("#", ...)
  local out, multi, width = {}, false, 0
  for i = 1, n do
    out[i] = M.format((select(i, ...)))
    width = width + #out[i] + 1
    if out[i]:find("\n", 1, true) then multi = true end
  end
  if multi or width > M.width then return table.concat(out, "\n") end
  return table.concat(out, "\t")
end

return M
