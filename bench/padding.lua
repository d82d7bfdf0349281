-- bench/padding.lua: volua's side of bench/padding.py (run that one: it prints both). conv3d 32 -> 32,
-- k 3, padding 1 on (4, 32, 32, 64, 64) and conv3d_group_norm_mean on L2-23's shape with 16 samples,
-- with each padding_mode, in both maths, and fused64 the same with 64 conv channels (beyond the
-- one-pass kernel): vol.bench (CUDA events, 256 MB L2 flush, median of 30). Prints "op mode math ms". Run alone: build/bin/volua bench/padding.lua
local vol = require "volua"
local x = vol.rand({4, 32, 32, 64, 64}, {seed = 1}):cuda()
local w = (vol.rand({32, 32, 3, 3, 3}, {seed = 2}) - 0.5):cuda()
local b = vol.rand({32}, {seed = 3}):cuda()
local x2 = vol.rand({16, 3, 24, 32, 32}, {seed = 4}):cuda()
local w2 = (vol.rand({24, 3, 3, 3, 3}, {seed = 5}) - 0.5):cuda()
local b2, gw, gb = vol.rand({24}, {seed = 6}):cuda(), vol.rand({24}, {seed = 7}):cuda(), vol.rand({24}, {seed = 8}):cuda()
local w3 = (vol.rand({64, 3, 3, 3, 3}, {seed = 9}) - 0.5):cuda() -- 64 channels: beyond the one-pass kernel
local b3, gw3, gb3 = vol.rand({64}, {seed = 10}):cuda(), vol.rand({64}, {seed = 11}):cuda(), vol.rand({64}, {seed = 12}):cuda()
for _, m in ipairs({"fp32", "tf32"}) do
  vol.set_math(m)
  for _, mode in ipairs({"zeros", "reflect", "replicate", "circular"}) do
    local args = {padding = 1, padding_mode = mode}
    print(("conv %s %s %.4f"):format(mode, m, vol.bench(function() return vol.conv3d(x, w, b, args) end)))
    print(("fused %s %s %.4f"):format(mode, m, vol.bench(function()
      return vol.conv3d_group_norm_mean(x2, w2, b2, 8, gw, gb, args) end)))
    print(("fused64 %s %s %.4f"):format(mode, m, vol.bench(function()
      return vol.conv3d_group_norm_mean(x2, w3, b3, 8, gw3, gb3, args) end)))
    io.stdout:flush()
  end
end
