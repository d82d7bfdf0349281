-- soak.lua [N] [device]: runs the conv3d -> GroupNorm -> mean pipeline N times (default 10000) on
-- random shapes and checks that memory stays flat: vol.memory_stats().allocated returns to its
-- starting value, reserved GPU memory and cudaMalloc calls stop growing after a warm-up, and the
-- process's resident memory stays within a few MiB. Exits non-zero when it does not.
local n = tonumber(arg and arg[1]) or 10000
local device = arg and arg[2] or (vol.cuda_available() and "cuda" or "cpu")
local nn = require "volua.nn"

local function rss_mib()
  local f = io.open("/proc/self/statm")
  if not f then return 0 end
  local pages = f:read("*n") and f:read("*n")
  f:close()
  return (pages or 0) * 4096 / 2 ^ 20
end

local rng = vol.rand({n * 8}, {seed = 12345}):table()
local k = 0
local function pick(lo, hi) k = k + 1; return lo + math.floor(rng[k] * (hi - lo + 1)) end

local function step()
  local N, C, G = pick(1, 4), pick(1, 4), ({1, 2, 4})[pick(1, 3)]
  local Cout = G * pick(1, 3)
  local D, H, W = pick(3, 10), pick(3, 12), pick(3, 12)
  local x = vol.rand({N, C, D, H, W}, {device = device, seed = k})
  local w = vol.rand({Cout, C, 3, 3, 3}, {device = device, seed = k + 1}) - 0.5
  local b = vol.rand({Cout}, {device = device, seed = k + 2})
  local gw, gb = vol.ones({Cout}, {device = device}), vol.zeros({Cout}, {device = device})
  local y = vol.conv3d_group_norm_mean(x, w, b, G, gw, gb)
  local z = vol.mean(vol.group_norm(vol.conv3d(x, w, b), G, gw, gb), {2, 3, 4, 5})
  return vol.max_abs_diff(y, z)
end

collectgarbage(); collectgarbage()
local s0, rss0 = vol.memory_stats(), rss_mib()
local warm = math.min(1000, math.floor(n / 10))
local sw, rssw, worst = nil, nil, 0
local t0 = os.clock()
for i = 1, n do
  worst = math.max(worst, step())
  -- Lua frees a dead tensor when its collector runs, so the number of tensors alive at once
  -- depends on the collector's timing; a collection per call measures the allocator itself.
  collectgarbage()
  if i == warm then collectgarbage(); collectgarbage(); sw, rssw = vol.memory_stats(), rss_mib() end
end
collectgarbage(); collectgarbage()
vol.sync()
local s1, rss1 = vol.memory_stats(), rss_mib()
print(string.format("soak: %d pipeline calls on %s, random shapes, %.1f s CPU time", n, device, os.clock() - t0))
print(string.format("  fused vs unfused max abs diff %.3g", worst))
print(string.format("  allocated %d -> %d bytes; reserved %d -> %d (after warm-up %d); cudaMalloc calls %d -> %d (after warm-up %d)",
  s0.allocated, s1.allocated, s0.reserved, s1.reserved, sw.reserved, s0.num_mallocs, s1.num_mallocs, sw.num_mallocs))
print(string.format("  resident memory %.1f MiB -> %.1f MiB (after warm-up %.1f MiB)", rss0, rss1, rssw))
-- Flat: every byte allocated is given back (allocated returns to its start), and after the
-- warm-up the cache barely grows: random shapes now and then need one more block of a size
-- class than any call before them did, so a few cudaMalloc calls (at most one per 1000 calls,
-- and 4 MiB of reserve in all) may still come; a leak or a cache that does not reuse would
-- show thousands.
local ok = s1.allocated == s0.allocated and s1.num_mallocs - sw.num_mallocs <= n / 1000
  and s1.reserved - sw.reserved <= 4 * 2 ^ 20 and rss1 - rssw < 16 and worst < 1e-4
print(ok and "soak: memory flat" or "soak: FAILED")
os.exit(ok and 0 or 1)
