-- softmax_spec.lua: vol.softmax, vol.log_softmax, vol.logsumexp, vol.amax / amin, vol.max / min
-- (and t:max(dim) / t:min(dim)), nn.Softmax and nn.LogSoftmax: against naive Lua computations in
-- double on several ranks, every dim, keepdim, sets of dims, NaN / inf slices, ties and empty dims;
-- argument errors. VOLUA_TEST_DEVICE=cuda runs these ops on the GPU (the references stay in Lua).
-- Then a GPU section: random shapes (long rows, slices across block sizes, large inner strides,
-- few long slices cut into chunks) on the GPU against the CPU, pending without a GPU;
-- VOLUA_GPU_SPEC_DEVICE=cpu runs its generators against the CPU itself (a self-test), VOLUA_SEED
-- reproduces a run, VOLUA_GPU_TRIALS sets the cases per op, VOLUA_TEST_LARGE=1 adds > 2^31-element cases.
local vol = require "volua"
local nn = require "volua.nn"

local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"
local nan, inf = 0 / 0, math.huge
local RTOL, ATOL = 1e-4, 1e-5 -- the project's float32 tolerance

-- -- helpers ----

local function values(t) return t:cpu():reshape({-1}):table() end

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

local function on_device(t) return t:to(device) end

-- a float32 tensor of shape with normal values (seeded), on the CPU
local function randn(shape, seed) return vol.randn(shape, {seed = seed}) end

-- NaN-aware closeness of two numbers (inf equals inf)
local function close(a, b)
  if b ~= b then return a ~= a end
  if a == b then return true end
  return math.abs(a - b) <= ATOL + RTOL * math.abs(b)
end

