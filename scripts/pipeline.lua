-- pipeline.lua: volua's main job: Conv3d -> GroupNorm -> mean over a batch of volumes (the
-- KernelBench level-2 #23 model), or any nn model described in a few lines of Lua, on
-- synthetic volumes, a .npy file or a directory of them. Run `volua scripts/pipeline.lua --help`.
local vol = require "volua"
local nn = require "volua.nn"

local USAGE = [[
usage: volua scripts/pipeline.lua [options]

Runs a model on a batch of volumes (N, C, D, H, W) and prints what it did and how fast.
The default model is KernelBench L2-23: Conv3d(3, 24, 3) -> GroupNorm(8, 24) -> mean over
all but the batch, run as one fused kernel (vol.conv3d_group_norm_mean).

options:
  --weights FILE   safetensors weights with PyTorch's state_dict names (conv.weight,
                   conv.bias, group_norm.weight, group_norm.bias for the default model), as
                   written by safetensors.torch.save_file(model.state_dict(), FILE).
                   Default: initialised as PyTorch does (kaiming-uniform), from --seed
  --input PATH     a .npy file ((C, D, H, W) or (N, C, D, H, W)), or a directory: every .npy
                   in it, in sorted order, batched. Default: synthetic uniform [0, 1) volumes
  --shape C,D,H,W  the synthetic volumes' shape (default 3,24,32,32)
  --count N        how many synthetic volumes (default 16)
  --batch N        volumes per batch (default 16)
  --out FILE       save the outputs, one row per volume in input order, as .npy
  --device DEV     cpu or cuda (default: cuda when a GPU is there, else cpu); cuda without
                   a GPU runs on the CPU with a note
  --seed S         seed for the weights and the synthetic volumes (default 0)
  --png FILE       a picture: depth slices of the first volume's first channel (left) beside
                   the model's last volume-shaped output (right)
  --model FILE     a Lua file returning an nn module (it gets `nn` as its argument `...`)
  --quiet          no progress line
  --help           this text

examples:
  volua scripts/pipeline.lua
  volua scripts/pipeline.lua --weights model.safetensors --input volumes/ --out y.npy
  volua scripts/pipeline.lua --model scripts/example/model.lua \
      --weights scripts/example/model.safetensors --input scripts/example/volumes/ --png ex.png
]]

-- -- errors: usage mistakes exit 2 with a hint, failures exit 1; both as "pipeline: ..." ----

local function usage_error(msg)
  io.stderr:write("pipeline: ", msg, "\n(volua scripts/pipeline.lua --help lists the options)\n")
  os.exit(2, true) -- closing the Lua state frees every tensor
end

local function fail(msg)
  error({pipeline = msg}, 0)
end

-- -- time and terminal, through LuaJIT's FFI (os.clock is CPU time across OpenMP threads) ----

local ffi_ok, ffi = pcall(require, "ffi")
local have_clock, have_isatty = false, false
if ffi_ok then
  pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } volua_pipeline_timespec;")
  have_clock = pcall(ffi.cdef, "int clock_gettime(int clk, volua_pipeline_timespec *tp);") or
               pcall(function() return ffi.C.clock_gettime end)
  have_isatty = pcall(ffi.cdef, "int isatty(int fd);") or pcall(function() return ffi.C.isatty end)
end

local now
if have_clock then
  local ts = ffi.new("volua_pipeline_timespec")
  now = function()
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
  end
else
  now = os.time
end

local stderr_is_tty = have_isatty and ffi.C.isatty(2) == 1

-- -- arguments ----

local options = {
  weights = "string", input = "string", shape = "string", count = "int", batch = "int",
  out = "string", device = "string", seed = "int", png = "string", model = "string",
  quiet = "flag", help = "flag",
}

