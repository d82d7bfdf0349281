-- png_spec.lua: vol.save_png writes montages of slices (and 2-D images) that vol.load_png (libpng's
-- reader) decodes back to the expected size and pixel values; the header is also checked from the
-- file's bytes; bad arguments and bad files raise errors by name.
local vol = require "volua"

local tmp = os.tmpname()
local function cleanup() os.remove(tmp) end

-- 0..255 as save_png maps v in [lo, hi]
local function level(v, lo, hi)
  local u = (v - lo) / (hi - lo)
  if u <= 0 then return 0 end
  if u >= 1 then return 255 end
  return math.floor(u * 255 + 0.5)
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local function has(s, sub)
  assert.is_truthy(s:find(sub, 1, true), "expected to find [" .. sub .. "] in [" .. s .. "]")
end

-- Width, height, bit depth and colour type from the PNG's IHDR chunk, read as bytes.
local function ihdr(path)
  local f = assert(io.open(path, "rb"))
  local b = f:read(33)
  f:close()
  assert.equal("\137PNG\r\n\26\n", b:sub(1, 8))
  assert.equal("IHDR", b:sub(13, 16))
  local function u32(i)
    local x1, x2, x3, x4 = b:byte(i, i + 3)
    return ((x1 * 256 + x2) * 256 + x3) * 256 + x4
  end
  return u32(17), u32(21), b:byte(25), b:byte(26)
end

