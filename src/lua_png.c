/* lua_png.c: pictures of tensors: vol.save_png (a montage of a volume's slices, or a 2-D image)
 * and vol.load_png, through libpng's simplified API.
 *
 * libpng reports errors by longjmp. The simplified API (png_image_*) keeps that setjmp inside
 * libpng and returns 0 with a message in image.message, so no Lua error is ever raised while
 * libpng is on the stack: every Lua-raising argument check happens before the first allocation,
 * the work runs in plain C functions that return a message, and only after everything is freed
 * is that message raised. */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_common.h"

/* Pictures bigger than this are refused rather than half-written (libpng's readers refuse
 * widths or heights above 1,000,000 by default, so a larger one could not be read back). */
#define PNG_MAX_SIDE 1000000
#define PNG_MAX_PIXELS ((int64_t)1 << 28)
/* With no `slices` option, a volume shows at most this many slices, evenly spaced. */
#define PNG_DEFAULT_MAX_SLICES 64

/* -- colormaps ---- */

/* matplotlib's viridis and magma (by Nathaniel J. Smith, Stefan van der Walt and Eric Firing,
 * released under CC0), sampled to 8 bits: 256 RGB entries each. */
static const uint8_t cmap_viridis[256 * 3] = {
   68,   1,  84,  68,   2,  86,  69,   4,  87,  69,   5,  89,  70,   7,  90,  70,   8,  92,  70,  10,  93,  70,  11,  94,
   71,  13,  96,  71,  14,  97,  71,  16,  99,  71,  17, 100,  71,  19, 101,  72,  20, 103,  72,  22, 104,  72,  23, 105,
   72,  24, 106,  72,  26, 108,  72,  27, 109,  72,  28, 110,  72,  29, 111,  72,  31, 112,  72,  32, 113,  72,  33, 115,
   72,  35, 116,  72,  36, 117,  72,  37, 118,  72,  38, 119,  72,  40, 120,  72,  41, 121,  71,  42, 122,  71,  44, 122,
   71,  45, 123,  71,  46, 124,  71,  47, 125,  70,  48, 126,  70,  50, 126,  70,  51, 127,  70,  52, 128,  69,  53, 129,
   69,  55, 129,  69,  56, 130,  68,  57, 131,  68,  58, 131,  68,  59, 132,  67,  61, 132,  67,  62, 133,  66,  63, 133,
   66,  64, 134,  66,  65, 134,  65,  66, 135,  65,  68, 135,  64,  69, 136,  64,  70, 136,  63,  71, 136,  63,  72, 137,
   62,  73, 137,  62,  74, 137,  62,  76, 138,  61,  77, 138,  61,  78, 138,  60,  79, 138,  60,  80, 139,  59,  81, 139,
   59,  82, 139,  58,  83, 139,  58,  84, 140,  57,  85, 140,  57,  86, 140,  56,  88, 140,  56,  89, 140,  55,  90, 140,
   55,  91, 141,  54,  92, 141,  54,  93, 141,  53,  94, 141,  53,  95, 141,  52,  96, 141,  52,  97, 141,  51,  98, 141,
   51,  99, 141,  50, 100, 142,  50, 101, 142,  49, 102, 142,  49, 103, 142,  49, 104, 142,  48, 105, 142,  48, 106, 142,
   47, 107, 142,  47, 108, 142,  46, 109, 142,  46, 110, 142,  46, 111, 142,  45, 112, 142,  45, 113, 142,  44, 113, 142,
   44, 114, 142,  44, 115, 142,  43, 116, 142,  43, 117, 142,  42, 118, 142,  42, 119, 142,  42, 120, 142,  41, 121, 142,
   41, 122, 142,  41, 123, 142,  40, 124, 142,  40, 125, 142,  39, 126, 142,  39, 127, 142,  39, 128, 142,  38, 129, 142,
   38, 130, 142,  38, 130, 142,  37, 131, 142,  37, 132, 142,  37, 133, 142,  36, 134, 142,  36, 135, 142,  35, 136, 142,
   35, 137, 142,  35, 138, 141,  34, 139, 141,  34, 140, 141,  34, 141, 141,  33, 142, 141,  33, 143, 141,  33, 144, 141,
   33, 145, 140,  32, 146, 140,  32, 146, 140,  32, 147, 140,  31, 148, 140,  31, 149, 139,  31, 150, 139,  31, 151, 139,
   31, 152, 139,  31, 153, 138,  31, 154, 138,  30, 155, 138,  30, 156, 137,  30, 157, 137,  31, 158, 137,  31, 159, 136,
   31, 160, 136,  31, 161, 136,  31, 161, 135,  31, 162, 135,  32, 163, 134,  32, 164, 134,  33, 165, 133,  33, 166, 133,
   34, 167, 133,  34, 168, 132,  35, 169, 131,  36, 170, 131,  37, 171, 130,  37, 172, 130,  38, 173, 129,  39, 173, 129,
   40, 174, 128,  41, 175, 127,  42, 176, 127,  44, 177, 126,  45, 178, 125,  46, 179, 124,  47, 180, 124,  49, 181, 123,
   50, 182, 122,  52, 182, 121,  53, 183, 121,  55, 184, 120,  56, 185, 119,  58, 186, 118,  59, 187, 117,  61, 188, 116,
   63, 188, 115,  64, 189, 114,  66, 190, 113,  68, 191, 112,  70, 192, 111,  72, 193, 110,  74, 193, 109,  76, 194, 108,
   78, 195, 107,  80, 196, 106,  82, 197, 105,  84, 197, 104,  86, 198, 103,  88, 199, 101,  90, 200, 100,  92, 200,  99,
   94, 201,  98,  96, 202,  96,  99, 203,  95, 101, 203,  94, 103, 204,  92, 105, 205,  91, 108, 205,  90, 110, 206,  88,
  112, 207,  87, 115, 208,  86, 117, 208,  84, 119, 209,  83, 122, 209,  81, 124, 210,  80, 127, 211,  78, 129, 211,  77,
  132, 212,  75, 134, 213,  73, 137, 213,  72, 139, 214,  70, 142, 214,  69, 144, 215,  67, 147, 215,  65, 149, 216,  64,
  152, 216,  62, 155, 217,  60, 157, 217,  59, 160, 218,  57, 162, 218,  55, 165, 219,  54, 168, 219,  52, 170, 220,  50,
  173, 220,  48, 176, 221,  47, 178, 221,  45, 181, 222,  43, 184, 222,  41, 186, 222,  40, 189, 223,  38, 192, 223,  37,
  194, 223,  35, 197, 224,  33, 200, 224,  32, 202, 225,  31, 205, 225,  29, 208, 225,  28, 210, 226,  27, 213, 226,  26,
  216, 226,  25, 218, 227,  25, 221, 227,  24, 223, 227,  24, 226, 228,  24, 229, 228,  25, 231, 228,  25, 234, 229,  26,
  236, 229,  27, 239, 229,  28, 241, 229,  29, 244, 230,  30, 246, 230,  32, 248, 230,  33, 251, 231,  35, 253, 231,  37,
};

