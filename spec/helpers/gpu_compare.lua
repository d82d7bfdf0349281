-- spec/helpers/gpu_compare.lua: what the specs that test the GPU against the CPU share (gpu_spec,
-- avg_pool_spec, softmax_spec, norms_spec, activation_spec, fast_spec): the device a section runs
-- on and its seed, a seeded generator of their own, a one-line description of a case, random data
-- with NaN and inf sprinkled in, comparisons and random trials against the CPU reference for a
-- target device (require "spec.helpers.gpu_compare", from the repository root).
local vol = require "volua"
local assert = require "luassert" -- (busted gives the spec files, not modules, its assert)

local M = {}
local nan, inf = 0 / 0, math.huge

-- -- the run: device and seed ----

-- The device a GPU-against-CPU section runs on: the environment variable `device_var` ("cpu" there
-- runs the section's generators against the CPU itself, a self-test), else "cuda". Where that is
-- the GPU and there is none, a second value: the reason, for the section's pending test (busted's
-- describe and pending reach the spec files, not modules, so the spec writes that test).
function M.target(device_var)
  local target = os.getenv(device_var) or "cuda"
  if target == "cuda" and not vol.cuda_available() then
    local _, reason = vol.cuda_info()
    return target, "no GPU: " .. tostring(reason)
  end
  return target
end

-- The run's seed: VOLUA_SEED, else one from the clock; printed as "# <spec>: seed n (VOLUA_SEED=n
-- reproduces this run), device <target>".
function M.seed(spec, target)
  local seed = tonumber(os.getenv("VOLUA_SEED")) or (os.time() * 1000 + math.floor(os.clock() * 1000)) % 2147483629
  print(("# %s: seed %d (VOLUA_SEED=%d reproduces this run), device %s"):format(spec, seed, seed, target))
  return seed
end

-- Why the > 2^31-element cases do not run on `target`, or nil where they do (VOLUA_TEST_LARGE=1 on a GPU).
function M.large_pending(target)
  if target ~= "cuda" or not vol.cuda_available() or os.getenv("VOLUA_TEST_LARGE") ~= "1" then
    return "set VOLUA_TEST_LARGE=1 on a GPU with 40 GB or more to run them"
  end
end

-- Collects twice: the first pass runs the tensors' finalizers, the second frees what they held.
function M.full_gc()
  collectgarbage("collect")
  collectgarbage("collect")
end

-- -- cases ----

-- A small generator of our own (Park-Miller, exact in doubles), so that busted's use of
-- math.random cannot change the cases a seed gives.
function M.generator(seed)
  local s = seed % 2147483646 + 1
  local r = {}
  local function next_value()
    s = (s * 48271) % 2147483647
    return s
  end
  function r.int(lo, hi) return lo + next_value() % (hi - lo + 1) end
  function r.chance(p) return next_value() / 2147483647 < p end
  function r.pick(t) return t[r.int(1, #t)] end
  function r.seed() return r.int(1, 2 ^ 30) end
  return r
end

-- One line describing a value (for failure messages: the case must be readable and re-creatable).
function M.show(v)
  if type(v) == "userdata" then return "tensor" .. M.show(v.shape) end
  if type(v) == "table" then
    local parts, keys = {}, {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do
      parts[#parts + 1] = (type(k) == "number" and "" or (tostring(k) .. "=")) .. M.show(v[k])
    end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

-- A CPU tensor of a shape with normal values from `seed`, plus `offset` (means far off zero).
function M.data(shape, seed, offset)
  local t = vol.randn(shape, {seed = seed})
  if offset and offset ~= 0 then t = t + offset end
  return t
end

-- Puts `count` values into CPU tensor t at positions drawn from r, each drawn from `values`
-- (NaN, NaN, -inf, inf unless given: a NaN as likely as an infinity).
function M.sprinkle(t, r, count, values)
  values = values or {nan, nan, -inf, inf}
  local shape = t.shape
  for _ = 1, count do
    local idx = {}
    for i, n in ipairs(shape) do idx[i] = r.int(1, n) end
    t:set(r.pick(values), unpack(idx))
  end
  return t
end

-- -- checks ----

-- The checks for results on `o.target` against the CPU's: assert_close (allclose at o.rtol,
-- o.atol, NaN = NaN), assert_same (bit for bit, NaN = NaN), and random_trials, o.trials cases
-- a call, each drawn from a generator seeded from o.seed, the op's salt and the trial. o.draws
-- (default 200) bounds the draws a trial may take to find a case the CPU accepts; 1 where the
-- generator must only draw valid cases, so that the CPU refusing one fails.
function M.new(o)
  local c = {}
  local draws = o.draws or 200

  function c.assert_close(got, want, what)
    assert.equal(o.target, got.device, what .. ": result on the wrong device")
    local g = got:cpu()
    assert.same(want.shape, g.shape, what .. ": shape")
    assert.equal(want.dtype, g.dtype, what .. ": dtype")
    local ok = vol.allclose(g, want, {rtol = o.rtol, atol = o.atol, equal_nan = true})
    assert.is_true(ok, ("%s: not close to the CPU, max_abs_diff %s"):format(what, tostring(vol.max_abs_diff(g, want))))
  end

  function c.assert_same(got, want, what)
    assert.equal(o.target, got.device, what .. ": result on the wrong device")
    local g = got:cpu()
    assert.same(want.shape, g.shape, what .. ": shape")
    assert.equal(want.dtype, g.dtype, what .. ": dtype")
    local d = vol.max_abs_diff(g, want)
    assert.is_true(d == 0, ("%s: differs from the CPU, max_abs_diff %s"):format(what, tostring(d)))
  end

  -- Draws a case with gen(r) until the CPU accepts it (the CPU's checks are PyTorch's), then runs
  -- compare(target results, cpu results, what). Every trial has its own seed so that a failure
  -- names its reproduction.
  function c.random_trials(name, salt, gen, run, compare)
    for trial = 1, o.trials do
      local r = M.generator(o.seed * 7919 + salt * 1000003 + trial)
      local case, want, refusal
      for _ = 1, draws do
        case = gen(r)
        local ok, res = pcall(run, case, "cpu")
        if ok then want = res break end
        refusal = res
      end
      assert(want, ("%s trial %d (VOLUA_SEED=%d): the generator found no valid case in %d draws; the CPU said %s")
                   :format(name, trial, o.seed, draws, tostring(refusal)))
      local what = ("%s trial %d (VOLUA_SEED=%d) %s"):format(name, trial, o.seed, M.show(case))
      local ok, got = pcall(run, case, o.target)
      assert.is_true(ok, what .. ": raised " .. tostring(got))
      compare(got, want, what)
    end
  end

  return c
end

return M
