-- tensor_spec.lua: the Tensors section of API.md (creation, shape, access, arithmetic, printing).
local vol = require "volua"
local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"

describe("tensor creation", function()
  it("builds from nested tables and reads back", function()
    local t = vol.tensor({{1, 2, 3}, {4, 5, 6}})
    assert.same({2, 3}, t.shape)
    assert.equal("float32", t.dtype)
    assert.equal("cpu", t.device)
    assert.equal(6, t:get(2, 3))
    assert.equal(4, t:get(-1, 1))
    assert.same({{1, 2, 3}, {4, 5, 6}}, t:table())
  end)

  it("rejects ragged data and bad leaves", function()
    assert.has_error(function() vol.tensor({{1, 2}, {3}}) end, "tensor: data is ragged (dim 2 has sizes 2 and 1)")
    assert.has_error(function() vol.tensor({1, "x"}) end)
    assert.has_error(function() vol.tensor({1.5}, {dtype = "int64"}) end)
  end)

  it("allocates zeros, ones, full, empty, arange with dtypes", function()
    assert.equal(0, vol.zeros({2, 3}):sum())
    assert.equal(24, vol.ones({2, 3, 4}):sum())
    local f = vol.full({3}, 2.5)
    assert.same({2.5, 2.5, 2.5}, f:table())
    local a = vol.arange(5, {dtype = "int64"})
    assert.equal("int64", a.dtype)
    assert.same({0, 1, 2, 3, 4}, a:table())
    assert.same({0, 0}, vol.empty({0, 0}).shape)
    assert.equal(0, vol.empty({4, 0, 2}):numel())
  end)

  it("rejects bad shapes, dtypes and devices by name", function()
    assert.has_error(function() vol.zeros({2, -1}) end, "zeros: shape[2] is negative (-1)")
    assert.has_error(function() vol.zeros({2, 1.5}) end, "zeros: shape[2] must be an integer, got 1.5")
    assert.has_error(function() vol.zeros({2}, {dtype = "float16"}) end,
      'zeros: dtype must be "float32" or "int64", got "float16"')
    assert.has_error(function() vol.zeros({2}, {device = "tpu"}) end,
      'zeros: device must be "cpu" or "cuda", got "tpu"')
    assert.has_error(function() vol.zeros({2 ^ 40, 2 ^ 40}) end)
    assert.has_error(function() vol.zeros("x") end, "zeros: shape must be a table of sizes, got string")
  end)

  it("draws reproducible uniform and normal numbers from a seed", function()
    local a = vol.rand({1000}, {seed = 7})
    local b = vol.rand({1000}, {seed = 7})
    local c = vol.rand({1000}, {seed = 8})
    assert.equal(0, vol.max_abs_diff(a, b))
    assert.is_true(vol.max_abs_diff(a, c) > 0)
    assert.is_true(a:min() >= 0 and a:max() < 1)
    local mean = a:sum() / 1000
    assert.is_true(math.abs(mean - 0.5) < 0.05)
    local n = vol.randn({20000}, {seed = 1})
    local m = n:sum() / 20000
    local var = ((n - m) * (n - m)):sum() / 20000
    assert.is_true(math.abs(m) < 0.05)
    assert.is_true(math.abs(var - 1) < 0.05)
  end)
end)

