-- spec/helpers/gpu_compare.lua: what the specs that test the GPU against the CPU share (gpu_spec,
-- avg_pool_spec): a seeded generator of their own, a one-line description of a case, NaN and inf
-- sprinkled into inputs, and comparisons and random trials against the CPU reference for a
-- target device (require "spec.helpers.gpu_compare", from the repository root).
local vol = require "volua"
local assert = require "luassert" -- (busted gives the spec files, not modules, its assert)

local M = {}
local nan, inf = 0 / 0, math.huge

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

-- Puts `count` NaN and infinite values into CPU tensor t at positions drawn from r.
function M.sprinkle(t, r, count)
  local shape = t.shape
  for _ = 1, count do
    local idx = {}
    for i, n in ipairs(shape) do idx[i] = r.int(1, n) end
    t:set(r.pick({nan, nan, -inf, inf}), unpack(idx))
  end
  return t
end

-- The checks for results on `o.target` against the CPU's: assert_close (allclose at o.rtol,
-- o.atol, NaN = NaN), assert_same (bit for bit, NaN = NaN), and random_trials, o.trials cases
-- a call, each drawn from a generator seeded from o.seed, the op's salt and the trial.
function M.new(o)
  local c = {}

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
      local case, want
      for _ = 1, 200 do
        case = gen(r)
        local ok, res = pcall(run, case, "cpu")
        if ok then want = res break end
      end
      assert(want, name .. ": the generator found no valid case in 200 draws")
      local what = ("%s trial %d (VOLUA_SEED=%d) %s"):format(name, trial, o.seed, M.show(case))
      local ok, got = pcall(run, case, o.target)
      assert.is_true(ok, what .. ": raised " .. tostring(got))
      compare(got, want, what)
    end
  end

  return c
end

return M