static const uint8_t cmap_magma[256 * 3] = {
    0,   0,   4,   1,   0,   5,   1,   1,   6,   1,   1,   8,   2,   1,   9,   2,   2,  11,   2,   2,  13,   3,   3,  15,
    3,   3,  18,   4,   4,  20,   5,   4,  22,   6,   5,  24,   6,   5,  26,   7,   6,  28,   8,   7,  30,   9,   7,  32,
   10,   8,  34,  11,   9,  36,  12,   9,  38,  13,  10,  41,  14,  11,  43,  16,  11,  45,  17,  12,  47,  18,  13,  49,
   19,  13,  52,  20,  14,  54,  21,  14,  56,  22,  15,  59,  24,  15,  61,  25,  16,  63,  26,  16,  66,  28,  16,  68,
   29,  17,  71,  30,  17,  73,  32,  17,  75,  33,  17,  78,  34,  17,  80,  36,  18,  83,  37,  18,  85,  39,  18,  88,
   41,  17,  90,  42,  17,  92,  44,  17,  95,  45,  17,  97,  47,  17,  99,  49,  17, 101,  51,  16, 103,  52,  16, 105,
   54,  16, 107,  56,  16, 108,  57,  15, 110,  59,  15, 112,  61,  15, 113,  63,  15, 114,  64,  15, 116,  66,  15, 117,
   68,  15, 118,  69,  16, 119,  71,  16, 120,  73,  16, 120,  74,  16, 121,  76,  17, 122,  78,  17, 123,  79,  18, 123,
   81,  18, 124,  82,  19, 124,  84,  19, 125,  86,  20, 125,  87,  21, 126,  89,  21, 126,  90,  22, 126,  92,  22, 127,
   93,  23, 127,  95,  24, 127,  96,  24, 128,  98,  25, 128, 100,  26, 128, 101,  26, 128, 103,  27, 128, 104,  28, 129,
  106,  28, 129, 107,  29, 129, 109,  29, 129, 110,  30, 129, 112,  31, 129, 114,  31, 129, 115,  32, 129, 117,  33, 129,
  118,  33, 129, 120,  34, 129, 121,  34, 130, 123,  35, 130, 124,  35, 130, 126,  36, 130, 128,  37, 130, 129,  37, 129,
  131,  38, 129, 132,  38, 129, 134,  39, 129, 136,  39, 129, 137,  40, 129, 139,  41, 129, 140,  41, 129, 142,  42, 129,
  144,  42, 129, 145,  43, 129, 147,  43, 128, 148,  44, 128, 150,  44, 128, 152,  45, 128, 153,  45, 128, 155,  46, 127,
  156,  46, 127, 158,  47, 127, 160,  47, 127, 161,  48, 126, 163,  48, 126, 165,  49, 126, 166,  49, 125, 168,  50, 125,
  170,  51, 125, 171,  51, 124, 173,  52, 124, 174,  52, 123, 176,  53, 123, 178,  53, 123, 179,  54, 122, 181,  54, 122,
  183,  55, 121, 184,  55, 121, 186,  56, 120, 188,  57, 120, 189,  57, 119, 191,  58, 119, 192,  58, 118, 194,  59, 117,
  196,  60, 117, 197,  60, 116, 199,  61, 115, 200,  62, 115, 202,  62, 114, 204,  63, 113, 205,  64, 113, 207,  64, 112,
  208,  65, 111, 210,  66, 111, 211,  67, 110, 213,  68, 109, 214,  69, 108, 216,  69, 108, 217,  70, 107, 219,  71, 106,
  220,  72, 105, 222,  73, 104, 223,  74, 104, 224,  76, 103, 226,  77, 102, 227,  78, 101, 228,  79, 100, 229,  80, 100,
  231,  82,  99, 232,  83,  98, 233,  84,  98, 234,  86,  97, 235,  87,  96, 236,  88,  96, 237,  90,  95, 238,  91,  94,
  239,  93,  94, 240,  95,  94, 241,  96,  93, 242,  98,  93, 242, 100,  92, 243, 101,  92, 244, 103,  92, 244, 105,  92,
  245, 107,  92, 246, 108,  92, 246, 110,  92, 247, 112,  92, 247, 114,  92, 248, 116,  92, 248, 118,  92, 249, 120,  93,
  249, 121,  93, 249, 123,  93, 250, 125,  94, 250, 127,  94, 250, 129,  95, 251, 131,  95, 251, 133,  96, 251, 135,  97,
  252, 137,  97, 252, 138,  98, 252, 140,  99, 252, 142, 100, 252, 144, 101, 253, 146, 102, 253, 148, 103, 253, 150, 104,
  253, 152, 105, 253, 154, 106, 253, 155, 107, 254, 157, 108, 254, 159, 109, 254, 161, 110, 254, 163, 111, 254, 165, 113,
  254, 167, 114, 254, 169, 115, 254, 170, 116, 254, 172, 118, 254, 174, 119, 254, 176, 120, 254, 178, 122, 254, 180, 123,
  254, 182, 124, 254, 183, 126, 254, 185, 127, 254, 187, 129, 254, 189, 130, 254, 191, 132, 254, 193, 133, 254, 194, 135,
  254, 196, 136, 254, 198, 138, 254, 200, 140, 254, 202, 141, 254, 204, 143, 254, 205, 144, 254, 207, 146, 254, 209, 148,
  254, 211, 149, 254, 213, 151, 254, 215, 153, 254, 216, 154, 253, 218, 156, 253, 220, 158, 253, 222, 160, 253, 224, 161,
  253, 226, 163, 253, 227, 165, 253, 229, 167, 253, 231, 169, 253, 233, 170, 253, 235, 172, 252, 236, 174, 252, 238, 176,
  252, 240, 178, 252, 242, 180, 252, 244, 182, 252, 246, 184, 252, 247, 185, 252, 249, 187, 252, 251, 189, 252, 253, 191,
};