describe("vol.save_png", function()
  after_each(cleanup)

  it("writes a 2-D tensor as a grayscale image, min/max normalised", function()
    local t = vol.arange(12):reshape({3, 4})
    local w, h = vol.save_png(tmp, t)
    assert.same({4, 3}, {w, h})
    local iw, ih, depth, ctype = ihdr(tmp)
    assert.same({4, 3, 8, 0}, {iw, ih, depth, ctype}) -- 8-bit gray
    local img = vol.load_png(tmp)
    assert.same({3, 4}, img.shape)
    for r = 1, 3 do
      for c = 1, 4 do
        assert.equal(level((r - 1) * 4 + (c - 1), 0, 11), img:get(r, c))
      end
    end
  end)

  it("draws a volume's slices along axis 1 side by side with a black gap", function()
    local x = vol.arange(2 * 3 * 4):reshape({2, 3, 4}) -- (D, H, W)
    local w, h = vol.save_png(tmp, x)
    assert.same({9, 3}, {w, h}) -- 2 tiles of 4 wide, 1 pixel gap
    local img = vol.load_png(tmp)
    assert.same({3, 9}, img.shape)
    for r = 1, 3 do
      assert.equal(0, img:get(r, 5))
      for c = 1, 4 do
        assert.equal(level((r - 1) * 4 + c - 1, 0, 23), img:get(r, c))
        assert.equal(level(12 + (r - 1) * 4 + c - 1, 0, 23), img:get(r, 5 + c))
      end
    end
  end)

  it("slices along axis 2 and 3, in a grid of cols", function()
    local x = vol.arange(2 * 3 * 4):reshape({2, 3, 4})
    -- axis 2: 3 tiles of (D=2, W=4), 2 columns -> 2 rows
    local w, h = vol.save_png(tmp, x, {axis = 2})
    assert.same({9, 5}, {w, h})
    local img = vol.load_png(tmp)
    -- tile 3 (h = 3) is in row 2, column 1: pixel (d, w) = x[d, 3, w]
    for d = 1, 2 do
      for c = 1, 4 do
        assert.equal(level((d - 1) * 12 + 2 * 4 + c - 1, 0, 23), img:get(3 + d, c))
      end
    end
    assert.equal(0, img:get(4, 6)) -- the empty fourth place stays black
    -- axis 3: 4 tiles of (D=2, H=3), cols = 4 -> one row
    w, h = vol.save_png(tmp, x, {axis = 3, cols = 4, gap = 0})
    assert.same({12, 2}, {w, h})
    img = vol.load_png(tmp)
    assert.equal(level(1 * 12 + 2 * 4 + 3, 0, 23), img:get(2, 3 * 3 + 3)) -- tile w=4: x[2, 3, 4]
  end)

  it("picks slices by count or by 1-based index, normalising over the shown ones", function()
    local x = vol.arange(5 * 2 * 2):reshape({5, 2, 2})
    local w, h = vol.save_png(tmp, x, {slices = {-1}})
    assert.same({2, 2}, {w, h})
    local img = vol.load_png(tmp)
    assert.equal(0, img:get(1, 1))     -- 16 is the shown minimum
    assert.equal(255, img:get(2, 2))   -- 19 the maximum
    assert.equal(level(17, 16, 19), img:get(1, 2))
    w = vol.save_png(tmp, x, {slices = 3, cols = 3, gap = 0}) -- slices 1, 3, 5
    assert.equal(6, w)
    img = vol.load_png(tmp)
    assert.equal(level(8, 0, 19), img:get(1, 3)) -- slice 3 starts at 8
    w, h = vol.save_png(tmp, x, {slices = 1})    -- the middle slice
    assert.same({2, 2}, {w, h})
    assert.equal(0, vol.load_png(tmp):get(1, 1))
  end)

  it("scales pixels up and clamps to vmin/vmax", function()
    local t = vol.tensor({{-1, 0.25}, {0.5, 2}})
    local w, h = vol.save_png(tmp, t, {scale = 3, vmin = 0, vmax = 1})
    assert.same({6, 6}, {w, h})
    local img = vol.load_png(tmp)
    for r = 1, 3 do
      for c = 1, 3 do
        assert.equal(0, img:get(r, c))
        assert.equal(level(0.25, 0, 1), img:get(r, c + 3))
        assert.equal(level(0.5, 0, 1), img:get(r + 3, c))
        assert.equal(255, img:get(r + 3, c + 3))
      end
    end
  end)

  it("colours with viridis and magma (RGB)", function()
    local t = vol.tensor({{0, 1}})
    vol.save_png(tmp, t, {cmap = "viridis"})
    local _, _, _, ctype = ihdr(tmp)
    assert.equal(2, ctype) -- RGB
    local img = vol.load_png(tmp)
    assert.same({1, 2, 3}, img.shape)
    assert.same({68, 1, 84}, {img:get(1, 1, 1), img:get(1, 1, 2), img:get(1, 1, 3)})
    assert.same({253, 231, 37}, {img:get(1, 2, 1), img:get(1, 2, 2), img:get(1, 2, 3)})
    vol.save_png(tmp, t, {cmap = "magma"})
    img = vol.load_png(tmp)
    assert.same({0, 0, 4}, {img:get(1, 1, 1), img:get(1, 1, 2), img:get(1, 1, 3)})
    assert.same({252, 253, 191}, {img:get(1, 2, 1), img:get(1, 2, 2), img:get(1, 2, 3)})
  end)

  it("draws NaN black, ignores it for the range, and a constant image as 0", function()
    local t = vol.tensor({{0 / 0, 1, 3}})
    vol.save_png(tmp, t)
    local img = vol.load_png(tmp)
    assert.same({0, 0, 255}, {img:get(1, 1), img:get(1, 2), img:get(1, 3)})
    vol.save_png(tmp, vol.full({2, 2}, 7))
    assert.equal(0, vol.load_png(tmp):max())
  end)

  it("takes a channel of a 4-D tensor and a sample of a 5-D one; int64 too", function()
    local x = vol.arange(2 * 3 * 1 * 2 * 2):reshape({2, 3, 1, 2, 2}) -- (N, C, D, H, W)
    vol.save_png(tmp, x, {batch = 2, channel = 3})
    local img = vol.load_png(tmp)
    assert.same({2, 2}, img.shape)
    assert.equal(0, img:get(1, 1))   -- 20 .. 23
    assert.equal(255, img:get(2, 2))
    vol.save_png(tmp, x:reshape({6, 1, 2, 2}), {channel = 2}) -- (C, D, H, W): 4 .. 7
    assert.equal(level(5, 4, 7), vol.load_png(tmp):get(1, 2))
    local i = vol.arange(4, {dtype = "int64"}):reshape({2, 2})
    vol.save_png(tmp, i)
    assert.equal(255, vol.load_png(tmp):get(2, 2))
  end)

  it("draws a GPU tensor like its CPU copy", function()
    if not vol.cuda_available() then return pending("no GPU") end
    local x = vol.rand({3, 5, 6}, {seed = 3})
    vol.save_png(tmp, x)
    local want = vol.load_png(tmp)
    vol.save_png(tmp, x:cuda())
    assert.equal(0, vol.max_abs_diff(want, vol.load_png(tmp)))
  end)

  it("rejects bad arguments by name", function()
    local x = vol.rand({2, 3, 4})
    has(err_of(vol.save_png, tmp, "x"), "save_png: t must be a tensor, got string")
    has(err_of(vol.save_png, tmp, vol.rand({4})), "save_png: tensor must be 2-D (H, W), 3-D")
    has(err_of(vol.save_png, tmp, vol.rand({1, 1, 1, 1, 1, 1})), "got 6-D")
    has(err_of(vol.save_png, tmp, x, {axis = 4}), "save_png: axis must be 1 (D), 2 (H) or 3 (W), got 4")
    has(err_of(vol.save_png, tmp, x, {slices = 3}), "save_png: slices (3) must be between 1 and the size along the axis (2)")
    has(err_of(vol.save_png, tmp, x, {slices = {1, 3}}), "save_png: slices[2] (3) is out of range")
    has(err_of(vol.save_png, tmp, x, {slices = {}}), "save_png: slices is an empty list")
    has(err_of(vol.save_png, tmp, x, {cols = 0}), "save_png: cols must be at least 1")
    has(err_of(vol.save_png, tmp, x, {scale = 0}), "save_png: scale must be at least 1")
    has(err_of(vol.save_png, tmp, x, {gap = -1}), "save_png: gap must be non-negative")
    has(err_of(vol.save_png, tmp, x, {cmap = "jet"}), 'save_png: cmap must be "gray", "viridis" or "magma", got "jet"')
    has(err_of(vol.save_png, tmp, x, {vmin = 2, vmax = 1}), "save_png: vmin (2) is greater than vmax (1)")
    has(err_of(vol.save_png, tmp, x, {vmin = 0 / 0}), "save_png: vmin and vmax must be finite")
    has(err_of(vol.save_png, tmp, x, {colour = 1}), "save_png: unknown option 'colour'")
    has(err_of(vol.save_png, tmp, x, {channel = 1}), "save_png: channel applies to 4-D and 5-D tensors")
    has(err_of(vol.save_png, tmp, vol.rand({2, 2}), {axis = 1}), "save_png: axis applies to volumes")
    has(err_of(vol.save_png, tmp, vol.rand({2, 2, 2, 2}), {channel = 3}), "save_png: channel (3) is out of range")
    has(err_of(vol.save_png, tmp, vol.zeros({0, 2})), "save_png: tensor has a dimension of size 0")
    has(err_of(vol.save_png, tmp, vol.zeros({1, 2}), {scale = 600000}), "save_png: the picture would be too large")
    has(err_of(vol.save_png, "/nonexistent-dir/x.png", x), "save_png: /nonexistent-dir/x.png:")
  end)
end)

describe("vol.load_png", function()
  after_each(cleanup)

  it("raises errors for missing, foreign and truncated files", function()
    has(err_of(vol.load_png, "/nonexistent-dir/x.png"), "load_png: /nonexistent-dir/x.png:")
    local f = assert(io.open(tmp, "wb"))
    f:write("this is not a png file at all")
    f:close()
    has(err_of(vol.load_png, tmp), "load_png: " .. tmp .. ":")
    vol.save_png(tmp, vol.rand({16, 16}, {seed = 1}))
    f = assert(io.open(tmp, "rb"))
    local bytes = f:read("*a")
    f:close()
    f = assert(io.open(tmp, "wb"))
    f:write(bytes:sub(1, #bytes - 30))
    f:close()
    has(err_of(vol.load_png, tmp), "load_png: " .. tmp .. ":")
  end)
end)
