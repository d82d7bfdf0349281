-- volua.nn: PyTorch-style modules (Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d,
-- AdaptiveAvgPool3d, AdaptiveMaxPool3d, GroupNorm, BatchNorm3d,
-- InstanceNorm3d, LayerNorm, ReLU, Mean, Sequential) over vol's ops, with PyTorch's constructor arguments, defaults, initialisation,
-- repr and state_dict key names, so that weights saved by
-- safetensors.torch.save_file(model.state_dict(), path) load with
-- m:load_state_dict(vol.load_safetensors(path)).
--
-- The fused path: Sequential:forward runs three consecutive children Conv3d -> GroupNorm ->
-- Mean (a Mean over every dim but the batch, keepdim false, on a 5-D input) as one call to
-- vol.conv3d_group_norm_mean, which never stores the convolution's output.
-- Sequential:forward_mean(x) does the same for a Sequential that ends in Conv3d -> GroupNorm
-- and returns the per-sample mean (N). Setting `m.fuse = false` on a Sequential runs the three
-- ops one by one instead (same numbers within float32 rounding).
-- Sequential:forward also runs the pointwise modules (ReLU, LeakyReLU, Tanh, GELU, ...) that
-- follow a Conv3d or ConvTranspose3d as the convolution's epilogue (vol.conv3d's `epilogue`
-- option: the same numbers to the bit, without a pass over the output per module); `m.fuse =
-- false` turns that off too.
local vol = require "volua"

local nn = {}

-- -- small helpers ----

local function is_int(v)
  return type(v) == "number" and v == math.floor(v) and v > -2^53 and v < 2^53
end

local tensor_mt = getmetatable(vol.zeros({1}, {device = "cpu"}))
local function is_tensor(v)
  return type(v) == "userdata" and getmetatable(v) == tensor_mt
end

local function same_shape(a, b)
  local sa, sb = a.shape, b.shape
  if #sa ~= #sb then return false end
  for i = 1, #sa do
    if sa[i] ~= sb[i] then return false end
  end
  return true
end

-- Python's repr of a float: the shortest %g that reads back the same, with ".0" on integers.
local function float_repr(x)
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  local s
  for p = 1, 17 do
    s = string.format("%." .. p .. "g", x)
    if tonumber(s) == x then break end
  end
  if not s:find("[%.e]") then s = s .. ".0" end
  return s
end

-- Python's repr of an argument as PyTorch prints it: tuples "(3, 3, 3)", True/False, names.
local function py(v)
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = py(x) end
    if #parts == 1 then return "(" .. parts[1] .. ",)" end
    return "(" .. table.concat(parts, ", ") .. ")"
  elseif type(v) == "boolean" then
    return v and "True" or "False"
  elseif type(v) == "number" then
    return is_int(v) and string.format("%d", v) or float_repr(v)
  end
  return tostring(v)
end

local function shape_str(t)
  return py(t.shape)
end

