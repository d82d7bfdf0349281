-- help.lua: documentation for every public function of API.md, looked up by value or by name:
-- help(vol.conv3d), help("conv3d"), help(x) for a tensor, help() for the list of topics.
-- Other modules add theirs with help.register(fn_or_table, text) (volua.nn does for its classes).
local M = {}

-- -- the texts: signature, one or two lines, an example ----

local sections = {} -- {title =, names = {...}} in the order help() lists them
local texts = {}    -- full name ("vol.conv3d", "Tensor:reshape", "Tensor.shape") -> text

local function section(title, note)
  sections[#sections + 1] = {title = title, note = note, names = {}}
end

local function doc(name, text)
  local s = sections[#sections]
  s.names[#s.names + 1] = name
  texts[name] = text:gsub("%s+$", "")
end

section("Tensors")
doc("vol.tensor", [==[
vol.tensor(data [, {dtype="float32", device=vol.default_device()}]) -> tensor
  A tensor from nested Lua tables of numbers (ragged data is an error).
  Example: t = vol.tensor({{1, 2, 3}, {4, 5, 6}})   -- shape {2, 3}]==])
doc("vol.empty", [==[
vol.empty(shape [, opts]) -> tensor
  An uninitialised tensor; shape is a table of sizes, opts = {dtype=, device=}.
  Example: t = vol.empty({2, 3, 4})]==])
doc("vol.zeros", [==[
vol.zeros(shape [, opts]) -> tensor
  A tensor of zeros.
  Example: z = vol.zeros({1, 8, 16, 16, 16})]==])
doc("vol.ones", [==[
vol.ones(shape [, opts]) -> tensor
  A tensor of ones.
  Example: w = vol.ones({4, 2, 3, 3, 3}, {dtype = "float32"})]==])
doc("vol.full", [==[
vol.full(shape, value [, opts]) -> tensor
  A tensor with every element set to value.
  Example: t = vol.full({2, 2}, 0.5)]==])
doc("vol.rand", [==[
vol.rand(shape [, {dtype=, device=, seed=}]) -> tensor
  Uniform values in [0, 1); opts.seed makes the result reproducible.
  Example: x = vol.rand({1, 2, 8, 8, 8}, {seed = 42})]==])
doc("vol.randn", [==[
vol.randn(shape [, {dtype=, device=, seed=}]) -> tensor
  Standard normal values; opts.seed makes the result reproducible.
  Example: x = vol.randn({2, 3}, {seed = 1})]==])
doc("vol.arange", [==[
vol.arange(n [, opts]) -> tensor
  The 1-D tensor 0, 1, ..., n-1.
  Example: vol.arange(6):reshape({2, 3})]==])
doc("vol.manual_seed", [==[
vol.manual_seed(seed)
  Seeds the generator that vol.rand and vol.randn use when opts.seed is absent.
  Example: vol.manual_seed(0); a = vol.rand({3})]==])
doc("vol.max_abs_diff", [==[
vol.max_abs_diff(a, b) -> number
  The largest |a - b| over all elements (NaN where exactly one side is NaN).
  Example: vol.max_abs_diff(y, vol.load("expected.npy"))]==])
doc("vol.allclose", [==[
vol.allclose(a, b [, {rtol=1e-5, atol=1e-8, equal_nan=false}]) -> boolean
  |a - b| <= atol + rtol * |b| everywhere, as torch.allclose.
  Example: vol.allclose(y, ref, {rtol = 1e-4, atol = 1e-5})]==])

section("Tensor fields and methods", "t.name and t:name(...) for a tensor t")
doc("Tensor.shape", [==[
t.shape -> {sizes...}
  A fresh Lua table of sizes, e.g. {N, C, D, H, W}.
  Example: x.shape   -- {1, 2, 8, 8, 8}]==])
doc("Tensor.dtype", [==[
t.dtype -> "float32" | "int64"
  The element type.
  Example: vol.arange(3).dtype]==])
doc("Tensor.device", [==[
t.device -> "cpu" | "cuda"
  Where the tensor's data lives.
  Example: x:cuda().device   -- "cuda"]==])
doc("Tensor:dim", [==[
t:dim() -> number
  The rank (number of dimensions).
  Example: vol.zeros({2, 3}):dim()   -- 2]==])
doc("Tensor:numel", [==[
t:numel() -> number
  The number of elements.
  Example: vol.zeros({2, 3}):numel()   -- 6]==])
doc("Tensor:size", [==[
t:size(d) -> number
  The size of dimension d (1-based; negative counts from the end).
  Example: x:size(-1)   -- the width W]==])
doc("Tensor:to", [==[
t:to(device) -> tensor
  A copy on "cpu" or "cuda".
  Example: xg = x:to("cuda")]==])
doc("Tensor:cpu", [==[
t:cpu() -> tensor
  A copy on the CPU (t:to("cpu")).
  Example: y:cpu():table()]==])
doc("Tensor:cuda", [==[
t:cuda() -> tensor
  A copy on the GPU (t:to("cuda")); an error when there is no GPU.
  Example: xg = x:cuda()]==])
doc("Tensor:clone", [==[
t:clone() -> tensor
  A copy with its own storage, on the same device.
  Example: y = x:clone(); y:fill(0)   -- x is unchanged]==])
doc("Tensor:contiguous", [==[
t:contiguous() -> tensor
  A contiguous row-major copy (storage is always contiguous today).
  Example: y = x:contiguous()]==])
doc("Tensor:reshape", [==[
t:reshape(shape) -> tensor
  The same elements in a new shape; one size may be -1 (inferred).
  Example: vol.arange(24):reshape({2, -1, 4})   -- shape {2, 3, 4}]==])
doc("Tensor:fill", [==[
t:fill(v) -> t
  Sets every element to v, in place.
  Example: x:fill(1)]==])
doc("Tensor:copy", [==[
t:copy(src) -> t
  Copies src's elements into t, in place (same number of elements).
  Example: buf:copy(x)]==])
doc("Tensor:item", [==[
t:item() -> number
  The value of a one-element tensor.
  Example: vol.tensor({3}):item()   -- 3]==])
doc("Tensor:table", [==[
t:table() -> nested Lua tables
  The elements as nested tables (CPU copy first if needed).
  Example: vol.arange(4):reshape({2, 2}):table()   -- {{0, 1}, {2, 3}}]==])
doc("Tensor:get", [==[
t:get(i1, ..., in) -> number
  One element, by 1-based indices (negative counts from the end).
  Example: t:get(2, 3)]==])
doc("Tensor:set", [==[
t:set(v, i1, ..., in)
  Sets one element, by 1-based indices.
  Example: t:set(7, 1, 1)]==])
doc("Tensor:abs", [==[
t:abs() -> tensor
  |t| elementwise.
  Example: (a - b):abs():max()]==])
doc("Tensor:relu", [==[
t:relu() -> tensor
  max(t, 0) elementwise.
  Example: y = vol.conv3d(x, w):relu()]==])
doc("Tensor:sum", [==[
t:sum() -> number
  The sum of all elements.
  Example: vol.ones({2, 3}):sum()   -- 6]==])
doc("Tensor:max", [==[
t:max() -> number | t:max(dim [, keepdim=false]) -> values, indices
  The largest element; with a dim, vol.max(t, dim, keepdim) (indices int64, 0-based).
  Example: x:max()]==])
doc("Tensor:min", [==[
t:min() -> number | t:min(dim [, keepdim=false]) -> values, indices
  The smallest element; with a dim, vol.min(t, dim, keepdim).
  Example: x:min()]==])
doc("Tensor:add", [==[
a + b, t:add(b) -> tensor
  Elementwise sum; either operand may be a number.
  Example: y = x + 1]==])
doc("Tensor:sub", [==[
a - b, t:sub(b) -> tensor
  Elementwise difference; either operand may be a number.
  Example: d = a - b]==])
doc("Tensor:mul", [==[
a * b, t:mul(b) -> tensor
  Elementwise product (not a matrix product); either operand may be a number.
  Example: y = x * 2]==])
doc("Tensor:div", [==[
a / b, t:div(b) -> tensor
  Elementwise quotient; either operand may be a number.
  Example: y = x / x:max()]==])
doc("Tensor:neg", [==[
-a, t:neg() -> tensor
  Elementwise negation.
  Example: y = -x]==])

section("Files")
doc("vol.load", [==[
vol.load(path) -> tensor
  Reads a .npy file (<f4 and <f8 as float32, <i8 and <i4 as int64) into a CPU tensor.
  Example: x = vol.load("volume.npy")]==])
doc("vol.save", [==[
vol.save(path, t)
  Writes t as .npy, which numpy's np.load reads back exactly.
  Example: vol.save("out.npy", y)]==])
doc("vol.load_safetensors", [==[
vol.load_safetensors(path) -> {[name] = tensor}, metadata
  Reads a safetensors file, as written by safetensors.torch.save_file.
  Example: w = vol.load_safetensors("model.safetensors"); w["conv.weight"].shape]==])
doc("vol.save_safetensors", [==[
vol.save_safetensors(path, tensors [, metadata])
  Writes {[name] = tensor} (and a {[string] = string} metadata table) as safetensors.
  Example: vol.save_safetensors("w.safetensors", {weight = w}, {format = "pt"})]==])
doc("vol.save_png", [==[
vol.save_png(path, t [, {axis=1, slices=, cols=, cmap="gray", vmin=, vmax=, scale=1, gap=1,
                         channel=1, batch=1}]) -> width, height
  A PNG of a volume as a montage of slices along axis (1 = D, 2 = H, 3 = W), or of a 2-D
  tensor as an image; min/max normalised unless vmin/vmax; cmap "gray", "viridis" or "magma";
  slices is a count (evenly spaced) or a list of 1-based indices.
  Example: vol.save_png("x.png", x, {slices = 8, cmap = "viridis", scale = 2})]==])
doc("vol.load_png", [==[
vol.load_png(path) -> tensor
  A PNG's 8-bit values as float32: (H, W) for gray, (H, W, C) with alpha or color.
  Example: img = vol.load_png("x.png"); img.shape]==])

section("Ops", "inputs (N, C, D, H, W) or unbatched (C, D, H, W); per-dimension values take n or {d, h, w}")
doc("vol.max_pool3d", [==[
vol.max_pool3d(x, {kernel_size=, stride=kernel_size, padding=0, dilation=1, ceil_mode=false,
                   return_indices=false}) -> out [, indices]
  As torch.nn.functional.max_pool3d; indices are int64 flat 0-based offsets in each D*H*W
  volume; NaN propagates.
  Example: y, idx = vol.max_pool3d(x, {kernel_size = 2, return_indices = true})]==])
-- the pooling family: avg_pool3d and the adaptive pools
doc("vol.avg_pool3d", [==[
vol.avg_pool3d(x, {kernel_size=, stride=kernel_size, padding=0, ceil_mode=false,
                   count_include_pad=true, divisor_override=nil}) -> tensor
  As torch.nn.functional.avg_pool3d: each output is its window's sum divided by divisor_override,
  or by the window's size within the padded input (count_include_pad), or within the input.
  Example: y = vol.avg_pool3d(x, {kernel_size = 3, stride = 2, padding = 1, count_include_pad = false})]==])
doc("vol.adaptive_avg_pool3d", [==[
vol.adaptive_avg_pool3d(x, output_size) -> tensor
  As torch.nn.functional.adaptive_avg_pool3d: output i along a dim of size n averages the input
  [floor(i*n/out), ceil((i+1)*n/out)). output_size is a number or {d, h, w}; a nil entry keeps
  the input's size (PyTorch's None).
  Example: y = vol.adaptive_avg_pool3d(x, {1, nil, 4})]==])
doc("vol.adaptive_max_pool3d", [==[
vol.adaptive_max_pool3d(x, output_size [, return_indices=false]) -> out [, indices]
  As torch.nn.functional.adaptive_max_pool3d, over adaptive_avg_pool3d's windows; indices are
  int64 flat 0-based offsets in each D*H*W volume; NaN propagates.
  Example: y, idx = vol.adaptive_max_pool3d(x, 2, true)]==])
doc("vol.conv3d", [==[
vol.conv3d(x, weight [, bias] [, {stride=1, padding=0, dilation=1, groups=1,
                                   padding_mode="zeros", epilogue=nil}]) -> tensor
  As torch.nn.functional.conv3d; weight is (C_out, C_in/groups, kD, kH, kW); padding may be
  "same" or "valid"; padding_mode "zeros", "reflect", "replicate" or "circular".
  epilogue: vol.pointwise's steps, applied to the output (the same numbers as applying them
  after; on the GPU the first cheap steps run in the convolution's own stores).
  Example: y = vol.conv3d(vol.rand({1, 2, 8, 8, 8}), vol.rand({4, 2, 3, 3, 3}), nil, {padding = 1})
           y = vol.conv3d(x, w, b, {padding = 1, epilogue = {"relu", {"mul", 0.5}}})]==])
doc("vol.conv_transpose3d", [==[
vol.conv_transpose3d(x, weight [, bias] [, {stride=1, padding=0, output_padding=0, dilation=1,
                                             groups=1, epilogue=nil}]) -> tensor
  As torch.nn.functional.conv_transpose3d; weight is (C_in, C_out/groups, kD, kH, kW).
  epilogue: as vol.conv3d's (vol.pointwise's steps applied to the output).
  Example: y = vol.conv_transpose3d(vol.rand({1, 4, 4, 4, 4}), vol.rand({4, 2, 2, 2, 2}), nil, {stride = 2})]==])
doc("vol.group_norm", [==[
vol.group_norm(x, num_groups [, weight [, bias [, eps=1e-5]]]) -> tensor
  As torch.nn.functional.group_norm, on any rank >= 2 (channels in dimension 2).
  Example: y = vol.group_norm(x, 2, vol.ones({4}), vol.zeros({4}))]==])
-- batch_norm, instance_norm, layer_norm (the norm family beside group_norm)
doc("vol.batch_norm", [==[
vol.batch_norm(x, running_mean, running_var [, weight [, bias [, training=false
               [, momentum=0.1 [, eps=1e-5]]]]]) -> tensor
  As torch.nn.functional.batch_norm on (N, C, *): training normalises with each channel's batch
  mean and biased variance and updates running_mean / running_var in place (when given):
  running = momentum * batch + (1 - momentum) * running, the variance unbiased. Otherwise the
  running statistics (required then) are used. Weight, bias and running stats have C values.
  Example: y = vol.batch_norm(x, rm, rv, nil, nil, true)   -- rm, rv updated]==])
doc("vol.instance_norm", [==[
vol.instance_norm(x [, {running_mean=, running_var=, weight=, bias=, use_input_stats=true,
                        momentum=0.1, eps=1e-5}]) -> tensor
  As torch.nn.functional.instance_norm on (N, C, *): each (sample, channel) normalised over its
  own values; running statistics, when given, updated in place with the batch's mean of the
  instances' means and unbiased variances. use_input_stats=false uses the running statistics.
  Example: y = vol.instance_norm(x, {weight = w, bias = b})]==])
doc("vol.layer_norm", [==[
vol.layer_norm(x, normalized_shape [, weight [, bias [, eps=1e-5]]]) -> tensor
  As torch.nn.functional.layer_norm: normalises over the trailing dims normalized_shape (a size or
  a list, which x's last dims must equal); weight and bias of that shape, elementwise.
  Example: y = vol.layer_norm(x, {16, 16}, vol.ones({16, 16}), vol.zeros({16, 16}))]==])
doc("vol.mean", [==[
vol.mean(x [, dims [, keepdim=false]]) -> tensor
  As torch.mean; dims is a 1-based number or list, nil means all dimensions.
  Example: vol.mean(x, {2, 3, 4, 5})   -- one value per batch element]==])
doc("vol.sum", [==[
vol.sum(x [, dims [, keepdim=false]]) -> tensor
  As torch.sum over dims (float32, added in double); dims as vol.mean's, nil means all.
  t:sum() gives the whole tensor's sum as a number instead.
  Example: vol.sum(x, 2, true)   -- over the channels, as x.sum(dim=1, keepdim=True)]==])
doc("vol.conv3d_group_norm_mean", [==[
vol.conv3d_group_norm_mean(x, conv_w, conv_b, num_groups, gn_w, gn_b
                           [, {eps=1e-5, stride=, padding=, dilation=, groups=}]) -> tensor (N)
  group_norm(conv3d(x)) averaged over all but the batch dimension, in one fused pass.
  Example: y = vol.conv3d_group_norm_mean(x, w, b, 2, vol.ones({4}), vol.zeros({4}), {padding = 1})]==])

-- softmax and the reductions over dims (softmax, log_softmax, logsumexp, amax, amin, max, min)
doc("vol.softmax", [==[
vol.softmax(x, dim) -> tensor
  As torch.softmax(x, dim): exp(x - max) / sum over dim, which is 1-based (negative from the end)
  and required. float32 only (torch refuses integer tensors too). A slice holding a NaN or a +inf,
  or only -inf, is NaN throughout, as in torch.
  Example: p = vol.softmax(logits, 2)   -- over the channels, as torch.softmax(logits, dim=1)]==])
doc("vol.log_softmax", [==[
vol.log_softmax(x, dim) -> tensor
  As torch.log_softmax(x, dim): (x - max) - log(sum exp(x - max)); dim as vol.softmax's.
  Example: lp = vol.log_softmax(logits, -1)]==])
doc("vol.logsumexp", [==[
vol.logsumexp(x, dims [, keepdim=false]) -> tensor
  As torch.logsumexp: log(sum(exp(x))) over dims (a 1-based number or list, required; {} means
  all), computed stably. NaN gives NaN, a +inf +inf, only -inf (or an empty dim) -inf. An int64
  x is promoted to float32, as torch does.
  Example: vol.logsumexp(x, {3, 4, 5}, true)]==])
doc("vol.amax", [==[
vol.amax(x [, dims [, keepdim=false]]) -> tensor
  As torch.amax: the max over dims (1-based number or list; nil means all); NaN propagates.
  float32 or int64, the result of the input's dtype. Reducing over a dim of size 0 is an
  error, as in torch.
  Example: vol.amax(x, {3, 4, 5})   -- per (N, C) maximum]==])
doc("vol.amin", [==[
vol.amin(x [, dims [, keepdim=false]]) -> tensor
  As torch.amin: the min over dims; as vol.amax.
  Example: vol.amin(x, -1)]==])
doc("vol.max", [==[
vol.max(x, dim [, keepdim=false]) -> values, indices
  As torch.max(x, dim): the max over one 1-based dim and its int64 indices, 0-based as torch
  stores them (the first occurrence of the max; a NaN counts as the max and its index is given).
  float32 or int64 values, of the input's dtype.
  t:max(dim [, keepdim]) does the same; t:max() gives the whole tensor's max as a number.
  Example: v, i = vol.max(logits, 2)   -- i + 1 is the 1-based class]==])
doc("vol.min", [==[
vol.min(x, dim [, keepdim=false]) -> values, indices
  As torch.min(x, dim); as vol.max.
  Example: v, i = x:min(-1, true)]==])
-- activations and clamp (each also a method: x:gelu("tanh") is vol.gelu(x, "tanh")), maximum, minimum
section("Activations and elementwise",
        "each also a method (x:tanh() is vol.tanh(x)) but maximum, minimum and pointwise; int64 rules per function")
doc("vol.tanh", [==[
vol.tanh(x), x:tanh() -> tensor
  tanh elementwise, as torch.tanh; int64 inputs give float32.
  Example: y = vol.tanh(x)]==])
doc("vol.sigmoid", [==[
vol.sigmoid(x), x:sigmoid() -> tensor
  1 / (1 + exp(-x)) elementwise, as torch.sigmoid (sigmoid(-1000) = 0); int64 gives float32.
  Example: p = logits:sigmoid()]==])
doc("vol.exp", [==[
vol.exp(x), x:exp() -> tensor
  e^x elementwise, as torch.exp; int64 inputs give float32.
  Example: vol.exp(vol.zeros({3}))   -- ones]==])
doc("vol.log", [==[
vol.log(x), x:log() -> tensor
  The natural logarithm, as torch.log: log(0) = -inf, log(x < 0) = NaN; int64 gives float32.
  Example: vol.log(x:abs() + 1e-6)]==])
doc("vol.sqrt", [==[
vol.sqrt(x), x:sqrt() -> tensor
  The square root, as torch.sqrt: NaN for x < 0; int64 inputs give float32.
  Example: d = (a - b):abs():sqrt()]==])
doc("vol.gelu", [==[
vol.gelu(x [, approximate="none"]), x:gelu([approximate]) -> tensor
  As F.gelu: x * 0.5 * (1 + erf(x / sqrt(2))) ("none"), or the tanh approximation
  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) ("tanh"). float32 only.
  Example: y = vol.gelu(x, "tanh")]==])
doc("vol.silu", [==[
vol.silu(x), x:silu() -> tensor
  As F.silu: x / (1 + exp(-x)) (x * sigmoid(x)); NaN at -inf, as PyTorch. float32 only.
  Example: y = x:silu()]==])
doc("vol.mish", [==[
vol.mish(x), x:mish() -> tensor
  As F.mish: x * tanh(softplus(x)); NaN at -inf, as PyTorch. float32 only.
  Example: y = x:mish()]==])
doc("vol.softplus", [==[
vol.softplus(x [, beta=1 [, threshold=20]]) -> tensor
  As F.softplus: log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold.
  float32 only.
  Example: y = vol.softplus(x, 2, 10)]==])
doc("vol.elu", [==[
vol.elu(x [, alpha=1]) -> tensor
  As F.elu: x for x > 0, alpha * (exp(x) - 1) otherwise. float32 only.
  Example: y = x:elu(0.5)]==])
doc("vol.leaky_relu", [==[
vol.leaky_relu(x [, negative_slope=0.01]) -> tensor
  As F.leaky_relu: x for x > 0, negative_slope * x otherwise. float32 only.
  Example: y = x:leaky_relu(0.2)]==])
doc("vol.hardtanh", [==[
vol.hardtanh(x [, min_val=-1 [, max_val=1]]) -> tensor
  As F.hardtanh: clamp(x, min_val, max_val); on int64 the bounds are truncated to integers and
  the result stays int64, as PyTorch.
  Example: y = x:hardtanh(0, 6)   -- relu6]==])
doc("vol.hardswish", [==[
vol.hardswish(x), x:hardswish() -> tensor
  As F.hardswish: x * min(max(x + 3, 0), 6) / 6 (NaN at -inf, as PyTorch). float32 only.
  Example: y = x:hardswish()]==])
doc("vol.hardsigmoid", [==[
vol.hardsigmoid(x), x:hardsigmoid() -> tensor
  As F.hardsigmoid: min(max(x + 3, 0), 6) / 6. float32 only.
  Example: y = x:hardsigmoid()]==])
doc("vol.pointwise", [==[
vol.pointwise(x, steps) -> tensor
  The steps applied to each value of the float32 tensor x in turn, in one pass: exactly what the
  ops give one by one (x:relu() * 2 + b ...), without a pass over the tensor per op. A step is a
  name or a table {name, args...}:
    "neg", "abs", "relu", "tanh", "sigmoid", "exp", "log", "sqrt", "silu", "mish", "hardswish",
    "hardsigmoid"; {"gelu", approximate}, {"softplus", beta, threshold}, {"elu", alpha},
    {"leaky_relu", negative_slope}, {"hardtanh", min_val, max_val}, {"clamp", min, max}
    (arguments and defaults as the functions of the same names; a nil bound: none);
    {"add", v}, {"sub", v}, {"mul", v}, {"div", v}, {"maximum", v}, {"minimum", v}: x op v, v a
    number or a tensor of one value per channel that broadcasts along one dim, e.g. (C, 1, 1, 1);
    {"rsub", s}, {"rdiv", s}: s - x, s / x for a number s. At most 8 steps.
  The convolutions take the same list as their `epilogue` option.
  Example: y = vol.pointwise(x, {{"clamp", -1, nil}, {"div", 2}, {"add", bias_c111}, "tanh"})]==])
doc("vol.clamp", [==[
vol.clamp(x, min, max), x:clamp(min, max) -> tensor
  As torch.clamp: min(max(x, min), max); either bound may be nil (not both); NaN stays NaN;
  min > max gives max. int64 stays int64 with whole bounds (a fractional one gives float32).
  Example: y = x:clamp(0, nil)   -- relu; x:clamp(nil, 1)]==])
doc("vol.relu", [==[
vol.relu(x), x:relu() -> tensor
  max(x, 0) elementwise, as torch.relu (NaN stays NaN); int64 stays int64.
  Example: y = vol.relu(x)]==])
doc("vol.abs", [==[
vol.abs(x), x:abs() -> tensor
  |x| elementwise, as torch.abs.
  Example: vol.abs(a - b):max()]==])
doc("vol.maximum", [==[
vol.maximum(a, b) -> tensor
  The elementwise larger of a and b, as torch.maximum: broadcasting, NaN propagates; either may
  be a number (a 0-dim scalar); dtypes as the arithmetic's (int64 with float32 gives float32).
  Example: y = vol.maximum(x, 0)]==])
doc("vol.minimum", [==[
vol.minimum(a, b) -> tensor
  The elementwise smaller of a and b, as torch.minimum (broadcasting, NaN propagates).
  Example: y = vol.minimum(x, vol.full({1, 4, 1, 1, 1}, 2))]==])

section("Devices and math")
doc("vol.cuda_available", [==[
vol.cuda_available() -> boolean
  Whether a CUDA GPU can be used.
  Example: dev = vol.cuda_available() and "cuda" or "cpu"]==])
doc("vol.cuda_info", [==[
vol.cuda_info() -> name | nil, reason
  The GPU's name, or nil and why there is none.
  Example: print(vol.cuda_info())]==])
doc("vol.default_device", [==[
vol.default_device() -> "cpu" | "cuda"
  Where new tensors go when opts.device is absent.
  Example: vol.default_device()]==])
doc("vol.set_default_device", [==[
vol.set_default_device(device)
  Sets where new tensors go ("cpu" or "cuda").
  Example: vol.set_default_device("cuda"); x = vol.rand({8})   -- on the GPU]==])
doc("vol.sync", [==[
vol.sync()
  Waits for queued GPU work (for timing); does nothing without a GPU.
  Example: y = vol.conv3d(xg, wg); vol.sync()]==])
doc("vol.set_math", [==[
vol.set_math("fp32" | "tf32")
  "fp32" (default): float32 accuracy. "tf32": operands may be rounded to TF32 (relative
  error up to about 1e-3), like PyTorch's default for cuDNN convolutions.
  Example: vol.set_math("tf32")]==])
doc("vol.get_math", [==[
vol.get_math() -> "fp32" | "tf32"
  The current math mode.
  Example: vol.get_math()]==])
doc("vol.memory_stats", [==[
vol.memory_stats() -> {allocated=, reserved=, peak=, num_mallocs=, num_frees=,
                       prepared_weights=, prepared_bytes=}
  GPU memory use in bytes (zeros without a GPU). prepared_weights: the convolution weight
  layouts kept across calls for the tensor cores, prepared_bytes their size.
  Example: vol.memory_stats().peak / 2^20   -- MiB]==])
doc("vol.empty_cache", [==[
vol.empty_cache()
  Returns cached, unused GPU memory to the driver, and drops the kept weight layouts.
  Example: y = nil; collectgarbage(); vol.empty_cache()]==])

local topics = {
  repl = [[
The REPL
  An expression is printed (1 + 1 shows 2); a trailing ";" hides the result (y = f(x); or f(x);).
  An unfinished chunk (function ..., a "for" without "end", an open "{") continues at ">> ".
  Tab completes globals, fields and methods: vol.conv<Tab>, x:res<Tab>; Tab Tab lists choices.
  ?vol.conv3d or help(vol.conv3d) prints a function's documentation; help() lists topics.
  A command that takes 0.1 s or more shows its time, e.g. (1.23 s) (GPU work is synced first);
  require("volua.repl").time_threshold = 0 shows it always, false never.
  Ctrl-C stops a running command (back to the prompt, variables kept) or clears the line;
  Ctrl-D quits. Code typed here runs with the JIT off so that Ctrl-C can stop any loop.
  History is kept in $VOLUA_HISTORY or ~/.volua_history (1000 lines; VOLUA_HISTORY= turns it off).
  Locals last one line only: write "x = ..." rather than "local x = ..." to keep a value.]],
  nn = [[
The nn library: nn = require "volua.nn"
  Modules as torch.nn: nn.Conv3d, nn.ConvTranspose3d, nn.MaxPool3d, nn.GroupNorm, nn.ReLU,
  nn.Sequential, nn.BatchNorm3d, nn.InstanceNorm3d, nn.LayerNorm, nn.AvgPool3d,
  nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool3d; m:train() / m:eval() switch
  training mode (m.training); m(x) runs a module, m:cuda()/m:cpu() move it, m:state_dict() and
  m:load_state_dict(vol.load_safetensors("model.safetensors")) use PyTorch's key names.
  help(nn.Conv3d) (after require "volua.nn") prints a class's constructor.]],
}

-- -- registered texts (nn classes, user functions) ----

local registered = setmetatable({}, {__mode = "k"}) -- function or table -> text
local registered_order = {}

-- Adds (or replaces) the documentation of a function or a table (a class); help(obj) and
-- help(instance of the class) print it.
function M.register(obj, text)
  local t = type(obj)
  if t ~= "function" and t ~= "table" and t ~= "userdata" then
    error("help.register: expected a function or a table, got " .. t, 2)
  end
  if type(text) ~= "string" then error("help.register: text must be a string, got " .. type(text), 2) end
  if not registered[obj] then registered_order[#registered_order + 1] = setmetatable({obj}, {__mode = "v"}) end
  registered[obj] = text:gsub("%s+$", "")
end

-- -- lookups ----

local function vol_module()
  local ok, vol = pcall(require, "volua")
  return ok and type(vol) == "table" and vol or {}
end

-- The value a documented name stands for now (nil for fields such as Tensor.shape).
local function value_of(vol, name)
  local owner, sep, key = name:match("^(%a+)([.:])([%w_]+)$")
  if owner == "vol" then return rawget(vol, key) end
  if owner == "Tensor" and sep == ":" and type(rawget(vol, "Tensor")) == "table" then
    return rawget(vol.Tensor, key)
  end
  return nil
end

-- function value -> documented name, rebuilt when asked (other modules add functions to vol).
local function names_by_value()
  local vol, map = vol_module(), {}
  for name in pairs(texts) do
    local v = value_of(vol, name)
    if v ~= nil and map[v] == nil then map[v] = name end
  end
  return map
end

local libraries = {"string", "table", "math", "io", "os", "debug", "coroutine", "package", "jit", "bit"}

-- Standard functions by value ("print", "string.format"), built once.
local standard_names
local function standard_name(f)
  if not standard_names then
    standard_names = {}
    for k, v in pairs(_G) do
      if type(v) == "function" and type(k) == "string" then standard_names[v] = k end
    end
    for _, lib in ipairs(libraries) do
      local t = rawget(_G, lib)
      if type(t) == "table" then
        for k, v in pairs(t) do
          if type(v) == "function" and type(k) == "string" then standard_names[v] = lib .. "." .. k end
        end
      end
    end
  end
  return standard_names[f]
end

-- The documented name of a function, or the name of a standard Lua function, or nil
-- ("vol.conv3d", "string.format"); pretty-printing uses it.
function M.name_of(f)
  return names_by_value()[f] or standard_name(f)
end

-- Finds a text by a typed name: "conv3d", "vol.conv3d", "reshape", "x:reshape", "Tensor.shape".
local function text_by_name(name)
  name = name:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%(%)$", "")
  if texts[name] then return texts[name] end
  local lower = name:lower()
  if topics[lower] then return topics[lower] end
  local last = name:match("([%w_]+)$")
  if not last then return nil end
  return texts["vol." .. last] or texts["Tensor:" .. last] or texts["Tensor." .. last]
end

local function registered_text(v)
  if registered[v] then return registered[v] end
  -- an instance: its class (metatable or __index chain) may be registered
  local seen = {}
  local mt = debug.getmetatable(v)
  while type(mt) == "table" and not seen[mt] do
    seen[mt] = true
    if registered[mt] then return registered[mt] end
    local idx = rawget(mt, "__index")
    if type(idx) == "table" and registered[idx] then return registered[idx] end
    mt = type(idx) == "table" and debug.getmetatable(idx) or nil
  end
  return nil
end

local function is_tensor(v, vol)
  local mt = debug.getmetatable(v)
  return type(v) == "userdata" and type(mt) == "table" and rawget(mt, "__methods") ~= nil
    and rawget(mt, "__methods") == rawget(vol, "Tensor")
end

local function sorted_keys(t, filter)
  local keys = {}
  for k, v in pairs(t) do
    if type(k) == "string" and (not filter or filter(k, v)) then keys[#keys + 1] = k end
  end
  table.sort(keys)
  return keys
end

-- Words wrapped to lines of at most width columns, each line starting with indent.
local function wrap(words, indent, width)
  local lines, line = {}, indent
  for _, w in ipairs(words) do
    if #line + #w + 1 > width and #line > #indent then
      lines[#lines + 1] = line
      line = indent
    end
    line = line .. (#line > #indent and " " or "") .. w
  end
  if #line > #indent then lines[#lines + 1] = line end
  return table.concat(lines, "\n")
end

-- -- the texts help() prints ----

function M.topics(width)
  width = width or 80
  local vol = vol_module()
  local out = {"help(f) or ?f prints the documentation of f, e.g. ?vol.conv3d, ?x:reshape, help(\"conv3d\")."}
  for _, s in ipairs(sections) do
    local words = {}
    for _, name in ipairs(s.names) do
      local present = value_of(vol, name) ~= nil or name:match("^Tensor%.")
      if present then words[#words + 1] = name:gsub("^vol%.", ""):gsub("^Tensor[:.]", "") end
    end
    if #words > 0 then
      out[#out + 1] = s.title .. (s.note and " (" .. s.note .. ")" or "") .. ":"
      out[#out + 1] = wrap(words, "  ", width)
    end
  end
  local reg = {}
  for _, cell in ipairs(registered_order) do
    local obj = cell[1]
    if obj ~= nil and registered[obj] then
      reg[#reg + 1] = registered[obj]:match("^([%w_.:]+)") or tostring(obj)
    end
  end
  if #reg > 0 then
    out[#out + 1] = "Registered (help(name) after require):"
    out[#out + 1] = wrap(reg, "  ", width)
  end
  out[#out + 1] = "More: help(\"repl\") for the REPL's keys and settings, help(\"nn\") for the nn library."
  return table.concat(out, "\n")
end

local function describe_tensor(t, vol)
  local ok, s = pcall(tostring, t)
  local head = ok and s:match("^[^\n]*") or "a tensor"
  local methods = sorted_keys(vol.Tensor, function(k) return not k:match("^_") end)
  return head .. "\n" ..
    "Fields: shape, dtype, device. Operators: + - * / and unary -.\n" ..
    "Methods (?Tensor:name for one):\n" .. wrap(methods, "  ", 80)
end

-- The help text for a value (and the expression typed for it, used when the value is nil).
function M.text(v, expr)
  local vol = vol_module()
  if v == nil and expr == nil then return "help: got nil; help() lists topics" end
  if type(v) == "string" then
    return text_by_name(v) or ("no help for " .. string.format("%q", v) .. "; help() lists topics")
  end
  if v == vol then return M.topics() end
  local r = registered_text(v)
  if r then return r end
  local name = names_by_value()[v]
  if name then return texts[name] end
  if is_tensor(v, vol) then return describe_tensor(v, vol) end
  if v == nil and expr then
    local by_name = text_by_name(expr)
    if by_name then return by_name end
  end
  local what = expr and ("'" .. expr .. "'") or tostring(v)
  if v == nil then return "no help for " .. what .. ": it is nil here; help() lists topics" end
  if type(v) == "function" then
    local info = debug.getinfo(v, "S")
    if info and info.what == "Lua" then
      return "no documentation for " .. what .. " (a Lua function defined at " ..
        info.short_src .. ":" .. tostring(info.linedefined) .. ")"
    end
    if standard_name(v) then
      return standard_name(v) .. " is a standard Lua function: see the Lua 5.1 manual, section 5\n" ..
        "  (https://www.lua.org/manual/5.1/manual.html#5)"
    end
    return "no documentation for " .. what .. " (a C function)"
  end
  if type(v) == "table" then
    local keys = sorted_keys(v, function(k) return not k:match("^__") end)
    if #keys == 0 then return what .. " is a table without named fields" end
    return what .. " is a table with fields:\n" .. wrap(keys, "  ", 80)
  end
  return what .. " is a " .. type(v) .. "; help() lists topics"
end

-- help(v [, expr]): prints the documentation of v (a function, class, tensor or name).
function M.help(...)
  if select("#", ...) == 0 then
    io.write(M.topics(), "\n")
  else
    io.write(M.text(...), "\n")
  end
end

registered[M.help] = [==[
help([f])
  Prints the documentation of f (a function, an nn class or module, a tensor, or a name
  such as "conv3d"); with no argument, the list of topics. ?f at the prompt is help(f).
  Example: help(vol.conv3d)]==]

M.texts = texts -- read-only use: the specs check that every API.md function has a text

return M
