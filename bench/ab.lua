-- bench/ab.lua [MATH]: conv3d shapes timed on the GPU (vol.bench: L2 flushed, median of 30), each
-- result checked against VOLUA_FAST=0 (the direct kernels, float32 sums). The check is there to
-- catch a broken build, not to measure accuracy (the specs and bench/run.sh compare with float64):
-- "tf32" allclose at rtol 1e-2, atol 1e-2; "fp32" a max difference within 1e-4 of the reference's
-- largest value (two float32 sums of hundreds of terms differ by more than rtol 1e-4 where terms
-- cancel). Run two binaries in turns in one command to compare them (twenty-ninth session,
-- bench/NOTES.md):
--   for b in old/volua build/bin/volua; do $b bench/ab.lua tf32; done
local ffi = require "ffi"
ffi.cdef "int setenv(const char *, const char *, int); int unsetenv(const char *);"
local math_mode = arg and arg[1] or "tf32"
-- y against the reference r, whose largest magnitude is rmax and whose max difference from y is d
local function close(y, r, rmax, d)
  if math_mode == "tf32" then return vol.allclose(y, r, {rtol = 1e-2, atol = 1e-2}) end
  return d <= 1e-4 * rmax
end
-- name, input shape, weight shape, options, bias
local shapes = {
  {"L1-60", {16, 3, 64, 64, 64}, {64, 3, 3, 5, 7}},
  {"L1-66", {8, 3, 16, 128, 128}, {64, 3, 3, 5, 7}},
  {"c32", {4, 32, 32, 64, 64}, {32, 32, 3, 3, 3}, {padding = 1}},
  {"c32 bias", {4, 32, 32, 64, 64}, {32, 32, 3, 3, 3}, {padding = 1}, true},
  {"L1-54", {16, 3, 64, 64, 64}, {64, 3, 3, 3, 3}},
  {"s2", {8, 16, 32, 64, 64}, {32, 16, 3, 3, 3}, {stride = 2, padding = 1}},
  {"L1-59", {16, 3, 256, 256, 10}, {64, 3, 3, 3, 1}},
  {"co40", {4, 16, 32, 64, 64}, {40, 16, 3, 3, 3}, {padding = 1}},
}
vol.set_math(math_mode)
for _, s in ipairs(shapes) do
  local x, w = vol.rand(s[2], {seed = 1}):cuda(), (vol.rand(s[3], {seed = 2}) - 0.5):cuda()
  local b = s[5] and vol.rand({s[3][1]}, {seed = 3}):cuda() or nil
  local f = function() return vol.conv3d(x, w, b, s[4]) end
  local y = f()
  ffi.C.setenv("VOLUA_FAST", "0", 1)
  local r = f()
  ffi.C.unsetenv("VOLUA_FAST")
  local med = vol.bench(f, {warmup = 5, reps = 30, flush_mb = 256})
  local rmax, d = r:abs():max(), vol.max_abs_diff(y, r)
  print(string.format("%-8s %8.4f ms  max diff %.3g (max |ref| %.3g)  ok %s", s[1], med, d, rmax,
    tostring(close(y, r, rmax, d))))
  io.stdout:flush()
end
