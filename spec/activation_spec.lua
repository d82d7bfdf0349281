-- activation_spec.lua: the activations (tanh, sigmoid, exp, log, sqrt, gelu, silu, mish, softplus,
-- elu, leaky_relu, hardtanh, hardswish, hardsigmoid), clamp, relu, abs, maximum and minimum.
--  1. Every op, on VOLUA_TEST_DEVICE (cpu by default), against naive Lua formulas in double (erf,
--     log1p, expm1 and tanh written here from series and identities, not from volua's C) on a grid
--     with edge values (0, -0, subnormals, +-large, +-inf, NaN), for each parameter's default and
--     other values. On cuda the allowed error adds the GPU bound of section 3 to the CPU's.
--  2. dtype rules (int64 promoted, kept or refused, as torch), NaN rules of clamp, errors, the nn
--     modules' reprs and forward, help texts.
--  3. GPU against CPU on random tensors of random shapes (empty, odd lengths, > 1M elements) with
--     NaN and infinities sprinkled in; pending without a GPU. VOLUA_ACT_SPEC_DEVICE=cpu runs its
--     generators against the CPU itself (a self-test on machines without a GPU). VOLUA_SEED=n
--     reproduces a run; VOLUA_ACT_TRIALS sets the random cases per op (default 6, or
--     VOLUA_GPU_TRIALS where that is lower);
--     VOLUA_TEST_LARGE=1 adds a > 2^31-element case. Run under VOLUA_POISON=1 (gpu_check.sh does) so
--     that an output element the kernels forget to write is NaN and fails.
local vol = require "volua"
local nn = require "volua.nn"

local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"
local nan, inf = 0 / 0, math.huge
local U = 2 ^ -24          -- float32's unit roundoff: one rounding errs by at most U relative
local TINY = 2 ^ -126      -- float32's smallest normal: errors of subnormal results stay below it
local DENORM = 2 ^ -149    -- float32's smallest subnormal (one ulp there)

-- -- naive references in double ----

local function log1p(x) -- Goldberg's: log(u) * x / (u - 1) with u = 1 + x, exact where u == 1
  if x == inf then return x end
  local u = 1 + x
  if u == 1 then return x end
  return math.log(u) * x / (u - 1)
end

local function expm1(x) -- Kahan's: (u - 1) * x / log(u) with u = e^x
  if x == inf then return x end
  local u = math.exp(x)
  if u == 1 then return x end
  if u - 1 == -1 then return -1 end
  return (u - 1) * x / math.log(u)
end

local function tanh(x) -- -expm1(-2|x|) / (2 + expm1(-2|x|)), with the sign of x
  if x ~= x then return x end
  local e = expm1(-2 * math.abs(x))
  local t = -e / (2 + e)
  return x < 0 and -t or t
end

-- erf: for |x| < 2.5 the series 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (1*3*...*(2n+1)) (all terms
-- positive, no cancellation); beyond, 1 - erfc with erfc's continued fraction
-- e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) from depth 120. Checked once against
-- libm's erf on [-8, 8] in steps of 0.001: at most 1.2e-15 apart.
local function erf(x)
  if x ~= x then return x end
  local a = math.abs(x)
  local r
  if a < 2.5 then
    local term, sum, n = a, a, 0
    repeat
      n = n + 1
      term = term * 2 * a * a / (2 * n + 1)
      sum = sum + term
    until term <= sum * 1e-17
    r = 2 / math.sqrt(math.pi) * math.exp(-a * a) * sum
  elseif a == inf then
    r = 1
  else
    local f = a
    for k = 120, 1, -1 do f = a + (k / 2) / f end
    r = 1 - math.exp(-a * a) / (math.sqrt(math.pi) * f)
  end
  return x < 0 and -r or r
end

local function clamp(x, lo, hi) -- std::min(std::max(x, lo), hi): NaN passes, lo > hi gives hi
  if x ~= x then return x end
  local r = (lo and x < lo) and lo or x
  return (hi and hi < r) and hi or r
end

