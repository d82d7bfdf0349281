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

-- The call to time, as a closure over the inputs.
local function make_call(p, t)
  local a = p.args
  if p.op == "max_pool3d" then
    return function() return vol.max_pool3d(t.x, a) end
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
      local y = vol.conv_transpose3d(t.x, t["conv_transpose.weight"]):relu()
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
      local y = vol.max_pool3d(vol.conv3d(t.x, t["conv.weight"], t["conv.bias"]) / 2, {kernel_size = 2})
      return vol.sum(vol.mean(y, {3, 4, 5}, true) + t.bias, 2)
    end
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
