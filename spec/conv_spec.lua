-- conv_spec.lua: vol.conv3d, vol.conv_transpose3d and vol.conv3d_group_norm_mean against naive
-- Lua loops on tiny random tensors and hand-checked cases, and every family of argument error.
-- VOLUA_TEST_DEVICE=cuda runs the ops on the GPU (the references stay in Lua).
local vol = require "volua"

local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"

-- -- helpers ----

local function triple(v)
  if type(v) == "number" then return {v, v, v} end
  return v
end

-- a reproducible tensor of values in [-1, 1) (read back through :table() by the references,
-- so they see the float32-rounded inputs)
local function rand(shape, seed)
  return (vol.rand(shape, {seed = seed}) * 2 - 1):to(device)
end
local function cpu_rand(shape, seed) return (vol.rand(shape, {seed = seed}) * 2 - 1) end

-- a tensor on the test device from a flat list
local function tensor(list, shape)
  return vol.tensor(list):reshape(shape or {#list}):to(device)
end

-- flat values of a result (checking it stayed on the test device)
local function values(t)
  assert.equal(device, t.device)
  return t:cpu():reshape({-1}):table()
end

local function close(got, want)
  assert.equal(device, got.device)
  got, want = got:cpu(), want:cpu()
  assert.same(want.shape, got.shape)
  local ok = vol.allclose(got, want, {rtol = 1e-5, atol = 1e-6})
  assert.is_true(ok, "max abs diff " .. tostring(vol.max_abs_diff(got, want)))
end

-- The message of the error f(...) raises (the test fails if it raises none).
local function error_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- Where padded coordinate i (0-based) of an axis of size n reads, as F.pad; nil for a zero.
local function source(i, n, mode)
  if i >= 0 and i < n then return i end
  if mode == "zeros" then return nil end
  if mode == "reflect" then return i < 0 and -i or 2 * (n - 1) - i end
  if mode == "replicate" then return i < 0 and 0 or n - 1 end
  return i % n -- circular (Lua's % rounds toward -inf)
end

-- Naive conv3d straight from the definition. o: stride, lo, hi (padding before / after),
-- dilation (triples), groups, mode.
local function conv3d_ref(x, w, b, o)
  local X, Wt, B = x:table(), w:table(), b and b:table()
  local N, C = x.shape[1], x.shape[2]
  local Co, Cig = w.shape[1], w.shape[2]
  local inn, k = {x.shape[3], x.shape[4], x.shape[5]}, {w.shape[3], w.shape[4], w.shape[5]}
  local s, d, lo, hi = o.stride, o.dilation, o.lo, o.hi
  local out = {}
  for i = 1, 3 do out[i] = math.floor((inn[i] + lo[i] + hi[i] - d[i] * (k[i] - 1) - 1) / s[i]) + 1 end
  local cog = Co / o.groups
  local Y = {}
  for n = 1, N do
    Y[n] = {}
    for co = 1, Co do
      local ci0 = math.floor((co - 1) / cog) * Cig
      Y[n][co] = {}
      for od = 1, out[1] do
        Y[n][co][od] = {}
        for oh = 1, out[2] do
          Y[n][co][od][oh] = {}
          for ow = 1, out[3] do
            local acc = B and B[co] or 0
            for ci = 1, Cig do
              for kd = 1, k[1] do
                local id = source((od - 1) * s[1] - lo[1] + (kd - 1) * d[1], inn[1], o.mode)
                for kh = 1, k[2] do
                  local ih = source((oh - 1) * s[2] - lo[2] + (kh - 1) * d[2], inn[2], o.mode)
                  for kw = 1, k[3] do
                    local iw = source((ow - 1) * s[3] - lo[3] + (kw - 1) * d[3], inn[3], o.mode)
                    if id and ih and iw then
                      acc = acc + X[n][ci0 + ci][id + 1][ih + 1][iw + 1] * Wt[co][ci][kd][kh][kw]
                    end
                  end
                end
              end
            end
            Y[n][co][od][oh][ow] = acc
          end
        end
      end
    end
  end
  return vol.tensor(Y)
end

-- The reference's options from vol.conv3d's (explicit padding only: "same" is spelt out).
local function ref_opts(opts, groups)
  local p = triple(opts.padding or 0)
  return {stride = triple(opts.stride or 1), dilation = triple(opts.dilation or 1), lo = p, hi = p,
          groups = groups or opts.groups or 1, mode = opts.padding_mode or "zeros"}
end

-- Naive conv_transpose3d as a scatter: input i and tap k add to output i*stride - padding +
-- k*dilation (the C code gathers instead).
local function conv_transpose3d_ref(x, w, b, opts)
  local X, Wt, B = x:table(), w:table(), b and b:table()
  local s, p = triple(opts.stride or 1), triple(opts.padding or 0)
  local op, d = triple(opts.output_padding or 0), triple(opts.dilation or 1)
  local groups = opts.groups or 1
  local N, Ci = x.shape[1], x.shape[2]
  local cog = w.shape[2]
  local cig, Co = Ci / groups, cog * groups
  local inn, k = {x.shape[3], x.shape[4], x.shape[5]}, {w.shape[3], w.shape[4], w.shape[5]}
  local out = {}
  for i = 1, 3 do out[i] = (inn[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 end
  local Y = {}
  for n = 1, N do
    Y[n] = {}
    for co = 1, Co do
      Y[n][co] = {}
      for od = 1, out[1] do
        Y[n][co][od] = {}
        for oh = 1, out[2] do
          Y[n][co][od][oh] = {}
          for ow = 1, out[3] do Y[n][co][od][oh][ow] = B and B[co] or 0 end
        end
      end
    end
    for ci = 1, Ci do
      local grp = math.floor((ci - 1) / cig)
      for id = 0, inn[1] - 1 do for ih = 0, inn[2] - 1 do for iw = 0, inn[3] - 1 do
        local v = X[n][ci][id + 1][ih + 1][iw + 1]
        for col = 1, cog do
          local co = grp * cog + col
          for kd = 0, k[1] - 1 do for kh = 0, k[2] - 1 do for kw = 0, k[3] - 1 do
            local od = id * s[1] - p[1] + kd * d[1]
            local oh = ih * s[2] - p[2] + kh * d[2]
            local ow = iw * s[3] - p[3] + kw * d[3]
            if od >= 0 and od < out[1] and oh >= 0 and oh < out[2] and ow >= 0 and ow < out[3] then
              local row = Y[n][co][od + 1][oh + 1]
              row[ow + 1] = row[ow + 1] + v * Wt[ci][col][kd + 1][kh + 1][kw + 1]
            end
          end end end
        end
      end end end
    end
  end
  return vol.tensor(Y)
end

-- group_norm(y).mean over (C, D, H, W), normalising every value explicitly (no closed form).
local function gn_mean_ref(y, groups, gw, gb, eps)
  local Y, GW, GB = y:table(), gw and gw:table(), gb and gb:table()
  local N, C = y.shape[1], y.shape[2]
  local cpg, res = C / groups, {}
  for n = 1, N do
    local total, count = 0, 0
    for grp = 0, groups - 1 do
      local vals = {}
      for c = grp * cpg + 1, (grp + 1) * cpg do
        for _, plane in ipairs(Y[n][c]) do
          for _, row in ipairs(plane) do
            for _, v in ipairs(row) do vals[#vals + 1] = v end
          end
        end
      end
      local mu, var = 0, 0
      for _, v in ipairs(vals) do mu = mu + v end
      mu = mu / #vals
      for _, v in ipairs(vals) do var = var + (v - mu) ^ 2 end
      var = var / #vals
      local per = #vals / cpg
      for j, v in ipairs(vals) do
        local c = grp * cpg + math.floor((j - 1) / per) + 1
        local u = (v - mu) / math.sqrt(var + eps)
        total = total + u * (GW and GW[c] or 1) + (GB and GB[c] or 0)
        count = count + 1
      end
    end
    res[n] = total / count
  end
  return vol.tensor(res)
end

-- -- conv3d ----

describe("conv3d", function()
  it("matches a hand-computed 1-D case", function()
    -- along W: [1, 2, 3] * [1, 10] = [1 + 20, 2 + 30]; with bias 0.5
    local x = tensor({1, 2, 3}, {1, 1, 1, 1, 3})
    local w = tensor({1, 10}, {1, 1, 1, 1, 2})
    assert.same({21, 32}, values(vol.conv3d(x, w)))
    assert.same({21.5, 32.5}, values(vol.conv3d(x, w, tensor({0.5}))))
    -- zero padding 1: [0 1 2 3 0] -> [10, 21, 32, 3]
    assert.same({10, 21, 32, 3}, values(vol.conv3d(x, w, nil, {padding = {0, 0, 1}})))
  end)

  it("counts taps on ones, zero padding cutting the corners", function()
    local x, w = vol.ones({1, 2, 4, 4, 4}, {device = device}), vol.ones({1, 2, 3, 3, 3}, {device = device})
    local y = vol.conv3d(x, w, nil, {padding = 1})
    assert.same({1, 1, 4, 4, 4}, y.shape)
    y = y:cpu()
    assert.equal(2 * 8, y:get(1, 1, 1, 1, 1))   -- corner: 2x2x2 taps per channel
    assert.equal(2 * 12, y:get(1, 1, 1, 1, 2))  -- edge
    assert.equal(2 * 27, y:get(1, 1, 2, 2, 2))  -- inside
  end)

  local cases = {
    {name = "plain, with bias", x = {2, 3, 5, 4, 6}, w = {4, 3, 3, 2, 3}, bias = true, opts = {}},
    {name = "anisotropic stride, padding, dilation", x = {1, 2, 7, 6, 8}, w = {3, 2, 2, 3, 2},
     opts = {stride = {2, 1, 3}, padding = {1, 0, 2}, dilation = {1, 2, 1}}},
    {name = "stride larger than the kernel", x = {1, 2, 7, 7, 7}, w = {2, 2, 2, 2, 2},
     opts = {stride = 3}},
    {name = "groups = 2", x = {2, 4, 4, 5, 4}, w = {6, 2, 2, 2, 3}, bias = true, opts = {groups = 2}},
    {name = "depthwise", x = {1, 3, 4, 4, 5}, w = {3, 1, 3, 3, 3}, opts = {groups = 3, padding = 1}},
    {name = "pointwise", x = {2, 4, 3, 2, 3}, w = {5, 4, 1, 1, 1}, bias = true, opts = {}},
  }
  for _, mode in ipairs({"zeros", "reflect", "replicate", "circular"}) do
    cases[#cases + 1] = {name = "padding_mode " .. mode, x = {1, 2, 4, 5, 3}, w = {2, 2, 3, 3, 2},
                         bias = true, opts = {padding = {1, 2, 1}, padding_mode = mode}}
    cases[#cases + 1] = {name = "padding_mode " .. mode .. ", strided, dilated, grouped",
                         x = {2, 2, 5, 4, 6}, w = {4, 1, 2, 3, 2},
                         opts = {padding = {2, 3, 1}, stride = {2, 1, 2}, dilation = {2, 1, 3},
                                 groups = 2, padding_mode = mode}}
  end

  for i, c in ipairs(cases) do
    it("matches the naive loop: " .. c.name, function()
      local x, w = rand(c.x, 10 * i), rand(c.w, 10 * i + 1)
      local b = c.bias and rand({c.w[1]}, 10 * i + 2) or nil
      close(vol.conv3d(x, w, b, c.opts), conv3d_ref(x, w, b, ref_opts(c.opts)))
    end)
  end

  it("pads \"same\" asymmetrically for even dilated kernels, as PyTorch", function()
    local x, w, b = rand({1, 2, 5, 6, 4}, 1), rand({3, 2, 2, 4, 3}, 2), rand({3}, 3)
    for _, mode in ipairs({"zeros", "reflect", "replicate", "circular"}) do
      local y = vol.conv3d(x, w, b, {padding = "same", dilation = {1, 1, 2}, padding_mode = mode})
      assert.same({1, 3, 5, 6, 4}, y.shape)
      -- totals dilation*(k-1) = (1, 3, 4): the extra one goes after
      local o = {stride = {1, 1, 1}, dilation = {1, 1, 2}, lo = {0, 1, 2}, hi = {1, 2, 2}, groups = 1,
                 mode = mode}
      close(y, conv3d_ref(x, w, b, o))
    end
  end)

  it("takes \"valid\" as no padding", function()
    local x, w = rand({1, 2, 5, 5, 5}, 4), rand({2, 2, 3, 3, 3}, 5)
    close(vol.conv3d(x, w, nil, {padding = "valid", padding_mode = "reflect"}), vol.conv3d(x, w))
    assert.same({1, 2, 3, 3, 3}, vol.conv3d(x, w, nil, {padding = "valid"}).shape)
  end)

  it("accepts an unbatched (C, D, H, W) input and returns an unbatched result", function()
    local x, w, b = rand({2, 4, 5, 3}, 6), rand({3, 2, 2, 2, 2}, 7), rand({3}, 8)
    local y = vol.conv3d(x, w, b, {padding = 1})
    assert.same({3, 5, 6, 4}, y.shape)
    close(y, vol.conv3d(x:reshape({1, 2, 4, 5, 3}), w, b, {padding = 1}):reshape({3, 5, 6, 4}))
  end)

  it("takes the options in place of a nil bias", function()
    local x, w = rand({1, 2, 5, 5, 5}, 9), rand({2, 2, 3, 3, 3}, 10)
    close(vol.conv3d(x, w, {stride = 2}), vol.conv3d(x, w, nil, {stride = 2}))
    assert.same({1, 2, 2, 2, 2}, vol.conv3d(x, w, {stride = 2}).shape)
  end)

  it("returns an empty result for an empty batch", function()
    local y = vol.conv3d(vol.zeros({0, 2, 5, 5, 5}, {device = device}),
      vol.ones({3, 2, 3, 3, 3}, {device = device}), nil, {padding = 1})
    assert.same({0, 3, 5, 5, 5}, y.shape)
    assert.equal(device, y.device)
  end)

  -- PyTorch's calc_output_size (aten/src/ATen/native/Convolution.cpp, "Handle empty # of
  -- channels") gives zero input channels an output of zero channels, bias or not
  it("returns an output of 0 channels for zero input channels", function()
    local b = tensor({1.5, -2})
    local y = vol.conv3d(vol.zeros({1, 0, 3, 3, 3}, {device = device}),
      vol.zeros({2, 0, 2, 2, 2}, {device = device}), b)
    assert.same({1, 0, 2, 2, 2}, y.shape)
    assert.equal(device, y.device)
  end)
end)

-- -- conv_transpose3d ----

describe("conv_transpose3d", function()
  it("matches a hand-computed 1-D case", function()
    -- along W with stride 2: 1*[1, 10] at 0 and 2*[1, 10] at 2 -> [1, 10, 2, 20]
    local x = tensor({1, 2}, {1, 1, 1, 1, 2})
    local w = tensor({1, 10}, {1, 1, 1, 1, 2})
    assert.same({1, 10, 2, 20}, values(vol.conv_transpose3d(x, w, {stride = {1, 1, 2}})))
    -- stride 1: the taps overlap: [1, 10 + 2, 20]
    assert.same({1, 12, 20}, values(vol.conv_transpose3d(x, w)))
    -- output_padding 1 adds one at the end; padding 1 then trims one from each end
    assert.same({1, 10, 2, 20, 0}, values(vol.conv_transpose3d(x, w, nil,
      {stride = {1, 1, 2}, output_padding = {0, 0, 1}})))
    assert.same({10, 2, 20}, values(vol.conv_transpose3d(x, w, nil,
      {stride = {1, 1, 2}, padding = {0, 0, 1}, output_padding = {0, 0, 1}})))
  end)

  local cases = {
    {name = "plain, with bias", x = {2, 3, 3, 2, 4}, w = {3, 2, 2, 3, 2}, bias = true, opts = {}},
    {name = "stride, padding, output_padding", x = {1, 2, 3, 4, 3}, w = {2, 3, 3, 2, 4},
     bias = true, opts = {stride = {2, 3, 2}, padding = {1, 0, 2}, output_padding = {1, 2, 0}}},
    {name = "dilation with output_padding under it", x = {1, 2, 3, 3, 2}, w = {2, 2, 2, 3, 2},
     opts = {stride = 1, dilation = {2, 3, 2}, output_padding = {1, 2, 0}, padding = 1}},
    {name = "groups = 2", x = {2, 4, 3, 2, 3}, w = {4, 3, 2, 2, 2}, bias = true,
     opts = {groups = 2, stride = 2}},
    {name = "stride and dilation 3", x = {1, 2, 3, 2, 3}, w = {2, 2, 2, 2, 2}, bias = true,
     opts = {stride = 3, padding = 1, dilation = 3}},
    {name = "stride larger than the kernel", x = {1, 1, 2, 3, 2}, w = {1, 2, 2, 1, 2},
     opts = {stride = {3, 4, 5}}},
  }
  for i, c in ipairs(cases) do
    it("matches the naive scatter: " .. c.name, function()
      local x, w = rand(c.x, 100 + i), rand(c.w, 200 + i)
      local b = c.bias and rand({c.w[2] * (c.opts.groups or 1)}, 300 + i) or nil
      close(vol.conv_transpose3d(x, w, b, c.opts), conv_transpose3d_ref(x, w, b, c.opts))
    end)
  end

  it("accepts an unbatched input", function()
    local x, w = rand({2, 3, 2, 3}, 11), rand({2, 3, 2, 2, 2}, 12)
    local y = vol.conv_transpose3d(x, w, nil, {stride = 2})
    assert.same({3, 6, 4, 6}, y.shape)
    close(y, vol.conv_transpose3d(x:reshape({1, 2, 3, 2, 3}), w, {stride = 2}):reshape({3, 6, 4, 6}))
  end)

  it("returns an empty result for an empty batch", function()
    local y = vol.conv_transpose3d(vol.zeros({0, 2, 3, 3, 3}, {device = device}),
      vol.ones({2, 4, 3, 3, 3}, {device = device}), {stride = 2})
    assert.same({0, 4, 7, 7, 7}, y.shape)
    assert.equal(device, y.device)
  end)
end)

-- -- conv3d_group_norm_mean ----

describe("conv3d_group_norm_mean", function()
  it("equals group_norm(conv3d(x)).mean over (C, D, H, W), computed naively", function()
    local x, w, b = rand({3, 2, 4, 5, 4}, 21), rand({6, 2, 3, 2, 3}, 22), rand({6}, 23)
    local gw, gb = rand({6}, 24) * 2, rand({6}, 25)
    for _, c in ipairs({{groups = 3, opts = {}}, {groups = 2, opts = {padding = 1, stride = 2}},
                        {groups = 6, opts = {eps = 0.1, padding = "same", padding_mode = "reflect"}}}) do
      local got = vol.conv3d_group_norm_mean(x, w, b, c.groups, gw, gb, c.opts)
      assert.same({3}, got.shape)
      local conv_opts = {}
      for k, v in pairs(c.opts) do if k ~= "eps" then conv_opts[k] = v end end
      local want = gn_mean_ref(vol.conv3d(x, w, b, conv_opts), c.groups, gw, gb, c.opts.eps or 1e-5)
      close(got, want)
    end
  end)

  it("gives 0 without the affine part and the mean of the bias with weight 0", function()
    local x, w = rand({2, 2, 4, 4, 4}, 26), rand({4, 2, 3, 3, 3}, 27)
    local got = vol.conv3d_group_norm_mean(x, w, nil, 2, nil, nil)
    assert.is_true(got:abs():max() < 1e-6)
    local gb = tensor({1, 2, 3, 6})
    got = vol.conv3d_group_norm_mean(x, w, nil, 2, vol.zeros({4}, {device = device}), gb)
    close(got, vol.tensor({3, 3}))
  end)

  it("handles groups of the convolution", function()
    local x, w = rand({2, 4, 4, 3, 4}, 28), rand({6, 2, 2, 2, 2}, 29)
    local gw, gb = rand({6}, 30), rand({6}, 31)
    local got = vol.conv3d_group_norm_mean(x, w, nil, 3, gw, gb, {groups = 2})
    close(got, gn_mean_ref(vol.conv3d(x, w, nil, {groups = 2}), 3, gw, gb, 1e-5))
  end)

  it("returns shape (0) for an empty batch", function()
    local got = vol.conv3d_group_norm_mean(vol.zeros({0, 2, 4, 4, 4}, {device = device}),
      vol.ones({4, 2, 3, 3, 3}, {device = device}), nil, 2, nil, nil)
    assert.same({0}, got.shape)
    assert.equal(device, got.device)
  end)
end)

-- -- errors: each names the function and the parameter ----

describe("conv errors", function()
  -- on the CPU: the checks come before any device work
  local x, w = rand({1, 3, 5, 5, 5}, 40):cpu(), rand({4, 3, 3, 3, 3}, 41):cpu()

  if device ~= "cpu" then
    it("rejects tensors on different devices", function()
      local xd = x:to(device)
      assert.matches("conv3d: weight is on cpu but the input is on " .. device, error_of(vol.conv3d, xd, w))
      assert.matches("conv3d: bias is on cpu but the input is on " .. device,
        error_of(vol.conv3d, xd, w:to(device), vol.zeros({4})))
      assert.matches("conv_transpose3d: weight is on cpu but the input is on " .. device,
        error_of(vol.conv_transpose3d, xd, vol.zeros({3, 2, 3, 3, 3})))
      assert.matches("conv3d_group_norm_mean: gn_w is on cpu but the input is on " .. device,
        error_of(vol.conv3d_group_norm_mean, xd, w:to(device), nil, 2, vol.ones({4}), nil))
    end)
  end

  it("rejects bad ranks and dtypes", function()
    assert.matches("conv3d: input must be 5%-D .* or 4%-D", error_of(vol.conv3d, vol.zeros({3, 5, 5}), w))
    assert.matches("conv3d: weight must be 5%-D", error_of(vol.conv3d, x, vol.zeros({4, 3, 3, 3})))
    assert.matches("conv3d: input dtype int64", error_of(vol.conv3d, vol.zeros({1, 3, 5, 5, 5}, {dtype = "int64"}), w))
    assert.matches("conv3d: weight dtype int64", error_of(vol.conv3d, x, vol.zeros({4, 3, 3, 3, 3}, {dtype = "int64"})))
    assert.matches("conv3d: bias must be a tensor", error_of(vol.conv3d, x, w, 3))
    assert.matches("conv3d: input must be a tensor", error_of(vol.conv3d, {}, w))
    assert.matches("conv_transpose3d: weight must be 5%-D", error_of(vol.conv_transpose3d, x, vol.zeros({3, 4})))
    assert.matches("conv3d_group_norm_mean: input must be 5%-D", error_of(vol.conv3d_group_norm_mean,
      vol.zeros({3, 5, 5, 5}), w, nil, 2, nil, nil))
  end)

  it("rejects channel and group mismatches", function()
    assert.matches("conv3d: input channels %(3%) do not match weight channels x groups %(2%)",
      error_of(vol.conv3d, x, vol.zeros({4, 2, 3, 3, 3})))
    assert.matches("conv3d: groups must be positive, got 0", error_of(vol.conv3d, x, w, {groups = 0}))
    assert.matches("conv3d: groups %(3%) must divide the weight's out channels %(4%)",
      error_of(vol.conv3d, x, vol.zeros({4, 1, 3, 3, 3}), {groups = 3}))
    assert.matches("conv3d: groups must be an integer", error_of(vol.conv3d, x, w, {groups = 1.5}))
    assert.matches("conv3d: bias must have shape %(4%)", error_of(vol.conv3d, x, w, vol.zeros({3})))
    assert.matches("conv_transpose3d: input channels %(3%) do not match the weight's in channels %(4%)",
      error_of(vol.conv_transpose3d, x, vol.zeros({4, 2, 3, 3, 3})))
    assert.matches("conv_transpose3d: groups %(2%) must divide the weight's in channels %(3%)",
      error_of(vol.conv_transpose3d, x, vol.zeros({3, 2, 3, 3, 3}), {groups = 2}))
    assert.matches("conv_transpose3d: bias must have shape %(2%)",
      error_of(vol.conv_transpose3d, x, vol.zeros({3, 2, 3, 3, 3}), vol.zeros({3}), {stride = 2}))
    assert.matches("conv3d_group_norm_mean: num_groups %(3%) must divide channels %(4%)",
      error_of(vol.conv3d_group_norm_mean, x, w, nil, 3, nil, nil))
    assert.matches("conv3d_group_norm_mean: num_groups %(0%) must be greater than zero",
      error_of(vol.conv3d_group_norm_mean, x, w, nil, 0, nil, nil))
    assert.matches("conv3d_group_norm_mean: gn_w must have shape %(4%)",
      error_of(vol.conv3d_group_norm_mean, x, w, nil, 2, vol.ones({3}), nil))
    assert.matches("conv3d_group_norm_mean: input channels %(3%) do not match",
      error_of(vol.conv3d_group_norm_mean, x, vol.zeros({4, 2, 3, 3, 3}), nil, 2, nil, nil))
  end)

  it("rejects bad stride, padding and dilation", function()
    assert.matches("conv3d: stride must be positive, got %(1, 0, 1%)", error_of(vol.conv3d, x, w, {stride = {1, 0, 1}}))
    assert.matches("conv3d: dilation must be positive", error_of(vol.conv3d, x, w, {dilation = -1}))
    assert.matches("conv3d: padding must be non%-negative", error_of(vol.conv3d, x, w, {padding = {0, -1, 0}}))
    assert.matches("conv3d: padding must be a number, {d, h, w}, \"same\" or \"valid\", got 'full'",
      error_of(vol.conv3d, x, w, {padding = "full"}))
    assert.matches("conv3d: padding=\"same\" is not supported for strided convolutions",
      error_of(vol.conv3d, x, w, {padding = "same", stride = 2}))
    assert.matches("conv3d: stride must be a number or a table of 3", error_of(vol.conv3d, x, w, {stride = {1, 2}}))
    assert.matches("conv_transpose3d: padding must be a number or {d, h, w}, got 'same'",
      error_of(vol.conv_transpose3d, x, vol.zeros({3, 2, 3, 3, 3}), {padding = "same"}))
    assert.matches("conv_transpose3d: stride must be positive", error_of(vol.conv_transpose3d, x,
      vol.zeros({3, 2, 3, 3, 3}), {stride = 0}))
  end)

  it("rejects padding modes that do not fit the input", function()
    local small = cpu_rand({1, 3, 2, 5, 5}, 42)
    assert.matches("conv3d: padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular', got 'mirror'",
      error_of(vol.conv3d, x, w, {padding_mode = "mirror"}))
    assert.matches("conv3d: padding %(2, 2%) must be smaller than the input size %(2%) in dim D for padding_mode=\"reflect\"",
      error_of(vol.conv3d, small, w, {padding = 2, padding_mode = "reflect"}))
    assert.matches("conv3d: padding %(3, 3%) must be at most the input size %(2%) in dim D for padding_mode=\"circular\"",
      error_of(vol.conv3d, small, w, {padding = 3, padding_mode = "circular"}))
    -- circular padding equal to the size and replicate padding beyond it are fine
    assert.same({1, 4, 4, 5, 5}, vol.conv3d(small, w, nil, {padding = {2, 1, 1}, padding_mode = "circular"}).shape)
    assert.same({1, 4, 6, 5, 5}, vol.conv3d(small, w, nil, {padding = {3, 1, 1}, padding_mode = "replicate"}).shape)
    assert.matches("conv_transpose3d: only padding_mode 'zeros'", error_of(vol.conv_transpose3d, x,
      vol.zeros({3, 2, 3, 3, 3}), {padding_mode = "reflect"}))
  end)

  it("rejects a kernel larger than the padded input", function()
    assert.matches("conv3d: kernel size 3 x 3 x 5 %(dilated%) can't be greater than the padded input size per channel 5 x 5 x 4",
      error_of(vol.conv3d, cpu_rand({1, 3, 5, 5, 4}, 43), w, {dilation = {1, 1, 2}}))
    assert.matches("conv3d: weight %(4, 3, 0, 3, 3%) has an empty kernel",
      error_of(vol.conv3d, x, vol.zeros({4, 3, 0, 3, 3})))
  end)

  it("rejects output_padding not below stride or dilation, and outputs that vanish", function()
    local wt = vol.zeros({3, 2, 3, 3, 3})
    assert.matches("conv_transpose3d: output_padding %(0, 2, 0%) must be smaller than either stride %(2, 2, 2%) or dilation %(1, 1, 1%)",
      error_of(vol.conv_transpose3d, x, wt, {stride = 2, output_padding = {0, 2, 0}}))
    assert.matches("conv_transpose3d: output_padding must be non%-negative",
      error_of(vol.conv_transpose3d, x, wt, {output_padding = -1}))
    -- below the dilation is enough even with stride 1
    assert.same({1, 2, 10, 9, 9}, vol.conv_transpose3d(x, wt, {dilation = 2, output_padding = {1, 0, 0}}).shape)
    assert.matches("conv_transpose3d: input size per channel 5 x 5 x 5 gives output size .* too small",
      error_of(vol.conv_transpose3d, x, wt, {padding = 4}))
  end)

  it("rejects unknown options and stray arguments", function()
    assert.matches("conv3d: unknown option 'strides'", error_of(vol.conv3d, x, w, {strides = 2}))
    assert.matches("conv3d: unknown option 'output_padding'", error_of(vol.conv3d, x, w, {output_padding = 1}))
    assert.matches("conv_transpose3d: unknown option 'kernel_size'",
      error_of(vol.conv_transpose3d, x, vol.zeros({3, 2, 3, 3, 3}), {kernel_size = 3}))
    assert.matches("conv3d: unexpected argument 4", error_of(vol.conv3d, x, w, {stride = 1}, {}))
    assert.matches("conv3d: options must be a table, got number", error_of(vol.conv3d, x, w, nil, 5))
    assert.matches("conv3d_group_norm_mean: kernel_size %(5, 5, 5%) does not match conv_w's kernel %(3, 3, 3%)",
      error_of(vol.conv3d_group_norm_mean, x, w, nil, 2, nil, nil, {kernel_size = 5}))
    assert.matches("conv3d_group_norm_mean: eps must be a number",
      error_of(vol.conv3d_group_norm_mean, x, w, nil, 2, nil, nil, {eps = "small"}))
    assert.matches("conv3d_group_norm_mean: num_groups must be an integer",
      error_of(vol.conv3d_group_norm_mean, x, w, nil, nil, nil, nil))
  end)
end)
