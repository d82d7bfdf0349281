-- volua.nn: PyTorch-style modules (Conv3d, ConvTranspose3d, MaxPool3d, GroupNorm, ReLU, Mean,
-- Sequential) over vol's ops, with PyTorch's constructor arguments, defaults, initialisation,
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
-- (parameters: set self.weight = tensor and self._param_names = {"weight"}).
local function class(name)
  local c = {}
  c.__index = c
  c.__name = name
  c.__call = function(self, ...) return self:forward(...) end
  c.__tostring = function(self) return self:repr() end
  return setmetatable(c, {__index = Module})
end
nn.class = class

-- A new instance of class c: no parameters (_param_names lists them, in order) nor children.
local function new(c)
  return setmetatable({_param_names = {}, _children = {}}, c)
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

-- A flat table {[name] = tensor} with PyTorch's keys; the tensors are the module's own
-- (not copies), as PyTorch's state_dict. state_dict_keys() gives the keys in order.
function Module:state_dict()
  local sd = {}
  for _, np in ipairs(self:named_parameters()) do sd[np[1]] = np[2] end
  return sd
end

function Module:state_dict_keys()
  local keys = {}
  for i, np in ipairs(self:named_parameters()) do keys[i] = np[1] end
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
  local params = self:named_parameters()
  local expected = {}
  local missing, unexpected, errors = {}, {}, {}
  for _, np in ipairs(params) do
    local name, p = np[1], np[2]
    expected[name] = true
    local v = tbl[name]
    if v == nil then
      missing[#missing + 1] = name
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

-- Moves every parameter to dev ("cpu" or "cuda"); returns the module, as PyTorch's .to().
function Module:to(dev)
  for _, p in ipairs(self._param_names) do
    if self[p] ~= nil and self[p].device ~= dev then self[p] = self[p]:to(dev) end
  end
  for _, ch in ipairs(self._children) do ch.module:to(dev) end
  return self
end

function Module:cuda() return self:to("cuda") end
function Module:cpu() return self:to("cpu") end

-- The device of the first parameter (nil for a module without any).
function Module:device()
  local ps = self:parameters()
  return ps[1] and ps[1].device or nil
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

function Conv3d:forward(x)
  return vol.conv3d(x, self.weight, self.bias, self:conv_args())
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

function ConvTranspose3d:forward(x)
  return vol.conv_transpose3d(x, self.weight, self.bias, {
    stride = self.stride, padding = self.padding, output_padding = self.output_padding,
    dilation = self.dilation, groups = self.groups})
end

ConvTranspose3d.extra_repr = conv_extra_repr

-- -- MaxPool3d ----

local MaxPool3d = class("MaxPool3d")
nn.MaxPool3d = MaxPool3d

local pool_opts = set_of {"stride", "padding", "dilation", "return_indices", "ceil_mode"}

-- nn.MaxPool3d(kernel_size [, {stride=kernel_size, padding=0, dilation=1,
-- return_indices=false, ceil_mode=false}]). The arguments are kept as given (PyTorch's repr
-- prints "kernel_size=2" for 2 and "(2, 2, 2)" for a tuple); vol.max_pool3d checks them
-- against the input at forward time.
function MaxPool3d.new(kernel_size, opts)
  local name = "MaxPool3d"
  opts = check_opts(name, opts, pool_opts)
  local self = new(MaxPool3d)
  if kernel_size == nil then error(name .. ": kernel_size is required", 0) end
  triple(name, "kernel_size", kernel_size, 1)
  self.kernel_size = kernel_size
  self.stride = opts.stride or kernel_size
  triple(name, "stride", self.stride, 1)
  self.padding = opts.padding or 0
  triple(name, "padding", self.padding, 0)
  self.dilation = opts.dilation or 1
  triple(name, "dilation", self.dilation, 1)
  for _, k in ipairs {"return_indices", "ceil_mode"} do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(string.format("%s: %s must be true or false, got %s", name, k, type(opts[k])), 0)
    end
  end
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

-- Runs the children in order; each gets the previous one's (first) result, and the last
-- one's results are returned. Conv3d -> GroupNorm -> Mean (over all but the batch) runs
-- fused unless self.fuse is false.
function Sequential:forward(x)
  local ch = self._children
  local n = #ch
  local i = 1
  while i <= n do
    -- anything but a tensor goes to the child, whose own check names it
    local nd = is_tensor(x) and x:dim()
    if self.fuse and nd and i + 2 <= n and fusable(ch[i].module, ch[i + 1].module, nd) and
       is_sample_mean(ch[i + 2].module, nd) then
      x = fused(ch[i].module, ch[i + 1].module, x)
      i = i + 3
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

-- -- calling the classes: nn.Conv3d(...) is nn.Conv3d.new(...) ----

for _, c in ipairs {Conv3d, ConvTranspose3d, MaxPool3d, GroupNorm, ReLU, Mean, Sequential} do
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
