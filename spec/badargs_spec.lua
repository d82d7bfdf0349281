-- badargs_spec.lua: every public function and method given bad arguments (wrong types, missing
-- values, negative/zero/huge sizes, NaN and infinite scalars, mismatched shapes, channels and
-- devices, freed and foreign userdata) must raise a Lua error whose message names the function
-- and the offending parameter, and the process must live on. Then a sweep of every function
-- and method over odd values; zero-size tensors and empty batches, which must behave as
-- PyTorch's do; and a few rows run as separate processes to show that a bad call ends in
-- "volua: fn: ..." with exit status 1, never a signal (huge allocations run there too, as the
-- sanitizer build's allocator would abort on them in this process).
local vol = require "volua"
local nn = require "volua.nn"

local BIN = os.getenv("VOLUA") or "build/bin/volua"
local nan, inf = 0 / 0, math.huge
local has_cuda = vol.cuda_available()

-- -- fixtures ----

local function x5(shape) return vol.rand(shape or {1, 2, 4, 4, 4}, {seed = 1}) end
local function w5(shape) return vol.rand(shape or {3, 2, 3, 3, 3}, {seed = 2}) end
local function i64(shape) return vol.zeros(shape or {1, 2, 4, 4, 4}, {dtype = "int64"}) end
local function freed(shape)
  local t = vol.zeros(shape or {1, 2, 4, 4, 4})
  getmetatable(t).__gc(t) -- what the collector does; the userdata lives on, empty
  return t
end
local function gpu(t) return t:cuda() end -- only in rows marked cuda = true
local proxy = newproxy(true) -- a userdata with a metatable of its own
local T = vol.zeros({2, 3}) -- a tensor whose methods the rows call
local tensor_mt = getmetatable(T)

local tmp_files = {}
local function tmp(suffix)
  local p = os.tmpname() .. (suffix or "")
  tmp_files[#tmp_files + 1] = p
  return p
end
local NPY = tmp(".npy")
vol.save(NPY, vol.zeros({2, 2}))
local PNG = tmp(".png")
vol.save_png(PNG, vol.zeros({2, 2}))
local NO_DIR = "/nonexistent-volua-dir/x"
local NO_DIR_P = NO_DIR:gsub("%p", "%%%0") -- as a pattern

local conv_model = nn.Sequential({{"conv", nn.Conv3d(2, 4, 3)}, {"gn", nn.GroupNorm(2, 4)}})

-- -- the table: {name, function making the call, pattern the message must match} ----
-- cuda = true: tensors on two devices (pending without a GPU); nocuda = true: asks for a
-- device that is absent (pending with a GPU).

local rows = {
  -- vol.tensor
  {"tensor: no data", function() return vol.tensor() end, "^tensor: data must be"},
  {"tensor: a string as data", function() return vol.tensor("1, 2") end, "^tensor: data must be"},
  {"tensor: a tensor as data", function() return vol.tensor(T) end, "^tensor: data is already a tensor"},
  {"tensor: ragged, number then table", function() return vol.tensor({1, {2}}) end, "^tensor: data is ragged"},
  {"tensor: ragged, table then number", function() return vol.tensor({{1}, 2}) end, "^tensor: data is ragged"},
  {"tensor: ragged lengths", function() return vol.tensor({{1, 2}, {3}}) end, "^tensor: data is ragged"},
  {"tensor: a string element", function() return vol.tensor({1, "2"}) end, "^tensor: data must be"},
  {"tensor: userdata element", function() return vol.tensor({1, proxy}) end, "^tensor: data must be"},
  {"tensor: nesting deeper than 8", function()
    return vol.tensor({{{{{{{{{1}}}}}}}}})
  end, "^tensor: data nests deeper"},
  {"tensor: 1.5 as int64", function() return vol.tensor({1.5}, {dtype = "int64"}) end, "^tensor: .*int64"},
  {"tensor: NaN as int64", function() return vol.tensor({nan}, {dtype = "int64"}) end, "^tensor: .*int64"},
  {"tensor: inf as int64", function() return vol.tensor({inf}, {dtype = "int64"}) end, "^tensor: .*int64"},
  {"tensor: 1e300 as int64", function() return vol.tensor({1e300}, {dtype = "int64"}) end, "^tensor: .*int64"},
  {"tensor: unknown dtype", function() return vol.tensor({1}, {dtype = "float16"}) end, "^tensor: dtype"},
  {"tensor: dtype not a string", function() return vol.tensor({1}, {dtype = 32}) end, "^tensor: dtype must be a string"},
  {"tensor: unknown device", function() return vol.tensor({1}, {device = "tpu"}) end, "^tensor: device"},
  {"tensor: cuda:1", function() return vol.tensor({1}, {device = "cuda:1"}) end, "^tensor: device"},
  {"tensor: absent cuda", function() return vol.tensor({1}, {device = "cuda"}) end, "^tensor: device", nocuda = true},
  {"tensor: options a string", function() return vol.tensor({1}, "cpu") end, "^tensor: options must be a table"},

  -- vol.empty / zeros / ones / full
  {"zeros: no shape", function() return vol.zeros() end, "^zeros: shape must be"},
  {"zeros: a string shape", function() return vol.zeros("2, 3") end, "^zeros: shape must be a table"},
  {"zeros: userdata shape", function() return vol.zeros(proxy) end, "^zeros: shape must be a table"},
  {"zeros: negative number", function() return vol.zeros(-3) end, "^zeros: shape .*negative"},
  {"zeros: negative size", function() return vol.zeros({2, -1}) end, "^zeros: shape%[2%] is negative"},
  {"zeros: NaN size", function() return vol.zeros({nan}) end, "^zeros: shape%[1%] must be an integer"},
  {"zeros: inf size", function() return vol.zeros({2, inf}) end, "^zeros: shape%[2%] must be an integer"},
  {"zeros: fractional size", function() return vol.zeros({2.5}) end, "^zeros: shape%[1%] must be an integer"},
  {"zeros: string size", function() return vol.zeros({"2"}) end, "^zeros: shape%[1%] must be an integer"},
  {"zeros: 9 dims", function() return vol.zeros({1, 1, 1, 1, 1, 1, 1, 1, 1}) end, "^zeros: shape has 9 dims"},
  {"zeros: 2^40 x 2^40 overflows int64", function() return vol.zeros({2 ^ 40, 2 ^ 40}) end, "^zeros: shape .*int64"},
  -- torch refuses these too ("Storage size calculation overflowed"): a zero size does not
  -- make the other sizes countable
  {"zeros: 2^62 x 2^62 x 0 overflows int64", function() return vol.zeros({2 ^ 62, 2 ^ 62, 0}) end, "^zeros: shape .*int64"},
  {"empty: 0 x 2^62 x 2^62 overflows int64", function() return vol.empty({0, 2 ^ 62, 2 ^ 62}) end, "^empty: shape .*int64"},
  {"empty: 2^62 x 4 float32 bytes overflow", function() return vol.empty({2 ^ 62, 4}) end, "^empty: shape .*int64"},
  {"ones: 8 dims of 2^8 overflow", function()
    return vol.ones({256, 256, 256, 256, 256, 256, 256, 256})
  end, "^ones: shape .*int64"},
  {"zeros: options a number", function() return vol.zeros({2}, 5) end, "^zeros: options must be a table"},
  {"zeros: unknown dtype", function() return vol.zeros({2}, {dtype = "bool"}) end, "^zeros: dtype"},
  {"zeros: unknown device", function() return vol.zeros({2}, {device = "gpu"}) end, "^zeros: device"},
  {"zeros: absent cuda", function() return vol.zeros({2}, {device = "cuda"}) end, "^zeros: device", nocuda = true},
  {"empty: NaN size", function() return vol.empty({nan}) end, "^empty: shape%[1%]"},
  {"ones: table size", function() return vol.ones({{2}}) end, "^ones: shape%[1%]"},
  {"full: no value", function() return vol.full({2}) end, "^full: value must be a number"},
  {"full: string value", function() return vol.full({2}, "1") end, "^full: value must be a number"},
  {"full: NaN into int64", function() return vol.full({2}, nan, {dtype = "int64"}) end, "^full: value"},
  {"full: inf into int64", function() return vol.full({2}, inf, {dtype = "int64"}) end, "^full: value"},
  {"full: 0.5 into int64", function() return vol.full({2}, 0.5, {dtype = "int64"}) end, "^full: value"},
  {"full: shape overflow", function() return vol.full({2 ^ 40, 2 ^ 40}, 1) end, "^full: shape .*int64"},

  -- vol.rand / randn / arange / manual_seed
  {"rand: int64", function() return vol.rand({2}, {dtype = "int64"}) end, "^rand: dtype"},
  {"rand: NaN seed", function() return vol.rand({2}, {seed = nan}) end, "^rand: seed must be an integer"},
  {"rand: fractional seed", function() return vol.rand({2}, {seed = 1.5}) end, "^rand: seed must be an integer"},
  {"rand: string seed", function() return vol.rand({2}, {seed = "1"}) end, "^rand: seed must be an integer"},
  {"randn: inf seed", function() return vol.randn({2}, {seed = inf}) end, "^randn: seed must be an integer"},
  {"randn: shape overflow", function() return vol.randn({2 ^ 40, 2 ^ 40}) end, "^randn: shape .*int64"},
  {"randn: negative size", function() return vol.randn({-2}) end, "^randn: shape%[1%]"},
  {"arange: no n", function() return vol.arange() end, "^arange: n must be an integer"},
  {"arange: negative", function() return vol.arange(-1) end, "^arange: n must be non%-negative"},
  {"arange: NaN", function() return vol.arange(nan) end, "^arange: n must be an integer"},
  {"arange: inf", function() return vol.arange(inf) end, "^arange: n must be an integer"},
  {"arange: fractional", function() return vol.arange(2.5) end, "^arange: n must be an integer"},
  {"arange: a table", function() return vol.arange({3}) end, "^arange: n must be an integer"},
  {"arange: 2^61 int64 bytes overflow", function() return vol.arange(2 ^ 61, {dtype = "int64"}) end, "^arange: .*int64"},
  {"arange: bad dtype", function() return vol.arange(3, {dtype = "uint8"}) end, "^arange: dtype"},
  {"manual_seed: none", function() return vol.manual_seed() end, "^manual_seed: seed must be an integer"},
  {"manual_seed: NaN", function() return vol.manual_seed(nan) end, "^manual_seed: seed must be an integer"},
  {"manual_seed: inf", function() return vol.manual_seed(-inf) end, "^manual_seed: seed must be an integer"},
  {"manual_seed: fractional", function() return vol.manual_seed(0.5) end, "^manual_seed: seed must be an integer"},
  {"manual_seed: string", function() return vol.manual_seed("7") end, "^manual_seed: seed must be an integer"},

  -- vol.max_abs_diff / allclose
  {"max_abs_diff: no a", function() return vol.max_abs_diff(nil, T) end, "^max_abs_diff: a must be a tensor"},
  {"max_abs_diff: number b", function() return vol.max_abs_diff(T, 5) end, "^max_abs_diff: b must be a tensor"},
  {"max_abs_diff: foreign userdata", function() return vol.max_abs_diff(proxy, T) end, "^max_abs_diff: a must be a tensor, got userdata"},
  {"max_abs_diff: freed a", function() return vol.max_abs_diff(freed(), T) end, "^max_abs_diff: a is a freed tensor"},
  {"max_abs_diff: shapes", function() return vol.max_abs_diff(T, vol.zeros({3, 2})) end, "^max_abs_diff: shapes differ"},
  {"max_abs_diff: dtypes", function() return vol.max_abs_diff(T, vol.zeros({2, 3}, {dtype = "int64"})) end, "^max_abs_diff: dtypes differ"},
  {"max_abs_diff: devices", function() return vol.max_abs_diff(T, gpu(T)) end, "^max_abs_diff: .*devices", cuda = true},
  {"allclose: shapes", function() return vol.allclose(T, vol.zeros({6})) end, "^allclose: shapes differ"},
  {"allclose: NaN rtol", function() return vol.allclose(T, T, {rtol = nan}) end, "^allclose: rtol"},
  {"allclose: negative atol", function() return vol.allclose(T, T, {atol = -1}) end, "^allclose: .*atol %(%-1%)"},
  {"allclose: NaN atol", function() return vol.allclose(T, T, {atol = nan}) end, "^allclose: .*atol %(%-?nan%)"},
  {"allclose: string rtol", function() return vol.allclose(T, T, {rtol = "1e-5"}) end, "^allclose: rtol must be a number"},
  {"allclose: equal_nan a number", function() return vol.allclose(T, T, {equal_nan = 1}) end, "^allclose: equal_nan must be a boolean"},
  {"allclose: options a number", function() return vol.allclose(T, T, 1e-5) end, "^allclose: options must be a table"},
  {"allclose: freed b", function() return vol.allclose(T, freed()) end, "^allclose: b is a freed tensor"},
  {"allclose: devices", function() return vol.allclose(T, gpu(T)) end, "^allclose: .*devices", cuda = true},

  -- devices and math
  {"set_default_device: none", function() return vol.set_default_device() end, "^set_default_device: device"},
  {"set_default_device: number", function() return vol.set_default_device(0) end, "^set_default_device: device"},
  {"set_default_device: tpu", function() return vol.set_default_device("tpu") end, "^set_default_device: device"},
  {"set_default_device: absent cuda", function() return vol.set_default_device("cuda") end, "^set_default_device: device", nocuda = true},
  {"set_math: fp16", function() return vol.set_math("fp16") end, "^set_math: mode"},
  {"set_math: none", function() return vol.set_math() end, "^set_math: mode"},

  -- tensor methods: self that is not a live tensor
  {"dim: freed self", function() return freed():dim() end, "^dim: self is a freed tensor"},
  {"dim: number self", function() return T.dim(5) end, "^dim: self must be a tensor, got number"},
  {"numel: foreign userdata self", function() return T.numel(io.stdout) end, "^numel: self must be a tensor, got userdata"},
  {"clone: freed self", function() return freed():clone() end, "^clone: self is a freed tensor"},
  {"contiguous: freed self", function() return freed():contiguous() end, "^contiguous: self is a freed tensor"},
  {"cpu: table self", function() return T.cpu({}) end, "^cpu: self must be a tensor"},
  {"item: freed self", function() return freed():item() end, "^item: self is a freed tensor"},
  {"table: freed self", function() return freed():table() end, "^table: self is a freed tensor"},
  {"abs: string self", function() return T.abs("x") end, "^abs: self must be a tensor"},
  {"relu: freed self", function() return freed():relu() end, "^relu: self is a freed tensor"},
  {"neg: nil self", function() return T.neg() end, "^neg: self must be a tensor"},
  {"sum: freed self", function() return freed():sum() end, "^sum: self is a freed tensor"},
  {"#: freed", function() return #freed() end, "^#: self is a freed tensor"},
  {"tostring metamethod: a number", function() return tensor_mt.__tostring(5) end, "^tostring: .*tensor"},
  {"index metamethod: a number", function() return tensor_mt.__index(5, "dim") end, "^index: .*tensor"},
  {"index metamethod: foreign userdata", function() return tensor_mt.__index(proxy, "dim") end, "^index: .*tensor"},

  -- size / reshape / to
  {"size: string dim", function() return T:size("1") end, "^size: dim must be an integer"},
  {"size: NaN dim", function() return T:size(nan) end, "^size: dim must be an integer"},
  {"size: dim 0", function() return T:size(0) end, "^size: dim 0 is out of range"},
  {"size: dim 3 of 2", function() return T:size(3) end, "^size: dim 3 is out of range"},
  {"size: dim -3 of 2", function() return T:size(-3) end, "^size: dim %-3 is out of range"},
  {"size: dim 2^62", function() return T:size(2 ^ 62) end, "^size: dim .* is out of range"},
  {"reshape: no shape", function() return T:reshape() end, "^reshape: shape must be a table"},
  {"reshape: number shape", function() return T:reshape(6) end, "^reshape: shape must be a table"},
  {"reshape: string shape", function() return T:reshape("3, 2") end, "^reshape: shape must be a table"},
  {"reshape: two -1", function() return T:reshape({-1, -1}) end, "^reshape: only one size may be %-1"},
  {"reshape: -2", function() return T:reshape({-2, -3}) end, "^reshape: invalid size %-2"},
  {"reshape: NaN size", function() return T:reshape({nan, 6}) end, "^reshape: shape must be an integer"},
  {"reshape: wrong count", function() return T:reshape({5}) end, "^reshape: shape %(5,%) is invalid"},
  {"reshape: -1 that does not divide", function() return T:reshape({4, -1}) end, "^reshape: shape .* is invalid"},
  {"reshape: overflow", function() return T:reshape({2 ^ 40, 2 ^ 40}) end, "^reshape: shape .*int64"},
  {"reshape: 0 x 2^62 x 2^62 of an empty tensor", function() return vol.zeros({0}):reshape({0, 2 ^ 62, 2 ^ 62}) end, "^reshape: shape .*int64"},
  {"reshape: 9 dims", function() return T:reshape({1, 1, 1, 1, 1, 1, 1, 2, 3}) end, "^reshape: shape has 9 dims"},
  {"reshape: 0 and -1 of an empty tensor", function() return vol.zeros({0}):reshape({0, -1}) end, "^reshape: shape .* is invalid"},
  {"to: nothing", function() return T:to() end, "^to: device"},
  {"to: a table", function() return T:to({}) end, "^to: device"},
  {"to: tpu", function() return T:to("tpu") end, "^to: device"},
  {"to: absent cuda", function() return T:to("cuda") end, "^to: device", nocuda = true},
  {"cuda: absent cuda", function() return T:cuda() end, "^cuda: device", nocuda = true},
  {"to: freed self", function() return freed():to("cpu") end, "^to: self is a freed tensor"},

  -- fill / copy / item / table / get / set
  {"fill: no value", function() return T:fill() end, "^fill: value must be a number"},
  {"fill: string value", function() return T:fill("0") end, "^fill: value must be a number"},
  {"fill: NaN into int64", function() return i64():fill(nan) end, "^fill: value"},
  {"fill: -inf into int64", function() return i64():fill(-inf) end, "^fill: value"},
  {"fill: 2^63 into int64", function() return i64():fill(2 ^ 63) end, "^fill: value"},
  {"copy: no src", function() return T:copy() end, "^copy: src must be a tensor"},
  {"copy: a table src", function() return T:copy({1, 2, 3, 4, 5, 6}) end, "^copy: src must be a tensor"},
  {"copy: freed src", function() return T:copy(freed()) end, "^copy: src is a freed tensor"},
  {"copy: element counts differ", function() return T:copy(vol.zeros({5})) end, "^copy: source has 5 elements"},
  {"item: 6 elements", function() return T:item() end, "^item: tensor has 6 elements"},
  {"item: empty", function() return vol.zeros({0}):item() end, "^item: tensor has 0 elements"},
  {"table: 2^40 empty rows", function() return vol.zeros({2 ^ 40, 0}):table() end, "^table: .*"},
  {"get: too few indices", function() return T:get(1) end, "^get: tensor has 2 dims but 1 indices"},
  {"get: too many indices", function() return T:get(1, 1, 1) end, "^get: tensor has 2 dims but 3 indices"},
  {"get: index 0", function() return T:get(0, 1) end, "^get: index 0 is out of range for dim 1"},
  {"get: index past the end", function() return T:get(1, 4) end, "^get: index 4 is out of range for dim 2"},
  {"get: index -3 of 2", function() return T:get(-3, 1) end, "^get: index %-3 is out of range for dim 1"},
  {"get: NaN index", function() return T:get(1, nan) end, "^get: index 2 must be an integer"},
  {"get: inf index", function() return T:get(inf, 1) end, "^get: index 1 must be an integer"},
  {"get: 2^62 index", function() return T:get(2 ^ 62, 1) end, "^get: index .* is out of range for dim 1"},
  {"get: string index", function() return T:get("1", 1) end, "^get: index 1 must be an integer"},
  {"set: no value", function() return T:set(nil, 1, 1) end, "^set: value must be a number"},
  {"set: string value", function() return T:set("1", 1, 1) end, "^set: value must be a number"},
  {"set: NaN into int64", function() return i64({2}):set(nan, 1) end, "^set: value"},
  {"set: inf into int64", function() return i64({2}):set(inf, 1) end, "^set: value"},
  {"set: index out of range", function() return T:set(1, 3, 1) end, "^set: index 3 is out of range for dim 1"},
  {"set: fractional index", function() return T:set(1, 1, 1.5) end, "^set: index 2 must be an integer"},

  -- reductions and arithmetic
  {"sum: a dim", function() return T:sum(1) end, "^sum: .*dim"},
  {"max: empty", function() return vol.zeros({0, 3}):max() end, "^max: the tensor is empty"},
  {"min: empty", function() return vol.zeros({2, 0}):min() end, "^min: the tensor is empty"},
  {"add: a string", function() return T + "1" end, "^add: operands must be tensors or numbers"},
  {"sub: a table", function() return {} - T end, "^sub: operands must be tensors or numbers"},
  {"mul: a boolean", function() return T * true end, "^mul: operands must be tensors or numbers"},
  {"div: nil", function() return T.div(T, nil) end, "^div: operands must be tensors or numbers"},
  {"add: two numbers", function() return T.add(1, 2) end, "^add: operands must be tensors"},
  {"sub: two nils", function() return T.sub() end, "^sub: operands must be tensors"},
  {"mul metamethod: two numbers", function() return tensor_mt.__mul(2, 3) end, "^mul: operands must be tensors"},
  {"add: freed tensor", function() return freed() + 1 end, "^add: operand is a freed tensor"},
  {"mul: freed and live", function() return T * freed({2, 3}) end, "^mul: operand is a freed tensor"},
  {"mul: shapes do not broadcast", function() return T * vol.zeros({3, 2}) end, "^mul: shapes .* do not broadcast"},
  {"div: int64 shapes do not broadcast", function() return i64({2, 3}) / i64({4}) end, "^div: shapes .* do not broadcast"},
  {"add: empty operands broadcast past int64", function() return vol.zeros({2 ^ 60, 1, 0}) + vol.zeros({1, 2 ^ 60, 0}) end, "^add: shapes .* int64"},
  {"add: devices", function() return T + gpu(T) end, "^add: tensors are on different devices", cuda = true},

  -- vol.bench (src/lua_bench.c)
  {"bench: no function", function() return vol.bench() end, "^bench: fn must be a function"},
  {"bench: options not a table", function() return vol.bench(function() end, 5) end, "^bench: options must be a table"},
  {"bench: reps 0", function() return vol.bench(function() end, {reps = 0}) end, "^bench: .*reps"},

  -- vol.max_pool3d
  {"max_pool3d: no input", function() return vol.max_pool3d(nil, {kernel_size = 2}) end, "^max_pool3d: input must be a tensor"},
  {"max_pool3d: foreign userdata", function() return vol.max_pool3d(io.stdout, {kernel_size = 2}) end, "^max_pool3d: input must be a tensor, got userdata"},
  {"max_pool3d: freed input", function() return vol.max_pool3d(freed(), {kernel_size = 2}) end, "^max_pool3d: input is a freed tensor"},
  {"max_pool3d: int64 input", function() return vol.max_pool3d(i64(), {kernel_size = 2}) end, "^max_pool3d: input dtype int64"},
  {"max_pool3d: 3-D input", function() return vol.max_pool3d(x5({4, 4, 4}), {kernel_size = 2}) end, "^max_pool3d: input must be 5%-D"},
  {"max_pool3d: 6-D input", function() return vol.max_pool3d(x5({1, 1, 1, 4, 4, 4}), {kernel_size = 2}) end, "^max_pool3d: input must be 5%-D"},
  {"max_pool3d: no options", function() return vol.max_pool3d(x5()) end, "^max_pool3d: options must be a table"},
  {"max_pool3d: a number for options", function() return vol.max_pool3d(x5(), 2) end, "^max_pool3d: options must be a table"},
  {"max_pool3d: no kernel_size", function() return vol.max_pool3d(x5(), {stride = 2}) end, "^max_pool3d: kernel_size is required"},
  {"max_pool3d: kernel_size 0", function() return vol.max_pool3d(x5(), {kernel_size = 0}) end, "^max_pool3d: kernel_size must be greater than zero"},
  {"max_pool3d: kernel_size -2", function() return vol.max_pool3d(x5(), {kernel_size = {2, -2, 2}}) end, "^max_pool3d: kernel_size must be greater than zero"},
  {"max_pool3d: kernel_size NaN", function() return vol.max_pool3d(x5(), {kernel_size = nan}) end, "^max_pool3d: kernel_size must be an integer"},
  {"max_pool3d: kernel_size inf", function() return vol.max_pool3d(x5(), {kernel_size = inf}) end, "^max_pool3d: kernel_size must be an integer"},
  {"max_pool3d: kernel_size[2] NaN", function() return vol.max_pool3d(x5(), {kernel_size = {2, nan, 2}}) end, "^max_pool3d: kernel_size%[2%] must be an integer"},
  {"max_pool3d: kernel_size of 2", function() return vol.max_pool3d(x5(), {kernel_size = {2, 2}}) end, "^max_pool3d: kernel_size must be a number or a table of 3"},
  {"max_pool3d: kernel_size a string", function() return vol.max_pool3d(x5(), {kernel_size = "2"}) end, "^max_pool3d: kernel_size must be a number or a table"},
  {"max_pool3d: kernel_size 2^31", function() return vol.max_pool3d(x5(), {kernel_size = 2 ^ 31}) end, "^max_pool3d: kernel_size .* out of range"},
  {"max_pool3d: kernel_size 2^62", function() return vol.max_pool3d(x5(), {kernel_size = 2 ^ 62}) end, "^max_pool3d: kernel_size .* out of range"},
  {"max_pool3d: stride 0", function() return vol.max_pool3d(x5(), {kernel_size = 2, stride = 0}) end, "^max_pool3d: stride must be greater than zero"},
  {"max_pool3d: stride NaN", function() return vol.max_pool3d(x5(), {kernel_size = 2, stride = nan}) end, "^max_pool3d: stride must be an integer"},
  {"max_pool3d: padding -1", function() return vol.max_pool3d(x5(), {kernel_size = 2, padding = -1}) end, "^max_pool3d: padding must be non%-negative"},
  {"max_pool3d: padding over half the kernel", function() return vol.max_pool3d(x5(), {kernel_size = 2, padding = 2}) end, "^max_pool3d: padding %(2%) must be at most half"},
  {"max_pool3d: padding over half the kernel in W", function() return vol.max_pool3d(x5(), {kernel_size = 3, padding = {1, 1, 2}}) end, "^max_pool3d: padding %(2%) .* dim W"},
  {"max_pool3d: dilation 0", function() return vol.max_pool3d(x5(), {kernel_size = 2, dilation = 0}) end, "^max_pool3d: dilation must be greater than zero"},
  {"max_pool3d: dilation inf", function() return vol.max_pool3d(x5(), {kernel_size = 2, dilation = inf}) end, "^max_pool3d: dilation must be an integer"},
  {"max_pool3d: kernel larger than the padded input", function() return vol.max_pool3d(x5(), {kernel_size = 7, padding = 1}) end, "^max_pool3d: output size is too small.*kernel_size %(7, 7, 7%)"},
  {"max_pool3d: dilated kernel larger than the input", function() return vol.max_pool3d(x5(), {kernel_size = 2, dilation = 4}) end, "^max_pool3d: output size is too small.*dilation %(4, 4, 4%)"},
  {"max_pool3d: ceil_mode a string", function() return vol.max_pool3d(x5(), {kernel_size = 2, ceil_mode = "true"}) end, "^max_pool3d: ceil_mode must be a boolean"},
  {"max_pool3d: return_indices a number", function() return vol.max_pool3d(x5(), {kernel_size = 2, return_indices = 1}) end, "^max_pool3d: return_indices must be a boolean"},
  {"max_pool3d: unknown option", function() return vol.max_pool3d(x5(), {kernel_size = 2, strides = 2}) end, "^max_pool3d: unknown option 'strides'"},
  {"max_pool3d: positional option", function() return vol.max_pool3d(x5(), {2}) end, "^max_pool3d: options must be named"},
  -- vol.avg_pool3d, vol.adaptive_avg_pool3d, vol.adaptive_max_pool3d and their nn modules (the pooling family)
  {"avg_pool3d: no input", function() return vol.avg_pool3d(nil, {kernel_size = 2}) end, "^avg_pool3d: input must be a tensor"},
  {"avg_pool3d: freed input", function() return vol.avg_pool3d(freed(), {kernel_size = 2}) end, "^avg_pool3d: input is a freed tensor"},
  {"avg_pool3d: int64 input", function() return vol.avg_pool3d(i64(), {kernel_size = 2}) end, "^avg_pool3d: input dtype int64"},
  {"avg_pool3d: 3-D input", function() return vol.avg_pool3d(x5({4, 4, 4}), {kernel_size = 2}) end, "^avg_pool3d: input must be 5%-D"},
  {"avg_pool3d: no options", function() return vol.avg_pool3d(x5()) end, "^avg_pool3d: options must be a table"},
  {"avg_pool3d: no kernel_size", function() return vol.avg_pool3d(x5(), {stride = 2}) end, "^avg_pool3d: kernel_size is required"},
  {"avg_pool3d: kernel_size 0", function() return vol.avg_pool3d(x5(), {kernel_size = 0}) end, "^avg_pool3d: kernel_size must be greater than zero"},
  {"avg_pool3d: stride NaN", function() return vol.avg_pool3d(x5(), {kernel_size = 2, stride = nan}) end, "^avg_pool3d: stride must be an integer"},
  {"avg_pool3d: padding over half the kernel", function() return vol.avg_pool3d(x5(), {kernel_size = 3, padding = {1, 2, 1}}) end, "^avg_pool3d: padding %(2%) .* dim H"},
  {"avg_pool3d: kernel larger than the input", function() return vol.avg_pool3d(x5(), {kernel_size = 5, padding = 2}) end, "^avg_pool3d: input .* smaller than kernel_size"},
  {"avg_pool3d: divisor_override 0", function() return vol.avg_pool3d(x5(), {kernel_size = 2, divisor_override = 0}) end, "^avg_pool3d: divisor_override must not be zero"},
  {"avg_pool3d: divisor_override 1.5", function() return vol.avg_pool3d(x5(), {kernel_size = 2, divisor_override = 1.5}) end, "^avg_pool3d: divisor_override must be an integer"},
  {"avg_pool3d: count_include_pad a number", function() return vol.avg_pool3d(x5(), {kernel_size = 2, count_include_pad = 0}) end, "^avg_pool3d: count_include_pad must be a boolean"},
  {"avg_pool3d: dilation (max_pool3d's option)", function() return vol.avg_pool3d(x5(), {kernel_size = 2, dilation = 1}) end, "^avg_pool3d: unknown option 'dilation'"},
  {"adaptive_avg_pool3d: no input", function() return vol.adaptive_avg_pool3d(nil, 2) end, "^adaptive_avg_pool3d: input must be a tensor"},
  {"adaptive_avg_pool3d: int64 input", function() return vol.adaptive_avg_pool3d(i64(), 2) end, "^adaptive_avg_pool3d: input dtype int64"},
  {"adaptive_avg_pool3d: no output_size", function() return vol.adaptive_avg_pool3d(x5()) end, "^adaptive_avg_pool3d: output_size must be a number or a table"},
  {"adaptive_avg_pool3d: output_size -1", function() return vol.adaptive_avg_pool3d(x5(), {2, -1, 2}) end, "^adaptive_avg_pool3d: output_size must be non%-negative, got %-1 in dim H"},
  {"adaptive_avg_pool3d: output_size of 4", function() return vol.adaptive_avg_pool3d(x5(), {2, 2, 2, 2}) end, "^adaptive_avg_pool3d: output_size must be a table {d, h, w} of 3 entries"},
  {"adaptive_avg_pool3d: output_size[2] NaN", function() return vol.adaptive_avg_pool3d(x5(), {2, nan, 2}) end, "^adaptive_avg_pool3d: output_size%[2%] must be an integer"},
  {"adaptive_avg_pool3d: a zero-size depth", function() return vol.adaptive_avg_pool3d(x5({1, 2, 0, 4, 4}), 2) end, "^adaptive_avg_pool3d: input .* zero%-size non%-batch dimension %(dim 3%)"},
  {"adaptive_max_pool3d: 6-D input", function() return vol.adaptive_max_pool3d(x5({1, 1, 1, 4, 4, 4}), 2) end, "^adaptive_max_pool3d: input must be 5%-D"},
  {"adaptive_max_pool3d: return_indices a number", function() return vol.adaptive_max_pool3d(x5(), 2, 1) end, "^adaptive_max_pool3d: return_indices must be a boolean"},
  {"adaptive_max_pool3d: output_size a string", function() return vol.adaptive_max_pool3d(x5(), "2") end, "^adaptive_max_pool3d: output_size must be a number or a table"},
  {"AvgPool3d: no kernel_size", function() return nn.AvgPool3d() end, "^AvgPool3d: kernel_size is required"},
  {"AvgPool3d: stride 0", function() return nn.AvgPool3d(2, {stride = 0}) end, "^AvgPool3d: stride must be at least 1"},
  {"AvgPool3d: divisor_override 0", function() return nn.AvgPool3d(2, {divisor_override = 0}) end, "^AvgPool3d: divisor_override must be a non%-zero integer"},
  {"AvgPool3d: dilation", function() return nn.AvgPool3d(2, {dilation = 1}) end, "^AvgPool3d: unknown option 'dilation'"},
  {"AdaptiveAvgPool3d: no output_size", function() return nn.AdaptiveAvgPool3d() end, "^AdaptiveAvgPool3d: output_size is required"},
  {"AdaptiveAvgPool3d: output_size -2", function() return nn.AdaptiveAvgPool3d(-2) end, "^AdaptiveAvgPool3d: output_size must be a non%-negative integer"},
  {"AdaptiveMaxPool3d: output_size[3] 1.5", function() return nn.AdaptiveMaxPool3d({1, 1, 1.5}) end, "^AdaptiveMaxPool3d: output_size%[3%] must be"},
  {"AdaptiveMaxPool3d: return_indices a string", function() return nn.AdaptiveMaxPool3d(2, {return_indices = "yes"}) end, "^AdaptiveMaxPool3d: return_indices must be true or false"},

  -- vol.conv3d
  {"conv3d: no input", function() return vol.conv3d() end, "^conv3d: input must be a tensor"},
  {"conv3d: a table input", function() return vol.conv3d({1, 2}, w5()) end, "^conv3d: input must be a tensor, got table"},
  {"conv3d: no weight", function() return vol.conv3d(x5()) end, "^conv3d: weight must be a tensor"},
  {"conv3d: foreign userdata weight", function() return vol.conv3d(x5(), proxy) end, "^conv3d: weight must be a tensor, got userdata"},
  {"conv3d: freed input", function() return vol.conv3d(freed(), w5()) end, "^conv3d: input is a freed tensor"},
  {"conv3d: freed weight", function() return vol.conv3d(x5(), freed({3, 2, 3, 3, 3})) end, "^conv3d: weight is a freed tensor"},
  {"conv3d: freed bias", function() return vol.conv3d(x5(), w5(), freed({3})) end, "^conv3d: bias is a freed tensor"},
  {"conv3d: int64 input", function() return vol.conv3d(i64(), w5()) end, "^conv3d: input dtype int64"},
  {"conv3d: int64 weight", function() return vol.conv3d(x5(), i64({3, 2, 3, 3, 3})) end, "^conv3d: weight dtype int64"},
  {"conv3d: int64 bias", function() return vol.conv3d(x5(), w5(), i64({3})) end, "^conv3d: bias dtype int64"},
  {"conv3d: a string bias", function() return vol.conv3d(x5(), w5(), "none") end, "^conv3d: bias must be a tensor"},
  {"conv3d: 3-D input", function() return vol.conv3d(x5({2, 4, 4}), w5()) end, "^conv3d: input must be 5%-D"},
  {"conv3d: 4-D weight", function() return vol.conv3d(x5(), w5({3, 2, 3, 3})) end, "^conv3d: weight must be 5%-D"},
  {"conv3d: channels do not match", function() return vol.conv3d(x5(), w5({3, 3, 3, 3, 3})) end, "^conv3d: input channels %(2%) do not match"},
  {"conv3d: channels x groups do not match", function() return vol.conv3d(x5(), w5({4, 2, 3, 3, 3}), nil, {groups = 2}) end, "^conv3d: input channels %(2%) .*groups=2"},
  {"conv3d: groups do not divide out channels", function() return vol.conv3d(x5({1, 3, 4, 4, 4}), w5({4, 1, 3, 3, 3}), nil, {groups = 3}) end, "^conv3d: groups %(3%) must divide"},
  {"conv3d: groups 0", function() return vol.conv3d(x5(), w5(), nil, {groups = 0}) end, "^conv3d: groups must be positive"},
  {"conv3d: groups -2", function() return vol.conv3d(x5(), w5(), nil, {groups = -2}) end, "^conv3d: groups must be positive"},
  {"conv3d: groups NaN", function() return vol.conv3d(x5(), w5(), nil, {groups = nan}) end, "^conv3d: groups must be an integer"},
  {"conv3d: groups 2^62", function() return vol.conv3d(x5(), w5(), nil, {groups = 2 ^ 62}) end, "^conv3d: groups"},
  {"conv3d: groups a table", function() return vol.conv3d(x5(), w5(), nil, {groups = {1}}) end, "^conv3d: groups must be an integer"},
  {"conv3d: bias of 2 for 3 out channels", function() return vol.conv3d(x5(), w5(), vol.zeros({2})) end, "^conv3d: bias must have shape %(3%)"},
  {"conv3d: 2-D bias", function() return vol.conv3d(x5(), w5(), vol.zeros({3, 1})) end, "^conv3d: bias must have shape %(3%)"},
  {"conv3d: stride 0", function() return vol.conv3d(x5(), w5(), nil, {stride = 0}) end, "^conv3d: stride must be positive"},
  {"conv3d: stride NaN", function() return vol.conv3d(x5(), w5(), nil, {stride = {1, nan, 1}}) end, "^conv3d: stride%[2%] must be an integer"},
  {"conv3d: padding -1", function() return vol.conv3d(x5(), w5(), nil, {padding = -1}) end, "^conv3d: padding must be non%-negative"},
  {"conv3d: padding inf", function() return vol.conv3d(x5(), w5(), nil, {padding = inf}) end, "^conv3d: padding must be an integer"},
  {"conv3d: padding 'full'", function() return vol.conv3d(x5(), w5(), nil, {padding = "full"}) end, "^conv3d: padding must be"},
  {"conv3d: padding 'same' with stride 2", function() return vol.conv3d(x5(), w5(), nil, {padding = "same", stride = 2}) end, '^conv3d: padding="same" .*stride'},
  {"conv3d: padding 2^62 overflows", function() return vol.conv3d(x5(), w5(), nil, {padding = 2 ^ 62}) end, "^conv3d: .*padding .*overflows"},
  {"conv3d: padding 2^40 output too large", function() return vol.conv3d(x5(), w5(), nil, {padding = 2 ^ 40}) end, "^conv3d: cannot allocate the output"},
  {"conv3d: dilation 0", function() return vol.conv3d(x5(), w5(), nil, {dilation = 0}) end, "^conv3d: dilation must be positive"},
  {"conv3d: dilation 2^62 overflows", function() return vol.conv3d(x5(), w5(), nil, {dilation = 2 ^ 62}) end, "^conv3d: dilation .*overflows"},
  {"conv3d: kernel larger than the padded input", function() return vol.conv3d(x5({1, 2, 2, 4, 4}), w5(), nil, {padding = {0, 1, 1}}) end, "^conv3d: kernel size .*padded input"},
  {"conv3d: dilated kernel larger than the input", function() return vol.conv3d(x5(), w5(), nil, {dilation = 2}) end, "^conv3d: kernel size 5 x 5 x 5 %(dilated%)"},
  {"conv3d: empty kernel", function() return vol.conv3d(x5(), vol.zeros({3, 2, 0, 3, 3})) end, "^conv3d: weight .* empty kernel"},
  {"conv3d: padding_mode 'mirror'", function() return vol.conv3d(x5(), w5(), nil, {padding_mode = "mirror"}) end, "^conv3d: padding_mode must be one of"},
  {"conv3d: padding_mode a number", function() return vol.conv3d(x5(), w5(), nil, {padding_mode = 0}) end, "^conv3d: padding_mode must be a string"},
  {"conv3d: reflect padding not below the input size", function() return vol.conv3d(x5(), w5(), nil, {padding = 4, padding_mode = "reflect"}) end, "^conv3d: padding .*reflect"},
  {"conv3d: circular padding over the input size", function() return vol.conv3d(x5(), w5(), nil, {padding = 5, padding_mode = "circular"}) end, "^conv3d: padding .*circular"},
  {"conv3d: unknown option", function() return vol.conv3d(x5(), w5(), nil, {group = 1}) end, "^conv3d: unknown option 'group'"},
  {"conv3d: a string for options", function() return vol.conv3d(x5(), w5(), nil, "stride=1") end, "^conv3d: options must be a table"},
  {"conv3d: an extra argument", function() return vol.conv3d(x5(), w5(), nil, {}, 1) end, "^conv3d: unexpected argument 5"},
  {"conv3d: weight on another device", function() return vol.conv3d(x5(), gpu(w5())) end, "^conv3d: weight is on cuda but the input is on cpu", cuda = true},
  {"conv3d: bias on another device", function() return vol.conv3d(gpu(x5()), gpu(w5()), vol.zeros({3})) end, "^conv3d: bias is on cpu but the input is on cuda", cuda = true},

  -- vol.conv_transpose3d (weight (C_in, C_out/groups, k...))
  {"conv_transpose3d: no input", function() return vol.conv_transpose3d(nil, w5({2, 3, 3, 3, 3})) end, "^conv_transpose3d: input must be a tensor"},
  {"conv_transpose3d: number weight", function() return vol.conv_transpose3d(x5(), 3) end, "^conv_transpose3d: weight must be a tensor"},
  {"conv_transpose3d: freed weight", function() return vol.conv_transpose3d(x5(), freed({2, 3, 3, 3, 3})) end, "^conv_transpose3d: weight is a freed tensor"},
  {"conv_transpose3d: int64 input", function() return vol.conv_transpose3d(i64(), w5({2, 3, 3, 3, 3})) end, "^conv_transpose3d: input dtype int64"},
  {"conv_transpose3d: 2-D input", function() return vol.conv_transpose3d(x5({4, 4}), w5({2, 3, 3, 3, 3})) end, "^conv_transpose3d: input must be 5%-D"},
  {"conv_transpose3d: 3-D weight", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3})) end, "^conv_transpose3d: weight must be 5%-D"},
  {"conv_transpose3d: channels do not match", function() return vol.conv_transpose3d(x5(), w5({3, 2, 3, 3, 3})) end, "^conv_transpose3d: input channels %(2%) do not match"},
  {"conv_transpose3d: groups do not divide in channels", function() return vol.conv_transpose3d(x5({1, 3, 4, 4, 4}), w5({3, 1, 3, 3, 3}), nil, {groups = 2}) end, "^conv_transpose3d: groups %(2%) must divide"},
  {"conv_transpose3d: groups 0", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {groups = 0}) end, "^conv_transpose3d: groups must be positive"},
  {"conv_transpose3d: groups inf", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {groups = inf}) end, "^conv_transpose3d: groups must be an integer"},
  {"conv_transpose3d: bias of the wrong size", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), vol.zeros({2})) end, "^conv_transpose3d: bias must have shape %(3%)"},
  {"conv_transpose3d: int64 bias", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), i64({3})) end, "^conv_transpose3d: bias dtype int64"},
  {"conv_transpose3d: stride 0", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {stride = 0}) end, "^conv_transpose3d: stride must be positive"},
  {"conv_transpose3d: padding -1", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {padding = -1}) end, "^conv_transpose3d: padding must be non%-negative"},
  {"conv_transpose3d: padding 'same'", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {padding = "same"}) end, "^conv_transpose3d: padding must be a number"},
  {"conv_transpose3d: output_padding -1", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {output_padding = -1}) end, "^conv_transpose3d: output_padding must be non%-negative"},
  {"conv_transpose3d: output_padding equal to stride and dilation", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {stride = 2, output_padding = 2}) end, "^conv_transpose3d: output_padding .* smaller than either stride"},
  {"conv_transpose3d: output_padding 1 with stride 1, dilation 1", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {output_padding = {0, 1, 0}}) end, "^conv_transpose3d: output_padding .*dim H"},
  {"conv_transpose3d: output_padding NaN", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {output_padding = nan}) end, "^conv_transpose3d: output_padding must be an integer"},
  {"conv_transpose3d: dilation 0", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {dilation = 0}) end, "^conv_transpose3d: dilation must be positive"},
  {"conv_transpose3d: padding eats the output", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {padding = 4}) end, "^conv_transpose3d: .*too small %(padding"},
  {"conv_transpose3d: stride 2^62 overflows", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {stride = 2 ^ 62}) end, "^conv_transpose3d: the output size overflows"},
  {"conv_transpose3d: padding_mode reflect", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {padding_mode = "reflect"}) end, "^conv_transpose3d: only padding_mode"},
  {"conv_transpose3d: unknown option", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, {outputpadding = 1}) end, "^conv_transpose3d: unknown option"},
  {"conv_transpose3d: an extra argument", function() return vol.conv_transpose3d(x5(), w5({2, 3, 3, 3, 3}), nil, nil, "x") end, "^conv_transpose3d: unexpected argument 5"},
  {"conv_transpose3d: weight on another device", function() return vol.conv_transpose3d(gpu(x5()), w5({2, 3, 3, 3, 3})) end, "^conv_transpose3d: weight is on cpu but the input is on cuda", cuda = true},

  -- vol.group_norm
  {"group_norm: no input", function() return vol.group_norm(nil, 1) end, "^group_norm: input must be a tensor"},
  {"group_norm: freed input", function() return vol.group_norm(freed(), 1) end, "^group_norm: input is a freed tensor"},
  {"group_norm: int64 input", function() return vol.group_norm(i64(), 1) end, "^group_norm: input dtype int64"},
  {"group_norm: 1-D input", function() return vol.group_norm(vol.zeros({4}), 1) end, "^group_norm: input must have at least 2 dims"},
  {"group_norm: no num_groups", function() return vol.group_norm(x5()) end, "^group_norm: num_groups must be an integer"},
  {"group_norm: num_groups NaN", function() return vol.group_norm(x5(), nan) end, "^group_norm: num_groups must be an integer"},
  {"group_norm: num_groups 1.5", function() return vol.group_norm(x5(), 1.5) end, "^group_norm: num_groups must be an integer"},
  {"group_norm: num_groups a table", function() return vol.group_norm(x5(), {1}) end, "^group_norm: num_groups must be an integer"},
  {"group_norm: num_groups 0", function() return vol.group_norm(x5(), 0) end, "^group_norm: num_groups %(0%) must be greater than zero"},
  {"group_norm: num_groups -1", function() return vol.group_norm(x5(), -1) end, "^group_norm: num_groups %(%-1%) must be greater than zero"},
  {"group_norm: num_groups does not divide", function() return vol.group_norm(x5({1, 3, 2, 2, 2}), 2) end, "^group_norm: num_groups %(2%) must divide channels %(3%)"},
  {"group_norm: num_groups 2^62", function() return vol.group_norm(x5(), 2 ^ 62) end, "^group_norm: num_groups .* must divide"},
  {"group_norm: weight of the wrong size", function() return vol.group_norm(x5(), 1, vol.ones({3})) end, "^group_norm: weight must have shape %(2,%)"},
  {"group_norm: 2-D weight", function() return vol.group_norm(x5(), 1, vol.ones({2, 1})) end, "^group_norm: weight must have shape"},
  {"group_norm: int64 bias", function() return vol.group_norm(x5(), 1, nil, i64({2})) end, "^group_norm: bias dtype int64"},
  {"group_norm: freed weight", function() return vol.group_norm(x5(), 1, freed({2})) end, "^group_norm: weight is a freed tensor"},
  {"group_norm: a string weight", function() return vol.group_norm(x5(), 1, "ones") end, "^group_norm: weight must be a tensor"},
  {"group_norm: a table bias", function() return vol.group_norm(x5(), 1, nil, {0, 0}) end, "^group_norm: bias must be a tensor"},
  {"group_norm: eps a string", function() return vol.group_norm(x5(), 1, nil, nil, "1e-5") end, "^group_norm: eps must be a number"},
  {"group_norm: eps NaN", function() return vol.group_norm(x5(), 1, nil, nil, nan) end, "^group_norm: eps"},
  {"group_norm: eps inf", function() return vol.group_norm(x5(), 1, nil, nil, inf) end, "^group_norm: eps"},
  {"group_norm: eps negative", function() return vol.group_norm(x5(), 1, nil, nil, -1e-5) end, "^group_norm: eps"},
  {"group_norm: one value per group", function() return vol.group_norm(vol.zeros({1, 2}), 2) end, "^group_norm: expected more than 1 value per channel.*num_groups 2"},
  {"group_norm: weight on another device", function() return vol.group_norm(x5(), 1, gpu(vol.ones({2}))) end, "^group_norm: weight is on cuda but the input is on cpu", cuda = true},

  -- vol.batch_norm, vol.instance_norm, vol.layer_norm (the norm family)
  {"batch_norm: no input", function() return vol.batch_norm(nil, vol.zeros({2}), vol.ones({2})) end, "^batch_norm: input must be a tensor"},
  {"batch_norm: freed input", function() return vol.batch_norm(freed(), vol.zeros({2}), vol.ones({2})) end, "^batch_norm: input is a freed tensor"},
  {"batch_norm: int64 input", function() return vol.batch_norm(i64(), vol.zeros({2}), vol.ones({2})) end, "^batch_norm: input dtype int64"},
  {"batch_norm: freed running_var", function() return vol.batch_norm(x5(), vol.zeros({2}), freed({2})) end, "^batch_norm: running_var is a freed tensor"},
  {"batch_norm: int64 weight", function() return vol.batch_norm(x5(), vol.zeros({2}), vol.ones({2}), i64({2})) end, "^batch_norm: weight dtype int64"},
  {"batch_norm: eval without running_mean", function() return vol.batch_norm(x5(), nil, vol.ones({2})) end, "^batch_norm: running_mean must be defined in evaluation mode"},
  {"batch_norm: running_mean of 3", function() return vol.batch_norm(x5(), vol.zeros({3}), vol.ones({2})) end, "^batch_norm: running_mean should contain 2 elements not 3"},
  {"batch_norm: one value a channel", function() return vol.batch_norm(vol.zeros({1, 2}), nil, nil, nil, nil, true) end, "^batch_norm: Expected more than 1 value per channel when training"},
  {"batch_norm: training a string", function() return vol.batch_norm(x5(), nil, nil, nil, nil, "yes") end, "^batch_norm: training must be a boolean"},
  {"batch_norm: momentum a table", function() return vol.batch_norm(x5(), nil, nil, nil, nil, true, {}) end, "^batch_norm: momentum must be a number"},
  {"batch_norm: eps NaN", function() return vol.batch_norm(x5(), nil, nil, nil, nil, true, 0.1, nan) end, "^batch_norm: eps"},
  {"batch_norm: running_mean on another device", function() return vol.batch_norm(x5(), gpu(vol.zeros({2})), vol.ones({2})) end, "^batch_norm: running_mean is on cuda but the input is on cpu", cuda = true},
  {"instance_norm: no input", function() return vol.instance_norm() end, "^instance_norm: input must be a tensor"},
  {"instance_norm: freed input", function() return vol.instance_norm(freed()) end, "^instance_norm: input is a freed tensor"},
  {"instance_norm: options a number", function() return vol.instance_norm(x5(), 1) end, "^instance_norm: options must be a table"},
  {"instance_norm: unknown option", function() return vol.instance_norm(x5(), {wieght = 1}) end, "^instance_norm: unknown option 'wieght'"},
  {"instance_norm: a number key", function() return vol.instance_norm(x5(), {1}) end, "^instance_norm: unknown option"},
  {"instance_norm: freed weight", function() return vol.instance_norm(x5(), {weight = freed({2})}) end, "^instance_norm: weight is a freed tensor"},
  {"instance_norm: 2-D bias", function() return vol.instance_norm(x5(), {bias = vol.ones({1, 2})}) end, "^instance_norm: bias must have shape %(2,%)"},
  {"instance_norm: one spatial value", function() return vol.instance_norm(vol.zeros({2, 2, 1})) end, "^instance_norm: Expected more than 1 spatial element when training"},
  {"instance_norm: momentum a string", function() return vol.instance_norm(x5(), {momentum = "0.1"}) end, "^instance_norm: momentum must be a number"},
  {"instance_norm: weight on another device", function() return vol.instance_norm(x5(), {weight = gpu(vol.ones({2}))}) end, "^instance_norm: weight is on cuda but the input is on cpu", cuda = true},
  {"layer_norm: no input", function() return vol.layer_norm(nil, 4) end, "^layer_norm: input must be a tensor"},
  {"layer_norm: freed input", function() return vol.layer_norm(freed(), 4) end, "^layer_norm: input is a freed tensor"},
  {"layer_norm: no normalized_shape", function() return vol.layer_norm(x5()) end, "^layer_norm: normalized_shape must be a size or a list of sizes"},
  {"layer_norm: normalized_shape NaN", function() return vol.layer_norm(x5(), nan) end, "^layer_norm: normalized_shape must be an integer"},
  {"layer_norm: normalized_shape of 9 dims", function() return vol.layer_norm(x5(), {1, 1, 1, 1, 1, 1, 1, 1, 1}) end, "^layer_norm: normalized_shape has 9 dims"},
  {"layer_norm: normalized_shape mismatch", function() return vol.layer_norm(x5(), 5) end, "^layer_norm: Given normalized_shape=%(5,%)"},
  {"layer_norm: freed weight", function() return vol.layer_norm(x5(), 4, freed({4})) end, "^layer_norm: weight is a freed tensor"},
  {"layer_norm: eps a string", function() return vol.layer_norm(x5(), 4, nil, nil, "x") end, "^layer_norm: eps must be a number"},
  {"layer_norm: bias on another device", function() return vol.layer_norm(x5(), 4, nil, gpu(vol.zeros({4}))) end, "^layer_norm: bias is on cuda but the input is on cpu", cuda = true},

  -- vol.mean
  {"mean: no input", function() return vol.mean() end, "^mean: input must be a tensor"},
  {"mean: freed input", function() return vol.mean(freed()) end, "^mean: input is a freed tensor"},
  {"mean: int64 input", function() return vol.mean(i64()) end, "^mean: input dtype int64"},
  {"mean: dims 0", function() return vol.mean(x5(), 0) end, "^mean: dims %(0%) is out of range"},
  {"mean: dims 6 of 5", function() return vol.mean(x5(), 6) end, "^mean: dims %(6%) is out of range"},
  {"mean: dims -6 of 5", function() return vol.mean(x5(), {-6}) end, "^mean: dims%[1%] %(%-6%) is out of range"},
  {"mean: dims 2^62", function() return vol.mean(x5(), 2 ^ 62) end, "^mean: dims .* is out of range"},
  {"mean: dims NaN", function() return vol.mean(x5(), nan) end, "^mean: dims must be an integer"},
  {"mean: dims[2] a string", function() return vol.mean(x5(), {1, "2"}) end, "^mean: dims%[2%] must be an integer"},
  {"mean: dims repeated", function() return vol.mean(x5(), {2, -4}) end, "^mean: dim 2 appears more than once"},
  {"mean: dims a string", function() return vol.mean(x5(), "all") end, "^mean: dims must be a number, a list"},
  {"mean: keepdim a number", function() return vol.mean(x5(), 1, 1) end, "^mean: keepdim must be a boolean"},

  -- vol.sum(x [, dims [, keepdim]]): the mean's rules
  {"sum: no input", function() return vol.sum() end, "^sum: input must be a tensor"},
  {"sum: freed input", function() return vol.sum(freed()) end, "^sum: input is a freed tensor"},
  {"sum: int64 input", function() return vol.sum(i64(), 1) end, "^sum: input dtype int64 is not supported over dims"},
  {"sum: dims 6 of 5", function() return vol.sum(x5(), 6) end, "^sum: dims %(6%) is out of range"},
  {"sum: dims[2] a string", function() return vol.sum(x5(), {1, "2"}) end, "^sum: dims%[2%] must be an integer"},
  {"sum: dims repeated", function() return vol.sum(x5(), {2, -4}) end, "^sum: dim 2 appears more than once"},
  {"sum: keepdim a number", function() return vol.sum(x5(), 1, 1) end, "^sum: keepdim must be a boolean"},

  -- vol.conv3d_group_norm_mean(x, conv_w, conv_b, num_groups, gn_w, gn_b [, opts])
  {"conv3d_group_norm_mean: no input", function() return vol.conv3d_group_norm_mean(nil, w5(), nil, 1) end, "^conv3d_group_norm_mean: input must be a tensor"},
  {"conv3d_group_norm_mean: number conv_w", function() return vol.conv3d_group_norm_mean(x5(), 1, nil, 1) end, "^conv3d_group_norm_mean: conv_w must be a tensor"},
  {"conv3d_group_norm_mean: a table conv_b", function() return vol.conv3d_group_norm_mean(x5(), w5(), {0, 0, 0}, 1) end, "^conv3d_group_norm_mean: conv_b must be a tensor"},
  {"conv3d_group_norm_mean: 4-D input", function() return vol.conv3d_group_norm_mean(x5({2, 4, 4, 4}), w5(), nil, 1) end, "^conv3d_group_norm_mean: input must be 5%-D"},
  {"conv3d_group_norm_mean: int64 input", function() return vol.conv3d_group_norm_mean(i64(), w5(), nil, 1) end, "^conv3d_group_norm_mean: input dtype int64"},
  {"conv3d_group_norm_mean: channels do not match", function() return vol.conv3d_group_norm_mean(x5(), w5({3, 1, 3, 3, 3}), nil, 1) end, "^conv3d_group_norm_mean: input channels %(2%)"},
  {"conv3d_group_norm_mean: kernel larger than the input", function() return vol.conv3d_group_norm_mean(x5(), w5({3, 2, 5, 5, 5}), nil, 1) end, "^conv3d_group_norm_mean: kernel size"},
  {"conv3d_group_norm_mean: groups do not divide", function() return vol.conv3d_group_norm_mean(x5({1, 2, 4, 4, 4}), w5({3, 1, 3, 3, 3}), nil, 1, nil, nil, {groups = 2}) end, "^conv3d_group_norm_mean: groups %(2%) must divide"},
  {"conv3d_group_norm_mean: no num_groups", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil) end, "^conv3d_group_norm_mean: num_groups must be an integer"},
  {"conv3d_group_norm_mean: num_groups NaN", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, nan) end, "^conv3d_group_norm_mean: num_groups must be an integer"},
  {"conv3d_group_norm_mean: num_groups 0", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 0) end, "^conv3d_group_norm_mean: num_groups %(0%) must be greater than zero"},
  {"conv3d_group_norm_mean: num_groups does not divide", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 2) end, "^conv3d_group_norm_mean: num_groups %(2%) must divide channels %(3%)"},
  {"conv3d_group_norm_mean: gn_w of the wrong size", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, vol.ones({2})) end, "^conv3d_group_norm_mean: gn_w must have shape %(3%)"},
  {"conv3d_group_norm_mean: int64 gn_b", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, i64({3})) end, "^conv3d_group_norm_mean: gn_b dtype int64"},
  {"conv3d_group_norm_mean: freed gn_w", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, freed({3})) end, "^conv3d_group_norm_mean: gn_w is a freed tensor"},
  {"conv3d_group_norm_mean: eps NaN", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, {eps = nan}) end, "^conv3d_group_norm_mean: eps"},
  {"conv3d_group_norm_mean: eps -inf", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, {eps = -inf}) end, "^conv3d_group_norm_mean: eps"},
  {"conv3d_group_norm_mean: eps a string", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, {eps = "0"}) end, "^conv3d_group_norm_mean: eps must be a number"},
  {"conv3d_group_norm_mean: stride 0", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, {stride = 0}) end, "^conv3d_group_norm_mean: stride must be positive"},
  {"conv3d_group_norm_mean: kernel_size that disagrees", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, {kernel_size = 2}) end, "^conv3d_group_norm_mean: kernel_size %(2, 2, 2%) does not match"},
  {"conv3d_group_norm_mean: unknown option", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, {epsilon = 1}) end, "^conv3d_group_norm_mean: unknown option 'epsilon'"},
  {"conv3d_group_norm_mean: options a number", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, 1e-5) end, "^conv3d_group_norm_mean: options must be a table"},
  {"conv3d_group_norm_mean: an extra argument", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, nil, nil, {}, 0) end, "^conv3d_group_norm_mean: unexpected argument 8"},
  {"conv3d_group_norm_mean: one value per group", function() return vol.conv3d_group_norm_mean(x5({1, 2, 3, 3, 3}), w5({1, 2, 3, 3, 3}), nil, 1) end, "^conv3d_group_norm_mean: group_norm expects more than 1 value.*num_groups 1"},
  {"conv3d_group_norm_mean: gn_w on another device", function() return vol.conv3d_group_norm_mean(x5(), w5(), nil, 1, gpu(vol.ones({3}))) end, "^conv3d_group_norm_mean: gn_w is on cuda but the input is on cpu", cuda = true},
  {"conv3d_group_norm_mean: conv_w on another device", function() return vol.conv3d_group_norm_mean(gpu(x5()), w5(), nil, 1) end, "^conv3d_group_norm_mean: weight is on cpu but the input is on cuda", cuda = true},

  -- files
  {"load: no path", function() return vol.load() end, "^load: path must be a string"},
  {"load: a number path", function() return vol.load(5) end, "^load: path must be a string"},
  {"load: a NUL in the path", function() return vol.load("x\0.npy") end, "^load: path contains a NUL"},
  {"load: a missing file", function() return vol.load(NO_DIR) end, "^load: " .. NO_DIR_P},
  {"load: a directory", function() return vol.load("/") end, "^load: /"},
  {"load: a PNG file", function() return vol.load(PNG) end, "^load: .*"},
  {"save: no path", function() return vol.save(nil, T) end, "^save: path must be a string"},
  {"save: no tensor", function() return vol.save(tmp(".npy")) end, "^save: tensor must be a tensor"},
  {"save: freed tensor", function() return vol.save(tmp(".npy"), freed()) end, "^save: tensor is a freed tensor"},
  {"save: a table", function() return vol.save(tmp(".npy"), {1, 2}) end, "^save: tensor must be a tensor, got table"},
  {"save: a missing directory", function() return vol.save(NO_DIR, T) end, "^save: " .. NO_DIR_P},
  {"load_safetensors: a table path", function() return vol.load_safetensors({}) end, "^load_safetensors: path must be a string"},
  {"load_safetensors: a missing file", function() return vol.load_safetensors(NO_DIR) end, "^load_safetensors: " .. NO_DIR_P},
  {"load_safetensors: an npy file", function() return vol.load_safetensors(NPY) end, "^load_safetensors: "},
  {"save_safetensors: no path", function() return vol.save_safetensors(nil, {a = T}) end, "^save_safetensors: path must be a string"},
  {"save_safetensors: no tensors", function() return vol.save_safetensors(tmp()) end, "^save_safetensors: tensors must be a table"},
  {"save_safetensors: a tensor for the table", function() return vol.save_safetensors(tmp(), T) end, "^save_safetensors: tensors must be a table"},
  {"save_safetensors: a number key", function() return vol.save_safetensors(tmp(), {T}) end, "^save_safetensors: tensors keys must be strings"},
  {"save_safetensors: a number value", function() return vol.save_safetensors(tmp(), {a = 1}) end, '^save_safetensors: tensors%["a"%] must be a tensor'},
  {"save_safetensors: a freed value", function() return vol.save_safetensors(tmp(), {a = freed()}) end, '^save_safetensors: tensors%["a"%] must be a tensor, got a freed tensor'},
  {"save_safetensors: metadata a string", function() return vol.save_safetensors(tmp(), {a = T}, "meta") end, "^save_safetensors: metadata must be a table"},
  {"save_safetensors: a metadata number", function() return vol.save_safetensors(tmp(), {a = T}, {k = 1}) end, '^save_safetensors: metadata%["k"%] must be a string'},
  {"save_safetensors: a missing directory", function() return vol.save_safetensors(NO_DIR, {a = T}) end, "^save_safetensors: " .. NO_DIR_P},

  -- vol.save_png / load_png
  {"save_png: no path", function() return vol.save_png(nil, vol.zeros({2, 2})) end, "^save_png: path must be a string"},
  {"save_png: a table path", function() return vol.save_png({}, vol.zeros({2, 2})) end, "^save_png: path must be a string"},
  {"save_png: a NUL in the path", function() return vol.save_png(tmp("\0.png"), vol.zeros({2, 2})) end, "^save_png: path contains a NUL"},
  {"save_png: no tensor", function() return vol.save_png(tmp(".png")) end, "^save_png: t must be a tensor"},
  {"save_png: freed tensor", function() return vol.save_png(tmp(".png"), freed({2, 2})) end, "^save_png: t is a freed tensor"},
  {"save_png: 1-D", function() return vol.save_png(tmp(".png"), vol.zeros({4})) end, "^save_png: tensor must be 2%-D"},
  {"save_png: 6-D", function() return vol.save_png(tmp(".png"), vol.zeros({1, 1, 1, 1, 2, 2})) end, "^save_png: tensor must be 2%-D"},
  {"save_png: an empty dim", function() return vol.save_png(tmp(".png"), vol.zeros({2, 0, 2})) end, "^save_png: tensor has a dimension of size 0"},
  {"save_png: axis 4", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {axis = 4}) end, "^save_png: axis must be 1"},
  {"save_png: axis NaN", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {axis = nan}) end, "^save_png: axis must be an integer"},
  {"save_png: slices 0", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {slices = 0}) end, "^save_png: slices %(0%)"},
  {"save_png: slices inf", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {slices = inf}) end, "^save_png: slices must be an integer"},
  {"save_png: slices {}", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {slices = {}}) end, "^save_png: slices is an empty list"},
  {"save_png: slices[2] out of range", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {slices = {1, 3}}) end, "^save_png: slices%[2%] %(3%) is out of range"},
  {"save_png: cols 0", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {cols = 0}) end, "^save_png: cols must be at least 1"},
  {"save_png: scale 0", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {scale = 0}) end, "^save_png: scale must be at least 1"},
  {"save_png: scale 2^40", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {scale = 2 ^ 40}) end, "^save_png: the picture would be too large.*scale"},
  {"save_png: gap -1", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {gap = -1}) end, "^save_png: gap must be non%-negative"},
  {"save_png: cmap 'jet'", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {cmap = "jet"}) end, "^save_png: cmap must be"},
  {"save_png: vmin NaN", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {vmin = nan}) end, "^save_png: vmin and vmax must be finite"},
  {"save_png: vmax inf", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {vmax = inf}) end, "^save_png: vmin and vmax must be finite"},
  {"save_png: vmin above vmax", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {vmin = 1, vmax = 0}) end, "^save_png: vmin %(1%) is greater than vmax"},
  {"save_png: channel out of range", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2, 2}), {channel = 3}) end, "^save_png: channel %(3%) is out of range"},
  {"save_png: batch on a 3-D tensor", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2, 2}), {batch = 1}) end, "^save_png: batch applies to 5%-D"},
  {"save_png: axis on a 2-D tensor", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {axis = 1}) end, "^save_png: axis applies to volumes"},
  {"save_png: unknown option", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), {colormap = "gray"}) end, "^save_png: unknown option 'colormap'"},
  {"save_png: options a string", function() return vol.save_png(tmp(".png"), vol.zeros({2, 2}), "gray") end, "^save_png: options must be a table"},
  {"save_png: a missing directory", function() return vol.save_png(NO_DIR, vol.zeros({2, 2})) end, "^save_png: " .. NO_DIR_P},
  {"load_png: no path", function() return vol.load_png() end, "^load_png: path must be a string"},
  {"load_png: a NUL in the path", function() return vol.load_png(PNG .. "\0.npy") end, "^load_png: path contains a NUL"},
  {"load_png: a missing file", function() return vol.load_png(NO_DIR) end, "^load_png: " .. NO_DIR_P},
  {"load_png: an npy file", function() return vol.load_png(NPY) end, "^load_png: "},

  -- nn constructors
  {"Conv3d: no in_channels", function() return nn.Conv3d(nil, 2, 3) end, "^Conv3d: in_channels must be an integer"},
  {"Conv3d: in_channels 0", function() return nn.Conv3d(0, 2, 3) end, "^Conv3d: in_channels must be at least 1"},
  {"Conv3d: in_channels NaN", function() return nn.Conv3d(nan, 2, 3) end, "^Conv3d: in_channels must be an integer"},
  {"Conv3d: out_channels -1", function() return nn.Conv3d(2, -1, 3) end, "^Conv3d: out_channels must be at least 1"},
  {"Conv3d: out_channels inf", function() return nn.Conv3d(2, inf, 3) end, "^Conv3d: out_channels must be an integer"},
  {"Conv3d: no kernel_size", function() return nn.Conv3d(2, 2) end, "^Conv3d: kernel_size is required"},
  {"Conv3d: kernel_size of 2", function() return nn.Conv3d(2, 2, {3, 3}) end, "^Conv3d: kernel_size must be a number or a table of 3"},
  {"Conv3d: kernel_size a string", function() return nn.Conv3d(2, 2, "3") end, "^Conv3d: kernel_size must be a number or a table"},
  {"Conv3d: kernel_size 0", function() return nn.Conv3d(2, 2, 0) end, "^Conv3d: kernel_size must be at least 1"},
  {"Conv3d: kernel_size NaN", function() return nn.Conv3d(2, 2, {3, nan, 3}) end, "^Conv3d: kernel_size%[2%] must be an integer"},
  {"Conv3d: stride 0", function() return nn.Conv3d(2, 2, 3, {stride = 0}) end, "^Conv3d: stride must be at least 1"},
  {"Conv3d: padding -1", function() return nn.Conv3d(2, 2, 3, {padding = -1}) end, "^Conv3d: padding must be at least 0"},
  {"Conv3d: padding 'full'", function() return nn.Conv3d(2, 2, 3, {padding = "full"}) end, "^Conv3d: invalid padding string"},
  {"Conv3d: padding 'same' with stride 2", function() return nn.Conv3d(2, 2, 3, {padding = "same", stride = 2}) end, "^Conv3d: padding='same'"},
  {"Conv3d: dilation 0", function() return nn.Conv3d(2, 2, 3, {dilation = 0}) end, "^Conv3d: dilation must be at least 1"},
  {"Conv3d: groups 0", function() return nn.Conv3d(2, 2, 3, {groups = 0}) end, "^Conv3d: groups must be at least 1"},
  {"Conv3d: groups do not divide in_channels", function() return nn.Conv3d(3, 6, 3, {groups = 2}) end, "^Conv3d: in_channels %(3%) must be divisible by groups %(2%)"},
  {"Conv3d: groups do not divide out_channels", function() return nn.Conv3d(4, 6, 3, {groups = 4}) end, "^Conv3d: out_channels %(6%) must be divisible by groups %(4%)"},
  {"Conv3d: bias a string", function() return nn.Conv3d(2, 2, 3, {bias = "false"}) end, "^Conv3d: bias must be true or false"},
  {"Conv3d: padding_mode 'mirror'", function() return nn.Conv3d(2, 2, 3, {padding_mode = "mirror"}) end, "^Conv3d: padding_mode must be one of"},
  {"Conv3d: seed 1.5", function() return nn.Conv3d(2, 2, 3, {seed = 1.5}) end, "^Conv3d: seed must be an integer"},
  {"Conv3d: device 'tpu'", function() return nn.Conv3d(2, 2, 3, {device = "tpu"}) end, "^Conv3d: .*weight.*device"},
  {"Conv3d: absent cuda", function() return nn.Conv3d(2, 2, 3, {device = "cuda"}) end, "^Conv3d: .*weight.*device", nocuda = true},
  {"Conv3d: options a string", function() return nn.Conv3d(2, 2, 3, "stride=1") end, "^Conv3d: options must be a table"},
  {"Conv3d: unknown option", function() return nn.Conv3d(2, 2, 3, {strides = 1}) end, "^Conv3d: unknown option 'strides'"},
  {"Conv3d: 2^40 x 2^40 channels overflow the weight", function() return nn.Conv3d(2 ^ 40, 2 ^ 40, 3) end, "^Conv3d: .*weight"},
  {"ConvTranspose3d: in_channels 0", function() return nn.ConvTranspose3d(0, 2, 3) end, "^ConvTranspose3d: in_channels must be at least 1"},
  {"ConvTranspose3d: output_padding not below stride or dilation", function() return nn.ConvTranspose3d(2, 2, 3, {stride = 2, output_padding = 2}) end, "^ConvTranspose3d: output_padding .* smaller than either stride"},
  {"ConvTranspose3d: output_padding -1", function() return nn.ConvTranspose3d(2, 2, 3, {output_padding = -1}) end, "^ConvTranspose3d: output_padding must be at least 0"},
  {"ConvTranspose3d: padding 'same'", function() return nn.ConvTranspose3d(2, 2, 3, {padding = "same"}) end, "^ConvTranspose3d: padding must be a number"},
  {"ConvTranspose3d: padding_mode reflect", function() return nn.ConvTranspose3d(2, 2, 3, {padding_mode = "reflect"}) end, "^ConvTranspose3d: only \"zeros\" padding mode"},
  {"ConvTranspose3d: groups do not divide", function() return nn.ConvTranspose3d(2, 3, 3, {groups = 2}) end, "^ConvTranspose3d: out_channels %(3%) must be divisible by groups"},
  {"ConvTranspose3d: 2^40 x 2^40 channels overflow the weight", function() return nn.ConvTranspose3d(2 ^ 40, 2 ^ 40, 3) end, "^ConvTranspose3d: .*weight"},
  {"MaxPool3d: no kernel_size", function() return nn.MaxPool3d() end, "^MaxPool3d: kernel_size is required"},
  {"MaxPool3d: kernel_size 0", function() return nn.MaxPool3d(0) end, "^MaxPool3d: kernel_size must be at least 1"},
  {"MaxPool3d: kernel_size NaN", function() return nn.MaxPool3d(nan) end, "^MaxPool3d: kernel_size%[1%] must be an integer"},
  {"MaxPool3d: stride 0", function() return nn.MaxPool3d(2, {stride = 0}) end, "^MaxPool3d: stride must be at least 1"},
  {"MaxPool3d: padding -1", function() return nn.MaxPool3d(2, {padding = -1}) end, "^MaxPool3d: padding must be at least 0"},
  {"MaxPool3d: dilation {1, 1}", function() return nn.MaxPool3d(2, {dilation = {1, 1}}) end, "^MaxPool3d: dilation must be a number or a table of 3"},
  {"MaxPool3d: ceil_mode a number", function() return nn.MaxPool3d(2, {ceil_mode = 1}) end, "^MaxPool3d: ceil_mode must be true or false"},
  {"MaxPool3d: return_indices a string", function() return nn.MaxPool3d(2, {return_indices = "yes"}) end, "^MaxPool3d: return_indices must be true or false"},
  {"MaxPool3d: unknown option", function() return nn.MaxPool3d(2, {pad = 1}) end, "^MaxPool3d: unknown option 'pad'"},
  {"MaxPool3d: padding over half the kernel, at forward", function() return nn.MaxPool3d(2, {padding = 2})(x5()) end, "^max_pool3d: padding %(2%)"},
  {"GroupNorm: no num_groups", function() return nn.GroupNorm(nil, 4) end, "^GroupNorm: num_groups must be an integer"},
  {"GroupNorm: num_groups 0", function() return nn.GroupNorm(0, 4) end, "^GroupNorm: num_groups must be at least 1"},
  {"GroupNorm: num_channels NaN", function() return nn.GroupNorm(2, nan) end, "^GroupNorm: num_channels must be an integer"},
  {"GroupNorm: num_groups does not divide", function() return nn.GroupNorm(3, 4) end, "^GroupNorm: num_channels %(4%) must be divisible by num_groups %(3%)"},
  {"GroupNorm: eps NaN", function() return nn.GroupNorm(2, 4, {eps = nan}) end, "^GroupNorm: eps"},
  {"GroupNorm: eps inf", function() return nn.GroupNorm(2, 4, {eps = inf}) end, "^GroupNorm: eps"},
  {"GroupNorm: eps -1", function() return nn.GroupNorm(2, 4, {eps = -1}) end, "^GroupNorm: eps"},
  {"GroupNorm: eps a string", function() return nn.GroupNorm(2, 4, {eps = "1e-5"}) end, "^GroupNorm: eps"},
  {"GroupNorm: affine a number", function() return nn.GroupNorm(2, 4, {affine = 1}) end, "^GroupNorm: affine must be true or false"},
  {"GroupNorm: device 'tpu'", function() return nn.GroupNorm(2, 4, {device = "tpu"}) end, "^GroupNorm: .*weight.*device"},
  {"GroupNorm: 2^53 channels", function() return nn.GroupNorm(1, 2 ^ 53) end, "^GroupNorm: num_channels must be an integer"},
  {"GroupNorm: wrong channels, at forward", function() return nn.GroupNorm(1, 3)(x5()) end, "^group_norm: weight must have shape %(2,%)"},
  {"ReLU: inplace a number", function() return nn.ReLU(1) end, "^ReLU: inplace must be true or false"},
  {"ReLU: a number input", function() return nn.ReLU()(5) end, "^ReLU: input must be a tensor"},
  {"Mean: dims a string", function() return nn.Mean("all") end, "^Mean: dims must be"},
  {"Mean: dims {}", function() return nn.Mean({}) end, "^Mean: dims must be"},
  {"Mean: dims[2] 0", function() return nn.Mean({1, 0}) end, "^Mean: dims%[2%] must be a non%-zero integer"},
  {"Mean: dims[1] NaN", function() return nn.Mean({nan}) end, "^Mean: dims%[1%] must be a non%-zero integer"},
  {"Mean: keepdim a string", function() return nn.Mean(2, "yes") end, "^Mean: keepdim must be true or false"},
  {"Mean: a number input", function() return nn.Mean()(5) end, "^Mean: input must be a tensor"},
  {"Mean: dims out of range, at forward", function() return nn.Mean(7)(x5()) end, "^mean: dims%[1%] %(7%) is out of range"},
  {"Sequential: a number child", function() return nn.Sequential(5) end, "^Sequential: argument 1 must be an nn module"},
  {"Sequential: a string child", function() return nn.Sequential(nn.ReLU(), "relu") end, "^Sequential: argument 2 must be an nn module"},
  {"Sequential: a dotted name", function() return nn.Sequential({{"a.b", nn.ReLU()}}) end, "^Sequential: child name must be"},
  {"Sequential: a non-module pair", function() return nn.Sequential({{"a", 5}}) end, "^Sequential: child 'a' must be an nn module"},
  {"Sequential: a repeated name", function() return nn.Sequential({{"a", nn.ReLU()}, {"a", nn.ReLU()}}) end, "^Sequential: child name 'a' is already taken"},
  {"Sequential: a name shadowing a method", function() return nn.Sequential({{"forward", nn.ReLU()}}) end, "^Sequential: child name 'forward' is already taken"},
  {"Sequential: named children without order", function() return nn.Sequential({a = nn.ReLU(), b = nn.ReLU()}) end, "^Sequential: named children need an order"},
  {"Sequential: order names a stranger", function() return nn.Sequential({a = nn.ReLU()}, {"b"}) end, "^Sequential: order names 'b'"},
  {"Sequential: get(5) of 1", function() return nn.Sequential(nn.ReLU()):get(5) end, "^Sequential: index 5 is out of range"},
  {"Sequential: get('1')", function() return nn.Sequential(nn.ReLU()):get("1") end, "^Sequential: index 1 is out of range"},
  {"Sequential: get(NaN)", function() return nn.Sequential(nn.ReLU()):get(nan) end, "^Sequential: index .* is out of range"},
  {"Sequential: add_module with a number name", function() return nn.Sequential():add_module(1, nn.ReLU()) end, "^Sequential: child name must be"},
  {"Sequential: a number input", function() return nn.Sequential(nn.ReLU(), nn.ReLU())(5) end, "^ReLU: input must be a tensor"},
  {"Sequential: a number input to forward_mean", function() return conv_model:forward_mean(5) end, "^forward_mean: input must be a tensor"},
  {"Sequential: a number input to an empty forward_mean", function() return nn.Sequential():forward_mean(5) end, "^forward_mean: input must be a tensor"},
  {"Sequential: a wrong input, fused", function() return nn.Sequential(nn.Conv3d(3, 4, 3), nn.GroupNorm(2, 4), nn.Mean())(x5()) end, "^conv3d_group_norm_mean: input channels %(2%)"},
  {"class: forward not implemented", function() return nn.instance(nn.class("Thing")):forward(T) end, "^Thing: forward is not implemented"},
  {"load_state_dict: not a table", function() return nn.Conv3d(2, 2, 3):load_state_dict("weights") end, "^load_state_dict: state_dict must be a table"},
  {"load_state_dict: options a string", function() return nn.Conv3d(2, 2, 3):load_state_dict({}, "strict") end, "^load_state_dict: options must be a table"},
  {"load_state_dict: missing keys", function() return nn.Conv3d(2, 2, 3):load_state_dict({}) end, "^load_state_dict: .*Missing key.*\"weight\""},
  {"load_state_dict: a number value", function() return nn.Conv3d(2, 2, 3, {bias = false}):load_state_dict({weight = 1}) end, '^load_state_dict: .*"weight" must be a tensor'},
  {"load_state_dict: a freed value", function() return nn.Conv3d(2, 2, 3, {bias = false}):load_state_dict({weight = freed({2, 2, 3, 3, 3})}) end, '^load_state_dict: .*"weight" .*freed'},
  {"load_state_dict: a size mismatch", function() return nn.Conv3d(2, 2, 3, {bias = false}):load_state_dict({weight = vol.zeros({2, 2, 3, 3, 2})}) end, "^load_state_dict: .*size mismatch for weight"},
  {"Module:to a number", function() return nn.Conv3d(2, 2, 3):to(0) end, "^to: device"},
  {"Module:to nothing", function() return nn.Conv3d(2, 2, 3):to() end, "^to: device"},

  -- softmax family: vol.softmax / log_softmax(x, dim), vol.logsumexp(x, dims [, keepdim]),
  -- vol.amax / amin(x [, dims [, keepdim]]), vol.max / min(x, dim [, keepdim]), nn.Softmax / LogSoftmax
  {"softmax: no input", function() return vol.softmax() end, "^softmax: input must be a tensor"},
  {"softmax: no dim", function() return vol.softmax(x5()) end, "^softmax: dim is required"},
  {"softmax: dim 6 of 5", function() return vol.softmax(x5(), 6) end, "^softmax: dim %(6%) is out of range for a 5%-D input"},
  {"softmax: dim NaN", function() return vol.softmax(x5(), nan) end, "^softmax: dim must be an integer"},
  {"softmax: int64 input", function() return vol.softmax(i64(), 1) end, "^softmax: input dtype int64 is not supported"},
  {"softmax: freed input", function() return vol.softmax(freed(), 1) end, "^softmax: input is a freed tensor"},
  {"log_softmax: dim a table", function() return vol.log_softmax(x5(), {2}) end, "^log_softmax: dim must be an integer"},
  {"log_softmax: dim -6 of 5", function() return vol.log_softmax(x5(), -6) end, "^log_softmax: dim %(%-6%) is out of range"},
  {"logsumexp: no dims", function() return vol.logsumexp(x5()) end, "^logsumexp: dims is required"},
  {"logsumexp: dims repeated", function() return vol.logsumexp(x5(), {2, -4}) end, "^logsumexp: dim 2 appears more than once"},
  {"logsumexp: keepdim a string", function() return vol.logsumexp(x5(), 2, "yes") end, "^logsumexp: keepdim must be a boolean"},
  {"logsumexp: freed input", function() return vol.logsumexp(freed(), 1) end, "^logsumexp: input is a freed tensor"},
  {"amax: dims 6 of 5", function() return vol.amax(x5(), 6) end, "^amax: dims %(6%) is out of range"},
  {"amax: an empty dim", function() return vol.amax(vol.zeros({2, 0}), 2) end, "^amax: cannot reduce over dim 2 of size 0"},
  {"amax: keepdim a table", function() return vol.amax(x5(), 1, {}) end, "^amax: keepdim must be a boolean"},
  {"amin: everything of an empty input", function() return vol.amin(vol.zeros({0, 3})) end, "^amin: cannot reduce over dim 1 of size 0"},
  {"amin: dims a string", function() return vol.amin(x5(), "all") end, "^amin: dims must be a number, a list"},
  {"max: no dim", function() return vol.max(x5()) end, "^max: dim is required"},
  {"max: dim 0", function() return vol.max(x5(), 0) end, "^max: dim %(0%) is out of range"},
  {"max: an empty dim", function() return vol.max(vol.zeros({0, 3}), 1) end, "^max: cannot reduce over dim 1 of size 0"},
  {"max: the method's dim 6 of 5", function() return x5():max(6) end, "^max: dim %(6%) is out of range"},
  {"min: keepdim a number", function() return vol.min(x5(), 1, 1) end, "^min: keepdim must be a boolean"},
  {"min: freed input", function() return vol.min(freed(), 1) end, "^min: input is a freed tensor"},
  {"min: the method's dim a string", function() return x5():min("2") end, "^min: dim must be an integer"},
  {"Softmax: no dim", function() return nn.Softmax() end, "^Softmax: dim must be a non%-zero integer"},
  {"Softmax: a number input", function() return nn.Softmax(1)(5) end, "^Softmax: input must be a tensor"},
  {"LogSoftmax: dim 0", function() return nn.LogSoftmax(0) end, "^LogSoftmax: dim must be a non%-zero integer"},
}