-- -- the ops: each with its variants (arguments after the input), the naive formula, and the GPU's
-- allowed error against the CPU (R: relative, in units of U; K: per |x|; A: absolute) ----
--
-- The GPU bounds come from the CUDA Math API's documented maximum errors for single precision
-- (CUDA C++ Programming Guide, "Mathematical Functions", standard library table): expf 2 ulp,
-- tanhf 2 ulp, erff 2 ulp, logf 1 ulp, log1pf 1 ulp, expm1f 1 ulp; sqrtf, +, -, *, / correctly
-- rounded (0.5 ulp: U relative), since volua builds without fast-math (-prec-div, -prec-sqrt,
-- no -ftz). n ulp of a normal result is at most 2n U relative. The CPU rounds its double result once
-- (U). Subnormal results: absolute errors of a few 2^-149, below A = 2^-126. (An emulation of these
-- float formulas with glibc's float functions, 4M values an op with the parameters below, stayed
-- within 0.9 of each bound; it cannot stand in for CUDA's functions, whose bounds are used here.)
--   tanh      tanhf 4U + CPU U                                              R = 5
--   exp       expf 4U + CPU U                                               R = 5
--   log       logf 2U + CPU U                                               R = 3
--   sqrt      both correctly rounded (sqrt in double rounded to float is)   R = 0
--   sigmoid   expf 4U (carried into 1 + e at most as is), +, /, CPU         R = 7
--   silu      as sigmoid; where expf(-x) overflows (x < -88.72) the GPU gives -0 and the
--             true |silu| <= |x| 2^-128                                     R = 7, K = 2^-126
--   mish      expf 4U carried by log1p at most as is, log1pf 2U, carried by tanh at most as is
--             (2s/sinh(2s) <= 1), tanhf 4U, * U, CPU U; expf's subnormal and underflow range
--             errs by at most |x| 4 * 2^-149                                R = 12, K = 2^-126
--   softplus  z = x*beta rounded to float: log1p(e^z) moves by at most max(1, |z|) U relative
--             (0 when beta is 1: z is x); expf 4U, log1pf 2U, float(beta) U, / U, CPU U;
--             the threshold test is made in double on both sides           R = 9 (+ the z term)
--   elu       expm1f 2U, float(alpha) U, * U, CPU U                         R = 5
--   leaky_relu  float(slope) U, * U, CPU U                                  R = 3
--   hardswish, hardsigmoid: in double on both (the formula in float overflows x * 6 to inf for
--             x > 5.7e37; run s37r2 found it), rounded once: CPU U               R = 1
--   hardtanh, clamp, relu, abs: comparisons with float-rounded bounds give the CPU's result exactly
--   gelu      0.5x * (1 + erff(x * float(sqrt(1/2)))): the sum 1 + erf cancels for x < 0, so its
--             absolute error counts: erff 2 ulp <= 2U (|erf| < 1), the argument's two roundings
--             move erf by at most 2U * max(t erf'(t)) = 2U * 0.484 <= U, the addition 2U: 5U,
--             times 0.5|x|; then the product U and the CPU U             R = 2, K = 2.5U
--   gelu tanh  the inner sum's seven roundings (x*x, *x, float(kappa), *, +, float(beta), *) move
--             tanh by at most 7U * max(v sech^2 v) = 7U * 0.449 <= 3.2U, tanhf 2U, the addition
--             2U: 7.2U, times 0.5|x|; then the product U and the CPU U    R = 2, K = 3.6U
local OPS = {
  {name = "tanh", variants = {{}}, ref = function(x) return tanh(x) end, R = 5},
  {name = "sigmoid", variants = {{}}, ref = function(x) return 1 / (1 + math.exp(-x)) end, R = 7},
  {name = "exp", variants = {{}}, ref = function(x) return math.exp(x) end, R = 5},
  {name = "log", variants = {{}}, ref = function(x) return math.log(x) end, R = 3},
  {name = "sqrt", variants = {{}}, ref = function(x) return math.sqrt(x) end, R = 0},
  {name = "gelu", variants = {{}, {"none"}}, R = 2, K = 2.5 * U,
   ref = function(x) return x * 0.5 * (1 + erf(x / math.sqrt(2))) end},
  {name = "gelu", variants = {{"tanh"}}, R = 2, K = 3.6 * U,
   ref = function(x) return 0.5 * x * (1 + tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3))) end},
  {name = "silu", variants = {{}}, ref = function(x) return x / (1 + math.exp(-x)) end, R = 7, K = TINY},
  {name = "mish", variants = {{}}, ref = function(x) return x * tanh(log1p(math.exp(x))) end, R = 12, K = TINY},
  {name = "softplus", variants = {{}, {2}, {0.5, 5}, {1, 1}, {3.7, 0.5}, {-1.5, 3}},
   ref = function(x, beta, threshold)
     beta, threshold = beta or 1, threshold or 20
     if x * beta > threshold then return x end
     return log1p(math.exp(x * beta)) / beta
   end,
   R = function(x, beta)
     beta = beta or 1
     return 9 + (beta == 1 and 0 or math.max(1, math.abs(x * beta)))
   end,
   A = function(beta) return TINY * math.max(1, 1 / math.abs(beta or 1)) end},
  {name = "elu", variants = {{}, {0.3}, {2.5}},
   ref = function(x, alpha) if x > 0 then return x end return (alpha or 1) * expm1(x) end, R = 5},
  {name = "leaky_relu", variants = {{}, {0.2}, {-0.5}},
   ref = function(x, s) if x > 0 then return x end return x * (s or 0.01) end, R = 3},
  {name = "hardtanh", variants = {{}, {0, 6}, {-0.3, 2.7}, {2, 1}},
   ref = function(x, lo, hi) return clamp(x, lo or -1, hi or 1) end, R = 0},
  {name = "hardswish", variants = {{}},
   ref = function(x) if x ~= x then return x end return x * clamp(x + 3, 0, 6) / 6 end, R = 1},
  {name = "hardsigmoid", variants = {{}},
   ref = function(x) if x ~= x then return x end return clamp(x + 3, 0, 6) / 6 end, R = 1},
  {name = "clamp", variants = {{-1, 1}, {0, nil}, {nil, 0.5}, {2, 1}, {-0.25, 3.5}, {-inf, 1e30}},
   ref = function(x, lo, hi) return clamp(x, lo, hi) end, R = 0},
  {name = "relu", variants = {{}}, ref = function(x) return clamp(x, 0, nil) end, R = 0},
  {name = "abs", variants = {{}}, ref = function(x) return math.abs(x) end, R = 0},
}

