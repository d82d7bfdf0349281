-- norms_spec.lua: vol.batch_norm, vol.instance_norm, vol.layer_norm against naive Lua computations
-- in double (outputs and the running statistics they update), their argument errors, and the nn
-- modules BatchNorm3d, InstanceNorm3d, LayerNorm (reprs, buffers in state_dict, train/eval,
-- load_state_dict). VOLUA_TEST_DEVICE=cuda runs the ops on the GPU (the references stay in Lua).
-- The last section runs the GPU against the CPU on random shapes (pending without a GPU;
-- VOLUA_NORMS_SPEC_DEVICE=cpu runs its generators against the CPU itself).
local vol = require "volua"
local nn = require "volua.nn"
local compare = require "spec.helpers.gpu_compare"

local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"
local nan, inf = 0 / 0, math.huge
local RTOL, ATOL = 1e-4, 1e-5 -- the project's float32 tolerance

-- -- helpers ----

local function prod(t, from, to)
  local p = 1
  for i = from or 1, to or #t do p = p * t[i] end
  return p
end

local function values(t)
  return t:cpu():reshape({-1}):table()
end

local function random_list(n, seed, scale, offset)
  math.randomseed(seed)
  local xs = {}
  for i = 1, n do xs[i] = (offset or 0) + (scale or 1) * (math.random() * 2 - 1) end
  return xs
end

-- a float32 tensor of shape from the list (rounded to float32 on the way, so read it back with values())
local function tensor_of(list, shape)
  if #list == 0 then return vol.zeros(shape, {device = device}) end
  return vol.tensor(list):reshape(shape):to(device)
end

local function rand_tensor(shape, seed, scale, offset)
  return tensor_of(random_list(prod(shape), seed, scale, offset), shape)
end

