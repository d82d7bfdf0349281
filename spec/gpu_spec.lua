-- gpu_spec.lua: every op and tensor method on the GPU against the CPU reference, on random shapes
-- and parameters within PyTorch's rules. Each run draws a fresh seed and prints it; VOLUA_SEED=n
-- reproduces a run. Pending without a GPU. VOLUA_TEST_LARGE=1 adds the > 2^31-element cases.
-- VOLUA_GPU_TRIALS sets the random cases per op (default 25). VOLUA_GPU_SPEC_DEVICE=cpu runs the
-- generators against the CPU itself (a self-test of this file on machines without a GPU).
local vol = require "volua"
local compare = require "spec.helpers.gpu_compare"

local target, no_gpu = compare.target("VOLUA_GPU_SPEC_DEVICE")
local TRIALS = tonumber(os.getenv("VOLUA_GPU_TRIALS")) or 25
local RTOL, ATOL = 1e-4, 1e-5 -- the project's float32 tolerance
local nan, inf = 0 / 0, math.huge

if no_gpu then
  describe("GPU against CPU", function() pending(no_gpu) end)
  return
end

local SEED = compare.seed("gpu_spec", target)

-- -- helpers ----

local generator, show = compare.generator, compare.show
local checks = compare.new {target = target, seed = SEED, trials = TRIALS, rtol = RTOL, atol = ATOL}
-- got (on the target) against want (on the CPU): allclose at fp32 tolerance, or bit for bit
-- (indices, and elementwise ops computed the same way); NaN = NaN in both
local assert_close, assert_same = checks.assert_close, checks.assert_same

-- The four binary ops of GPU operands ga, gb against the CPU's of a, b, bit for bit.
local function assert_four(ga, gb, a, b, what)
  assert_same(ga + gb, a + b, what .. " +")
  assert_same(ga - gb, a - b, what .. " -")
  assert_same(ga * gb, a * b, what .. " *")
  assert_same(ga / gb, a / b, what .. " /")
end

-- Draws a case with gen(r) until the CPU accepts it, then runs compare(case, cpu_results).
local random_trials = checks.random_trials

-- Random tensor data of a shape (normal values), reproducible from the case's seed.
local data = compare.data

-- Puts a few NaN and infinite values into a CPU tensor at random positions.
local sprinkle = compare.sprinkle

-- 1 where t > 0.3 (about 38 % of normal values), else 0, elementwise (the API has no comparisons)
local function step(t) return (1 - (1 - (t - 0.3) * 1e30):relu()):relu() end

local function triple(r, lo, hi) return {r.int(lo, hi), r.int(lo, hi), r.int(lo, hi)} end

-- -- ops ----