-- -- running a row: it must fail with a string naming function and parameter, and the
-- process must be whole afterwards ----

local function check_row(row)
  local ok, err = pcall(row[2])
  assert.is_false(ok, "the call succeeded; expected an error matching " .. row[3])
  assert.equal("string", type(err), "the error is a " .. type(err) .. ", not a message")
  assert.is_nil(err:find("stack traceback", 1, true), "the message carries a traceback: " .. err)
  assert.is_truthy(err:find(row[3]), "message [" .. err .. "] does not match [" .. row[3] .. "]")
  -- the process lives on and still computes
  local y = vol.tensor({{1, -2}, {3, -4}}):abs()
  assert.equal(10, y:sum())
end

describe("bad arguments raise a Lua error naming the function and the parameter", function()
  teardown(function()
    for _, p in ipairs(tmp_files) do os.remove(p) end
  end)

  local seen = {}
  for _, row in ipairs(rows) do
    assert(not seen[row[1]], "two rows named " .. row[1])
    seen[row[1]] = true
    if row.cuda and not has_cuda then
      pending(row[1] .. " (needs a GPU)")
    elseif row.nocuda and has_cuda then
      pending(row[1] .. " (only without a GPU)")
    else
      it(row[1], function() check_row(row) end)
    end
  end

  it("has rows for every function and method of API.md, save_png, load_png and manual_seed", function()
    local covered = {}
    for _, row in ipairs(rows) do
      local fn = row[1]:match("^([%w_]+)")
      if fn then covered[fn] = true end
    end
    -- (functions added later are still swept by the section below)
    local api = {"tensor", "empty", "zeros", "ones", "full", "rand", "randn", "arange", "manual_seed",
                 "max_abs_diff", "allclose", "load", "save", "load_safetensors", "save_safetensors",
                 "max_pool3d", "conv3d", "conv_transpose3d", "group_norm", "mean", "sum",
                 "conv3d_group_norm_mean", "set_default_device", "set_math", "save_png", "load_png"}
    for _, name in ipairs(api) do
      assert.equal("function", type(vol[name]), "vol." .. name .. " is missing")
      assert.is_true(covered[name] == true, "no row for vol." .. name)
    end
    local methods = {"dim", "numel", "size", "to", "cpu", "cuda", "clone", "contiguous", "reshape",
                     "fill", "copy", "item", "table", "get", "set", "abs", "relu", "sum", "max", "min",
                     "add", "sub", "mul", "div", "neg"}
    for _, name in ipairs(methods) do
      assert.equal("function", type(vol.Tensor[name]), "the method " .. name .. " is missing")
      assert.is_true(covered[name] == true, "no row for the method " .. name)
    end
    for _, name in ipairs {"Conv3d", "ConvTranspose3d", "MaxPool3d", "GroupNorm", "ReLU", "Mean",
                           "Sequential", "load_state_dict"} do
      assert.is_true(covered[name] == true, "no row for nn." .. name)
    end
  end)

  it("frees a tensor twice without harm and prints a freed tensor", function()
    local t = vol.zeros({2})
    tensor_mt.__gc(t)
    tensor_mt.__gc(t)
    tensor_mt.__gc(5) -- not a tensor: ignored
    assert.equal("volua.Tensor (freed)", tostring(t))
    assert.is_nil(t.shape)
  end)
end)

