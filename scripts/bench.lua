-- scripts/bench.lua DIR [REPS [WARMUP [OUT [ONLY]]]]: volua's side of bench/run.sh. Loads the
-- problems that bench/bench.py wrote to DIR (DIR/problems.lua, .npy inputs and float64 references),
-- times each in math "fp32" and "tf32" with vol.bench (CUDA events on volua's stream, a 256 MB L2
-- flush before each call, the median of REPS >= 30 calls after WARMUP calls), checks the result
-- against the reference and writes OUT (DIR/volua.json). ONLY: a comma list of problems to run.
-- Run: build/bin/volua scripts/bench.lua /tmp/volua_bench
local vol = require "volua"

local dir = arg and arg[1]
if not dir then error("usage: volua scripts/bench.lua DIR [REPS [WARMUP [OUT [ONLY]]]] (DIR from bench/bench.py)") end
local REPS = tonumber(arg[2]) or 30
local WARMUP = tonumber(arg[3]) or 5
local OUTFILE = arg[4] or (dir .. "/volua.json")
local ONLY = nil
if arg[5] and arg[5] ~= "" then
  ONLY = {}
  for name in arg[5]:gmatch("[^,]+") do ONLY[name] = true end
end
if REPS < 30 then error("bench.lua: REPS must be at least 30 (issue 4's method), got " .. REPS) end
if not vol.cuda_available() then
  local _, why = vol.cuda_info()
  error("bench.lua: no GPU: " .. tostring(why))
end
if not vol.bench then
  error("bench.lua: this volua has no vol.bench (src/lua_bench.c must be registered in src/lua_volua.c)")
end

local TOL = {fp32 = {rtol = 1e-4, atol = 1e-5}, tf32 = {rtol = 1e-2, atol = 1e-2}}

-- -- a small JSON writer (numbers, strings, booleans, tables with string keys or arrays) ----

local function json(v, indent)
  indent = indent or ""
  local t = type(v)
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return "null" end
    return string.format("%.10g", v)
  elseif t == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
  elseif t == "boolean" then
    return tostring(v)
  elseif t == "table" then
    local inner = indent .. " "
    if #v > 0 then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = json(x, inner) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = inner .. json(k) .. ": " .. json(v[k], inner) end
    return "{\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "}"
  end
  return "null"
end

-- -- the problems ----

local problems = dofile(dir .. "/problems.lua")

-- Loads a problem's .npy files to the GPU; returns {name = tensor} and the reference.
local function load_inputs(p)
  local t = {}
  for key, file in pairs(p.files) do
    if key ~= "ref" then t[key] = vol.load(dir .. "/" .. p.name .. "/" .. file):cuda() end
  end
  return t, vol.load(dir .. "/" .. p.name .. "/" .. p.files.ref):cuda()
end

