-- model.lua: the example model for scripts/pipeline.lua --model, the same Conv3d -> GroupNorm
-- as bench/export_model.py builds in PyTorch. The children's names make the state_dict keys
-- (conv.weight, conv.bias, group_norm.weight, group_norm.bias), as in the PyTorch class
--   self.conv = nn.Conv3d(3, 24, 3); self.group_norm = nn.GroupNorm(8, 24)
-- and nn.Mean() is forward's x.mean(dim=[1, 2, 3, 4]): with it the three run as one fused
-- kernel (vol.conv3d_group_norm_mean).
--
--   volua scripts/pipeline.lua --model scripts/example/model.lua \
--     --weights scripts/example/model.safetensors --input scripts/example/volumes/ --out y.npy
--
-- scripts/example/expected.npy holds the reference output for these volumes (float64).
local nn = ...   -- the pipeline passes volua.nn; require "volua.nn" works as well
nn = nn or require "volua.nn"

return nn.Sequential({
  {"conv", nn.Conv3d(3, 24, 3)},
  {"group_norm", nn.GroupNorm(8, 24)},
  {"mean", nn.Mean()},
})
