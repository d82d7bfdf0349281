-- pipeline_spec.lua: the PyTorch-to-volua path on volua's own reference cases (spec/cases, made by
-- spec/cases/make_cases.py with an independent float64 reference, checked against PyTorch by
-- bench/export_model.py): through nn modules and load_state_dict, and through
-- scripts/pipeline.lua (--weights, --input dir/, --out); and the script's other options and errors.
local vol = require "volua"
local nn = require "volua.nn"

local VOLUA = os.getenv("VOLUA") or "build/bin/volua"
local CASES = "spec/cases"
local FP32 = {rtol = 1e-4, atol = 1e-5}
local device = os.getenv("VOLUA_TEST_DEVICE") or "cpu"

local function load_cases()
  local by_name = {}
  for _, c in ipairs(assert(loadfile(CASES .. "/cases.lua"))()) do by_name[c.name] = c end
  return by_name
end
local cases = load_cases()
local function case_path(p) return CASES .. "/" .. p end

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs the pipeline script with the given arguments: stdout, stderr, exit status.
local function pipeline(args)
  local errf = os.tmpname()
  local parts = {quote(VOLUA), "scripts/pipeline.lua"}
  for _, a in ipairs(args) do parts[#parts + 1] = quote(a) end
  local p = io.popen(table.concat(parts, " ") .. " 2>" .. errf .. "; echo \"__rc=$?\"")
  local out = p:read("*a")
  p:close()
  local f = io.open(errf, "rb")
  local err = f:read("*a")
  f:close()
  os.remove(errf)
  local rc = tonumber(out:match("__rc=(%d+)%s*$"))
  return out:gsub("__rc=%d+%s*$", ""), err, rc
end

local function has(s, sub)
  assert.is_truthy(s:find(sub, 1, true), "expected to find [" .. sub .. "] in [" .. s .. "]")
end

local function close(got, want)
  assert.same(want.shape, got.shape)
  assert.is_true(vol.allclose(got:cpu(), want, FP32), "max abs diff " .. vol.max_abs_diff(got:cpu(), want))
end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. quote(d)))
  return d
end

local function rmdir(d) os.execute("rm -rf " .. quote(d)) end

