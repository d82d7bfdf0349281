-- io_spec.lua: .npy and safetensors files: round trips, files numpy and the safetensors
-- package wrote (spec/fixtures, made by make_fixtures.py), every malformed family, and the
-- golden files. Run from the repository root.
local vol = require "volua"

local FIX = "spec/fixtures/"
local GOLDEN = os.getenv("VOLUA_GOLDEN") or "../shared/golden"
local CHECK_DIR = os.getenv("VOLUA_IO_CHECK_DIR") -- make_fixtures.py --check reads what lands here

-- -- helpers ----

local temps = {}
local function tmp(suffix)
  local p = os.tmpname()
  os.remove(p)
  p = p .. suffix
  temps[#temps + 1] = p
  return p
end

local function read_bytes(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function write_bytes(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
  return path
end

-- the error a call raises (it must raise one)
local function error_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error, got none")
  return tostring(err)
end

local function u16le(n) return string.char(n % 256, math.floor(n / 256) % 256) end
local function u32le(n) return u16le(n % 65536) .. u16le(math.floor(n / 65536)) end
local function u64le(n) return u32le(n % 4294967296) .. u32le(math.floor(n / 4294967296)) end

-- An .npy file with the given header dictionary, padded as numpy pads it.
local function npy(dict, data, version)
  version = version or 1
  local pre = version == 1 and 10 or 12
  local pad = (64 - (pre + #dict + 1) % 64) % 64
  local header = dict .. string.rep(" ", pad) .. "\n"
  local len = version == 1 and u16le(#header) or u32le(#header)
  return "\147NUMPY" .. string.char(version, 0) .. len .. header .. (data or "")
end

local function dict(descr, fortran, shape)
  return string.format("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, fortran, shape)
end

-- The raw little-endian bytes of a tensor, as volua writes them after a 128-byte header.
local function raw(t)
  local p = tmp(".npy")
  vol.save(p, t)
  local s = read_bytes(p)
  local hlen = s:byte(9) + 256 * s:byte(10)
  return s:sub(11 + hlen)
end

-- A safetensors file from header text and data bytes; the header is padded to 8 bytes.
local function st(header, data, nopad)
  if not nopad then header = header .. string.rep(" ", (8 - #header % 8) % 8) end
  return u64le(#header) .. header .. (data or "")
end

local function entry(name, dtype, shape, b, e)
  return string.format('"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}', name, dtype, shape, b, e)
end

local function same(a, b)
  assert.same(a.shape, b.shape)
  assert.equal(a.dtype, b.dtype)
  assert.equal(0, a:numel() == 0 and 0 or vol.max_abs_diff(a, b))
end

local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

-- The values make_fixtures.py wrote (keep in step).
local F8 = {0.1, 1 / 3, -2.5, 1e-40, 3e38, -1e300, 1e-50, 7.0}
local I4 = {{-2147483648, -1}, {0, 2147483647}}
local I8 = {0, 1, -1, 2 ^ 53, -(2 ^ 62), -(2 ^ 63)}
local function f4_2x3() return vol.tensor({{-1, -0.5, 0}, {0.5, 1, 1.5}}) end
local function f4_5d()
  return (vol.arange(12) - 6):reshape({1, 2, 1, 3, 2})
end

teardown(function()
  for _, p in ipairs(temps) do os.remove(p) end
end)

-- -- .npy ----

describe("vol.load reads what numpy wrote", function()
  it("float32 (2, 3), format 1.0, 2.0 and 3.0", function()
    for _, f in ipairs({"f4_2x3.npy", "f4_v2.npy", "f4_v3.npy"}) do
      local t = vol.load(FIX .. f)
      assert.equal("float32", t.dtype)
      assert.equal("cpu", t.device)
      assert.same({2, 3}, t.shape)
      assert.same({{-1, -0.5, 0}, {0.5, 1, 1.5}}, t:table())
    end
  end)

  it("float64 as float32, rounding each value once", function()
    local t = vol.load(FIX .. "f8_8.npy")
    assert.equal("float32", t.dtype)
    assert.same({8}, t.shape)
    local want = vol.tensor(F8)
    for i = 1, 8 do assert.equal(want:get(i), t:get(i)) end
    assert.is_true(t:get(1) ~= 0.1 and math.abs(t:get(1) - 0.1) < 1e-8) -- rounded to float32
    assert.equal(-math.huge, t:get(6)) -- -1e300 overflows float32
    assert.equal(0, t:get(7))          -- 1e-50 underflows
    assert.is_true(t:get(4) > 0 and t:get(4) < 1.2e-38) -- a subnormal survives
  end)

  it("int32 and int64 as int64, extremes included", function()
    local a = vol.load(FIX .. "i4_2x2.npy")
    assert.equal("int64", a.dtype)
    assert.same(I4, a:table())
    for _, f in ipairs({"i8_6.npy", "i8_v2.npy"}) do
      local b = vol.load(FIX .. f)
      assert.equal("int64", b.dtype)
      assert.same(I8, b:table())
    end
  end)

  it("0-d, zero-size and 5-d arrays", function()
    local s = vol.load(FIX .. "f4_scalar.npy")
    assert.equal(0, s:dim())
    assert.same({}, s.shape)
    assert.equal(1, s:numel())
    assert.equal(3.5, s:item())
    local i = vol.load(FIX .. "i8_scalar.npy")
    assert.equal("int64", i.dtype)
    assert.equal(-7, i:item())
    local z = vol.load(FIX .. "f4_0x3.npy")
    assert.same({0, 3}, z.shape)
    assert.equal(0, z:numel())
    local f = vol.load(FIX .. "f4_5d.npy")
    assert.same({1, 2, 1, 3, 2}, f.shape)
    same(f4_5d(), f)
  end)

  it("accepts what numpy's own reader accepts: quotes, Python 2 sizes, padding", function()
    local data = raw(vol.tensor({1, 2, 3}))
    local variants = {
      npy('{"descr": "<f4", "fortran_order": False, "shape": (3,)}', data),
      npy("{'shape': (3L,), 'fortran_order': False, 'descr': '<f4'}", data),
      npy("{ 'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 3 , ) , }", data),
      npy(dict("<f4", "True", "(3,)"), data), -- 1-d: column- and row-major agree
      npy(dict("<f4", "False", "(3,)"), data, 2),
    }
    for _, bytes in ipairs(variants) do
      local t = vol.load(write_bytes(tmp(".npy"), bytes))
      assert.same({1, 2, 3}, t:table())
    end
    local t = vol.load(write_bytes(tmp(".npy"), npy(dict("<f4", "True", "(1, 3, 1)"), data)))
    assert.same({{{1}, {2}, {3}}}, t:table())
  end)
end)

describe("vol.save", function()
  it("round-trips float32 and int64 of many shapes", function()
    local cases = {
      vol.rand({2, 3, 4}, {seed = 1}),
      vol.arange(24, {dtype = "int64"}):reshape({2, 3, 4}) * 1000000007,
      vol.tensor(2.5),
      vol.tensor(-3, {dtype = "int64"}),
      vol.zeros({0, 3}),
      vol.zeros({2, 0, 4}, {dtype = "int64"}),
      vol.empty({0}),
      vol.rand({1, 2, 1, 1, 2, 1, 1, 2}, {seed = 2}),
      vol.rand({1000}, {seed = 3}),
    }
    for _, t in ipairs(cases) do
      local p = tmp(".npy")
      vol.save(p, t)
      same(t, vol.load(p))
    end
  end)

  it("writes bit-exact floats: NaN, infinities, -0, subnormals", function()
    local t = vol.tensor({0 / 0, math.huge, -math.huge, -0.0, 1e-45, 3.4028234e38})
    local p, q = tmp(".npy"), tmp(".npy")
    vol.save(p, t)
    local u = vol.load(p)
    vol.save(q, u)
    assert.equal(read_bytes(p), read_bytes(q))
    assert.is_true(u:get(1) ~= u:get(1))
    assert.equal(math.huge, u:get(2))
    assert.equal(-math.huge, 1 / u:get(4)) -- -0 keeps its sign
  end)

  it("writes the same bytes as numpy's np.save", function()
    local cases = {
      ["f4_2x3.npy"] = f4_2x3(),
      ["i8_6.npy"] = vol.tensor(I8, {dtype = "int64"}),
      ["f4_scalar.npy"] = vol.tensor(3.5),
      ["i8_scalar.npy"] = vol.tensor(-7, {dtype = "int64"}),
      ["f4_0x3.npy"] = vol.zeros({0, 3}),
      ["f4_5d.npy"] = f4_5d(),
    }
    for name, t in pairs(cases) do
      local p = tmp(".npy")
      vol.save(p, t)
      assert.equal(read_bytes(FIX .. name), read_bytes(p), name)
      if CHECK_DIR then vol.save(CHECK_DIR .. "/rt_" .. name, t) end
    end
  end)

  it("pads the header so the data starts at a multiple of 64", function()
    for _, shape in ipairs({{}, {7}, {123456789012, 0}, {1, 1, 1, 1, 1, 1, 1, 1}}) do
      local p = tmp(".npy")
      vol.save(p, vol.zeros(shape))
      local s = read_bytes(p)
      local hlen = s:byte(9) + 256 * s:byte(10)
      assert.equal(0, (10 + hlen) % 64)
      assert.equal("\n", s:sub(10 + hlen, 10 + hlen))
    end
  end)

  it("raises clear errors", function()
    assert.matches("^save: path must be a string, got number", error_of(vol.save, 1, vol.zeros({1})))
    assert.matches("^save: tensor must be a tensor, got no value", error_of(vol.save, tmp(".npy")))
    assert.matches("^save: /nonexistent/dir/x.npy: cannot open for writing: No such file",
                   error_of(vol.save, "/nonexistent/dir/x.npy", vol.zeros({1})))
  end)
end)

describe("vol.load refuses malformed .npy files", function()
  local good = read_bytes(FIX .. "f4_2x3.npy") -- 128-byte header, 24 bytes of data
  local data = good:sub(129)
  local function load_bytes(bytes)
    return error_of(vol.load, write_bytes(tmp(".npy"), bytes))
  end
  local cases = {
    {"empty file", "", "not a .npy file"},
    {"not an npy file", "hello, world", "not a .npy file"},
    {"magic only", good:sub(1, 8), "truncated header: the file is only 8 bytes"},
    {"truncated header", good:sub(1, 40), "truncated header: it says it is 118 bytes long but the file has 30"},
    {"header length past the end", good:sub(1, 8) .. u16le(65000) .. good:sub(11), "truncated header: it says it is 65000"},
    {"header length too short", good:sub(1, 8) .. u16le(30) .. good:sub(11), "bad header"},
    {"header length too long", good:sub(1, 8) .. u16le(122) .. good:sub(11), "only padding after the header dictionary at byte 130"},
    {"huge v2 header length", good:sub(1, 6) .. "\2\0" .. u32le(4294967295) .. good:sub(11), "header length 4294967295 is over the limit"},
    {"version 9.0", good:sub(1, 6) .. "\9\0" .. good:sub(9), "unsupported .npy format version 9.0"},
    {"data truncated", good:sub(1, -5), "data is truncated: shape %(2, 3%) needs 24 bytes but the file has 20"},
    {"data too long", good .. "\0\0\0\0", "the file has 28 bytes after the header but shape %(2, 3%) needs 24"},
    {"shape larger than the file", npy(dict("<f4", "False", "(1000000000000, 1000000)"), data), "data is truncated"},
    {"shape product overflows", npy(dict("<f4", "False", "(4611686018427387904, 4)"), data), "more elements than int64 can count"},
    {"overflow hidden by a zero (fuzz finding)", npy(dict("<f4", "False", "(3406022728333034824, 21, 1, 1, 0, 1, 6)"), ""), "more elements than int64 can count"},
    {"size beyond int64", npy(dict("<f4", "False", "(99999999999999999999,)"), data), "does not fit in int64"},
    {"negative size", npy(dict("<f4", "False", "(-2, 3)"), data), "negative size"},
    {"nine dimensions", npy(dict("<f4", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 6)"), data), "more than 8 dimensions"},
    {"shape not a tuple", npy(dict("<f4", "False", "(6)"), data), "is not a tuple"},
    {"shape a list", npy(dict("<f4", "False", "[2, 3]"), data), "expected a tuple"},
    {"missing comma", npy("{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }", data), "bad header: expected ',' or '}'"},
    {"unterminated string", npy("{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }", data), "bad header"},
    {"no dictionary", npy("'descr', '<f4'", data), "expected '{'"},
    {"junk after the dictionary", npy(dict("<f4", "False", "(2, 3)") .. " x", data), "only padding after"},
    {"missing key", npy("{'descr': '<f4', 'shape': (2, 3), }", data), "key 'fortran_order' is missing"},
    {"unknown key", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", data), "unexpected key 'x'"},
    {"duplicate key", npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data), "key 'descr' appears twice"},
    {"fortran_order not a bool", npy(dict("<f4", "0", "(2, 3)"), data), "True or False"},
    {"fortran order", npy(dict("<f4", "True", "(2, 3)"), data), "fortran_order True %(column%-major data%) is not supported"},
    {"big-endian", npy(dict(">f4", "False", "(2, 3)"), data), "big%-endian dtype '>f4' is not supported"},
    {"'|' on a 4-byte type", npy(dict("|f4", "False", "(2, 3)"), data), "dtype '|f4' is not supported"},
    {"float16", npy(dict("<f2", "False", "(2, 3)"), data:sub(1, 12)), "dtype '<f2' is not supported"},
    {"unknown dtype", npy(dict("<q9", "False", "(2, 3)"), data), "dtype '<q9' is not supported"},
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local err = load_bytes(c[2])
      assert.matches("^load: [^:]+%.npy: ", err)
      assert.matches(c[3], err)
    end)
  end

  it("files numpy writes that volua does not read", function()
    local want = {
      ["bad_fortran.npy"] = "fortran_order True",
      ["bad_bigendian.npy"] = "big%-endian dtype '>f4'",
      ["bad_f2.npy"] = "dtype '<f2' is not supported %(volua reads '<f4', '<f8', '<i4', '<i8'%)",
      ["bad_u1.npy"] = "dtype '|u1' is not supported",
      ["bad_object.npy"] = "object arrays %('|O'%) are not supported",
      ["bad_structured.npy"] = "structured dtypes",
    }
    for f, pattern in pairs(want) do
      local err = error_of(vol.load, FIX .. f)
      assert.matches("^load: spec/fixtures/" .. f:gsub("%.", "%%.") .. ": " .. pattern, err)
    end
  end)

  it("paths that are not files", function()
    assert.matches("^load: /nonexistent%.npy: cannot open: No such file or directory", error_of(vol.load, "/nonexistent.npy"))
    assert.matches("^load: spec/fixtures: not a regular file", error_of(vol.load, "spec/fixtures"))
    assert.matches("^load: path must be a string, got no value", error_of(vol.load))
    assert.matches("^load: path contains a NUL byte", error_of(vol.load, "a\0b"))
  end)

  it("every prefix of a good file fails cleanly", function()
    for n = 0, #good - 1 do
      assert.matches("^load: ", load_bytes(good:sub(1, n)))
    end
  end)
end)

-- -- safetensors ----

local function st_basic_values()
  return {
    ["conv.weight"] = (vol.arange(6) * 0.25 - 0.5):reshape({2, 1, 1, 1, 3}),
    ["conv.bias"] = vol.tensor({1.5, -2.0}),
    idx = vol.tensor({3, -4, 5}, {dtype = "int64"}),
  }
end

describe("vol.load_safetensors reads what the safetensors package wrote", function()
  it("float32 and int64 tensors with metadata", function()
    local ts, meta = vol.load_safetensors(FIX .. "st_basic.safetensors")
    assert.same({format = "pt"}, meta)
    local want = st_basic_values()
    assert.equal(3, count(ts))
    for name, w in pairs(want) do same(w, ts[name]) end
  end)

  it("without metadata the second result is an empty table", function()
    local ts, meta = vol.load_safetensors(FIX .. "st_nometa.safetensors")
    assert.same({}, meta)
    assert.equal(3, count(ts))
  end)

  it("F64 and I32 convert; 0-d and zero-size tensors", function()
    local ts = vol.load_safetensors(FIX .. "st_dtypes.safetensors")
    local want = vol.tensor(F8)
    assert.equal("float32", ts.f64.dtype)
    for i = 1, 8 do assert.equal(want:get(i), ts.f64:get(i)) end
    assert.equal("int64", ts.i32.dtype)
    assert.same(I4, ts.i32:table())
    assert.same(I8, ts.i64:table())
    assert.equal(0, ts.scalar:dim())
    assert.equal(2.25, ts.scalar:item())
    assert.same({0, 2}, ts.empty.shape)
  end)

  it("empty files and escaped metadata", function()
    local ts, meta = vol.load_safetensors(FIX .. "st_empty.safetensors")
    assert.same({}, ts)
    assert.same({}, meta)
    ts, meta = vol.load_safetensors(FIX .. "st_meta_only.safetensors")
    assert.same({}, ts)
    assert.same({k = "v", ["\195\169\"\\"] = "line\nbreak"}, meta)
  end)
end)

describe("vol.save_safetensors", function()
  it("round-trips tensors, names and metadata", function()
    local ts = {
      a = vol.rand({2, 3, 4}, {seed = 4}),
      ["b.c"] = vol.arange(5, {dtype = "int64"}) - 2,
      s = vol.tensor(1.25),
      z = vol.zeros({0, 3}),
      ["q\"uote\\ \n\t\1 \195\169 \240\159\152\128 nul\0end"] = vol.ones({2}),
      [""] = vol.tensor(7, {dtype = "int64"}),
    }
    local meta = {format = "pt", ["k\"\n"] = "v\\\0x", empty = ""}
    local p = tmp(".safetensors")
    vol.save_safetensors(p, ts, meta)
    local back, m = vol.load_safetensors(p)
    assert.equal(count(ts), count(back))
    for name, t in pairs(ts) do same(t, back[name]) end
    assert.same(meta, m)
    local s = read_bytes(p)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + s:byte(i) end
    assert.equal(0, n % 8)
    assert.equal("{", s:sub(9, 9))
  end)

  it("writes no __metadata__ without a metadata table", function()
    local p = tmp(".safetensors")
    vol.save_safetensors(p, {x = vol.ones({3})})
    assert.is_nil(read_bytes(p):find("__metadata__", 1, true))
    local _, m = vol.load_safetensors(p)
    assert.same({}, m)
  end)

  it("writes the same bytes as safetensors' save_file", function()
    local p, q = tmp(".safetensors"), tmp(".safetensors")
    vol.save_safetensors(p, st_basic_values(), {format = "pt"})
    assert.equal(read_bytes(FIX .. "st_basic.safetensors"), read_bytes(p))
    vol.save_safetensors(q, st_basic_values())
    assert.equal(read_bytes(FIX .. "st_nometa.safetensors"), read_bytes(q))
    if CHECK_DIR then vol.save_safetensors(CHECK_DIR .. "/rt_basic.safetensors", st_basic_values(), {format = "pt"}) end
  end)

  it("raises clear errors", function()
    local p = tmp(".safetensors")
    local e = function(...) return error_of(vol.save_safetensors, ...) end
    assert.matches("^save_safetensors: path must be a string", e(nil, {}))
    assert.matches("^save_safetensors: tensors must be a table", e(p, vol.ones({1})))
    assert.matches("^save_safetensors: tensors keys must be strings, got a number key", e(p, {vol.ones({1})}))
    assert.matches('^save_safetensors: tensors%["a"%] must be a tensor, got number', e(p, {a = 1}))
    assert.matches("^save_safetensors: metadata must be a table", e(p, {}, "x"))
    assert.matches('^save_safetensors: metadata%["n"%] must be a string, got number', e(p, {}, {n = 1}))
    assert.matches("^save_safetensors: metadata keys must be strings", e(p, {}, {"x"}))
    assert.matches("tensor name '\\xff' is not valid UTF%-8", e(p, {["\255"] = vol.ones({1})}))
    assert.matches("metadata value 'a\\xc3' is not valid UTF%-8", e(p, {}, {k = "a\195"}))
    assert.matches("'__metadata__' is reserved", e(p, {__metadata__ = vol.ones({1})}))
    assert.matches("^save_safetensors: /nonexistent/x: cannot open for writing", e("/nonexistent/x", {}))
  end)
end)

describe("vol.load_safetensors refuses malformed files", function()
  local four = "\0\0\0\0"
  local cases = {
    {"empty file", "", "file is 0 bytes, too short for the 8%-byte header length"},
    {"short file", "abc", "too short"},
    {"header length past the end", u64le(1000) .. "{}", "header length 1000 runs past the end of the file %(2 bytes"},
    {"huge header length", "\0\0\0\0\0\0\0\128{}      ", "header length 9223372036854775808 is over the limit"},
    {"header not an object", st("[]"), "header does not start with '{'"},
    {"empty header", st("", nil, true), "header does not start with '{'"},
    {"invalid UTF-8", st('{"\255":1}'), "header is not valid UTF%-8 %(at byte 2%)"},
    {"trailing comma", st("{" .. entry("a", "F32", "1", 0, 4) .. ",}", four), "invalid JSON header: expected a string"},
    {"unterminated string", st('{"a'), "invalid JSON header"},
    {"bad escape", st('{"\\x":1}'), "valid escape"},
    {"lone surrogate", st('{"\\udc00":1}'), "lone low surrogate"},
    {"control character in a string", st('{"a\1":1}'), "no control character"},
    {"junk after the object", st("{} x"), "only padding after the header object"},
    {"entry not an object", st('{"a":[1]}'), "tensor 'a' is not an object"},
    {"nesting bomb", st('{"a":{"x":' .. string.rep("[", 100000) .. string.rep("]", 100000) .. "}}"), "nesting deeper than 64 levels"},
    {"deep but fine", st('{"a":{"x":' .. string.rep("[", 60) .. string.rep("]", 60) .. ',"dtype":"F32","shape":[],"data_offsets":[0,4]}}', four), nil},
    {"missing dtype", st('{"a":{"shape":[1],"data_offsets":[0,4]}}', four), "tensor 'a' has no \"dtype\""},
    {"missing shape", st('{"a":{"dtype":"F32","data_offsets":[0,4]}}', four), "tensor 'a' has no \"shape\""},
    {"missing data_offsets", st('{"a":{"dtype":"F32","shape":[1]}}', four), "tensor 'a' has no \"data_offsets\""},
    {"field twice", st('{"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}', four), "has \"dtype\" twice"},
    {"three offsets", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}', four), "']' closing data_offsets"},
    {"BF16", st("{" .. entry("w", "BF16", "2", 0, 4) .. "}", four), "tensor 'w' has dtype BF16, which volua does not read %(it reads F32, F64, I32, I64%)"},
    {"unknown dtype", st("{" .. entry("w", "Q8", "2", 0, 4) .. "}", four), "unknown dtype 'Q8'"},
    {"negative size", st("{" .. entry("a", "F32", "-1", 0, 4) .. "}", four), "shape holds %-1, which is not a non%-negative integer"},
    {"fractional size", st("{" .. entry("a", "F32", "1.0", 0, 4) .. "}", four), "shape holds 1%.0"},
    {"size beyond int64", st("{" .. entry("a", "F32", "99999999999999999999", 0, 4) .. "}", four), "does not fit in int64"},
    {"shape product overflows", st("{" .. entry("a", "F32", "4294967296,4294967296", 0, 4) .. "}", four), "more elements than int64 can count"},
    {"overflow hidden by a zero", st("{" .. entry("a", "F32", "4294967296,4294967296,0", 0, 0) .. "}"), "more elements than int64 can count"},
    {"nine dimensions", st("{" .. entry("a", "F32", "1,1,1,1,1,1,1,1,1", 0, 4) .. "}", four), "more than 8 dimensions"},
    {"size does not match offsets", st("{" .. entry("a", "F32", "3", 0, 8) .. "}", four .. four), "shape %(3,%) of F32 needs 12 bytes but data_offsets %[0, 8%] hold 8"},
    {"offsets past the end", st("{" .. entry("a", "F32", "4", 0, 16) .. "}", four), "past the end of the data %(4 bytes%)"},
    {"offsets end before they begin", st("{" .. entry("a", "F32", "1", 8, 4) .. "}", four), "end before they begin"},
    {"overlap", st("{" .. entry("a", "F32", "2", 0, 8) .. "," .. entry("b", "F32", "1", 4, 8) .. "}", four .. four), "tensor 'b' starts at byte 4 of the data but the previous tensor ends at 8"},
    {"hole", st("{" .. entry("a", "F32", "1", 0, 4) .. "," .. entry("b", "F32", "1", 8, 12) .. "}", four:rep(3)), "no holes or overlaps"},
    {"data not covered", st("{" .. entry("a", "F32", "1", 0, 4) .. "}", four .. four), "data ends at byte 4 but the file holds 8 bytes of data"},
    {"data truncated", st("{" .. entry("a", "F32", "2", 0, 8) .. "}", four), "past the end of the data"},
    {"duplicate name", st("{" .. entry("a", "F32", "1", 0, 4) .. "," .. entry("a", "F32", "1", 4, 8) .. "}", four .. four), "tensor name 'a' appears twice"},
    {"metadata twice", st('{"__metadata__":{},"__metadata__":{}}'), "__metadata__ appears twice"},
    {"metadata not an object", st('{"__metadata__":[]}'), "__metadata__ is not an object of strings"},
    {"metadata value not a string", st('{"__metadata__":{"a":1}}'), "__metadata__ value for key 'a' is not a string"},
    {"metadata key twice", st('{"__metadata__":{"a":"1","a":"2"}}'), "__metadata__ key 'a' appears twice"},
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local p = write_bytes(tmp(".safetensors"), c[2])
      if not c[3] then
        local ts = vol.load_safetensors(p)
        assert.is_not_nil(ts.a)
        return
      end
      local err = error_of(vol.load_safetensors, p)
      assert.matches("^load_safetensors: [^:]+%.safetensors: ", err)
      assert.matches(c[3], err)
    end)
  end

  it("files with dtypes volua does not read", function()
    assert.matches("tensor 'h' has dtype F16", error_of(vol.load_safetensors, FIX .. "bad_st_f16.safetensors"))
    assert.matches("tensor 'w' has dtype BF16", error_of(vol.load_safetensors, FIX .. "bad_st_bf16.safetensors"))
    assert.matches("tensor 'b' has dtype U8", error_of(vol.load_safetensors, FIX .. "bad_st_u8.safetensors"))
  end)

  it("paths that are not files", function()
    assert.matches("^load_safetensors: /nonexistent: cannot open", error_of(vol.load_safetensors, "/nonexistent"))
    assert.matches("^load_safetensors: spec: not a regular file", error_of(vol.load_safetensors, "spec"))
    assert.matches("^load_safetensors: path must be a string, got table", error_of(vol.load_safetensors, {}))
  end)

  it("every prefix and every one-byte corruption of a good file fails cleanly or loads", function()
    local good = read_bytes(FIX .. "st_basic.safetensors")
    for n = 0, #good - 1 do
      assert.matches("^load_safetensors: ", error_of(vol.load_safetensors, write_bytes(tmp(".safetensors"), good:sub(1, n))))
    end
    local p = tmp(".safetensors")
    for i = 1, #good do
      write_bytes(p, good:sub(1, i - 1) .. string.char((good:byte(i) + 1) % 256) .. good:sub(i + 1))
      local ok, err = pcall(vol.load_safetensors, p)
      assert(ok or tostring(err):match("^load_safetensors: "), err)
    end
  end)
end)

-- -- the golden files ----

describe("the golden files", function()
  local function golden_npys()
    local cases = assert(loadfile(GOLDEN .. "/cases.lua"))()
    local seen, list = {}, {}
    for _, case in ipairs(cases) do
      for _, group in ipairs({case.inputs or {}, case.outputs or {}}) do
        for _, path in pairs(group) do
          if not seen[path] then
            seen[path] = true
            list[#list + 1] = path
          end
        end
      end
    end
    table.sort(list)
    return list
  end

  it("every .npy loads, and saving it again gives numpy's bytes", function()
    local list = golden_npys()
    assert.is_true(#list > 20)
    local p = tmp(".npy")
    for _, path in ipairs(list) do
      local t = vol.load(GOLDEN .. "/" .. path)
      assert.is_true(t.dtype == "float32" or t.dtype == "int64")
      vol.save(p, t)
      assert.equal(read_bytes(GOLDEN .. "/" .. path), read_bytes(p), path)
    end
  end)

  it("model.safetensors holds the same tensors as the .npy copies", function()
    local ts, meta = vol.load_safetensors(GOLDEN .. "/l2_small/model.safetensors")
    assert.equal("table", type(meta))
    local names = {"conv.weight", "conv.bias", "group_norm.weight", "group_norm.bias"}
    assert.equal(#names, count(ts))
    for _, name in ipairs(names) do same(vol.load(GOLDEN .. "/l2_small/" .. name .. ".npy"), ts[name]) end
    local p = tmp(".safetensors")
    vol.save_safetensors(p, ts)
    assert.equal(read_bytes(GOLDEN .. "/l2_small/model.safetensors"), read_bytes(p))
  end)
end)
