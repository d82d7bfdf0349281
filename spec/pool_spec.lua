-- pool_spec.lua: vol.max_pool3d against a naive Lua max pool (values, shapes, int64 indices,
-- NaN), and every family of argument error.
local vol = require "volua"

local inf, nan = math.huge, 0 / 0

-- -- helpers ----

local function prod(t)
  local p = 1
  for _, v in ipairs(t) do p = p * v end
  return p
end

local function triple(v)
  if type(v) == "number" then return {v, v, v} end
  return v
end

-- flat values of a tensor, read back (so references see the float32-rounded inputs)
local function values(t)
  return t:reshape({-1}):table()
end

-- n pseudo-random floats in [-1, 1), reproducible
local function random_list(n, seed)
  math.randomseed(seed)
  local xs = {}
  for i = 1, n do xs[i] = math.random() * 2 - 1 end
  return xs
end

local function tensor_of(list, shape)
  return vol.tensor(list):reshape(shape)
end

local function same_number(a, b)
  if a ~= a then return b ~= b end
  return a == b
end

-- The number of windows along one dim, counted window by window: in floor mode a window must
-- end inside the padded input; in ceil mode it may hang over the end by less than a stride,
-- but must start inside the input or the left padding.
local function windows(n, k, s, p, d, ceil_mode)
  local padded, span = n + 2 * p, d * (k - 1) + 1
  local count = 0
  while true do
    local start = count * s -- in padded coordinates
    local overhang = start + span - padded
    local ok = overhang <= 0 or (ceil_mode and overhang < s and start < n + p)
    if not ok then break end
    count = count + 1
  end
  return count
end

