-- bench/profile.lua [PROBLEMS [MATHS [CALLS]]]: runs the benchmark's convolution problems on random
-- inputs (no PyTorch, no checks) CALLS times each, for ncu or a quick look at the launch plans.
-- PROBLEMS: comma list (default L1-77,L1-60,L1-66,L2-23; also L1-43, pool-k3s1, pool-k2s2, convT-k3s2,
-- L1-59, L1-73, L1-54, L1-61, L1-70, conv-c32, conv-dw, convT-k2s2, L1-72, convT-g4,
-- conv-s2, conv-g4, L1-58, L1-68); MATHS: comma list (default fp32,tf32).
-- Run: VOLUA_TC_VERBOSE=1 build/bin/volua bench/profile.lua L2-23 tf32 3
local vol = require "volua"
local want = arg and arg[1] or "L1-77,L1-60,L1-66,L2-23"
local maths = arg and arg[2] or "fp32,tf32"
local calls = tonumber(arg and arg[3]) or 3

local function cu(t) return t:cuda() end
-- a convolution problem: vol[op](x, w, bias of nb channels or none, args); input seed 1, weights
-- seed 2, bias seed 3
local function conv(op, xs, ws, nb, args)
  return function()
    local x, w = cu(vol.rand(xs, {seed = 1})), cu(vol.rand(ws, {seed = 2}))
    local b = nb and cu(vol.rand({nb}, {seed = 3})) or nil
    return function() return vol[op](x, w, b, args) end
  end
end
local P = {
  ["L1-43"] = function()
    local x = cu(vol.rand({16, 32, 128, 128, 128}, {seed = 1}))
    return function() return vol.max_pool3d(x, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}) end
  end,
  -- two more max_pool3d shapes (not issue 4's): stride 1, and a non-overlapping 2x2x2 window
  ["pool-k3s1"] = function()
    local x = cu(vol.rand({16, 32, 64, 128, 128}, {seed = 1}))
    return function() return vol.max_pool3d(x, {kernel_size = 3, stride = 1, padding = 1}) end
  end,
  ["pool-k2s2"] = function()
    local x = cu(vol.rand({16, 32, 128, 128, 128}, {seed = 1}))
    return function() return vol.max_pool3d(x, {kernel_size = 2, stride = 2}) end
  end,
  -- a transposed convolution with every phase live (bench.py's X-convT-k3s2)
  ["convT-k3s2"] = conv("conv_transpose3d", {8, 32, 16, 32, 32}, {32, 16, 3, 3, 3}, 16,
                        {stride = 2, padding = 1, output_padding = 1}),
  -- and three more every-phase ones (bench.py's X-convT-k2s2, L1-72, X-convT-g4)
  ["convT-k2s2"] = conv("conv_transpose3d", {8, 32, 16, 32, 32}, {32, 16, 2, 2, 2}, 16, {stride = 2}),
  ["L1-72"] = conv("conv_transpose3d", {8, 32, 12, 24, 48}, {32, 8, 3, 5, 7}, nil,
                   {stride = 2, padding = {1, 2, 3}, output_padding = 1, groups = 4}),
  ["convT-g4"] = conv("conv_transpose3d", {4, 32, 32, 64, 128}, {32, 8, 3, 3, 3}, nil, {stride = 2, padding = 1, groups = 4}),
  -- KernelBench L1-59 (W of 10: 4-byte staging; K of 27) and L1-73 as its file runs it (groups 1,
  -- every phase live), and L1-54
  ["L1-59"] = conv("conv3d", {16, 3, 256, 256, 10}, {64, 3, 3, 3, 1}, nil, {}),
  ["L1-73"] = conv("conv_transpose3d", {4, 32, 32, 64, 128}, {32, 32, 3, 3, 3}, nil, {stride = 2, padding = 1}),
  -- stride-1 transposed convolutions with large K (bench.py's L1-61, L1-70), and X-conv-c32
  ["L1-61"] = conv("conv_transpose3d", {8, 48, 64, 64, 64}, {48, 48, 3, 3, 3}, nil, {}),
  ["L1-70"] = conv("conv_transpose3d", {8, 48, 96, 96, 96}, {48, 24, 3, 3, 3}, nil, {}),
  ["conv-c32"] = conv("conv3d", {4, 32, 32, 64, 64}, {32, 32, 3, 3, 3}, 32, {padding = 1}),
  -- bench.py's X-conv-dw (depthwise, conv3d_depthwise.cu)
  ["conv-dw"] = conv("conv3d", {8, 64, 32, 64, 64}, {64, 1, 3, 3, 3}, 64, {padding = 1, groups = 64}),
  ["L1-54"] = conv("conv3d", {16, 3, 64, 64, 64}, {64, 3, 3, 3, 3}, nil, {}),
  -- bench.py's X-conv-s2 and X-conv-g4, and KernelBench L1-58 and L1-68 (transposed, stride 1)
  ["conv-s2"] = conv("conv3d", {8, 16, 32, 64, 64}, {32, 16, 3, 3, 3}, nil, {stride = 2, padding = 1}),
  ["conv-g4"] = conv("conv3d", {8, 32, 32, 64, 64}, {64, 8, 3, 3, 3}, nil, {padding = 1, groups = 4}),
  ["L1-58"] = conv("conv_transpose3d", {16, 32, 16, 32, 64}, {32, 16, 3, 5, 7}, nil, {}),
  ["L1-68"] = conv("conv_transpose3d", {16, 32, 64, 64, 64}, {32, 64, 3, 5, 5}, nil, {}),
  ["L1-77"] = conv("conv_transpose3d", {16, 32, 16, 32, 32}, {32, 64, 3, 3, 3}, nil,
                   {stride = 2, padding = 1, dilation = 2}),
  ["L1-60"] = conv("conv3d", {16, 3, 64, 64, 64}, {64, 3, 3, 5, 7}, nil, {}),
  ["L1-66"] = conv("conv3d", {8, 3, 16, 128, 128}, {64, 3, 3, 5, 7}, nil, {}),
  ["L2-23"] = function()
    local x, w = cu(vol.rand({128, 3, 24, 32, 32}, {seed = 1})), cu(vol.rand({24, 3, 3, 3, 3}, {seed = 2}))
    local b, gw, gb = cu(vol.rand({24}, {seed = 3})), cu(vol.rand({24}, {seed = 4})), cu(vol.rand({24}, {seed = 5}))
    return function() return vol.conv3d_group_norm_mean(x, w, b, 8, gw, gb, {eps = 1e-5}) end
  end,
}
for name in want:gmatch("[^,]+") do
  local call = assert(P[name], "profile.lua: unknown problem " .. name)()
  for m in maths:gmatch("[^,]+") do
    vol.set_math(m)
    for _ = 1, calls do local _ = call() end
    vol.sync()
    local med = os.getenv("PROFILE_NOBENCH") == nil and vol.bench and vol.bench(call, {warmup = 2, reps = 30, flush_mb = 256})
    print(string.format("%-6s %s %s ms", name, m, tostring(med)))
    io.stdout:flush()
  end
  collectgarbage()
end
