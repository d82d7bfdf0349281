-- avg_pool_spec.lua: vol.avg_pool3d, vol.adaptive_avg_pool3d and vol.adaptive_max_pool3d on the
-- CPU against naive Lua pools in double (every option, unbatched inputs, NaN and inf; on the GPU
-- too with VOLUA_TEST_DEVICE=cuda), their argument errors, the nn modules; then the GPU against
-- the CPU on random shapes and options
-- (pending without a GPU; VOLUA_GPU_SPEC_DEVICE=cpu runs that section's generators against the
-- CPU itself). Run it on a GPU with VOLUA_POISON=1 (scripts/gpu_check.sh does) so that an output
-- no thread wrote is NaN; VOLUA_SEED=n reproduces a run, VOLUA_GPU_TRIALS sets the random cases
-- per op (default 25), VOLUA_TEST_LARGE=1 adds the > 2^31-element cases.
local vol = require "volua"
local nn = require "volua.nn"
local compare = require "spec.helpers.gpu_compare"
local show = compare.show

local inf, nan = math.huge, 0 / 0
local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu" -- where check_avg and check_adaptive run the ops

-- -- helpers ----

local function prod(t)
  local p = 1
  for _, v in ipairs(t) do p = p * v end
  return p
end

local function as_triple(v)
  if type(v) == "number" then return {v, v, v} end
  return v
end

-- n pseudo-random floats in [-1, 1), reproducible
local function random_list(n, seed)
  math.randomseed(seed)
  local xs = {}
  for i = 1, n do xs[i] = math.random() * 2 - 1 end
  return xs
end

-- flat values of a tensor, read back (so that references see the float32-rounded inputs)
local function values(t) return t:reshape({-1}):table() end

-- The message of f(...), which must fail, without a position prefix.
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return (tostring(e):gsub("^[^:\n]*:%d+: ", ""))
end

local function fails(f, ...)
  local msg = err_of(f)
  for _, part in ipairs {...} do
    assert.is_truthy(msg:find(part, 1, true), "expected [" .. part .. "] in [" .. msg .. "]")
  end
  return msg
end

-- got (a float32 read back) is want (a double) rounded to float32: within half an ulp, NaN = NaN.
local function assert_rounded(got, want, what)
  if want ~= want then
    assert(got ~= got, ("%s: got %s, want NaN"):format(what, tostring(got)))
  elseif want == inf or want == -inf then
    assert(got == want, ("%s: got %s, want %s"):format(what, tostring(got), tostring(want)))
  else
    local tol = 2 ^ -24 * math.abs(want) * (1 + 1e-9)
    assert(math.abs(got - want) <= tol,
           ("%s: got %.9g, want %.9g (float32 rounding allows %.3g)"):format(what, got, want, tol))
  end
end

-- -- naive references ----

-- Windows along one dim of n, counted one by one: each must fit the padded input (n + 2p), or,
-- in ceil mode, may hang past its end by less than a stride if it starts inside the input or the
-- left padding.
local function windows(n, k, s, p, ceil_mode)
  local count = 0
  while true do
    local start = count * s -- in padded coordinates
    local over = start + k - (n + 2 * p)
    if over > 0 and not (ceil_mode and over < s and start < n + p) then return count end
    count = count + 1
  end
end

