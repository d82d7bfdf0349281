-- norm_spec.lua: vol.group_norm, vol.mean and vol.sum against naive Lua computations in double, on
-- several ranks and dim sets, and every family of argument error.
local vol = require "volua"

local nan = 0 / 0
local RTOL, ATOL = 1e-4, 1e-5 -- the project's float32 tolerance

-- -- helpers ----

local function prod(t, from, to)
  local p = 1
  for i = from or 1, to or #t do p = p * t[i] end
  return p
end

local function values(t)
  return t:reshape({-1}):table()
end

local function random_list(n, seed, scale, offset)
  math.randomseed(seed)
  local xs = {}
  for i = 1, n do xs[i] = (offset or 0) + (scale or 1) * (math.random() * 2 - 1) end
  return xs
end

local function tensor_of(list, shape)
  return vol.tensor(list):reshape(shape)
end

-- got (a tensor) against want (a flat list), element by element; NaN matches NaN
local function assert_close(got, want)
  local g = values(got)
  assert.are.equal(#want, #g)
  for i = 1, #want do
    local a, b = g[i], want[i]
    local ok
    if b ~= b then ok = a ~= a else ok = math.abs(a - b) <= ATOL + RTOL * math.abs(b) end
    if not ok then
      error(("element %d: got %s, want %s"):format(i, tostring(a), tostring(b)), 2)
    end
  end
end

-- -- group_norm ----

-- Naive group norm of the flat list xs of an (N, C, *) tensor, in double, two passes.
local function naive_group_norm(xs, shape, groups, w, b, eps)
  local N, C = shape[1], shape[2]
  local S = prod(shape, 3)
  local per_group = C / groups * S
  local out = {}
  for n = 0, N - 1 do
    for g = 0, groups - 1 do
      local first = (n * C + g * C / groups) * S -- 0-based offset of the group
      local sum = 0
      for j = 1, per_group do sum = sum + xs[first + j] end
      local mean = sum / per_group
      local sq = 0
      for j = 1, per_group do sq = sq + (xs[first + j] - mean) ^ 2 end
      local std = math.sqrt(sq / per_group + eps)
      for j = 1, per_group do
        local c = g * C / groups + math.floor((j - 1) / S) + 1
        out[first + j] = (xs[first + j] - mean) / std * (w and w[c] or 1) + (b and b[c] or 0)
      end
    end
  end
  return out
end

local function check_group_norm(shape, groups, opts)
  opts = opts or {}
  local x = tensor_of(random_list(prod(shape), opts.seed or 1, opts.scale, opts.offset), shape)
  local C = shape[2]
  local w = opts.weight and vol.tensor(random_list(C, 101, 1, 0.5)) or nil
  local b = opts.bias and vol.tensor(random_list(C, 102)) or nil
  local got = vol.group_norm(x, groups, w, b, opts.eps)
  assert.are.same(shape, got.shape)
  local want = naive_group_norm(values(x), shape, groups, w and values(w), b and values(b),
    opts.eps or 1e-5)
  assert_close(got, want)
  return got
end

describe("group_norm", function()
  it("normalises (N, C, D, H, W) with weight and bias", function()
    check_group_norm({2, 6, 3, 2, 4}, 3, {weight = true, bias = true})
    check_group_norm({3, 4, 2, 3, 2}, 2, {weight = true, bias = true, seed = 2})
  end)

  it("works on any rank >= 2", function()
    check_group_norm({4, 6}, 3, {weight = true, bias = true, seed = 3})
    check_group_norm({2, 4, 5}, 2, {weight = true, seed = 4})
    check_group_norm({2, 4, 2, 3, 2, 2}, 4, {bias = true, seed = 5})
    check_group_norm({1, 6, 7}, 6, {seed = 6}) -- one channel per group (instance norm)
    check_group_norm({2, 5, 3}, 1, {weight = true, bias = true, seed = 7}) -- layer norm
  end)

  it("is stable when the mean is large against the spread", function()
    check_group_norm({2, 4, 8, 8}, 2, {offset = 1000, scale = 0.01, weight = true, bias = true})
    check_group_norm({1, 2, 6, 6, 6}, 1, {offset = -3e4, scale = 0.5, seed = 8})
  end)

  it("uses eps as given (default 1e-5)", function()
    local shape = {2, 4, 3}
    local x = tensor_of(random_list(24, 9, 0.01), shape)
    local xs = values(x)
    assert_close(vol.group_norm(x, 2, nil, nil, 0.5), naive_group_norm(xs, shape, 2, nil, nil, 0.5))
    assert_close(vol.group_norm(x, 2, nil, nil, 0), naive_group_norm(xs, shape, 2, nil, nil, 0))
    assert.are.same(values(vol.group_norm(x, 2, nil, nil, 1e-5)), values(vol.group_norm(x, 2)))
    -- a constant group with eps 0: 0 / 0, NaN as in PyTorch
    local c = vol.group_norm(vol.full({1, 2, 3}, 2), 1, nil, nil, 0)
    for _, v in ipairs(values(c)) do assert.is_true(v ~= v) end
  end)

  it("gives empty results for empty inputs", function()
    assert.are.same({0, 4, 3}, vol.group_norm(vol.zeros({0, 4, 3}), 2).shape)
    assert.are.same({2, 4, 0}, vol.group_norm(vol.zeros({2, 4, 0}), 2).shape)
  end)
end)

describe("group_norm errors", function()
  local x = vol.zeros({1, 6, 3, 3, 3})
  local function fails(f, ...)
    for _, text in ipairs({...}) do assert.error_matches(f, text, nil, true) end
  end

  it("needs num_groups >= 1 dividing the channels", function()
    fails(function() vol.group_norm(x, 4) end, "group_norm: num_groups (4) must divide channels (6)")
    fails(function() vol.group_norm(x, 0) end, "group_norm: num_groups (0) must be greater than zero")
    fails(function() vol.group_norm(x, -2) end, "group_norm: num_groups (-2)")
    fails(function() vol.group_norm(x, 1.5) end, "group_norm", "num_groups", "integer")
    fails(function() vol.group_norm(x) end, "group_norm", "num_groups", "integer")
  end)

  it("needs a float32 input of rank >= 2", function()
    fails(function() vol.group_norm(vol.zeros({6}), 1) end,
      "group_norm: input must have at least 2 dims (N, C, *), got 1-D (6,)")
    fails(function() vol.group_norm(vol.zeros({2, 6}, {dtype = "int64"}), 2) end,
      "group_norm: input dtype int64 is not supported (float32 needed)")
    fails(function() vol.group_norm("x", 2) end, "group_norm: input must be a tensor")
  end)

  it("needs weight and bias of shape (C), float32, or nil", function()
    fails(function() vol.group_norm(x, 3, vol.ones({4})) end,
      "group_norm: weight must have shape (6,), one value per channel, got (4,)")
    fails(function() vol.group_norm(x, 3, vol.ones({6, 1})) end, "group_norm: weight must have shape (6,)")
    fails(function() vol.group_norm(x, 3, nil, vol.ones({5})) end, "group_norm: bias must have shape (6,)")
    fails(function() vol.group_norm(x, 3, vol.ones({6}, {dtype = "int64"})) end,
      "group_norm: weight dtype int64 is not supported (float32 needed)")
    fails(function() vol.group_norm(x, 3, 2) end, "group_norm: weight must be a tensor")
    fails(function() vol.group_norm(x, 3, nil, {}) end, "group_norm: bias must be a tensor")
  end)

  it("needs a finite non-negative eps", function()
    fails(function() vol.group_norm(x, 3, nil, nil, -1) end,
      "group_norm: eps (-1) must be a finite non-negative number")
    fails(function() vol.group_norm(x, 3, nil, nil, nan) end, "group_norm: eps (", "finite")
    fails(function() vol.group_norm(x, 3, nil, nil, math.huge) end, "group_norm: eps (inf)")
    fails(function() vol.group_norm(x, 3, nil, nil, "1e-5") end, "group_norm: eps must be a number")
  end)

  it("refuses a single value per channel, as F.group_norm", function()
    fails(function() vol.group_norm(vol.zeros({1, 4}), 4) end,
      "group_norm: expected more than 1 value per channel")
  end)
end)

-- -- mean ----

-- Naive mean (or sum, when `sum`) of flat xs of `shape` over the 1-based dims listed in `reduce`
-- (a set).
local function naive_mean(xs, shape, reduce, keepdim, sum)
  local out_shape = {}
  for d = 1, #shape do
    if not reduce[d] then out_shape[#out_shape + 1] = shape[d]
    elseif keepdim then out_shape[#out_shape + 1] = 1 end
  end
  local sums, counts = {}, {}
  local coord = {}
  for i = 0, #xs - 1 do
    local rest = i
    for d = #shape, 1, -1 do
      coord[d] = rest % shape[d]
      rest = math.floor(rest / shape[d])
    end
    local key = 0 -- row-major position among the kept dims
    for d = 1, #shape do
      if not reduce[d] then key = key * shape[d] + coord[d] end
    end
    sums[key] = (sums[key] or 0) + xs[i + 1]
    counts[key] = (counts[key] or 0) + 1
  end
  local out = {}
  for key = 0, prod(out_shape) - 1 do
    if sum then out[key + 1] = sums[key] or 0
    else out[key + 1] = counts[key] and sums[key] / counts[key] or nan end
  end
  return out, out_shape
end

local function check_mean(shape, dims, keepdim, reduce_set)
  local x = tensor_of(random_list(prod(shape), #shape * 7 + 1), shape)
  local got = vol.mean(x, dims, keepdim)
  local want, want_shape = naive_mean(values(x), shape, reduce_set, keepdim)
  assert.are.same(want_shape, got.shape)
  assert_close(got, want)
end

describe("mean", function()
  local shape = {2, 3, 4, 5}

  it("averages everything when dims is nil or empty", function()
    local all = {true, true, true, true}
    check_mean(shape, nil, false, all)
    check_mean(shape, {}, false, all)
    check_mean(shape, nil, true, all)
    assert.are.same({}, vol.mean(vol.ones(shape)).shape)
    assert.are.same({1, 1, 1, 1}, vol.mean(vol.ones(shape), nil, true).shape)
    assert.are.equal(1, vol.mean(vol.ones(shape)):item())
  end)

  it("averages over one dim given as a number or a list", function()
    for d = 1, 4 do
      local set = {[d] = true}
      check_mean(shape, d, false, set)
      check_mean(shape, {d}, true, set)
    end
  end)

  it("averages over any set of dims, in any order", function()
    check_mean(shape, {2, 4}, false, {[2] = true, [4] = true})
    check_mean(shape, {4, 1}, true, {[1] = true, [4] = true})
    check_mean(shape, {1, 2, 3}, false, {[1] = true, [2] = true, [3] = true})
    check_mean(shape, {3, 1, 4}, true, {[1] = true, [3] = true, [4] = true})
    check_mean({2, 3, 2, 3, 2}, {2, 3, 4, 5}, false, {[2] = true, [3] = true, [4] = true, [5] = true})
    check_mean({3, 2, 2, 3, 2}, {1, 3, 5}, false, {[1] = true, [3] = true, [5] = true})
    check_mean({7}, 1, false, {true})
  end)

  it("counts negative dims from the end", function()
    check_mean(shape, -1, false, {[4] = true})
    check_mean(shape, {-1, 1}, true, {[1] = true, [4] = true})
    check_mean(shape, {-4, -2}, false, {[1] = true, [3] = true})
  end)

  it("is NaN over no elements, and empty where there is no output", function()
    local a = vol.mean(vol.zeros({2, 0, 3}), 2)
    assert.are.same({2, 3}, a.shape)
    for _, v in ipairs(values(a)) do assert.is_true(v ~= v) end
    assert.is_true(vol.mean(vol.zeros({0, 3})):item() ~= vol.mean(vol.zeros({0, 3})):item())
    assert.are.same({0}, vol.mean(vol.zeros({0, 3}), 2).shape)
    assert.are.same({0, 1}, vol.mean(vol.zeros({0, 3}), 2, true).shape)
  end)

  it("takes a scalar's dim as 1 or -1", function()
    local s = vol.mean(vol.full({2, 2}, 3))
    assert.are.equal(0, s:dim())
    assert.are.equal(3, vol.mean(s):item())
    assert.are.equal(3, vol.mean(s, 1):item())
    assert.are.equal(3, vol.mean(s, {-1}, true):item())
  end)
end)

describe("mean errors", function()
  local x = vol.zeros({2, 3, 4, 5})
  local function fails(f, ...)
    for _, text in ipairs({...}) do assert.error_matches(f, text, nil, true) end
  end

  it("needs a float32 tensor", function()
    fails(function() vol.mean(vol.zeros({2, 3}, {dtype = "int64"})) end,
      "mean: input dtype int64 is not supported (float32 needed)")
    fails(function() vol.mean(5) end, "mean: input must be a tensor")
  end)

  it("needs dims in range, without repeats", function()
    fails(function() vol.mean(x, 0) end, "mean: dims (0) is out of range for a 4-D input")
    fails(function() vol.mean(x, 5) end, "mean: dims (5) is out of range for a 4-D input")
    fails(function() vol.mean(x, {1, -5}) end, "mean: dims[2] (-5) is out of range")
    fails(function() vol.mean(x, {2, 2}) end, "mean: dim 2 appears more than once in dims")
    fails(function() vol.mean(x, {2, -3}) end, "mean: dim 2 appears more than once in dims")
    fails(function() vol.mean(vol.mean(x), 2) end, "mean: dims (2) is out of range for a 0-D input")
  end)

  it("needs integer dims and a boolean keepdim", function()
    fails(function() vol.mean(x, 1.5) end, "mean", "dims", "integer")
    fails(function() vol.mean(x, {1, "2"}) end, "mean", "dims[2]", "integer")
    fails(function() vol.mean(x, "1") end, "mean: dims must be a number, a list of numbers or nil")
    fails(function() vol.mean(x, 1, 1) end, "mean: keepdim must be a boolean")
  end)
end)

-- -- sum over dims (the mean's machinery without the division) ----

local function check_sum(shape, dims, keepdim, reduce_set, xs)
  local x = xs and tensor_of(xs, shape) or tensor_of(random_list(prod(shape), #shape * 5 + 3), shape)
  local got = vol.sum(x, dims, keepdim)
  local want, want_shape = naive_mean(values(x), shape, reduce_set, keepdim, true)
  assert.are.same(want_shape, got.shape)
  assert_close(got, want)
end

describe("sum", function()
  local shape = {2, 3, 4, 5}

  it("sums everything when dims is nil or empty, into a 0-D tensor (t:sum() gives a number)", function()
    local all = {true, true, true, true}
    check_sum(shape, nil, false, all)
    check_sum(shape, {}, false, all)
    check_sum(shape, nil, true, all)
    assert.are.same({}, vol.sum(vol.ones(shape)).shape)
    assert.are.same({1, 1, 1, 1}, vol.sum(vol.ones(shape), nil, true).shape)
    assert.are.equal(120, vol.sum(vol.ones(shape)):item())
  end)

  it("sums over one dim, any set of dims, negative dims", function()
    for d = 1, 4 do
      check_sum(shape, d, false, {[d] = true})
      check_sum(shape, {d}, true, {[d] = true})
    end
    check_sum(shape, {2, 4}, false, {[2] = true, [4] = true})
    check_sum(shape, {3, 1, 4}, true, {[1] = true, [3] = true, [4] = true})
    check_sum({2, 3, 2, 3, 2}, {2, 3, 4, 5}, false, {[2] = true, [3] = true, [4] = true, [5] = true})
    check_sum({3, 2, 2, 3, 2}, {1, 3, 5}, true, {[1] = true, [3] = true, [5] = true})
    check_sum(shape, {-1, 1}, true, {[1] = true, [4] = true})
    check_sum({7}, 1, false, {true})
  end)

  it("adds in double: values that cancel in float32 keep their small parts", function()
    -- 1e8 + 1 - 1e8 is 0 in float32 arithmetic and 1 in double; the naive sum is in double too
    local xs = {}
    for i = 1, 24 do xs[i] = ({1e8, 1, -1e8})[(i - 1) % 3 + 1] end
    check_sum({2, 4, 3}, 3, false, {[3] = true}, xs)
    assert.are.equal(8, vol.sum(vol.tensor(xs)):item())
  end)

  it("keeps NaN and infinities, and is 0 over no elements (a mean there is NaN)", function()
    local x = vol.tensor({{1, 0 / 0, 2}, {1, math.huge, 2}, {-math.huge, math.huge, 0}})
    local s = values(vol.sum(x, 2))
    assert.is_true(s[1] ~= s[1])
    assert.are.equal(math.huge, s[2])
    assert.is_true(s[3] ~= s[3]) -- inf - inf
    local e = vol.sum(vol.zeros({2, 0, 3}), 2)
    assert.are.same({2, 3}, e.shape)
    for _, v in ipairs(values(e)) do assert.are.equal(0, v) end
    assert.are.equal(0, vol.sum(vol.zeros({0, 3})):item())
    assert.are.same({0, 1}, vol.sum(vol.zeros({0, 3}), 2, true).shape)
  end)

  it("equals the mean times the count", function()
    local x = vol.rand({3, 4, 5, 6}, {seed = 11})
    assert_close(vol.sum(x, {2, 4}), values(vol.mean(x, {2, 4}) * 24))
  end)
end)

describe("sum errors", function()
  local x = vol.zeros({2, 3, 4, 5})
  local function fails(f, ...)
    for _, text in ipairs({...}) do assert.error_matches(f, text, nil, true) end
  end

  it("needs a float32 tensor (an int64 sum over dims is not built)", function()
    fails(function() vol.sum(vol.zeros({2, 3}, {dtype = "int64"}), 1) end,
      "sum: input dtype int64 is not supported over dims (float32 only")
    fails(function() vol.sum(5) end, "sum: input must be a tensor")
  end)

  it("needs dims in range, without repeats, integers, and a boolean keepdim", function()
    fails(function() vol.sum(x, 0) end, "sum: dims (0) is out of range for a 4-D input")
    fails(function() vol.sum(x, {1, -5}) end, "sum: dims[2] (-5) is out of range")
    fails(function() vol.sum(x, {2, -3}) end, "sum: dim 2 appears more than once in dims")
    fails(function() vol.sum(x, 1.5) end, "sum", "dims", "integer")
    fails(function() vol.sum(x, "1") end, "sum: dims must be a number, a list of numbers or nil")
    fails(function() vol.sum(x, 1, 1) end, "sum: keepdim must be a boolean")
  end)
end)
