-- golden_spec.lua: every PyTorch reference case of ../shared/golden (or $VOLUA_GOLDEN), on the
-- CPU, and on the GPU when VOLUA_TEST_DEVICE=cuda. Math mode from VOLUA_TEST_MATH (fp32 default).
local vol = require "volua"

local dir = os.getenv("VOLUA_GOLDEN") or "../shared/golden"
local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"
local math_mode = os.getenv("VOLUA_TEST_MATH") or "fp32"
local tol = ({fp32 = {rtol = 1e-4, atol = 1e-5}, tf32 = {rtol = 1e-2, atol = 1e-2}})[math_mode]

local function load_cases()
  local chunk = assert(loadfile(dir .. "/cases.lua"))
  return chunk()
end

local function input(case, name)
  local path = case.inputs[name]
  if not path then return nil end
  return vol.load(dir .. "/" .. path):to(device)
end

-- Runs one case's op through the public API, exactly as the golden README says.
local function run(case)
  local a, op = case.args, case.op
  local x = input(case, "x")
  if op == "max_pool3d" then
    return {vol.max_pool3d(x, a)}
  elseif op == "conv3d" then
    return {vol.conv3d(x, input(case, "weight"), input(case, "bias"), a)}
  elseif op == "conv_transpose3d" then
    return {vol.conv_transpose3d(x, input(case, "weight"), input(case, "bias"), a)}
  elseif op == "group_norm" then
    return {vol.group_norm(x, a.num_groups, input(case, "weight"), input(case, "bias"), a.eps)}
  elseif op == "mean" then
    local dims = {}
    for i, d in ipairs(a.dim) do dims[i] = d + 1 end
    return {vol.mean(x, dims, a.keepdim)}
  elseif op == "conv3d_group_norm_mean" then
    local w = vol.load_safetensors(dir .. "/" .. a.weights)
    for name, t in pairs(w) do w[name] = t:to(device) end
    -- the .npy copies of the weights must agree with the safetensors file
    for _, name in ipairs({"conv.weight", "conv.bias", "group_norm.weight", "group_norm.bias"}) do
      assert.equal(0, vol.max_abs_diff(w[name], input(case, name)))
    end
    return {vol.conv3d_group_norm_mean(x, w["conv.weight"], w["conv.bias"], a.num_groups,
      w["group_norm.weight"], w["group_norm.bias"], {eps = a.eps})}
  end
  error("golden: unknown op " .. tostring(op))
end

describe("golden cases on " .. device .. " (math " .. math_mode .. ")", function()
  setup(function() vol.set_math(math_mode) end)
  teardown(function() vol.set_math("fp32") end)

  for _, case in ipairs(load_cases()) do
    it(case.name .. " (" .. case.op .. ")", function()
      if case.expect_error then
        local ok, err = pcall(run, case)
        assert.is_false(ok, "expected an error: " .. case.expect_error)
        local msg = tostring(err):gsub("^.-:%d+: ", "")
        assert.matches("^" .. case.op .. ": ", msg)
        -- the gist's first word (the parameter it is about) must be named
        local key = case.expect_error:match("^(%w+)")
        assert.matches(key, msg, 1, true)
        return
      end
      local got = run(case)
      local names = {"out", "indices"}
      for i, name in ipairs(names) do
        local want_path = case.outputs[name]
        if want_path then
          local want = vol.load(dir .. "/" .. want_path)
          local g = assert(got[i], case.name .. ": no " .. name .. " returned")
          assert.equal(device, g.device)
          g = g:cpu()
          assert.same(want.shape, g.shape)
          if name == "indices" then
            assert.equal("int64", g.dtype)
            assert.equal(0, vol.max_abs_diff(g, want))
          else
            local ok = vol.allclose(g, want, {rtol = tol.rtol, atol = tol.atol, equal_nan = true})
            assert.is_true(ok, string.format("%s: max abs diff %g", case.name, vol.max_abs_diff(g, want)))
          end
        end
      end
    end)
  end
end)