describe("tensor shape and access", function()
  it("reports dim, numel, size with negative dims", function()
    local t = vol.zeros({2, 3, 4})
    assert.equal(3, t:dim())
    assert.equal(24, t:numel())
    assert.equal(4, t:size(3))
    assert.equal(4, t:size(-1))
    assert.equal(2, t:size(-3))
    assert.has_error(function() t:size(4) end, "size: dim 4 is out of range for a tensor of 3 dims")
    assert.has_error(function() t:size(0) end)
  end)

  it("gives a fresh shape table each time", function()
    local t = vol.zeros({2, 3})
    local s = t.shape
    s[1] = 99
    assert.same({2, 3}, t.shape)
  end)

  it("reshapes with one inferred size, sharing storage", function()
    local t = vol.arange(12)
    local r = t:reshape({3, -1})
    assert.same({3, 4}, r.shape)
    r:set(100, 1, 2)
    assert.equal(100, t:get(2))
    assert.has_error(function() t:reshape({5, -1}) end, "reshape: shape (5, -1) is invalid for input of size 12")
    assert.has_error(function() t:reshape({-1, -1}) end, "reshape: only one size may be -1")
    assert.has_error(function() t:reshape({2, 2}) end)
  end)

  it("checks element indices", function()
    local t = vol.zeros({2, 2})
    t:set(5, 1, 2)
    assert.equal(5, t:get(1, 2))
    assert.has_error(function() t:get(3, 1) end, "get: index 3 is out of range for dim 1 of size 2")
    assert.has_error(function() t:get(1) end, "get: tensor has 2 dims but 1 indices were given")
    assert.has_error(function() t:set("a", 1, 1) end, "set: value must be a number, got string")
  end)

  it("item needs exactly one element", function()
    assert.equal(3, vol.full({1, 1}, 3):item())
    assert.has_error(function() vol.zeros({2}):item() end, "item: tensor has 2 elements, item needs exactly 1")
  end)

  it("clones, copies and fills in place", function()
    local a = vol.rand({3, 4}, {seed = 3})
    local b = a:clone()
    assert.equal(0, vol.max_abs_diff(a, b))
    b:fill(1)
    assert.is_true(vol.max_abs_diff(a, b) > 0)
    local c = vol.zeros({12})
    assert.equal(c, c:copy(a))
    assert.equal(a:sum(), c:sum())
    assert.has_error(function() vol.zeros({5}):copy(a) end)
    local i = vol.zeros({3}, {dtype = "int64"}):copy(vol.tensor({1.7, -2.5, 3}))
    assert.same({1, -2, 3}, i:table())
  end)

  it("converts dtypes with to()", function()
    local t = vol.tensor({1.5, 2.5}):to("int64")
    assert.equal("int64", t.dtype)
    assert.same({1, 2}, t:table())
    assert.equal("float32", t:to("float32").dtype)
  end)

  it("cuda() raises a clear error without a GPU", function()
    if vol.cuda_available() then return end
    assert.has_error(function() vol.zeros({2}):cuda() end)
    local ok, err = pcall(function() return vol.zeros({2}):cuda() end)
    assert.is_false(ok)
    assert.matches('device "cuda" is not available', err, 1, true)
  end)
end)

describe("tensor arithmetic", function()
  local function t(data) return vol.tensor(data, {device = device}) end

  it("adds, subtracts, multiplies, divides elementwise and with numbers", function()
    local a, b = t({1, 2, 3}), t({4, 5, 6})
    assert.same({5, 7, 9}, (a + b):table())
    assert.same({-3, -3, -3}, (a - b):table())
    assert.same({4, 10, 18}, (a * b):table())
    assert.is_true(vol.allclose(a / b, t({0.25, 0.4, 0.5})))
    assert.same({3, 4, 5}, (a + 2):table())
    assert.same({1, 0, -1}, (2 - a):table())
    assert.is_true(vol.allclose(2 / a, t({2, 1, 2 / 3})))
    assert.same({-1, -2, -3}, (-a):table())
  end)

  it("broadcasts like torch and names the shapes that do not", function()
    local m = t({{1, 2, 3}, {4, 5, 6}})
    local r = t({10, 20, 30})
    assert.same({{11, 22, 33}, {14, 25, 36}}, (m + r):table())
    local c = t({{1}, {2}})
    assert.same({{1, 2, 3}, {8, 10, 12}}, (m * c):table())
    assert.has_error(function() return m + t({1, 2}) end,
      "add: shapes (2, 3) and (2,) do not broadcast (dim 2: 3 vs 2)")
  end)

  it("abs, relu, sum, max, min", function()
    local a = t({-2, 0.5, 3, -1})
    assert.same({2, 0.5, 3, 1}, a:abs():table())
    assert.same({0, 0.5, 3, 0}, a:relu():table())
    assert.equal(0.5, a:sum())
    assert.equal(3, a:max())
    assert.equal(-2, a:min())
    assert.has_error(function() vol.zeros({0}):max() end)
  end)

  it("max propagates NaN", function()
    local a = t({1, 0 / 0, 3})
    assert.is_true(a:max() ~= a:max())
  end)

  it("int64 arithmetic stays integral; division promotes", function()
    local a = vol.tensor({7, -3}, {dtype = "int64", device = device})
    assert.equal("int64", (a + a).dtype)
    assert.same({14, -6}, (a + a):table())
    assert.equal("float32", (a / 2).dtype)
    assert.same({3.5, -1.5}, (a / 2):table())
    assert.equal("float32", (a + 0.5).dtype)
  end)
end)