local function parse_args(argv)
  local o = {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local name, value = a:match("^%-%-([%w_-]+)=(.*)$")
    if not name then name = a:match("^%-%-([%w_-]+)$") end
    if not name then usage_error("unexpected argument '" .. a .. "'") end
    local kind = options[name]
    if not kind then usage_error("unknown option '--" .. name .. "'") end
    if kind == "flag" then
      if value then usage_error("--" .. name .. " takes no value") end
      o[name] = true
    else
      if not value then
        i = i + 1
        value = argv[i]
        if value == nil then usage_error("--" .. name .. " needs a value") end
      end
      if kind == "int" then
        local v = tonumber(value)
        if not v or v ~= math.floor(v) then
          usage_error("--" .. name .. " must be an integer, got '" .. value .. "'")
        end
        value = v
      end
      o[name] = value
    end
    i = i + 1
  end
  return o
end

-- -- .npy files, read just enough to batch volumes across files ----
-- volua has no tensor concatenation yet, so a batch is assembled as a .npy file of its
-- volumes' bytes and read back with vol.load (which also checks it).

local function npy_parse_header(path, f)
  local head = f:read(12)
  if not head or #head < 10 or head:sub(1, 6) ~= "\147NUMPY" then fail(path .. ": not a .npy file") end
  local major = head:byte(7)
  local hlen, start
  if major == 1 then
    hlen, start = head:byte(9) + 256 * head:byte(10), 10
  elseif major == 2 or major == 3 then
    if #head < 12 then fail(path .. ": truncated .npy header") end
    hlen = head:byte(9) + 256 * head:byte(10) + 65536 * head:byte(11) + 16777216 * head:byte(12)
    start = 12
  else
    fail(path .. ": unsupported .npy version " .. major)
  end
  f:seek("set", start)
  local h = f:read(hlen)
  if not h or #h < hlen then fail(path .. ": truncated .npy header") end
  local descr = h:match("['\"]descr['\"]%s*:%s*['\"]([^'\"]*)['\"]")
  local fortran = h:match("['\"]fortran_order['\"]%s*:%s*(%a+)")
  local shape_s = h:match("['\"]shape['\"]%s*:%s*(%b())")
  if not (descr and fortran and shape_s) then fail(path .. ": malformed .npy header") end
  local shape = {}
  for n in shape_s:gmatch("%d+") do shape[#shape + 1] = tonumber(n) end
  return {descr = descr, fortran = fortran == "True", shape = shape, offset = start + hlen}
end

local function npy_header_bytes(descr, shape)
  local dims = {}
  for i, s in ipairs(shape) do dims[i] = string.format("%d", s) end
  local shp = #dims == 1 and "(" .. dims[1] .. ",)" or "(" .. table.concat(dims, ", ") .. ")"
  local dict = string.format("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shp)
  local pad = (64 - (10 + #dict + 1) % 64) % 64 -- the data starts at a multiple of 64
  dict = dict .. string.rep(" ", pad) .. "\n"
  return "\147NUMPY\1\0" .. string.char(#dict % 256, math.floor(#dict / 256)) .. dict
end

local function shape_str(shape)
  local parts = {}
  for i, s in ipairs(shape) do parts[i] = string.format("%d", s) end
  return "(" .. table.concat(parts, ", ") .. (#parts == 1 and ",)" or ")")
end

local function prod(t, from)
  local p = 1
  for i = from or 1, #t do p = p * t[i] end
  return p
end

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function write_file(path, s)
  local f, err = io.open(path, "wb")
  if not f then fail(err) end
  f:write(s)
  f:close()
end

-- The bytes (after the header) and the header of a tensor, through vol.save.
local function tensor_bytes(t)
  local tmp = os.tmpname()
  vol.save(tmp, t)
  local f = assert(io.open(tmp, "rb"))
  local h = npy_parse_header(tmp, f)
  f:seek("set", h.offset)
  local body = f:read("*a")
  f:close()
  os.remove(tmp)
  return body, h
end

-- A tensor of the given float32 volumes' bytes, shape (#chunks, vshape...).
local function stack_volumes(chunks, vshape)
  local shape = {#chunks}
  for _, s in ipairs(vshape) do shape[#shape + 1] = s end
  local tmp = os.tmpname()
  write_file(tmp, npy_header_bytes("<f4", shape) .. table.concat(chunks))
  local ok, t = pcall(vol.load, tmp)
  os.remove(tmp)
  if not ok then error(t, 0) end
  return t
end

-- -- input sources: each gives `count`, `vshape` (C, D, H, W) and batch(i, n) -> tensor ----

local function synthetic_source(o)
  local vshape = {3, 24, 32, 32}
  if o.shape then
    vshape = {}
    for n in o.shape:gmatch("[^,x ]+") do vshape[#vshape + 1] = tonumber(n) end
    if #vshape ~= 4 then usage_error("--shape must be C,D,H,W (4 sizes), got '" .. o.shape .. "'") end
    for _, s in ipairs(vshape) do
      if not s or s < 1 or s ~= math.floor(s) then
        usage_error("--shape sizes must be positive integers, got '" .. o.shape .. "'")
      end
    end
  end
  local count = o.count or 16
  if count < 1 then usage_error("--count must be at least 1, got " .. count) end
  return {
    count = count, vshape = vshape,
    what = string.format("synthetic uniform [0, 1) (seed %d)", o.seed),
    -- n volumes from the first-th on; each batch has its own seed (from --seed and `first`)
    batch = function(first, n)
      return vol.rand({n, vshape[1], vshape[2], vshape[3], vshape[4]}, {seed = o.seed * 7919 + first})
    end,
  }
end

-- Lists the .npy files of a directory, sorted by name.
local function list_npy(dir)
  local q = "'" .. dir:gsub("'", "'\\''") .. "'"
  local p = io.popen("ls -1A -- " .. q .. " 2>/dev/null")
  local files = {}
  for name in p:lines() do
    if name:match("%.npy$") then files[#files + 1] = name end
  end
  p:close()
  table.sort(files)
  return files
end

-- true for a directory, false for a file, nil and a message when it cannot be opened.
local function is_dir(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local _, _, code = f:read(1)
  f:close()
  return code == 21 -- EISDIR
end

-- Volumes from .npy files: each file holds one volume (C, D, H, W) or several (N, C, D, H, W)
-- of the same shape; float32 files are read directly, others go through vol.load (float64 is
-- converted to float32 there).
local function files_source(paths, label)
  local entries = {} -- {path, index (0-based) within the file, header}
  local vshape
  for _, path in ipairs(paths) do
    local f, err = io.open(path, "rb")
    if not f then fail(err) end
    local ok, h = pcall(npy_parse_header, path, f)
    local size = f:seek("end")
    f:close()
    if not ok then error(h, 0) end
    if h.fortran then fail(path .. ": fortran_order arrays are not supported (save it C-ordered)") end
    local nd = #h.shape
    if nd ~= 4 and nd ~= 5 then
      fail(path .. ": expected one volume (C, D, H, W) or a batch (N, C, D, H, W), got shape " ..
           shape_str(h.shape))
    end
    local vs = {}
    for i = nd - 3, nd do vs[#vs + 1] = h.shape[i] end
    if not vshape then vshape = vs
    elseif shape_str(vs) ~= shape_str(vshape) then
      fail(string.format("%s: volumes of shape %s, but the first file's are %s", path,
                         shape_str(vs), shape_str(vshape)))
    end
    local itemsize = ({["<f4"] = 4, ["<f8"] = 8})[h.descr]
    if not itemsize then
      fail(path .. ": volumes must be float32 or float64 ('<f4', '<f8'), got '" .. h.descr .. "'")
    end
    if size < h.offset + prod(h.shape) * itemsize then
      fail(string.format("%s: truncated: %d bytes of data for a shape of %s", path,
                         size - h.offset, shape_str(h.shape)))
    end
    local n = nd == 5 and h.shape[1] or 1
    for i = 0, n - 1 do entries[#entries + 1] = {path, i, h} end
  end
  if #entries == 0 then fail(label .. ": no volumes") end
  local vbytes = prod(vshape) * 4
  local cache = {} -- the current file's handle (f4) or loaded bytes (converted)
  local function volume_bytes(e)
    local path, i, h = e[1], e[2], e[3]
    if cache.path ~= path then
      if cache.f then cache.f:close() end
      cache = {path = path}
      if h.descr == "<f4" then
        cache.f = assert(io.open(path, "rb"))
      else
        cache.body = tensor_bytes(vol.load(path))
      end
    end
    if cache.body then return cache.body:sub(i * vbytes + 1, (i + 1) * vbytes) end
    cache.f:seek("set", h.offset + i * vbytes)
    local b = cache.f:read(vbytes)
    if not b or #b < vbytes then fail(path .. ": truncated") end
    return b
  end
  return {
    count = #entries, vshape = vshape, what = label,
    batch = function(first, n)
      local e1 = entries[first]
      -- a batch that is exactly one whole float32 file: vol.load reads it directly
      if e1[3].descr == "<f4" and e1[2] == 0 and #e1[3].shape == 5 and e1[3].shape[1] == n then
        return vol.load(e1[1])
      end
      local chunks = {}
      for k = first, first + n - 1 do chunks[#chunks + 1] = volume_bytes(entries[k]) end
      return stack_volumes(chunks, vshape)
    end,
    close = function() if cache.f then cache.f:close() end end,
  }
end

local function input_source(o)
  if not o.input then return synthetic_source(o) end
  if o.shape or o.count then usage_error("--shape and --count are for synthetic volumes, not with --input") end
  local d, err = is_dir(o.input)
  if d == nil then fail(err) end
  if d then
    local names = list_npy(o.input)
    if #names == 0 then fail(o.input .. ": no .npy files in this directory") end
    local paths = {}
    local sep = o.input:sub(-1) == "/" and "" or "/"
    for i, n in ipairs(names) do paths[i] = o.input .. sep .. n end
    return files_source(paths, string.format("%d file%s in %s", #names, #names == 1 and "" or "s", o.input))
  end
  return files_source({o.input}, o.input)
end

-- -- the model ----

-- GroupNorm's default affine (weight 1, bias 0) makes this model's answer exactly 0 for every
-- volume (the mean of a normalised group is 0), so, as KernelBench's L2-23 does, the default
-- model draws GroupNorm's weight and bias at random (uniform [0.5, 1.5) and [-0.5, 0.5)).
local function default_model(seed)
  local m = nn.Sequential({
    {"conv", nn.Conv3d(3, 24, 3, {seed = seed})},
    {"group_norm", nn.GroupNorm(8, 24)},
    {"mean", nn.Mean()},
  })
  m.group_norm.weight = vol.rand({24}, {seed = seed + 1}) + 0.5
  m.group_norm.bias = vol.rand({24}, {seed = seed + 2}) - 0.5
  return m
end

local function load_model(path)
  local chunk, err = loadfile(path)
  if not chunk then fail("--model " .. err) end
  local ok, m = pcall(chunk, nn)
  if not ok then fail("--model " .. path .. ": " .. tostring(m)) end
  if type(m) == "function" then
    ok, m = pcall(m, nn)
    if not ok then fail("--model " .. path .. ": " .. tostring(m)) end
  end
  if not nn.is_module(m) then
    fail("--model " .. path .. ": must return an nn module (e.g. return nn.Sequential(...)), got " .. type(m))
  end
  return m
end

local function describe_fusion(model)
  if getmetatable(model) ~= nn.Sequential then return nil end
  local at = model:fusions(5)
  if #at == 0 then return nil end
  local ch = model:named_children()
  local parts = {}
  for _, i in ipairs(at) do
    parts[#parts + 1] = ch[i][1] .. " -> " .. ch[i + 1][1] .. " -> " .. ch[i + 2][1]
  end
  return table.concat(parts, ", ") .. " fused as vol.conv3d_group_norm_mean"
end

-- -- output: rows streamed to one .npy as batches finish ----

local function output_writer(path, total)
  local w = {rows = 0}
  local f
  function w.add(y)
    local body, h = tensor_bytes(y)
    if #h.shape == 0 then fail("the model's output is a scalar; --out needs one row per volume") end
    if not f then
      local shape = {total}
      for i = 2, #h.shape do shape[i] = h.shape[i] end
      w.shape = shape
      local err
      f, err = io.open(path, "wb")
      if not f then fail("--out " .. err) end
      f:write(npy_header_bytes(h.descr, shape))
    end
    f:write(body)
    w.rows = w.rows + h.shape[1]
  end
  function w.close()
    if f then f:close() end
    if w.rows ~= total then
      os.remove(path)
      fail(string.format("--out: the model gave %d rows for %d volumes (its output must start with the batch size)",
                         w.rows, total))
    end
  end
  return w
end

-- -- progress ----

local function format_duration(s)
  if s ~= s or s == math.huge then return "?" end
  s = math.floor(s + 0.5)
  if s < 60 then return s .. "s" end
  if s < 3600 then return string.format("%dm%02ds", math.floor(s / 60), s % 60) end
  return string.format("%dh%02dm", math.floor(s / 3600), math.floor(s % 3600 / 60))
end

local function progress(quiet)
  local p = {last = -math.huge, width = 0}
  function p.update(done, total, elapsed, final)
    if quiet then return end
    local rate = elapsed > 0 and done / elapsed or 0
    local line = string.format("pipeline: %d/%d volumes, %.1f volumes/s, ETA %s", done, total, rate,
                               final and "0s" or format_duration((total - done) / rate))
    if stderr_is_tty then
      io.stderr:write("\r", line, string.rep(" ", math.max(0, p.width - #line)))
      p.width = #line
      if final then io.stderr:write("\n") end
    elseif final or now() - p.last >= 2 then -- a log file gets a line every 2 s at most
      io.stderr:write(line, "\n")
      p.last = now()
    end
    io.stderr:flush()
  end
  return p
end

-- -- the picture: input slices beside output slices ----

-- The first volume of a batch as a (1, C, D, H, W) tensor.
local function first_volume(x)
  local body, h = tensor_bytes(x)
  local vshape = {}
  for i = 2, #h.shape do vshape[#vshape + 1] = h.shape[i] end
  return stack_volumes({body:sub(1, prod(vshape) * 4)}, vshape)
end

-- The model's last 5-D result on x (children one by one, so a fused mean does not hide it).
local function last_volume_output(model, x)
  local last
  local function run(m, v)
    if getmetatable(m) == nn.Sequential then
      for _, c in ipairs(m:children()) do v = run(c, v) end
      return v
    end
    local y = m(v)
    if y:dim() == 5 then last = y end
    return y
  end
  run(model, x)
  return last
end

local function write_png(path, model, x, device)
  local x1 = first_volume(x)
  local y1 = last_volume_output(model, x1:to(device))
  y1 = y1 and y1:cpu()
  local D = x1.shape[3]
  local nrows = math.min(4, D)
  local gap, nan = 2, 0 / 0 -- gaps are NaN, which save_png draws black
  -- channel 1 at depth d as rows of raw values; lo/hi track the shown values' range
  local function slice(t, d, r)
    local H, W = t.shape[4], t.shape[5]
    local rows = {}
    for h = 1, H do
      local row = {}
      for w = 1, W do
        local v = t:get(1, 1, d, h, w)
        row[w] = v
        if v == v then r.lo, r.hi = math.min(r.lo, v), math.max(r.hi, v) end
      end
      rows[h] = row
    end
    return rows, H, W
  end
  local rin, rout = {lo = math.huge, hi = -math.huge}, {lo = math.huge, hi = -math.huge}
  local pairs_ = {}
  for k = 1, nrows do
    local d = nrows == 1 and math.floor((D + 1) / 2) or 1 + math.floor((k - 1) * (D - 1) / (nrows - 1) + 0.5)
    local p = {}
    p.left, p.H, p.W = slice(x1, d, rin)
    p.H2, p.W2 = 0, 0
    if y1 then
      local D2 = y1.shape[3]
      local d2 = 1 + math.floor((d - 1) * (D2 - 1) / math.max(D - 1, 1) + 0.5)
      p.right, p.H2, p.W2 = slice(y1, d2, rout)
    end
    pairs_[k] = p
  end
  -- each side scaled to [0, 1] over its own shown values
  local function norm(v, r)
    if v ~= v then return nan end
    return r.hi > r.lo and (v - r.lo) / (r.hi - r.lo) or 0
  end
  local picture = {}
  for k, p in ipairs(pairs_) do
    local width = p.W + (y1 and gap + p.W2 or 0)
    for h = 1, math.max(p.H, p.H2) do
      local row = {}
      for c = 1, width do row[c] = nan end
      for c = 1, p.W do if p.left[h] then row[c] = norm(p.left[h][c], rin) end end
      for c = 1, p.W2 do if p.right[h] then row[p.W + gap + c] = norm(p.right[h][c], rout) end end
      picture[#picture + 1] = row
    end
    if k < nrows then
      for _ = 1, gap do
        local row = {}
        for c = 1, width do row[c] = nan end
        picture[#picture + 1] = row
      end
    end
  end
  local width = #picture[1]
  local scale = math.max(1, math.min(8, math.floor(512 / width)))
  vol.save_png(path, vol.tensor(picture), {vmin = 0, vmax = 1, scale = scale, cmap = "viridis"})
  return y1 ~= nil
end

-- -- main ----

local function main(argv)
  local o = parse_args(argv)
  if o.help then
    io.write(USAGE)
    return
  end
  o.seed = o.seed or 0
  if o.batch and o.batch < 1 then usage_error("--batch must be at least 1, got " .. o.batch) end
  local batch = o.batch or 16
  if o.device and o.device ~= "cpu" and o.device ~= "cuda" then
    usage_error("--device must be cpu or cuda, got '" .. o.device .. "'")
  end
  local device = o.device or (vol.cuda_available() and "cuda" or "cpu")
  local device_note
  if device == "cuda" and not vol.cuda_available() then
    local _, reason = vol.cuda_info()
    device_note = "--device cuda: no GPU available (" .. tostring(reason) .. "); running on the CPU"
    io.stderr:write("pipeline: note: ", device_note, "\n")
    device = "cpu"
  end

  vol.manual_seed(o.seed)
  local model = o.model and load_model(o.model) or default_model(o.seed)
  local weights_what = string.format("conv initialised as PyTorch does (kaiming-uniform), GroupNorm affine random, seed %d", o.seed)
  if o.weights then
    local ok, sd = pcall(vol.load_safetensors, o.weights)
    if not ok then fail("--weights " .. tostring(sd)) end
    local ok2, err = pcall(model.load_state_dict, model, sd)
    if not ok2 then fail("--weights " .. o.weights .. ": " .. tostring(err)) end
    local n = 0
    for _ in pairs(sd) do n = n + 1 end
    weights_what = string.format("%s (%d tensors)", o.weights, n)
  end
  model:to(device)

  local src = input_source(o)
  if not o.model and src.vshape[1] ~= 3 then
    fail(string.format("the default model takes 3 channels, the volumes have %d (describe another with --model)",
                       src.vshape[1]))
  end
  local writer = o.out and output_writer(o.out, src.count)
  local prog = progress(o.quiet)

  local t0 = now()
  local t_load, done, nbatches = 0, 0, 0
  local first_x, out_shape, sample
  while done < src.count do
    local n = math.min(batch, src.count - done)
    local tl = now()
    local x = src.batch(done + 1, n)
    t_load = t_load + (now() - tl)
    if not first_x and o.png then first_x = x end
    if device ~= "cpu" then x = x:to(device) end
    local y = model(x)
    y = y:cpu() -- waits for the GPU, so the times below are real
    if writer then writer.add(y) end
    out_shape = y.shape
    if not sample and y:numel() > 0 then
      sample = {}
      local flat = y:reshape({-1})
      for i = 1, math.min(4, flat:numel()) do sample[i] = string.format("%.6g", flat:get(i)) end
    end
    done = done + n
    nbatches = nbatches + 1
    prog.update(done, src.count, now() - t0, done == src.count)
  end
  local elapsed = now() - t0
  if src.close then src.close() end
  if writer then writer.close() end

  local png_note
  if o.png then
    local had_output = write_png(o.png, model, first_x, device)
    png_note = o.png .. (had_output and " (input | output, depth slices of channel 1)"
                                      or " (input only: the model gives no volume)")
  end

  -- the summary
  local function say(k, v) io.write(string.format("  %-8s %s\n", k, v)) end
  local dev_name = device == "cuda" and ("cuda (" .. tostring(vol.cuda_info()) .. ")") or "cpu"
  io.write(string.format("pipeline: ran %s on %s\n", o.model or "KernelBench L2-23 (Conv3d -> GroupNorm -> mean)",
                         dev_name))
  say("model", (tostring(model):gsub("\n", "\n           ")))
  local fusion = describe_fusion(model)
  if fusion then say("", fusion) end
  say("weights", weights_what)
  say("input", string.format("%d volume%s of %s, %s", src.count, src.count == 1 and "" or "s",
                             shape_str(src.vshape), src.what))
  say("batches", string.format("%d of up to %d", nbatches, batch))
  if out_shape then
    local total = {src.count}
    for i = 2, #out_shape do total[i] = out_shape[i] end
    say("output", string.format("%s%s; first values %s", shape_str(total),
                                #total == 1 and ", one number per volume" or "",
                                table.concat(sample or {}, ", ")))
  end
  say("time", string.format("%.3f s, %.1f volumes/s (reading input %.3f s)", elapsed,
                            elapsed > 0 and src.count / elapsed or 0, t_load))
  if device_note then say("note", device_note) end
  if writer then say("saved", string.format("%s %s", o.out, shape_str(writer.shape))) end
  if png_note then say("picture", png_note) end
end

local ok, err = pcall(main, arg and {unpack(arg, 1, #arg)} or {...})
if not ok then
  local msg = type(err) == "table" and err.pipeline or tostring(err)
  io.stderr:write(stderr_is_tty and "\n" or "", "pipeline: ", msg, "\n")
  os.exit(1, true)
end