typedef enum { CMAP_GRAY = 0, CMAP_VIRIDIS, CMAP_MAGMA } png_cmap;

static const uint8_t *cmap_table(png_cmap c) {
  return c == CMAP_VIRIDIS ? cmap_viridis : c == CMAP_MAGMA ? cmap_magma : NULL;
}

/* -- the picture to draw, once every argument has been read ---- */

/* A volume (D, H, W) of float32 or int64 values (CPU, contiguous), the slices to show along
 * `axis` (0-based), laid out `cols` to a row with `gap` pixels between tiles, each pixel
 * drawn as a `scale` x `scale` square. A 2-D image is a volume with D = 1 and one slice. */
typedef struct montage {
  const void *data;
  volua_dtype dtype;
  int64_t size[3];
  int axis;
  const int64_t *slices; /* 0-based */
  int64_t nslices;
  int64_t cols, rows, gap, scale;
  int64_t tile_h, tile_w; /* a slice's size in the volume, before scaling */
  int64_t width, height;  /* of the whole picture */
  double vmin, vmax;
  int has_vmin, has_vmax;
  png_cmap cmap;
} montage;

static double value_at(const montage *m, int64_t i) {
  return m->dtype == VOLUA_FLOAT32 ? (double)((const float *)m->data)[i]
                                   : (double)((const int64_t *)m->data)[i];
}