describe("GPU against CPU: ops (seed " .. SEED .. ")", function()
  teardown(function() vol.set_math("fp32") end)

  it("max_pool3d on random shapes, ceil_mode, dilation, padding, indices and NaN", function()
    random_trials("max_pool3d", 1, function(r)
      local a = {kernel_size = {}, stride = {}, padding = {}, dilation = {},
                 ceil_mode = r.chance(0.5), return_indices = r.chance(0.6)}
      local spatial = {}
      for i = 1, 3 do
        local k, d = r.int(1, 4), r.int(1, 3)
        a.kernel_size[i], a.dilation[i] = k, d
        a.stride[i] = r.int(1, 5) -- stride > kernel included
        a.padding[i] = r.int(0, math.floor(k / 2))
        local span = d * (k - 1) + 1
        spatial[i] = r.int(math.max(1, span - 2 * a.padding[i]), span + 7)
      end
      if r.chance(0.2) then a.stride = nil end -- defaults to kernel_size
      local shape = {r.int(1, 3), r.int(1, 4), spatial[1], spatial[2], spatial[3]}
      if r.chance(0.2) then table.remove(shape, 1) end -- unbatched (C, D, H, W)
      local x = data(shape, r.seed())
      if r.chance(0.4) then sprinkle(x, r, r.int(1, 4)) end
      return {args = a, shape = shape, x = x}
    end, function(c, device)
      return {vol.max_pool3d(c.x:to(device), c.args)}
    end, function(got, want, what)
      assert_same(got[1], want[1], what .. " out") -- a max is exact
      if want[2] then assert_same(got[2], want[2], what .. " indices") end
    end)
  end)

  it("conv3d on random shapes, groups, stride, dilation, padding modes, same/valid", function()
    random_trials("conv3d", 2, function(r)
      local groups = r.pick({1, 1, 2, 3})
      local cin, cout = groups * r.int(1, 3), groups * r.int(1, 3)
      local k = triple(r, 1, 4)
      local a = {stride = triple(r, 1, 3), dilation = triple(r, 1, 3), groups = groups,
                 padding_mode = r.pick({"zeros", "zeros", "reflect", "replicate", "circular"})}
      local roll = r.int(1, 10)
      if roll <= 2 then
        a.padding, a.stride = "same", 1
      elseif roll == 3 then
        a.padding = "valid"
      else
        a.padding = triple(r, 0, 3)
      end
      local shape = {r.int(1, 2), cin, r.int(1, 9), r.int(1, 9), r.int(1, 9)}
      if r.chance(0.15) then table.remove(shape, 1) end
      return {args = a, shape = shape, kernel = k,
              x = data(shape, r.seed()),
              w = data({cout, cin / groups, k[1], k[2], k[3]}, r.seed()),
              b = r.chance(0.6) and data({cout}, r.seed()) or nil}
    end, function(c, device)
      return vol.conv3d(c.x:to(device), c.w:to(device), c.b and c.b:to(device), c.args)
    end, assert_close)
  end)

  it("conv_transpose3d on random shapes, groups, stride, dilation, output_padding", function()
    random_trials("conv_transpose3d", 3, function(r)
      local groups = r.pick({1, 1, 2, 3})
      local cin, cout = groups * r.int(1, 3), groups * r.int(1, 3)
      local k = triple(r, 1, 4)
      local a = {stride = triple(r, 1, 3), dilation = triple(r, 1, 3), padding = triple(r, 0, 2),
                 groups = groups, output_padding = {}}
      for i = 1, 3 do
        a.output_padding[i] = r.int(0, math.max(a.stride[i], a.dilation[i]) - 1)
      end
      local shape = {r.int(1, 2), cin, r.int(1, 5), r.int(1, 5), r.int(1, 5)}
      if r.chance(0.15) then table.remove(shape, 1) end
      return {args = a, shape = shape,
              x = data(shape, r.seed()),
              w = data({cin, cout / groups, k[1], k[2], k[3]}, r.seed()),
              b = r.chance(0.5) and data({cout}, r.seed()) or nil}
    end, function(c, device)
      return vol.conv_transpose3d(c.x:to(device), c.w:to(device), c.b and c.b:to(device), c.args)
    end, assert_close)
  end)

  it("group_norm on ranks 2 to 5, with and without affine, large means", function()
    random_trials("group_norm", 4, function(r)
      local groups = r.int(1, 4)
      local shape = {r.int(1, 3), groups * r.int(1, 3)}
      for _ = 1, r.int(0, 3) do shape[#shape + 1] = r.int(1, 7) end
      local C = shape[2]
      local eps = r.pick({1e-5, 1e-3, 0.1})
      return {args = {groups = groups, eps = eps, shape = shape},
              x = data(shape, r.seed(), r.chance(0.3) and 1000 or 0),
              w = r.chance(0.7) and data({C}, r.seed()) or nil,
              b = r.chance(0.7) and data({C}, r.seed()) or nil}
    end, function(c, device)
      local w = c.w and c.w:to(device)
      return vol.group_norm(c.x:to(device), c.args.groups, w, w and c.b and c.b:to(device), c.args.eps)
    end, assert_close)
  end)

  it("mean over random sets of dims, keepdim", function()
    random_trials("mean", 5, function(r)
      local shape = {}
      for i = 1, r.int(1, 5) do shape[i] = r.int(1, 6) end
      local dims = {}
      for i = 1, #shape do if r.chance(0.5) then dims[#dims + 1] = i end end
      local args = {shape = shape, keepdim = r.chance(0.5)}
      if #dims == 0 then
        args.dims = nil
      elseif #dims == 1 and r.chance(0.5) then
        args.dims = dims[1]
      else
        args.dims = dims
      end
      return {args = args, x = data(shape, r.seed(), r.chance(0.2) and 100 or 0)}
    end, function(c, device)
      return vol.mean(c.x:to(device), c.args.dims, c.args.keepdim)
    end, assert_close)
  end)

  it("sum over random sets of dims, keepdim", function()
    random_trials("sum", 5, function(r)
      local shape = {}
      for i = 1, r.int(1, 5) do shape[i] = r.int(1, 6) end
      local dims = {}
      for i = 1, #shape do if r.chance(0.5) then dims[#dims + 1] = i end end
      local args = {shape = shape, keepdim = r.chance(0.5), dims = #dims > 0 and dims or nil}
      return {args = args, x = data(shape, r.seed(), r.chance(0.2) and 100 or 0)}
    end, function(c, device)
      return vol.sum(c.x:to(device), c.args.dims, c.args.keepdim)
    end, assert_close)
  end)

  it("conv3d_group_norm_mean on random shapes, conv groups, padding modes", function()
    random_trials("conv3d_group_norm_mean", 6, function(r)
      local cg, gn = r.pick({1, 1, 2}), r.int(1, 3)
      local cin, cout = cg * r.int(1, 3), cg * gn * r.int(1, 2)
      local k = triple(r, 1, 3)
      local a = {stride = triple(r, 1, 2), dilation = triple(r, 1, 2), padding = triple(r, 0, 2),
                 groups = cg, eps = r.pick({1e-5, 1e-2}),
                 padding_mode = r.pick({"zeros", "zeros", "reflect", "replicate", "circular"})}
      local shape = {r.int(1, 3), cin, r.int(2, 9), r.int(2, 9), r.int(2, 9)}
      return {args = a, gn = gn, shape = shape,
              x = data(shape, r.seed(), r.chance(0.3) and 50 or 0),
              cw = data({cout, cin / cg, k[1], k[2], k[3]}, r.seed()),
              cb = r.chance(0.7) and data({cout}, r.seed()) or nil,
              gw = r.chance(0.8) and data({cout}, r.seed()) or nil,
              gb = r.chance(0.8) and data({cout}, r.seed()) or nil}
    end, function(c, device)
      local gw = c.gw and c.gw:to(device)
      return vol.conv3d_group_norm_mean(c.x:to(device), c.cw:to(device), c.cb and c.cb:to(device), c.gn,
        gw, gw and c.gb and c.gb:to(device), c.args)
    end, assert_close)
  end)

  -- Fixed shapes that reach each kernel variant the random ones may miss.
  it("group_norm: groups in many chunks, rows in several, odd sizes, many groups, a mean far off zero", function()
    -- kernels/group_norm.cu: the fused kernel (chunks of 16384 values; a group's blocks wait for its
    -- last one), the same with chunks of 64 and 1000 values (VOLUA_GN_CHUNK: many blocks a group,
    -- channel ends inside chunks), and the three passes (VOLUA_GN_FUSED=0: a group's statistics in
    -- chunks of at least 4096 values, rows in chunks); float4s from the first 16-byte boundary, the
    -- rest one by one
    local cases = {
      {shape = {1, 2, 64, 64, 20}, groups = 1, offset = 1000}, -- 163840 values in one group
      {shape = {2, 4, 40, 40, 30}, groups = 2, offset = 0},
      {shape = {64, 32, 3, 3, 3}, groups = 16, offset = 5},    -- 1024 groups of 54 (rows of 27: no float4s)
      {shape = {256, 64, 2, 2, 2}, groups = 32, offset = 0},   -- 8192 groups of 16
      {shape = {3, 6, 5, 7, 9}, groups = 3, offset = 0},       -- rows of 315 and groups of 630: odd starts
      {shape = {2, 4, 3, 101, 109}, groups = 2, offset = 0},   -- rows of 33027, odd starts
      {shape = {1, 3, 7, 61, 97}, groups = 1, offset = 0},     -- one group of 124257: chunks end mid-row
      {shape = {2, 8, 16, 32, 33}, groups = 4, offset = 1e5},  -- mean 1e5, spread 1: E[x^2] - E[x]^2 in float32 fails
    }
    local ffi = require "ffi"
    pcall(ffi.cdef, "int setenv(const char *, const char *, int); int unsetenv(const char *);")
    local settings = {{}, {VOLUA_GN_CHUNK = "64"}, {VOLUA_GN_CHUNK = "1000"}, {VOLUA_GN_FUSED = "0"}}
    for _, env in ipairs(settings) do
      for k, v in pairs(env) do ffi.C.setenv(k, v, 1) end
      local ok, e = pcall(function()
        for i, c in ipairs(cases) do
          local x = data(c.shape, SEED + i, c.offset)
          local w, b = data({c.shape[2]}, SEED + 10 + i), data({c.shape[2]}, SEED + 20 + i)
          local what = "group_norm " .. show(c) .. " " .. show(env)
          assert_close(vol.group_norm(x:to(target), c.groups, w:to(target), b:to(target), 1e-5),
                       vol.group_norm(x, c.groups, w, b, 1e-5), what)
          assert_close(vol.group_norm(x:to(target), c.groups), vol.group_norm(x, c.groups), what .. " no affine")
        end
      end)
      for k in pairs(env) do ffi.C.unsetenv(k) end
      assert(ok, e)
    end
  end)

  it("mean: one block per output (long reductions) and one thread per output", function()
    local x = data({3, 40, 50, 7}, SEED + 31, 10)
    for _, dims in ipairs({{2, 3}, {1, 2, 3, 4}, {1}, {4}, {1, 3}}) do
      for _, keep in ipairs({false, true}) do
        assert_close(vol.mean(x:to(target), dims, keep), vol.mean(x, dims, keep),
                     "mean dims " .. show(dims) .. " keepdim " .. tostring(keep))
      end
    end
    assert_close(vol.mean(x:to(target)), vol.mean(x), "mean of all")
  end)

  -- (mean.cu after coalescing: only trailing dims reduced: a block per (output, slice) of each
  -- output's contiguous run; else the last dim reduced in runs of 64 or more: a block per
  -- (output, slice) walking the runs; last dim kept: a thread per output, slices of the reduced
  -- dims, one or several of them)
  local function reduction_cases()
    local x = data({2, 3, 29, 41, 51}, SEED + 41, 5)
    sprinkle(x, generator(SEED + 44), 1)
    local y = data({2, 300, 8, 40}, SEED + 42)
    local y2 = data({2, 300, 7, 9}, SEED + 45)
    local z = data({20, 6, 30, 40}, SEED + 43, -3)
    return {
      {x, {3, 4, 5}}, -- contiguous runs of 60 639 in 7 slices (runs off 16-byte boundaries), 6 outputs, one NaN
      {x, {2, 3, 4, 5}}, -- contiguous runs of 181 917
      {x, {2, 4, 5}}, -- (C, H, W) reduced, (N, D) kept: 58 outputs, each 3 runs of 2091
      {y, 2},         -- columns, 4 outputs a thread: 300 reduced elements in slices, 640 outputs
      {y, {1, 2, 3}}, -- columns: one reduced dim of 4800 after coalescing
      {y2, 2},        -- columns of 63 outputs: one output a thread
      {z, 2},         -- columns with a short reduction (6): still a thread per 4 outputs
      {z, {1, 3}},    -- columns: two reduced dims (20 and 30)
      {z, {1, 4}},    -- runs of 40: a thread per output
      {z, nil},       -- everything: the whole-run walk
    }
  end

  it("mean: rows, columns and threads, reductions in slices, NaN, an empty reduction", function()
    for _, c in ipairs(reduction_cases()) do
      for _, keep in ipairs({false, true}) do
        assert_close(vol.mean(c[1]:to(target), c[2], keep), vol.mean(c[1], c[2], keep),
                     "mean of " .. show(c[1].shape) .. " dims " .. show(c[2]) .. " keepdim " .. tostring(keep))
      end
    end
    local e = vol.zeros({2, 0, 3})
    assert_close(vol.mean(e:to(target), 2), vol.mean(e, 2), "mean over an empty dim (NaN)")
  end)

  it("sum over dims: the mean's kernels without the division, an empty reduction (0)", function()
    for _, c in ipairs(reduction_cases()) do
      for _, keep in ipairs({false, true}) do
        assert_close(vol.sum(c[1]:to(target), c[2], keep), vol.sum(c[1], c[2], keep),
                     "sum of " .. show(c[1].shape) .. " dims " .. show(c[2]) .. " keepdim " .. tostring(keep))
      end
    end
    local x = data({3, 40, 50, 7}, SEED + 31, 10)
    for _, dims in ipairs({{2, 3}, {1}, {4}, {1, 3}}) do
      assert_close(vol.sum(x:to(target), dims), vol.sum(x, dims), "sum dims " .. show(dims))
    end
    local e = vol.zeros({2, 0, 3})
    assert_close(vol.sum(e:to(target), 2), vol.sum(e, 2), "sum over an empty dim (0)")
  end)

  it("conv3d_group_norm_mean: many spatial chunks per channel, a large mean", function()
    local x = data({2, 3, 12, 20, 21}, SEED + 41, 50)
    local cw, cb = data({8, 3, 3, 3, 3}, SEED + 42), data({8}, SEED + 43)
    local gw, gb = data({8}, SEED + 44), data({8}, SEED + 45)
    local args = {padding = 1}
    assert_close(vol.conv3d_group_norm_mean(x:to(target), cw:to(target), cb:to(target), 4, gw:to(target),
                                            gb:to(target), args),
                 vol.conv3d_group_norm_mean(x, cw, cb, 4, gw, gb, args), "conv3d_group_norm_mean chunks")
  end)

  -- Runs max_pool3d on each case {shape, args, data} on the target and on the CPU, and compares
  -- values (and indices, where asked) exactly. Data: uniform with a few NaN and infinities
  -- (sprinkle), or "ties": values in {0, 1, 2}, so that most windows hold their maximum more than
  -- once; "steps": the same from sums of steps, with NaN and infinities; "nans": {0, 1, 2} with about
  -- 10 % NaN (the last NaN wins); "infs": mostly -inf (windows of -inf alone give their first
  -- position), the rest +inf.
  local function pool_cases(label, cases, seed, r)
    for i, c in ipairs(cases) do
      local x = data(c[1], seed + i)
      if c[3] == "ties" then -- values in {0, 1, 2}: most windows hold their maximum more than once
        local s = c[1]
        for a = 1, s[1] do for b = 1, s[2] do for d = 1, s[3] do for h = 1, s[4] do for w = 1, s[5] do
          x:set(r.int(0, 2), a, b, d, h, w)
        end end end end end
      elseif c[3] == "steps" then
        x = step(x) + step(data(c[1], seed + 100 + i))
        sprinkle(x, r, 3)
      elseif c[3] == "nans" then -- 0 * inf where x > 1.3
        x = step(x - 1) * 1e30 * 1e10 * 0 + step(data(c[1], seed + 100 + i)) + step(data(c[1], seed + 200 + i))
      elseif c[3] == "infs" then
        x = ((x - 1.5):relu() * 1e30 - 1) * 3e38 * 10 -- -inf where x <= 1.5 (about 93 %), else +inf
      else
        sprinkle(x, r, 3)
      end
      local what = ("max_pool3d %s case %d %s %s"):format(label, i, show(c[1]), show(c[2]))
      local ok, want, want_i = pcall(vol.max_pool3d, x, c[2])
      assert.is_true(ok, what .. ": the CPU raised " .. tostring(want))
      local got, got_i = vol.max_pool3d(x:to(target), c[2])
      assert_same(got, want, what)
      if c[2].return_indices then assert_same(got_i, want_i, what .. " indices") end
    end
  end

  -- Each shape {dims, args} of a spec's list with each kind of data (pool_cases': uniform, "steps",
  -- "nans", "infs"), without and with indices: {dims, defaults and args, data} in that order.
  local function pool_matrix(shapes, defaults)
    local cases = {}
    for _, c in ipairs(shapes) do
      for _, data_kind in ipairs({false, "steps", "nans", "infs"}) do
        for _, ri in ipairs({false, true}) do
          local a = {}
          for k, v in pairs(defaults or {}) do a[k] = v end
          for k, v in pairs(c[2]) do a[k] = v end
          a.return_indices = ri
          cases[#cases + 1] = {c[1], a, data_kind or nil}
        end
      end
    end
    return cases
  end

  -- Planes larger than the random shapes': the separable kernel (values only; slices of 4096
  -- elements or more) and the slice kernel (with indices) of kernels/max_pool3d.cu (16- and 4-byte
  -- loads, slices up to 150 x 150; windows of up to 4 input slices loaded together and of 5 in a
  -- loop; output depths whose window holds no input slice; the separable kernel with and without
  -- its row maxima), and the tiled kernel. Smaller slices go to the slab kernel (the next spec),
  -- windows of 3 x 3 x 3 at stride 1 and of 3 x 3 or 5 x 5 at stride 2 along h and w to the stream
  -- and ring kernels (the specs after it): a dilation or another kernel here keeps most shapes off
  -- them; the k 3 s 1 cases with indices are theirs by default, and scripts/gpu_check.sh runs the
  -- pooling specs again with them off.
  it("max_pool3d on larger planes, values only and with indices", function()
    local r = generator(SEED * 31 + 7)
    local cases = {
      {{16, 32, 40, 40, 40}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}},
      {{1, 2, 30, 64, 64}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}},
      {{2, 3, 17, 61, 67}, {kernel_size = {3, 2, 3}, stride = {1, 1, 1}, padding = {1, 1, 0}}}, -- odd W: 4-byte loads
      {{1, 1, 9, 67, 72}, {kernel_size = {4, 2, 2}, stride = {1, 2, 1}, dilation = {2, 1, 1}, ceil_mode = true}},
      {{3, 2, 6, 130, 130}, {kernel_size = {2, 1, 1}, stride = {2, 1, 1}}},
      {{1, 2, 12, 64, 72}, {kernel_size = {4, 2, 2}, stride = 1, dilation = {3, 1, 1}}}, -- 4 slices spanning 10
      {{2, 2, 11, 64, 80}, {kernel_size = {5, 2, 3}, stride = {1, 2, 2}, padding = {2, 1, 1}}}, -- 5 slices: the loop
      {{2, 2, 5, 150, 150}, {kernel_size = 3, stride = 3}},
      -- L1-43's plane, and a plane with every window parameter different along H
      {{1, 3, 9, 128, 128}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}},
      {{1, 2, 4, 97, 130}, {kernel_size = {2, 4, 3}, stride = {1, 3, 2}, padding = {0, 2, 1}, dilation = {1, 2, 1}}},
      {{1, 3, 2, 64, 64}, {kernel_size = {2, 3, 3}, stride = 1, padding = 1, dilation = {3, 1, 1}}}, -- no valid slice: -inf
      -- the separable kernel without row maxima (slice and rows over 100 KB, the slice alone not; or
      -- no more taps than the two stages: k 3, s 2), with 16- and 4-byte loads
      {{1, 2, 9, 63, 63}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}},
      {{2, 3, 13, 63, 63}, {kernel_size = {3, 3, 2}, stride = 2, ceil_mode = true}, "steps"},
      {{1, 2, 5, 128, 128}, {kernel_size = 3, stride = 1, padding = 1, dilation = {1, 1, 2}}},
      {{1, 2, 4, 97, 160}, {kernel_size = {2, 4, 3}, stride = 1, padding = {0, 2, 1}, dilation = {1, 2, 1}}},
      {{1, 2, 5, 128, 128}, {kernel_size = 3, stride = 1, padding = 1, dilation = {1, 1, 2}}, "steps"},
      -- windows that tile the input with kW 2 and W a multiple of 4: the tiled kernel (kD, kH 1 or 2)
      {{2, 3, 8, 64, 64}, {kernel_size = 2}},
      {{1, 2, 9, 33, 68}, {kernel_size = 2, stride = 2}}, -- odd D and H: the last slice and row unread
      {{2, 2, 6, 10, 12}, {kernel_size = {1, 2, 2}}},
      {{1, 2, 6, 10, 8}, {kernel_size = {2, 1, 2}}},
      {{3, 1, 3, 5, 4}, {kernel_size = {1, 1, 2}}},
      {{70000, 1, 2, 2, 4}, {kernel_size = 2}}, -- more planes than a grid's z: the plane loop
      {{1, 2, 9, 33, 68}, {kernel_size = 2, ceil_mode = true}}, -- a window past the end: not tiled
      {{1, 2, 8, 8, 66}, {kernel_size = 2}}, -- W not a multiple of 4: not tiled
      -- the tiled kernel with indices (NaN: the last NaN's index), and on integer values, where ties
      -- must give the first maximum's index in (d, h, w) order
      {{2, 3, 8, 64, 64}, {kernel_size = 2, return_indices = true}},
      {{1, 2, 9, 33, 68}, {kernel_size = {1, 2, 2}, return_indices = true}},
      {{70000, 1, 2, 2, 4}, {kernel_size = 2, return_indices = true}},
      {{2, 3, 6, 10, 16}, {kernel_size = 2, return_indices = true}, "ties"},
      {{2, 3, 6, 10, 16}, {kernel_size = {2, 1, 2}, return_indices = true}, "ties"},
      -- the slice kernel with indices (windows that do not tile, slices that fit): its two stages
      -- (d taps, then h x w taps) must give the scan's index. "steps": values in {0, 1, 2}, so that
      -- most windows hold their maximum in several slices, rows and columns, and the first one in
      -- (d, h, w) order must win; "nans": the same with about 10 % NaN (the last NaN wins); "infs":
      -- most values -inf (windows of -inf alone give their first position), the rest +inf. A CPU
      -- port of the two stages that took ties in the second stage's (h, w) order, or the last
      -- maximum, or the first NaN, gave wrong indices on these data (bench/NOTES.md, s32)
      {{1, 3, 9, 128, 128}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3, return_indices = true}},
      {{1, 3, 9, 128, 128}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3, return_indices = true}, "steps"},
      {{2, 2, 6, 64, 64}, {kernel_size = 3, stride = 1, padding = 1, return_indices = true}, "steps"},
      {{2, 2, 6, 64, 64}, {kernel_size = 3, stride = 1, padding = 1, return_indices = true}, "infs"},
      {{2, 2, 6, 64, 64}, {kernel_size = 3, stride = 1, padding = 1, return_indices = true}, "nans"},
      {{2, 3, 9, 65, 67}, {kernel_size = {3, 2, 3}, stride = 1, padding = {1, 1, 0}, return_indices = true},
       "steps"}, -- odd W: 4-byte loads
      {{1, 1, 9, 67, 72}, {kernel_size = {4, 2, 2}, stride = {1, 2, 1}, dilation = {2, 1, 1}, ceil_mode = true,
                           return_indices = true}, "steps"}, -- the last H window past the end
      {{1, 2, 12, 64, 72}, {kernel_size = {4, 2, 2}, stride = 1, dilation = {3, 1, 1}, return_indices = true},
       "steps"}, -- 4 slices spanning 10
      {{2, 2, 11, 64, 80}, {kernel_size = {5, 2, 3}, stride = {1, 2, 2}, padding = {2, 1, 1},
                            return_indices = true}, "steps"}, -- 5 slices: the loop
      {{1, 2, 4, 97, 130}, {kernel_size = {2, 4, 3}, stride = {1, 3, 2}, padding = {0, 2, 1},
                            dilation = {1, 2, 1}, return_indices = true}, "steps"},
      {{1, 2, 4, 97, 130}, {kernel_size = {2, 4, 3}, stride = {1, 3, 2}, padding = {0, 2, 1},
                            dilation = {1, 2, 1}, return_indices = true}, "infs"},
      {{1, 2, 4, 97, 130}, {kernel_size = {2, 4, 3}, stride = {1, 3, 2}, padding = {0, 2, 1},
                            dilation = {1, 2, 1}, return_indices = true}, "nans"},
      {{1, 3, 2, 64, 64}, {kernel_size = {2, 3, 3}, stride = 1, padding = 1, dilation = {3, 1, 1},
                           return_indices = true}}, -- no valid slice: -inf at the window's first position
      -- the plane kernel with indices: a plane too large, a slab over its budget, rows below 32
      {{2, 2, 5, 150, 150}, {kernel_size = 3, stride = 3, return_indices = true}, "steps"},
      {{1, 2, 12, 60, 60}, {kernel_size = {5, 3, 3}, stride = 1, padding = {2, 1, 1}, return_indices = true},
       "steps"},
      {{1, 2, 6, 128, 128}, {kernel_size = 3, stride = 5, padding = 1, return_indices = true}, "steps"},
    }
    pool_cases("values", cases, SEED + 70, r)
  end)

  -- Slices below 4096 elements, and larger ones with kD 1: the slab kernel (R output depths a
  -- block, from the part of the input their windows cover, with -inf where they cover padding or
  -- run past the end). With padding and dilation along D the windows' first valid slices do not
  -- grow with the output depth (k 3, p 1, d 3, s 1: 2, then 0, 1, 2, ...); blocks past a plane's
  -- first (many planes: R below the whole depth); kernels (3, 3, 3), (1, 3, 3) (taps unrolled) and
  -- others; more planes than a grid's y; windows past the end (ceil_mode) and windows with no input
  -- slice; each with ties, NaN and infinities. A mutant that takes the last of equal maxima fails
  -- it (bench/NOTES.md, thirty-third session).
  it("max_pool3d on small slices (the slab kernel), values only and with indices", function()
    local r = generator(SEED * 37 + 11)
    local shapes = {
      {{2, 5, 8, 14, 10}, {kernel_size = 3, stride = 1, padding = 1}}, -- 10 columns: not the stream kernel's
      {{2, 3, 16, 28, 28}, {kernel_size = 3, stride = 2, padding = 1}}, -- 14 columns: not the ring kernel's
      {{8, 64, 20, 10, 12}, {kernel_size = 3, stride = 1, padding = 1, dilation = {3, 1, 1}}}, -- starts 2, 0, 1, ...
      {{1, 2, 21, 9, 12}, {kernel_size = {3, 2, 2}, stride = {2, 1, 1}, padding = {1, 1, 0}, dilation = {3, 1, 2}}},
      {{4, 64, 24, 12, 12}, {kernel_size = 3, stride = 2, padding = 1}}, -- 256 planes: 2 blocks a plane
      {{2, 3, 13, 31, 31}, {kernel_size = 3, stride = 2, ceil_mode = true}}, -- the last windows past the end
      {{2, 3, 7, 9, 11}, {kernel_size = {2, 3, 2}, stride = 1, padding = {1, 1, 0}}}, -- odd slices: 4-byte loads
      {{1, 3, 2, 12, 12}, {kernel_size = {2, 3, 3}, stride = 1, padding = 1, dilation = {3, 1, 1}}}, -- no valid slice
      {{1, 2, 30, 50, 50}, {kernel_size = {3, 3, 2}, stride = 1, padding = 1}}, -- few planes: a depth a block
      {{32, 16, 6, 50, 50}, {kernel_size = {3, 3, 2}, stride = 1, padding = 1}}, -- 4 slices fit: 2 depths a block
      {{1, 1, 9, 33, 35}, {kernel_size = {4, 2, 2}, stride = {1, 2, 1}, dilation = {2, 1, 1}, ceil_mode = true}},
      {{2, 3, 4, 28, 28}, {kernel_size = {1, 3, 3}, stride = {1, 2, 2}, padding = {0, 1, 1}}}, -- I3D's first pooling
      {{16, 32, 5, 15, 17}, {kernel_size = {1, 3, 3}, stride = 1, padding = {0, 1, 1}, dilation = {1, 2, 1},
                             ceil_mode = true}},
      -- the last rows and columns no window reaches (not staged), with 16- and 4-byte loads
      {{2, 3, 6, 9, 12}, {kernel_size = {1, 3, 3}, stride = {1, 2, 2}}},
      {{2, 3, 6, 9, 13}, {kernel_size = {1, 2, 2}, stride = 2}},
      -- larger slices with kD 1: the slab kernel up to 64 KB, beyond it not (I3D's first pooling, the
      -- first shape, is the ring kernel's by default: scripts/gpu_check.sh runs it here with that off)
      {{2, 3, 4, 112, 112}, {kernel_size = {1, 3, 3}, stride = {1, 2, 2}, padding = {0, 1, 1}}},
      {{1, 2, 3, 140, 140}, {kernel_size = {1, 3, 3}, stride = 1, padding = {0, 1, 1}}},
    }
    local cases = pool_matrix(shapes)
    cases[#cases + 1] = {{70000, 1, 2, 2, 6}, {kernel_size = {1, 2, 2}, stride = 1}} -- planes past a grid's y
    cases[#cases + 1] = {{70000, 1, 2, 2, 6}, {kernel_size = {1, 2, 2}, stride = 1, return_indices = true}, "steps"}
    pool_cases("slab", cases, SEED + 470, r)
  end)

  -- Windows of 3 x 3 x 3 at stride 1 (Inception's branch pooling): the stream kernel (a block
  -- walks a tile's input slices in order, staged two ahead, and folds each slice's 3 x 3 winners
  -- into the output depths still open). Its tiles: 128, 64, 32 or 16 columns (16: two rows a
  -- warp), one or several column tiles, partial row and column tiles; rows of whole float4 or not
  -- (4-byte copies); padding 0 or 1 per dim; planes cut into chunks of output depths when they are
  -- few (each chunk reads the slices before it again); inputs one slice deep (the windows' other
  -- slices are padding). Each with ties, NaN and infinities, with and without indices.
  it("max_pool3d k 3 s 1 (the stream kernel), values only and with indices", function()
    local r = generator(SEED * 41 + 13)
    local shapes = {
      {{2, 3, 9, 128, 128}, {padding = 1}},
      {{1, 2, 12, 64, 72}, {padding = 0}}, -- 70 outputs a row: 128-column tiles, mostly idle
      {{1, 2, 10, 64, 64}, {padding = 1}}, -- 64-column tiles, 32 rows
      {{1, 3, 7, 61, 67}, {padding = 1}}, -- odd rows: 4-byte copies
      {{1, 2, 6, 40, 300}, {padding = {1, 0, 1}}}, -- three column tiles
      {{2, 2, 5, 130, 33}, {padding = {0, 1, 1}}}, -- 33 columns (64-column tiles, 4-byte copies), 130 rows
      {{1, 2, 6, 150, 30}, {padding = {1, 1, 0}}}, -- 28 columns: 32-column tiles of 32 rows
      {{2, 3, 5, 28, 28}, {padding = 1}}, -- I3D's 28 x 28 branch
      {{1, 1, 40, 64, 64}, {padding = 1}}, -- one plane: 10 chunks of 4 output depths
      {{1, 2, 3, 64, 64}, {padding = 0}}, -- one output depth
      {{1, 2, 1, 64, 64}, {padding = 1}}, -- one input slice
      -- 16 columns or fewer: tiles of 16 x 16, two rows a warp (from 12 columns by default; the
      -- narrower ones reach the kernel when forced, VOLUA_POOL_STREAM=2, as scripts/gpu_check.sh runs it)
      {{2, 5, 8, 14, 14}, {padding = 1}}, -- I3D's 14 x 14 branch
      {{3, 4, 6, 7, 7}, {padding = 1}},
      {{1, 2, 5, 40, 13}, {padding = {0, 1, 0}}}, -- 11 columns, 3 row tiles, 4-byte copies
    }
    local cases = pool_matrix(shapes, {kernel_size = 3, stride = 1})
    pool_cases("stream", cases, SEED + 530, r)
  end)

  -- Windows of 3 x 3 and 5 x 5 at stride 2 along h and w (the downsampling poolings): the ring
  -- kernel (each input slice a block reads staged once, in a ring of buffers: one output depth's
  -- window slices and the next one's new ones; 5 x 5 only with indices, and 16 output columns or
  -- more, unless forced: the shapes below 16 columns are the slab kernel's by default, and
  -- scripts/gpu_check.sh runs them here with VOLUA_POOL_RING=2). Its tiles: 16, 32, 64 and 128
  -- columns, partial tiles, rows of whole float4 or not; along d: k 3 s 2 (a slice shared by two
  -- output depths), k 3 s 1, k 2 s 2 (the last slice unread), k 5 s 2 (7 buffers), dilation 2, a
  -- window with no input slice, chunks of output depths; ceil_mode (windows past the end); more
  -- planes than a grid's y. Each with ties, NaN and infinities, with and without indices.
  it("max_pool3d k 3 and 5 s 2 (the ring kernel), values only and with indices", function()
    local r = generator(SEED * 43 + 17)
    local shapes = {
      {{2, 3, 9, 64, 64}, {kernel_size = 3, stride = 2, padding = 1}}, -- 32-column tiles
      {{1, 2, 12, 128, 136}, {kernel_size = 3, stride = 2, padding = 1}}, -- 68 columns: 128-column tiles
      {{1, 2, 10, 100, 100}, {kernel_size = 3, stride = 2, padding = 1}}, -- 64-column tiles
      {{2, 2, 13, 66, 70}, {kernel_size = 3, stride = 2, ceil_mode = true}}, -- past the end; 4-byte copies
      {{1, 2, 12, 64, 64}, {kernel_size = 5, stride = 2, padding = 2}},
      {{1, 2, 11, 70, 90}, {kernel_size = 5, stride = 2, padding = {1, 2, 0}}},
      {{1, 2, 8, 64, 64}, {kernel_size = 3, stride = {1, 2, 2}, padding = 1}},
      {{1, 2, 9, 64, 64}, {kernel_size = {2, 3, 3}, stride = 2, padding = {0, 1, 1}}}, -- the last slice unread
      {{1, 2, 12, 64, 64}, {kernel_size = 3, stride = 2, padding = 1, dilation = {2, 1, 1}}},
      {{1, 3, 2, 64, 64}, {kernel_size = {2, 3, 3}, stride = {1, 2, 2}, padding = 1, dilation = {3, 1, 1}}}, -- no slice
      {{1, 1, 40, 64, 64}, {kernel_size = 3, stride = 2, padding = 1}}, -- one plane: 5 chunks of 4 depths
      {{70000, 1, 2, 6, 36}, {kernel_size = {1, 3, 3}, stride = 2}}, -- planes past a grid's y
      -- 16 columns or fewer: tiles of 16 x 16, two rows a warp (16 columns by default, fewer forced)
      {{1, 2, 6, 32, 32}, {kernel_size = 3, stride = 2, padding = 1}}, -- 16 columns
      {{2, 3, 16, 28, 28}, {kernel_size = 3, stride = 2, padding = 1}}, -- I3D's third pooling
      {{1, 2, 7, 21, 30}, {kernel_size = 5, stride = 2, padding = 2}},
      {{2, 2, 9, 13, 11}, {kernel_size = 3, stride = 2, ceil_mode = true}},
    }
    local cases = pool_matrix(shapes)
    pool_cases("ring", cases, SEED + 610, r)
  end)

  it("the KernelBench shapes of issue 4, reduced in batch", function()
    local x = vol.rand({1, 32, 16, 32, 32}, {seed = SEED + 51})
    local w = vol.rand({32, 16, 3, 3, 3}, {seed = SEED + 52})
    local args = {stride = 2, padding = 1, dilation = 2}
    assert_close(vol.conv_transpose3d(x:to(target), w:to(target), nil, args),
                 vol.conv_transpose3d(x, w, nil, args), "L1-77 like")
    x = vol.rand({1, 3, 16, 32, 32}, {seed = SEED + 53})
    w = vol.rand({16, 3, 3, 5, 7}, {seed = SEED + 54})
    assert_close(vol.conv3d(x:to(target), w:to(target)), vol.conv3d(x, w), "L1-60 like")
    x = vol.rand({2, 32, 20, 20, 20}, {seed = SEED + 55})
    local margs = {kernel_size = 3, stride = 2, padding = 1, dilation = 3, return_indices = true}
    local go, gi = vol.max_pool3d(x:to(target), margs)
    local wo, wi = vol.max_pool3d(x, margs)
    assert_same(go, wo, "L1-43 like out")
    assert_same(gi, wi, "L1-43 like indices")
  end)

  -- The tf32 tolerance (rtol 1e-2, atol 1e-2) is the golden cases' and holds for their data: inputs
  -- uniform in [0, 1), weights of PyTorch's init scale (here +-1/sqrt(K), K = 108). With randn
  -- inputs and weights this spec failed at seed 1795328829: a model of TF32 (inputs truncated,
  -- weights rounded, exact sums) puts ~4 % of such runs over the tolerance, with outputs near zero
  -- where only atol applies. On the golden regime the model's worst ratio in 2000 runs is 0.08.
  it("tf32 math stays within the tf32 tolerance", function()
    local x = vol.rand({2, 4, 7, 8, 9}, {seed = SEED + 61})
    local w = data({6, 4, 3, 3, 3}, SEED + 62) * (1 / math.sqrt(4 * 27))
    local want = vol.conv3d(x, w)
    vol.set_math("tf32")
    local got = vol.conv3d(x:to(target), w:to(target)):cpu()
    vol.set_math("fp32")
    assert.is_true(vol.allclose(got, want, {rtol = 1e-2, atol = 1e-2}),
                   "max_abs_diff " .. tostring(vol.max_abs_diff(got, want)))
  end)

  -- "honoured": in tf32 the convolutions round their operands (error ~1e-3 relative), in fp32
  -- they do not (error ~1e-7), for conv3d, conv_transpose3d and the fused op alike.
  it("set_math is honoured by every convolution kernel", function()
    if target ~= "cuda" then return end
    local x, w = data({2, 8, 6, 7, 8}, SEED + 63), data({8, 8, 3, 3, 3}, SEED + 64)
    local wt = data({8, 4, 3, 3, 3}, SEED + 65)
    local gw, gb = data({8}, SEED + 66), data({8}, SEED + 67)
    local calls = {
      conv3d = function(d) return vol.conv3d(x:to(d), w:to(d)) end,
      conv_transpose3d = function(d) return vol.conv_transpose3d(x:to(d), wt:to(d), nil, {stride = 2}) end,
      conv3d_group_norm_mean = function(d)
        return vol.conv3d_group_norm_mean(x:to(d), w:to(d), nil, 2, gw:to(d), gb:to(d))
      end,
    }
    for name, f in pairs(calls) do
      local want = f("cpu")
      local scale = want:abs():max()
      local fp32 = f(target):cpu()
      vol.set_math("tf32")
      local ok, tf32 = pcall(f, target)
      vol.set_math("fp32")
      assert(ok, tf32)
      tf32 = tf32:cpu()
      local e32, etf = vol.max_abs_diff(fp32, want) / scale, vol.max_abs_diff(tf32, want) / scale
      assert.is_true(e32 < 1e-5, name .. ": fp32 relative error " .. e32)
      assert.is_true(etf < 1e-2, name .. ": tf32 relative error " .. etf)
      -- the fused op averages its rounding errors away, so only ask that tf32 changed its result
      local floor = name == "conv3d_group_norm_mean" and 0 or 1e-5
      assert.is_true(etf > floor and vol.max_abs_diff(tf32, fp32) > 0,
        name .. ": tf32 relative error " .. etf .. " (fp32 " .. e32 .. "): math mode not honoured")
    end
  end)
end)

-- -- tensor methods ----

describe("GPU against CPU: tensor methods (seed " .. SEED .. ")", function()
  local r = generator(SEED + 99)

  it("moves data both ways unchanged, float32 and int64", function()
    local x = data({3, 4, 5}, SEED + 101)
    local g = x:to(target)
    assert.equal(target, g.device)
    assert_same(g, x, "to/cpu")
    assert_same(g:clone(), x, "clone on the device")
    local i = vol.arange(60, {dtype = "int64"}):reshape({3, 4, 5})
    assert_same(i:to(target), i, "int64 to/cpu")
    local c = vol.zeros({3, 4, 5}, {device = target})
    c:copy(g)
    assert_same(c, x, "copy device to device")
    assert.equal(x:get(2, 3, 4), g:get(2, 3, 4))
    g:set(7.5, 1, 1, 1)
    assert.equal(7.5, g:get(1, 1, 1))
    assert.equal(7.5, g:cpu():get(1, 1, 1))
  end)

  it("binary ops with broadcasting, float32 and int64, tensor and scalar operands", function()
    local pairs_ = {{{3, 1, 5}, {4, 1}}, {{2, 3, 4}, {2, 3, 4}}, {{1}, {5, 6}}, {{4, 1, 3}, {1, 2, 1}},
                    {{2, 1, 1, 3}, {3}}, {{1, 1}, {1, 1}}}
    for pi, p in ipairs(pairs_) do
      local a, b = data(p[1], SEED + 200 + pi), data(p[2], SEED + 300 + pi)
      sprinkle(a, r, 1)
      local ga, gb = a:to(target), b:to(target)
      local what = "shapes " .. show(p)
      assert_four(ga, gb, a, b, what)
      assert_same(ga + 2.5, a + 2.5, what .. " + scalar")
      assert_same(2.5 - ga, 2.5 - a, what .. " scalar -")
      assert_same(ga * -3, a * -3, what .. " * scalar")
      assert_same(7 / ga, 7 / a, what .. " scalar /")
      assert_same(ga / 3, a / 3, what .. " / scalar")
      local ia = (a * 10):to(target)
      local ii = vol.arange(a:numel(), {dtype = "int64"}):reshape(p[1]) * -3 + 7
      local ij = vol.arange(b:numel(), {dtype = "int64"}):reshape(p[2]) * 5 - 4
      assert_same(ii:to(target) + ij:to(target), ii + ij, what .. " int64 +")
      assert_same(ii:to(target) - ij:to(target), ii - ij, what .. " int64 -")
      assert_same(ii:to(target) * ij:to(target), ii * ij, what .. " int64 *")
      assert_same(ii:to(target) / ij:to(target), ii / ij, what .. " int64 / (float)")
      assert_same(ii:to(target) * 4, ii * 4, what .. " int64 * scalar")
      assert_same(ii:to(target) + 0.5, ii + 0.5, what .. " int64 + fractional scalar")
      assert_same(ii:to(target) + ia, ii + ia:cpu(), what .. " int64 + float32")
    end
  end)

  it("broadcast binary ops by rows of 256 or more (per channel, per volume, unaligned rows, int64, 70 000 rows)", function()
    -- (the GPU's row kernel: dims coalesced, rows of the last dim; float4 where steps are 0 or 1)
    local cases = {
      {{2, 3, 4, 16, 20}, {1, 3, 1, 1, 1}},  -- per channel: rows of 1280, b's step 0
      {{2, 3, 4, 16, 20}, {1, 1, 4, 16, 20}}, -- per volume: (6, 1280), both steps 1
      {{1, 3, 1, 1, 1}, {2, 3, 4, 16, 20}},  -- the broadcast operand on the left
      {{2, 3, 5, 7, 37}, {1, 3, 1, 1, 1}},   -- rows of 1295: one element at a time, a tail per row
      {{2, 3, 5, 7, 37}, {2, 1, 5, 7, 37}},  -- rows of 1295 read at odd offsets
      {{70000, 256}, {70000, 1}},            -- more rows than one grid dimension holds
    }
    for ci, c in ipairs(cases) do
      local a, b = data(c[1], SEED + 600 + ci), data(c[2], SEED + 650 + ci)
      sprinkle(a, r, 2)
      assert_four(a:to(target), b:to(target), a, b, "rows " .. show(c))
    end
    local ii = vol.arange(2 * 3 * 300, {dtype = "int64"}):reshape({2, 3, 300}) * -3 + 7
    local ij = vol.arange(3, {dtype = "int64"}):reshape({1, 3, 1}) * 5 - 4
    assert_same(ii:to(target) * ij:to(target), ii * ij, "rows int64 *")
    assert_same(ij:to(target) - ii:to(target), ij - ii, "rows int64 -")
  end)

  it("unary ops, fill and conversions", function()
    local x = sprinkle(data({5, 7}, SEED + 401), r, 3)
    local g = x:to(target)
    assert_same(-g, -x, "neg")
    assert_same(g:abs(), x:abs(), "abs")
    assert_same(g:relu(), x:relu(), "relu")
    local i = vol.arange(35, {dtype = "int64"}):reshape({5, 7}) - 17
    assert_same((-i:to(target)), -i, "int64 neg")
    assert_same(i:to(target):abs(), i:abs(), "int64 abs")
    assert_same(i:to(target):relu(), i:relu(), "int64 relu")
    local f = vol.empty({3, 33}, {device = target})
    f:fill(-2.25)
    assert_same(f, vol.full({3, 33}, -2.25), "fill")
    local fi = vol.empty({3, 33}, {device = target, dtype = "int64"})
    fi:fill(-9)
    assert_same(fi, vol.full({3, 33}, -9, {dtype = "int64"}), "fill int64")
    -- float32 -> int64 truncates toward zero (NaN -> 0, saturation as the CPU)
    local xf = vol.tensor({-2.7, -0.5, 0.5, 2.7, 1e30, -1e30, nan, 3})
    local want = vol.empty({8}, {dtype = "int64"})
    want:copy(xf)
    local got = vol.empty({8}, {dtype = "int64", device = target})
    got:copy(xf:to(target))
    assert_same(got, want, "float32 -> int64")
    local back = vol.empty({8}, {device = target})
    back:copy(got)
    local want_back = vol.empty({8})
    want_back:copy(want)
    assert_same(back, want_back, "int64 -> float32")
  end)

  it("elementwise ops on 3 M elements: a partial last block and a tail", function()
    -- 2 999 997 elements: the float32 kernels' last block has fewer than its 1024 float4s, and a
    -- tail of one element that is not in a float4 (the second pass of their grid: the large tests)
    local x = sprinkle(data({3, 999, 1001}, SEED + 451), r, 5)
    local y = sprinkle(data({3, 999, 1001}, SEED + 452), r, 5)
    local gx, gy = x:to(target), y:to(target)
    assert_same(gx + gy, x + y, "large +")
    assert_same(gx / gy, x / y, "large /")
    assert_same(gx * 1.5, x * 1.5, "large * scalar")
    assert_same(2.5 - gx, 2.5 - x, "large scalar -")
    assert_same(-gx, -x, "large neg")
    assert_same(gx:abs(), x:abs(), "large abs")
    assert_same(gx:relu(), x:relu(), "large relu")
    local f = vol.empty({3, 999, 1001}, {device = target})
    for _, v in ipairs({0, -2.25, nan}) do
      f:fill(v)
      assert_same(f, vol.full({3, 999, 1001}, v), "large fill " .. tostring(v))
    end
    f:fill(-0.0) -- not a memset: the sign bit is set
    assert.equal(-inf, 1 / f:get(3, 999, 1001))
    assert.equal(-inf, 1 / f:get(1, 1, 1))
    local fi = vol.empty({5, 7}, {device = target, dtype = "int64"})
    fi:fill(0)
    assert_same(fi, vol.zeros({5, 7}, {dtype = "int64"}), "int64 fill 0")
  end)

  it("sum, max, min, max_abs_diff and allclose", function()
    -- float32 sum, max, min and the mean of everything walk the run in tiles of 1024 float4s a block
    -- (common.cuh): whole tiles, a last partial tile, and 1 to 3 values past the last float4
    for i, shape in ipairs({{999, 3001}, {7, 11, 13}, {5, 3}, {1, 1026}, {1000, 3001}}) do
      local xs = data(shape, SEED + 510 + i, 0.25)
      local gs = xs:to(target)
      local sc, sg, scale = xs:sum(), gs:sum(), xs:abs():sum()
      assert.is_true(math.abs(sc - sg) <= 1e-9 * scale, ("sum of %d values: %.17g vs %.17g"):format(xs:numel(), sg, sc))
      assert.equal(xs:max(), gs:max())
      assert.equal(xs:min(), gs:min())
      assert_close(vol.mean(gs), vol.mean(xs), "mean of " .. xs:numel() .. " values")
      -- the extreme at the very last value
      local last = xs:clone()
      last:set(100, unpack(shape))
      assert.equal(100, last:to(target):max(), "max at the last of " .. xs:numel())
      last:set(-100, unpack(shape))
      assert.equal(-100, last:to(target):min(), "min at the last of " .. xs:numel())
    end
    local x = data({1000, 3001}, SEED + 501, 0.25) -- several reduction blocks
    local g = x:to(target)
    local s_cpu, s_gpu = x:sum(), g:sum()
    local scale = (x:abs()):sum()
    assert.is_true(math.abs(s_cpu - s_gpu) <= 1e-9 * scale, ("sum %.17g vs %.17g"):format(s_gpu, s_cpu))
    assert.equal(x:max(), g:max())
    assert.equal(x:min(), g:min())
    local i = vol.arange(1000, {dtype = "int64"}) * 3 - 1500
    assert.equal(i:sum(), i:to(target):sum())
    assert.equal(i:max(), i:to(target):max())
    assert.equal(i:min(), i:to(target):min())
    local y = x + 1e-3
    assert.equal(vol.max_abs_diff(x, y), vol.max_abs_diff(g, y:to(target)))
    assert.equal(vol.allclose(x, y), vol.allclose(g, y:to(target)))
    assert.equal(vol.allclose(x, y, {rtol = 1e-2, atol = 1e-2}), vol.allclose(g, y:to(target), {rtol = 1e-2, atol = 1e-2}))
    assert.is_true(vol.allclose(g, y:to(target), {atol = 2e-3}))
    assert.is_false(vol.allclose(g, y:to(target), {atol = 1e-4}))
    -- NaN: max and min propagate it; max_abs_diff is NaN where one side only is NaN
    local xn = x:clone()
    xn:set(nan, 500, 1500)
    local gn = xn:to(target)
    assert.is_true(gn:max() ~= gn:max())
    assert.is_true(gn:min() ~= gn:min())
    local d = vol.max_abs_diff(gn, g)
    assert.is_true(d ~= d)
    assert.equal(0, vol.max_abs_diff(gn, gn))
    assert.is_false(vol.allclose(gn, gn))
    assert.is_true(vol.allclose(gn, gn, {equal_nan = true}))
    local e = vol.tensor({inf, -inf, 1, 2}):to(target)
    assert.is_true(vol.allclose(e, e))
    assert.is_false(vol.allclose(vol.tensor({1, 1, 1, 2}):to(target), e))
    assert.equal(0, vol.max_abs_diff(e, e))
  end)

  it("prints a GPU tensor with its device, and rejects mixing devices", function()
    if target == "cpu" then return end
    local g = data({2, 3}, SEED + 601):to(target)
    assert.matches("cuda", tostring(g))
    local ok, err = pcall(function() return g + data({2, 3}, 1) end)
    assert.is_false(ok)
    assert.matches("device", tostring(err))
    ok, err = pcall(vol.conv3d, data({1, 1, 3, 3, 3}, 2), data({1, 1, 2, 2, 2}, 3):to(target))
    assert.is_false(ok)
    assert.matches("conv3d", tostring(err))
  end)
end)

-- -- memory ----

describe("GPU memory (seed " .. SEED .. ")", function()
  if target ~= "cuda" then
    pending("memory specs need a GPU")
    return
  end

  local full_gc = compare.full_gc

  it("a loop of the same work calls cudaMalloc only in its first iteration", function()
    local x = data({2, 3, 10, 12, 14}, SEED + 701):to(target)
    local cw, cb = data({8, 3, 3, 3, 3}, SEED + 702):to(target), data({8}, SEED + 703):to(target)
    local gw, gb = data({8}, SEED + 704):to(target), data({8}, SEED + 705):to(target)
    local function step()
      local y = vol.conv3d(x, cw, cb, {padding = 1})
      local z = vol.group_norm(y, 4, gw, gb)
      local m = vol.mean(z, {2, 3, 4, 5})
      local f = vol.conv3d_group_norm_mean(x, cw, cb, 4, gw, gb, {padding = 1})
      return vol.max_abs_diff(m, f)
    end
    step()
    full_gc()
    local before = vol.memory_stats()
    for _ = 1, 5 do
      assert.is_true(step() < 1e-4)
      full_gc()
    end
    local after = vol.memory_stats()
    assert.equal(before.num_mallocs, after.num_mallocs)
    assert.equal(before.allocated, after.allocated)
  end)

  it("empty_cache returns cached blocks; stats stay consistent", function()
    full_gc()
    vol.empty_cache()
    local s = vol.memory_stats()
    assert.equal(s.allocated, s.reserved)
    assert.is_true(s.peak >= s.allocated)
    local t = vol.empty({1024, 1024}, {device = "cuda"})
    local s2 = vol.memory_stats()
    assert.is_true(s2.allocated >= s.allocated + 4 * 1024 * 1024)
    t = nil
    full_gc()
    assert.equal(s.allocated, vol.memory_stats().allocated)
    vol.empty_cache()
    assert.equal(s.reserved, vol.memory_stats().reserved)
  end)

  -- A failing cudaMalloc is an API error that compute-sanitizer counts; gpu_check.sh runs this
  -- one outside the sanitizers (VOLUA_UNDER_SANITIZER=1 there).
  local under_sanitizer = os.getenv("VOLUA_UNDER_SANITIZER") == "1"
  ;(under_sanitizer and pending or it)("an allocation larger than the GPU raises a clear error and the next op works", function()
    local ok, err = pcall(vol.empty, {2 ^ 40}, {device = "cuda"})
    assert.is_false(ok)
    assert.matches("out of memory", tostring(err))
    assert.matches("GiB", tostring(err))
    local x = data({4, 5}, SEED + 801)
    assert_same(x:to(target) * 2, x * 2, "after out of memory")
  end)
end)

-- -- large tensors: 64-bit indexing ----

describe("GPU large tensors (VOLUA_TEST_LARGE=1)", function()
  local why = compare.large_pending(target)
  if why then return pending(why) end
  local full_gc = compare.full_gc

  it("max_pool3d on (16, 32, 128, 128, 128): 1.07 G elements (k 3, s 2, p 1, d 3)", function()
    local shape = {16, 32, 128, 128, 128}
    local args = {kernel_size = 3, stride = 2, padding = 1, dilation = 3, return_indices = true}
    local x = vol.rand(shape, {seed = SEED})
    local go, gi = vol.max_pool3d(x:to("cuda"), args)
    go, gi = go:cpu(), gi:cpu()
    full_gc()
    local wo, wi = vol.max_pool3d(x, args)
    assert.equal(0, vol.max_abs_diff(go, wo))
    assert.equal(0, vol.max_abs_diff(gi, wi))
    -- and a few outputs of the last sample (byte offsets past 2^32) recomputed here from their windows
    local r = generator(SEED + 901)
    local O = go.shape[3]
    for _ = 1, 40 do
      local n, c, L = shape[1], r.int(1, shape[2]), shape[3]
      local o = {r.int(1, O), r.int(1, O), r.int(1, O)}
      local best, best_at, first = -inf, nil, nil
      for kd = 0, 2 do
        for kh = 0, 2 do
          for kw = 0, 2 do
            local p = {(o[1] - 1) * 2 - 1 + kd * 3, (o[2] - 1) * 2 - 1 + kh * 3, (o[3] - 1) * 2 - 1 + kw * 3}
            if p[1] >= 0 and p[1] < L and p[2] >= 0 and p[2] < L and p[3] >= 0 and p[3] < L then
              local at = (p[1] * L + p[2]) * L + p[3]
              first = first or at
              local v = x:get(n, c, p[1] + 1, p[2] + 1, p[3] + 1)
              if v > best then best, best_at = v, at end
            end
          end
        end
      end
      assert.equal(best, go:get(n, c, o[1], o[2], o[3]))
      assert.equal(best_at or first, gi:get(n, c, o[1], o[2], o[3]))
    end
  end)

  it("elementwise ops on (4, 1025, 1024, 1025): 4.3 G elements, a second pass of their grid", function()
    -- past 2^32 elements: the float32 kernels' grid (at most 2^20 blocks of 4 float4s a thread)
    -- covers 2^32, so the last 8.4 M elements take the loops' second pass; checked on the device
    -- (min and max propagate NaN, and VOLUA_POISON=1 makes an element nobody wrote NaN)
    local shape = {4, 1025, 1024, 1025}
    local function check(t, v, what)
      assert.equal(v, t:min(), what .. ": min")
      assert.equal(v, t:max(), what .. ": max")
      assert.equal(v, t:get(4, 1025, 1024, 1025), what .. ": the last element")
    end
    local a = vol.empty(shape, {device = "cuda"})
    a:fill(1.5)
    check(a, 1.5, "fill")
    local b = a * -2
    check(b, -3, "* scalar")
    a = nil
    full_gc()
    local c = b + b
    check(c, -6, "+")
    b = nil
    full_gc()
    check(c:relu(), 0, "relu")
    c = nil
    full_gc()
  end)

  -- A 1x1x1 conv3d of `cout` channels on a random input of `shape`, with `env` (the kernel's switches)
  -- set through the FFI and, where given, math `math_mode`: 41 outputs of the last sample (element
  -- offsets past 2^31) recomputed here from their inputs, each to |got - want| <= atol + rtol |want|.
  local function pointwise_large(shape, cout, env, math_mode, rtol, atol, seed)
    local ffi = require "ffi"
    pcall(ffi.cdef, "int setenv(const char *, const char *, int); int unsetenv(const char *);")
    local n, cin = shape[1], shape[2]
    local x = vol.rand(shape, {seed = seed, device = "cuda"})
    local w, b = data({cout, cin, 1, 1, 1}, seed + 1), data({cout}, seed + 2)
    for k, v in pairs(env) do ffi.C.setenv(k, v, 1) end
    local before = vol.get_math()
    if math_mode then vol.set_math(math_mode) end
    local ok, y = pcall(vol.conv3d, x, w:cuda(), b:cuda())
    vol.set_math(before)
    for k in pairs(env) do ffi.C.unsetenv(k) end
    assert.is_true(ok, tostring(y))
    assert.same({n, cout, shape[3], shape[4], shape[5]}, y.shape)
    local r = generator(seed + 3)
    for i = 1, 41 do
      local p = i == 41 and {shape[3], shape[4], shape[5]} or {r.int(1, shape[3]), r.int(1, shape[4]), r.int(1, shape[5])}
      local c = r.int(1, cout)
      local want = b:get(c)
      for ci = 1, cin do want = want + w:get(c, ci, 1, 1, 1) * x:get(n, ci, p[1], p[2], p[3]) end
      local got = y:get(n, c, p[1], p[2], p[3])
      assert.is_true(math.abs(got - want) <= atol + rtol * math.abs(want),
        ("y[%d, %d, %d, %d, %d] = %s, want %s"):format(n, c, p[1], p[2], p[3], tostring(got), tostring(want)))
    end
    x, y = nil, nil
    full_gc()
  end

  it("conv3d 1x1x1 (conv3d_pointwise.cu) on (2, 2, 1024, 1024, 520): 2.18 G elements in, 3.27 G out", function()
    -- VOLUA_PW=1: its rule leaves 3 output channels in math "fp32" to conv3d_tc.cu
    pointwise_large({2, 2, 1024, 1024, 520}, 3, {VOLUA_PW = "1"}, nil, RTOL, ATOL, SEED + 11)
  end)

  it("conv3d 1x1x1 in math tf32 by TMA (conv3d_pointwise_tma_kernel) on (2, 128, 9, 1024, 1024): 2.42 G elements in", function()
    -- the copy engine's maps address x past 2^31 elements (the last sample's channels from 100), each
    -- output a sum over all 128; VOLUA_PW=1 and VOLUA_PW_TMA=2: its rule leaves 4 output channels to
    -- conv3d_tc.cu; math "tf32"'s tolerance
    pointwise_large({2, 128, 9, 1024, 1024}, 4, {VOLUA_PW = "1", VOLUA_PW_TMA = "2"}, "tf32", 1e-2, 1e-2, SEED + 15)
  end)

  it("group_norm on (2, 4, 1024, 1024, 257): 2.16 G elements, past 2^31", function()
    local shape = {2, 4, 1024, 1024, 257}
    local g = vol.rand(shape, {seed = SEED + 1, device = "cuda"}) + 100 -- a large mean
    full_gc()
    local w, b = data({4}, SEED + 2), data({4}, SEED + 3)
    local got = vol.group_norm(g, 2, w:cuda(), b:cuda(), 1e-5)
    local x = g:cpu()
    g = nil
    full_gc()
    local want = vol.group_norm(x, 2, w, b, 1e-5)
    x = nil
    full_gc()
    local want_gpu = want:cuda()
    local ok = vol.allclose(got, want_gpu, {rtol = RTOL, atol = ATOL})
    assert.is_true(ok, "max_abs_diff " .. tostring(vol.max_abs_diff(got, want_gpu)))
    -- the very last element, read from both
    assert.is_true(math.abs(got:get(2, 4, 1024, 1024, 257) - want:get(2, 4, 1024, 1024, 257)) <= 1e-4)
  end)
end)