-- A per-dimension argument (number or {d, h, w}) as a 3-table, checked, for the module named.
local function triple(name, key, v, min)
  if type(v) == "number" then v = {v, v, v} end
  if type(v) ~= "table" or (#v ~= 1 and #v ~= 3) then
    error(string.format("%s: %s must be a number or a table of 3 numbers {d, h, w}, got %s",
                        name, key, type(v) == "table" and ("a table of " .. #v) or type(v)), 0)
  end
  if #v == 1 then v = {v[1], v[1], v[1]} end
  local out = {}
  for i = 1, 3 do
    if not is_int(v[i]) then
      error(string.format("%s: %s[%d] must be an integer, got %s", name, key, i, tostring(v[i])), 0)
    end
    if v[i] < min then
      error(string.format("%s: %s must be at least %d, got %s", name, key, min, py(v)), 0)
    end
    out[i] = v[i]
  end
  return out
end

local function check_count(name, key, v, min)
  if not is_int(v) then
    error(string.format("%s: %s must be an integer, got %s", name, key,
                        type(v) == "number" and tostring(v) or type(v)), 0)
  end
  if v < min then
    error(string.format("%s: %s must be at least %d, got %d", name, key, min, v), 0)
  end
  return v
end

-- Options must be a table of known names (PyTorch rejects unknown keyword arguments).
local function check_opts(name, opts, known)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error(string.format("%s: options must be a table, got %s", name, type(opts)), 0)
  end
  for k in pairs(opts) do
    if type(k) ~= "string" or not known[k] then
      error(string.format("%s: unknown option '%s'", name, tostring(k)), 0)
    end
  end
  return opts
end

local function set_of(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

-- Makes parameter pname of module `name` with f(...): a failure (a bad device, a shape too
-- large to count or to allocate) is raised again naming the module and the parameter.
local function make_param(name, pname, shape, f, ...)
  local ok, t = pcall(f, ...)
  if not ok then
    error(string.format("%s: cannot create %s of shape %s: %s", name, pname, py(shape), tostring(t)), 0)
  end
  return t
end

-- uniform(-bound, bound) of the given shape: from opts.seed when given (reproducible, and
-- independent of other modules), else from vol's generator (vol.manual_seed).
local function uniform(shape, bound, seed, device)
  local r = vol.rand(shape, {seed = seed, device = device})
  return r * (2 * bound) - bound
end

-- -- Module: what every module shares ----

local Module = {}
Module.__index = Module
nn.Module = Module

-- Makes a class: methods are looked up in the class, then in Module; the metamethods that
-- Lua does not look up through __index (__call, __tostring) are copied in. Your own module:
--   local Scale = nn.class("Scale")
--   function Scale.new(s) local self = nn.instance(Scale); self.s = s; return self end
--   function Scale:forward(x) return x * self.s end
--   function Scale:extra_repr() return tostring(self.s) end
-- (parameters: set self.weight = tensor and self._param_names = {"weight"}; buffers, which
-- state_dict holds but parameters() does not, likewise in self._buffer_names).
local function class(name)
  local c = {}
  c.__index = c
  c.__name = name
  c.__call = function(self, ...) return self:forward(...) end
  c.__tostring = function(self) return self:repr() end
  return setmetatable(c, {__index = Module})
end
nn.class = class

-- A new instance of class c: no parameters (_param_names lists them, in order), buffers
-- (_buffer_names) nor children; in training mode, as torch's modules start (m:train(), m:eval()).
local function new(c)
  return setmetatable({_param_names = {}, _buffer_names = {}, _children = {}, training = true}, c)
end
nn.instance = new

function Module:forward()
  error(getmetatable(self).__name .. ": forward is not implemented", 0)
end

-- What goes inside "Name(...)" in the repr (PyTorch's extra_repr).
function Module:extra_repr() return "" end

-- PyTorch's repr: "Name(extra)" or, with children, one indented "(name): child" per line.
function Module:repr()
  local name = getmetatable(self).__name
  local lines = {}
  local extra = self:extra_repr()
  if extra ~= "" then lines[#lines + 1] = extra end
  for _, ch in ipairs(self._children) do
    local s = tostring(ch.module):gsub("\n", "\n  ")
    lines[#lines + 1] = "(" .. ch.name .. "): " .. s
  end
  if #self._children == 0 then return name .. "(" .. (lines[1] or "") .. ")" end
  return name .. "(\n  " .. table.concat(lines, "\n  ") .. "\n)"
end

-- Ordered list of {name, tensor} over this module's parameters then its children's, with
-- PyTorch's dotted names ("0.weight", "conv.bias").
function Module:named_parameters(prefix, out)
  prefix, out = prefix or "", out or {}
  for _, p in ipairs(self._param_names) do
    if self[p] ~= nil then out[#out + 1] = {prefix .. p, self[p]} end
  end
  for _, ch in ipairs(self._children) do
    ch.module:named_parameters(prefix .. ch.name .. ".", out)
  end
  return out
end

function Module:parameters()
  local out = {}
  for i, np in ipairs(self:named_parameters()) do out[i] = np[2] end
  return out
end

-- Ordered list of {name, tensor} over this module's buffers (BatchNorm3d's running_mean,
-- running_var, num_batches_tracked) then its children's, with PyTorch's dotted names.
function Module:named_buffers(prefix, out)
  prefix, out = prefix or "", out or {}
  for _, b in ipairs(self._buffer_names or {}) do
    if self[b] ~= nil then out[#out + 1] = {prefix .. b, self[b]} end
  end
  for _, ch in ipairs(self._children) do
    ch.module:named_buffers(prefix .. ch.name .. ".", out)
  end
  return out
end

function Module:buffers()
  local out = {}
  for i, nb in ipairs(self:named_buffers()) do out[i] = nb[2] end
  return out
end

-- The state_dict's entries in torch's order: each module's parameters, then its buffers, then its
-- children's. An entry is {name, tensor, optional}: optional ones (a module's _optional_buffers)
-- may be missing from a loaded table, as torch lets num_batches_tracked be.
local function named_state(m, prefix, out)
  for _, p in ipairs(m._param_names) do
    if m[p] ~= nil then out[#out + 1] = {prefix .. p, m[p], false} end
  end
  for _, b in ipairs(m._buffer_names or {}) do
    if m[b] ~= nil then out[#out + 1] = {prefix .. b, m[b], (m._optional_buffers or {})[b] == true} end
  end
  for _, ch in ipairs(m._children) do named_state(ch.module, prefix .. ch.name .. ".", out) end
  return out
end

-- Training mode (mode true, the default) or evaluation mode (false) for this module and every
-- module under it, as torch's train(); returns the module. m.training says which.
function Module:train(mode)
  if mode == nil then mode = true end
  if type(mode) ~= "boolean" then
    error("train: training mode is expected to be boolean, got " .. type(mode), 0)
  end
  self.training = mode
  for _, ch in ipairs(self._children) do ch.module:train(mode) end
  return self
end

-- m:train(false), as torch's eval().
function Module:eval() return self:train(false) end

-- Ordered list of {name, module} of the direct children.
function Module:named_children()
  local out = {}
  for i, ch in ipairs(self._children) do out[i] = {ch.name, ch.module} end
  return out
end

function Module:children()
  local out = {}
  for i, ch in ipairs(self._children) do out[i] = ch.module end
  return out
end

-- A flat table {[name] = tensor} with PyTorch's keys, parameters and buffers; the tensors are
-- the module's own (not copies), as PyTorch's state_dict. state_dict_keys() gives the keys in order.
function Module:state_dict()
  local sd = {}
  for _, e in ipairs(named_state(self, "", {})) do sd[e[1]] = e[2] end
  return sd
end

function Module:state_dict_keys()
  local keys = {}
  for i, e in ipairs(named_state(self, "", {})) do keys[i] = e[1] end
  return keys
end

local function quoted_list(keys)
  local q = {}
  for i, k in ipairs(keys) do q[i] = '"' .. k .. '"' end
  return table.concat(q, ", ")
end

-- Copies tensors of tbl into the parameters of the same names (values converted to the
-- parameter's dtype and moved to its device). Every problem is collected first and reported
-- by name, as PyTorch does, and nothing is copied unless all is well: size mismatches always
-- raise; missing and unexpected keys raise when strict (the default), and are otherwise
-- returned as {missing_keys = {...}, unexpected_keys = {...}}.
function Module:load_state_dict(tbl, opts)
  opts = check_opts("load_state_dict", opts, {strict = true})
  local strict = opts.strict ~= false
  if type(tbl) ~= "table" then
    error("load_state_dict: state_dict must be a table {[name] = tensor}, got " .. type(tbl), 0)
  end
  local params = named_state(self, "", {})
  local expected = {}
  local missing, unexpected, errors = {}, {}, {}
  for _, np in ipairs(params) do
    local name, p = np[1], np[2]
    expected[name] = true
    local v = tbl[name]
    if v == nil then
      if not np[3] then missing[#missing + 1] = name end
    elseif not is_tensor(v) then
      errors[#errors + 1] = string.format('value for "%s" must be a tensor, got %s', name, type(v))
    elseif v.shape == nil then -- a freed tensor: no shape to compare, nothing to copy
      errors[#errors + 1] = string.format('value for "%s" is a freed tensor', name)
    elseif not same_shape(v, p) then
      errors[#errors + 1] = string.format(
        "size mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model is %s.",
        name, shape_str(v), shape_str(p))
    end
  end
  for k in pairs(tbl) do
    if not expected[k] then unexpected[#unexpected + 1] = tostring(k) end
  end
  table.sort(unexpected)
  if strict then
    if #unexpected > 0 then
      table.insert(errors, 1, "Unexpected key(s) in state_dict: " .. quoted_list(unexpected) .. ".")
    end
    if #missing > 0 then
      table.insert(errors, 1, "Missing key(s) in state_dict: " .. quoted_list(missing) .. ".")
    end
  end
  if #errors > 0 then
    error(string.format("load_state_dict: Error(s) in loading state_dict for %s:\n\t%s",
                        getmetatable(self).__name, table.concat(errors, "\n\t")), 0)
  end
  for _, np in ipairs(params) do
    local v = tbl[np[1]]
    if v ~= nil then np[2]:copy(v) end
  end
  return {missing_keys = missing, unexpected_keys = unexpected}
end

-- Moves every parameter and buffer to dev ("cpu" or "cuda"); returns the module, as PyTorch's .to().
function Module:to(dev)
  for _, p in ipairs(self._param_names) do
    if self[p] ~= nil and self[p].device ~= dev then self[p] = self[p]:to(dev) end
  end
  for _, b in ipairs(self._buffer_names or {}) do
    if self[b] ~= nil and self[b].device ~= dev then self[b] = self[b]:to(dev) end
  end
  for _, ch in ipairs(self._children) do ch.module:to(dev) end
  return self
end

function Module:cuda() return self:to("cuda") end
function Module:cpu() return self:to("cpu") end

-- The device of the first parameter, else of the first buffer (nil for a module without any).
function Module:device()
  local ps = self:parameters()
  if ps[1] then return ps[1].device end
  local bs = self:buffers()
  return bs[1] and bs[1].device or nil
end

-- -- Conv3d ----

local conv_opts = set_of {"stride", "padding", "dilation", "groups", "bias", "padding_mode", "seed",
                          "device"}
local padding_modes = set_of {"zeros", "reflect", "replicate", "circular"}

-- Arguments shared by Conv3d and ConvTranspose3d, checked as PyTorch's _ConvNd does.
local function conv_init(self, name, in_channels, out_channels, kernel_size, opts)
  self.in_channels = check_count(name, "in_channels", in_channels, 1)
  self.out_channels = check_count(name, "out_channels", out_channels, 1)
  if kernel_size == nil then error(name .. ": kernel_size is required", 0) end
  self.kernel_size = triple(name, "kernel_size", kernel_size, 1)
  self.stride = triple(name, "stride", opts.stride or 1, 1)
  self.dilation = triple(name, "dilation", opts.dilation or 1, 1)
  self.groups = check_count(name, "groups", opts.groups or 1, 1)
  if in_channels % self.groups ~= 0 then
    error(string.format("%s: in_channels (%d) must be divisible by groups (%d)", name,
                        in_channels, self.groups), 0)
  end
  if out_channels % self.groups ~= 0 then
    error(string.format("%s: out_channels (%d) must be divisible by groups (%d)", name,
                        out_channels, self.groups), 0)
  end
  if opts.bias ~= nil and type(opts.bias) ~= "boolean" then
    error(string.format("%s: bias must be true or false, got %s", name, type(opts.bias)), 0)
  end
  self.padding_mode = opts.padding_mode or "zeros"
  if not padding_modes[self.padding_mode] then
    error(string.format("%s: padding_mode must be one of 'zeros', 'reflect', 'replicate', " ..
                        "'circular', but got padding_mode='%s'", name, tostring(self.padding_mode)), 0)
  end
  if opts.seed ~= nil and not is_int(opts.seed) then
    error(string.format("%s: seed must be an integer, got %s", name, tostring(opts.seed)), 0)
  end
end

-- PyTorch's reset_parameters: kaiming_uniform_(weight, a=sqrt(5)) gives
-- bound = gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)), i.e. 1/sqrt(fan_in),
-- where fan_in = weight.size(1) * prod(kernel); the bias is uniform(-1/sqrt(fan_in), ...) too.
local function conv_reset(self, wshape, bias, seed, device)
  local name = getmetatable(self).__name
  local fan_in = wshape[2] * wshape[3] * wshape[4] * wshape[5]
  local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
  self.weight = make_param(name, "weight", wshape, uniform, wshape, bound, seed, device)
  if bias ~= false then
    self.bias = make_param(name, "bias", {self.out_channels}, uniform, {self.out_channels}, bound,
                           seed and seed + 1, device)
  end
  self._param_names = {"weight", "bias"}
end

local function conv_extra_repr(self)
  local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
                          py(self.kernel_size), py(self.stride))
  local function all(t, v) return t[1] == v and t[2] == v and t[3] == v end
  if type(self.padding) == "string" then s = s .. ", padding=" .. self.padding
  elseif not all(self.padding, 0) then s = s .. ", padding=" .. py(self.padding) end
  if not all(self.dilation, 1) then s = s .. ", dilation=" .. py(self.dilation) end
  if self.output_padding and not all(self.output_padding, 0) then
    s = s .. ", output_padding=" .. py(self.output_padding)
  end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if self.bias == nil then s = s .. ", bias=False" end
  if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
  return s
end

local Conv3d = class("Conv3d")
nn.Conv3d = Conv3d

-- nn.Conv3d(in_channels, out_channels, kernel_size [, {stride=1, padding=0, dilation=1,
-- groups=1, bias=true, padding_mode="zeros", seed=, device=}])
function Conv3d.new(in_channels, out_channels, kernel_size, opts)
  local name = "Conv3d"
  opts = check_opts(name, opts, conv_opts)
  local self = new(Conv3d)
  conv_init(self, name, in_channels, out_channels, kernel_size, opts)
  local padding = opts.padding or 0
  if type(padding) == "string" then
    if padding ~= "same" and padding ~= "valid" then
      error(string.format("%s: invalid padding string '%s', should be one of {'valid', 'same'}",
                          name, padding), 0)
    end
    if padding == "same" then
      for i = 1, 3 do
        if self.stride[i] ~= 1 then
          error(name .. ": padding='same' is not supported for strided convolutions", 0)
        end
      end
    end
    self.padding = padding
  else
    self.padding = triple(name, "padding", padding, 0)
  end
  local k = self.kernel_size
  conv_reset(self, {out_channels, in_channels / self.groups, k[1], k[2], k[3]}, opts.bias,
             opts.seed, opts.device)
  return self
end

-- The options of vol.conv3d for this module.
function Conv3d:conv_args()
  return {stride = self.stride, padding = self.padding, dilation = self.dilation,
          groups = self.groups, padding_mode = self.padding_mode}
end

-- epilogue: vol.conv3d's option (a list of pointwise steps applied to the output), or nil.
function Conv3d:forward(x, epilogue)
  local a = self:conv_args()
  a.epilogue = epilogue
  return vol.conv3d(x, self.weight, self.bias, a)
end

Conv3d.extra_repr = conv_extra_repr

-- -- ConvTranspose3d ----

local ConvTranspose3d = class("ConvTranspose3d")
nn.ConvTranspose3d = ConvTranspose3d

local convt_opts = set_of {"stride", "padding", "output_padding", "dilation", "groups", "bias",
                           "padding_mode", "seed", "device"}

-- nn.ConvTranspose3d(in_channels, out_channels, kernel_size [, {stride=1, padding=0,
-- output_padding=0, groups=1, bias=true, dilation=1, padding_mode="zeros", seed=, device=}])
function ConvTranspose3d.new(in_channels, out_channels, kernel_size, opts)
  local name = "ConvTranspose3d"
  opts = check_opts(name, opts, convt_opts)
  local self = new(ConvTranspose3d)
  conv_init(self, name, in_channels, out_channels, kernel_size, opts)
  if self.padding_mode ~= "zeros" then
    error(string.format('%s: only "zeros" padding mode is supported, got "%s"', name,
                        self.padding_mode), 0)
  end
  if type(opts.padding) == "string" then
    error(string.format("%s: padding must be a number or {d, h, w}, got '%s'", name, opts.padding), 0)
  end
  self.padding = triple(name, "padding", opts.padding or 0, 0)
  self.output_padding = triple(name, "output_padding", opts.output_padding or 0, 0)
  for i = 1, 3 do -- PyTorch checks this when computing the output size; it is fixed here
    if self.output_padding[i] >= self.stride[i] and self.output_padding[i] >= self.dilation[i] then
      error(string.format("%s: output_padding %s must be smaller than either stride %s or dilation %s",
                          name, py(self.output_padding), py(self.stride), py(self.dilation)), 0)
    end
  end
  local k = self.kernel_size
  conv_reset(self, {in_channels, out_channels / self.groups, k[1], k[2], k[3]}, opts.bias,
             opts.seed, opts.device)
  return self
end

-- epilogue: as Conv3d:forward's.
function ConvTranspose3d:forward(x, epilogue)
  return vol.conv_transpose3d(x, self.weight, self.bias, {
    stride = self.stride, padding = self.padding, output_padding = self.output_padding,
    dilation = self.dilation, groups = self.groups, epilogue = epilogue})
end

ConvTranspose3d.extra_repr = conv_extra_repr

-- -- MaxPool3d ----

local MaxPool3d = class("MaxPool3d")
nn.MaxPool3d = MaxPool3d

local pool_opts = set_of {"stride", "padding", "dilation", "return_indices", "ceil_mode"}

-- What the window pools (MaxPool3d, AvgPool3d) share: kernel_size (required), stride
-- (kernel_size by default) and padding (0) checked and kept in self as given, and the boolean
-- options named in flags checked.
local function pool_window_args(name, self, kernel_size, opts, flags)
  if kernel_size == nil then error(name .. ": kernel_size is required", 0) end
  triple(name, "kernel_size", kernel_size, 1)
  self.kernel_size = kernel_size
  self.stride = opts.stride or kernel_size
  triple(name, "stride", self.stride, 1)
  self.padding = opts.padding or 0
  triple(name, "padding", self.padding, 0)
  for _, k in ipairs(flags) do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(string.format("%s: %s must be true or false, got %s", name, k, type(opts[k])), 0)
    end
  end
end

-- nn.MaxPool3d(kernel_size [, {stride=kernel_size, padding=0, dilation=1,
-- return_indices=false, ceil_mode=false}]). The arguments are kept as given (PyTorch's repr
-- prints "kernel_size=2" for 2 and "(2, 2, 2)" for a tuple); vol.max_pool3d checks them
-- against the input at forward time.
function MaxPool3d.new(kernel_size, opts)
  local name = "MaxPool3d"
  opts = check_opts(name, opts, pool_opts)
  local self = new(MaxPool3d)
  pool_window_args(name, self, kernel_size, opts, {"return_indices", "ceil_mode"})
  self.dilation = opts.dilation or 1
  triple(name, "dilation", self.dilation, 1)
  self.return_indices = opts.return_indices == true
  self.ceil_mode = opts.ceil_mode == true
  return self
end

-- The output, and the int64 indices with return_indices.
function MaxPool3d:forward(x)
  return vol.max_pool3d(x, {kernel_size = self.kernel_size, stride = self.stride,
                            padding = self.padding, dilation = self.dilation,
                            ceil_mode = self.ceil_mode, return_indices = self.return_indices})
end

function MaxPool3d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s",
                       py(self.kernel_size), py(self.stride), py(self.padding), py(self.dilation),
                       py(self.ceil_mode))
end

-- -- GroupNorm ----

local GroupNorm = class("GroupNorm")
nn.GroupNorm = GroupNorm

-- nn.GroupNorm(num_groups, num_channels [, {eps=1e-5, affine=true, device=}]):
-- weight ones and bias zeros (num_channels each) when affine.
function GroupNorm.new(num_groups, num_channels, opts)
  local name = "GroupNorm"
  opts = check_opts(name, opts, set_of {"eps", "affine", "device"})
  local self = new(GroupNorm)
  self.num_groups = check_count(name, "num_groups", num_groups, 1)
  self.num_channels = check_count(name, "num_channels", num_channels, 1)
  if num_channels % num_groups ~= 0 then
    error(string.format("%s: num_channels (%d) must be divisible by num_groups (%d)", name,
                        num_channels, num_groups), 0)
  end
  self.eps = opts.eps or 1e-5
  -- vol.group_norm refuses NaN, infinite and negative eps; say so when the module is made
  if type(self.eps) ~= "number" or not (self.eps >= 0 and self.eps < math.huge) then
    error(string.format("%s: eps must be a finite non-negative number, got %s", name, tostring(self.eps)), 0)
  end
  if opts.affine ~= nil and type(opts.affine) ~= "boolean" then
    error(string.format("%s: affine must be true or false, got %s", name, type(opts.affine)), 0)
  end
  self.affine = opts.affine ~= false
  if self.affine then
    self.weight = make_param(name, "weight", {num_channels}, vol.ones, {num_channels}, {device = opts.device})
    self.bias = make_param(name, "bias", {num_channels}, vol.zeros, {num_channels}, {device = opts.device})
    self._param_names = {"weight", "bias"}
  end
  return self
end

function GroupNorm:forward(x)
  return vol.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
end

function GroupNorm:extra_repr()
  return string.format("%d, %d, eps=%s, affine=%s", self.num_groups, self.num_channels,
                       float_repr(self.eps), py(self.affine))
end

-- -- BatchNorm3d, InstanceNorm3d (torch's _NormBase), LayerNorm ----

-- The arguments torch's _NormBase takes, checked; weight ones and bias zeros when affine, buffers
-- running_mean zeros, running_var ones and num_batches_tracked (int64, 0-D) 0 when
-- track_running_stats. momentum = false stands for Python's None (a nil field is no field).
local function norm_base_init(self, name, num_features, opts, affine_default, track_default)
  opts = check_opts(name, opts, set_of {"eps", "momentum", "affine", "track_running_stats", "device"})
  self.num_features = check_count(name, "num_features", num_features, 0)
  self.eps = opts.eps or 1e-5
  if type(self.eps) ~= "number" or not (self.eps >= 0 and self.eps < math.huge) then
    error(string.format("%s: eps must be a finite non-negative number, got %s", name, tostring(self.eps)), 0)
  end
  local momentum = opts.momentum
  if momentum == nil then momentum = 0.1 end
  if momentum ~= false and type(momentum) ~= "number" then
    error(string.format("%s: momentum must be a number or false (None: a cumulative average), got %s",
                        name, type(momentum)), 0)
  end
  self.momentum = momentum or nil
  for _, k in ipairs {"affine", "track_running_stats"} do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(string.format("%s: %s must be true or false, got %s", name, k, type(opts[k])), 0)
    end
  end
  if opts.affine == nil then self.affine = affine_default else self.affine = opts.affine end
  if opts.track_running_stats == nil then self.track_running_stats = track_default
  else self.track_running_stats = opts.track_running_stats end
  local C, dev = {num_features}, {device = opts.device}
  if self.affine then
    self.weight = make_param(name, "weight", C, vol.ones, C, dev)
    self.bias = make_param(name, "bias", C, vol.zeros, C, dev)
    self._param_names = {"weight", "bias"}
  end
  if self.track_running_stats then
    self.running_mean = make_param(name, "running_mean", C, vol.zeros, C, dev)
    self.running_var = make_param(name, "running_var", C, vol.ones, C, dev)
    self.num_batches_tracked = make_param(name, "num_batches_tracked", {}, vol.zeros, {},
                                          {dtype = "int64", device = opts.device})
    self._buffer_names = {"running_mean", "running_var", "num_batches_tracked"}
  end
end

local function norm_base_repr(self)
  return string.format("%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s", self.num_features,
                       float_repr(self.eps), self.momentum == nil and "None" or float_repr(self.momentum),
                       py(self.affine), py(self.track_running_stats))
end

local BatchNorm3d = class("BatchNorm3d")
nn.BatchNorm3d = BatchNorm3d

-- nn.BatchNorm3d(num_features [, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true,
-- device=}]); momentum = false: a cumulative average (torch's None).
function BatchNorm3d.new(num_features, opts)
  local self = new(BatchNorm3d)
  norm_base_init(self, "BatchNorm3d", num_features, opts, true, true)
  -- torch fills in a checkpoint's missing num_batches_tracked (state_dicts from before it existed)
  self._optional_buffers = {num_batches_tracked = true}
  return self
end

-- torch's _BatchNorm.forward: in training, num_batches_tracked counts the batch (before the op runs)
-- and with momentum None the running statistics take the cumulative average 1 / num_batches_tracked;
-- the batch's statistics are used in training, and in eval where there are no running ones.
function BatchNorm3d:forward(x)
  if not is_tensor(x) then error("BatchNorm3d: input must be a tensor, got " .. type(x), 0) end
  if x:dim() ~= 5 then
    error(string.format("BatchNorm3d: expected 5D input (got %dD input)", x:dim()), 0)
  end
  local factor = self.momentum or 0.0
  if self.training and self.track_running_stats and self.num_batches_tracked ~= nil then
    local nbt = self.num_batches_tracked
    if self.momentum == nil then -- the count is needed here (torch reads it back too)
      local count = nbt:item() + 1
      nbt:fill(count)
      factor = 1.0 / count
    else -- counted on its device: reading it back would wait for the GPU's queue at every call
      nbt:copy(nbt + 1)
    end
  end
  local bn_training = self.training or (self.running_mean == nil and self.running_var == nil)
  local pass_running = not self.training or self.track_running_stats
  return vol.batch_norm(x, pass_running and self.running_mean or nil, pass_running and self.running_var or nil,
                        self.weight, self.bias, bn_training, factor, self.eps)
end

BatchNorm3d.extra_repr = norm_base_repr

local InstanceNorm3d = class("InstanceNorm3d")
nn.InstanceNorm3d = InstanceNorm3d

-- nn.InstanceNorm3d(num_features [, {eps=1e-5, momentum=0.1, affine=false,
-- track_running_stats=false, device=}])
function InstanceNorm3d.new(num_features, opts)
  local self = new(InstanceNorm3d)
  norm_base_init(self, "InstanceNorm3d", num_features, opts, false, false)
  return self
end

-- torch's _InstanceNorm.forward: (N, C, D, H, W) or unbatched (C, D, H, W); the input's statistics
-- in training or without running ones (which are then updated), the running ones in eval;
-- momentum None counts as 0 (torch does not count batches here). A channel count that differs from
-- num_features is an error with affine, as in torch (which only warns without).
function InstanceNorm3d:forward(x)
  if not is_tensor(x) then error("InstanceNorm3d: input must be a tensor, got " .. type(x), 0) end
  local nd = x:dim()
  if nd ~= 4 and nd ~= 5 then
    error(string.format("InstanceNorm3d: expected 4D or 5D input (got %dD input)", nd), 0)
  end
  local feature_dim = nd - 4 -- 0-based, as torch prints it
  if self.affine and x:size(feature_dim + 1) ~= self.num_features then
    error(string.format("InstanceNorm3d: expected input's size at dim=%d to match num_features (%d), but got: %d.",
                        feature_dim, self.num_features, x:size(feature_dim + 1)), 0)
  end
  local shape = x.shape
  if nd == 4 then x = x:reshape({1, shape[1], shape[2], shape[3], shape[4]}) end
  local y = vol.instance_norm(x, {running_mean = self.running_mean, running_var = self.running_var,
                                  weight = self.weight, bias = self.bias,
                                  use_input_stats = self.training or not self.track_running_stats,
                                  momentum = self.momentum or 0.0, eps = self.eps})
  if nd == 4 then y = y:reshape(shape) end
  return y
end

InstanceNorm3d.extra_repr = norm_base_repr

local LayerNorm = class("LayerNorm")
nn.LayerNorm = LayerNorm

-- nn.LayerNorm(normalized_shape [, {eps=1e-5, elementwise_affine=true, bias=true, device=}]):
-- normalized_shape a size or a list of sizes; weight ones and bias zeros of that shape.
function LayerNorm.new(normalized_shape, opts)
  local name = "LayerNorm"
  opts = check_opts(name, opts, set_of {"eps", "elementwise_affine", "bias", "device"})
  local self = new(LayerNorm)
  if type(normalized_shape) == "number" then normalized_shape = {normalized_shape} end
  if type(normalized_shape) ~= "table" then
    error(string.format("%s: normalized_shape must be a size or a list of sizes, got %s", name,
                        type(normalized_shape)), 0)
  end
  local shape = {}
  for i, n in ipairs(normalized_shape) do
    shape[i] = check_count(name, string.format("normalized_shape[%d]", i), n, 0)
  end
  self.normalized_shape = shape
  self.eps = opts.eps or 1e-5
  if type(self.eps) ~= "number" or not (self.eps >= 0 and self.eps < math.huge) then
    error(string.format("%s: eps must be a finite non-negative number, got %s", name, tostring(self.eps)), 0)
  end
  for _, k in ipairs {"elementwise_affine", "bias"} do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(string.format("%s: %s must be true or false, got %s", name, k, type(opts[k])), 0)
    end
  end
  self.elementwise_affine = opts.elementwise_affine ~= false
  if self.elementwise_affine then
    self.weight = make_param(name, "weight", shape, vol.ones, shape, {device = opts.device})
    if opts.bias ~= false then
      self.bias = make_param(name, "bias", shape, vol.zeros, shape, {device = opts.device})
    end
    self._param_names = {"weight", "bias"}
  end
  return self
end

function LayerNorm:forward(x)
  return vol.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end

function LayerNorm:extra_repr()
  return string.format("%s, eps=%s, elementwise_affine=%s", py(self.normalized_shape), float_repr(self.eps),
                       py(self.elementwise_affine))
end

-- -- ReLU ----

local ReLU = class("ReLU")
nn.ReLU = ReLU

-- nn.ReLU([inplace]): inplace is accepted for PyTorch's sake; the result is always new.
function ReLU.new(inplace)
  if inplace ~= nil and type(inplace) ~= "boolean" then
    error("ReLU: inplace must be true or false, got " .. type(inplace), 0)
  end
  local self = new(ReLU)
  self.inplace = inplace == true
  return self
end

function ReLU:forward(x)
  if not is_tensor(x) then error("ReLU: input must be a tensor, got " .. type(x), 0) end
  return x:relu()
end

function ReLU:extra_repr() return self.inplace and "inplace=True" or "" end
-- The module as a step of vol.pointwise (Sequential fuses it into a convolution before it).
function ReLU:pointwise_step() return "relu" end

-- -- activations (Tanh, Sigmoid, GELU, SiLU, Mish, Softplus, ELU, LeakyReLU, Hardtanh, Hardswish,
-- Hardsigmoid): PyTorch's constructor arguments, in its order, defaults and repr; each forward is
-- the vol function of the same name. inplace, where PyTorch takes it, is accepted and the result is
-- always new (as nn.ReLU). ----

local function check_input(name, x)
  if not is_tensor(x) then error(name .. ": input must be a tensor, got " .. type(x), 0) end
end

-- Makes activation class `name`: params lists its numeric constructor arguments {key, default}
-- in PyTorch's order, then an inplace flag when `inplace`; forward is apply(self, x); extra_repr
-- gives what PyTorch's extra_repr prints (nil: nothing); check(self) may reject the arguments.
local function activation(name, params, inplace, apply, extra_repr, check)
  local c = class(name)
  nn[name] = c
  function c.new(...)
    local self = new(c)
    local n = select("#", ...)
    local most = #params + (inplace and 1 or 0)
    if n > most then
      error(string.format("%s: takes at most %d argument%s, got %d", name, most, most == 1 and "" or "s", n), 0)
    end
    for i, p in ipairs(params) do
      local v = select(i, ...)
      if v == nil then v = p[2] end
      if type(v) ~= "number" then
        error(string.format("%s: %s must be a number, got %s", name, p[1], is_tensor(v) and "tensor" or type(v)), 0)
      end
      self[p[1]] = v
    end
    if inplace then
      local v = select(#params + 1, ...)
      if v ~= nil and type(v) ~= "boolean" then
        error(name .. ": inplace must be true or false, got " .. type(v), 0)
      end
      self.inplace = v == true
    end
    if check then check(self) end
    return self
  end
  function c:forward(x)
    check_input(name, x)
    return apply(self, x)
  end
  if extra_repr then c.extra_repr = extra_repr end
  getmetatable(c).__call = function(_, ...) return c.new(...) end
  return c
end

-- Python's repr of a float as PyTorch's extra_repr prints it: 20.0, not float_repr's 2e+01 (Python
-- writes whole numbers below 1e16 in full).
local function py_float(x)
  if x == math.floor(x) and math.abs(x) < 1e16 then return string.format("%.1f", x) end
  return float_repr(x)
end

local function inplace_repr(self) return self.inplace and "inplace=True" or "" end
local function and_inplace(self) return self.inplace and ", inplace=True" or "" end

activation("Tanh", {}, false, function(_, x) return vol.tanh(x) end)
activation("Sigmoid", {}, false, function(_, x) return vol.sigmoid(x) end)
activation("SiLU", {}, true, function(_, x) return vol.silu(x) end, inplace_repr)
activation("Mish", {}, true, function(_, x) return vol.mish(x) end, inplace_repr)
activation("Hardswish", {}, true, function(_, x) return vol.hardswish(x) end)
activation("Hardsigmoid", {}, true, function(_, x) return vol.hardsigmoid(x) end)
activation("Softplus", {{"beta", 1.0}, {"threshold", 20.0}}, false,
           function(self, x) return vol.softplus(x, self.beta, self.threshold) end,
           function(self)
             return "beta=" .. py_float(self.beta) .. ", threshold=" .. py_float(self.threshold)
           end)
activation("ELU", {{"alpha", 1.0}}, true, function(self, x) return vol.elu(x, self.alpha) end,
           function(self) return "alpha=" .. py_float(self.alpha) .. and_inplace(self) end)
activation("LeakyReLU", {{"negative_slope", 0.01}}, true,
           function(self, x) return vol.leaky_relu(x, self.negative_slope) end,
           function(self) return "negative_slope=" .. py_float(self.negative_slope) .. and_inplace(self) end)
activation("Hardtanh", {{"min_val", -1.0}, {"max_val", 1.0}}, true,
           function(self, x) return vol.hardtanh(x, self.min_val, self.max_val) end,
           function(self)
             return "min_val=" .. py_float(self.min_val) .. ", max_val=" .. py_float(self.max_val) ..
               and_inplace(self)
           end,
           function(self) -- PyTorch's constructor asserts max_val > min_val
             if not (self.max_val > self.min_val) then
               error(string.format("Hardtanh: max_val (%s) must be greater than min_val (%s)",
                                   py_float(self.max_val), py_float(self.min_val)), 0)
             end
           end)

-- Each as a step of vol.pointwise (Sequential:forward fuses such modules after a convolution into
-- its epilogue).
function nn.Tanh:pointwise_step() return "tanh" end
function nn.Sigmoid:pointwise_step() return "sigmoid" end
function nn.SiLU:pointwise_step() return "silu" end
function nn.Mish:pointwise_step() return "mish" end
function nn.Hardswish:pointwise_step() return "hardswish" end
function nn.Hardsigmoid:pointwise_step() return "hardsigmoid" end
function nn.Softplus:pointwise_step() return {"softplus", self.beta, self.threshold} end
function nn.ELU:pointwise_step() return {"elu", self.alpha} end
function nn.LeakyReLU:pointwise_step() return {"leaky_relu", self.negative_slope} end
function nn.Hardtanh:pointwise_step() return {"hardtanh", self.min_val, self.max_val} end

-- nn.GELU([approximate="none"]): "none" (erf) or "tanh".
local GELU = class("GELU")
nn.GELU = GELU
function GELU.new(approximate, ...)
  if select("#", ...) > 0 then error("GELU: takes at most 1 argument, got " .. (select("#", ...) + 1), 0) end
  if approximate == nil then approximate = "none" end
  if approximate ~= "none" and approximate ~= "tanh" then
    error(string.format("GELU: approximate must be \"none\" or \"tanh\", got %s",
                        type(approximate) == "string" and ('"' .. approximate .. '"') or type(approximate)), 0)
  end
  local self = new(GELU)
  self.approximate = approximate
  return self
end
function GELU:forward(x)
  check_input("GELU", x)
  return vol.gelu(x, self.approximate)
end
function GELU:extra_repr() return "approximate='" .. self.approximate .. "'" end
function GELU:pointwise_step() return {"gelu", self.approximate} end
getmetatable(GELU).__call = function(_, ...) return GELU.new(...) end

do -- help texts for the activation modules
  local ok, help = pcall(require, "volua.help")
  if ok and type(help) == "table" and type(help.register) == "function" then
    help.register(nn.Tanh, "nn.Tanh(): vol.tanh(x) as a module, as torch.nn.Tanh.")
    help.register(nn.Sigmoid, "nn.Sigmoid(): vol.sigmoid(x) = 1 / (1 + exp(-x)) as a module, as torch.nn.Sigmoid.")
    help.register(nn.GELU, [==[
nn.GELU([approximate="none"])
  vol.gelu(x, approximate) as a module, as torch.nn.GELU: "none" uses erf, "tanh" the tanh
  approximation. repr GELU(approximate='none').]==])
    help.register(nn.SiLU, "nn.SiLU([inplace=false]): vol.silu(x) = x * sigmoid(x) as a module, as torch.nn.SiLU.")
    help.register(nn.Mish, "nn.Mish([inplace=false]): vol.mish(x) = x * tanh(softplus(x)) as a module, as torch.nn.Mish.")
    help.register(nn.Softplus, [==[
nn.Softplus([beta=1.0 [, threshold=20.0]])
  vol.softplus(x, beta, threshold) = log(1 + exp(beta * x)) / beta (x itself where beta * x >
  threshold) as a module, as torch.nn.Softplus.]==])
    help.register(nn.ELU, [==[
nn.ELU([alpha=1.0 [, inplace=false]])
  vol.elu(x, alpha): x for x > 0, alpha * (exp(x) - 1) otherwise, as torch.nn.ELU.]==])
    help.register(nn.LeakyReLU, [==[
nn.LeakyReLU([negative_slope=0.01 [, inplace=false]])
  vol.leaky_relu(x, negative_slope): x for x > 0, negative_slope * x otherwise, as torch.nn.LeakyReLU.]==])
    help.register(nn.Hardtanh, [==[
nn.Hardtanh([min_val=-1.0 [, max_val=1.0 [, inplace=false]]])
  vol.hardtanh(x, min_val, max_val) = clamp(x, min_val, max_val), as torch.nn.Hardtanh
  (max_val must be greater than min_val).]==])
    help.register(nn.Hardswish, "nn.Hardswish([inplace=false]): vol.hardswish(x) = x * clamp(x + 3, 0, 6) / 6, as torch.nn.Hardswish.")
    help.register(nn.Hardsigmoid, "nn.Hardsigmoid([inplace=false]): vol.hardsigmoid(x) = clamp(x + 3, 0, 6) / 6, as torch.nn.Hardsigmoid.")
  end
end

-- -- Mean (volua's: PyTorch writes x.mean(dim=...) in forward) ----

local Mean = class("Mean")
nn.Mean = Mean

-- nn.Mean([dims [, keepdim=false]]): vol.mean(x, dims, keepdim) with 1-based dims as
-- vol.mean; dims nil means every dim but the first (a per-sample mean, as
-- x.mean(dim=[1, 2, 3, 4]) in PyTorch for a 5-D x).
function Mean.new(dims, keepdim)
  if dims ~= nil then
    if type(dims) == "number" then dims = {dims} end
    if type(dims) ~= "table" or #dims == 0 then
      error("Mean: dims must be a dim number or a non-empty list of them, got " .. type(dims), 0)
    end
    for i, d in ipairs(dims) do
      if not is_int(d) or d == 0 then
        error(string.format("Mean: dims[%d] must be a non-zero integer (1-based), got %s", i,
                            tostring(d)), 0)
      end
    end
  end
  if keepdim ~= nil and type(keepdim) ~= "boolean" then
    error("Mean: keepdim must be true or false, got " .. type(keepdim), 0)
  end
  local self = new(Mean)
  self.dims = dims
  self.keepdim = keepdim == true
  return self
end

-- The dims this module reduces for an input of rank n (1-based, positive, sorted).
function Mean:dims_for(n)
  local ds = {}
  if self.dims == nil then
    for d = 2, n do ds[#ds + 1] = d end
  else
    for i, d in ipairs(self.dims) do ds[i] = d < 0 and d + n + 1 or d end
    table.sort(ds)
  end
  return ds
end

function Mean:forward(x)
  if not is_tensor(x) then error("Mean: input must be a tensor, got " .. type(x), 0) end
  return vol.mean(x, self:dims_for(x:dim()), self.keepdim)
end

function Mean:extra_repr()
  local d = self.dims and py(self.dims) or "all but the first"
  return "dims=" .. d .. (self.keepdim and ", keepdim=True" or "")
end

-- -- Softmax and LogSoftmax ----

-- nn.Softmax(dim) / nn.LogSoftmax(dim): vol.softmax(x, dim) / vol.log_softmax(x, dim) as modules;
-- dim is 1-based as vol.softmax's (nn.Softmax(2) is PyTorch's nn.Softmax(dim=1): over the channels
-- of (N, C, D, H, W)), negative counting from the end, and required (PyTorch's implicit dim is
-- deprecated). The repr prints the dim as given, in volua's 1-based terms.
local function softmax_class(name, fn)
  local c = class(name)
  function c.new(dim)
    if not is_int(dim) or dim == 0 then
      error(string.format("%s: dim must be a non-zero integer (1-based, negative from the end; " ..
                          "PyTorch's implicit dim is deprecated), got %s", name, tostring(dim)), 0)
    end
    local self = new(c)
    self.dim = dim
    return self
  end
  function c:forward(x)
    if not is_tensor(x) then error(name .. ": input must be a tensor, got " .. type(x), 0) end
    return fn(x, self.dim)
  end
  function c:extra_repr() return string.format("dim=%d", self.dim) end
  return c
end
local Softmax = softmax_class("Softmax", vol.softmax)
local LogSoftmax = softmax_class("LogSoftmax", vol.log_softmax)
nn.Softmax, nn.LogSoftmax = Softmax, LogSoftmax

-- -- Sequential ----

local Sequential = class("Sequential")
nn.Sequential = Sequential

local function is_module(m)
  if type(m) ~= "table" then return false end
  local c = getmetatable(m)
  while c do
    if c == Module then return true end
    local mt = getmetatable(c)
    c = mt and mt.__index
  end
  return false
end
nn.is_module = is_module

-- Adds a child under a name (PyTorch's add_module): reachable as seq[name] too.
function Sequential:add_module(name, m)
  if type(name) ~= "string" or name == "" or name:find(".", 1, true) then
    error(string.format("Sequential: child name must be a non-empty string without '.', got %s",
                        tostring(name)), 0)
  end
  if not is_module(m) then
    error(string.format("Sequential: child '%s' must be an nn module, got %s", name, type(m)), 0)
  end
  if rawget(self, name) ~= nil or Sequential[name] ~= nil or Module[name] ~= nil then
    error(string.format("Sequential: child name '%s' is already taken", name), 0)
  end
  self._children[#self._children + 1] = {name = name, module = m}
  self[name] = m
  return self
end

-- Appends a child named by its position ("0", "1", ...), as PyTorch's append.
function Sequential:append(m)
  return self:add_module(tostring(#self._children), m)
end

-- nn.Sequential(m1, m2, ...): children named "0", "1", ...
-- nn.Sequential({{"conv", m1}, {"group_norm", m2}}): named children, in that order.
-- nn.Sequential({conv = m1, group_norm = m2}, {"conv", "group_norm"}): the same, with the
--   order given (a Lua table has none of its own).
function Sequential.new(...)
  local self = new(Sequential)
  self.fuse = true
  local first = select(1, ...)
  if select("#", ...) >= 1 and type(first) == "table" and not is_module(first) then
    local order = select(2, ...)
    if select("#", ...) > 2 or (order ~= nil and type(order) ~= "table") then
      error("Sequential: named children are given as nn.Sequential({{name, module}, ...}) or " ..
            "nn.Sequential({name = module, ...}, {name, ...})", 0)
    end
    if order == nil and #first > 0 then -- a list of {name, module} pairs
      for i, pair in ipairs(first) do
        if type(pair) ~= "table" or #pair ~= 2 or is_module(pair) then
          error(string.format("Sequential: entry %d must be a pair {name, module}", i), 0)
        end
        self:add_module(pair[1], pair[2])
      end
      return self
    end
    local names = {}
    for k in pairs(first) do names[#names + 1] = tostring(k) end
    if order == nil then
      if #names > 1 then
        table.sort(names)
        error("Sequential: named children need an order, e.g. nn.Sequential(children, {\"" ..
              table.concat(names, "\", \"") .. "\"}) (in the order they run)", 0)
      end
      order = names
    end
    local seen = {}
    for _, name in ipairs(order) do
      if first[name] == nil then
        error(string.format("Sequential: order names '%s', which is not among the children", name), 0)
      end
      seen[name] = true
      self:add_module(name, first[name])
    end
    for _, k in ipairs(names) do
      if not seen[k] then
        error(string.format("Sequential: child '%s' is missing from the order", k), 0)
      end
    end
    return self
  end
  for i = 1, select("#", ...) do
    local m = select(i, ...)
    if not is_module(m) then
      error(string.format("Sequential: argument %d must be an nn module, got %s", i, type(m)), 0)
    end
    self:add_module(tostring(i - 1), m)
  end
  return self
end

-- The i-th child (1-based; negative counts from the end).
function Sequential:get(i)
  local n = #self._children
  local j = is_int(i) and (i < 0 and n + i + 1 or i)
  if not j or j < 1 or j > n then
    error(string.format("Sequential: index %s is out of range for %d children", tostring(i), n), 0)
  end
  return self._children[j].module
end

function Sequential:size() return #self._children end

-- The mean covers every dim but the batch of a 5-D input, without keepdim.
local function is_sample_mean(mean, ndim)
  if getmetatable(mean) ~= Mean or mean.keepdim or ndim ~= 5 then return false end
  local ds = mean:dims_for(5)
  return #ds == 4 and ds[1] == 2 and ds[2] == 3 and ds[3] == 4 and ds[4] == 5
end

-- Conv3d followed by a GroupNorm over its output channels, on a 5-D input: can be fused
-- with a mean.
local function fusable(conv, gn, ndim)
  return getmetatable(conv) == Conv3d and getmetatable(gn) == GroupNorm and
         gn.num_channels == conv.out_channels and ndim == 5
end

-- The children (1-based positions) where forward starts a fused Conv3d -> GroupNorm -> Mean,
-- for an input of rank ndim reaching them (the children before a fused triple must keep the
-- input 5-D, as convolutions and pools do).
function Sequential:fusions(ndim)
  local out = {}
  local ch = self._children
  local i = 1
  while self.fuse and i + 2 <= #ch do
    if fusable(ch[i].module, ch[i + 1].module, ndim) and is_sample_mean(ch[i + 2].module, ndim) then
      out[#out + 1] = i
      i = i + 3
    else
      i = i + 1
    end
  end
  return out
end

local function fused(conv, gn, x)
  local a = conv:conv_args()
  a.eps = gn.eps
  return vol.conv3d_group_norm_mean(x, conv.weight, conv.bias, gn.num_groups, gn.weight, gn.bias, a)
end

-- The pointwise modules (those with a pointwise_step: ReLU, Tanh, LeakyReLU, ...) right after
-- child i, at most 8 (a chain's length): their steps, and the index of the last.
local function pointwise_run(ch, i)
  local steps, j = {}, i
  while j + 1 <= #ch and #steps < 8 and ch[j + 1].module.pointwise_step do
    j = j + 1
    steps[#steps + 1] = ch[j].module:pointwise_step()
  end
  return steps, j
end

-- Runs the children in order; each gets the previous one's (first) result, and the last
-- one's results are returned. Unless self.fuse is false: Conv3d -> GroupNorm -> Mean (over
-- all but the batch) runs as vol.conv3d_group_norm_mean, and a Conv3d or ConvTranspose3d
-- followed by pointwise modules (ReLU, LeakyReLU, Tanh, ...) runs them as the convolution's
-- epilogue (the same numbers, without a pass over the output per module).
function Sequential:forward(x)
  local ch = self._children
  local n = #ch
  local i = 1
  while i <= n do
    -- anything but a tensor goes to the child, whose own check names it
    local nd = is_tensor(x) and x:dim()
    local m = ch[i].module
    local conv = self.fuse and nd and (getmetatable(m) == Conv3d or getmetatable(m) == ConvTranspose3d)
    local steps, last
    if conv then steps, last = pointwise_run(ch, i) end
    if self.fuse and nd and i + 2 <= n and fusable(ch[i].module, ch[i + 1].module, nd) and
       is_sample_mean(ch[i + 2].module, nd) then
      x = fused(ch[i].module, ch[i + 1].module, x)
      i = i + 3
    elseif conv and #steps > 0 then
      x = m:forward(x, steps)
      i = last + 1
    elseif i == n then
      return ch[i].module:forward(x)
    else
      x = ch[i].module:forward(x)
      i = i + 1
    end
  end
  return x
end

-- The per-sample mean (N) of the output: for a Sequential ending in Conv3d -> GroupNorm on a
-- 5-D input, the last two run fused with the mean (unless self.fuse is false).
function Sequential:forward_mean(x)
  local ch = self._children
  local n = #ch
  local last = self.fuse and n >= 2 and n - 2 or n -- children run one by one
  for i = 1, last do x = ch[i].module:forward(x) end
  if not is_tensor(x) then
    error("forward_mean: input must be a tensor, got " .. type(x), 0)
  end
  if last < n then
    if fusable(ch[n - 1].module, ch[n].module, x:dim()) then
      return fused(ch[n - 1].module, ch[n].module, x)
    end
    for i = last + 1, n do x = ch[i].module:forward(x) end
  end
  local ds = {}
  for d = 2, x:dim() do ds[#ds + 1] = d end
  return vol.mean(x, ds)
end

-- -- AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d (the pooling family) ----

local AvgPool3d = class("AvgPool3d")
nn.AvgPool3d = AvgPool3d

-- nn.AvgPool3d(kernel_size [, {stride=kernel_size, padding=0, ceil_mode=false,
-- count_include_pad=true, divisor_override=nil}]). The arguments are kept as given, as MaxPool3d's
-- (PyTorch's repr prints them so); vol.avg_pool3d checks them against the input at forward time.
function AvgPool3d.new(kernel_size, opts)
  local name = "AvgPool3d"
  opts = check_opts(name, opts, set_of {"stride", "padding", "ceil_mode", "count_include_pad",
                                        "divisor_override"})
  local self = new(AvgPool3d)
  pool_window_args(name, self, kernel_size, opts, {"ceil_mode", "count_include_pad"})
  self.ceil_mode = opts.ceil_mode == true
  self.count_include_pad = opts.count_include_pad ~= false
  local div = opts.divisor_override
  if div ~= nil and (not is_int(div) or div == 0) then
    error(string.format("%s: divisor_override must be a non-zero integer or nil, got %s", name,
                        tostring(div)), 0)
  end
  self.divisor_override = div
  return self
end

function AvgPool3d:forward(x)
  return vol.avg_pool3d(x, {kernel_size = self.kernel_size, stride = self.stride,
                            padding = self.padding, ceil_mode = self.ceil_mode,
                            count_include_pad = self.count_include_pad,
                            divisor_override = self.divisor_override})
end

-- PyTorch's _AvgPoolNd.extra_repr: kernel_size, stride and padding only
function AvgPool3d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s", py(self.kernel_size),
                       py(self.stride), py(self.padding))
end

-- An adaptive pool's output_size: a number, or {d, h, w} whose nil entries keep the input's size
-- (PyTorch's None); checked here so that a bad one fails at construction.
local function adaptive_output_size(name, v)
  if type(v) == "number" then
    if not is_int(v) or v < 0 then
      error(string.format("%s: output_size must be a non-negative integer, got %s", name,
                          tostring(v)), 0)
    end
    return v
  end
  if type(v) ~= "table" then
    error(string.format("%s: output_size must be a number or a table {d, h, w} (nil entries keep "
                        .. "the input's size), got %s", name, type(v)), 0)
  end
  for k in pairs(v) do
    if k ~= 1 and k ~= 2 and k ~= 3 then
      error(string.format("%s: output_size must be a table {d, h, w} of 3 entries, got a key %s",
                          name, tostring(k)), 0)
    end
  end
  for i = 1, 3 do
    if v[i] ~= nil and (not is_int(v[i]) or v[i] < 0) then
      error(string.format("%s: output_size[%d] must be a non-negative integer or nil, got %s",
                          name, i, tostring(v[i])), 0)
    end
  end
  return {v[1], v[2], v[3]}
end

-- "output_size=2" or "output_size=(2, None, 3)", as PyTorch prints a number or a tuple
local function adaptive_repr(self)
  local v = self.output_size
  if type(v) == "number" then return "output_size=" .. py(v) end
  local parts = {}
  for i = 1, 3 do parts[i] = v[i] == nil and "None" or py(v[i]) end
  return "output_size=(" .. table.concat(parts, ", ") .. ")"
end

local AdaptiveAvgPool3d = class("AdaptiveAvgPool3d")
nn.AdaptiveAvgPool3d = AdaptiveAvgPool3d

-- nn.AdaptiveAvgPool3d(output_size)
function AdaptiveAvgPool3d.new(output_size)
  local self = new(AdaptiveAvgPool3d)
  if output_size == nil then error("AdaptiveAvgPool3d: output_size is required", 0) end
  self.output_size = adaptive_output_size("AdaptiveAvgPool3d", output_size)
  return self
end

function AdaptiveAvgPool3d:forward(x)
  return vol.adaptive_avg_pool3d(x, self.output_size)
end

AdaptiveAvgPool3d.extra_repr = adaptive_repr

local AdaptiveMaxPool3d = class("AdaptiveMaxPool3d")
nn.AdaptiveMaxPool3d = AdaptiveMaxPool3d

-- nn.AdaptiveMaxPool3d(output_size [, {return_indices=false}]); with return_indices, m(x)
-- returns the output and the int64 indices.
function AdaptiveMaxPool3d.new(output_size, opts)
  local name = "AdaptiveMaxPool3d"
  opts = check_opts(name, opts, set_of {"return_indices"})
  local self = new(AdaptiveMaxPool3d)
  if output_size == nil then error(name .. ": output_size is required", 0) end
  self.output_size = adaptive_output_size(name, output_size)
  if opts.return_indices ~= nil and type(opts.return_indices) ~= "boolean" then
    error(string.format("%s: return_indices must be true or false, got %s", name,
                        type(opts.return_indices)), 0)
  end
  self.return_indices = opts.return_indices == true
  return self
end

function AdaptiveMaxPool3d:forward(x)
  return vol.adaptive_max_pool3d(x, self.output_size, self.return_indices)
end

AdaptiveMaxPool3d.extra_repr = adaptive_repr

for _, c in ipairs {AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d} do
  getmetatable(c).__call = function(_, ...) return c.new(...) end
end

do
  local ok, help = pcall(require, "volua.help")
  if ok and type(help) == "table" and type(help.register) == "function" then
    help.register(nn.AvgPool3d, [==[
nn.AvgPool3d(kernel_size [, {stride=kernel_size, padding=0, ceil_mode=false,
             count_include_pad=true, divisor_override=nil}])
  As torch.nn.AvgPool3d: m(x) = vol.avg_pool3d(x, {...}).
  Example: m = nn.AvgPool3d(2); y = m(x)   -- AvgPool3d(kernel_size=2, stride=2, padding=0)]==])
    help.register(nn.AdaptiveAvgPool3d, [==[
nn.AdaptiveAvgPool3d(output_size)
  As torch.nn.AdaptiveAvgPool3d: output_size is a number or {d, h, w}, a nil entry keeping
  the input's size (PyTorch's None). m(x) = vol.adaptive_avg_pool3d(x, output_size).
  Example: m = nn.AdaptiveAvgPool3d({1, nil, 4}); y = m(x)]==])
    help.register(nn.AdaptiveMaxPool3d, [==[
nn.AdaptiveMaxPool3d(output_size [, {return_indices=false}])
  As torch.nn.AdaptiveMaxPool3d; with return_indices, m(x) returns the output and int64
  indices (flat 0-based offsets in each D*H*W volume).
  Example: m = nn.AdaptiveMaxPool3d(2, {return_indices = true}); y, idx = m(x)]==])
  end
end

-- -- calling the classes: nn.Conv3d(...) is nn.Conv3d.new(...) ----

for _, c in ipairs {Conv3d, ConvTranspose3d, MaxPool3d, GroupNorm, ReLU, Mean, Sequential,
                  BatchNorm3d, InstanceNorm3d, LayerNorm} do
  getmetatable(c).__call = function(_, ...) return c.new(...) end
end

for _, c in ipairs {Softmax, LogSoftmax} do
  getmetatable(c).__call = function(_, ...) return c.new(...) end
end

-- -- help texts (volua.help is another module; absent, nothing is registered) ----

local ok, help = pcall(require, "volua.help")
if ok and type(help) == "table" and type(help.register) == "function" then
  help.register(nn.Conv3d, [==[
nn.Conv3d(in_channels, out_channels, kernel_size [, {stride=1, padding=0, dilation=1, groups=1,
          bias=true, padding_mode="zeros", seed=, device=}])
  A 3-D convolution module as torch.nn.Conv3d: weight (out, in/groups, kd, kh, kw) and bias
  (out) initialised uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * kd*kh*kw,
  from opts.seed or vol's generator (vol.manual_seed). m(x) = vol.conv3d(x, m.weight, m.bias, ...).]==])
  help.register(nn.ConvTranspose3d, [==[
nn.ConvTranspose3d(in_channels, out_channels, kernel_size [, {stride=1, padding=0,
                   output_padding=0, groups=1, bias=true, dilation=1, seed=, device=}])
  As torch.nn.ConvTranspose3d: weight (in, out/groups, kd, kh, kw), fan_in = out/groups * kd*kh*kw.]==])
  help.register(nn.MaxPool3d, [==[
nn.MaxPool3d(kernel_size [, {stride=kernel_size, padding=0, dilation=1, return_indices=false,
             ceil_mode=false}])
  As torch.nn.MaxPool3d; with return_indices, m(x) returns the output and int64 indices.]==])
  help.register(nn.GroupNorm, [==[
nn.GroupNorm(num_groups, num_channels [, {eps=1e-5, affine=true}])
  As torch.nn.GroupNorm: weight ones, bias zeros (when affine).]==])
  help.register(nn.BatchNorm3d, [==[
nn.BatchNorm3d(num_features [, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true}])
  As torch.nn.BatchNorm3d on (N, C, D, H, W): weight ones, bias zeros (affine); buffers
  running_mean zeros, running_var ones, num_batches_tracked (int64) 0, in state_dict. Training
  (m:train(), the default) normalises with the batch's statistics and updates the running ones in
  place; m:eval() uses the running ones. momentum = false is torch's None: a cumulative average.]==])
  help.register(nn.InstanceNorm3d, [==[
nn.InstanceNorm3d(num_features [, {eps=1e-5, momentum=0.1, affine=false, track_running_stats=false}])
  As torch.nn.InstanceNorm3d on (N, C, D, H, W) or (C, D, H, W): each (sample, channel) normalised
  over its own values; with track_running_stats, running statistics updated in training and used
  in eval (m:eval()).]==])
  help.register(nn.LayerNorm, [==[
nn.LayerNorm(normalized_shape [, {eps=1e-5, elementwise_affine=true, bias=true}])
  As torch.nn.LayerNorm: vol.layer_norm over the trailing normalized_shape (a size or a list);
  weight ones and bias zeros of that shape.]==])
  help.register(nn.ReLU, "nn.ReLU(): max(x, 0) elementwise.")
  help.register(nn.Mean, [==[
nn.Mean([dims [, keepdim=false]])
  vol.mean(x, dims, keepdim) as a module; dims are 1-based, nil means all but the first (batch).
  After Conv3d -> GroupNorm in a Sequential it makes the three run as one fused kernel.]==])
  help.register(nn.Sequential, [==[
nn.Sequential(m1, m2, ...) | nn.Sequential({{"conv", m1}, {"group_norm", m2}})
  Runs its children in order. state_dict keys are "0.weight", "conv.bias", ...
  Conv3d -> GroupNorm -> Mean (over all but the batch) runs as vol.conv3d_group_norm_mean;
  seq:forward_mean(x) does the same for a Sequential ending in Conv3d -> GroupNorm.
  seq.fuse = false runs the ops one by one.]==])
  help.register(nn.Softmax, [==[
nn.Softmax(dim)
  vol.softmax(x, dim) as a module, as torch.nn.Softmax. dim is 1-based, as every volua dim
  (negative counts from the end): nn.Softmax(2) is PyTorch's nn.Softmax(dim=1), over the channels
  of (N, C, D, H, W), and prints as Softmax(dim=2). Required: PyTorch's implicit dim is deprecated.]==])
  help.register(nn.LogSoftmax, [==[
nn.LogSoftmax(dim)
  vol.log_softmax(x, dim) as a module, as torch.nn.LogSoftmax; dim 1-based as nn.Softmax's:
  nn.LogSoftmax(2) is PyTorch's nn.LogSoftmax(dim=1) and prints as LogSoftmax(dim=2).]==])
end

return nn