/* Flat index of pixel (r, c) of slice s: the slice fixes `axis`, (r, c) run over the other two. */
static int64_t volume_index(const montage *m, int64_t s, int64_t r, int64_t c) {
  int64_t idx[3];
  int k = 0;
  idx[m->axis] = s;
  for (int d = 0; d < 3; d++)
    if (d != m->axis) idx[d] = k++ == 0 ? r : c;
  return (idx[0] * m->size[1] + idx[1]) * m->size[2] + idx[2];
}

/* vmin/vmax not given: the finite min/max of the shown slices (NaN and inf are skipped;
 * with no finite value at all the range is [0, 1]). */
static void find_range(montage *m) {
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t t = 0; t < m->nslices; t++)
    for (int64_t r = 0; r < m->tile_h; r++)
      for (int64_t c = 0; c < m->tile_w; c++) {
        double v = value_at(m, volume_index(m, m->slices[t], r, c));
        if (isfinite(v)) {
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
      }
  if (lo > hi) lo = 0, hi = 1;
  if (!m->has_vmin) m->vmin = lo;
  if (!m->has_vmax) m->vmax = hi;
}

/* A value as a 0..255 level: linear between vmin and vmax, clamped; NaN is 0. */
static uint8_t level(const montage *m, double v) {
  if (isnan(v)) return 0;
  double range = m->vmax - m->vmin;
  double u = range > 0 ? (v - m->vmin) / range : (v > m->vmax ? 1.0 : 0.0);
  if (u <= 0) return 0;
  if (u >= 1) return 255;
  return (uint8_t)(u * 255.0 + 0.5);
}