-- got (a tensor) against want (a flat list), element by element
local function assert_close(got, want, what)
  local g = values(got)
  assert.are.equal(#want, #g, (what or "") .. ": element count")
  for i = 1, #want do
    if not close(g[i], want[i]) then
      error(("%s: element %d: got %s, want %s"):format(what or "", i, tostring(g[i]), tostring(want[i])), 2)
    end
  end
end

-- exact equality of a tensor and a flat list (NaN = NaN)
local function assert_exact(got, want, what)
  local g = values(got)
  assert.are.equal(#want, #g, (what or "") .. ": element count")
  for i = 1, #want do
    local a, b = g[i], want[i]
    if not (a == b or (a ~= a and b ~= b)) then
      error(("%s: element %d: got %s, want %s"):format(what or "", i, tostring(a), tostring(b)), 2)
    end
  end
end

-- -- naive references, in double: torch's formulas written out over nested loops ----

-- Row-major strides of shape.
local function strides(shape)
  local st, s = {}, 1
  for i = #shape, 1, -1 do
    st[i] = s
    s = s * shape[i]
  end
  return st
end

-- torch.softmax / log_softmax of flat list xs (shape) over dim (1-based, positive): m the max with
-- a NaN propagating, then exp(x - m) / sum or (x - m) - log(sum)
local function naive_softmax(xs, shape, dim, log)
  local st = strides(shape)
  local size, step = shape[dim], st[dim]
  local out = {}
  local n = numel(shape)
  for base = 0, n - 1 do
    -- the first element of each slice: its coordinate along dim is 0
    if math.floor(base / step) % size == 0 then
      local m = -inf
      for k = 0, size - 1 do
        local v = xs[base + k * step + 1]
        if v ~= v or m ~= m then m = 0 / 0 elseif v > m then m = v end
      end
      local sum = 0
      for k = 0, size - 1 do sum = sum + math.exp(xs[base + k * step + 1] - m) end
      for k = 0, size - 1 do
        local d = xs[base + k * step + 1] - m
        out[base + k * step + 1] = log and d - math.log(sum) or math.exp(d) / sum
      end
    end
  end
  return out
end

-- The reduced elements of each output of xs (shape) over the set dims ({[d] = true}), in
-- row-major order; outputs in row-major order over the kept dims. Returns a list of lists.
local function groups(xs, shape, dims)
  local st = strides(shape)
  local kept, red = {}, {}
  for d = 1, #shape do
    if dims[d] then red[#red + 1] = d else kept[#kept + 1] = d end
  end
  local function walk(list, i, offset, visit)
    if i > #list then return visit(offset) end
    local d = list[i]
    for c = 0, shape[d] - 1 do walk(list, i + 1, offset + c * st[d], visit) end
  end
  local out = {}
  walk(kept, 1, 0, function(base)
    local g = {}
    walk(red, 1, base, function(off) g[#g + 1] = xs[off + 1] end)
    out[#out + 1] = g
  end)
  return out
end

-- torch.logsumexp of a list: M the max (NaN propagating), M' = 0 if M is +-inf, then
-- log(sum exp(x - M')) + M'
local function naive_lse(g)
  local m = -inf
  for _, v in ipairs(g) do
    if v ~= v or m ~= m then m = 0 / 0 elseif v > m then m = v end
  end
  if m == inf or m == -inf then m = 0 end
  local sum = 0
  for _, v in ipairs(g) do sum = sum + math.exp(v - m) end
  return math.log(sum) + m
end

-- torch.max(x, dim) of a list: the first max, or the first NaN; its 0-based index. min: is_max false.
local function naive_extreme(g, is_max)
  local best, at = nil, nil
  for i, v in ipairs(g) do
    if v ~= v then return v, i - 1 end
    if best == nil or (is_max and v > best) or (not is_max and v < best) then best, at = v, i - 1 end
  end
  return best, at
end

-- the output shape of a reduction over the set dims
local function reduced_shape(shape, dims, keepdim)
  local s = {}
  for d = 1, #shape do
    if not dims[d] then s[#s + 1] = shape[d] elseif keepdim then s[#s + 1] = 1 end
  end
  return s
end

local function dim_set(list, n)
  local set = {}
  if type(list) == "number" then list = {list} end
  if list == nil or #list == 0 then
    for d = 1, n do set[d] = true end
  else
    for _, d in ipairs(list) do set[d < 0 and d + n + 1 or d] = true end
  end
  return set
end

-- a list of rows as a list of columns: the same slices, strided
local function transpose(rows)
  local cols = {}
  for c = 1, #rows[1] do
    cols[c] = {}
    for r = 1, #rows do cols[c][r] = rows[r][c] end
  end
  return cols
end

local function shape_str(s) return "{" .. table.concat(s, ", ") .. "}" end

local shapes = {{7}, {3, 5}, {2, 3, 4}, {2, 3, 1, 5}, {1, 3, 2, 2, 3}, {2, 1, 3, 2, 2, 2}}

-- -- softmax and log_softmax ----

describe("softmax and log_softmax (" .. device .. ")", function()
  it("match the naive formula on every dim of ranks 1 to 6, negative dims too", function()
    for si, shape in ipairs(shapes) do
      local x = randn(shape, 100 + si) * 3
      local xs = values(x)
      local gx = on_device(x)
      for d = 1, #shape do
        for _, log in ipairs {false, true} do
          local want = naive_softmax(xs, shape, d, log)
          local f = log and vol.log_softmax or vol.softmax
          local what = (log and "log_softmax" or "softmax") .. " of " .. shape_str(shape) .. " dim " .. d
          local y = f(gx, d)
          assert.same(shape, y.shape, what)
          assert.equal(device, y.device, what)
          assert.equal("float32", y.dtype, what)
          assert_close(y, want, what)
          assert_close(f(gx, d - #shape - 1), want, what .. " (negative)")
        end
      end
    end
  end)

  it("are stable for large values and sum to one", function()
    local x = vol.tensor({{1000, 1001, 1002}, {-1000, -1001, -1002}})
    local e = math.exp
    local s = 1 + e(1) + e(2)
    assert_close(vol.softmax(on_device(x), 2), {1 / s, e(1) / s, e(2) / s, e(2) / s, e(1) / s, 1 / s})
    assert_close(vol.log_softmax(on_device(x), 2),
                 {-math.log(s), 1 - math.log(s), 2 - math.log(s), 2 - math.log(s), 1 - math.log(s), -math.log(s)})
  end)

  it("give torch's special values: NaN, +inf or only -inf make the slice NaN", function()
    -- one slice a row: {NaN in it}, {a +inf}, {only -inf}, {-inf and numbers}, {+inf and -inf}
    local rows = {{1, nan, 2}, {1, inf, 2}, {-inf, -inf, -inf}, {-inf, 0, 0}, {inf, -inf, 0}}
    local x = vol.tensor(rows)
    local l2 = math.log(2)
    local want_soft = {nan, nan, nan, nan, nan, nan, nan, nan, nan, 0, 0.5, 0.5, nan, nan, nan}
    local want_log = {nan, nan, nan, nan, nan, nan, nan, nan, nan, -inf, -l2, -l2, nan, nan, nan}
    assert_close(vol.softmax(on_device(x), 2), want_soft, "softmax rows")
    assert_close(vol.log_softmax(on_device(x), 2), want_log, "log_softmax rows")
    -- the same slices as columns (strided): transpose by hand
    local t = vol.tensor(transpose(rows))
    local function transposed(list)
      local out = {}
      for i = 1, 3 do for j = 1, #rows do out[#out + 1] = list[(j - 1) * 3 + i] end end
      return out
    end
    assert_close(vol.softmax(on_device(t), 1), transposed(want_soft), "softmax columns")
    assert_close(vol.log_softmax(on_device(t), 1), transposed(want_log), "log_softmax columns")
    -- and the naive formula agrees with these expectations
    assert_exact(vol.tensor(naive_softmax(values(x), {5, 3}, 2, false)), want_soft, "naive")
  end)

  it("take a 0-D input (dim 1 or -1: the value's softmax is 1) and empty inputs", function()
    local s = on_device(vol.tensor(3.5))
    local y = vol.softmax(s, 1)
    assert.same({}, y.shape)
    assert.equal(1, y:item())
    assert.equal(0, vol.log_softmax(s, -1):item())
    assert.is_true(vol.softmax(on_device(vol.tensor(inf)), 1):item() ~= vol.softmax(on_device(vol.tensor(inf)), 1):item())
    for _, c in ipairs {{{0, 3}, 1}, {{0, 3}, 2}, {{2, 0}, 2}, {{2, 0, 3}, 3}} do
      local e = on_device(vol.zeros(c[1]))
      assert.same(c[1], vol.softmax(e, c[2]).shape)
      assert.same(c[1], vol.log_softmax(e, c[2]).shape)
    end
  end)

  it("raise errors naming the function and the parameter", function()
    local x = vol.zeros({2, 3})
    local function fails(f, text) assert.error_matches(f, text) end
    fails(function() return vol.softmax(x) end, "^softmax: dim is required")
    fails(function() return vol.log_softmax(x) end, "^log_softmax: dim is required")
    fails(function() return vol.softmax(x, 3) end, "^softmax: dim %(3%) is out of range for a 2%-D input")
    fails(function() return vol.softmax(x, 0) end, "^softmax: dim %(0%) is out of range")
    fails(function() return vol.log_softmax(x, -3) end, "^log_softmax: dim %(%-3%) is out of range")
    fails(function() return vol.softmax(x, 1.5) end, "^softmax: dim must be an integer")
    fails(function() return vol.softmax(x, "1") end, "^softmax: dim must be an integer")
    fails(function() return vol.softmax(x, 1, 2) end, "^softmax: takes %(x, dim%)")
    fails(function() return vol.softmax(5, 1) end, "^softmax: input must be a tensor")
    fails(function() return vol.softmax(vol.tensor(1), 2) end, "^softmax: dim %(2%) is out of range for a 0%-D input")
    fails(function() return vol.softmax(vol.zeros({2}, {dtype = "int64"}), 1) end,
          "^softmax: input dtype int64 is not supported")
    fails(function() return vol.log_softmax(vol.zeros({2}, {dtype = "int64"}), 1) end,
          "^log_softmax: input dtype int64 is not supported")
    local f = vol.zeros({2})
    getmetatable(f).__gc(f)
    fails(function() return vol.softmax(f, 1) end, "^softmax: input is a freed tensor")
  end)
end)

-- -- logsumexp ----

describe("logsumexp (" .. device .. ")", function()
  it("matches the naive formula over single dims, sets of dims and keepdim", function()
    for si, shape in ipairs(shapes) do
      local x = randn(shape, 200 + si) * 4
      local xs, gx = values(x), on_device(x)
      local n = #shape
      local cases = {}
      for d = 1, n do cases[#cases + 1] = d end
      cases[#cases + 1] = {}
      if n >= 2 then cases[#cases + 1] = {1, n} ; cases[#cases + 1] = {-1, -2} end
      if n >= 3 then cases[#cases + 1] = {1, 3} ; cases[#cases + 1] = {2, 3} end
      if n >= 4 then cases[#cases + 1] = {1, 2, 4} end
      for _, dims in ipairs(cases) do
        local set = dim_set(dims, n)
        local want = {}
        for i, g in ipairs(groups(xs, shape, set)) do want[i] = naive_lse(g) end
        for _, keep in ipairs {false, true} do
          local what = "logsumexp of " .. shape_str(shape) .. " dims " .. tostring(type(dims) == "table" and shape_str(dims) or dims) .. " keepdim " .. tostring(keep)
          local y = vol.logsumexp(gx, dims, keep)
          assert.same(reduced_shape(shape, set, keep), y.shape, what)
          assert.equal("float32", y.dtype, what)
          assert_close(y, want, what)
        end
      end
    end
  end)

  it("gives torch's special values and is stable", function()
    local rows = {{1, nan, 2}, {1, inf, 2}, {-inf, -inf, -inf}, {inf, -inf, 0}, {nan, inf, -inf},
                  {1000, 1000, -inf}, {-1000, -1000, -1000}}
    local x = on_device(vol.tensor(rows))
    local want = {nan, inf, -inf, inf, nan, 1000 + math.log(2), -1000 + math.log(3)}
    assert_close(vol.logsumexp(x, 2), want, "rows")
    for i, g in ipairs(rows) do assert.is_true(close(naive_lse(g), want[i]), "naive row " .. i) end
    -- the same as columns
    assert_close(vol.logsumexp(on_device(vol.tensor(transpose(rows))), 1), want, "columns")
  end)

  it("reduces an empty dim to -inf, a 0-D input to itself, and promotes int64", function()
    local y = vol.logsumexp(on_device(vol.zeros({3, 0})), 2)
    assert.same({3}, y.shape)
    assert_exact(y, {-inf, -inf, -inf})
    assert_exact(vol.logsumexp(on_device(vol.zeros({0, 2})), 1, true), {-inf, -inf})
    assert.same({0}, vol.logsumexp(on_device(vol.zeros({0, 2})), 2).shape)
    assert.same({}, vol.logsumexp(on_device(vol.zeros({0})), 1).shape)
    assert_exact(vol.logsumexp(on_device(vol.zeros({0})), 1), {-inf})
    assert_close(vol.logsumexp(on_device(vol.tensor(2.5)), 1), {2.5})
    assert_exact(vol.logsumexp(on_device(vol.tensor(-inf)), -1), {-inf})
    local i = on_device(vol.tensor({1, 2, 3}, {dtype = "int64"}))
    local r = vol.logsumexp(i, 1)
    assert.equal("float32", r.dtype)
    assert_close(r, {math.log(math.exp(1) + math.exp(2) + math.exp(3))})
  end)

  it("raises errors naming the function and the parameter", function()
    local x = vol.zeros({2, 3})
    local function fails(f, text) assert.error_matches(f, text) end
    fails(function() return vol.logsumexp(x) end, "^logsumexp: dims is required")
    fails(function() return vol.logsumexp(x, 3) end, "^logsumexp: dims %(3%) is out of range")
    fails(function() return vol.logsumexp(x, {1, -2}) end, "^logsumexp: dim 1 appears more than once")
    fails(function() return vol.logsumexp(x, {1, "a"}) end, "^logsumexp: dims%[2%] must be an integer")
    fails(function() return vol.logsumexp(x, 1, 1) end, "^logsumexp: keepdim must be a boolean")
    fails(function() return vol.logsumexp(nil, 1) end, "^logsumexp: input must be a tensor")
  end)
end)

-- -- amax, amin, max, min ----

describe("amax, amin, max and min over dims (" .. device .. ")", function()
  it("amax and amin match the naive max over dims, sets of dims, nil dims and keepdim", function()
    for si, shape in ipairs(shapes) do
      local x = randn(shape, 300 + si)
      local xs, gx = values(x), on_device(x)
      local n = #shape
      local cases = {false}
      for d = 1, n do cases[#cases + 1] = d end
      if n >= 2 then cases[#cases + 1] = {n, 1} end
      if n >= 3 then cases[#cases + 1] = {1, 3} end
      if n >= 4 then cases[#cases + 1] = {2, 3, 4} end
      for _, dims in ipairs(cases) do
        local arg = dims or nil
        local set = dim_set(arg, n)
        for _, is_max in ipairs {true, false} do
          local want = {}
          for i, g in ipairs(groups(xs, shape, set)) do want[i] = (naive_extreme(g, is_max)) end
          for _, keep in ipairs {false, true} do
            local what = (is_max and "amax" or "amin") .. " of " .. shape_str(shape) .. " dims " .. tostring(arg) .. " keepdim " .. tostring(keep)
            local y = (is_max and vol.amax or vol.amin)(gx, arg, keep)
            assert.same(reduced_shape(shape, set, keep), y.shape, what)
            assert_exact(y, want, what)
          end
        end
      end
    end
  end)

  it("max and min give the naive values and 0-based int64 indices on every dim", function()
    for si, shape in ipairs(shapes) do
      -- few distinct values: many ties, so the first occurrence matters
      local x = (randn(shape, 400 + si) * 2):relu()
      local xs, gx = values(x), on_device(x)
      local n = #shape
      for d = 1, n do
        local set = dim_set(d, n)
        for _, is_max in ipairs {true, false} do
          local want_v, want_i = {}, {}
          for i, g in ipairs(groups(xs, shape, set)) do want_v[i], want_i[i] = naive_extreme(g, is_max) end
          for _, keep in ipairs {false, true} do
            local what = (is_max and "max" or "min") .. " of " .. shape_str(shape) .. " dim " .. d .. " keepdim " .. tostring(keep)
            local v, i = (is_max and vol.max or vol.min)(gx, d, keep)
            assert.same(reduced_shape(shape, set, keep), v.shape, what)
            assert.same(reduced_shape(shape, set, keep), i.shape, what)
            assert.equal("int64", i.dtype, what)
            assert.equal(device, i.device, what)
            assert_exact(v, want_v, what .. " values")
            assert_exact(i, want_i, what .. " indices")
            -- the method, and a negative dim
            local mv, mi = (is_max and gx.max or gx.min)(gx, d - n - 1, keep)
            assert_exact(mv, want_v, what .. " method values")
            assert_exact(mi, want_i, what .. " method indices")
          end
        end
      end
    end
  end)

  it("max and min take the first of ties and the first NaN, as torch", function()
    local rows = {{1, 3, 3, 2}, {1, nan, 5, nan}, {-inf, -inf, -inf, -inf}, {2, 2, 2, 2},
                  {nan, 1, 2, 3}, {5, -inf, inf, inf}}
    local x = on_device(vol.tensor(rows))
    local v, i = vol.max(x, 2)
    assert_exact(v, {3, nan, -inf, 2, nan, inf}, "max values")
    assert_exact(i, {1, 1, 0, 0, 0, 2}, "max indices")
    v, i = vol.min(x, 2)
    assert_exact(v, {1, nan, -inf, 2, nan, -inf}, "min values")
    assert_exact(i, {0, 1, 0, 0, 0, 1}, "min indices")
    assert_exact(vol.amax(x, 2), {3, nan, -inf, 2, nan, inf}, "amax")
    assert_exact(vol.amin(x, -1), {1, nan, -inf, 2, nan, -inf}, "amin")
    for r, g in ipairs(rows) do
      local nv, ni = naive_extreme(g, true)
      assert.is_true(nv == values(vol.max(x, 2))[r] or nv ~= nv, "naive row " .. r)
      assert.equal(values(select(2, vol.max(x, 2)))[r], ni, "naive index row " .. r)
    end
    -- the same rows as columns (strided)
    local t = on_device(vol.tensor(transpose(rows)))
    v, i = t:max(1)
    assert_exact(v, {3, nan, -inf, 2, nan, inf}, "max values (columns)")
    assert_exact(i, {1, 1, 0, 0, 0, 2}, "max indices (columns)")
    v, i = t:min(1, true)
    assert.same({1, 6}, v.shape)
    assert_exact(i, {0, 1, 0, 0, 0, 1}, "min indices (columns)")
  end)

  it("take int64 inputs: int64 values (compared exactly) and indices, as torch", function()
    for si, shape in ipairs(shapes) do
      -- integers in -6..6: many ties
      local xi = vol.zeros(shape, {dtype = "int64"})
      xi:copy(randn(shape, 500 + si) * 3)
      local xs, gx = values(xi), on_device(xi)
      local n = #shape
      for d = 1, n do
        local set = dim_set(d, n)
        for _, is_max in ipairs {true, false} do
          local want_v, want_i = {}, {}
          for i, g in ipairs(groups(xs, shape, set)) do want_v[i], want_i[i] = naive_extreme(g, is_max) end
          local what = (is_max and "max" or "min") .. " of int64 " .. shape_str(shape) .. " dim " .. d
          local v, i = (is_max and vol.max or vol.min)(gx, d)
          assert.equal("int64", v.dtype, what)
          assert.same(reduced_shape(shape, set, false), v.shape, what)
          assert_exact(v, want_v, what .. " values")
          assert_exact(i, want_i, what .. " indices")
          local dims = d == 1 and {1} or {d, 1}
          local a = (is_max and vol.amax or vol.amin)(gx, dims, true)
          assert.equal("int64", a.dtype, what)
          local want_a = {}
          for k, g in ipairs(groups(xs, shape, dim_set(dims, n))) do want_a[k] = (naive_extreme(g, is_max)) end
          assert_exact(a, want_a, what .. " amax/amin over " .. shape_str(dims))
        end
      end
    end
    -- values past 2^53 keep their low bits (through a double, 2^60 + 1 would tie with 2^60)
    local base = vol.full({1}, 2 ^ 60, {dtype = "int64"})
    local a = vol.full({2}, 2 ^ 60, {dtype = "int64"}) + vol.tensor({0, 1}, {dtype = "int64"})
    local v, i = vol.max(on_device(a), 1, true)
    assert.equal(1, i:item())
    assert.equal(1, (v:cpu() - base):item())
    v, i = vol.min(on_device(a), 1, true)
    assert.equal(0, i:item())
    assert.equal(0, (v:cpu() - base):item())
    assert.equal(1, (vol.amax(on_device(a), 1, true):cpu() - base):item())
  end)

  it("t:max() and t:min() without a dim still give numbers; 0-D inputs give index 0", function()
    local x = on_device(vol.tensor({{1, 5}, {-2, 3}}))
    assert.equal(5, x:max())
    assert.equal(-2, x:min())
    local s = on_device(vol.tensor(4))
    local v, i = vol.max(s, 1)
    assert.same({}, v.shape)
    assert.equal(4, v:item())
    assert.equal(0, i:item())
    v, i = s:min(-1, true)
    assert.same({}, i.shape)
    assert.equal(4, vol.amax(s):item())
    assert.equal(4, vol.amin(s, 1):item())
  end)

  it("refuse to reduce over an empty dim, as torch", function()
    local e = vol.zeros({3, 0})
    local function fails(f, text) assert.error_matches(f, text) end
    fails(function() return vol.amax(e, 2) end, "^amax: cannot reduce over dim 2 of size 0 %(input %(3, 0%)%)")
    fails(function() return vol.amin(e) end, "^amin: cannot reduce over dim 2 of size 0")
    fails(function() return vol.max(e, 2) end, "^max: cannot reduce over dim 2 of size 0")
    fails(function() return vol.min(e, -1) end, "^min: cannot reduce over dim 2 of size 0")
    fails(function() return vol.amax(vol.zeros({0, 0}), 1) end, "^amax: cannot reduce over dim 1 of size 0")
    -- an empty input over a non-empty dim: an empty result
    assert.same({0}, vol.amax(on_device(vol.zeros({0, 2})), 2).shape)
    local v, i = vol.max(on_device(vol.zeros({0, 2})), 2, true)
    assert.same({0, 1}, v.shape)
    assert.same({0, 1}, i.shape)
  end)

  it("raise errors naming the function and the parameter", function()
    local x = vol.zeros({2, 3})
    local function fails(f, text) assert.error_matches(f, text) end
    fails(function() return vol.max(x) end, "^max: dim is required")
    fails(function() return vol.min(x, nil, true) end, "^min: dim is required")
    fails(function() return vol.max(x, {1}) end, "^max: dim must be an integer")
    fails(function() return vol.max(x, 3) end, "^max: dim %(3%) is out of range")
    fails(function() return x:max(3) end, "^max: dim %(3%) is out of range")
    fails(function() return x:min(1, "yes") end, "^min: keepdim must be a boolean")
    fails(function() return vol.amax(x, {1, 1}) end, "^amax: dim 1 appears more than once")
    fails(function() return vol.amin(x, 0) end, "^amin: dims %(0%) is out of range")
    fails(function() return vol.amax(x, 1, 0) end, "^amax: keepdim must be a boolean")
    fails(function() return vol.min(5, 1) end, "^min: input must be a tensor")
    local f = vol.zeros({2})
    getmetatable(f).__gc(f)
    fails(function() return vol.amin(f, 1) end, "^amin: input is a freed tensor")
    fails(function() return vol.max(f, 1) end, "^max: input is a freed tensor")
  end)
end)

-- -- nn modules ----

describe("nn.Softmax and nn.LogSoftmax (" .. device .. ")", function()
  it("run vol.softmax and vol.log_softmax over their 1-based dim", function()
    local x = on_device(randn({2, 3, 4}, 7))
    local xs = values(x)
    local m = nn.Softmax(2)
    assert_close(m(x), naive_softmax(xs, {2, 3, 4}, 2, false), "Softmax(2)")
    assert_close(nn.LogSoftmax(-1)(x), naive_softmax(xs, {2, 3, 4}, 3, true), "LogSoftmax(-1)")
    assert_close(nn.Softmax(2):forward(x), naive_softmax(xs, {2, 3, 4}, 2, false), "forward")
  end)

  it("print their dim in volua's 1-based terms and have no parameters", function()
    assert.equal("Softmax(dim=2)", tostring(nn.Softmax(2)))
    assert.equal("LogSoftmax(dim=-1)", tostring(nn.LogSoftmax(-1)))
    assert.same({}, nn.Softmax(1):parameters())
    local seq = nn.Sequential(nn.ReLU(), nn.Softmax(2))
    assert.equal("Sequential(\n  (0): ReLU()\n  (1): Softmax(dim=2)\n)", tostring(seq))
  end)

  it("reject a missing or bad dim and a bad input", function()
    assert.error_matches(function() return nn.Softmax() end, "^Softmax: dim must be a non%-zero integer")
    assert.error_matches(function() return nn.LogSoftmax(0) end, "^LogSoftmax: dim must be a non%-zero integer")
    assert.error_matches(function() return nn.Softmax(1.5) end, "^Softmax: dim must be a non%-zero integer")
    assert.error_matches(function() return nn.Softmax(1)(5) end, "^Softmax: input must be a tensor")
    assert.error_matches(function() return nn.Softmax(3)(vol.zeros({2, 2})) end, "^softmax: dim %(3%) is out of range")
  end)

  it("have help entries, as every new function", function()
    local help = require "volua.help"
    for _, name in ipairs {"softmax", "log_softmax", "logsumexp", "amax", "amin", "max", "min"} do
      local text = help.texts["vol." .. name]
      assert.is_truthy(text, "no help for vol." .. name)
      assert.is_truthy(text:find("vol." .. name .. "(", 1, true), "help for vol." .. name)
      assert.is_truthy(help.text(vol[name]):find("vol." .. name .. "(", 1, true), "help(vol." .. name .. ")")
    end
    assert.is_truthy(help.text(nn.Softmax):find("1-based", 1, true))
    assert.is_truthy(help.text(nn.LogSoftmax):find("nn.LogSoftmax(dim)", 1, true))
    assert.is_truthy(help.texts["Tensor:max"]:find("t:max(dim", 1, true))
  end)
end)

-- -- the GPU against the CPU ----

local compare = require "spec.helpers.gpu_compare"
local target, no_gpu = compare.target("VOLUA_GPU_SPEC_DEVICE")
local TRIALS = tonumber(os.getenv("VOLUA_GPU_TRIALS")) or 25

if no_gpu then
  describe("softmax family: GPU against CPU", function() pending(no_gpu) end)
  return
end

local SEED = compare.seed("softmax_spec", target)

-- draws = 1: every case slice_shape draws is one the CPU must accept, so a refusal fails the trial
local checks = compare.new {target = target, seed = SEED, trials = TRIALS, rtol = RTOL, atol = ATOL, draws = 1}
local gpu_close, gpu_same, random_trials = checks.assert_close, checks.assert_same, checks.random_trials
local show = compare.show

-- A random shape that stresses one path of kernels/softmax.cu around a dim d: short rows (a warp a
-- row), rows past 1024 (a block a row), a few rows past 8192 (rows in chunks), columns with a
-- small or a large inner stride, a few long columns (columns in chunks). Returns shape, d.
local function slice_shape(r)
  local kind = r.pick({"short_rows", "long_rows", "few_long_rows", "narrow_cols", "wide_cols",
                       "few_long_cols", "any"})
  if kind == "short_rows" then
    return {r.int(1, 300), r.int(1, 1024)}, 2
  elseif kind == "long_rows" then
    return {r.int(1, 40), r.int(1025, 6000)}, 2
  elseif kind == "few_long_rows" then
    return {r.int(1, 3), r.int(8193, 300000)}, 2
  elseif kind == "narrow_cols" then
    return {r.int(1, 50), r.int(2, 300), r.int(2, 7)}, 2
  elseif kind == "wide_cols" then
    return {r.int(1, 3), r.int(2, 40), r.int(250, 70000)}, 2
  elseif kind == "few_long_cols" then
    return {1, r.int(2000, 100000), r.int(2, 5)}, 2
  end
  local shape = {}
  for i = 1, r.int(1, 5) do shape[i] = r.int(1, 9) end
  return shape, r.int(1, #shape)
end

-- Normal data (times a random scale, sometimes shifted far), with a few NaN / inf in some cases.
local function slice_data(r, shape)
  local x = vol.randn(shape, {seed = r.seed()}) * r.pick({1, 3, 30})
  if r.chance(0.2) then x = x + r.pick({-1000, 1000}) end
  if r.chance(0.3) then compare.sprinkle(x, r, r.int(1, 4), {nan, inf, -inf}) end
  return x
end

describe("softmax family: GPU against CPU (seed " .. SEED .. ")", function()
  it("softmax and log_softmax on random shapes and dims", function()
    random_trials("softmax", 1, function(r)
      local shape, d = slice_shape(r)
      if r.chance(0.3) then d = d - #shape - 1 end
      return {args = {shape = shape, dim = d, log = r.chance(0.5)}, x = slice_data(r, shape)}
    end, function(c, dev)
      return (c.args.log and vol.log_softmax or vol.softmax)(c.x:to(dev), c.args.dim)
    end, gpu_close)
  end)

  it("logsumexp on random shapes, one dim or several", function()
    random_trials("logsumexp", 2, function(r)
      local shape, d = slice_shape(r)
      local dims = d
      if #shape >= 2 and r.chance(0.4) then -- a random set: it may coalesce into one run or not
        dims = {}
        for i = 1, #shape do if r.chance(0.5) then dims[#dims + 1] = i end end
      end
      return {args = {shape = shape, dims = dims, keepdim = r.chance(0.5)}, x = slice_data(r, shape)}
    end, function(c, dev)
      return vol.logsumexp(c.x:to(dev), c.args.dims, c.args.keepdim)
    end, gpu_close)
  end)

  it("amax and amin on random shapes and sets of dims, float32 and int64", function()
    random_trials("amax", 3, function(r)
      local shape, d = slice_shape(r)
      local dims = d
      if #shape >= 2 and r.chance(0.4) then
        dims = {}
        for i = 1, #shape do if r.chance(0.5) then dims[#dims + 1] = i end end
        if #dims == 0 then dims = nil end
      end
      local x = slice_data(r, shape)
      local int64 = r.chance(0.25)
      if int64 then
        x = vol.zeros(shape, {dtype = "int64"})
        x:copy(vol.randn(shape, {seed = r.seed()}) * 5)
      end
      return {args = {shape = shape, dims = dims, keepdim = r.chance(0.5), max = r.chance(0.5), int64 = int64},
              x = x}
    end, function(c, dev)
      return (c.args.max and vol.amax or vol.amin)(c.x:to(dev), c.args.dims, c.args.keepdim)
    end, gpu_same)
  end)

  it("max and min with indices on random shapes (ties, NaN, int64), indices exact", function()
    random_trials("max", 4, function(r)
      local shape, d = slice_shape(r)
      local x = slice_data(r, shape)
      local int64 = r.chance(0.25)
      if int64 then -- integers in -15..15 (no NaN to convert), as int64
        x = vol.zeros(shape, {dtype = "int64"})
        x:copy(vol.randn(shape, {seed = r.seed()}) * 5)
      elseif r.chance(0.5) then
        x = (x * 0.7):relu() -- many zeros: ties
      end
      return {args = {shape = shape, dim = d, keepdim = r.chance(0.5), max = r.chance(0.5), int64 = int64}, x = x}
    end, function(c, dev)
      local v, i = (c.args.max and vol.max or vol.min)(c.x:to(dev), c.args.dim, c.args.keepdim)
      return {v, i}
    end, function(got, want, what)
      gpu_same(got[1], want[1], what .. " values")
      gpu_same(got[2], want[2], what .. " indices")
    end)
  end)

  it("fixed cases: NaN / inf slices on every path, empty reductions, a 0-D input", function()
    for _, c in ipairs {{{4, 3000}, 2}, {{2, 20000}, 2}, {{3, 50, 600}, 2}, {{1, 30000, 3}, 2}, {{5, 7}, 2}} do
      local x = vol.randn(c[1], {seed = 11})
      -- a NaN in the first slice, a +inf in another (the slices along dim 2: rows or columns)
      local first, other = {}, {}
      for k, n in ipairs(c[1]) do first[k], other[k] = 1, n end
      other[2] = math.floor(c[1][2] / 2) + 1
      x:set(nan, unpack(first))
      x:set(inf, unpack(other))
      local gx = x:to(target)
      local what = "fixed " .. show(c[1])
      gpu_close(vol.softmax(gx, c[2]), vol.softmax(x, c[2]), what .. " softmax")
      gpu_close(vol.log_softmax(gx, c[2]), vol.log_softmax(x, c[2]), what .. " log_softmax")
      gpu_close(vol.logsumexp(gx, c[2]), vol.logsumexp(x, c[2]), what .. " logsumexp")
      for _, f in ipairs {vol.max, vol.min} do
        local gv, gi = f(gx, c[2])
        local v, i = f(x, c[2])
        gpu_same(gv, v, what .. " max/min values")
        gpu_same(gi, i, what .. " max/min indices")
      end
    end
    local minf = vol.full({3, 2000}, -inf)
    gpu_close(vol.softmax(minf:to(target), 2), vol.softmax(minf, 2), "softmax of -inf rows")
    gpu_close(vol.logsumexp(minf:to(target), 2), vol.logsumexp(minf, 2), "logsumexp of -inf rows")
    gpu_close(vol.logsumexp(vol.zeros({3, 0}):to(target), 2), vol.logsumexp(vol.zeros({3, 0}), 2), "logsumexp of nothing")
    gpu_close(vol.logsumexp(vol.zeros({0, 4}):to(target), 1), vol.logsumexp(vol.zeros({0, 4}), 1), "logsumexp of nothing (columns)")
    local s = vol.tensor(1.5)
    gpu_close(vol.softmax(s:to(target), 1), vol.softmax(s, 1), "softmax of a 0-D input")
    local v, i = vol.max(s:to(target), 1)
    gpu_same(i, vol.zeros({}, {dtype = "int64"}), "max index of a 0-D input")
    gpu_close(v, s, "max of a 0-D input")
    -- everything reduced (one long run, in chunks), and a non-coalescing set of dims
    local big = vol.randn({3, 5, 7, 4000}, {seed = 12})
    gpu_close(vol.logsumexp(big:to(target), {}), vol.logsumexp(big, {}), "logsumexp of everything")
    gpu_same(vol.amax(big:to(target)), vol.amax(big), "amax of everything")
    gpu_same(vol.amin(big:to(target), {1, 3}, true), vol.amin(big, {1, 3}, true), "amin over dims 1 and 3")
    gpu_close(vol.logsumexp(big:to(target), {2, 4}), vol.logsumexp(big, {2, 4}), "logsumexp over dims 2 and 4")
  end)
end)

describe("softmax family: large tensors (VOLUA_TEST_LARGE=1)", function()
  local why = compare.large_pending(target)
  if why then return pending(why) end
  it("index past 2^31 along one dim, and softmax over 2^31 + 8 values", function()
    local n = 2 ^ 31 + 8
    local x = vol.zeros({n}, {device = "cuda"})
    x:set(7, n)       -- the max at 0-based index 2^31 + 7
    x:set(-7, n - 1)  -- the min at 2^31 + 6
    local v, i = vol.max(x, 1)
    assert.equal(7, v:item())
    assert.equal(n - 1, i:item())
    v, i = vol.min(x, 1)
    assert.equal(-7, v:item())
    assert.equal(n - 2, i:item())
    assert.equal(7, vol.amax(x):item())
    -- logsumexp: log((n - 2) + e^7 + e^-7)
    local want = math.log((n - 2) + math.exp(7) + math.exp(-7))
    assert.is_true(math.abs(vol.logsumexp(x, 1):item() - want) <= RTOL * want)
    local y = vol.softmax(x, 1)
    local s = (n - 2) + math.exp(7) + math.exp(-7)
    assert.is_true(math.abs(y:max() - math.exp(7) / s) <= RTOL * math.exp(7) / s)
    assert.is_true(math.abs(y:min() - math.exp(-7) / s) <= RTOL * math.exp(-7) / s)
    assert.is_true(math.abs(y:sum() - 1) <= 1e-3)
  end)
end)
