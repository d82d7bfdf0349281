-- bench/ops.lua: volua's side of bench/ops.py (run that one: it runs this and prints both). Times
-- elementwise ops, reductions and means on a (8, 32, 32, 128, 128) float32 volume (537 MB) with vol.bench (CUDA
-- events, a 256 MB L2 flush before each call, median of 30) and prints "name ms" lines. a*w[c] and
-- a+v[dhw] broadcast a (1, 32, 1, 1, 1) and a (1, 1, 32, 128, 128) tensor.
-- Run alone: build/bin/volua bench/ops.lua
local vol = require "volua"
local shape = {8, 32, 32, 128, 128}
local a = vol.rand(shape, {seed = 1}):cuda()
local b = vol.rand(shape, {seed = 2}):cuda()
local y = vol.empty(shape):cuda()
local w = vol.rand({1, 32, 1, 1, 1}, {seed = 3}):cuda() -- a per-channel factor
local v = vol.rand({1, 1, 32, 128, 128}, {seed = 4}):cuda() -- a volume for every (sample, channel)
local ops = {
  {"fill(0)", function() y:fill(0) end},
  {"fill(1.5)", function() y:fill(1.5) end},
  {"a+b", function() return a + b end},
  {"a*1.5", function() return a * 1.5 end},
  {"relu(a)", function() return a:relu() end},
  {"-a", function() return -a end},
  {"a*w[c]", function() return a * w end},
  {"a+v[dhw]", function() return a + v end},
  {"sum", function() return a:sum() end},
  {"max", function() return a:max() end},
  {"mean", function() return vol.mean(a) end},
  {"mean[dhw]", function() return vol.mean(a, {3, 4, 5}) end},
  {"mean[c]", function() return vol.mean(a, 2) end},
}
for _, o in ipairs(ops) do
  print(("%-10s %.4f"):format(o[1], vol.bench(o[2], {warmup = 3, reps = 30, flush_mb = 256})))
  io.stdout:flush()
end
