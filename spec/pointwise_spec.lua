-- pointwise_spec.lua: vol.pointwise (a chain of elementwise steps in one pass), the convolutions'
-- `epilogue` option and nn.Sequential's fusion of pointwise modules after a convolution.
--  1. On VOLUA_TEST_DEVICE (cpu by default): a chain gives exactly (bit for bit, NaN = NaN) what the
--     ops give one by one, on random chains of every step kind over data with NaN, infinities and
--     zeros; the convolutions' epilogue gives exactly the convolution followed by the ops; errors.
--  2. GPU against itself and the CPU on the shapes that take the tensor-core kernels (whose stores
--     apply the chain's first cheap steps: tc_core.cuh, tc_epi_apply), in both maths, with
--     infinities in "fp32" (the gated redo, then the steps again): the fused output equals the
--     unfused one on the GPU exactly, and the CPU's within the convolution's tolerance. Pending
--     without a GPU; VOLUA_PW_SPEC_DEVICE=cpu runs its generators against the CPU (a self-test).
--     VOLUA_SEED=n reproduces a run. Run under VOLUA_POISON=1 (gpu_check.sh does).
local vol = require "volua"
local nn = require "volua.nn"
local G = require "spec.helpers.gpu_compare"

local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"
local nan, inf = 0 / 0, math.huge

-- -- the ops one by one: the reference a chain must equal ----

local function apply_step(t, st)
  if type(st) == "string" then st = {st} end
  local name, a, b = st[1], st[2], st[3]
  if name == "neg" then return -t end
  if name == "abs" then return t:abs() end
  if name == "relu" then return t:relu() end
  if name == "gelu" then return vol.gelu(t, a) end
  if name == "softplus" then return vol.softplus(t, a, b) end
  if name == "elu" then return vol.elu(t, a) end
  if name == "leaky_relu" then return vol.leaky_relu(t, a) end
  if name == "hardtanh" then return vol.hardtanh(t, a, b) end
  if name == "clamp" then return vol.clamp(t, a, b) end
  if name == "add" then return t + a end
  if name == "sub" then return t - a end
  if name == "mul" then return t * a end
  if name == "div" then return t / a end
  if name == "maximum" then return vol.maximum(t, a) end
  if name == "minimum" then return vol.minimum(t, a) end
  if name == "rsub" then return a - t end
  if name == "rdiv" then return a / t end
  return vol[name](t) -- tanh, sigmoid, exp, log, sqrt, silu, mish, hardswish, hardsigmoid
end

local function one_by_one(t, steps)
  for _, st in ipairs(steps) do t = apply_step(t, st) end
  return t
end

local function assert_same(got, want, what)
  assert.same(want.shape, got.shape, what .. ": shape")
  assert.equal(want.device, got.device, what .. ": device")
  local d = vol.max_abs_diff(got, want)
  assert.is_true(d == 0, ("%s: differs, max_abs_diff %s"):format(what, tostring(d)))
end

-- -- random chains ----

local UNARY = {"neg", "abs", "relu", "tanh", "sigmoid", "exp", "log", "sqrt", "silu", "mish", "hardswish",
               "hardsigmoid"}
local CHEAP = {"neg", "abs", "relu"}
local BINARY = {"add", "sub", "mul", "div", "maximum", "minimum"}
local NUMBERS = {0.5, 2, -3, 0.1, 1e-3, 7.25, -0.0, 0, 1 / 3}

-- A step drawn from r; per_channel(r): a (C, 1, 1, 1)-like operand for the tensor, or nil where
-- none fits; cheap: only the steps a convolution's stores take.
local function random_step(r, per_channel, cheap)
  local k = r.int(1, cheap and 6 or 10)
  if k == 1 then return r.pick(cheap and CHEAP or UNARY) end
  if k == 2 then return {"clamp", r.chance(0.3) and nil or r.pick({-1, -0.25, 0}), r.chance(0.3) and nil or r.pick({0.5, 1, 3})} end
  if k == 3 then return {"leaky_relu", r.pick({0.01, 0.2, -0.5})} end
  if k == 4 then return {"hardtanh", r.pick({-1, -2}), r.pick({1, 0.5})} end
  if k == 5 or k == 6 then
    local op = r.pick(BINARY)
    local v = per_channel and r.chance(0.5) and per_channel(r)
    if v then return {op, v} end
    if r.chance(0.15) then return {r.pick({"rsub", "rdiv"}), r.pick(NUMBERS)} end
    return {op, r.pick(NUMBERS)}
  end
  if k == 7 then return {"gelu", r.pick({"none", "tanh"})} end
  if k == 8 then return {"softplus", r.pick({1, 2, 0.5}), r.pick({20, 1})} end
  if k == 9 then return {"elu", r.pick({1, 0.5})} end
  return r.pick(UNARY)
end

local function random_chain(r, per_channel, cheap, nmax)
  local steps = {}
  for i = 1, r.int(1, nmax or 5) do steps[i] = random_step(r, per_channel, cheap) end
  return steps
end

-- One value per channel of dim 2 of a tensor of `shape` (N, C, ...), in one of the shapes that
-- broadcast along it, on dev.
local function channel_operand(r, shape, dev)
  local C = shape[2]
  local forms = {{C, 1, 1, 1}, {1, C, 1, 1, 1}, {1}}
  local s = r.pick(forms)
  if #s == 4 and #shape ~= 5 then s = {1} end
  local n = 1
  for _, v in ipairs(s) do n = n * v end
  return vol.randn(s, {seed = r.seed()}):to(dev)
end

local function describe_chain(steps) return G.show(steps) end

local seed = G.seed("pointwise_spec", device)

describe("vol.pointwise on " .. device, function()
  it("gives what the ops give one by one, bit for bit, on random chains", function()
    for trial = 1, 40 do
      local r = G.generator(seed + trial)
      local shape = {r.int(1, 3), r.int(1, 5), r.int(1, 6), r.int(1, 7), r.int(1, 9)}
      local x = G.sprinkle(G.data(shape, r.seed(), r.pick({0, 0, 3})), r, r.int(0, 6), {nan, inf, -inf, 0, -0.0, 1e-40})
      x = x:to(device)
      local steps = random_chain(r, function(rr) return channel_operand(rr, shape, device) end, false, 8)
      local what = ("trial %d (VOLUA_SEED=%d) %s on %s"):format(trial, seed, describe_chain(steps), G.show(shape))
      assert_same(vol.pointwise(x, steps), one_by_one(x, steps), what)
    end
  end)

  it("keeps shapes of any rank, empty tensors and a chain of no steps", function()
    local x = vol.randn({7}, {seed = 1}):to(device)
    assert_same(vol.pointwise(x, {"tanh", {"mul", 3}}), vol.tanh(x) * 3, "1-D")
    local e = vol.zeros({0, 3, 2}):to(device)
    assert.same({0, 3, 2}, vol.pointwise(e, {"relu", {"add", vol.ones({3, 1}):to(device)}}).shape)
    local y = vol.pointwise(x, {})
    assert_same(y, x, "no steps")
    y:fill(5) -- a new tensor, not x
    assert.is_true(x:max() < 5)
  end)

  it("settles clamp as torch does: a NaN bound with both given fills NaN, a single NaN bound is none", function()
    local x = vol.tensor({-2, -0.5, 0, 0.5, 2, nan}):to(device)
    assert_same(vol.pointwise(x, {{"clamp", nan, 1}}), vol.clamp(x, nan, 1), "NaN min")
    assert_same(vol.pointwise(x, {{"clamp", nil, nan}}), vol.clamp(x, nil, nan), "NaN max alone")
    assert_same(vol.pointwise(x, {{"clamp", 1, -1}}), vol.clamp(x, 1, -1), "min > max")
    assert_same(vol.pointwise(x, {{"div", 4}, {"div", 3}}), x / 4 / 3, "div by 2^k and by 3")
  end)

  it("refuses what it cannot do, naming the step", function()
    local x = vol.randn({2, 3, 4}):to(device)
    local function refuses(steps, msg, t)
      local ok, err = pcall(vol.pointwise, t or x, steps)
      assert.is_false(ok)
      assert.truthy(tostring(err):find(msg, 1, true), tostring(err) .. " lacks " .. msg)
    end
    refuses({"nope"}, "pointwise: step 1: unknown op 'nope'")
    refuses({"relu", {"add"}}, "pointwise: step 2 (add): the operand must be a number or a tensor")
    refuses({{"mul", 2, 3}}, "pointwise: step 1 (mul) takes at most 1 argument")
    refuses({{"clamp"}}, "pointwise: step 1 (clamp): at least one of min and max must be given")
    refuses({{"clamp", "a"}}, "pointwise: step 1 (clamp): min must be a number, got string")
    refuses({{"gelu", "fast"}}, "approximate must be \"none\" or \"tanh\"")
    refuses({{"rdiv", vol.ones({1}):to(device)}}, "pointwise: step 1 (rdiv): the operand must be a number, got tensor")
    refuses({{"add", vol.ones({3, 4}):to(device)}}, "varies along more than one dim")
    refuses({{"add", vol.ones({5, 1}):to(device)}}, "does not broadcast to (2, 3, 4)")
    refuses({{"add", vol.ones({1, 1, 1, 1}):to(device)}}, "has more dims than the tensor")
    refuses({{"add", vol.ones({3, 1}, {dtype = "int64"}):to(device)}}, "dtype int64 is not supported")
    refuses({"relu", "relu", "relu", "relu", "relu", "relu", "relu", "relu", "relu"}, "at most 8 steps")
    refuses(7, "pointwise: steps must be a list of steps")
    refuses({"relu"}, "pointwise: input dtype int64 is not supported", vol.ones({2}, {dtype = "int64"}):to(device))
    if device ~= "cpu" then refuses({{"add", vol.ones({3, 1})}}, "is on cpu but the input is on " .. device) end
  end)
end)

describe("the convolutions' epilogue on " .. device, function()
  it("equals the convolution followed by the ops, bit for bit", function()
    for trial = 1, 16 do
      local r = G.generator(seed * 3 + trial)
      local groups = r.pick({1, 1, 2})
      local C_in, C_out = groups * r.int(1, 3), groups * r.int(1, 4)
      local k = r.int(1, 3)
      local shape = {r.int(1, 2), C_in, r.int(k, 5), r.int(k, 6), r.int(k, 7)}
      local x = G.sprinkle(G.data(shape, r.seed()), r, r.int(0, 2), {nan, inf, -inf}):to(device)
      local transposed = r.chance(0.5)
      local w = transposed and vol.randn({C_in, C_out / groups, k, k, k}, {seed = r.seed()}):to(device) or
        vol.randn({C_out, C_in / groups, k, k, k}, {seed = r.seed()}):to(device)
      local b = r.chance(0.6) and vol.randn({C_out}, {seed = r.seed()}):to(device) or nil
      local opts = {groups = groups, stride = r.int(1, 2), padding = k > 1 and r.int(0, 1) or 0}
      local f = transposed and vol.conv_transpose3d or vol.conv3d
      local plain = f(x, w, b, opts)
      local steps = random_chain(r, function(rr) return channel_operand(rr, plain.shape, device) end, false, 6)
      opts.epilogue = steps
      local what = ("trial %d (VOLUA_SEED=%d) %s %s"):format(trial, seed, transposed and "conv_transpose3d" or "conv3d", describe_chain(steps))
      assert_same(f(x, w, b, opts), one_by_one(plain, steps), what)
    end
  end)

  it("takes an unbatched input, whose channels are dim 1", function()
    local x = vol.randn({2, 5, 5, 5}, {seed = 4}):to(device)
    local w = vol.randn({3, 2, 3, 3, 3}, {seed = 5}):to(device)
    local s = vol.randn({3, 1, 1, 1}, {seed = 6}):to(device)
    local y = vol.conv3d(x, w, nil, {padding = 1, epilogue = {{"mul", s}, "relu"}})
    assert_same(y, (vol.conv3d(x, w, nil, {padding = 1}) * s):relu(), "unbatched")
  end)

  it("checks the steps against the output before running", function()
    local x = vol.randn({1, 2, 4, 4, 4}):to(device)
    local w = vol.randn({3, 2, 3, 3, 3}):to(device)
    local ok, err = pcall(vol.conv3d, x, w, nil, {epilogue = {{"add", vol.ones({2, 1, 1, 1}):to(device)}}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("conv3d: epilogue: step 1 (add) operand of shape (2, 1, 1, 1) does not broadcast to (1, 3, 2, 2, 2)", 1, true), tostring(err))
    ok, err = pcall(vol.conv_transpose3d, x, vol.randn({2, 3, 2, 2, 2}):to(device), nil, {epilogue = "relu"})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("conv_transpose3d: epilogue: steps must be a list of steps", 1, true), tostring(err))
  end)
end)

describe("nn.Sequential on " .. device, function()
  it("runs pointwise modules after a convolution as its epilogue, with the same numbers", function()
    local m = nn.Sequential(nn.Conv3d(3, 4, 3, {padding = 1, seed = 1}), nn.LeakyReLU(0.2), nn.Hardtanh(-0.5, 0.5),
                            nn.GELU("tanh"), nn.MaxPool3d(2), nn.ConvTranspose3d(4, 2, 2, {stride = 2, seed = 2}),
                            nn.ReLU(), nn.Softplus(2, 1), nn.Mish(), nn.Tanh(), nn.Sigmoid(), nn.SiLU(),
                            nn.ELU(0.5), nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU(), nn.Tanh())
    m:to(device)
    local x = vol.randn({2, 3, 8, 8, 8}, {seed = 3}):to(device)
    local y = m:forward(x)
    m.fuse = false
    assert_same(y, m:forward(x), "fused against one by one")
    assert.equal("relu", nn.ReLU():pointwise_step())
    assert.same({"leaky_relu", 0.2}, nn.LeakyReLU(0.2):pointwise_step())
  end)
end)

-- -- 2. the GPU's fused epilogue against itself unfused and against the CPU ----

local target, why = G.target("VOLUA_PW_SPEC_DEVICE")
local gseed = G.seed("pointwise_spec (GPU section)", target)

-- Shapes that take the tensor-core paths (conv3d's plain store, the transposed convolution's
-- every-phase GEMM, its phase-by-phase launches and W pairs, groups), the channels-last path and
-- the W-interleaved kernel (which leave the steps to the pass), small enough for the CPU.
local CASES = {
  {"conv3d 8->32 k3", false, {2, 8, 6, 12, 16}, {32, 8, 3, 3, 3}, {padding = 1}},
  {"conv3d 3->16 k3 s2", false, {2, 3, 9, 10, 12}, {16, 3, 3, 3, 3}, {stride = 2}},
  {"conv3d groups 2", false, {1, 16, 5, 9, 9}, {32, 8, 3, 3, 3}, {groups = 2, padding = 1}},
  {"conv3d 64->128 (channels-last)", false, {1, 64, 4, 6, 8}, {128, 64, 3, 3, 3}, {padding = 1}},
  {"conv3d 3->64 k(3,5,7) (W-interleaved)", false, {1, 3, 6, 12, 16}, {64, 3, 3, 5, 7}, {}},
  {"conv3d 1x1x1 16->32", false, {2, 16, 4, 5, 6}, {32, 16, 1, 1, 1}, {}},
  {"conv_transpose3d 64->128 k3 s2 p1 (L2-100's)", true, {1, 64, 3, 4, 5}, {64, 128, 3, 3, 3}, {stride = 2, padding = 1}},
  {"conv_transpose3d 32->64 k3 s2 p1 op1", true, {2, 32, 4, 5, 6}, {32, 64, 3, 3, 3}, {stride = 2, padding = 1, output_padding = 1}},
  {"conv_transpose3d 16->8 k4 s2 p1", true, {1, 16, 4, 6, 8}, {16, 8, 4, 4, 4}, {stride = 2, padding = 1}},
  {"conv_transpose3d 8->16 k3", true, {2, 8, 4, 5, 6}, {8, 16, 3, 3, 3}, {padding = 1}},
  {"conv_transpose3d groups 2 k2 s2", true, {1, 16, 3, 4, 5}, {16, 8, 2, 2, 2}, {stride = 2, groups = 2}},
  {"conv_transpose3d 32->64 k3 s2 p1 d2 (dead outputs)", true, {1, 32, 3, 4, 5}, {32, 64, 3, 3, 3}, {stride = 2, padding = 1, dilation = 2}},
}

describe("the fused epilogue on the GPU (" .. target .. ")", function()
  if why then
    pending(why)
    return
  end
  for ci, case in ipairs(CASES) do
    it("equals the unfused output on the GPU and the CPU's: " .. case[1], function()
      for _, math_mode in ipairs({"tf32", "fp32"}) do
        vol.set_math(math_mode)
        for trial = 1, 3 do
          local r = G.generator(gseed * 11 + ci * 101 + trial)
          local name, transposed, xs, ws, opts = case[1], case[2], case[3], case[4], {}
          for k, v in pairs(case[5]) do opts[k] = v end
          local x = G.data(xs, r.seed())
          if math_mode == "fp32" and trial == 3 then G.sprinkle(x, r, 2, {inf, -inf, nan}) end -- the redo
          local w = vol.randn(ws, {seed = r.seed()}) * (1 / math.sqrt(ws[2] * ws[3] * ws[4] * ws[5]))
          local C_out = transposed and ws[2] * (opts.groups or 1) or ws[1]
          local b = r.chance(0.7) and vol.randn({C_out}, {seed = r.seed()}) or nil
          local f = transposed and vol.conv_transpose3d or vol.conv3d
          local plain_cpu = f(x, w, b, opts) -- (its shape, for the per-channel operands)
          local steps_cpu, steps_gpu = {}, {}
          local cheap = trial ~= 2 -- trial 2: steps the stores leave to the pass
          for i, st in ipairs(random_chain(r, function(rr) return channel_operand(rr, plain_cpu.shape, "cpu") end, cheap, 4)) do
            steps_cpu[i] = st
            if type(st) == "table" and type(st[2]) == "userdata" then
              steps_gpu[i] = {st[1], st[2]:to(target)}
            else
              steps_gpu[i] = st
            end
          end
          local xg, wg, bg = x:to(target), w:to(target), b and b:to(target)
          local what = ("%s, %s, trial %d (VOLUA_SEED=%d) %s"):format(name, math_mode, trial, gseed, describe_chain(steps_cpu))
          local og = {}
          for k, v in pairs(opts) do og[k] = v end
          og.epilogue = steps_gpu
          local fused = f(xg, wg, bg, og)
          local unfused = one_by_one(f(xg, wg, bg, opts), steps_gpu)
          assert.equal(target, fused.device, what)
          assert_same(fused:cpu(), unfused:cpu(), what .. ": fused against unfused")
          -- against the CPU's steps on the GPU's convolution (the convolutions themselves are
          -- conv_spec's and fast_spec's): the cheap steps but leaky_relu compute the same float on
          -- both (float arithmetic, or double rounded once; clamp's bounds rounded to float change
          -- no result), so a chain of them matches exactly; leaky_relu (x * slope in float on the
          -- GPU, in double on the CPU) and the transcendental ones are within a few ulp
          -- (activation_spec), which the later steps (scales up to 1000, differences) carry to at
          -- most about 1e-4 absolute here
          local want = vol.pointwise(f(xg, wg, bg, opts):cpu(), steps_cpu)
          local exact = cheap
          for _, st in ipairs(steps_cpu) do
            if type(st) == "table" and st[1] == "leaky_relu" then exact = false end
          end
          if exact then
            assert_same(fused:cpu(), want, what .. ": against the CPU's steps")
          else
            local ok = vol.allclose(fused:cpu(), want, {rtol = 1e-4, atol = 1e-4, equal_nan = true})
            assert.is_true(ok, what .. ": not close to the CPU's steps, max_abs_diff " .. tostring(vol.max_abs_diff(fused:cpu(), want)))
          end
        end
      end
      vol.set_math("fp32")
    end)
  end
end)