-- The Sequential a case describes (PyTorch's Model: conv, group_norm; mean in forward).
local function case_model(c)
  local a = c.args
  local w = vol.load_safetensors(case_path(a.weights))
  local cin = w["conv.weight"].shape[2] * (a.groups or 1)
  local cout = w["conv.weight"].shape[1]
  local m = nn.Sequential({
    {"conv", nn.Conv3d(cin, cout, a.kernel_size, {stride = a.stride, padding = a.padding,
                                                   dilation = a.dilation, groups = a.groups})},
    {"group_norm", nn.GroupNorm(a.num_groups, cout, {eps = a.eps})},
    {"mean", nn.Mean()}})
  m:load_state_dict(w)
  return m:to(device)
end

describe("reference cases through nn modules on " .. device, function()
  for _, name in ipairs({"example", "strided_groups"}) do
    it(name .. ": load_state_dict(load_safetensors) and the fused forward match the reference", function()
      local c = cases[name]
      local m = case_model(c)
      local x = vol.load(case_path(c.inputs.x)):to(device)
      local want = vol.load(case_path(c.outputs.out))
      close(m(x), want)
      m.fuse = false
      close(m(x), want)
      assert.is_true(want:abs():max() > 1e-3) -- not a trivially zero mean
      if c.outputs.feat then -- the GroupNorm output itself, without the mean
        close(m.group_norm(m.conv(x)), vol.load(case_path(c.outputs.feat)))
      end
    end)
  end
end)

describe("scripts/pipeline.lua", function()
  local example = cases.example
  local weights = case_path(example.args.weights)
  local input_dir = case_path(example.args.input_dir)
  local expected = vol.load(case_path(example.outputs.out))

  it("runs with defaults: a synthetic batch through the fused L2-23 model, with a summary", function()
    local out, err, rc = pipeline({"--device", "cpu"})
    assert.equal(0, rc, err)
    has(out, "pipeline: ran KernelBench L2-23 (Conv3d -> GroupNorm -> mean) on cpu")
    has(out, "(conv): Conv3d(3, 24, kernel_size=(3, 3, 3), stride=(1, 1, 1))")
    has(out, "conv -> group_norm -> mean fused as vol.conv3d_group_norm_mean")
    has(out, "16 volumes of (3, 24, 32, 32), synthetic uniform [0, 1) (seed 0)")
    has(out, "conv initialised as PyTorch does (kaiming-uniform), GroupNorm affine random, seed 0")
    assert.is_truthy(out:match("time%s+[%d.]+ s, [%d.]+ volumes/s"))
    has(err, "pipeline: 16/16 volumes,") -- the progress line
    assert.is_truthy(err:match("[%d.]+ volumes/s, ETA"))
  end)

  it("gives PyTorch's numbers on a directory of volumes, batched across files (--out)", function()
    local d = tmpdir()
    local y = d .. "/y.npy"
    local out, err, rc = pipeline({"--model", "scripts/example/model.lua", "--weights", weights,
                                   "--input", input_dir, "--batch", "2", "--out", y, "--device", device})
    assert.equal(0, rc, err)
    has(out, "5 volumes of (3, 8, 12, 10), 4 files in " .. input_dir)
    has(out, "3 of up to 2")
    has(out, "saved    " .. y .. " (5,)")
    has(err, "pipeline: 5/5 volumes")
    close(vol.load(y), expected)
    -- the default model has the same names and architecture; one file as --input
    out, err, rc = pipeline({"--weights", weights, "--input", case_path(example.inputs.x), "--out", y,
                             "--device", device})
    assert.equal(0, rc, err)
    close(vol.load(y), expected)
    rmdir(d)
  end)

  it("gives PyTorch's numbers on the golden l2_small case (weights saved by PyTorch)", function()
    local golden = os.getenv("VOLUA_GOLDEN") or "../shared/golden"
    local f = io.open(golden .. "/l2_small/model.safetensors", "rb")
    if not f then return pending("no " .. golden .. "/l2_small") end
    f:close()
    local d = tmpdir()
    local model = d .. "/l2_small.lua"
    f = assert(io.open(model, "w"))
    f:write('local nn = ...\nreturn nn.Sequential({{"conv", nn.Conv3d(3, 16, 3)}, ',
            '{"group_norm", nn.GroupNorm(8, 16)}, {"mean", nn.Mean()}})\n')
    f:close()
    local out, err, rc = pipeline({"--model", model, "--weights", golden .. "/l2_small/model.safetensors",
                                   "--input", golden .. "/l2_small/x.npy", "--out", d .. "/y.npy",
                                   "--batch", "3", "--device", device})
    assert.equal(0, rc, err)
    has(out, "fused as vol.conv3d_group_norm_mean")
    close(vol.load(d .. "/y.npy"), vol.load(golden .. "/l2_small/out.npy"))
    rmdir(d)
  end)

  it("writes one row per volume for a model without a mean", function()
    local d = tmpdir()
    local model = d .. "/m.lua"
    local f = assert(io.open(model, "w"))
    f:write("local nn = ...\nreturn nn.Sequential(nn.Conv3d(3, 2, 3, {seed = 1}), nn.ReLU(), nn.MaxPool3d(2))\n")
    f:close()
    local out, err, rc = pipeline({"--model", model, "--count", "3", "--batch", "2", "--shape", "3,6,6,6",
                                   "--out", d .. "/y.npy", "--png", d .. "/p.png"})
    assert.equal(0, rc, err)
    assert.same({3, 2, 2, 2, 2}, vol.load(d .. "/y.npy").shape)
    assert.is_nil(out:find("fused", 1, true))
    rmdir(d)
  end)

  it("--device cuda without a GPU runs on the CPU with a note", function()
    local out, err, rc = pipeline({"--device", "cuda", "--count", "2", "--shape", "3,5,5,5"})
    assert.equal(0, rc, err)
    if vol.cuda_available() then
      has(out, "on cuda (")
    else
      has(err, "pipeline: note: --device cuda: no GPU available (")
      has(err, "running on the CPU")
      has(out, " on cpu\n")
      has(out, "note     --device cuda: no GPU available")
    end
  end)

  it("--png writes input and output slices side by side", function()
    local d = tmpdir()
    local png = d .. "/slices.png"
    local out, err, rc = pipeline({"--weights", weights, "--input", input_dir, "--png", png, "--quiet"})
    assert.equal(0, rc, err)
    has(out, "picture  " .. png .. " (input | output")
    assert.equal("", err) -- --quiet: no progress line
    local img = vol.load_png(png)
    -- 4 depth slices of 12 x (10 + 2 + 8), scaled up by the same integer
    local h, w, c = img.shape[1], img.shape[2], img.shape[3]
    assert.equal(3, c)
    assert.equal(0, w % 20)
    local s = w / 20
    assert.equal((4 * 12 + 3 * 2) * s, h)
    assert.is_true(img:max() > img:min())
    -- the gap between input and output is black
    assert.same({0, 0, 0}, {img:get(1, 10 * s + 1, 1), img:get(1, 10 * s + 1, 2), img:get(1, 10 * s + 1, 3)})
    rmdir(d)
  end)

  it("--help prints the usage", function()
    local out, _, rc = pipeline({"--help"})
    assert.equal(0, rc)
    has(out, "usage: volua scripts/pipeline.lua [options]")
    for _, opt in ipairs({"--weights", "--input", "--batch", "--out", "--device", "--seed", "--png", "--model"}) do
      has(out, opt)
    end
  end)

  it("answers bad arguments with a usage error (status 2)", function()
    local bad = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"--batch"}, "--batch needs a value"},
      {{"--batch", "two"}, "--batch must be an integer, got 'two'"},
      {{"--batch", "0"}, "--batch must be at least 1, got 0"},
      {{"--device", "tpu"}, "--device must be cpu or cuda, got 'tpu'"},
      {{"volumes/"}, "unexpected argument 'volumes/'"},
      {{"--shape", "3,4"}, "--shape must be C,D,H,W"},
      {{"--input", input_dir, "--count", "3"}, "--shape and --count are for synthetic volumes"},
      {{"--quiet=yes"}, "--quiet takes no value"},
    }
    for _, b in ipairs(bad) do
      local _, err, rc = pipeline(b[1])
      assert.equal(2, rc, table.concat(b[1], " ") .. ": " .. err)
      has(err, "pipeline: " .. b[2])
      has(err, "--help")
    end
  end)

  it("fails with a clear message on bad files (status 1)", function()
    local d = tmpdir()
    local f = assert(io.open(d .. "/notmodel.lua", "w"))
    f:write("return 42\n")
    f:close()
    vol.save(d .. "/a.npy", vol.rand({3, 4, 4, 4}))
    vol.save(d .. "/b.npy", vol.rand({3, 5, 4, 4}))
    local bad = {
      {{"--input", d .. "/missing"}, d .. "/missing: No such file or directory"},
      {{"--input", d}, d .. "/b.npy: volumes of shape (3, 5, 4, 4), but the first file's are (3, 4, 4, 4)"},
      {{"--weights", case_path("strided_groups/model.safetensors")},
       "size mismatch for conv.weight: copying a param with shape (8, 2, 3, 2, 3)"},
      {{"--weights", d .. "/a.npy"}, "--weights load_safetensors: " .. d .. "/a.npy"},
      {{"--model", d .. "/notmodel.lua"}, "must return an nn module"},
      {{"--model", d .. "/none.lua"}, "--model cannot open"},
    }
    for _, b in ipairs(bad) do
      local _, err, rc = pipeline(b[1])
      assert.equal(1, rc, table.concat(b[1], " ") .. ": " .. err)
      has(err, b[2])
    end
    rmdir(d)
  end)
end)