/* Fills pixels (height x width x channels, zeroed: the gaps stay black). */
static void draw(const montage *m, uint8_t *pixels, int channels) {
  const uint8_t *lut = cmap_table(m->cmap);
  for (int64_t t = 0; t < m->nslices; t++) {
    int64_t y0 = (t / m->cols) * (m->tile_h * m->scale + m->gap);
    int64_t x0 = (t % m->cols) * (m->tile_w * m->scale + m->gap);
    for (int64_t r = 0; r < m->tile_h * m->scale; r++) {
      uint8_t *row = pixels + ((y0 + r) * m->width + x0) * channels;
      for (int64_t c = 0; c < m->tile_w * m->scale; c++) {
        double v = value_at(m, volume_index(m, m->slices[t], r / m->scale, c / m->scale));
        uint8_t g = level(m, v);
        if (!lut) row[c] = g;
        else if (isnan(v)) memset(row + 3 * c, 0, 3);
        else memcpy(row + 3 * c, lut + 3 * g, 3);
      }
    }
  }
}

/* Draws the picture and writes it to path. 0, or 1 with a message in err; frees what it takes. */
static int montage_write(montage *m, const char *path, char *err) {
  int channels = m->cmap == CMAP_GRAY ? 1 : 3;
  uint8_t *pixels = calloc((size_t)(m->width * m->height), (size_t)channels);
  if (!pixels) {
    snprintf(err, VOLUA_ERR_MAX, "save_png: out of memory for a %lldx%lld picture",
             (long long)m->width, (long long)m->height);
    return 1;
  }
  find_range(m);
  draw(m, pixels, channels);

  png_image image;
  memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = (png_uint_32)m->width;
  image.height = (png_uint_32)m->height;
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  int ok = png_image_write_to_file(&image, path, 0, pixels, 0, NULL);
  if (!ok)
    snprintf(err, VOLUA_ERR_MAX, "save_png: %s: %s", path,
             image.message[0] ? image.message : "libpng could not write the file");
  png_image_free(&image);
  free(pixels);
  return !ok;
}

/* -- save_png: reading the arguments (every Lua error is raised here, before any allocation) ---- */

static const char *const png_options[] = {"axis", "slices", "cols",  "cmap", "vmin", "vmax",
                                          "scale", "gap",   "channel", "batch", NULL};

static void check_option_names(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx))
    luaL_error(L, "save_png: options must be a table, got %s", luaL_typename(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "save_png: options must be named (axis = ...), got a %s key", luaL_typename(L, -1));
    const char *key = lua_tostring(L, -1);
    int known = 0;
    for (const char *const *n = png_options; *n; n++) known |= strcmp(key, *n) == 0;
    if (!known) luaL_error(L, "save_png: unknown option '%s'", key);
  }
}

static int has_option(lua_State *L, int idx, const char *key) {
  if (lua_isnoneornil(L, idx)) return 0;
  lua_getfield(L, idx, key);
  int has = !lua_isnil(L, -1);
  lua_pop(L, 1);
  return has;
}

/* A 1-based index into a dim of `size` (negative counts from the end) as 0-based, else an error. */
static int64_t check_index(lua_State *L, int64_t i, int64_t size, const char *what) {
  int64_t j = i < 0 ? i + size : i - 1;
  if (i == 0 || j < 0 || j >= size)
    luaL_error(L, "save_png: %s (%lld) is out of range for a size of %lld (1-based)", what,
               (long long)i, (long long)size);
  return j;
}

/* The slices to show along an axis of `size`: opts.slices as a count (evenly spaced, ends
 * included; one means the middle) or a list of 1-based indices. Kept in a userdata left on the
 * stack, so that an error on the way leaks nothing. */