-- The other KernelBench level 2 3D problems (bench/bench.py's KB2_MORE), each as a volua script
-- would write its module's forward; t holds the inputs and the state_dict's tensors by name.
-- Elementwise ops right after a convolution go in its `epilogue` (vol.pointwise's steps: the same
-- numbers, and on the GPU the cheap ones in the convolution's stores), and a chain of elementwise
-- ops elsewhere is one vol.pointwise (since the thirty-eighth session; before, one op after the
-- other: .devrun's bench_s37.lua, bench/NOTES.md).
local convT = function(t, opts) return vol.conv_transpose3d(t.x, t["conv_transpose.weight"], t["conv_transpose.bias"], opts) end
local conv = function(t, opts) return vol.conv3d(t.x, t["conv.weight"], t["conv.bias"], opts) end
local S2P1 = {stride = 2, padding = 1}
local S2P1OP1 = {stride = 2, padding = 1, output_padding = 1}
local KB2 = {
  kb2_3 = function(t) return function()
    local y = convT(t, {stride = 2, padding = 1, output_padding = 1, epilogue = {{"add", t.sum_weight}}})
    y = vol.layer_norm(y, {64}, t["norm.weight"], t["norm.bias"])
    return vol.avg_pool3d(y, {kernel_size = 2}):gelu()
  end end,
  kb2_6 = function(t) return function()
    local y = vol.softmax(conv(t), 2)
    return vol.max_pool3d(vol.max_pool3d(y, {kernel_size = 2}), {kernel_size = 2})
  end end,
  kb2_7 = function(t) return function()
    return conv(t, {epilogue = {"relu", {"leaky_relu", 0.01}, "gelu", "sigmoid", {"add", t.bias}}})
  end end,
  kb2_13 = function(t) return function()
    local y = vol.mean(convT(t, {padding = 1}), 3, true) + t.bias
    return vol.pointwise(vol.softmax(y, 2), {"tanh", {"mul", 2}})
  end end,
  kb2_15 = function(t) return function()
    local y = vol.batch_norm(convT(t, S2P1), t["batch_norm.running_mean"], t["batch_norm.running_var"],
                             t["batch_norm.weight"], t["batch_norm.bias"], true, 0.1, 1e-5)
    return y - vol.mean(y, {3, 4, 5}, true)
  end end,
  kb2_24 = function(t) return function()
    return vol.softmax(vol.amin(conv(t), 3), 2)
  end end,
  kb2_26 = function(t) return function()
    local y = convT(t, S2P1OP1) + t.add_input
    return y * y:hardswish()
  end end,
  kb2_27 = function(t) return function()
    local y = vol.group_norm(conv(t, {epilogue = {"hardswish"}}), 4, t["group_norm.weight"], t["group_norm.bias"])
    return vol.mean(y, {3, 4, 5})
  end end,
  kb2_34 = function(t) return function()
    local y = vol.layer_norm(convT(t, S2P1), {64}, t["layer_norm.weight"], t["layer_norm.bias"], 1e-5)
    return vol.pointwise(y, {"gelu", {"mul", 1.0}})
  end end,
  kb2_38 = function(t) return function()
    local x = vol.avg_pool3d(t.x, {kernel_size = 2})
    local y = vol.conv_transpose3d(x, t["conv_transpose.weight"], t["conv_transpose.bias"],
                                   {stride = 2, padding = 1, output_padding = 1, epilogue = {{"clamp", 0, 1}}})
    local shape = y.shape
    return vol.softmax(y:reshape({shape[1], shape[2], -1}), 3):reshape(shape) * t.scale
  end end,
  kb2_43 = function(t) return function()
    local y = vol.max_pool3d(conv(t, {padding = 1}), {kernel_size = 2, stride = 2})
    return vol.logsumexp(y, 2, true):relu()
  end end,
  kb2_47 = function(t) return function()
    return conv(t, {epilogue = {"mish", "tanh"}})
  end end,
  kb2_48 = function(t) return function()
    return conv(t, {epilogue = {{"mul", t.scaling_factor}, "tanh", {"mul", t.bias}, "sigmoid"}})
  end end,
  kb2_49 = function(t) return function()
    return vol.softmax(convT(t, S2P1OP1), 2):sigmoid()
  end end,
  kb2_50 = function(t) return function()
    local y = vol.avg_pool3d(convT(t, {stride = 2, padding = 1, epilogue = {{"mul", t.scale1}}}), {kernel_size = 2})
    return vol.pointwise(y, {{"add", t.bias}, {"mul", t.scale2}})
  end end,
  kb2_58 = function(t) return function()
    local y = vol.logsumexp(convT(t, S2P1), 2, true)
    y = y * (y + 3):sigmoid() / 6
    return vol.pointwise(y, {{"sub", t.bias}, {"clamp", -1, 1}})
  end end,
  kb2_60 = function(t) return function()
    local y = convT(t, S2P1)
    y = vol.group_norm(y:sigmoid() * y, 4, t["group_norm.weight"], t["group_norm.bias"], 1e-5)
    return y:hardswish()
  end end,
  kb2_72 = function(t) return function()
    local y = vol.batch_norm(convT(t, S2P1), t["batch_norm.running_mean"], t["batch_norm.running_var"],
                             t["batch_norm.weight"], t["batch_norm.bias"], true, 0.1, 1e-5)
    return vol.avg_pool3d(vol.avg_pool3d(y, {kernel_size = 2}), {kernel_size = 2})
  end end,
  kb2_74 = function(t) return function()
    local y = convT(t, {stride = 2, padding = 1, output_padding = 1,
                        epilogue = {{"leaky_relu", 0.2}, {"mul", t.multiplier}, {"leaky_relu", 0.2}}})
    return vol.max_pool3d(y, {kernel_size = 2})
  end end,
  kb2_77 = function(t) return function()
    local y = vol.batch_norm(convT(t, {epilogue = {{"mul", 2}}}), t["batch_norm.running_mean"], t["batch_norm.running_var"],
                             t["batch_norm.weight"], t["batch_norm.bias"], true, 0.1, 1e-5)
    return vol.mean(y, {3, 4, 5}, true)
  end end,
  kb2_79 = function(t) return function()
    local y = vol.instance_norm(conv(t, {epilogue = {{"mul", t.multiplier}}}))
    return vol.amax(vol.pointwise(y, {{"clamp", -1, 1}, {"mul", t.multiplier}}), 2)
  end end,
  kb2_89 = function(t) return function()
    local y = vol.softmax(vol.max_pool3d(convT(t, S2P1OP1), {kernel_size = 2, stride = 2}), 2)
    y = y - t.subtract:reshape({1, -1, 1, 1, 1})
    return vol.amax(y:sigmoid() * y, 2)
  end end,
  kb2_90 = function(t) return function()
    return conv(t, {epilogue = {{"leaky_relu", 0.2}, {"add", t.sum_tensor}, {"clamp", -1, 1}, "gelu"}})
  end end,
  kb2_96 = function(t) return function()
    local y = vol.max_pool3d(convT(t, {stride = 2, padding = 1, epilogue = {{"mul", 0.5}}}), {kernel_size = 2})
    return vol.mean(y, {3, 4, 5}, true):clamp(0, 1)
  end end,
  kb2_100 = function(t) return function()
    return convT(t, {stride = 2, padding = 1, epilogue = {{"clamp", -1, nil}, {"div", 2}}})
  end end,
}

-- The call to time, as a closure over the inputs.
local function make_call(p, t)
  local a = p.args
  if p.op == "max_pool3d" then
    return function() return vol.max_pool3d(t.x, a) end
  elseif p.op == "avg_pool3d" then
    return function() return vol.avg_pool3d(t.x, a) end
  elseif p.op == "conv3d" then
    return function() return vol.conv3d(t.x, t.weight, t.bias, a) end
  elseif p.op == "conv_transpose3d" then
    return function() return vol.conv_transpose3d(t.x, t.weight, t.bias, a) end
  elseif p.op == "conv3d_group_norm_mean" then
    return function()
      return vol.conv3d_group_norm_mean(t.x, t["conv.weight"], t["conv.bias"], a.num_groups,
                                        t["group_norm.weight"], t["group_norm.bias"], {eps = a.eps})
    end
  -- KernelBench level 2 problems, written as a volua script would write their modules' forward
  -- (one op after the other; no clone where PyTorch's in-place rules need one)
  elseif p.op == "convT_relu_gn" then -- L2-61
    return function()
      local y = vol.conv_transpose3d(t.x, t["conv_transpose.weight"], nil, {epilogue = {"relu"}})
      return vol.group_norm(y, 8, t["group_norm.weight"], t["group_norm.bias"])
    end
  elseif p.op == "convT_residual" then -- L2-20
    return function()
      local y = vol.conv_transpose3d(t.x, t["conv_transpose.weight"], t["conv_transpose.bias"],
                                     {stride = 2, padding = 1, output_padding = 1})
      return (y + t.bias + y) * y + y
    end
  elseif p.op == "convT_pool_pool_sum" then -- L2-78
    return function()
      local y = vol.conv_transpose3d(t.x, t["conv_transpose.weight"], t["conv_transpose.bias"],
                                     {stride = 2, padding = 2})
      y = vol.max_pool3d(vol.max_pool3d(y, {kernel_size = 2}), {kernel_size = 3})
      return vol.sum(y, 2, true)
    end
  elseif p.op == "conv_div_pool_mean_sum" then -- L2-8
    return function()
      local y = vol.max_pool3d(vol.conv3d(t.x, t["conv.weight"], t["conv.bias"], {epilogue = {{"div", 2}}}),
                               {kernel_size = 2})
      return vol.sum(vol.mean(y, {3, 4, 5}, true) + t.bias, 2)
    end
  elseif KB2[p.op] then
    return KB2[p.op](t)
  end
  error("bench.lua: unknown op " .. tostring(p.op))
end

local results = {device = vol.cuda_info(), reps = REPS, warmup = WARMUP, problems = {}}
for _, p in ipairs(problems) do
  if ONLY and not ONLY[p.name] then goto next_problem end
  local t, ref = load_inputs(p)
  local call = make_call(p, t)
  local ref_max = ref:abs():max()
  local r = {op = p.op}
  for _, mode in ipairs({"fp32", "tf32"}) do
    vol.set_math(mode)
    local before = vol.fast_calls()
    local out = call()
    vol.sync()
    local fast = vol.fast_calls() > before
    local d = vol.max_abs_diff(out, ref)
    local ok = vol.allclose(out, ref, {rtol = TOL[mode].rtol, atol = TOL[mode].atol})
    out = nil
    collectgarbage()
    local med, times = vol.bench(call, {warmup = WARMUP, reps = REPS, flush_mb = 256})
    local lo, hi = math.huge, -math.huge
    for _, x in ipairs(times) do lo, hi = math.min(lo, x), math.max(hi, x) end
    r[mode] = {ms = med, min_ms = lo, max_ms = hi, max_abs_err = d,
               max_rel_err = ref_max > 0 and d / ref_max or d, allclose = ok, fast_path = fast}
    print(string.format("%-6s volua %s %9.4f ms (min %.4f, max %.4f)  max rel err %.2e  %s  fast path %s",
                        p.name, mode, med, lo, hi, r[mode].max_rel_err, ok and "ok" or "NOT CLOSE",
                        tostring(fast)))
    io.stdout:flush()
  end
  vol.set_math("fp32")
  results.problems[p.name] = r
  t, ref, call = nil, nil, nil
  collectgarbage()
  vol.empty_cache()
  ::next_problem::
end

local f = assert(io.open(OUTFILE, "w"))
f:write(json(results), "\n")
f:close()
print("bench.lua: wrote " .. OUTFILE)