-- Naive max pooling of a flat list holding a (planes, D, H, W) volume set. PyTorch's rule for
-- NaN: a NaN always takes over, so the last NaN of the window (in D, H, W order) is the
-- answer; otherwise the first largest value. The index starts at the window's first
-- non-negative position of each dim (which lies past the input when the window only sees
-- padding: then the output stays -inf).
local function naive_pool(xs, planes, size, a)
  local k, s, p, d = triple(a.kernel_size), triple(a.stride or a.kernel_size),
    triple(a.padding or 0), triple(a.dilation or 1)
  local out_size = {}
  for i = 1, 3 do out_size[i] = windows(size[i], k[i], s[i], p[i], d[i], a.ceil_mode) end
  local D, H, W = size[1], size[2], size[3]
  local out, idx = {}, {}
  local function first_position(o, i)
    local pos = o * s[i] - p[i]
    while pos < 0 do pos = pos + d[i] end
    return pos
  end
  for plane = 0, planes - 1 do
    for od = 0, out_size[1] - 1 do
      for oh = 0, out_size[2] - 1 do
        for ow = 0, out_size[3] - 1 do
          local best = -inf
          local best_i = first_position(od, 1) * H * W + first_position(oh, 2) * W
            + first_position(ow, 3)
          for kd = 0, k[1] - 1 do
            local z = od * s[1] - p[1] + kd * d[1]
            for kh = 0, k[2] - 1 do
              local y = oh * s[2] - p[2] + kh * d[2]
              for kw = 0, k[3] - 1 do
                local x = ow * s[3] - p[3] + kw * d[3]
                if z >= 0 and z < D and y >= 0 and y < H and x >= 0 and x < W then
                  local i = z * H * W + y * W + x
                  local v = xs[plane * D * H * W + i + 1]
                  if v ~= v then
                    best, best_i = v, i
                  elseif best == best and v > best then
                    best, best_i = v, i
                  end
                end
              end
            end
          end
          out[#out + 1] = best
          idx[#idx + 1] = best_i
        end
      end
    end
  end
  return out, idx, out_size
end

-- Runs vol.max_pool3d on a random (N, C, D, H, W) input (with `edit` applied to the list) and
-- checks shape, values and indices against the naive pool.
local function check_pool(shape, args, seed, edit)
  local xs = random_list(prod(shape), seed or 1)
  if edit then edit(xs) end
  local x = tensor_of(xs, shape)
  local opts = {}
  for key, v in pairs(args) do opts[key] = v end
  opts.return_indices = true
  local out, indices = vol.max_pool3d(x, opts)

  local planes = prod({unpack(shape, 1, #shape - 3)})
  local want, want_idx, out_size = naive_pool(values(x), planes, {unpack(shape, #shape - 2)}, args)
  local want_shape = {unpack(shape, 1, #shape - 3)}
  for i = 1, 3 do want_shape[#want_shape + 1] = out_size[i] end
  assert.are.same(want_shape, out.shape)
  assert.are.same(want_shape, indices.shape)
  assert.are.equal("float32", out.dtype)
  assert.are.equal("int64", indices.dtype)

  local got, got_idx = values(out), values(indices)
  assert.are.equal(#want, #got)
  for i = 1, #want do
    if not same_number(got[i], want[i]) then
      error(("output %d: got %s, want %s"):format(i, tostring(got[i]), tostring(want[i])))
    end
    if got_idx[i] ~= want_idx[i] then
      error(("index %d: got %s, want %s"):format(i, tostring(got_idx[i]), tostring(want_idx[i])))
    end
  end

  -- without return_indices: one result, the same values
  opts.return_indices = nil
  local out2, none = vol.max_pool3d(x, opts)
  assert.is_nil(none)
  local got2 = values(out2)
  for i = 1, #want do assert.is_true(same_number(got2[i], want[i])) end
  return out, indices
end

-- -- behaviour ----

describe("max_pool3d", function()
  it("pools 2x2x2 windows with the default stride (= kernel_size)", function()
    check_pool({2, 3, 4, 6, 5}, {kernel_size = 2})
  end)

  it("pools overlapping padded windows", function()
    check_pool({2, 2, 7, 6, 5}, {kernel_size = 3, stride = 2, padding = 1}, 2)
    check_pool({1, 2, 5, 5, 5}, {kernel_size = 3, stride = 1, padding = 1}, 3)
  end)

  it("sizes its output as PyTorch's pooling_output_shape", function()
    local x = vol.zeros({1, 1, 7, 5, 8})
    -- floor: (7 - 2) / 2 + 1 = 3; ceil adds a window that starts inside the input (at 6)
    assert.are.same({1, 1, 3, 2, 4}, vol.max_pool3d(x, {kernel_size = 2}).shape)
    assert.are.same({1, 1, 4, 3, 4}, vol.max_pool3d(x, {kernel_size = 2, ceil_mode = true}).shape)
    -- in 5, k 2, s 2, p 1: ceil would give 4 windows, but the 4th would start in the right
    -- padding (6 >= 5 + 1), so there are 3, as in floor mode
    local y = vol.zeros({1, 1, 5, 5, 5})
    assert.are.same({1, 1, 3, 3, 3},
      vol.max_pool3d(y, {kernel_size = 2, stride = 2, padding = 1, ceil_mode = true}).shape)
    assert.are.same({1, 1, 3, 3, 3},
      vol.max_pool3d(y, {kernel_size = 2, stride = 2, padding = 1}).shape)
  end)

  it("follows ceil_mode, including windows hanging over the end and the right-padding rule", function()
    check_pool({1, 2, 7, 7, 7}, {kernel_size = 2, ceil_mode = true}, 4)
    check_pool({1, 2, 5, 6, 7}, {kernel_size = 2, stride = 2, padding = 1, ceil_mode = true}, 5)
    check_pool({2, 1, 9, 8, 10}, {kernel_size = 3, stride = 3, padding = 1, ceil_mode = true}, 6)
    check_pool({1, 1, 6, 7, 8}, {kernel_size = 2, stride = 4, padding = 1, ceil_mode = true}, 7)
  end)

  it("supports dilation", function()
    check_pool({2, 2, 9, 8, 10}, {kernel_size = 3, stride = 1, padding = 1, dilation = 2}, 8)
    check_pool({1, 3, 11, 12, 13}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}, 9)
    check_pool({1, 2, 9, 9, 9}, {kernel_size = 2, stride = 2, padding = 1, dilation = 3,
                                 ceil_mode = true}, 10)
  end)

  it("takes different parameters per dimension", function()
    check_pool({2, 2, 7, 9, 11}, {kernel_size = {2, 3, 4}, stride = {1, 2, 3},
                                  padding = {1, 1, 2}, dilation = {1, 2, 1}, ceil_mode = true}, 11)
    check_pool({1, 2, 6, 10, 5}, {kernel_size = {3, 1, 2}, stride = {2, 3, 1},
                                  padding = {0, 0, 1}, dilation = {2, 1, 3}}, 12)
    check_pool({1, 1, 5, 6, 7}, {kernel_size = {1, 1, 1}, stride = {1, 2, 3}}, 13)
  end)

  it("gives int64 indices as flat offsets within each D*H*W volume", function()
    local x = tensor_of({1, 5, 2, 0, 3, 4, 9, 8}, {1, 1, 2, 2, 2})
    local out, idx = vol.max_pool3d(x, {kernel_size = 2, return_indices = true})
    assert.are.equal(9, out:item())
    assert.are.equal(6, idx:item())
    -- the second plane's index still counts from its own volume
    local y = tensor_of({1, 5, 2, 0, 3, 4, 9, 8, 7, 1, 1, 1, 1, 1, 1, 1}, {1, 2, 2, 2, 2})
    local _, idx2 = vol.max_pool3d(y, {kernel_size = 2, return_indices = true})
    assert.are.same({6, 0}, values(idx2))
  end)

  it("keeps the first of equal maxima", function()
    check_pool({1, 2, 4, 4, 4}, {kernel_size = 2, stride = 1}, 14, function(xs)
      for i = 1, #xs do xs[i] = math.floor(xs[i] * 2) end -- many ties
    end)
  end)

  it("propagates NaN: the last NaN of a window wins, as PyTorch's CPU kernel", function()
    local x = tensor_of({1, nan, 2, 7, 0, nan, 3, 4}, {1, 1, 2, 2, 2})
    local out, idx = vol.max_pool3d(x, {kernel_size = 2, return_indices = true})
    assert.is_true(out:item() ~= out:item())
    assert.are.equal(5, idx:item())
    check_pool({2, 2, 6, 6, 6}, {kernel_size = 2, stride = 1, padding = 1}, 15, function(xs)
      for i = 1, #xs, 7 do xs[i] = nan end
      for i = 3, #xs, 11 do xs[i] = inf end
    end)
  end)

  it("handles -inf inputs and windows that see only padding", function()
    check_pool({1, 1, 4, 4, 4}, {kernel_size = 2}, 16, function(xs)
      for i = 1, #xs do xs[i] = -inf end
    end)
    -- in 4, kernel 2, dilation 5, padding 1: the one window covers positions -1 and 4, both
    -- outside the input; PyTorch answers -inf with an index past the input (4 in that dim)
    local out, idx = check_pool({1, 1, 4, 3, 3}, {kernel_size = {2, 1, 1}, dilation = {5, 1, 1},
                                                  padding = {1, 0, 0}}, 17)
    assert.are.same({1, 1, 1, 3, 3}, out.shape)
    assert.are.equal(-inf, out:get(1, 1, 1, 1, 1))
    assert.are.equal(4 * 3 * 3, idx:get(1, 1, 1, 1, 1))
  end)

  it("accepts unbatched (C, D, H, W) input", function()
    local out, idx = check_pool({3, 5, 6, 7}, {kernel_size = 3, stride = 2, padding = 1}, 18)
    assert.are.equal(4, out:dim())
    -- the same as the batched op with N = 1
    local xs = random_list(3 * 5 * 6 * 7, 18)
    local b_out, b_idx = vol.max_pool3d(tensor_of(xs, {1, 3, 5, 6, 7}),
      {kernel_size = 3, stride = 2, padding = 1, return_indices = true})
    assert.are.same(values(b_out), values(out))
    assert.are.same(values(b_idx), values(idx))
  end)

  it("gives empty results for an empty batch", function()
    local out, idx = vol.max_pool3d(vol.zeros({0, 2, 4, 4, 4}), {kernel_size = 2, return_indices = true})
    assert.are.same({0, 2, 2, 2, 2}, out.shape)
    assert.are.same({0, 2, 2, 2, 2}, idx.shape)
    assert.are.equal(0, out:numel())
  end)

  it("takes a kernel as large as the padded input", function()
    check_pool({1, 2, 3, 4, 5}, {kernel_size = {3, 4, 5}}, 19)
    check_pool({1, 1, 2, 3, 4}, {kernel_size = {4, 5, 6}, padding = {1, 1, 1}}, 20)
  end)
end)

-- -- errors ----

describe("max_pool3d errors", function()
  local x = vol.zeros({1, 2, 6, 6, 6})

  local function fails(opts, ...)
    for _, text in ipairs({...}) do
      assert.error_matches(function() vol.max_pool3d(x, opts) end, text, nil, true)
    end
  end

  it("needs a kernel_size and an options table", function()
    fails({stride = 2}, "max_pool3d", "kernel_size", "required")
    assert.error_matches(function() vol.max_pool3d(x) end, "max_pool3d: options must be a table",
      nil, true)
    assert.error_matches(function() vol.max_pool3d(x, 2) end, "max_pool3d: options must be a table",
      nil, true)
    fails({kernel = 2}, "max_pool3d: unknown option 'kernel'")
  end)

  it("needs a float32 tensor of 4 or 5 dims with no empty non-batch dim", function()
    assert.error_matches(function() vol.max_pool3d({}, {kernel_size = 2}) end,
      "max_pool3d: input must be a tensor", nil, true)
    assert.error_matches(function() vol.max_pool3d(vol.zeros({6, 6, 6}), {kernel_size = 2}) end,
      "max_pool3d: input must be 5-D (N, C, D, H, W) or 4-D (C, D, H, W), got 3-D (6, 6, 6)", nil, true)
    assert.error_matches(function() vol.max_pool3d(vol.zeros({1, 1, 1, 6, 6, 6}), {kernel_size = 2}) end,
      "got 6-D", nil, true)
    assert.error_matches(function() vol.max_pool3d(vol.zeros({1, 0, 4, 4, 4}), {kernel_size = 2}) end,
      "max_pool3d: input (1, 0, 4, 4, 4) has a zero-size non-batch dimension", nil, true)
    assert.error_matches(function() vol.max_pool3d(vol.zeros({0, 4, 4, 4}), {kernel_size = 2}) end,
      "zero-size non-batch dimension", nil, true)
    assert.error_matches(function()
      vol.max_pool3d(vol.zeros({1, 1, 4, 4, 4}, {dtype = "int64"}), {kernel_size = 2})
    end, "max_pool3d: input dtype int64 is not supported (float32 needed)", nil, true)
  end)

  it("needs positive kernel_size, stride and dilation and non-negative padding", function()
    fails({kernel_size = 0}, "max_pool3d: kernel_size must be greater than zero, got (0, 0, 0)")
    fails({kernel_size = {2, -1, 2}}, "max_pool3d: kernel_size must be greater than zero, got (2, -1, 2)")
    fails({kernel_size = 2, stride = 0}, "max_pool3d: stride must be greater than zero")
    fails({kernel_size = 2, dilation = {1, 1, 0}}, "max_pool3d: dilation must be greater than zero")
    fails({kernel_size = 2, padding = -1}, "max_pool3d: padding must be non-negative, got (-1, -1, -1)")
    fails({kernel_size = 2 ^ 31}, "max_pool3d: kernel_size", "out of range")
    fails({kernel_size = 2, stride = 2 ^ 40}, "max_pool3d: stride", "out of range")
  end)

  it("reads per-dimension values as a number or {d, h, w} of integers", function()
    fails({kernel_size = 2.5}, "max_pool3d", "kernel_size", "integer")
    fails({kernel_size = {2, 2}}, "max_pool3d", "kernel_size", "3")
    fails({kernel_size = {2, 2, 0 / 0}}, "max_pool3d", "kernel_size", "integer")
    fails({kernel_size = "2"}, "max_pool3d", "kernel_size")
    fails({kernel_size = 2, ceil_mode = 1}, "max_pool3d", "ceil_mode", "boolean")
    fails({kernel_size = 2, return_indices = "yes"}, "max_pool3d", "return_indices", "boolean")
  end)

  it("limits padding to half the (effective) kernel size", function()
    fails({kernel_size = 2, stride = 2, padding = 2},
      "max_pool3d: padding (2) must be at most half of the effective kernel size (2)")
    fails({kernel_size = {3, 3, 2}, padding = {1, 1, 2}},
      "max_pool3d: padding (2) must be at most half of the effective kernel size (2) in dim W")
    -- with dilation the effective kernel allows it, but PyTorch's 3-D check uses the kernel itself
    fails({kernel_size = 2, dilation = 3, padding = 2},
      "max_pool3d: padding (2) must be at most half of the kernel size (2)")
  end)

  it("refuses an output smaller than 1", function()
    assert.error_matches(function() vol.max_pool3d(vol.zeros({1, 1, 2, 5, 5}), {kernel_size = 3}) end,
      "max_pool3d: output size is too small: input (D, H, W) = (2, 5, 5) gives (0, 1, 1)", nil, true)
    assert.error_matches(function()
      vol.max_pool3d(vol.zeros({1, 1, 4, 4, 4}), {kernel_size = 2, dilation = 4})
    end, "output size is too small", nil, true)
  end)
end)