static const int64_t *read_slices(lua_State *L, int idx, int64_t size, int64_t *n) {
  if (!lua_isnoneornil(L, idx)) lua_getfield(L, idx, "slices");
  else lua_pushnil(L);
  int64_t *s;
  if (lua_istable(L, -1)) {
    *n = (int64_t)lua_objlen(L, -1);
    if (*n == 0) luaL_error(L, "save_png: slices is an empty list");
    s = lua_newuserdata(L, (size_t)*n * sizeof *s);
    for (int64_t i = 0; i < *n; i++) {
      lua_rawgeti(L, -2, (int)(i + 1));
      char what[48];
      snprintf(what, sizeof what, "slices[%lld]", (long long)(i + 1));
      s[i] = check_index(L, volua_lua_check_int(L, -1, "save_png", what), size, what);
      lua_pop(L, 1);
    }
  } else {
    int given = !lua_isnil(L, -1);
    int64_t count = given ? volua_lua_check_int(L, -1, "save_png", "slices")
                          : (size < PNG_DEFAULT_MAX_SLICES ? size : PNG_DEFAULT_MAX_SLICES);
    if (count < 1 || count > size)
      luaL_error(L, "save_png: slices (%lld) must be between 1 and the size along the axis (%lld)",
                 (long long)count, (long long)size);
    *n = count;
    s = lua_newuserdata(L, (size_t)count * sizeof *s);
    for (int64_t i = 0; i < count; i++)
      s[i] = count == 1 ? size / 2 : (int64_t)floor((double)i * (double)(size - 1) / (double)(count - 1) + 0.5);
  }
  lua_remove(L, -2); /* the option value; the userdata stays */
  return s;
}

/* Picks the volume to draw out of t (CPU, contiguous): 2-D, 3-D, 4-D (channel) or 5-D (batch,
 * channel). Sets data, size and, for 2-D, the single slice. */
static void pick_volume(lua_State *L, int oi, const volua_tensor *t, montage *m) {
  const char *data = volua_tensor_data(t);
  size_t esize = volua_dtype_size(t->dtype);
  int nd = t->ndim;
  if (nd < 2 || nd > 5)
    luaL_error(L, "save_png: tensor must be 2-D (H, W), 3-D (D, H, W), 4-D (C, D, H, W) or "
                  "5-D (N, C, D, H, W), got %d-D", nd);
  if (has_option(L, oi, "batch") && nd != 5)
    luaL_error(L, "save_png: batch applies to 5-D tensors, got a %d-D tensor", nd);
  if (has_option(L, oi, "channel") && nd < 4)
    luaL_error(L, "save_png: channel applies to 4-D and 5-D tensors, got a %d-D tensor", nd);
  int64_t offset = 0;
  if (nd == 5) {
    int64_t b = volua_lua_opt_int(L, oi, "batch", 1, "save_png");
    offset += check_index(L, b, t->shape[0], "batch") * t->shape[1];
  }
  if (nd >= 4) {
    int64_t c = volua_lua_opt_int(L, oi, "channel", 1, "save_png");
    offset += check_index(L, c, t->shape[nd - 4], "channel");
  }
  if (nd == 2) {
    m->size[0] = 1, m->size[1] = t->shape[0], m->size[2] = t->shape[1];
  } else {
    for (int d = 0; d < 3; d++) m->size[d] = t->shape[nd - 3 + d];
    offset *= m->size[0] * m->size[1] * m->size[2];
  }
  m->data = data + offset * (int64_t)esize;
  m->dtype = t->dtype;
  for (int d = 0; d < 3; d++)
    if (m->size[d] == 0) luaL_error(L, "save_png: tensor has a dimension of size 0");
}

/* Width or height of the picture: n tiles of `tile` pixels, scaled, with gaps; -1 if too big. */
static int64_t picture_side(int64_t n, int64_t tile, int64_t scale, int64_t gap) {
  if (tile > PNG_MAX_SIDE || scale > PNG_MAX_SIDE || gap > PNG_MAX_SIDE || n > PNG_MAX_SIDE) return -1;
  int64_t side = n * (tile * scale + gap) - gap; /* each factor <= 1e6: no overflow */
  return side > PNG_MAX_SIDE ? -1 : side;
}

