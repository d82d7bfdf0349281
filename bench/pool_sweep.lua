-- bench/pool_sweep.lua DIR: volua's side of bench/pool_sweep.py (run that one). For each case of
-- DIR/cases.txt (name, N C D H W, then kernel, stride, padding and dilation as triples, then
-- ceil_mode 0 or 1): times max_pool3d without and with indices on uniform random input (vol.bench:
-- CUDA events, a 256 MB L2 flush before each call, median of 30 after 5 warm-ups), printing
-- "name ms" and "name+idx ms"; then compares its outputs and indices on DIR/name-x.npy with
-- PyTorch's (DIR/name-y.npy, DIR/name-i.npy), printing "name:check <max |dy|> <max |d index|>".
local vol = require "volua"
local dir = arg[1] or "/tmp/volua_pool_sweep"
local n = 0
for line in io.lines(dir .. "/cases.txt") do
  n = n + 1
  local f = {}
  for w in line:gmatch("%S+") do f[#f + 1] = w end
  local name, v = f[1], {}
  for i = 2, #f do v[#v + 1] = tonumber(f[i]) end
  local shape = {v[1], v[2], v[3], v[4], v[5]}
  local a = {kernel_size = {v[6], v[7], v[8]}, stride = {v[9], v[10], v[11]}, padding = {v[12], v[13], v[14]},
             dilation = {v[15], v[16], v[17]}, ceil_mode = v[18] == 1}
  local x = vol.rand(shape, {seed = n}):cuda()
  for _, ri in ipairs({false, true}) do
    a.return_indices = ri
    print(("%-24s %.4f"):format(name .. (ri and "+idx" or ""),
                                vol.bench(function() return vol.max_pool3d(x, a) end, {warmup = 5, reps = 30, flush_mb = 256})))
    io.stdout:flush()
  end
  x = nil
  collectgarbage("collect")
  a.return_indices = true
  local xs = vol.load(dir .. "/" .. name .. "-x.npy"):cuda()
  local y, idx = vol.max_pool3d(xs, a)
  local yd = vol.max_abs_diff(y:cpu(), vol.load(dir .. "/" .. name .. "-y.npy"))
  local id = vol.max_abs_diff(idx:cpu(), vol.load(dir .. "/" .. name .. "-i.npy"))
  -- values only must agree too (another kernel may run)
  a.return_indices = false
  local yv = vol.max_pool3d(xs, a)
  local yvd = vol.max_abs_diff(yv:cpu(), vol.load(dir .. "/" .. name .. "-y.npy"))
  print(("%s:check %s %s"):format(name, tostring(math.max(yd, yvd)), tostring(id)))
  collectgarbage("collect")
end