-- The GPU's allowed |gpu - cpu| at input x, CPU result c, for op with arguments args.
local function gpu_bound(op, args, x, c)
  local R = type(op.R) == "function" and op.R(x, unpack(args)) or op.R
  local A = type(op.A) == "function" and op.A(unpack(args)) or (op.R == 0 and 0 or TINY)
  return (R * U + 1e-14) * math.abs(c) + (op.K or 0) * math.abs(x) + A
end

-- The CPU's allowed |cpu - f32(ref)|: its double result rounded once (1 ulp against the rounded
-- reference: 2U relative, 2^-149 among subnormals). gelu's 1 + erf and 1 + tanh cancel for x < 0 in
-- double too: each side's erf / tanh is within 1.2e-15 of the truth, times 0.5|x|.
local function cpu_bound(op, x, r)
  local K = op.name == "gelu" and 1e-15 or 0
  return 2 * U * math.abs(r) + DENORM + K * math.abs(x)
end

-- Compares got[i] with want[i] for every i: NaN with NaN, infinities exactly, else within
-- bound(x[i], want[i]). Reports the first failure only.
local function check_elements(what, xs, got, want, bound)
  assert.equal(#want, #got, what .. ": element count")
  for i = 1, #want do
    local x, g, w = xs[i], got[i], want[i]
    local ok
    if w ~= w then ok = g ~= g
    elseif g == w then ok = true
    elseif g ~= g or math.abs(g) == inf or math.abs(w) == inf then ok = false
    else ok = math.abs(g - w) <= bound(x, w) end
    if not ok then
      assert.is_true(false, string.format("%s: element %d, x = %.9g: got %.9g, want %.9g (allowed %.3g)",
                                          what, i, x, g, w, bound(x, w)))
    end
  end
end

local function flat(t) return t:reshape({t:numel()}):cpu():table() end

local function show_args(args)
  local s = {}
  for i = 1, select("#", unpack(args)) do s[i] = tostring(args[i]) end
  return "(" .. table.concat(s, ", ") .. ")"
end

-- Calls vol.<name>(x, args...) (a nil among the args kept, as clamp's).
local function call(name, x, args)
  local n = 0
  for k in pairs(args) do n = math.max(n, k) end
  return vol[name](x, unpack(args, 1, n))
end

-- -- 1. the grid ----

local GRID = {0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 1e-30, -1e-30, 1e-8, -1e-8, 0.1, -0.1,
              2.5, -2.5, 3, -3, 5.5, -5.5, 6, -6, 19.9, 20, 20.1, -20, 25, -25, 30, 44, -44, 87, -87,
              88, -88, 89, -89, 100, -100, 104, -104, 500, -500, 1000, -1000, 1e10, -1e10, 1e13,
              -1e13, 1e30, -1e30, 3.4e38, -3.4e38, inf, -inf, nan}
for i = -160, 160 do GRID[#GRID + 1] = i / 16 end

describe("activations on " .. device .. " against naive formulas in double", function()
  local x = vol.tensor(GRID)
  local xs = x:table() -- the grid as float32 values
  local xd = x:to(device)

  for _, op in ipairs(OPS) do
    for _, args in ipairs(op.variants) do
      local what = op.name .. show_args(args)
      it(what .. " on 0, subnormals, large values, +-inf and NaN", function()
        local y = call(op.name, xd, args)
        assert.equal(device, y.device)
        assert.equal("float32", y.dtype)
        assert.same(x.shape, y.shape)
        local refs = {}
        for i, v in ipairs(xs) do refs[i] = op.ref(v, unpack(args)) end
        local want = vol.tensor(refs):table() -- each reference rounded once to float32
        check_elements(what, xs, flat(y), want, function(v, r)
          local b = cpu_bound(op, v, r)
          if device ~= "cpu" then b = b + gpu_bound(op, args, v, r) end
          return b
        end)
      end)
    end
  end

  it("special values as PyTorch gives them", function()
    local function at(t, v) return vol[t[1]](vol.tensor({v}):to(device), unpack(t, 2)):item() end
    assert.equal(0, at({"sigmoid"}, -1000))
    assert.equal(1, at({"sigmoid"}, 1000))
    assert.equal(1000, at({"softplus"}, 1000))        -- above the threshold: x itself
    assert.equal(0, at({"softplus"}, -inf))
    assert.equal(-1, at({"elu"}, -inf))
    assert.equal(-inf, at({"leaky_relu"}, -inf))
    assert.equal(inf, at({"gelu"}, inf))
    assert.equal(inf, at({"mish"}, inf))
    -- torch's formulas give NaN at -inf: -inf * 0 (gelu, mish, hardswish), -inf / inf (silu)
    for _, f in ipairs({"gelu", "silu", "mish", "hardswish"}) do
      local v = at({f}, -inf)
      assert.is_true(v ~= v, f .. "(-inf) should be NaN, got " .. tostring(v))
    end
    local v = at({"gelu", "tanh"}, -inf)
    assert.is_true(v ~= v, "gelu(-inf, tanh) should be NaN")
    assert.equal(-inf, at({"log"}, 0))
    assert.equal(-inf, 1 / at({"sqrt"}, -0.0)) -- sqrt(-0) = -0
    for _, f in ipairs({"tanh", "sigmoid", "exp", "log", "sqrt", "gelu", "silu", "mish", "softplus",
                        "elu", "leaky_relu", "hardtanh", "hardswish", "hardsigmoid", "relu"}) do
      local r = at({f}, nan)
      assert.is_true(r ~= r, f .. "(NaN) should be NaN")
    end
  end)

  it("empty tensors give empty results of the same shape", function()
    for _, op in ipairs(OPS) do
      local y = call(op.name, vol.zeros({2, 0, 3}):to(device), op.variants[#op.variants])
      assert.same({2, 0, 3}, y.shape)
    end
  end)
end)

-- -- 2. dtypes, clamp's NaN rules, maximum and minimum, errors, nn, help ----

describe("activations: dtypes, clamp, maximum, minimum, errors (" .. device .. ")", function()
  local ints = {-3, -1, 0, 2, 5}
  local function i64() return vol.tensor(ints, {dtype = "int64"}):to(device) end

  it("int64 is promoted to float32 by tanh, sigmoid, exp, log, sqrt, as torch", function()
    for _, name in ipairs({"tanh", "sigmoid", "exp", "log", "sqrt"}) do
      local y = vol[name](i64())
      assert.equal("float32", y.dtype, name)
      local op
      for _, o in ipairs(OPS) do if o.name == name then op = o end end
      local refs = {}
      for i, v in ipairs(ints) do refs[i] = op.ref(v) end
      check_elements(name .. " of int64", ints, y:cpu():table(), vol.tensor(refs):table(), function(v, r)
        return cpu_bound(op, v, r) + (device ~= "cpu" and gpu_bound(op, {}, v, r) or 0)
      end)
    end
  end)

  it("int64 is refused by the nn.functional activations, as torch ('not implemented for Long')", function()
    for _, name in ipairs({"gelu", "silu", "mish", "softplus", "elu", "leaky_relu", "hardswish", "hardsigmoid"}) do
      local ok, err = pcall(vol[name], i64())
      assert.is_false(ok, name)
      assert.matches("^" .. name .. ": input dtype int64 is not supported", err)
    end
  end)

  it("clamp and hardtanh keep int64; a fractional clamp bound gives float32; hardtanh truncates its bounds", function()
    local y = i64():clamp(0, nil)
    assert.equal("int64", y.dtype)
    assert.same({0, 0, 0, 2, 5}, y:cpu():table())
    assert.same({-1, -1, 0, 2, 2}, i64():clamp(-1, 2):cpu():table())
    assert.same({-3, -1, 0, 1, 1}, i64():clamp(nil, 1):cpu():table())
    assert.same({1, 1, 1, 1, 1}, i64():clamp(3, 1):cpu():table()) -- min > max gives max
    local f = i64():clamp(0.5)
    assert.equal("float32", f.dtype)
    assert.same({0.5, 0.5, 0.5, 2, 5}, f:cpu():table())
    assert.equal("float32", i64():clamp(nil, inf).dtype) -- an infinite bound is a float, as in Python
    local h = i64():hardtanh(-0.5, 1.7) -- torch: toLong truncates to (0, 1)
    assert.equal("int64", h.dtype)
    assert.same({0, 0, 0, 1, 1}, h:cpu():table())
    assert.same({-1, -1, 0, 1, 1}, vol.hardtanh(i64()):cpu():table())
    assert.same({0, 0, 0, 2, 5}, vol.relu(i64()):cpu():table())
    assert.same({3, 1, 0, 2, 5}, vol.abs(i64()):cpu():table())
  end)

  it("clamp: NaN bounds as torch.clamp, NaN inputs stay NaN", function()
    local x = vol.tensor({-2, 0.5, 3, nan}):to(device)
    for _, v in ipairs(x:clamp(nan, 1):cpu():table()) do assert.is_true(v ~= v) end -- both given: all NaN
    for _, v in ipairs(x:clamp(0, nan):cpu():table()) do assert.is_true(v ~= v) end
    local one = x:clamp(nan):cpu():table() -- a single NaN bound leaves x (std::max(x, NaN) is x)
    assert.same({-2, 0.5, 3}, {one[1], one[2], one[3]})
    assert.is_true(one[4] ~= one[4])
    local ok, err = pcall(vol.clamp, x)
    assert.is_false(ok)
    assert.matches("^clamp: at least one of min and max must be given", err)
    local r = x:clamp(-1, 1):cpu():table()
    assert.same({-1, 0.5, 1}, {r[1], r[2], r[3]})
    assert.is_true(r[4] ~= r[4])
  end)

  it("maximum and minimum: broadcasting, NaN propagation, number operands, dtypes", function()
    local a = vol.tensor({{{1, nan, -3}}, {{4, -5, 6}}}):to(device)        -- (2, 1, 3)
    local b = vol.tensor({{0}, {2}, {nan}, {-inf}}):to(device)             -- (4, 1)
    local mx, mn = vol.maximum(a, b), vol.minimum(a, b)
    assert.same({2, 4, 3}, mx.shape)
    local A, B, MX, MN = a:cpu():table(), b:cpu():table(), mx:cpu():table(), mn:cpu():table()
    for i = 1, 2 do
      for j = 1, 4 do
        for k = 1, 3 do
          local u, v = A[i][1][k], B[j][1]
          local hi = (u ~= u or v ~= v) and nan or math.max(u, v)
          local lo = (u ~= u or v ~= v) and nan or math.min(u, v)
          local gh, gl = MX[i][j][k], MN[i][j][k]
          assert.is_true(gh == hi or (gh ~= gh and hi ~= hi), ("maximum at %d,%d,%d: %s vs %s"):format(i, j, k, gh, hi))
          assert.is_true(gl == lo or (gl ~= gl and lo ~= lo), ("minimum at %d,%d,%d: %s vs %s"):format(i, j, k, gl, lo))
        end
      end
    end
    local x = vol.tensor({-1.5, 0, 2, nan}):to(device)
    local r1, r2 = vol.maximum(x, 0):cpu():table(), vol.minimum(1, x):cpu():table()
    assert.same({0, 0, 2}, {r1[1], r1[2], r1[3]})
    assert.same({-1.5, 0, 1}, {r2[1], r2[2], r2[3]})
    assert.is_true(r1[4] ~= r1[4] and r2[4] ~= r2[4])
    local n = vol.maximum(x, nan):cpu():table()
    for _, v in ipairs(n) do assert.is_true(v ~= v) end
    local i = vol.tensor({-2, 7}, {dtype = "int64"}):to(device)
    assert.equal("int64", vol.maximum(i, 0).dtype)
    assert.same({0, 7}, vol.maximum(i, 0):cpu():table())
    assert.equal("int64", vol.minimum(i, i).dtype)
    assert.equal("float32", vol.maximum(i, 0.5).dtype)
    assert.same({0.5, 7}, vol.maximum(i, 0.5):cpu():table())
    local big = vol.maximum(i, 1e30) -- a whole number past int64's range computes in float32
    assert.equal("float32", big.dtype)
    assert.same({vol.tensor({1e30}):item(), vol.tensor({1e30}):item()}, big:cpu():table())
    assert.equal("float32", vol.minimum(i, vol.tensor({1, 1}):to(device)).dtype)
    assert.same({-2, 1}, vol.minimum(i, vol.tensor({1, 1}):to(device)):cpu():table())
  end)

  it("argument errors name the function, the parameter and the value", function()
    local x = vol.rand({2, 3}):to(device)
    local dead = vol.zeros({2})
    getmetatable(dead).__gc(dead)
    local cases = {
      {function() return vol.gelu(x, "exact") end, '^gelu: approximate must be "none" or "tanh", got "exact"$'},
      {function() return x:gelu(1) end, '^gelu: approximate must be "none" or "tanh", got number$'},
      {function() return vol.softplus(x, "2") end, "^softplus: beta must be a number, got string$"},
      {function() return vol.softplus(x, 1, {}) end, "^softplus: threshold must be a number, got table$"},
      {function() return vol.elu(x, x) end, "^elu: alpha must be a number, got tensor$"},
      {function() return x:leaky_relu(true) end, "^leaky_relu: negative_slope must be a number, got boolean$"},
      {function() return x:hardtanh("a") end, "^hardtanh: min_val must be a number, got string$"},
      {function() return x:hardtanh(0, "b") end, "^hardtanh: max_val must be a number, got string$"},
      {function() return x:clamp("0") end, "^clamp: min must be a number, got string$"},
      {function() return x:clamp(nil, x) end, "^clamp: max must be a number, got tensor$"},
      {function() return x:clamp() end, "^clamp: at least one of min and max must be given"},
      {function() return vol.tanh() end, "^tanh: input must be a tensor, got no value$"},
      {function() return vol.sigmoid(1) end, "^sigmoid: input must be a tensor, got number$"},
      {function() return x:exp(2) end, "^exp: takes at most 1 argument %(the input first%), got 2$"},
      {function() return vol.softplus(x, 1, 2, 3) end, "^softplus: takes at most 3 arguments"},
      {function() return vol.silu(dead) end, "^silu: input is a freed tensor$"},
      {function() return vol.hardtanh(vol.zeros({2}, {dtype = "int64"}), -inf) end,
       "^hardtanh: min_val %-inf cannot be converted to int64"},
      {function() return vol.maximum(x, vol.rand({4}):to(device)) end, "^maximum: shapes %(2, 3%) and %(4,%) do not broadcast"},
      {function() return vol.minimum(1, 2) end, "^minimum: operands must be tensors or numbers, one a tensor"},
      {function() return vol.maximum(x, "1") end, "^maximum: operands must be tensors or numbers, got string"},
    }
    for i, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok, "case " .. i .. " did not raise")
      assert.matches(c[2], tostring(err), 1)
    end
    if vol.cuda_available() and device == "cpu" then
      local ok, err = pcall(vol.maximum, x, x:cuda())
      assert.is_false(ok)
      assert.matches("^maximum: tensors are on different devices", err)
    end
  end)

  it("nn modules: PyTorch's arguments, defaults and repr; forward is the vol function", function()
    local x = vol.tensor({-30, -2.5, -1, -0.25, 0, 0.75, 2, 4, 30, inf, -inf, nan}):to(device)
    local cases = {
      {nn.Tanh(), "Tanh()", vol.tanh(x)},
      {nn.Sigmoid(), "Sigmoid()", vol.sigmoid(x)},
      {nn.GELU(), "GELU(approximate='none')", vol.gelu(x)},
      {nn.GELU("tanh"), "GELU(approximate='tanh')", vol.gelu(x, "tanh")},
      {nn.SiLU(), "SiLU()", vol.silu(x)},
      {nn.SiLU(true), "SiLU(inplace=True)", vol.silu(x)},
      {nn.Mish(), "Mish()", vol.mish(x)},
      {nn.Mish(true), "Mish(inplace=True)", vol.mish(x)},
      {nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)", vol.softplus(x)},
      {nn.Softplus(2, 10), "Softplus(beta=2.0, threshold=10.0)", vol.softplus(x, 2, 10)},
      {nn.Softplus(0.5), "Softplus(beta=0.5, threshold=20.0)", vol.softplus(x, 0.5, 20)},
      {nn.ELU(), "ELU(alpha=1.0)", vol.elu(x)},
      {nn.ELU(0.25, true), "ELU(alpha=0.25, inplace=True)", vol.elu(x, 0.25)},
      {nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)", vol.leaky_relu(x)},
      {nn.LeakyReLU(0.2, true), "LeakyReLU(negative_slope=0.2, inplace=True)", vol.leaky_relu(x, 0.2)},
      {nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)", vol.hardtanh(x)},
      {nn.Hardtanh(0, 6), "Hardtanh(min_val=0.0, max_val=6.0)", vol.clamp(x, 0, 6)},
      {nn.Hardtanh(-2, 2, true), "Hardtanh(min_val=-2.0, max_val=2.0, inplace=True)", vol.hardtanh(x, -2, 2)},
      {nn.Hardswish(), "Hardswish()", vol.hardswish(x)},
      {nn.Hardswish(true), "Hardswish()", vol.hardswish(x)}, -- PyTorch prints no inplace for these two
      {nn.Hardsigmoid(), "Hardsigmoid()", vol.hardsigmoid(x)},
    }
    for _, c in ipairs(cases) do
      assert.equal(c[2], tostring(c[1]))
      local y = c[1](x)
      assert.equal(device, y.device)
      assert.equal(0, vol.max_abs_diff(y:cpu(), c[3]:cpu()), c[2] .. " forward") -- NaN with NaN counts as equal
    end
    -- values, not only agreement: LeakyReLU(0.2) at -2.5, ELU(0.25) at -inf, Hardtanh(0, 6) at 30
    assert.equal(vol.tensor({-0.5}):item(), nn.LeakyReLU(0.2)(vol.tensor({-2.5}):to(device)):item())
    assert.equal(-0.25, nn.ELU(0.25)(vol.tensor({-inf}):to(device)):item())
    assert.equal(6, nn.Hardtanh(0, 6)(vol.tensor({30}):to(device)):item())
    local seq = nn.Sequential(nn.GELU(), nn.Hardtanh(-0.5, 0.5))
    assert.equal("Sequential(\n  (0): GELU(approximate='none')\n  (1): Hardtanh(min_val=-0.5, max_val=0.5)\n)",
                 tostring(seq))
    assert.equal(0, vol.max_abs_diff(seq(x):cpu(), vol.hardtanh(vol.gelu(x), -0.5, 0.5):cpu()))
    local bad = {
      {function() return nn.Hardtanh(1, 1) end, "^Hardtanh: max_val %(1.0%) must be greater than min_val %(1.0%)"},
      {function() return nn.GELU("exact") end, '^GELU: approximate must be "none" or "tanh", got "exact"'},
      {function() return nn.ELU("a") end, "^ELU: alpha must be a number, got string"},
      {function() return nn.SiLU(1) end, "^SiLU: inplace must be true or false, got number"},
      {function() return nn.Softplus(1, 2, 3) end, "^Softplus: takes at most 2 arguments, got 3"},
      {function() return nn.Tanh()(1) end, "^Tanh: input must be a tensor, got number"},
    }
    for i, c in ipairs(bad) do
      local ok, err = pcall(c[1])
      assert.is_false(ok, "nn case " .. i)
      assert.matches(c[2], tostring(err))
    end
  end)

  it("help has an entry for every new function and module", function()
    local help = require "volua.help"
    for _, name in ipairs({"tanh", "sigmoid", "exp", "log", "sqrt", "gelu", "silu", "mish", "softplus",
                           "elu", "leaky_relu", "hardtanh", "hardswish", "hardsigmoid", "clamp", "relu",
                           "abs", "maximum", "minimum"}) do
      assert.is_truthy(help.texts["vol." .. name], name)
      assert.equal("function", type(vol[name]), name)
      -- vol.relu and vol.abs are the methods t:relu and t:abs: either text may answer
      local pattern = (name == "relu" or name == "abs") and ("^[%w.:, ()]*" .. name) or ("^vol%." .. name)
      assert.matches(pattern, help.text(vol[name]))
    end
    for _, m in ipairs({"Tanh", "Sigmoid", "GELU", "SiLU", "Mish", "Softplus", "ELU", "LeakyReLU",
                        "Hardtanh", "Hardswish", "Hardsigmoid"}) do
      assert.matches("^nn%." .. m .. "%(", help.text(nn[m]))
    end
    assert.equal(vol.Tensor.gelu, vol.gelu) -- x:gelu() and vol.gelu are one function
  end)
end)

-- -- 3. GPU against CPU on random tensors ----

local compare = require "spec.helpers.gpu_compare"
local target, no_gpu = compare.target("VOLUA_ACT_SPEC_DEVICE")
if no_gpu then
  describe("activations: GPU against CPU", function() pending(no_gpu) end)
  return
end

local SEED = compare.seed("activation_spec", target)
-- (gpu_check.sh lowers VOLUA_GPU_TRIALS under the sanitizers: never more than that here either)
local TRIALS = tonumber(os.getenv("VOLUA_ACT_TRIALS")) or math.min(6, tonumber(os.getenv("VOLUA_GPU_TRIALS")) or 6)

-- Park-Miller, exact in doubles (busted's use of math.random cannot change the cases)
local generator = compare.generator

-- A random shape: empty, small and odd, or over 1M elements (big), of 1 to 5 dims.
local function random_shape(r, big)
  local nd = r.int(1, 5)
  local shape = {}
  if big then -- 1M to 1.3M elements, the last dim odd so that the length is no multiple of 4
    local n = r.int(1048577, 1300000)
    if nd == 1 then return {n + (n % 2 == 0 and 1 or 0)} end
    shape = {r.int(2, 5), 0}
    shape[2] = math.floor(n / shape[1])
    if shape[2] % 2 == 0 then shape[2] = shape[2] + 1 end
    return shape
  end
  for i = 1, nd do shape[i] = r.int(1, nd >= 4 and 7 or 37) end
  if r.chance(0.15) then shape[r.int(1, nd)] = 0 end
  return shape
end

local EDGES = {nan, inf, -inf, 0, -0.0, 1e-45, -1e-45, 1e-38, 20, -20, 88, -88, 100, -100, 1000, -1000, 1e30, -1e30}

-- Normal values times a random scale, with NaN, infinities and edge values at random places.
local function random_input(r, shape)
  local x = vol.randn(shape, {seed = r.int(1, 2 ^ 30)}) * r.pick({0.5, 1, 4, 30, 150})
  local n = x:numel()
  if n > 0 then
    local flat_x = x:reshape({n})
    for _ = 1, math.min(n, r.int(0, 24)) do flat_x:set(r.pick(EDGES), r.int(1, n)) end
  end
  return x
end

local RANDOM_ARGS = {
  gelu = function(r) return r.pick({{}, {"none"}, {"tanh"}}) end,
  softplus = function(r)
    return r.pick({{}, {r.pick({0.5, 2, 3.7}), r.pick({20, 1, 5.5})}, {1, r.pick({0, 2})}})
  end,
  elu = function(r) return r.pick({{}, {r.pick({0.3, 2.5})}}) end,
  leaky_relu = function(r) return r.pick({{}, {r.pick({0.2, -0.5, 3})}}) end,
  hardtanh = function(r) return r.pick({{}, {0, 6}, {-0.3, 2.7}, {2, 1}}) end,
  clamp = function(r) return r.pick({{-1, 1}, {0, nil}, {nil, 0.5}, {2, 1}, {-0.1, 1e30}}) end,
}

describe("activations: GPU against CPU (seed " .. SEED .. ", device " .. target .. ")", function()
  local done = {}
  for _, op in ipairs(OPS) do
    if not done[op.name] then
      done[op.name] = true
      it(op.name .. " on random shapes, empty and > 1M elements, NaN and infinities", function()
        for trial = 1, TRIALS do
          local r = generator(SEED * 7919 + #op.name * 1000003 + op.name:byte(1) * 4099 + trial)
          local shape = random_shape(r, trial <= 2)
          local x = random_input(r, shape)
          local args = RANDOM_ARGS[op.name] and RANDOM_ARGS[op.name](r) or {}
          local entry = op
          if op.name == "gelu" and args[1] == "tanh" then
            for _, o in ipairs(OPS) do if o.name == "gelu" and o.variants[1][1] == "tanh" then entry = o end end
          end
          local what = ("%s%s trial %d (VOLUA_SEED=%d) shape {%s}"):format(op.name, show_args(args), trial, SEED,
                                                                          table.concat(shape, ", "))
          local want = call(op.name, x, args)
          local ok, got = pcall(call, op.name, x:to(target), args)
          assert.is_true(ok, what .. ": raised " .. tostring(got))
          assert.equal(target, got.device, what)
          assert.same(want.shape, got.shape, what)
          assert.equal(want.dtype, got.dtype, what)
          check_elements(what, flat(x), flat(got), flat(want), function(v, c) return gpu_bound(entry, args, v, c) end)
        end
      end)
    end
  end

  it("int64 clamp, hardtanh and promotion on random shapes, exactly", function()
    for trial = 1, TRIALS do
      local r = generator(SEED * 31 + trial)
      local shape = random_shape(r, trial == 1)
      local x = (random_input(r, shape):clamp(-1e6, 1e6) * 1000):to("int64")
      local cases = {{"clamp", {-500, 800}}, {"clamp", {nil, 0}}, {"clamp", {2.5}}, {"hardtanh", {-7.9, 7.9}}, {"relu", {}}}
      for _, c in ipairs(cases) do
        local want = call(c[1], x, c[2])
        local got = call(c[1], x:to(target), c[2])
        assert.equal(want.dtype, got.dtype)
        assert.equal(0, vol.max_abs_diff(got:cpu(), want), c[1] .. show_args(c[2]) .. " trial " .. trial)
      end
      local e = vol.exp(x:clamp(-20, 20):to(target))
      assert.equal("float32", e.dtype)
    end
  end)

  it("maximum and minimum with broadcasting and numbers, exactly (NaN = NaN)", function()
    for trial = 1, TRIALS do
      local r = generator(SEED * 37 + trial)
      local shape = random_shape(r, trial == 1)
      local other = {}
      for i, n in ipairs(shape) do other[i] = r.chance(0.5) and 1 or n end -- broadcasts against shape
      while #other > 1 and r.chance(0.3) do table.remove(other, 1) end
      local a, b = random_input(r, shape), random_input(r, other)
      for _, f in ipairs({"maximum", "minimum"}) do
        local pairs_ = {{a, b}, {b, a}, {a, 0.25}, {-1, a}, {a, nan}}
        for k, p in ipairs(pairs_) do
          local want = vol[f](p[1], p[2])
          local function dev(v) return type(v) == "number" and v or v:to(target) end
          local got = vol[f](dev(p[1]), dev(p[2]))
          assert.same(want.shape, got.shape)
          assert.equal(0, vol.max_abs_diff(got:cpu(), want), ("%s pair %d trial %d (VOLUA_SEED=%d)"):format(f, k, trial, SEED))
        end
      end
    end
  end)

  if os.getenv("VOLUA_TEST_LARGE") == "1" and target == "cuda" then
    it("tanh and clamp over more than 2^31 elements (64-bit indices)", function()
      local n = 2 ^ 31 + 5
      local x = vol.full({n}, 0.5, {device = "cuda"})
      x:set(-inf, n)
      x:set(nan, n - 1)
      local y = x:tanh()
      assert.equal(-1, y:get(n))
      assert.is_true(y:get(n - 1) ~= y:get(n - 1))
      -- the same kernel on a small tensor: this case checks the indexing, not tanhf's ulps
      local want = vol.full({1}, 0.5, {device = "cuda"}):tanh():item()
      assert.equal(want, y:get(n - 2))
      assert.equal(want, y:get(1))
      local c = x:clamp(0, 0.25)
      assert.equal(0, c:get(n))
      assert.equal(0.25, c:get(n - 2))
      assert.equal(0.25, c:get(1))
    end)
  end
end)
