-- volua's own reference cases (golden format), written by make_cases.py with an
-- independent float64 numpy reference from float32 inputs; paths are relative to
-- this file. args carry the Conv3d's arguments (stride, padding, dilation, groups:
-- PyTorch's defaults where absent); weights use PyTorch's state_dict names; outputs
-- are the per-sample mean (out) and, where given, the GroupNorm output (feat).
return {
  {name = "example", op = "conv3d_group_norm_mean", args = {kernel_size = {3, 3, 3}, num_groups = 8, eps = 1e-05, weights = "../../scripts/example/model.safetensors", input_dir = "../../scripts/example/volumes"}, inputs = {x = "example/x.npy"}, outputs = {out = "../../scripts/example/expected.npy"}},
  {name = "strided_groups", op = "conv3d_group_norm_mean", args = {kernel_size = {3, 2, 3}, num_groups = 4, eps = 0.001, weights = "strided_groups/model.safetensors", stride = {1, 2, 1}, padding = {1, 0, 1}, dilation = {1, 1, 2}, groups = 2}, inputs = {x = "strided_groups/x.npy"}, outputs = {out = "strided_groups/out.npy", feat = "strided_groups/feat.npy"}},
}
