-- nn_spec.lua: volua.nn: constructors and their defaults and errors, PyTorch's initialisation
-- (bounds and statistics), repr, state_dict keys, load_state_dict's errors, Sequential, the
-- fused Conv3d -> GroupNorm -> Mean path against the unfused one, moving between devices.
-- VOLUA_TEST_DEVICE=cuda runs the forward passes on the GPU as well.
local vol = require "volua"
local nn = require "volua.nn"

local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"
local FP32 = {rtol = 1e-4, atol = 1e-5}

-- The error message of f(...) (which must fail), without a position prefix.
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return (tostring(e):gsub("^[^:\n]*:%d+: ", ""))
end

local function has(s, sub)
  assert.is_truthy(s:find(sub, 1, true), "expected to find [" .. sub .. "] in [" .. s .. "]")
end

local function keys_of(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

local function close(a, b, tol)
  tol = tol or FP32
  assert.same(a.shape, b.shape)
  assert.is_true(vol.allclose(a:cpu(), b:cpu(), tol),
                 "max abs diff " .. tostring(vol.max_abs_diff(a:cpu(), b:cpu())))
end

-- GroupNorm's initial weight 1 and bias 0 make a mean after it exactly 0: set them off that.
local function perturb_group_norm(gn, seed)
  gn.weight:copy(vol.rand({gn.num_channels}, {seed = seed}) + 0.5)
  gn.bias:copy(vol.rand({gn.num_channels}, {seed = seed + 1}) - 0.5)
end

describe("nn constructors", function()
  it("Conv3d has PyTorch's defaults and weight/bias shapes", function()
    local c = nn.Conv3d(3, 24, 3)
    assert.same({3, 3, 3}, c.kernel_size)
    assert.same({1, 1, 1}, c.stride)
    assert.same({0, 0, 0}, c.padding)
    assert.same({1, 1, 1}, c.dilation)
    assert.equal(1, c.groups)
    assert.equal("zeros", c.padding_mode)
    assert.same({24, 3, 3, 3, 3}, c.weight.shape)
    assert.same({24}, c.bias.shape)
    assert.equal("float32", c.weight.dtype)
  end)

  it("Conv3d takes per-dimension arguments, groups and bias=false", function()
    local c = nn.Conv3d(4, 8, {1, 2, 3}, {stride = {1, 2, 1}, padding = 1, dilation = {2, 1, 1},
                                           groups = 2, bias = false, padding_mode = "circular"})
    assert.same({8, 2, 1, 2, 3}, c.weight.shape)
    assert.is_nil(c.bias)
    assert.same({1, 1, 1}, c.padding)
    assert.same({"weight"}, keys_of(c:state_dict()))
    local s = nn.Conv3d(2, 2, 3, {padding = "same"})
    assert.equal("same", s.padding)
  end)

  it("ConvTranspose3d's weight is (in, out/groups, k...)", function()
    local c = nn.ConvTranspose3d(4, 6, {3, 2, 1}, {groups = 2, stride = 2, output_padding = 1})
    assert.same({4, 3, 3, 2, 1}, c.weight.shape)
    assert.same({6}, c.bias.shape)
    assert.same({1, 1, 1}, c.output_padding)
  end)

  it("MaxPool3d's stride defaults to kernel_size; GroupNorm starts at ones and zeros", function()
    local p = nn.MaxPool3d(3)
    assert.equal(3, p.stride)
    assert.equal(0, p.padding)
    assert.is_false(p.ceil_mode)
    local g = nn.GroupNorm(4, 12)
    assert.equal(1e-5, g.eps)
    assert.is_true(g.affine)
    assert.equal(12, g.weight:sum())
    assert.equal(1, g.weight:min())
    assert.equal(0, g.bias:abs():max())
    local na = nn.GroupNorm(2, 4, {affine = false, eps = 1e-3})
    assert.is_nil(na.weight)
    assert.same({}, keys_of(na:state_dict()))
  end)

  it("rejects bad arguments, naming the module and the argument", function()
    has(err_of(nn.Conv3d, 3, 4, 3, {groups = 2}), "Conv3d: in_channels (3) must be divisible by groups (2)")
    has(err_of(nn.Conv3d, 4, 3, 3, {groups = 2}), "Conv3d: out_channels (3) must be divisible by groups (2)")
    has(err_of(nn.Conv3d, 4, 4, 3, {groups = 0}), "Conv3d: groups must be at least 1")
    has(err_of(nn.Conv3d, 0, 4, 3), "Conv3d: in_channels must be at least 1")
    has(err_of(nn.Conv3d, 2.5, 4, 3), "Conv3d: in_channels must be an integer")
    has(err_of(nn.Conv3d, 3, 4), "Conv3d: kernel_size is required")
    has(err_of(nn.Conv3d, 3, 4, {3, 3}), "Conv3d: kernel_size must be a number or a table of 3")
    has(err_of(nn.Conv3d, 3, 4, 0), "Conv3d: kernel_size must be at least 1")
    has(err_of(nn.Conv3d, 3, 4, 3, {stride = 0}), "Conv3d: stride must be at least 1")
    has(err_of(nn.Conv3d, 3, 4, 3, {padding = -1}), "Conv3d: padding must be at least 0")
    has(err_of(nn.Conv3d, 3, 4, 3, {padding = "full"}), "Conv3d: invalid padding string 'full'")
    has(err_of(nn.Conv3d, 3, 4, 3, {padding = "same", stride = 2}),
        "padding='same' is not supported for strided convolutions")
    has(err_of(nn.Conv3d, 3, 4, 3, {padding_mode = "mirror"}), "but got padding_mode='mirror'")
    has(err_of(nn.Conv3d, 3, 4, 3, {bias = 1}), "Conv3d: bias must be true or false")
    has(err_of(nn.Conv3d, 3, 4, 3, {strides = 1}), "Conv3d: unknown option 'strides'")
    has(err_of(nn.ConvTranspose3d, 3, 4, 3, {padding_mode = "reflect"}),
        'ConvTranspose3d: only "zeros" padding mode is supported')
    has(err_of(nn.ConvTranspose3d, 3, 4, 3, {stride = 2, output_padding = 2}),
        "ConvTranspose3d: output_padding (2, 2, 2) must be smaller than either stride")
    has(err_of(nn.MaxPool3d), "MaxPool3d: kernel_size is required")
    has(err_of(nn.MaxPool3d, 2, {ceil_mode = 1}), "MaxPool3d: ceil_mode must be true or false")
    has(err_of(nn.GroupNorm, 4, 6), "GroupNorm: num_channels (6) must be divisible by num_groups (4)")
    has(err_of(nn.GroupNorm, 0, 6), "GroupNorm: num_groups must be at least 1")
    has(err_of(nn.ReLU, 1), "ReLU: inplace must be true or false")
    has(err_of(nn.Mean, {0}), "Mean: dims[1] must be a non-zero integer")
  end)
end)

describe("nn initialisation", function()
  -- uniform(-b, b): every value inside, the extremes near +-b, mean ~0, variance ~b^2/3
  local function check_uniform(t, bound)
    local n = t:numel()
    assert.is_true(t:max() <= bound and t:min() >= -bound, "values outside +-" .. bound)
    if n >= 1000 then
      assert.is_true(t:max() > 0.95 * bound and t:min() < -0.95 * bound, "extremes far from the bound")
      local mean = t:sum() / n
      -- the mean's standard deviation is b / sqrt(3n): 6 of them
      assert.is_true(math.abs(mean) < 6 * bound / math.sqrt(3 * n), "mean " .. mean)
      local var = (t * t):sum() / n
      assert.is_true(math.abs(var / (bound * bound / 3) - 1) < 0.05, "variance " .. var)
    end
  end

  it("Conv3d: kaiming_uniform(a=sqrt(5)) gives bound 1/sqrt(in/groups * prod(kernel))", function()
    local c = nn.Conv3d(16, 32, {3, 3, 2}, {seed = 11})
    local bound = 1 / math.sqrt(16 * 18)
    check_uniform(c.weight, bound)
    check_uniform(c.bias, bound)
    local g = nn.Conv3d(16, 32, 3, {groups = 4, seed = 12})
    check_uniform(g.weight, 1 / math.sqrt(4 * 27))
    assert.is_true(g.weight:max() > 0.9 * 1 / math.sqrt(4 * 27)) -- groups widen the bound
  end)

  it("ConvTranspose3d: fan_in comes from weight dim 2 (out/groups * prod(kernel))", function()
    local c = nn.ConvTranspose3d(8, 32, 3, {groups = 2, seed = 13})
    local bound = 1 / math.sqrt(16 * 27)
    check_uniform(c.weight, bound)
    check_uniform(c.bias, bound)
  end)

  it("is reproducible from opts.seed and from vol.manual_seed", function()
    local a, b = nn.Conv3d(3, 8, 3, {seed = 5}), nn.Conv3d(3, 8, 3, {seed = 5})
    assert.equal(0, vol.max_abs_diff(a.weight, b.weight))
    assert.equal(0, vol.max_abs_diff(a.bias, b.bias))
    local c = nn.Conv3d(3, 8, 3, {seed = 6})
    assert.is_true(vol.max_abs_diff(a.weight, c.weight) > 0)
    vol.manual_seed(42)
    local d = nn.Conv3d(3, 8, 3)
    vol.manual_seed(42)
    local e = nn.Conv3d(3, 8, 3)
    assert.equal(0, vol.max_abs_diff(d.weight, e.weight))
    assert.equal(0, vol.max_abs_diff(d.bias, e.bias))
    local f = nn.Conv3d(3, 8, 3) -- the generator moved on
    assert.is_true(vol.max_abs_diff(d.weight, f.weight) > 0)
  end)
end)

describe("nn repr", function()
  it("prints modules as PyTorch's repr does", function()
    assert.equal("Conv3d(3, 24, kernel_size=(3, 3, 3), stride=(1, 1, 1))", tostring(nn.Conv3d(3, 24, 3)))
    assert.equal("Conv3d(4, 8, kernel_size=(1, 2, 3), stride=(2, 2, 2), padding=(0, 1, 1), " ..
                 "dilation=(1, 2, 1), groups=2, bias=False, padding_mode=reflect)",
                 tostring(nn.Conv3d(4, 8, {1, 2, 3}, {stride = 2, padding = {0, 1, 1}, dilation = {1, 2, 1},
                                                      groups = 2, bias = false, padding_mode = "reflect"})))
    assert.equal("Conv3d(2, 2, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same)",
                 tostring(nn.Conv3d(2, 2, 3, {padding = "same"})))
    assert.equal("ConvTranspose3d(4, 8, kernel_size=(3, 3, 3), stride=(2, 2, 2), output_padding=(1, 1, 1))",
                 tostring(nn.ConvTranspose3d(4, 8, 3, {stride = 2, output_padding = 1})))
    assert.equal("MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
                 tostring(nn.MaxPool3d(2)))
    assert.equal("MaxPool3d(kernel_size=(2, 3, 4), stride=1, padding=(1, 1, 2), dilation=1, ceil_mode=True)",
                 tostring(nn.MaxPool3d({2, 3, 4}, {stride = 1, padding = {1, 1, 2}, ceil_mode = true})))
    assert.equal("GroupNorm(8, 24, eps=1e-05, affine=True)", tostring(nn.GroupNorm(8, 24)))
    assert.equal("GroupNorm(2, 4, eps=0.001, affine=False)", tostring(nn.GroupNorm(2, 4, {eps = 1e-3, affine = false})))
    assert.equal("ReLU()", tostring(nn.ReLU()))
    assert.equal("ReLU(inplace=True)", tostring(nn.ReLU(true)))
  end)

  it("indents Sequential's children, nested too", function()
    local s = nn.Sequential(nn.Conv3d(3, 24, 3), nn.Sequential(nn.GroupNorm(8, 24), nn.ReLU()))
    assert.equal(table.concat({
      "Sequential(",
      "  (0): Conv3d(3, 24, kernel_size=(3, 3, 3), stride=(1, 1, 1))",
      "  (1): Sequential(",
      "    (0): GroupNorm(8, 24, eps=1e-05, affine=True)",
      "    (1): ReLU()",
      "  )",
      ")"}, "\n"), tostring(s))
    assert.equal("Sequential()", tostring(nn.Sequential()))
    local named = nn.Sequential({{"conv", nn.Conv3d(1, 2, 1)}, {"act", nn.ReLU()}})
    has(tostring(named), "\n  (conv): Conv3d(1, 2, kernel_size=(1, 1, 1), stride=(1, 1, 1))\n  (act): ReLU()\n)")
  end)
end)

describe("nn state_dict", function()
  it("uses PyTorch's dotted key names, in order", function()
    local s = nn.Sequential(nn.Conv3d(3, 4, 1), nn.Sequential(nn.GroupNorm(2, 4), nn.ReLU(), nn.Conv3d(4, 2, 1)))
    assert.same({"0.weight", "0.bias", "1.0.weight", "1.0.bias", "1.2.weight", "1.2.bias"},
                s:state_dict_keys())
    assert.same({"0.bias", "0.weight", "1.0.bias", "1.0.weight", "1.2.bias", "1.2.weight"},
                keys_of(s:state_dict()))
    assert.equal(6, #s:parameters())
    assert.equal(s["0"].weight, s:state_dict()["0.weight"]) -- the module's own tensors
    local named = nn.Sequential({conv = nn.Conv3d(3, 24, 3), group_norm = nn.GroupNorm(8, 24)},
                                {"conv", "group_norm"})
    assert.same({"conv.weight", "conv.bias", "group_norm.weight", "group_norm.bias"}, named:state_dict_keys())
  end)

  local function model(seed)
    return nn.Sequential({{"conv", nn.Conv3d(2, 4, 2, {seed = seed})}, {"group_norm", nn.GroupNorm(2, 4)}})
  end

  it("load_state_dict copies weights across models", function()
    local a, b = model(1), model(2)
    perturb_group_norm(a.group_norm, 3)
    local res = b:load_state_dict(a:state_dict())
    assert.same({}, res.missing_keys)
    assert.same({}, res.unexpected_keys)
    for k, v in pairs(a:state_dict()) do assert.equal(0, vol.max_abs_diff(v, b:state_dict()[k])) end
    local x = vol.rand({1, 2, 4, 4, 4}, {seed = 4})
    assert.equal(0, vol.max_abs_diff(a(x), b(x)))
    -- copies, not shared tensors
    a.conv.weight:fill(0)
    assert.is_true(b.conv.weight:abs():max() > 0)
  end)

  it("reports missing, unexpected and mis-shaped keys by name, and copies nothing then", function()
    local a = model(1)
    local before = a.conv.weight:clone()
    local sd = model(2):state_dict()
    sd["conv.bias"] = nil
    sd["extra.weight"] = vol.zeros({1})
    sd["group_norm.weight"] = vol.zeros({5})
    local e = err_of(a.load_state_dict, a, sd)
    has(e, "Error(s) in loading state_dict for Sequential")
    has(e, 'Missing key(s) in state_dict: "conv.bias"')
    has(e, 'Unexpected key(s) in state_dict: "extra.weight"')
    has(e, "size mismatch for group_norm.weight: copying a param with shape (5,) from checkpoint, " ..
           "the shape in current model is (4,)")
    assert.equal(0, vol.max_abs_diff(before, a.conv.weight))
    has(err_of(a.load_state_dict, a, {["conv.weight"] = 3}), 'value for "conv.weight" must be a tensor')
    has(err_of(a.load_state_dict, a, "x"), "load_state_dict: state_dict must be a table")
  end)

  it("with strict=false loads what matches and returns the rest", function()
    local a, b = model(1), model(2)
    local sd = a:state_dict()
    local partial = {["conv.weight"] = sd["conv.weight"], ["other"] = vol.zeros({2})}
    local res = b:load_state_dict(partial, {strict = false})
    assert.same({"conv.bias", "group_norm.weight", "group_norm.bias"}, res.missing_keys)
    assert.same({"other"}, res.unexpected_keys)
    assert.equal(0, vol.max_abs_diff(a.conv.weight, b.conv.weight))
    assert.is_true(vol.max_abs_diff(a.conv.bias, b.conv.bias) > 0)
    -- a size mismatch is an error even when not strict (as PyTorch)
    has(err_of(b.load_state_dict, b, {["conv.bias"] = vol.zeros({3})}, {strict = false}),
        "size mismatch for conv.bias")
  end)

  it("round-trips through a safetensors file", function()
    local a, b = model(1), model(2)
    local path = os.tmpname()
    vol.save_safetensors(path, a:state_dict())
    b:load_state_dict(vol.load_safetensors(path))
    os.remove(path)
    assert.equal(0, vol.max_abs_diff(a.conv.weight, b.conv.weight))
  end)
end)

describe("nn forward on " .. device, function()
  it("each module computes its vol op, and m(x) is m:forward(x)", function()
    local x = vol.randn({2, 4, 6, 7, 5}, {seed = 21}):to(device)
    local c = nn.Conv3d(4, 6, {3, 2, 3}, {stride = {1, 2, 1}, padding = 1, groups = 2, seed = 22}):to(device)
    close(c(x), vol.conv3d(x, c.weight, c.bias, {stride = {1, 2, 1}, padding = 1, groups = 2}))
    assert.equal(0, vol.max_abs_diff(c(x):cpu(), c:forward(x):cpu()))
    local t = nn.ConvTranspose3d(4, 2, 2, {stride = 2, seed = 23}):to(device)
    close(t(x), vol.conv_transpose3d(x, t.weight, t.bias, {stride = 2}))
    local p = nn.MaxPool3d(2, {return_indices = true})
    local out, idx = p(x)
    local want_out, want_idx = vol.max_pool3d(x, {kernel_size = 2, return_indices = true})
    assert.equal(0, vol.max_abs_diff(out:cpu(), want_out:cpu()))
    assert.equal(0, vol.max_abs_diff(idx:cpu(), want_idx:cpu()))
    local g = nn.GroupNorm(2, 4):to(device)
    perturb_group_norm(g, 24)
    close(g(x), vol.group_norm(x, 2, g.weight, g.bias, 1e-5))
    assert.equal(0, nn.ReLU()(x):min())
    close(nn.Mean()(x), vol.mean(x, {2, 3, 4, 5}))
    close(nn.Mean({-1, 3}, true)(x), vol.mean(x, {3, 5}, true))
  end)

  it("Sequential chains its children; get/size/named access", function()
    local s = nn.Sequential({{"conv", nn.Conv3d(2, 4, 3, {seed = 31})}, {"act", nn.ReLU()},
                             {"pool", nn.MaxPool3d(2)}}):to(device)
    local x = vol.rand({1, 2, 6, 6, 6}, {seed = 32}):to(device)
    local want = vol.max_pool3d(vol.conv3d(x, s.conv.weight, s.conv.bias):relu(), {kernel_size = 2})
    close(s(x), want)
    assert.equal(3, s:size())
    assert.equal(s.conv, s:get(1))
    assert.equal(s.pool, s:get(-1))
    has(err_of(s.get, s, 4), "index 4 is out of range for 3 children")
    has(err_of(s.add_module, s, "conv", nn.ReLU()), "child name 'conv' is already taken")
    has(err_of(s.add_module, s, "forward", nn.ReLU()), "child name 'forward' is already taken")
    has(err_of(s.add_module, s, "a.b", nn.ReLU()), "without '.'")
    has(err_of(nn.Sequential, nn.ReLU(), 3), "Sequential: argument 2 must be an nn module")
    has(err_of(nn.Sequential, {a = nn.ReLU(), b = nn.ReLU()}), "named children need an order")
    has(err_of(nn.Sequential, {a = nn.ReLU()}, {"a", "b"}), "order names 'b'")
    has(err_of(nn.Sequential, {a = nn.ReLU(), b = nn.ReLU()}, {"a"}), "child 'b' is missing from the order")
    local appended = nn.Sequential():append(nn.ReLU()):append(nn.ReLU())
    assert.same({"0", "1"}, {appended:named_children()[1][1], appended:named_children()[2][1]})
  end)

  -- Conv3d -> GroupNorm -> Mean with every conv argument, against the same ops one by one
  local function l2_model(seed)
    local s = nn.Sequential({
      {"conv", nn.Conv3d(4, 6, {3, 2, 3}, {stride = {1, 2, 1}, padding = {1, 0, 1}, groups = 2,
                                            seed = seed})},
      {"group_norm", nn.GroupNorm(3, 6, {eps = 1e-3})},
      {"mean", nn.Mean()}})
    perturb_group_norm(s.group_norm, seed + 1)
    return s:to(device)
  end

  it("runs Conv3d -> GroupNorm -> Mean as the fused op, equal to the unfused ops", function()
    local s = l2_model(41)
    local x = vol.randn({3, 4, 7, 8, 6}, {seed = 42}):to(device)
    -- count the calls: the fused op once, and no conv3d
    local real_fused, real_conv = vol.conv3d_group_norm_mean, vol.conv3d
    local nfused, nconv = 0, 0
    vol.conv3d_group_norm_mean = function(...) nfused = nfused + 1; return real_fused(...) end
    vol.conv3d = function(...) nconv = nconv + 1; return real_conv(...) end
    local ok, fused = pcall(s, x)
    s.fuse = false
    local ok2, unfused = pcall(s, x)
    vol.conv3d_group_norm_mean, vol.conv3d = real_fused, real_conv
    assert.is_true(ok, tostring(fused))
    assert.is_true(ok2, tostring(unfused))
    assert.equal(1, nfused)
    assert.equal(1, nconv) -- the unfused run's
    assert.same({3}, fused.shape)
    close(fused, unfused)
    local direct = vol.mean(vol.group_norm(vol.conv3d(x, s.conv.weight, s.conv.bias, s.conv:conv_args()),
                                           3, s.group_norm.weight, s.group_norm.bias, 1e-3), {2, 3, 4, 5})
    close(fused, direct)
    assert.is_true(fused:abs():max() > 1e-3) -- not a trivially zero mean
    s.fuse = true
    assert.same({1}, s:fusions(5))
    assert.same({}, s:fusions(4))
  end)

  it("forward_mean fuses a Sequential ending in Conv3d -> GroupNorm", function()
    local full = l2_model(51)
    local s = nn.Sequential(nn.ReLU(), full.conv, full.group_norm)
    local x = vol.randn({2, 4, 6, 6, 6}, {seed = 52}):to(device)
    local fused = s:forward_mean(x)
    s.fuse = false
    local unfused = s:forward_mean(x)
    assert.same({2}, fused.shape)
    close(fused, unfused)
    close(fused, vol.mean(s(x), {2, 3, 4, 5}))
    -- not fused (Mean keeps dims), still right
    local keep = nn.Sequential(full.conv, full.group_norm, nn.Mean(nil, true))
    close(keep(x), vol.mean(full.group_norm(full.conv(x)), {2, 3, 4, 5}, true))
  end)
end)

describe("nn devices", function()
  it("cpu() and to('cpu') keep the module and return it", function()
    local c = nn.Conv3d(2, 2, 1)
    assert.equal(c, c:cpu())
    assert.equal(c, c:to("cpu"))
    assert.equal("cpu", c.weight.device)
    assert.equal("cpu", c:device())
  end)

  it("cuda() moves every parameter, or says why it cannot", function()
    local s = nn.Sequential(nn.Conv3d(2, 4, 3, {seed = 61}), nn.GroupNorm(2, 4), nn.Mean())
    perturb_group_norm(s:get(2), 62)
    local x = vol.rand({2, 2, 5, 5, 5}, {seed = 63})
    local want = s(x)
    if vol.cuda_available() then
      s:cuda()
      for _, p in ipairs(s:parameters()) do assert.equal("cuda", p.device) end
      local got = s(x:cuda())
      assert.equal("cuda", got.device)
      close(got, want)
      s:cpu()
      for _, p in ipairs(s:parameters()) do assert.equal("cpu", p.device) end
    else
      has(err_of(s.cuda, s), "cuda")
    end
  end)
end)

describe("nn help", function()
  it("registers the classes' documentation when volua.help is there", function()
    local ok, help = pcall(require, "volua.help")
    if not ok then return pending("no volua.help") end
    has(help.text(nn.Conv3d), "nn.Conv3d(in_channels, out_channels, kernel_size")
    has(help.text(nn.Sequential(nn.ReLU())), "nn.Sequential(")
  end)
end)

describe("nn.class", function()
  it("makes modules of your own that fit in a Sequential", function()
    local Scale = nn.class("Scale")
    function Scale.new(s)
      local self = nn.instance(Scale)
      self.weight = vol.full({1}, s)
      self._param_names = {"weight"}
      return self
    end
    function Scale:forward(x) return x * self.weight:item() end
    function Scale:extra_repr() return tostring(self.weight:item()) end
    local s = nn.Sequential(nn.ReLU(), Scale.new(3))
    assert.equal("Sequential(\n  (0): ReLU()\n  (1): Scale(3)\n)", tostring(s))
    assert.same({"1.weight"}, s:state_dict_keys())
    local x = vol.tensor({-1, 2})
    assert.same({0, 6}, s(x):table())
  end)
end)