describe("division by a power of two", function()
  -- volua multiplies by the reciprocal there (src/ops/elementwise.c): the result must still be the
  -- correctly rounded quotient, subnormal results, zeros, infinities and NaN included. The Lua
  -- quotient of a float by a power of two is exact in double; vol.tensor rounds it once.
  local xs = {1, 3, -7.25, 1.5e-38, 1.401298464324817e-45, 3.4028234663852886e38, 0, -0.0, 1 / 0, -1 / 0,
              0 / 0, 2.5e-40, 123456.789}
  for _, s in ipairs({2, 0.5, 2 ^ 127, 2 ^ -127, -4, 2 ^ -126, 2 ^ 100}) do
    it("x / " .. s .. " on " .. device, function()
      local x = vol.tensor(xs):to(device)
      local y = (x / s):cpu()
      local xf = x:cpu()
      for i = 1, #xs do
        local want = vol.tensor({xf:get(i) / s}):item()
        local got = y:get(i)
        if want ~= want then
          assert.is_true(got ~= got, ("element %d: got %s, want NaN"):format(i, tostring(got)))
        else
          assert.are.equal(want, got, ("x = %.9g, s = %.9g"):format(xf:get(i), s))
          assert.are.equal(1 / want, 1 / got, "the sign of zero") -- -0 stays -0
        end
      end
    end)
  end
end)

describe("comparisons", function()
  it("max_abs_diff is NaN where exactly one side is NaN", function()
    local a = vol.tensor({1, 2, 0 / 0})
    local b = vol.tensor({1, 2.5, 0 / 0})
    assert.equal(0.5, vol.max_abs_diff(a, b))
    local c = vol.tensor({1, 2.5, 4})
    local d = vol.max_abs_diff(a, c)
    assert.is_true(d ~= d)
  end)

  it("allclose follows torch.allclose", function()
    local a = vol.tensor({1, 2, 0 / 0})
    local b = vol.tensor({1 + 1e-6, 2, 0 / 0})
    assert.is_false(vol.allclose(a, b))
    assert.is_true(vol.allclose(a, b, {equal_nan = true}))
    assert.is_false(vol.allclose(vol.tensor({1}), vol.tensor({1.1}), {rtol = 0.01}))
    assert.is_true(vol.allclose(vol.tensor({1}), vol.tensor({1.1}), {rtol = 0.1}))
    assert.is_true(vol.allclose(vol.tensor({1 / 0}), vol.tensor({1 / 0})))
    assert.is_false(vol.allclose(vol.tensor({1}), vol.tensor({1 / 0})))
    assert.is_false(vol.allclose(vol.tensor({1 / 0}), vol.tensor({-1 / 0})))
    assert.has_error(function() vol.allclose(vol.zeros({2}), vol.zeros({3})) end,
      "allclose: shapes differ: (2,) and (3,)")
  end)
end)

describe("printing", function()
  it("shows shape, dtype, device and elides large tensors", function()
    local s = tostring(vol.zeros({4, 100, 100}))
    assert.matches("volua.Tensor float32 cpu (4, 100, 100)", s, 1, true)
    assert.matches("...", s, 1, true)
    local lines = select(2, s:gsub("\n", "\n"))
    assert.is_true(lines <= 12, "too many lines: " .. lines)
    for line in s:gmatch("[^\n]+") do assert.is_true(#line < 120) end
  end)

  it("shows small tensors whole", function()
    local s = tostring(vol.tensor({1.5, -2}))
    assert.matches("1.5000", s, 1, true)
    assert.matches("-2.0000", s, 1, true)
    assert.not_matches("...", s, 1, true)
  end)
end)

describe("shapes whose sizes overflow int64", function()
  -- found by fuzzing the readers: a zero size must not hide an overflowing product
  it("are refused even when a size is zero", function()
    assert.has_error(function() vol.zeros({4611686018427387904, 4, 0}) end,
      "zeros: shape (4611686018427387904, 4, 0) has more elements than int64 can count")
    assert.equal(0, vol.zeros({2 ^ 40, 2 ^ 20, 0}):numel())
  end)
end)

describe("garbage collection of tensors", function()
  -- Lua sees a tensor as a small userdata; volua runs the collector after each GiB of tensors
  -- so that dead ones give their memory back before it runs out.
  it("frees dead tensors in a loop before their memory piles up", function()
    local function rss_mib()
      local f = io.open("/proc/self/statm")
      if not f then return 0 end
      f:read("*n")
      local r = f:read("*n")
      f:close()
      return r * 4096 / 2 ^ 20
    end
    collectgarbage()
    local before = rss_mib()
    for _ = 1, 100 do vol.empty({16, 1024, 1024}):fill(1) end -- 6.4 GB in all
    assert.is_true(rss_mib() - before < 1600, "resident memory grew by " .. (rss_mib() - before) .. " MiB")
  end)
end)