/* The path argument at idx: a string without NUL bytes (libpng would see a shorter name), else
 * an error naming fname (luaL_checkstring's message names neither function nor parameter). */
static const char *check_path(lua_State *L, int idx, const char *fname) {
  if (lua_type(L, idx) != LUA_TSTRING)
    luaL_error(L, "%s: path must be a string, got %s", fname, luaL_typename(L, idx));
  size_t n;
  const char *p = lua_tolstring(L, idx, &n);
  if (strlen(p) != n) luaL_error(L, "%s: path contains a NUL byte", fname);
  return p;
}

static int l_save_png(lua_State *L) {
  const char *path = check_path(L, 1, "save_png");
  const volua_tensor *t = volua_lua_check_tensor(L, 2, "save_png", "t");
  const int oi = 3;
  check_option_names(L, oi);
  lua_settop(L, 3);
  char err[VOLUA_ERR_MAX];
  if (t->device != VOLUA_DEVICE_CPU) { /* a CPU copy, owned by the Lua stack */
    volua_tensor *host = volua_lua_push_empty(L);
    if (volua_tensor_to(host, t, VOLUA_DEVICE_CPU, err)) return volua_lua_raise(L, err);
    t = host;
  }

  montage m;
  memset(&m, 0, sizeof m);
  pick_volume(L, oi, t, &m);
  if (t->ndim == 2) {
    static const char *const volume_only[] = {"axis", "slices", "cols", NULL};
    for (const char *const *k = volume_only; *k; k++)
      if (has_option(L, oi, *k))
        luaL_error(L, "save_png: %s applies to volumes (3-D or more), got a 2-D tensor", *k);
  }
  int64_t axis = volua_lua_opt_int(L, oi, "axis", 1, "save_png");
  if (axis < 1 || axis > 3)
    luaL_error(L, "save_png: axis must be 1 (D), 2 (H) or 3 (W), got %lld", (long long)axis);
  m.axis = (int)axis - 1;
  m.slices = read_slices(L, oi, m.size[m.axis], &m.nslices);
  m.tile_h = m.size[m.axis == 0 ? 1 : 0];
  m.tile_w = m.size[m.axis == 2 ? 1 : 2];

  int64_t def_cols = (int64_t)ceil(sqrt((double)m.nslices));
  m.cols = volua_lua_opt_int(L, oi, "cols", def_cols, "save_png");
  if (m.cols < 1) luaL_error(L, "save_png: cols must be at least 1, got %lld", (long long)m.cols);
  if (m.cols > m.nslices) m.cols = m.nslices;
  m.rows = (m.nslices + m.cols - 1) / m.cols;
  m.scale = volua_lua_opt_int(L, oi, "scale", 1, "save_png");
  if (m.scale < 1) luaL_error(L, "save_png: scale must be at least 1, got %lld", (long long)m.scale);
  m.gap = volua_lua_opt_int(L, oi, "gap", 1, "save_png");
  if (m.gap < 0) luaL_error(L, "save_png: gap must be non-negative, got %lld", (long long)m.gap);

  const char *cmap = volua_lua_opt_string(L, oi, "cmap", "gray", "save_png");
  if (strcmp(cmap, "gray") == 0 || strcmp(cmap, "grey") == 0) m.cmap = CMAP_GRAY;
  else if (strcmp(cmap, "viridis") == 0) m.cmap = CMAP_VIRIDIS;
  else if (strcmp(cmap, "magma") == 0) m.cmap = CMAP_MAGMA;
  else luaL_error(L, "save_png: cmap must be \"gray\", \"viridis\" or \"magma\", got \"%s\"", cmap);

  m.has_vmin = has_option(L, oi, "vmin");
  m.has_vmax = has_option(L, oi, "vmax");
  m.vmin = volua_lua_opt_number(L, oi, "vmin", 0, "save_png");
  m.vmax = volua_lua_opt_number(L, oi, "vmax", 0, "save_png");
  if ((m.has_vmin && !isfinite(m.vmin)) || (m.has_vmax && !isfinite(m.vmax)))
    luaL_error(L, "save_png: vmin and vmax must be finite numbers");
  if (m.has_vmin && m.has_vmax && m.vmin > m.vmax)
    luaL_error(L, "save_png: vmin (%g) is greater than vmax (%g)", m.vmin, m.vmax);

  m.width = picture_side(m.cols, m.tile_w, m.scale, m.gap);
  m.height = picture_side(m.rows, m.tile_h, m.scale, m.gap);
  if (m.width < 0 || m.height < 0 || m.width * m.height > PNG_MAX_PIXELS)
    luaL_error(L, "save_png: the picture would be too large (%lld slices of %lldx%lld, scale %lld): "
                  "at most %d pixels a side and %lld pixels in all",
               (long long)m.nslices, (long long)m.tile_h, (long long)m.tile_w, (long long)m.scale,
               PNG_MAX_SIDE, (long long)PNG_MAX_PIXELS);

  if (montage_write(&m, path, err)) return volua_lua_raise(L, err);
  lua_pushinteger(L, (lua_Integer)m.width);
  lua_pushinteger(L, (lua_Integer)m.height);
  return 2;
}