-- got (a tensor) against want (a flat list), element by element; NaN matches NaN
-- inf_may_be_nan: where want is +-inf, NaN passes too (running statistics on the GPU: Chan's merge
-- of an infinite mean gives inf - inf, as PyTorch's CUDA kernels' Welford updates do)
local function assert_close(got, want, what, inf_may_be_nan)
  local g = values(got)
  assert.are.equal(#want, #g, what)
  for i = 1, #want do
    local a, b = g[i], want[i]
    local ok
    if b ~= b then ok = a ~= a
    elseif inf_may_be_nan and (b == inf or b == -inf) and a ~= a then ok = true
    else ok = a == b or math.abs(a - b) <= ATOL + RTOL * math.abs(b) end
    if not ok then
      error(("%selement %d: got %s, want %s"):format(what and (what .. ": ") or "", i, tostring(a), tostring(b)), 2)
    end
  end
end

local function fails(f, ...)
  for _, text in ipairs({...}) do assert.error_matches(f, text, nil, true) end
end

-- The (n, c) run of an (N, C, S) flat list: 1-based indices first .. first + S - 1.
local function run_start(n, c, C, S) return (n * C + c) * S end

-- Mean and biased / unbiased variance of a list of numbers, two passes.
local function moments(list)
  local sum = 0
  for _, v in ipairs(list) do sum = sum + v end
  local mean = sum / #list
  local sq = 0
  for _, v in ipairs(list) do sq = sq + (v - mean) ^ 2 end
  return mean, sq / #list, sq / (#list - 1)
end

-- -- naive references ----

-- F.batch_norm of the flat list xs of an (N, C, *) shape; returns y and the running statistics after.
local function naive_batch_norm(xs, shape, rm, rv, w, b, training, momentum, eps)
  local N, C, S = shape[1], shape[2], prod(shape, 3)
  local y, new_rm, new_rv = {}, rm and {}, rv and {}
  for c = 0, C - 1 do
    local mean, var
    if training then
      local vals = {}
      for n = 0, N - 1 do
        for s = 1, S do vals[#vals + 1] = xs[run_start(n, c, C, S) + s] end
      end
      local unbiased
      mean, var, unbiased = moments(vals)
      if rm then new_rm[c + 1] = momentum * mean + (1 - momentum) * rm[c + 1] end
      if rv then new_rv[c + 1] = momentum * unbiased + (1 - momentum) * rv[c + 1] end
    else
      mean, var = rm[c + 1], rv[c + 1]
      new_rm, new_rv = rm, rv
    end
    local std = math.sqrt(var + eps)
    for n = 0, N - 1 do
      for s = 1, S do
        local i = run_start(n, c, C, S) + s
        y[i] = (xs[i] - mean) / std * (w and w[c + 1] or 1) + (b and b[c + 1] or 0)
      end
    end
  end
  return y, new_rm, new_rv
end

-- F.instance_norm: each (n, c) run normalised by its own statistics (or by the running ones);
-- running = momentum * mean over n of the instances' statistic + (1 - momentum) * running.
local function naive_instance_norm(xs, shape, o)
  local N, C, S = shape[1], shape[2], prod(shape, 3)
  local use_input_stats = o.use_input_stats ~= false
  local momentum, eps = o.momentum or 0.1, o.eps or 1e-5
  local y, new_rm, new_rv = {}, o.rm and {}, o.rv and {}
  for c = 0, C - 1 do
    local mean_sum, var_sum = 0, 0
    for n = 0, N - 1 do
      local first = run_start(n, c, C, S)
      local mean, var
      if use_input_stats then
        local vals = {}
        for s = 1, S do vals[s] = xs[first + s] end
        local unbiased
        mean, var, unbiased = moments(vals)
        mean_sum, var_sum = mean_sum + mean, var_sum + unbiased
      else
        mean, var = o.rm[c + 1], o.rv[c + 1]
      end
      local std = math.sqrt(var + eps)
      for s = 1, S do
        y[first + s] = (xs[first + s] - mean) / std * (o.w and o.w[c + 1] or 1) + (o.b and o.b[c + 1] or 0)
      end
    end
    if use_input_stats then
      if o.rm then new_rm[c + 1] = momentum * mean_sum / N + (1 - momentum) * o.rm[c + 1] end
      if o.rv then new_rv[c + 1] = momentum * var_sum / N + (1 - momentum) * o.rv[c + 1] end
    else
      new_rm, new_rv = o.rm, o.rv
    end
  end
  return y, new_rm, new_rv
end

-- F.layer_norm over the trailing prod(nshape) values of each row; w and b flat, elementwise.
local function naive_layer_norm(xs, nshape, w, b, eps)
  local cols = prod(nshape)
  local y = {}
  for first = 0, #xs - 1, cols do
    local vals = {}
    for j = 1, cols do vals[j] = xs[first + j] end
    local mean, var = moments(vals)
    local std = math.sqrt(var + eps)
    for j = 1, cols do y[first + j] = (vals[j] - mean) / std * (w and w[j] or 1) + (b and b[j] or 0) end
  end
  return y
end

-- -- batch_norm ----

-- Runs vol.batch_norm on a random input of `shape` and checks y and the running statistics.
local function check_batch_norm(shape, o)
  o = o or {}
  local C = shape[2]
  local x = rand_tensor(shape, o.seed or 1, o.scale, o.offset)
  local rm = o.running ~= false and rand_tensor({C}, 201, 0.5) or nil
  local rv = o.running ~= false and rand_tensor({C}, 202, 0.5, 1.5) or nil
  local w = o.affine and rand_tensor({C}, 203, 1, 0.5) or nil
  local b = o.affine and rand_tensor({C}, 204) or nil
  local rm0, rv0 = rm and values(rm), rv and values(rv)
  local momentum, eps = o.momentum or 0.1, o.eps or 1e-5
  local y = vol.batch_norm(x, rm, rv, w, b, o.training, o.momentum, o.eps)
  assert.are.same(shape, y.shape)
  assert.are.equal(device, y.device)
  local want, want_rm, want_rv = naive_batch_norm(values(x), shape, rm0, rv0, w and values(w), b and values(b),
                                                  o.training, momentum, eps)
  assert_close(y, want, "y")
  if rm then assert_close(rm, want_rm, "running_mean") end
  if rv then assert_close(rv, want_rv, "running_var") end
  return y, rm, rv
end

describe("batch_norm", function()
  it("trains on ranks 2 to 5, updating the running statistics (unbiased variance)", function()
    check_batch_norm({5, 3}, {training = true, affine = true})
    check_batch_norm({3, 4, 6}, {training = true, seed = 2})
    check_batch_norm({2, 3, 4, 5}, {training = true, affine = true, seed = 3})
    check_batch_norm({2, 3, 3, 4, 2}, {training = true, affine = true, seed = 4, momentum = 0.3})
    check_batch_norm({2, 2, 2, 3, 2, 2}, {training = true, seed = 5, momentum = 1})
  end)

  it("updates the variance with N*S - 1: two values a channel", function()
    -- a channel of {1, 3}: mean 2, biased variance 1, unbiased 2; momentum 1 copies them
    local x = tensor_of({1, 10, 3, 30}, {2, 2})
    local rm, rv = vol.zeros({2}):to(device), vol.ones({2}):to(device)
    local y = vol.batch_norm(x, rm, rv, nil, nil, true, 1, 0)
    assert.are.same({2, 20}, values(rm))
    assert.are.same({2, 200}, values(rv))
    assert_close(y, {-1, -1, 1, 1})
  end)

  it("trains without running statistics, and with momentum 0 leaves them as they were", function()
    check_batch_norm({3, 2, 5}, {training = true, running = false, affine = true})
    local _, rm, rv = check_batch_norm({3, 2, 5}, {training = true, momentum = 0, seed = 6})
    assert_close(rm, values(rand_tensor({2}, 201, 0.5)))
    assert_close(rv, values(rand_tensor({2}, 202, 0.5, 1.5)))
  end)

  it("evaluates with the running statistics (required), leaving them unchanged", function()
    check_batch_norm({1, 3}, {affine = true})
    check_batch_norm({2, 3, 4, 3, 2}, {affine = true, seed = 7, eps = 0.1})
    check_batch_norm({1, 4, 1, 1, 1}, {seed = 8}) -- one value a channel is fine in eval
  end)

  it("is stable when the mean is large against the spread", function()
    check_batch_norm({4, 2, 8, 8}, {training = true, offset = 1000, scale = 0.01, affine = true})
    check_batch_norm({2, 3, 5, 5, 5}, {training = true, offset = -3e4, scale = 0.5, seed = 9})
  end)

  it("propagates NaN and inf into the channel they are in, and its running statistics", function()
    local xs = random_list(2 * 3 * 4, 10)
    xs[2] = nan   -- channel 1
    xs[10] = inf  -- channel 3 (n 0, c 2)
    local x = tensor_of(xs, {2, 3, 4})
    local rm, rv = vol.zeros({3}):to(device), vol.ones({3}):to(device)
    local y = vol.batch_norm(x, rm, rv, nil, nil, true)
    local want, want_rm, want_rv = naive_batch_norm(values(x), {2, 3, 4}, {0, 0, 0}, {1, 1, 1}, nil, nil, true, 0.1, 1e-5)
    assert_close(y, want)
    assert_close(rm, want_rm, "running_mean", device == "cuda")
    assert_close(rv, want_rv, "running_var", device == "cuda")
    local ys = values(y)
    assert.is_true(ys[1] ~= ys[1] and ys[13] ~= ys[13]) -- channel 1 all NaN
    assert.is_true(ys[5] == ys[5] and ys[17] == ys[17]) -- channel 2 finite
  end)

  it("gives an empty result for an empty input and leaves the running statistics", function()
    local rm, rv = vol.full({3}, 0.5):to(device), vol.full({3}, 2):to(device)
    local y = vol.batch_norm(vol.zeros({0, 3, 4}):to(device), rm, rv, nil, nil, true)
    assert.are.same({0, 3, 4}, y.shape)
    assert.are.same({0.5, 0.5, 0.5}, values(rm))
    assert.are.same({2, 2, 2}, values(rv))
    assert.are.same({2, 0, 5}, vol.batch_norm(vol.zeros({2, 0, 5}):to(device), nil, nil, nil, nil, true).shape)
  end)

  it("updates the running tensors in place (the same objects)", function()
    local rm = vol.zeros({2}):to(device)
    local alias = rm
    vol.batch_norm(tensor_of({1, 2, 3, 4}, {2, 2}), rm, nil, nil, nil, true, 0.5)
    assert.are.same({1, 1.5}, values(alias))
  end)
end)

describe("batch_norm errors", function()
  local x = vol.zeros({2, 3, 4}):to(device)
  local rm, rv = vol.zeros({3}):to(device), vol.ones({3}):to(device)

  it("needs more than one value a channel when training", function()
    fails(function() vol.batch_norm(vol.zeros({1, 3}):to(device), nil, nil, nil, nil, true) end,
      "batch_norm: Expected more than 1 value per channel when training, got input size (1, 3)")
    fails(function() vol.batch_norm(vol.zeros({1, 3, 1, 1}):to(device), rm, rv, nil, nil, true) end,
      "batch_norm: Expected more than 1 value per channel when training, got input size (1, 3, 1, 1)")
  end)

  it("needs the running statistics in eval, with C elements", function()
    fails(function() vol.batch_norm(x, nil, rv) end, "batch_norm: running_mean must be defined in evaluation mode")
    fails(function() vol.batch_norm(x, rm) end, "batch_norm: running_var must be defined in evaluation mode")
    fails(function() vol.batch_norm(x, vol.zeros({4}):to(device), rv) end,
      "batch_norm: running_mean should contain 3 elements not 4")
    fails(function() vol.batch_norm(x, rm, rv, vol.ones({2}):to(device)) end,
      "batch_norm: weight should contain 3 elements not 2")
    fails(function() vol.batch_norm(x, rm, rv, nil, vol.ones({5}):to(device), true) end,
      "batch_norm: bias should contain 3 elements not 5")
    fails(function() vol.batch_norm(x, nil, vol.ones({2}):to(device), nil, nil, true) end,
      "batch_norm: running_var should contain 3 elements not 2")
  end)

  it("needs float32 tensors, a rank >= 2 input and well-typed options", function()
    fails(function() vol.batch_norm(vol.zeros({3}):to(device), rm, rv) end,
      "batch_norm: input must have at least 2 dims (N, C, *), got 1-D (3,)")
    fails(function() vol.batch_norm(vol.zeros({2, 3}, {dtype = "int64"}):to(device), rm, rv) end,
      "batch_norm: input dtype int64 is not supported (float32 needed)")
    fails(function() vol.batch_norm(x, vol.zeros({3}, {dtype = "int64"}):to(device), rv) end,
      "batch_norm: running_mean dtype int64 is not supported (float32 needed)")
    fails(function() vol.batch_norm("x", rm, rv) end, "batch_norm: input must be a tensor")
    fails(function() vol.batch_norm(x, {}, rv) end, "batch_norm: running_mean must be a tensor")
    fails(function() vol.batch_norm(x, rm, rv, nil, nil, 1) end, "batch_norm: training must be a boolean, got number")
    fails(function() vol.batch_norm(x, rm, rv, nil, nil, true, "0.1") end, "batch_norm: momentum must be a number")
    fails(function() vol.batch_norm(x, rm, rv, nil, nil, false, 0.1, -1) end,
      "batch_norm: eps (-1) must be a finite non-negative number")
  end)

  it("names a freed tensor", function()
    local t = vol.zeros({3}):to(device)
    getmetatable(t).__gc(t) -- what the collector does; the userdata lives on, empty
    fails(function() vol.batch_norm(x, t, rv) end, "batch_norm: running_mean is a freed tensor")
  end)
end)

-- -- instance_norm ----

local function check_instance_norm(shape, o)
  o = o or {}
  local C = shape[2]
  local x = rand_tensor(shape, o.seed or 11, o.scale, o.offset)
  local rm = o.running and rand_tensor({C}, 211, 0.5) or nil
  local rv = o.running and rand_tensor({C}, 212, 0.5, 1.5) or nil
  local w = o.affine and rand_tensor({C}, 213, 1, 0.5) or nil
  local b = o.affine and rand_tensor({C}, 214) or nil
  local ref = {rm = rm and values(rm), rv = rv and values(rv), w = w and values(w), b = b and values(b),
               use_input_stats = o.use_input_stats, momentum = o.momentum, eps = o.eps}
  local y = vol.instance_norm(x, {running_mean = rm, running_var = rv, weight = w, bias = b,
                                  use_input_stats = o.use_input_stats, momentum = o.momentum, eps = o.eps})
  assert.are.same(shape, y.shape)
  local want, want_rm, want_rv = naive_instance_norm(values(x), shape, ref)
  assert_close(y, want, "y")
  if rm then assert_close(rm, want_rm, "running_mean") end
  if rv then assert_close(rv, want_rv, "running_var") end
  return y, x
end

describe("instance_norm", function()
  it("normalises each (sample, channel) on ranks 3 to 5, with and without affine", function()
    check_instance_norm({2, 3, 5})
    check_instance_norm({3, 2, 4, 3}, {affine = true, seed = 12})
    check_instance_norm({2, 3, 3, 2, 4}, {affine = true, seed = 13, eps = 0.01})
    local y = vol.instance_norm(rand_tensor({2, 3, 7}, 14))
    assert.are.same({2, 3, 7}, y.shape)
  end)

  it("updates the running statistics with the batch's mean of the instances' statistics", function()
    check_instance_norm({3, 2, 6}, {running = true})
    check_instance_norm({2, 3, 2, 3, 2}, {running = true, affine = true, momentum = 0.4, seed = 15})
    check_instance_norm({4, 2, 5, 5}, {running = true, offset = 500, scale = 0.1, seed = 16})
    -- two instances of one channel: {0, 2} (mean 1, unbiased var 2) and {4, 8} (mean 6, var 8)
    local rm, rv = vol.zeros({1}):to(device), vol.zeros({1}):to(device)
    vol.instance_norm(tensor_of({0, 2, 4, 8}, {2, 1, 2}), {running_mean = rm, running_var = rv, momentum = 1})
    assert.are.same({3.5}, values(rm))
    assert.are.same({5}, values(rv))
  end)

  it("uses the running statistics without use_input_stats, leaving them", function()
    check_instance_norm({2, 3, 4}, {running = true, use_input_stats = false, affine = true})
    check_instance_norm({2, 3}, {running = true, use_input_stats = false, seed = 17}) -- 2-D is fine here
  end)

  it("is group_norm with one group a channel", function()
    local x = rand_tensor({2, 4, 3, 5}, 18)
    local w, b = rand_tensor({4}, 19), rand_tensor({4}, 20)
    assert.are.same(values(vol.group_norm(x, 4, w, b)), values(vol.instance_norm(x, {weight = w, bias = b})))
  end)

  it("propagates NaN within its instance; empty inputs give empty results", function()
    local xs = random_list(2 * 2 * 3, 21)
    xs[4] = nan -- instance (0, 1)
    local rm, rv = vol.zeros({2}):to(device), vol.ones({2}):to(device)
    local x = tensor_of(xs, {2, 2, 3})
    local y = vol.instance_norm(x, {running_mean = rm, running_var = rv})
    local want, want_rm, want_rv = naive_instance_norm(values(x), {2, 2, 3}, {rm = {0, 0}, rv = {1, 1}})
    assert_close(y, want)
    assert_close(rm, want_rm)
    assert_close(rv, want_rv)
    assert.is_true(values(rm)[2] ~= values(rm)[2])
    local before = values(rm)
    local e = vol.instance_norm(vol.zeros({0, 2, 4}):to(device), {running_mean = rm})
    assert.are.same({0, 2, 4}, e.shape)
    assert_close(rm, before) -- untouched
    assert.are.same({0, 2, 5}, vol.instance_norm(vol.zeros({0, 2, 5}):to(device)).shape)
  end)
end)

describe("instance_norm errors", function()
  local x = vol.zeros({2, 3, 4}):to(device)
  it("checks as F.instance_norm", function()
    fails(function() vol.instance_norm(vol.zeros({2, 3}):to(device)) end,
      "instance_norm: Expected more than 1 spatial element when training, got input size (2, 3)")
    fails(function() vol.instance_norm(vol.zeros({2, 3, 1, 1}):to(device)) end,
      "instance_norm: Expected more than 1 spatial element when training, got input size (2, 3, 1, 1)")
    fails(function() vol.instance_norm(x, {use_input_stats = false}) end,
      "instance_norm: Expected running_mean and running_var to be defined when use_input_stats is false")
    fails(function() vol.instance_norm(x, {weight = vol.ones({4}):to(device)}) end,
      "instance_norm: weight must have shape (3,), one value per channel, got (4,)")
    fails(function() vol.instance_norm(x, {running_mean = vol.ones({1, 3}):to(device)}) end,
      "instance_norm: running_mean must have shape (3,)")
    fails(function() vol.instance_norm(x, {bais = 1}) end, "instance_norm: unknown option 'bais'")
    fails(function() vol.instance_norm(x, 5) end, "instance_norm: options must be a table")
    fails(function() vol.instance_norm(x, {use_input_stats = 1}) end, "instance_norm: use_input_stats must be a boolean")
    fails(function() vol.instance_norm(x, {eps = -1}) end, "instance_norm: eps (-1) must be a finite non-negative number")
    fails(function() vol.instance_norm(vol.zeros({4}):to(device)) end,
      "instance_norm: input must have at least 2 dims (N, C, *), got 1-D (4,)")
    fails(function() vol.instance_norm(x, {bias = "b"}) end, "instance_norm: bias must be a tensor")
  end)
end)

-- -- layer_norm ----

local function check_layer_norm(shape, nshape, o)
  o = o or {}
  local x = rand_tensor(shape, o.seed or 31, o.scale, o.offset)
  local ns = type(nshape) == "number" and {nshape} or nshape
  local w = o.weight and rand_tensor(ns, 301, 1, 0.5) or nil
  local b = o.bias and rand_tensor(ns, 302) or nil
  local y = vol.layer_norm(x, nshape, w, b, o.eps)
  assert.are.same(shape, y.shape)
  assert_close(y, naive_layer_norm(values(x), ns, w and values(w), b and values(b), o.eps or 1e-5))
end

describe("layer_norm", function()
  it("normalises over 1 to 3 trailing dims, on ranks 1 to 5", function()
    check_layer_norm({7}, 7, {weight = true, bias = true})
    check_layer_norm({3, 5}, {5}, {weight = true})
    check_layer_norm({2, 3, 4}, {3, 4}, {weight = true, bias = true, seed = 32})
    check_layer_norm({2, 2, 3, 4}, {2, 3, 4}, {bias = true, seed = 33})
    check_layer_norm({2, 2, 2, 3, 3}, {3, 3}, {weight = true, bias = true, seed = 34, eps = 0.1})
    check_layer_norm({2, 3, 2, 2, 5}, 5, {seed = 35})
  end)

  it("is stable when the mean is large against the spread; one value a row gives the bias", function()
    check_layer_norm({3, 64}, 64, {offset = 1000, scale = 0.01, weight = true, bias = true})
    check_layer_norm({4, 1}, 1, {bias = true, seed = 36})
  end)

  it("propagates NaN within its row; empty inputs give empty results", function()
    local xs = random_list(12, 37)
    xs[5] = nan
    xs[12] = -inf
    local x = tensor_of(xs, {3, 4})
    local y = vol.layer_norm(x, 4)
    assert_close(y, naive_layer_norm(values(x), {4}, nil, nil, 1e-5))
    local ys = values(y)
    assert.is_true(ys[1] == ys[1] and ys[5] ~= ys[5] and ys[8] ~= ys[8])
    assert.are.same({0, 4}, vol.layer_norm(vol.zeros({0, 4}):to(device), 4).shape)
    assert.are.same({3, 0}, vol.layer_norm(vol.zeros({3, 0}):to(device), {0}).shape)
  end)
end)

describe("layer_norm errors", function()
  local x = vol.zeros({2, 3, 4}):to(device)
  it("checks as F.layer_norm", function()
    fails(function() vol.layer_norm(x, {4, 3}) end,
      "layer_norm: Given normalized_shape=(4, 3), expected input with shape (*, 4, 3), but got input of size (2, 3, 4)")
    fails(function() vol.layer_norm(x, {1, 2, 3, 4}) end, "layer_norm: Given normalized_shape=(1, 2, 3, 4)")
    fails(function() vol.layer_norm(x, {}) end,
      "layer_norm: Expected normalized_shape to be at least 1-dimensional")
    fails(function() vol.layer_norm(x, 4, vol.ones({3}):to(device)) end,
      "layer_norm: Expected weight to be of same shape as normalized_shape, but got weight of shape (3,) and normalized_shape = (4,)")
    fails(function() vol.layer_norm(x, {3, 4}, nil, vol.ones({12}):to(device)) end,
      "layer_norm: Expected bias to be of same shape as normalized_shape")
    fails(function() vol.layer_norm(x, "4") end, "layer_norm: normalized_shape must be a size or a list of sizes, got string")
    fails(function() vol.layer_norm(x, {4.5}) end, "layer_norm: normalized_shape[1] must be an integer")
    fails(function() vol.layer_norm(x, 4, nil, nil, -2) end, "layer_norm: eps (-2) must be a finite non-negative number")
    fails(function() vol.layer_norm(vol.zeros({4}, {dtype = "int64"}):to(device), 4) end,
      "layer_norm: input dtype int64 is not supported (float32 needed)")
  end)
end)

-- -- nn modules ----

describe("nn BatchNorm3d, InstanceNorm3d, LayerNorm", function()
  it("have PyTorch's reprs", function()
    assert.equal("BatchNorm3d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)",
                 tostring(nn.BatchNorm3d(16)))
    assert.equal("BatchNorm3d(4, eps=0.001, momentum=None, affine=False, track_running_stats=False)",
                 tostring(nn.BatchNorm3d(4, {eps = 1e-3, momentum = false, affine = false, track_running_stats = false})))
    assert.equal("InstanceNorm3d(8, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)",
                 tostring(nn.InstanceNorm3d(8)))
    assert.equal("InstanceNorm3d(8, eps=1e-05, momentum=0.25, affine=True, track_running_stats=True)",
                 tostring(nn.InstanceNorm3d(8, {momentum = 0.25, affine = true, track_running_stats = true})))
    assert.equal("LayerNorm((16,), eps=1e-05, elementwise_affine=True)", tostring(nn.LayerNorm(16)))
    assert.equal("LayerNorm((4, 5), eps=0.01, elementwise_affine=False)",
                 tostring(nn.LayerNorm({4, 5}, {eps = 0.01, elementwise_affine = false})))
    local s = nn.Sequential(nn.Conv3d(2, 4, 3), nn.BatchNorm3d(4))
    assert.equal("Sequential(\n  (0): Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1))\n" ..
                 "  (1): BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n)", tostring(s))
  end)

  it("hold torch's parameters and buffers, state_dict keys in torch's order", function()
    local m = nn.BatchNorm3d(3)
    assert.same({"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}, m:state_dict_keys())
    assert.same({1, 1, 1}, m.weight:table())
    assert.same({0, 0, 0}, m.bias:table())
    assert.same({0, 0, 0}, m.running_mean:table())
    assert.same({1, 1, 1}, m.running_var:table())
    assert.equal("int64", m.num_batches_tracked.dtype)
    assert.same({}, m.num_batches_tracked.shape)
    assert.equal(0, m.num_batches_tracked:item())
    assert.equal(2, #m:parameters()) -- buffers are not parameters
    assert.equal(3, #m:buffers())
    assert.same({"running_mean", "running_var", "num_batches_tracked"},
                {m:named_buffers()[1][1], m:named_buffers()[2][1], m:named_buffers()[3][1]})
    assert.same({"running_mean", "running_var", "num_batches_tracked"},
                nn.BatchNorm3d(3, {affine = false}):state_dict_keys())
    assert.same({}, nn.BatchNorm3d(3, {track_running_stats = false, affine = false}):state_dict_keys())
    assert.same({}, nn.InstanceNorm3d(3):state_dict_keys())
    assert.same({"weight", "bias", "running_mean", "running_var", "num_batches_tracked"},
                nn.InstanceNorm3d(3, {affine = true, track_running_stats = true}):state_dict_keys())
    assert.same({"weight", "bias"}, nn.LayerNorm({2, 3}):state_dict_keys())
    assert.same({2, 3}, nn.LayerNorm({2, 3}).weight.shape)
    assert.same({"weight"}, nn.LayerNorm(4, {bias = false}):state_dict_keys())
    assert.same({}, nn.LayerNorm(4, {elementwise_affine = false}):state_dict_keys())
    local s = nn.Sequential({{"conv", nn.Conv3d(1, 2, 1)}, {"bn", nn.BatchNorm3d(2)}})
    assert.same({"conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                 "bn.num_batches_tracked"}, s:state_dict_keys())
  end)

  it("refuse bad arguments", function()
    fails(function() nn.BatchNorm3d(4, {momentum = "x"}) end, "BatchNorm3d: momentum must be a number or false")
    fails(function() nn.BatchNorm3d(4, {affine = 1}) end, "BatchNorm3d: affine must be true or false")
    fails(function() nn.BatchNorm3d(4, {eps = -1}) end, "BatchNorm3d: eps must be a finite non-negative number")
    fails(function() nn.BatchNorm3d(4, {foo = 1}) end, "BatchNorm3d: unknown option 'foo'")
    fails(function() nn.BatchNorm3d(2.5) end, "BatchNorm3d: num_features must be an integer")
    fails(function() nn.InstanceNorm3d(4, {track_running_stats = "yes"}) end,
      "InstanceNorm3d: track_running_stats must be true or false")
    fails(function() nn.LayerNorm("a") end, "LayerNorm: normalized_shape must be a size or a list of sizes")
    fails(function() nn.LayerNorm({2, -1}) end, "LayerNorm: normalized_shape[2] must be at least 0")
    fails(function() nn.LayerNorm(4, {bias = 0}) end, "LayerNorm: bias must be true or false")
    fails(function() nn.BatchNorm3d(2)(vol.zeros({2, 2, 3, 3})) end, "BatchNorm3d: expected 5D input (got 4D input)")
    fails(function() nn.InstanceNorm3d(2)(vol.zeros({2, 2, 3})) end, "InstanceNorm3d: expected 4D or 5D input (got 3D input)")
    fails(function() nn.InstanceNorm3d(2, {affine = true})(vol.zeros({2, 3, 2, 2, 2})) end,
      "InstanceNorm3d: expected input's size at dim=1 to match num_features (2), but got: 3.")
    fails(function() nn.InstanceNorm3d(2, {affine = true})(vol.zeros({3, 2, 2, 2})) end,
      "InstanceNorm3d: expected input's size at dim=0 to match num_features (2), but got: 3.")
  end)

  it("train() and eval() switch training mode, recursing into children", function()
    local bn, inorm = nn.BatchNorm3d(2), nn.InstanceNorm3d(2)
    local s = nn.Sequential(nn.Sequential(bn), inorm, nn.ReLU())
    assert.is_true(s.training)
    assert.is_true(bn.training)
    assert.equal(s, s:eval())
    assert.is_false(s.training)
    assert.is_false(s:get(1).training)
    assert.is_false(bn.training)
    assert.is_false(inorm.training)
    assert.is_false(s:get(3).training)
    assert.equal(s, s:train())
    assert.is_true(bn.training and inorm.training and s:get(1).training)
    s:get(1):train(false)
    assert.is_false(bn.training)
    assert.is_true(inorm.training)
    fails(function() s:train(1) end, "train: training mode is expected to be boolean, got number")
  end)

  it("BatchNorm3d trains with the batch's statistics, counts batches, and evaluates with the running ones", function()
    local shape = {2, 3, 2, 3, 2}
    local m = nn.BatchNorm3d(3):to(device)
    m.weight:copy(vol.tensor({0.5, 1.5, -1}))
    m.bias:copy(vol.tensor({0.1, 0.2, 0.3}))
    local w, b = values(m.weight), values(m.bias)
    local rm, rv = {0, 0, 0}, {1, 1, 1}
    for step = 1, 2 do
      local x = rand_tensor(shape, 40 + step)
      local y = m(x)
      local want
      want, rm, rv = naive_batch_norm(values(x), shape, rm, rv, w, b, true, 0.1, 1e-5)
      assert_close(y, want, "train y")
      assert_close(m.running_mean, rm, "running_mean")
      assert_close(m.running_var, rv, "running_var")
      assert.equal(step, m.num_batches_tracked:item())
    end
    m:eval()
    local x = rand_tensor(shape, 43)
    local y = m(x)
    assert_close(y, (naive_batch_norm(values(x), shape, rm, rv, w, b, false, 0.1, 1e-5)), "eval y")
    assert_close(m.running_mean, rm)
    assert.equal(2, m.num_batches_tracked:item())
  end)

  it("BatchNorm3d with momentum None takes the cumulative average of the batches' statistics", function()
    local shape = {2, 2, 2, 2, 3}
    local m = nn.BatchNorm3d(2, {momentum = false, affine = false}):to(device)
    assert.is_nil(m.momentum)
    local sums_m, sums_v = {0, 0}, {0, 0}
    for step = 1, 3 do
      local x = rand_tensor(shape, 50 + step, 1, step) -- a different mean each batch
      m(x)
      local xs = values(x)
      for c = 1, 2 do
        local vals = {}
        for n = 0, 1 do for s = 1, 12 do vals[#vals + 1] = xs[run_start(n, c - 1, 2, 12) + s] end end
        local mean, _, unbiased = moments(vals)
        sums_m[c], sums_v[c] = sums_m[c] + mean, sums_v[c] + unbiased
      end
      assert_close(m.running_mean, {sums_m[1] / step, sums_m[2] / step}, "cumulative mean")
      assert_close(m.running_var, {sums_v[1] / step, sums_v[2] / step}, "cumulative var")
    end
    assert.equal(3, m.num_batches_tracked:item())
  end)

  it("BatchNorm3d without running statistics uses the batch's in eval too", function()
    local shape = {2, 2, 2, 2, 2}
    local m = nn.BatchNorm3d(2, {track_running_stats = false}):to(device)
    m:eval()
    local x = rand_tensor(shape, 60)
    assert_close(m(x), (naive_batch_norm(values(x), shape, nil, nil, nil, nil, true, 0.1, 1e-5)))
    -- and in training, a one-value batch fails as in torch, after num_batches_tracked counted it
    local t = nn.BatchNorm3d(2):to(device)
    fails(function() t(vol.zeros({1, 2, 1, 1, 1}):to(device)) end, "Expected more than 1 value per channel when training")
    assert.equal(1, t.num_batches_tracked:item())
  end)

  it("InstanceNorm3d: batched and unbatched, running statistics in training and eval", function()
    local m = nn.InstanceNorm3d(3):to(device)
    local x = rand_tensor({2, 3, 2, 3, 2}, 61)
    assert_close(m(x), (naive_instance_norm(values(x), {2, 3, 12}, {})))
    local u = rand_tensor({3, 2, 2, 2}, 62)
    local yu = m(u)
    assert.same({3, 2, 2, 2}, yu.shape)
    assert_close(yu, (naive_instance_norm(values(u), {1, 3, 8}, {})))

    local t = nn.InstanceNorm3d(2, {affine = true, track_running_stats = true, momentum = 0.2}):to(device)
    t.weight:copy(vol.tensor({2, -1}))
    local xs = rand_tensor({3, 2, 2, 2, 2}, 63)
    local want, rm, rv = naive_instance_norm(values(xs), {3, 2, 8},
                                            {rm = {0, 0}, rv = {1, 1}, w = {2, -1}, b = {0, 0}, momentum = 0.2})
    assert_close(t(xs), want)
    assert_close(t.running_mean, rm)
    assert_close(t.running_var, rv)
    assert.equal(0, t.num_batches_tracked:item()) -- torch's InstanceNorm does not count
    t:eval()
    local e = rand_tensor({1, 2, 2, 2, 2}, 64)
    assert_close(t(e), (naive_instance_norm(values(e), {1, 2, 8},
                                            {rm = rm, rv = rv, w = {2, -1}, b = {0, 0}, use_input_stats = false})))
    assert_close(t.running_mean, rm)
  end)

  it("LayerNorm normalises the trailing normalized_shape", function()
    local m = nn.LayerNorm({3, 4}):to(device)
    m.weight:copy(rand_tensor({3, 4}, 65))
    m.bias:copy(rand_tensor({3, 4}, 66))
    local x = rand_tensor({2, 5, 3, 4}, 67)
    assert_close(m(x), naive_layer_norm(values(x), {3, 4}, values(m.weight), values(m.bias), 1e-5))
    local plain = nn.LayerNorm(4, {elementwise_affine = false, eps = 0.5}):to(device)
    assert_close(plain(x), naive_layer_norm(values(x), {4}, nil, nil, 0.5))
  end)

  it("load_state_dict fills parameters and buffers, and reports them by name", function()
    local src = nn.Sequential({{"conv", nn.Conv3d(1, 2, 1)}, {"bn", nn.BatchNorm3d(2)}})
    src.bn.running_mean:copy(vol.tensor({0.5, -0.5}))
    src.bn.running_var:copy(vol.tensor({2, 3}))
    src.bn.num_batches_tracked:fill(7)
    local dst = nn.Sequential({{"conv", nn.Conv3d(1, 2, 1)}, {"bn", nn.BatchNorm3d(2)}})
    dst:load_state_dict(src:state_dict())
    assert.same({0.5, -0.5}, dst.bn.running_mean:table())
    assert.same({2, 3}, dst.bn.running_var:table())
    assert.equal(7, dst.bn.num_batches_tracked:item())
    assert.equal("int64", dst.bn.num_batches_tracked.dtype)
    -- a float num_batches_tracked is converted; a missing one is allowed (torch fills it in)
    local sd = src:state_dict()
    sd["bn.num_batches_tracked"] = vol.tensor(3)
    dst:load_state_dict(sd)
    assert.equal(3, dst.bn.num_batches_tracked:item())
    sd["bn.num_batches_tracked"] = nil
    dst:load_state_dict(sd)
    assert.equal(3, dst.bn.num_batches_tracked:item())
    -- a missing running_var and a wrong-sized running_mean are errors
    sd["bn.running_var"] = nil
    sd["bn.running_mean"] = vol.zeros({3})
    local ok, e = pcall(dst.load_state_dict, dst, sd)
    assert.is_false(ok)
    assert.matches('Missing key(s) in state_dict: "bn.running_var".', e, 1, true)
    assert.matches("size mismatch for bn.running_mean: copying a param with shape (3,) from checkpoint, " ..
                   "the shape in current model is (2,).", e, 1, true)
    local r = dst:load_state_dict({["bn.running_mean"] = vol.ones({2})}, {strict = false})
    assert.same({1, 1}, dst.bn.running_mean:table())
    assert.same({"conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_var"}, r.missing_keys)
    local ok2, e2 = pcall(nn.BatchNorm3d(2).load_state_dict, nn.BatchNorm3d(2, {track_running_stats = false}),
                          nn.BatchNorm3d(2):state_dict())
    assert.is_false(ok2)
    assert.matches('Unexpected key(s) in state_dict: "num_batches_tracked", "running_mean", "running_var".', e2, 1, true)
  end)

  local moves = vol.cuda_available() and it or function(name) pending(name .. ": no GPU") end
  moves("moves buffers with the module", function()
    local m = nn.BatchNorm3d(2):cuda()
    assert.equal("cuda", m.running_mean.device)
    assert.equal("cuda", m.num_batches_tracked.device)
    assert.equal("cuda", m:device())
    local a = nn.BatchNorm3d(2, {affine = false}):cuda()
    assert.equal("cuda", a:device())
    m(vol.rand({2, 2, 2, 2, 2}, {device = "cuda"}))
    assert.equal(1, m.num_batches_tracked:item())
    m:cpu()
    assert.equal("cpu", m.running_var.device)
  end)
end)

-- -- GPU against CPU ----
-- Random shapes from a seeded generator (each run draws a seed and prints it; VOLUA_SEED=n
-- reproduces it), NaN and inf sprinkled in, means far off zero, the running statistics compared
-- after their update; fixed shapes reach each kernel path of kernels/batch_norm.cu and
-- layer_norm.cu. VOLUA_NORMS_SPEC_DEVICE=cpu runs it all against the CPU itself (a self-test).

local target, no_gpu = compare.target("VOLUA_NORMS_SPEC_DEVICE")

describe("GPU against CPU: batch_norm, instance_norm, layer_norm", function()
  if no_gpu then
    pending(no_gpu)
    return
  end
  local TRIALS = tonumber(os.getenv("VOLUA_GPU_TRIALS")) or 25
  local SEED = compare.seed("norms_spec", target)
  local checks = compare.new {target = target, seed = SEED, trials = TRIALS, rtol = RTOL, atol = ATOL}
  local show, data, sprinkle = compare.show, compare.data, compare.sprinkle

  -- got (on the target) against want (on the CPU): shape, dtype, allclose at fp32 tolerance, NaN = NaN
  local same_as_cpu = checks.assert_close

  -- Running statistics: as same_as_cpu, but where the CPU's is +-inf (an infinite input in the
  -- channel: its plain sum), the GPU's may be NaN (Chan's merge of an infinite mean gives inf - inf),
  -- as PyTorch's CPU and CUDA kernels differ in the same way.
  local function same_running(got, want, what)
    assert.equal(target, got.device, what .. ": on the wrong device")
    local g, w = got:cpu():table(), want:table()
    assert.equal(#w, #g, what .. ": size")
    for i = 1, #w do
      local a, b = g[i], w[i]
      local ok
      if b ~= b then ok = a ~= a
      elseif b == inf or b == -inf then ok = a == b or a ~= a
      else ok = math.abs(a - b) <= ATOL + RTOL * math.abs(b) end
      assert.is_true(ok, ("%s: element %d is %s, the CPU's %s"):format(what, i, tostring(a), tostring(b)))
    end
  end

  -- results are lists {y, running_mean, running_var} (nil entries allowed: absent running statistics)
  local function same_lists(got, want, what)
    for i = 1, 3 do
      if not want[i] then assert.is_nil(got[i], what .. " result " .. i)
      elseif i == 1 then same_as_cpu(got[i], want[i], what .. " y")
      else same_running(got[i], want[i], what .. (i == 2 and " running_mean" or " running_var")) end
    end
  end

  -- Draws a case with gen(r) until the CPU accepts it (its checks are PyTorch's), then runs it on
  -- the target and compares the lists.
  local function random_trials(name, salt, gen, run) checks.random_trials(name, salt, gen, run, same_lists) end

  -- spatial sizes: short runs (the value-by-value kernels) and runs of 256 or more (float4 walks)
  local function spatial(r, shape, most)
    for _ = 1, r.int(0, most) do shape[#shape + 1] = r.pick({1, 2, 3, 5, 7, 9, 16, 17, 33}) end
    return shape
  end

  -- a fresh copy each run (t:to(d) is t itself when t is already on d: the CPU run would update
  -- the case's running statistics in place, and the target run would start from those)
  local function copy_to(t, device) return t and t:clone():to(device) or nil end

  it("batch_norm on random shapes, training and eval, running statistics updated", function()
    random_trials("batch_norm", 1, function(r)
      local shape = spatial(r, {r.int(1, 4), r.int(1, 5)}, 3)
      local C = shape[2]
      local x = data(shape, r.seed(), r.chance(0.3) and 1000 or 0)
      if r.chance(0.2) then sprinkle(x, r, r.int(1, 3)) end
      local training = r.chance(0.6)
      local running = not training or r.chance(0.7)
      return {shape = shape, x = x, training = training, momentum = r.pick({0.1, 0.5, 1, 0}),
              eps = r.pick({1e-5, 1e-3, 0.1}),
              rm = running and data({C}, r.seed()) or nil,
              rv = running and (data({C}, r.seed()):abs() + 0.5) or nil,
              w = r.chance(0.6) and data({C}, r.seed()) or nil, b = r.chance(0.6) and data({C}, r.seed()) or nil}
    end, function(c, d)
      local rm, rv = copy_to(c.rm, d), copy_to(c.rv, d)
      local y = vol.batch_norm(c.x:to(d), rm, rv, copy_to(c.w, d), copy_to(c.b, d), c.training, c.momentum, c.eps)
      return {y, rm, rv}
    end)
  end)

  it("instance_norm on random shapes, input or running statistics", function()
    random_trials("instance_norm", 2, function(r)
      local shape = spatial(r, {r.int(1, 4), r.int(1, 5), r.pick({2, 3, 7, 300})}, 2)
      local C = shape[2]
      local x = data(shape, r.seed(), r.chance(0.3) and 500 or 0)
      if r.chance(0.2) then sprinkle(x, r, r.int(1, 3)) end
      local use_input_stats = r.chance(0.7)
      local running = not use_input_stats or r.chance(0.6)
      return {shape = shape, x = x, use_input_stats = use_input_stats, momentum = r.pick({0.1, 0.5, 1}),
              eps = r.pick({1e-5, 1e-2}),
              rm = running and data({C}, r.seed()) or nil,
              rv = running and (data({C}, r.seed()):abs() + 0.5) or nil,
              w = r.chance(0.5) and data({C}, r.seed()) or nil, b = r.chance(0.5) and data({C}, r.seed()) or nil}
    end, function(c, d)
      local rm, rv = copy_to(c.rm, d), copy_to(c.rv, d)
      local y = vol.instance_norm(c.x:to(d), {running_mean = rm, running_var = rv, weight = copy_to(c.w, d),
                                             bias = copy_to(c.b, d), use_input_stats = c.use_input_stats,
                                             momentum = c.momentum, eps = c.eps})
      return {y, rm, rv}
    end)
  end)

  it("layer_norm on random shapes: short rows (a warp a row) and long ones (chunked)", function()
    random_trials("layer_norm", 3, function(r)
      local rank = r.int(1, 5)
      local shape = {}
      for i = 1, rank do shape[i] = r.pick({1, 2, 3, 5, 8, 13, 31, 64}) end
      if r.chance(0.3) then shape[rank] = r.pick({1000, 1024, 1025, 1500, 4099}) end
      local nnorm = r.int(1, math.min(3, rank))
      local ns = {}
      for i = 1, nnorm do ns[i] = shape[rank - nnorm + i] end
      local x = data(shape, r.seed(), r.chance(0.3) and 1e4 or 0)
      if r.chance(0.2) then sprinkle(x, r, r.int(1, 3)) end
      return {shape = shape, ns = ns, x = x, eps = r.pick({1e-5, 1e-3}),
              w = r.chance(0.6) and data(ns, r.seed()) or nil, b = r.chance(0.6) and data(ns, r.seed()) or nil}
    end, function(c, d)
      return {vol.layer_norm(c.x:to(d), c.ns, copy_to(c.w, d), copy_to(c.b, d), c.eps)}
    end)
  end)

  it("fixed shapes: channels in many chunks, short runs, long rows, means far off zero", function()
    local cases = {
      {op = "bn", shape = {3, 2, 40, 40, 41}, offset = 1e4},  -- 196800 values a channel in runs of 65600
      {op = "bn", shape = {2000, 3, 7}, offset = 100},        -- runs of 7: value by value, many chunks
      {op = "bn", shape = {20000, 5}, offset = 0},            -- (N, C): runs of one value
      {op = "bn", shape = {4, 6, 5, 11, 13}, offset = 0},     -- runs of 715: odd starts
      {op = "in", shape = {2, 3, 40, 40, 40}, offset = 50},   -- instances of 64000
      {op = "in", shape = {8, 16, 5, 5, 5}, offset = 0},
      {op = "ln", shape = {300, 1024}, offset = 0},           -- the last warp-a-row size
      {op = "ln", shape = {3, 1025}, offset = 1e5},           -- the first chunked one
      {op = "ln", shape = {2, 100003}, offset = 0},           -- rows in many chunks
      {op = "ln", shape = {7, 3, 4097}, ns = {3, 4097}, offset = 3},
    }
    for i, c in ipairs(cases) do
      local x = data(c.shape, SEED + i, c.offset)
      local C = c.shape[2]
      local what = "fixed " .. show(c)
      for _, training in ipairs({true, false}) do
        if c.op == "bn" then
          local rm, rv, w, b = data({C}, SEED + 10 + i), data({C}, SEED + 20 + i):abs() + 0.1, data({C}, SEED + 30 + i),
                               data({C}, SEED + 40 + i)
          local grm, grv = rm:to(target), rv:to(target)
          local got = vol.batch_norm(x:to(target), grm, grv, w:to(target), b:to(target), training, 0.3)
          local want = vol.batch_norm(x, rm, rv, w, b, training, 0.3)
          same_lists({got, grm, grv}, {want, rm, rv}, what .. " training " .. tostring(training))
        elseif c.op == "in" then
          local rm, rv = data({C}, SEED + 10 + i), data({C}, SEED + 20 + i):abs() + 0.1
          local grm, grv = rm:to(target), rv:to(target)
          local got = vol.instance_norm(x:to(target), {running_mean = grm, running_var = grv, use_input_stats = training})
          local want = vol.instance_norm(x, {running_mean = rm, running_var = rv, use_input_stats = training})
          same_lists({got, grm, grv}, {want, rm, rv}, what .. " use_input_stats " .. tostring(training))
        else
          local ns = c.ns or {c.shape[#c.shape]}
          local w, b = training and data(ns, SEED + 10 + i) or nil, training and data(ns, SEED + 20 + i) or nil
          same_as_cpu(vol.layer_norm(x:to(target), ns, copy_to(w, target), copy_to(b, target)),
                      vol.layer_norm(x, ns, w, b), what .. " affine " .. tostring(training))
        end
      end
    end
  end)

  it("empty tensors on the device", function()
    local rm, rv = vol.zeros({3}, {device = target}), vol.ones({3}, {device = target})
    assert.same({0, 3, 4}, vol.batch_norm(vol.zeros({0, 3, 4}, {device = target}), rm, rv, nil, nil, true).shape)
    assert.same({0, 0, 0}, rm:cpu():table())
    assert.same({2, 0, 4}, vol.batch_norm(vol.zeros({2, 0, 4}, {device = target}), nil, nil, nil, nil, true).shape)
    assert.same({0, 3, 4}, vol.instance_norm(vol.zeros({0, 3, 4}, {device = target}), {running_mean = rm}).shape)
    assert.same({0, 5}, vol.layer_norm(vol.zeros({0, 5}, {device = target}), 5).shape)
    assert.same({4, 0}, vol.layer_norm(vol.zeros({4, 0}, {device = target}), 0).shape)
  end)

  it("nn modules on the device: BatchNorm3d train then eval, InstanceNorm3d with running statistics", function()
    local x1, x2, x3 = data({2, 3, 4, 5, 6}, SEED + 61, 3), data({2, 3, 4, 5, 6}, SEED + 62), data({1, 3, 4, 5, 6}, SEED + 63)
    for _, make in ipairs({function() return nn.BatchNorm3d(3, {momentum = false}) end,
                           function() return nn.InstanceNorm3d(3, {track_running_stats = true, affine = true}) end}) do
      local mc, mg = make(), make():to(target)
      same_as_cpu(mg(x1:to(target)), mc(x1), tostring(mc) .. " step 1")
      same_as_cpu(mg(x2:to(target)), mc(x2), tostring(mc) .. " step 2")
      same_running(mg.running_mean, mc.running_mean, tostring(mc) .. " running_mean")
      same_running(mg.running_var, mc.running_var, tostring(mc) .. " running_var")
      mc:eval()
      mg:eval()
      same_as_cpu(mg(x3:to(target)), mc(x3), tostring(mc) .. " eval")
    end
  end)
end)

describe("GPU large tensors for batch_norm and layer_norm (VOLUA_TEST_LARGE=1)", function()
  local why = compare.large_pending(target)
  if why then return pending(why) end
  local full_gc = compare.full_gc
  local function check(name, shape, f)
    local x = vol.rand(shape, {seed = 7, device = "cuda"}) + 100 -- a large mean
    full_gc()
    local got, grm, grv = f(x)
    local xc = x:cpu()
    x = nil
    full_gc()
    local want, rm, rv = f(xc)
    xc = nil
    full_gc()
    local last = {}
    for i, n in ipairs(shape) do last[i] = n end
    assert.is_true(math.abs(got:get(unpack(last)) - want:get(unpack(last))) <= 1e-4, name .. ": the last element")
    local wg = want:cuda()
    assert.is_true(vol.allclose(got, wg, {rtol = RTOL, atol = ATOL}),
                   name .. ": max_abs_diff " .. tostring(vol.max_abs_diff(got, wg)))
    if rm then
      assert.is_true(vol.allclose(grm:cpu(), rm, {rtol = RTOL, atol = ATOL}), name .. ": running_mean")
      assert.is_true(vol.allclose(grv:cpu(), rv, {rtol = RTOL, atol = ATOL}), name .. ": running_var")
    end
  end

  it("batch_norm training on (2, 4, 1024, 1024, 257): 2.16 G elements, past 2^31", function()
    check("batch_norm", {2, 4, 1024, 1024, 257}, function(x)
      local rm, rv = vol.zeros({4}, {device = x.device}), vol.ones({4}, {device = x.device})
      return vol.batch_norm(x, rm, rv, nil, nil, true), rm, rv
    end)
  end)

  it("layer_norm on (3, 2^30 + 7): rows past 2^30 values, elements past 2^31", function()
    check("layer_norm", {3, 2 ^ 30 + 7}, function(x) return vol.layer_norm(x, 2 ^ 30 + 7) end)
  end)
end)