-- -- a sweep: every function and method with odd values in its first two arguments (and a few
-- in the third) returns or raises a message that starts with a function's name, never a raw
-- Lua error ("attempt to index ...", "bad argument #1 to '?'") and never a crash ----

local odd_values = {
  function() return nil end, function() return 0 end, function() return -1 end,
  function() return nan end, function() return inf end, function() return 2 ^ 62 end,
  function() return "x" end, function() return {} end, function() return {2, 2, 2} end,
  function() return {nan} end, function() return io.stdout end, function() return proxy end,
  function() return freed({2, 2}) end, function() return vol.zeros({0}) end,
  function() return i64({1, 1, 2, 2, 2}) end, function() return x5({1, 1, 3, 3, 3}) end,
  function() return vol.tensor(1) end, function() return vol.zeros({0, 1, 3, 3, 3}) end,
  function() return true end, function() return print end, function() return {kernel_size = 2} end,
}
local third_values = {odd_values[1], odd_values[3], odd_values[4], odd_values[7], odd_values[8],
                      odd_values[11], odd_values[13], odd_values[16]}

describe("every function and method survives odd values in its first arguments", function()
  local fns = {}
  -- the save functions would write files named by the odd values; rows above cover them.
  -- manual_seed would reseed the generator other specs draw from.
  local skip = {save = true, save_png = true, save_safetensors = true, manual_seed = true}
  for k, v in pairs(vol) do
    if type(v) == "function" and not skip[k] then fns[#fns + 1] = {"vol." .. k, v} end
  end
  for k, v in pairs(vol.Tensor) do fns[#fns + 1] = {"Tensor." .. k, v} end
  for _, k in ipairs {"__add", "__sub", "__mul", "__div", "__unm", "__len", "__tostring", "__index", "__gc"} do
    fns[#fns + 1] = {"metamethod " .. k, tensor_mt[k]}
  end
  for _, k in ipairs {"Conv3d", "ConvTranspose3d", "MaxPool3d", "GroupNorm", "ReLU", "Mean", "Sequential"} do
    fns[#fns + 1] = {"nn." .. k, function(...) return nn[k](...) end}
  end
  table.sort(fns, function(a, b) return a[1] < b[1] end)

  for _, f in ipairs(fns) do
    it(f[1], function()
      local function try(a, b, c)
        local ok, err = pcall(f[2], a, b, c)
        if not ok then
          assert.equal("string", type(err), f[1] .. " raised a " .. type(err))
          assert.is_truthy(err:match("^[%w_#]+: "), f[1] .. ": message names no function: " .. err)
          assert.is_nil(err:match("%.lua:%d+:"), f[1] .. ": a raw Lua error: " .. err)
          assert.is_nil(err:match("bad argument #"), f[1] .. ": a raw Lua error: " .. err)
        end
      end
      for _, a in ipairs(odd_values) do
        for _, b in ipairs(odd_values) do
          try(a(), b())
          for _, c in ipairs(third_values) do try(a(), b(), c()) end
        end
      end
      assert.equal(10, vol.tensor({{1, -2}, {3, -4}}):abs():sum())
    end)
  end
end)

-- -- zero-size tensors and empty batches ----
-- Sources for PyTorch's behaviour (torch 2.x):
-- * convolutions: aten/src/ATen/native/Convolution.cpp. check_shape_forward runs first (channels,
--   groups, the kernel must fit the padded input), then _select_conv_backend: "if (input.size(0)
--   == 0 || input.size(1) == 0) return ConvBackend::Empty; else if (input.numel() == 0)
--   TORCH_CHECK(false, "Only zero batch or zero channel inputs are supported ...")". The Empty
--   backend views an empty product as calc_output_size(...), which for input.size(1) == 0 sets
--   the output's channels to 0 ("Handle empty # of channels"): C_in = 0 gives (N, 0, out...),
--   with no bias in it. PyTorch's test_nn.py test_conv_empty_channel runs Conv1d/2d/3d(0, ...)
--   on (2, 0, ...) inputs; pytorch/pytorch#101356 shows the eager result has 0 channels.
-- * max_pool3d: torch/_meta_registrations.py pool3d_shape_check: every dim but the batch of a
--   5-D input (every dim of a 4-D one) must be positive ("Expected input's non-batch dimensions
--   to have positive length"); an empty batch gives an empty output.
-- * group_norm: torch/nn/functional.py group_norm (_verify_batch_size refuses only a product of
--   exactly 1) and check_group_norm_inputs in aten/src/ATen/native/group_norm.cpp (num_groups > 0
--   dividing C, 0 included): empty inputs give empty outputs of the same shape.
-- * mean: torch.mean over an empty set of values is NaN (0/0); over the other dims it keeps
--   their (possibly zero) sizes.

local function shape_of(t) return t.shape end
local function all_nan(t)
  for _, v in ipairs(t:reshape({-1}):table()) do
    if v == v then return false end
  end
  return true
end

describe("zero-size tensors and empty batches behave as PyTorch's do", function()
  local function fails(pattern, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "expected an error matching " .. pattern)
    assert.is_truthy(tostring(err):find(pattern), "message [" .. tostring(err) .. "] does not match [" .. pattern .. "]")
  end

  it("max_pool3d: N = 0 gives empty out and indices of the pooled shape", function()
    local out, idx = vol.max_pool3d(vol.zeros({0, 3, 5, 6, 7}),
                                    {kernel_size = 2, stride = {1, 2, 3}, padding = 1, return_indices = true})
    assert.same({0, 3, 6, 4, 3}, shape_of(out))
    assert.same({0, 3, 6, 4, 3}, shape_of(idx))
    assert.equal("int64", idx.dtype)
    assert.same({0, 2, 3, 3, 3}, shape_of(vol.max_pool3d(vol.zeros({0, 2, 5, 5, 5}), {kernel_size = 2, ceil_mode = true})))
  end)

  it("max_pool3d: C = 0 or a spatial 0 raises, batched or not", function()
    fails("^max_pool3d: input .* zero%-size non%-batch dimension %(dim 2%)", vol.max_pool3d, vol.zeros({1, 0, 4, 4, 4}), {kernel_size = 2})
    fails("^max_pool3d: input .* zero%-size non%-batch dimension %(dim 2%)", vol.max_pool3d, vol.zeros({0, 0, 4, 4, 4}), {kernel_size = 2})
    fails("^max_pool3d: input .* zero%-size non%-batch dimension %(dim 4%)", vol.max_pool3d, vol.zeros({2, 1, 4, 0, 4}), {kernel_size = 1})
    fails("^max_pool3d: input .* zero%-size non%-batch dimension %(dim 1%)", vol.max_pool3d, vol.zeros({0, 4, 4, 4}), {kernel_size = 2})
    fails("^max_pool3d: input .* zero%-size non%-batch dimension %(dim 4%)", vol.max_pool3d, vol.zeros({2, 4, 4, 0}), {kernel_size = 1})
  end)

  it("conv3d: N = 0 gives an empty output of the convolved shape", function()
    local w, b = w5({4, 2, 3, 2, 1}), vol.zeros({4})
    assert.same({0, 4, 2, 3, 4}, shape_of(vol.conv3d(vol.zeros({0, 2, 4, 4, 4}), w, b)))
    assert.same({0, 4, 2, 3, 2}, shape_of(vol.conv3d(vol.zeros({0, 2, 4, 4, 4}), w, nil, {stride = {1, 2, 3}, padding = {0, 1, 1}})))
    assert.same({0, 4, 4, 4, 4}, shape_of(vol.conv3d(vol.zeros({0, 2, 4, 4, 4}), w, b, {padding = "same"})))
    assert.same({0, 4, 4, 4, 4}, shape_of(vol.conv3d(vol.zeros({0, 2, 4, 4, 4}), w, b, {padding = "same", padding_mode = "reflect"})))
    assert.same({0, 6, 2, 2, 2}, shape_of(vol.conv3d(vol.zeros({0, 4, 4, 4, 4}), w5({6, 2, 3, 3, 3}), nil, {groups = 2})))
  end)

  it("conv3d: N = 0 still checks channels, groups and the kernel size first", function()
    fails("^conv3d: input channels %(3%)", vol.conv3d, vol.zeros({0, 3, 4, 4, 4}), w5())
    fails("^conv3d: kernel size", vol.conv3d, vol.zeros({0, 2, 2, 4, 4}), w5())
    fails("^conv3d: groups %(2%) must divide", vol.conv3d, vol.zeros({0, 2, 4, 4, 4}), w5({3, 1, 3, 3, 3}), nil, {groups = 2})
  end)

  it("conv3d: C_in = 0 gives an output of 0 channels, bias or not", function()
    local w = vol.zeros({2, 0, 3, 3, 3})
    assert.same({1, 0, 2, 2, 2}, shape_of(vol.conv3d(vol.zeros({1, 0, 4, 4, 4}), w, vol.ones({2}))))
    assert.same({3, 0, 3, 2, 5}, shape_of(vol.conv3d(vol.zeros({3, 0, 5, 5, 5}), w, nil, {stride = {1, 2, 1}, padding = {0, 0, 1}})))
    assert.same({0, 0, 2, 2, 2}, shape_of(vol.conv3d(vol.zeros({0, 0, 4, 4, 4}), w)))
    assert.same({0, 2, 2, 2}, shape_of(vol.conv3d(vol.zeros({0, 4, 4, 4}), w, vol.zeros({2})))) -- unbatched
    assert.same({2, 0, 4, 4, 4}, shape_of(vol.conv3d(vol.zeros({2, 0, 4, 4, 4}), vol.zeros({4, 0, 3, 3, 3}), nil, {groups = 2, padding = 1})))
    -- check_shape_forward still runs: the kernel must fit, the bias must match the weight
    fails("^conv3d: kernel size", vol.conv3d, vol.zeros({1, 0, 2, 4, 4}), w)
    fails("^conv3d: bias must have shape %(2%)", vol.conv3d, vol.zeros({1, 0, 4, 4, 4}), w, vol.zeros({3}))
    fails("^conv3d: input channels %(0%)", vol.conv3d, vol.zeros({1, 0, 4, 4, 4}), vol.zeros({2, 1, 3, 3, 3}))
  end)

  it("conv3d: a spatial size 0 raises unless the batch or the channels are empty", function()
    local w = vol.zeros({1, 1, 1, 1, 1})
    fails("^conv3d: input .*empty.*zero batch or zero channel", vol.conv3d, vol.zeros({1, 1, 0, 4, 4}), w, nil, {padding = 1})
    fails("^conv3d: input .*empty.*zero batch or zero channel", vol.conv3d, vol.zeros({1, 0, 4, 4}), w, nil, {padding = 1})
    fails("^conv3d: input .*empty", vol.conv3d, vol.zeros({2, 1, 4, 4, 0}), w, vol.zeros({1}), {padding = {0, 0, 2}})
    fails("^conv3d: kernel size", vol.conv3d, vol.zeros({1, 1, 0, 4, 4}), w)
    -- the kernel fits the padded input: an empty batch, or no channels, is an empty result
    assert.same({0, 1, 2, 6, 6}, shape_of(vol.conv3d(vol.zeros({0, 1, 0, 4, 4}), w, nil, {padding = 1})))
    assert.same({2, 0, 2, 6, 6}, shape_of(vol.conv3d(vol.zeros({2, 0, 0, 4, 4}), vol.zeros({1, 0, 1, 1, 1}), nil, {padding = 1})))
  end)

  it("conv_transpose3d: N = 0 gives an empty output of the transposed shape", function()
    local w = w5({2, 3, 3, 2, 1})
    assert.same({0, 3, 6, 5, 4}, shape_of(vol.conv_transpose3d(vol.zeros({0, 2, 4, 4, 4}), w, vol.zeros({3}))))
    assert.same({0, 3, 10, 9, 8}, shape_of(vol.conv_transpose3d(vol.zeros({0, 2, 4, 4, 4}), w, nil, {stride = 2, padding = {0, 0, 0}, output_padding = {1, 1, 1}})))
    assert.same({0, 6, 6, 6, 6}, shape_of(vol.conv_transpose3d(vol.zeros({0, 4, 4, 4, 4}), w5({4, 3, 3, 3, 3}), nil, {groups = 2})))
  end)

  it("conv_transpose3d: a spatial size 0 raises unless the batch is empty; C_in = 0 fails the groups check", function()
    local w = vol.zeros({1, 1, 3, 3, 3})
    fails("^conv_transpose3d: input .*empty.*zero batch or zero channel", vol.conv_transpose3d, vol.zeros({1, 1, 0, 4, 4}), w)
    assert.same({0, 1, 2, 6, 6}, shape_of(vol.conv_transpose3d(vol.zeros({0, 1, 0, 4, 4}), w)))
    -- weight (C_in = 0, ...) is smaller than groups at dim 0, as PyTorch's check_shape_forward says
    fails("^conv_transpose3d: groups %(1%) must divide", vol.conv_transpose3d, vol.zeros({1, 0, 4, 4, 4}), vol.zeros({0, 1, 3, 3, 3}))
    fails("^conv_transpose3d: groups %(1%) must divide", vol.conv_transpose3d, vol.zeros({0, 0, 4, 4, 4}), vol.zeros({0, 1, 3, 3, 3}))
  end)

  it("group_norm: N = 0, C = 0 and spatial 0 give empty results of the input's shape", function()
    assert.same({0, 4, 3, 3, 3}, shape_of(vol.group_norm(vol.zeros({0, 4, 3, 3, 3}), 2, vol.ones({4}), vol.zeros({4}))))
    assert.same({2, 0, 3}, shape_of(vol.group_norm(vol.zeros({2, 0, 3}), 1)))
    assert.same({2, 4, 0, 5}, shape_of(vol.group_norm(vol.zeros({2, 4, 0, 5}), 4)))
    assert.same({0, 2}, shape_of(vol.group_norm(vol.zeros({0, 2}), 2)))
    -- the checks still apply to empty inputs
    fails("^group_norm: num_groups %(3%) must divide channels %(4%)", vol.group_norm, vol.zeros({0, 4, 3}), 3)
    fails("^group_norm: weight must have shape %(4,%)", vol.group_norm, vol.zeros({0, 4, 3}), 2, vol.ones({3}))
    fails("^group_norm: num_groups %(0%)", vol.group_norm, vol.zeros({2, 0, 3}), 0)
  end)

  it("mean: empty batches keep their zero dims; means of nothing are NaN", function()
    local x = vol.zeros({0, 2, 3, 3, 3})
    assert.same({0}, shape_of(vol.mean(x, {2, 3, 4, 5})))
    assert.same({0, 1, 1, 1, 1}, shape_of(vol.mean(x, {2, 3, 4, 5}, true)))
    local all = vol.mean(x)
    assert.same({}, shape_of(all))
    assert.is_true(all_nan(all))
    local over_batch = vol.mean(x, 1)
    assert.same({2, 3, 3, 3}, shape_of(over_batch))
    assert.is_true(all_nan(over_batch))
    assert.same({2}, shape_of(vol.mean(vol.zeros({2, 0}), 2)))
    assert.is_true(all_nan(vol.mean(vol.zeros({2, 0}), 2)))
    assert.same({0}, shape_of(vol.mean(vol.zeros({0, 4}), 2)))
  end)

  it("conv3d_group_norm_mean: N = 0 gives shape (0); C_in = 0 the mean of nothing; spatial 0 raises", function()
    local y = vol.conv3d_group_norm_mean(vol.zeros({0, 2, 4, 4, 4}), w5({4, 2, 3, 3, 3}), vol.zeros({4}), 2,
                                         vol.ones({4}), vol.zeros({4}))
    assert.same({0}, shape_of(y))
    -- group_norm(conv3d(x)) of (2, 0, ...) is (2, 0, ...): any num_groups divides 0 channels, and
    -- .mean(dim=[1, 2, 3, 4]) over no values is NaN for each sample
    y = vol.conv3d_group_norm_mean(vol.zeros({2, 0, 4, 4, 4}), vol.zeros({4, 0, 3, 3, 3}), vol.ones({4}), 3)
    assert.same({2}, shape_of(y))
    assert.is_true(all_nan(y))
    -- group_norm's weight must then have 0 values, one per (absent) channel
    fails("^conv3d_group_norm_mean: gn_w must have shape %(0%)", vol.conv3d_group_norm_mean, vol.zeros({1, 0, 4, 4, 4}), vol.zeros({4, 0, 3, 3, 3}), nil, 2, vol.ones({4}))
    fails("^conv3d_group_norm_mean: input .*empty", vol.conv3d_group_norm_mean, vol.zeros({2, 2, 4, 0, 4}), w5({4, 2, 1, 1, 1}), nil, 2, nil, nil, {padding = 1})
  end)

  it("nn modules and the fused Sequential take an empty batch", function()
    local x = vol.zeros({0, 2, 6, 6, 6})
    local model = nn.Sequential({{"conv", nn.Conv3d(2, 4, 3, {seed = 1})}, {"gn", nn.GroupNorm(2, 4)}, {"mean", nn.Mean()}})
    assert.same({1}, model:fusions(5))
    assert.same({0}, shape_of(model(x)))
    model.fuse = false
    assert.same({0}, shape_of(model(x)))
    assert.same({0}, shape_of(conv_model:forward_mean(vol.zeros({0, 2, 4, 4, 4}))))
    local pool = nn.Sequential(nn.MaxPool3d(2), nn.ConvTranspose3d(2, 3, 2, {stride = 2, seed = 2}), nn.ReLU())
    assert.same({0, 3, 6, 6, 6}, shape_of(pool(x)))
  end)

  it("elementwise ops and reductions on empty tensors", function()
    local e = vol.zeros({0, 3})
    assert.same({0, 3}, shape_of(e + 1))
    assert.same({0, 3}, shape_of(e * vol.ones({3})))
    assert.same({0, 3}, shape_of(-e))
    assert.same({0, 3}, shape_of(e:relu()))
    assert.same({0, 3}, shape_of(e:clone()))
    assert.equal(0, e:sum()) -- torch.sum of nothing is 0
    assert.equal(0, e:numel())
    assert.same({}, e:table())
    assert.equal(0, vol.max_abs_diff(e, e))
    assert.is_true(vol.allclose(e, e))
    assert.same({3, 0}, shape_of(e:reshape({3, 0})))
    assert.same({0, 3}, shape_of(vol.zeros({0}):reshape({0, 3})))
    fails("^mul: shapes", function() return e * vol.ones({2}) end)
  end)
end)

-- -- a few rows in a process of their own: exit status 1 and "volua: fn: ..." on stderr, never
-- a signal; and huge allocations that the sanitizer would otherwise stop (its allocator aborts
-- on sizes it cannot serve unless allocator_may_return_null is set) ----

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function run_chunk(chunk)
  local errf = os.tmpname()
  local asan = os.getenv("ASAN_OPTIONS")
  local env = "ASAN_OPTIONS=" .. quote((asan and asan ~= "" and asan .. ":" or "") .. "allocator_may_return_null=1")
  local p = io.popen(env .. " " .. quote(BIN) .. " -e " .. quote(chunk) .. " 2>" .. quote(errf) .. "; echo \"__rc=$?\"")
  local out = p:read("*a")
  p:close()
  local f = io.open(errf, "rb")
  local err = f and f:read("*a") or ""
  if f then f:close() end
  os.remove(errf)
  return tonumber(out:match("__rc=(%d+)%s*$")), err
end

local process_rows = {
  {"a conv3d whose groups do not divide", "vol.conv3d(vol.zeros({1, 4, 4, 4, 4}), vol.zeros({3, 2, 3, 3, 3}), nil, {groups = 2})", "^volua: conv3d: groups %(2%) must divide"},
  {"tensor methods on two numbers", "vol.Tensor.add(1, 2)", "^volua: add: operands must be tensors"},
  {"the index metamethod on a number", "getmetatable(vol.zeros({1})).__index(5, 'dim')", "^volua: index: .*tensor"},
  {"an int64 tensor of inf", "vol.tensor({math.huge}, {dtype = 'int64'})", "^volua: tensor: .*int64"},
  {"table() of 2^40 empty rows", "vol.zeros({2 ^ 40, 0}):table()", "^volua: table: "},
  {"max_pool3d padding over half the kernel", "vol.max_pool3d(vol.zeros({1, 1, 4, 4, 4}), {kernel_size = 2, padding = 2})", "^volua: max_pool3d: padding"},
  {"empty of 2^55 floats: no memory", "vol.empty({2 ^ 55})", "^volua: empty: .*shape"},
  {"zeros of 2^40 x 2^40", "vol.zeros({2 ^ 40, 2 ^ 40})", "^volua: zeros: shape"},
  {"conv3d whose padding makes a 2^57-element output", "vol.conv3d(vol.zeros({1, 1, 4, 4, 4}), vol.zeros({1, 1, 3, 3, 3}), nil, {padding = 2 ^ 18})", "^volua: conv3d: cannot allocate the output"},
  {"conv_transpose3d whose stride makes a huge output", "vol.conv_transpose3d(vol.zeros({1, 1, 4, 4, 4}), vol.zeros({1, 1, 3, 3, 3}), nil, {stride = 2 ^ 18})", "^volua: conv_transpose3d: cannot allocate the output"},
  {"a mean whose 2^55-element result cannot be allocated", "vol.mean(vol.zeros({2 ^ 55, 0}), 2)", "^volua: mean: cannot allocate the output"},
  {"a broadcast whose 2^52-element result cannot be allocated", "local c = vol.empty({2 ^ 26, 1}) * vol.empty({1, 2 ^ 26})", "^volua: mul: cannot allocate the result"},
  {"nn.Conv3d with a 2^55-element weight", "require('volua.nn').Conv3d(2 ^ 27, 2 ^ 28, 1)", "^volua: Conv3d: .*weight"},
  {"nn.GroupNorm with 2^52 channels", "require('volua.nn').GroupNorm(1, 2 ^ 52)", "^volua: GroupNorm: .*weight"},
}

describe("a bad call in a process of its own exits 1 with 'volua: fn: ...', never a signal", function()
  for _, row in ipairs(process_rows) do
    it(row[1], function()
      local rc, err = run_chunk(row[2])
      assert.is_not_nil(rc, "no exit status")
      assert.is_true(rc < 128, "killed by a signal (status " .. tostring(rc) .. "): " .. err)
      assert.equal(1, rc, err)
      local matched = false -- a line of its own (the sanitizer build may warn before it)
      for line in err:gmatch("[^\n]+") do matched = matched or line:find(row[3]) ~= nil end
      assert.is_true(matched, "stderr [" .. err .. "] has no line matching [" .. row[3] .. "]")
      assert.is_nil(err:find("ERROR: %a+Sanitizer"), "sanitizer report: " .. err)
      assert.is_nil(err:find("runtime error", 1, true), "UBSan report: " .. err)
    end)
  end
end)
