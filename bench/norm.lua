-- bench/norm.lua: volua's side of bench/norm.py (run that one). arg[1] lists the cases,
-- "name,N,C,D,H,W,groups,affine" separated by ";". For each: times vol.group_norm on the GPU with
-- vol.bench (CUDA events, a 256 MB L2 flush before each call, median of 30) and checks the GPU's
-- result against the CPU reference (allclose, rtol 1e-4, atol 1e-5); prints "name ms ok|FAIL" lines.
local vol = require "volua"
for spec in (arg[1] or ""):gmatch("[^;]+") do
  local f = {}
  for v in spec:gmatch("[^,]+") do f[#f + 1] = v end
  local name, shape = f[1], {}
  for i = 2, 6 do shape[#shape + 1] = tonumber(f[i]) end
  local groups, affine = tonumber(f[7]), f[8] == "1"
  local x = vol.rand(shape, {seed = 7})
  local w = affine and vol.rand({shape[2]}, {seed = 8}) or nil
  local b = affine and vol.rand({shape[2]}, {seed = 9}) or nil
  local xg, wg, bg = x:cuda(), w and w:cuda(), b and b:cuda()
  local ms = vol.bench(function() return vol.group_norm(xg, groups, wg, bg, 1e-5) end,
                       {warmup = 5, reps = 30, flush_mb = 256})
  local got = vol.group_norm(xg, groups, wg, bg, 1e-5):cpu()
  local want = vol.group_norm(x, groups, w, b, 1e-5)
  local ok = vol.allclose(got, want, {rtol = 1e-4, atol = 1e-5})
  print(("%s %.4f %s"):format(name, ms, ok and "ok" or ("FAIL(" .. vol.max_abs_diff(got, want) .. ")")))
  io.stdout:flush()
  x, w, b, xg, wg, bg, got, want = nil
  collectgarbage()
  collectgarbage()
end