-- Naive average pooling of a flat list of planes x (D, H, W) volumes. For each window it visits
-- every tap, counting the taps inside the padded bounds [-p, n + p) of every dim (the divisor
-- with count_include_pad) and those inside the input (without), and adding the latter in
-- (d, h, w) order in double.
local function naive_avg(xs, planes, size, a)
  local k = as_triple(a.kernel_size)
  local s, p = as_triple(a.stride or a.kernel_size), as_triple(a.padding or 0)
  local out = {}
  for i = 1, 3 do out[i] = windows(size[i], k[i], s[i], p[i], a.ceil_mode) end
  local D, H, W = size[1], size[2], size[3]
  local function in_padded(c, i) return c >= -p[i] and c < size[i] + p[i] end
  local function in_input(c, i) return c >= 0 and c < size[i] end
  local ys = {}
  for plane = 0, planes - 1 do
    for od = 0, out[1] - 1 do
      for oh = 0, out[2] - 1 do
        for ow = 0, out[3] - 1 do
          local sum, inside, padded = 0, 0, 0
          for kd = 0, k[1] - 1 do
            local z = od * s[1] - p[1] + kd
            for kh = 0, k[2] - 1 do
              local y = oh * s[2] - p[2] + kh
              for kw = 0, k[3] - 1 do
                local x = ow * s[3] - p[3] + kw
                if in_padded(z, 1) and in_padded(y, 2) and in_padded(x, 3) then padded = padded + 1 end
                if in_input(z, 1) and in_input(y, 2) and in_input(x, 3) then
                  inside = inside + 1
                  sum = sum + xs[plane * D * H * W + (z * H + y) * W + x + 1]
                end
              end
            end
          end
          local divisor = a.divisor_override or (a.count_include_pad == false and inside or padded)
          ys[#ys + 1] = inside == 0 and 0 or sum / divisor
        end
      end
    end
  end
  return ys, out
end

-- Adaptive windows along one dim: output i of m over n covers [floor(i n / m), ceil((i + 1) n / m)).
local function adaptive_range(i, m, n) return math.floor(i * n / m), math.ceil((i + 1) * n / m) end

-- Naive adaptive pooling: the mean in double, or PyTorch's max scan (a NaN always takes over, so
-- the last NaN wins; else the first largest value) with its flat index in the volume.
local function naive_adaptive(xs, planes, size, out, max)
  local D, H, W = size[1], size[2], size[3]
  local ys, idx = {}, {}
  for plane = 0, planes - 1 do
    for od = 0, out[1] - 1 do
      local d0, d1 = adaptive_range(od, out[1], D)
      for oh = 0, out[2] - 1 do
        local h0, h1 = adaptive_range(oh, out[2], H)
        for ow = 0, out[3] - 1 do
          local w0, w1 = adaptive_range(ow, out[3], W)
          local sum, count = 0, 0
          local best, best_i = -inf, (d0 * H + h0) * W + w0
          for z = d0, d1 - 1 do
            for y = h0, h1 - 1 do
              for x = w0, w1 - 1 do
                local i = (z * H + y) * W + x
                local v = xs[plane * D * H * W + i + 1]
                sum, count = sum + v, count + 1
                if v ~= v or (best == best and v > best) then best, best_i = v, i end
              end
            end
          end
          ys[#ys + 1] = max and best or sum / count
          idx[#idx + 1] = best_i
        end
      end
    end
  end
  return ys, idx
end

-- The leading dims of shape and then out.
local function out_shape(shape, out)
  local s = {unpack(shape, 1, #shape - 3)}
  for i = 1, 3 do s[#s + 1] = out[i] end
  return s
end

-- vol.avg_pool3d on a random input of shape (edit applied to its list), on `device`, against
-- naive_avg.
local function check_avg(shape, args, seed, edit)
  local xs = random_list(prod(shape), seed or 1)
  if edit then edit(xs) end
  local x = vol.tensor(xs):reshape(shape)
  local got = vol.avg_pool3d(x:to(device), args):cpu()
  local planes = prod({unpack(shape, 1, #shape - 3)})
  local want, out = naive_avg(values(x), planes, {unpack(shape, #shape - 2)}, args)
  assert.same(out_shape(shape, out), got.shape)
  assert.equal("float32", got.dtype)
  local g = values(got)
  assert.equal(#want, #g)
  for i = 1, #want do assert_rounded(g[i], want[i], "output " .. i) end
  return got
end

-- vol.adaptive_avg_pool3d / adaptive_max_pool3d on `device` against naive_adaptive; out as the
-- naive sees it (numbers), output_size as the call takes it (may have nil entries).
local function check_adaptive(shape, output_size, seed, edit)
  local xs = random_list(prod(shape), seed or 1)
  if edit then edit(xs) end
  local x = vol.tensor(xs):reshape(shape)
  local size = {unpack(shape, #shape - 2)}
  local out = {}
  if type(output_size) == "number" then
    out = {output_size, output_size, output_size}
  else
    for i = 1, 3 do out[i] = output_size[i] or size[i] end
  end
  local planes = prod({unpack(shape, 1, #shape - 3)})
  local xv = values(x)

  local xd = x:to(device)
  local avg = vol.adaptive_avg_pool3d(xd, output_size):cpu()
  assert.same(out_shape(shape, out), avg.shape)
  local want = naive_adaptive(xv, planes, size, out, false)
  local g = values(avg)
  assert.equal(#want, #g)
  for i = 1, #want do assert_rounded(g[i], want[i], "mean " .. i) end

  local mx, idx = vol.adaptive_max_pool3d(xd, output_size, true)
  mx, idx = mx:cpu(), idx:cpu()
  local wmax, widx = naive_adaptive(xv, planes, size, out, true)
  assert.same(out_shape(shape, out), mx.shape)
  assert.same(out_shape(shape, out), idx.shape)
  assert.equal("int64", idx.dtype)
  local gm, gi = values(mx), values(idx)
  for i = 1, #wmax do
    assert_rounded(gm[i], wmax[i], "max " .. i) -- (a max is exact: rounding has nothing to do)
    assert(gi[i] == widx[i], ("index %d: got %s, want %s"):format(i, tostring(gi[i]), tostring(widx[i])))
  end
  local alone = vol.adaptive_max_pool3d(xd, output_size)
  assert.equal(0, vol.max_abs_diff(alone:cpu(), mx))
end

-- -- avg_pool3d on the CPU ----

describe("avg_pool3d", function()
  it("averages 2 x 2 x 2 windows (stride defaults to kernel_size)", function()
    check_avg({2, 3, 4, 6, 8}, {kernel_size = 2})
    local x = vol.arange(8):reshape({1, 1, 2, 2, 2})
    assert.same({{{{{3.5}}}}}, vol.avg_pool3d(x, {kernel_size = 2}):table())
  end)

  it("counts padding inside the padded bounds but not a ceil_mode overhang (worked by hand)", function()
    -- W = 1..6, kernel 3, stride 2, padding 1, ceil_mode: windows at -1, 1, 3, 5; the last one
    -- holds 6, one padding position (6) and one past the padded end (7)
    local x = vol.tensor({1, 2, 3, 4, 5, 6}):reshape({1, 1, 1, 1, 6})
    local a = {kernel_size = {1, 1, 3}, stride = {1, 1, 2}, padding = {0, 0, 1}, ceil_mode = true}
    assert.same({{{{{1, 3, 5, 3}}}}}, vol.avg_pool3d(x, a):table())
    a.count_include_pad = false
    assert.same({{{{{1.5, 3, 5, 6}}}}}, vol.avg_pool3d(x, a):table())
    a.divisor_override = 4
    assert.same({{{{{0.75, 2.25, 3.75, 1.5}}}}}, vol.avg_pool3d(x, a):table())
    -- without ceil_mode the last window is dropped
    a.ceil_mode, a.divisor_override = false, nil
    assert.same({{{{{1.5, 3, 5}}}}}, vol.avg_pool3d(x, a):table())
  end)

  it("pads with and without count_include_pad", function()
    for _, cip in ipairs {true, false} do
      check_avg({1, 2, 5, 6, 7}, {kernel_size = 3, stride = 1, padding = 1, count_include_pad = cip}, 2)
      check_avg({2, 1, 4, 5, 6}, {kernel_size = {2, 3, 4}, stride = {2, 1, 3}, padding = {1, 1, 2},
                                  count_include_pad = cip}, 3)
    end
  end)

  it("ceil_mode, with and without count_include_pad and padding", function()
    for _, cip in ipairs {true, false} do
      check_avg({1, 2, 7, 8, 9}, {kernel_size = 2, ceil_mode = true, count_include_pad = cip}, 4)
      check_avg({1, 2, 7, 8, 9}, {kernel_size = 3, stride = 2, padding = 1, ceil_mode = true,
                                  count_include_pad = cip}, 5)
      check_avg({2, 1, 5, 9, 6}, {kernel_size = {3, 2, 4}, stride = {2, 3, 3}, padding = {1, 1, 0},
                                  ceil_mode = true, count_include_pad = cip}, 6)
    end
  end)

  it("divisor_override replaces the divisor, whatever count_include_pad says", function()
    for _, div in ipairs {1, 7, -3, 1000} do
      check_avg({1, 2, 5, 5, 6}, {kernel_size = 3, stride = 2, padding = 1, ceil_mode = true,
                                  divisor_override = div}, 7)
      check_avg({1, 2, 5, 5, 6}, {kernel_size = 2, count_include_pad = false, divisor_override = div}, 8)
    end
  end)

  it("non-cubic kernels and strides, stride larger than the kernel", function()
    check_avg({2, 2, 6, 7, 9}, {kernel_size = {1, 2, 3}, stride = {2, 1, 2}}, 9)
    check_avg({1, 3, 9, 8, 10}, {kernel_size = {3, 1, 2}, stride = {4, 3, 5}}, 10)
    check_avg({1, 1, 4, 4, 12}, {kernel_size = {1, 1, 4}}, 11)
    check_avg({1, 1, 3, 5, 8}, {kernel_size = 1}, 12) -- a copy
  end)

  it("takes unbatched (C, D, H, W) inputs and per-dimension tables", function()
    local got = check_avg({3, 5, 6, 7}, {kernel_size = {2, 3, 2}, stride = {1, 2, 2}, padding = {1, 1, 0}}, 13)
    assert.equal(4, got:dim())
    local x = vol.rand({2, 4, 4, 4}, {seed = 3})
    local batched = vol.avg_pool3d(x:reshape({1, 2, 4, 4, 4}), {kernel_size = 2})
    assert.equal(0, vol.max_abs_diff(batched:reshape({2, 2, 2, 2}), vol.avg_pool3d(x, {kernel_size = {2}})))
  end)

  it("propagates NaN and inf through the windows that hold them", function()
    local shape = {1, 1, 4, 4, 4}
    check_avg(shape, {kernel_size = 2}, 14, function(xs) xs[1] = nan end)
    check_avg(shape, {kernel_size = 2}, 15, function(xs) xs[1], xs[2] = inf, inf end)
    check_avg(shape, {kernel_size = 2}, 16, function(xs) xs[1], xs[2] = inf, -inf end) -- inf - inf
    check_avg(shape, {kernel_size = 3, stride = 1, padding = 1, count_include_pad = false}, 17,
              function(xs) xs[22], xs[64] = nan, -inf end)
    local y = vol.avg_pool3d(vol.tensor({nan, 1, 1, 1, 1, 1, 1, 1}):reshape({1, 1, 2, 2, 2}), {kernel_size = 2})
    assert.is_true(y:item() ~= y:item())
  end)

  it("random shapes and options against the naive pool", function()
    math.randomseed(20261128)
    local draws = {}
    for trial = 1, 40 do
      local k, s, p, size = {}, {}, {}, {}
      for i = 1, 3 do
        k[i] = math.random(1, 4)
        s[i] = math.random(1, 4)
        p[i] = math.random(0, math.floor(k[i] / 2))
        size[i] = math.random(k[i], k[i] + 6)
      end
      local a = {kernel_size = k, stride = s, padding = p, ceil_mode = math.random() < 0.5,
                 count_include_pad = math.random() < 0.5}
      if math.random() < 0.25 then a.divisor_override = math.random(-5, 9) end
      if a.divisor_override == 0 then a.divisor_override = nil end
      local shape = {math.random(1, 2), math.random(1, 3), size[1], size[2], size[3]}
      if math.random() < 0.25 then table.remove(shape, 1) end
      draws[trial] = {shape = shape, args = a, seed = math.random(1, 1e6)}
    end
    for trial, c in ipairs(draws) do
      local ok, e = pcall(check_avg, c.shape, c.args, c.seed)
      assert(ok, ("trial %d %s: %s"):format(trial, show(c), tostring(e)))
    end
  end)

  it("gives an empty result for an empty batch", function()
    local y = vol.avg_pool3d(vol.zeros({0, 3, 4, 4, 4}), {kernel_size = 2, padding = 1})
    assert.same({0, 3, 3, 3, 3}, y.shape)
  end)
end)

-- -- adaptive pools on the CPU ----

describe("adaptive_avg_pool3d and adaptive_max_pool3d", function()
  it("pool to sizes that divide the input, that do not, to 1, and to more than the input", function()
    check_adaptive({2, 3, 4, 6, 8}, 2, 21)
    check_adaptive({1, 2, 5, 7, 9}, {2, 3, 4}, 22)
    check_adaptive({1, 2, 5, 7, 9}, 1, 23)
    check_adaptive({1, 2, 3, 4, 5}, {5, 7, 9}, 24) -- windows repeat input positions
    check_adaptive({1, 1, 6, 6, 6}, 6, 25)        -- the identity
  end)

  it("keeps the input's size along nil entries (PyTorch's None)", function()
    check_adaptive({1, 2, 5, 6, 7}, {2, nil, 3}, 26)
    check_adaptive({1, 2, 5, 6, 7}, {nil, nil, 1}, 27)
    check_adaptive({2, 4, 5, 6}, {nil, 4, nil}, 28) -- unbatched
    check_adaptive({1, 1, 3, 4, 5}, {}, 29)         -- all kept
  end)

  it("gives empty results for output size 0 and an empty batch or unbatched C = 0", function()
    assert.same({1, 2, 0, 3, 3}, vol.adaptive_avg_pool3d(vol.rand({1, 2, 4, 4, 4}), {0, 3, 3}).shape)
    local m, i = vol.adaptive_max_pool3d(vol.rand({1, 2, 4, 4, 4}), {3, 0, 3}, true)
    assert.same({1, 2, 3, 0, 3}, m.shape)
    assert.same({1, 2, 3, 0, 3}, i.shape)
    assert.same({0, 2, 2, 2, 2}, vol.adaptive_avg_pool3d(vol.zeros({0, 2, 4, 4, 4}), 2).shape)
    -- PyTorch's adaptive pools check dims 1.. only: an unbatched input may have no channels
    assert.same({0, 2, 2, 2}, vol.adaptive_avg_pool3d(vol.zeros({0, 4, 4, 4}), 2).shape)
    assert.same({0, 2, 2, 2}, vol.adaptive_max_pool3d(vol.zeros({0, 4, 4, 4}), 2).shape)
  end)

  it("propagates NaN (the last NaN's index) and inf", function()
    local shape = {1, 2, 4, 5, 6}
    check_adaptive(shape, {2, 2, 3}, 31, function(xs) xs[1], xs[2], xs[40] = nan, nan, inf end)
    check_adaptive(shape, {3, 2, 4}, 32, function(xs) xs[7], xs[8], xs[100] = -inf, inf, nan end)
    local m, i = vol.adaptive_max_pool3d(vol.tensor({1, nan, 3, nan, 2, 0, 0, 0}):reshape({1, 1, 2, 2, 2}), 1, true)
    assert.is_true(m:item() ~= m:item())
    assert.equal(3, i:item()) -- the last NaN, flat 0-based
    local all_neg_inf = vol.full({1, 1, 2, 2, 2}, -inf)
    local m2, i2 = vol.adaptive_max_pool3d(all_neg_inf, 1, true)
    assert.equal(-inf, m2:item())
    assert.equal(0, i2:item()) -- the window's first position
  end)

  it("random shapes and sizes against the naive pools", function()
    math.randomseed(1128)
    for trial = 1, 30 do
      local shape = {math.random(1, 2), math.random(1, 3), math.random(1, 7), math.random(1, 7), math.random(1, 7)}
      local out = {}
      for i = 1, 3 do
        if math.random() < 0.2 then out[i] = nil else out[i] = math.random(1, 9) end
      end
      if math.random() < 0.2 then table.remove(shape, 1) end
      local ok, e = pcall(check_adaptive, shape, out, math.random(1, 1e6))
      assert(ok, ("trial %d: %s"):format(trial, tostring(e)))
    end
  end)
end)

-- -- argument errors ----

describe("pooling argument errors name the function, the parameter and the value", function()
  local x = vol.rand({1, 2, 4, 5, 6}, {seed = 4})

  it("avg_pool3d: kernel, stride, padding, divisor_override, options", function()
    fails(function() vol.avg_pool3d(x, {kernel_size = 0}) end,
          "avg_pool3d: kernel_size must be greater than zero, got (0, 0, 0)")
    fails(function() vol.avg_pool3d(x, {kernel_size = 2, stride = {1, 0, 1}}) end,
          "avg_pool3d: stride must be greater than zero, got (1, 0, 1)")
    fails(function() vol.avg_pool3d(x, {kernel_size = 2, padding = -1}) end,
          "avg_pool3d: padding must be non-negative, got (-1, -1, -1)")
    fails(function() vol.avg_pool3d(x, {kernel_size = {2, 2, 3}, padding = {1, 1, 2}}) end,
          "avg_pool3d: padding (2) must be at most half of the kernel size (3) in dim W")
    fails(function() vol.avg_pool3d(x, {kernel_size = 2 ^ 31}) end, "avg_pool3d: kernel_size", "out of range")
    fails(function() vol.avg_pool3d(x, {kernel_size = 2, divisor_override = 0}) end,
          "avg_pool3d: divisor_override must not be zero")
    fails(function() vol.avg_pool3d(x, {kernel_size = 2, divisor_override = 0.5}) end,
          "avg_pool3d: divisor_override must be an integer, got 0.5")
    fails(function() vol.avg_pool3d(x, {kernel_size = 2, count_include_pad = "no"}) end,
          "avg_pool3d: count_include_pad must be a boolean")
    fails(function() vol.avg_pool3d(x, {kernel_size = 2, ceil = true}) end, "avg_pool3d: unknown option 'ceil'")
    fails(function() vol.avg_pool3d(x, {2}) end, "avg_pool3d: options must be named")
    fails(function() vol.avg_pool3d(x, 2) end, "avg_pool3d: options must be a table")
  end)

  it("avg_pool3d: the input must hold a whole kernel, padding aside, as PyTorch's avg_pool3d says", function()
    -- max_pool3d accepts this (the padded input holds the kernel); avg_pool3d does not
    assert.same({1, 2, 1, 2, 2}, vol.max_pool3d(x, {kernel_size = {5, 3, 3}, padding = {2, 1, 1}}).shape)
    fails(function() vol.avg_pool3d(x, {kernel_size = {5, 3, 3}, padding = {2, 1, 1}}) end,
          "avg_pool3d: input (D, H, W) = (4, 5, 6) is smaller than kernel_size (5, 3, 3) in dim D")
  end)

  it("avg_pool3d: the input's dtype, rank, empty dims and state", function()
    fails(function() vol.avg_pool3d(vol.zeros({1, 2, 4, 4, 4}, {dtype = "int64"}), {kernel_size = 2}) end,
          "avg_pool3d: input dtype int64 is not supported (float32 needed)")
    fails(function() vol.avg_pool3d(vol.zeros({4, 4, 4}), {kernel_size = 2}) end,
          "avg_pool3d: input must be 5-D (N, C, D, H, W) or 4-D (C, D, H, W), got 3-D (4, 4, 4)")
    fails(function() vol.avg_pool3d(vol.zeros({1, 0, 4, 4, 4}), {kernel_size = 2}) end,
          "avg_pool3d: input (1, 0, 4, 4, 4) has a zero-size non-batch dimension (dim 2)")
    fails(function() vol.avg_pool3d(vol.zeros({0, 4, 4, 4}), {kernel_size = 2}) end,
          "avg_pool3d: input (0, 4, 4, 4) has a zero-size non-batch dimension (dim 1)")
    fails(function() vol.avg_pool3d("x", {kernel_size = 2}) end, "avg_pool3d: input must be a tensor, got string")
  end)

  it("adaptive pools: output_size, input and return_indices", function()
    for _, f in ipairs {"adaptive_avg_pool3d", "adaptive_max_pool3d"} do
      fails(function() vol[f](x, -2) end, f .. ": output_size must be non-negative, got -2 in dim D")
      fails(function() vol[f](x, {1, 1, -1}) end, f .. ": output_size must be non-negative, got -1 in dim W")
      fails(function() vol[f](x, {1, 2.5, 1}) end, f .. ": output_size[2] must be an integer, got 2.5")
      fails(function() vol[f](x, {1, 1, 1, 1}) end, f .. ": output_size must be a table {d, h, w} of 3 entries, got a key 4")
      fails(function() vol[f](x, {d = 1}) end, f .. ": output_size must be a table {d, h, w} of 3 entries, got a key d")
      fails(function() vol[f](x, "2") end, f .. ": output_size must be a number or a table")
      fails(function() vol[f](x) end, f .. ": output_size must be a number or a table", "got nothing")
      fails(function() vol[f](x, 2 ^ 61) end, f .. ": output_size", "out of range")
      fails(function() vol[f](vol.zeros({1, 2, 4, 4, 4}, {dtype = "int64"}), 2) end, f .. ": input dtype int64")
      fails(function() vol[f](vol.zeros({2, 4, 4}), 2) end, f .. ": input must be 5-D")
      fails(function() vol[f](vol.zeros({1, 2, 4, 0, 4}), 2) end, f .. ": input (1, 2, 4, 0, 4) has a zero-size non-batch dimension (dim 4)")
      fails(function() vol[f](vol.zeros({2, 0, 4, 4}), 2) end, "zero-size non-batch dimension (dim 2)")
    end
    fails(function() vol.adaptive_avg_pool3d(x, 2, true) end, "adaptive_avg_pool3d: takes (x, output_size)")
    fails(function() vol.adaptive_max_pool3d(x, 2, "yes") end, "adaptive_max_pool3d: return_indices must be a boolean, got string")
  end)

  it("leaves max_pool3d's checks and messages as they were", function()
    fails(function() vol.max_pool3d(x, {kernel_size = 2, dilation = 3, padding = 2}) end,
          "max_pool3d: padding (2) must be at most half of the kernel size (2)")
    fails(function() vol.max_pool3d(x, {kernel_size = 2, dilation = 4}) end,
          "max_pool3d: output size is too small", "dilation (4, 4, 4)")
  end)
end)

-- -- nn modules ----

describe("nn.AvgPool3d, nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool3d", function()
  local x = vol.rand({2, 3, 6, 6, 8}, {seed = 5})

  it("print as PyTorch prints them", function()
    assert.equal("AvgPool3d(kernel_size=2, stride=2, padding=0)", tostring(nn.AvgPool3d(2)))
    assert.equal("AvgPool3d(kernel_size=(3, 2, 2), stride=(2, 1, 1), padding=(1, 0, 0))",
                 tostring(nn.AvgPool3d({3, 2, 2}, {stride = {2, 1, 1}, padding = {1, 0, 0}, ceil_mode = true})))
    assert.equal("AvgPool3d(kernel_size=3, stride=1, padding=1)",
                 tostring(nn.AvgPool3d(3, {stride = 1, padding = 1, count_include_pad = false, divisor_override = 5})))
    assert.equal("AdaptiveAvgPool3d(output_size=2)", tostring(nn.AdaptiveAvgPool3d(2)))
    assert.equal("AdaptiveAvgPool3d(output_size=(2, None, 3))", tostring(nn.AdaptiveAvgPool3d({2, nil, 3})))
    assert.equal("AdaptiveMaxPool3d(output_size=(1, 1, 1))", tostring(nn.AdaptiveMaxPool3d({1, 1, 1})))
  end)

  it("keep PyTorch's defaults and run the functions", function()
    local m = nn.AvgPool3d(2)
    assert.equal(2, m.stride)
    assert.equal(0, m.padding)
    assert.is_false(m.ceil_mode)
    assert.is_true(m.count_include_pad)
    assert.is_nil(m.divisor_override)
    assert.equal(0, vol.max_abs_diff(m(x), vol.avg_pool3d(x, {kernel_size = 2})))
    local opts = {stride = {2, 1, 3}, padding = 1, ceil_mode = true, count_include_pad = false, divisor_override = 3}
    local m2 = nn.AvgPool3d(3, opts)
    opts.kernel_size = 3
    assert.equal(0, vol.max_abs_diff(m2(x), vol.avg_pool3d(x, opts)))
    assert.equal(0, vol.max_abs_diff(nn.AdaptiveAvgPool3d({2, nil, 3})(x), vol.adaptive_avg_pool3d(x, {2, nil, 3})))
    local am = nn.AdaptiveMaxPool3d(2)
    assert.is_false(am.return_indices)
    local y, none = am(x)
    assert.is_nil(none)
    assert.equal(0, vol.max_abs_diff(y, vol.adaptive_max_pool3d(x, 2)))
    local y2, idx = nn.AdaptiveMaxPool3d(2, {return_indices = true})(x)
    local wy, widx = vol.adaptive_max_pool3d(x, 2, true)
    assert.equal(0, vol.max_abs_diff(y2, wy))
    assert.equal(0, vol.max_abs_diff(idx, widx))
  end)

  it("work in a Sequential and have no parameters", function()
    local seq = nn.Sequential(nn.AvgPool3d(2), nn.AdaptiveAvgPool3d(1))
    assert.same({}, seq:state_dict_keys())
    local want = vol.adaptive_avg_pool3d(vol.avg_pool3d(x, {kernel_size = 2}), 1)
    assert.equal(0, vol.max_abs_diff(seq(x), want))
    assert.matches("%(0%): AvgPool3d%(kernel_size=2, stride=2, padding=0%)", tostring(seq))
  end)

  it("refuse bad constructor arguments", function()
    fails(function() nn.AvgPool3d() end, "AvgPool3d: kernel_size is required")
    fails(function() nn.AvgPool3d({2, 2}) end, "AvgPool3d: kernel_size must be a number or a table of 3")
    fails(function() nn.AvgPool3d(2, {padding = -1}) end, "AvgPool3d: padding must be at least 0")
    fails(function() nn.AvgPool3d(2, {count_include_pad = 1}) end, "AvgPool3d: count_include_pad must be true or false")
    fails(function() nn.AvgPool3d(2, {divisor_override = 2.5}) end, "AvgPool3d: divisor_override must be a non-zero integer or nil, got 2.5")
    fails(function() nn.AdaptiveAvgPool3d("2") end, "AdaptiveAvgPool3d: output_size must be a number or a table")
    fails(function() nn.AdaptiveAvgPool3d({1, 2, 3, 4}) end, "AdaptiveAvgPool3d: output_size must be a table {d, h, w} of 3 entries, got a key 4")
    fails(function() nn.AdaptiveMaxPool3d({1, -1, 1}) end, "AdaptiveMaxPool3d: output_size[2] must be a non-negative integer or nil, got -1")
    fails(function() nn.AdaptiveMaxPool3d(2, {indices = true}) end, "AdaptiveMaxPool3d: unknown option 'indices'")
    -- the input's checks run at forward time, naming the function
    fails(function() nn.AvgPool3d(7)(x) end, "avg_pool3d: input (D, H, W) = (6, 6, 8) is smaller than kernel_size")
  end)

  it("have help texts", function()
    local help = require "volua.help"
    assert.matches("^nn%.AvgPool3d%(kernel_size", help.text(nn.AvgPool3d))
    assert.matches("^nn%.AdaptiveAvgPool3d%(output_size", help.text(nn.AdaptiveAvgPool3d))
    assert.matches("^nn%.AdaptiveMaxPool3d%(output_size", help.text(nn.AdaptiveMaxPool3d))
    for _, f in ipairs {"avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"} do
      local text = help.text(vol[f])
      assert.matches("^vol%." .. f .. "%(x, ", text)
      assert.truthy(text:find("Example:", 1, true))
    end
  end)
end)

-- -- the GPU against the CPU ----

local target, no_gpu = compare.target("VOLUA_GPU_SPEC_DEVICE")
local TRIALS = tonumber(os.getenv("VOLUA_GPU_TRIALS")) or 25
-- Both sides add in double in the same order and divide in double, so they agree to the last bit
-- but for the rounding of nothing: the tolerance is far tighter than the project's 1e-4 / 1e-5.
local TOL = {rtol = 1e-6, atol = 1e-7, equal_nan = true}

if no_gpu then
  describe("pooling family on the GPU against the CPU", function() pending(no_gpu) end)
  return
end

local SEED = compare.seed("avg_pool_spec", target)

local generator, sprinkle = compare.generator, compare.sprinkle
local checks = compare.new {target = target, seed = SEED, trials = TRIALS, rtol = TOL.rtol, atol = TOL.atol}
local assert_close, assert_same, random_trials = checks.assert_close, checks.assert_same, checks.random_trials

local function avg_on(x, args, device) return vol.avg_pool3d(x:to(device), args) end

describe("pooling family on the GPU against the CPU (seed " .. SEED .. ")", function()
  it("avg_pool3d on random shapes, padding, ceil_mode, count_include_pad, divisor_override, NaN", function()
    random_trials("avg_pool3d", 1, function(r)
      local a = {kernel_size = {}, stride = {}, padding = {}, ceil_mode = r.chance(0.5),
                 count_include_pad = r.chance(0.5)}
      local spatial = {}
      for i = 1, 3 do
        local k = r.pick({1, 2, 2, 3, 4, 5})
        a.kernel_size[i] = k
        a.stride[i] = r.chance(0.4) and k or r.int(1, 5) -- windows that tile, and others
        a.padding[i] = r.int(0, math.floor(k / 2))
        spatial[i] = r.int(k, k + 9)
      end
      if r.chance(0.5) then spatial[3] = 4 * r.int(1, 12) end -- rows for the tiled kernel
      if r.chance(0.3) then a.padding[3] = 0 end
      if r.chance(0.2) then a.stride = nil end
      if r.chance(0.25) then a.divisor_override = r.pick({-3, 1, 5, 100}) end
      local shape = {r.int(0, 3), r.int(1, 4), spatial[1], spatial[2], spatial[3]}
      if shape[1] == 0 and r.chance(0.7) then shape[1] = 1 end
      if r.chance(0.2) then table.remove(shape, 1) end
      local x = vol.randn(shape, {seed = r.seed()})
      if r.chance(0.4) and x:numel() > 0 then sprinkle(x, r, r.int(1, 4)) end
      return {args = a, x = x}
    end, function(c, device) return avg_on(c.x, c.args, device) end, assert_close)
  end)

  it("avg_pool3d's tiled kernel: kW 1, 2, 4 over rows of 2 and 4 floats; its edges and the point kernel's", function()
    local r = generator(SEED * 31 + 3)
    local cases = {
      {{2, 3, 16, 64, 128}, {kernel_size = 2}},                        -- k 2 s 2: 16-byte loads, 4 rows at once
      {{1, 2, 6, 8, 16}, {kernel_size = 2, padding = {1, 1, 0}, count_include_pad = false}}, -- k 2, padded D, H
      {{1, 2, 6, 8, 16}, {kernel_size = 2, padding = {1, 0, 0}}},
      {{1, 2, 9, 33, 68}, {kernel_size = 2}},                          -- odd D, H: last slice and row unread
      {{1, 2, 8, 8, 70}, {kernel_size = 2}},                           -- W % 4 = 2: 8-byte loads
      {{1, 2, 8, 8, 66}, {kernel_size = {2, 2, 1}, stride = {2, 2, 1}}}, -- kW 1, 8-byte loads
      {{1, 3, 6, 10, 36}, {kernel_size = {2, 2, 1}, stride = {1, 2, 1}}}, -- kW 1, 16-byte loads
      {{1, 2, 8, 12, 64}, {kernel_size = 4}},                          -- kW 4
      {{1, 2, 8, 12, 68}, {kernel_size = {2, 3, 4}, stride = {1, 2, 4}, padding = {1, 1, 0}}},
      {{2, 2, 7, 9, 64}, {kernel_size = 2, ceil_mode = true}},         -- ceil along D and H only
      {{2, 2, 7, 9, 64}, {kernel_size = 3, stride = {2, 2, 3}, padding = {1, 1, 0}, ceil_mode = true,
                          count_include_pad = false}},                 -- kW 3: the point kernel
      {{1, 2, 6, 6, 63}, {kernel_size = 2, ceil_mode = true}},         -- overhang along W: point kernel
      {{1, 1, 4, 4, 200}, {kernel_size = 2, divisor_override = 3}},
      {{3, 5, 4, 4, 4}, {kernel_size = {1, 1, 4}}},                    -- one window a row
      {{2, 3, 17, 33, 66}, {kernel_size = 3, stride = 1, padding = 1}}, -- overlapping: the point kernel
      {{1, 2, 9, 17, 130}, {kernel_size = {3, 3, 2}, stride = {2, 2, 2}, padding = {1, 1, 0}}},
      {{0, 2, 4, 4, 8}, {kernel_size = 2}},                            -- an empty batch
      {{5, 4, 4, 12}, {kernel_size = 2}},                              -- unbatched
    }
    for i, c in ipairs(cases) do
      local x = vol.randn(c[1], {seed = r.seed()})
      if i % 3 == 0 and x:numel() > 0 then sprinkle(x, r, 3) end
      local what = ("avg_pool3d case %d %s %s (VOLUA_SEED=%d)"):format(i, show(c[1]), show(c[2]), SEED)
      assert_close(avg_on(x, c[2], target), avg_on(x, c[2], "cpu"), what)
    end
  end)

  it("avg_pool3d's k 3 s 2 shapes (the ring kernel's; the point kernel's with VOLUA_AVG_RING=0): the same floats as the CPU", function()
    -- The ring kernel (kernels/avg_pool3d.cu; VOLUA_AVG_RING=0 turns it off, as scripts/gpu_check.sh
    -- runs this spec a second time) and the point kernel add each window's taps in double in the
    -- CPU's (d, h, w) order, so the two agree to the bit. The cases, for the ring kernel: each
    -- tile width (16, 32, 64, 128 columns; two tiles across), rows of whole float4 and not,
    -- chunks of output depths (few planes), windows along D of 1 to 5 slices at strides 1 to 3,
    -- padding, ceil_mode, both divisors and an override, NaN and inf.
    local r = generator(SEED * 37 + 5)
    local cases = {
      {{2, 3, 9, 20, 64}, {kernel_size = 3, stride = 2, padding = 1}},  -- 32 columns
      {{1, 2, 7, 33, 258}, {kernel_size = 3, stride = 2, padding = 1}}, -- 129 columns, rows not float4
      {{1, 2, 9, 17, 256}, {kernel_size = 3, stride = 2, padding = 1}}, -- 128 columns, float4 rows
      {{2, 2, 11, 40, 128}, {kernel_size = 3, stride = {1, 2, 2}, padding = 1, count_include_pad = false}},
      {{1, 2, 9, 31, 100}, {kernel_size = {5, 3, 3}, stride = {3, 2, 2}, padding = {2, 0, 1}, ceil_mode = true,
                            divisor_override = 7}},
      {{1, 1, 6, 70, 40}, {kernel_size = {2, 3, 3}, stride = 2, padding = {0, 1, 0}, ceil_mode = true,
                           count_include_pad = false}},
      {{1, 3, 5, 9, 31}, {kernel_size = 3, stride = 2, padding = 1}},   -- 16 columns, rows not float4
      {{2, 2, 6, 12, 32}, {kernel_size = 3, stride = 2, padding = 1, ceil_mode = true}}, -- 16 columns, float4
      {{3, 40, 4, 18, 34}, {kernel_size = 3, stride = 2, padding = {1, 0, 1}}}, -- 120 planes
      {{2, 2, 5, 21, 40}, {kernel_size = {1, 3, 3}, stride = {1, 2, 2}, padding = {0, 1, 1}}},
      {{1, 2, 24, 10, 70}, {kernel_size = 3, stride = 2, padding = 1, count_include_pad = false,
                            ceil_mode = true}},                         -- many output depths, few planes
    }
    for i, c in ipairs(cases) do
      local x = vol.randn(c[1], {seed = r.seed()})
      if i % 2 == 0 then sprinkle(x, r, 4) end
      local what = ("avg_pool3d ring case %d %s %s (VOLUA_SEED=%d)"):format(i, show(c[1]), show(c[2]), SEED)
      assert_same(avg_on(x, c[2], target), avg_on(x, c[2], "cpu"), what)
    end
  end)

  it("adaptive_avg_pool3d and adaptive_max_pool3d on random shapes, sizes, NaN, indices", function()
    random_trials("adaptive pools", 2, function(r)
      local shape = {r.int(0, 3), r.int(1, 4), r.int(1, 12), r.int(1, 12), r.int(1, 40)}
      if shape[1] == 0 and r.chance(0.7) then shape[1] = 1 end
      if r.chance(0.2) then table.remove(shape, 1) end
      local out
      if r.chance(0.2) then
        out = r.int(0, 6)
      else
        out = {}
        for i = 1, 3 do out[i] = r.chance(0.15) and nil or r.int(1, 14) end
      end
      local x = vol.randn(shape, {seed = r.seed()})
      if r.chance(0.4) and x:numel() > 0 then sprinkle(x, r, r.int(1, 4)) end
      return {output_size = out, x = x}
    end, function(c, device)
      local xd = c.x:to(device)
      local m, i = vol.adaptive_max_pool3d(xd, c.output_size, true)
      return {vol.adaptive_avg_pool3d(xd, c.output_size), m, i, vol.adaptive_max_pool3d(xd, c.output_size)}
    end, function(got, want, what)
      assert_close(got[1], want[1], what .. " mean")
      assert_same(got[2], want[2], what .. " max")
      assert_same(got[3], want[3], what .. " indices")
      assert_same(got[4], want[2], what .. " max without indices")
    end)
  end)

  it("adaptive pools over many blocks: (2, 3, 20, 40, 130) to (7, 13, 33) and to 1", function()
    local x = sprinkle(vol.randn({2, 3, 20, 40, 130}, {seed = SEED % 100000 + 11}), generator(SEED + 5), 6)
    for _, out in ipairs {{7, 13, 33}, 1, {20, 40, 130}, {nil, 5, nil}} do
      local what = "adaptive " .. show(out)
      assert_close(vol.adaptive_avg_pool3d(x:to(target), out), vol.adaptive_avg_pool3d(x, out), what .. " mean")
      local gm, gi = vol.adaptive_max_pool3d(x:to(target), out, true)
      local wm, wi = vol.adaptive_max_pool3d(x, out, true)
      assert_same(gm, wm, what .. " max")
      assert_same(gi, wi, what .. " indices")
    end
  end)
end)

describe("pooling family on large tensors (VOLUA_TEST_LARGE=1)", function()
  local why = compare.large_pending(target)
  if why then return pending(why) end
  local full_gc = compare.full_gc

  -- (2, 2, 1024, 1024, 520): 2.18 G elements, 8.7 GB; the second plane pair starts past 2^32 bytes
  it("avg_pool3d on 2.18 G elements: k 2 (the tiled kernel, int indices) and k (1, 1, 2) s 1 (the point kernel past 2^31 outputs)", function()
    local shape = {2, 2, 1024, 1024, 520}
    local xg = vol.rand(shape, {seed = SEED, device = "cuda"})
    local x = xg:cpu()
    for _, args in ipairs {{kernel_size = 2}, {kernel_size = {1, 1, 2}, stride = 1}} do
      local got = vol.avg_pool3d(xg, args):cpu()
      full_gc()
      local want = vol.avg_pool3d(x, args)
      assert.is_true(vol.allclose(got, want, TOL), show(args) .. ": max_abs_diff " .. tostring(vol.max_abs_diff(got, want)))
      got, want = nil, nil
      full_gc()
    end
  end)

  it("avg_pool3d on 2.18 G elements: k 3 s 2 p 1 (the ring kernel; the second plane starts past 2^32 bytes), the CPU's floats", function()
    local shape = {2, 2, 1024, 1024, 520}
    local xg = vol.rand(shape, {seed = SEED + 2, device = "cuda"})
    local x = xg:cpu()
    local args = {kernel_size = 3, stride = 2, padding = 1}
    local got = vol.avg_pool3d(xg, args):cpu()
    xg = nil
    full_gc()
    local want = vol.avg_pool3d(x, args)
    assert.equal(0, vol.max_abs_diff(got, want))
  end)

  it("adaptive pools on 2.18 G elements", function()
    local shape = {2, 2, 1024, 1024, 520}
    local xg = vol.rand(shape, {seed = SEED + 1, device = "cuda"})
    local x = xg:cpu()
    local out = {512, 300, 519}
    local got = vol.adaptive_avg_pool3d(xg, out):cpu()
    local want = vol.adaptive_avg_pool3d(x, out)
    assert.is_true(vol.allclose(got, want, TOL), "mean: max_abs_diff " .. tostring(vol.max_abs_diff(got, want)))
    got, want = nil, nil
    full_gc()
    local gm, gi = vol.adaptive_max_pool3d(xg, out, true)
    local wm, wi = vol.adaptive_max_pool3d(x, out, true)
    assert.equal(0, vol.max_abs_diff(gm:cpu(), wm))
    assert.equal(0, vol.max_abs_diff(gi:cpu(), wi))
  end)
end)