/* -- load_png ---- */

/* Reads path into out (empty): 8-bit values as float32, (H, W) for gray, (H, W, C) otherwise
 * (C = 2 gray+alpha, 3 RGB, 4 RGBA; palettes are expanded). 0, or 1 with a message in err. */
static int png_read(const char *path, volua_tensor *out, char *err) {
  png_image image;
  memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path)) {
    snprintf(err, VOLUA_ERR_MAX, "load_png: %s: %s", path, image.message);
    png_image_free(&image);
    return 1;
  }
  /* 8 bits a sample, palettes expanded, channels as stored. */
  image.format &= ~(png_uint_32)(PNG_FORMAT_FLAG_COLORMAP | PNG_FORMAT_FLAG_LINEAR);
  int64_t channels = PNG_IMAGE_SAMPLE_CHANNELS(image.format);
  int64_t shape[3] = {image.height, image.width, channels};
  if (volua_tensor_alloc(out, channels == 1 ? 2 : 3, shape, VOLUA_FLOAT32, VOLUA_DEVICE_CPU, err)) {
    png_image_free(&image);
    return 1;
  }
  int64_t n = volua_tensor_numel(out);
  uint8_t *bytes = malloc(n > 0 ? (size_t)n : 1);
  if (!bytes) {
    snprintf(err, VOLUA_ERR_MAX, "load_png: %s: out of memory for %lld bytes", path, (long long)n);
    png_image_free(&image);
    volua_tensor_free(out);
    return 1;
  }
  if (!png_image_finish_read(&image, NULL, bytes, 0, NULL)) { /* frees image itself */
    snprintf(err, VOLUA_ERR_MAX, "load_png: %s: %s", path, image.message);
    png_image_free(&image);
    free(bytes);
    volua_tensor_free(out);
    return 1;
  }
  float *dst = volua_tensor_f32(out);
  for (int64_t i = 0; i < n; i++) dst[i] = (float)bytes[i];
  free(bytes);
  return 0;
}

static int l_load_png(lua_State *L) {
  const char *path = check_path(L, 1, "load_png");
  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (png_read(path, out, err)) return volua_lua_raise(L, err);
  return 1;
}

static const luaL_Reg png_functions[] = {
  {"save_png", l_save_png},
  {"load_png", l_load_png},
  {NULL, NULL},
};

/* Adds save_png and load_png to the module table at the top of the stack. */
void volua_lua_open_png(lua_State *L) {
  luaL_register(L, NULL, png_functions);
}
