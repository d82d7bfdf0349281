-- bench/pool_indices.lua DIR: volua's side of bench/pool_indices.py (run that one: it runs this, twice,
-- and prints both sides). Times max_pool3d with return_indices on the shapes of pool_indices.py with
-- vol.bench (CUDA events, a 256 MB L2 flush before each call, median of 30 after 5 warm-ups) and
-- prints "name ms" lines; then checks its outputs and indices on DIR/x.npy against PyTorch's
-- (DIR/y.npy, DIR/i.npy) and prints "check <n wrong values> <n wrong indices>".
local vol = require "volua"
local dir = arg[1] or "/tmp/volua_pool"
local cases = {
  {"L1-43+idx", {16, 32, 128, 128, 128}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}},
  {"k3s2p1+idx", {16, 32, 64, 128, 128}, {kernel_size = 3, stride = 2, padding = 1}},
  {"k3s1p1+idx", {16, 32, 64, 128, 128}, {kernel_size = 3, stride = 1, padding = 1}},
  {"L1-43", {16, 32, 128, 128, 128}, {kernel_size = 3, stride = 2, padding = 1, dilation = 3}, false},
}
for i, c in ipairs(cases) do
  local x = vol.rand(c[2], {seed = i}):cuda()
  local a = c[3]
  a.return_indices = c[4] ~= false
  print(("%-12s %.4f"):format(c[1], vol.bench(function() return vol.max_pool3d(x, a) end,
                                              {warmup = 5, reps = 30, flush_mb = 256})))
  io.stdout:flush()
  x = nil
  collectgarbage("collect")
end
-- PyTorch's outputs on integer-valued data (ties in most windows) and a few NaN
local x = vol.load(dir .. "/x.npy"):cuda()
local y, idx = vol.max_pool3d(x, {kernel_size = 3, stride = 2, padding = 1, dilation = 3, return_indices = true})
local ty, ti = vol.load(dir .. "/y.npy"), vol.load(dir .. "/i.npy")
y, idx = y:cpu(), idx:cpu()
local yd = vol.max_abs_diff(y, ty)
local id = vol.max_abs_diff(idx, ti)
print(("check %s %s"):format(tostring(yd), tostring(id)))
