/* lua_tensor.c: the Tensor type in Lua: creation functions, methods, metamethods, printing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_common.h"
#include "ops.h"
#include "cuda.h"

static volua_device default_device = VOLUA_DEVICE_CPU;

volua_device volua_lua_default_device(void) { return default_device; }
void volua_lua_set_default_device(volua_device d) { default_device = d; }

static void raise_err(lua_State *L, const char *err) { volua_lua_raise(L, err); }

/* Parses a device name; errors name the function. */
volua_device volua_lua_parse_device(lua_State *L, const char *s, const char *fname) {
  if (strcmp(s, "cpu") == 0) return VOLUA_DEVICE_CPU;
  if (strcmp(s, "cuda") == 0 || strncmp(s, "cuda:", 5) == 0) {
    if (strncmp(s, "cuda:", 5) == 0 && strcmp(s + 5, "0") != 0)
      luaL_error(L, "%s: device \"%s\": only cuda:0 is supported", fname, s);
    if (!volua_cuda_available())
      luaL_error(L, "%s: device \"cuda\" is not available: %s", fname, volua_cuda_unavailable_reason());
    return VOLUA_DEVICE_CUDA;
  }
  luaL_error(L, "%s: device must be \"cpu\" or \"cuda\", got \"%s\"", fname, s);
  return VOLUA_DEVICE_CPU;
}

static volua_dtype parse_dtype(lua_State *L, const char *s, const char *fname) {
  if (strcmp(s, "float32") == 0 || strcmp(s, "float") == 0) return VOLUA_FLOAT32;
  if (strcmp(s, "int64") == 0 || strcmp(s, "long") == 0) return VOLUA_INT64;
  luaL_error(L, "%s: dtype must be \"float32\" or \"int64\", got \"%s\"", fname, s);
  return VOLUA_FLOAT32;
}

typedef struct { volua_dtype dtype; volua_device device; int has_seed; uint64_t seed; } create_opts;

static create_opts read_opts(lua_State *L, int idx, const char *fname) {
  create_opts o = {VOLUA_FLOAT32, default_device, 0, 0};
  if (lua_isnoneornil(L, idx)) return o;
  if (!lua_istable(L, idx)) luaL_error(L, "%s: options must be a table, got %s", fname, luaL_typename(L, idx));
  const char *dt = volua_lua_opt_string(L, idx, "dtype", NULL, fname);
  if (dt) o.dtype = parse_dtype(L, dt, fname);
  const char *dev = volua_lua_opt_string(L, idx, "device", NULL, fname);
  if (dev) o.device = volua_lua_parse_device(L, dev, fname);
  lua_getfield(L, idx, "seed");
  if (!lua_isnil(L, -1)) {
    o.has_seed = 1;
    o.seed = (uint64_t)volua_lua_check_int(L, -1, fname, "seed");
  }
  lua_pop(L, 1);
  return o;
}

/* Pushes a new tensor; a failure (a shape too large to count, no memory) is raised naming the
 * Lua function fname rather than the core's "tensor". */
static volua_tensor *push_alloc(lua_State *L, const char *fname, int ndim, const int64_t *shape,
                                volua_dtype dt, volua_device dev) {
  char err[VOLUA_ERR_MAX], s[256];
  volua_tensor *t = volua_lua_push_empty(L);
  if (volua_tensor_alloc(t, ndim, shape, dt, dev, err)) {
    const char *why = strncmp(err, "tensor: ", 8) == 0 ? err + 8 : err;
    if (strncmp(why, "shape ", 6) == 0) luaL_error(L, "%s: %s", fname, why);
    luaL_error(L, "%s: shape %s: %s", fname, volua_shape_str(ndim, shape, s, sizeof s), why);
  }
  return t;
}

/* Whether v can be stored in an int64 tensor: NaN, infinities, fractions and values past
 * int64's range cannot (converting them would be undefined behaviour). */
static int fits_int64(double v) { return v == floor(v) && v >= -0x1p63 && v < 0x1p63; }

static void check(lua_State *L, int rc, const char *err) {
  if (rc) raise_err(L, err);
}

/* -- creation ---- */

static int alloc_filled(lua_State *L, const char *fname, int has_value, double value, int opts_idx) {
  int64_t shape[VOLUA_MAX_DIMS];
  int nd = volua_lua_check_shape(L, 1, shape, fname);
  create_opts o = read_opts(L, opts_idx, fname);
  if (has_value && o.dtype == VOLUA_INT64 && !fits_int64(value))
    luaL_error(L, "%s: value %.17g does not fit an int64 tensor", fname, value);
  char err[VOLUA_ERR_MAX];
  volua_tensor *t = push_alloc(L, fname, nd, shape, o.dtype, o.device);
  if (has_value) check(L, volua_fill(t, value, err), err);
  return 1;
}

static int l_empty(lua_State *L) { return alloc_filled(L, "empty", 0, 0, 2); }
static int l_zeros(lua_State *L) { return alloc_filled(L, "zeros", 1, 0, 2); }
static int l_ones(lua_State *L) { return alloc_filled(L, "ones", 1, 1, 2); }
static int l_full(lua_State *L) {
  if (lua_type(L, 2) != LUA_TNUMBER)
    luaL_error(L, "full: value must be a number, got %s", luaL_typename(L, 2));
  return alloc_filled(L, "full", 1, lua_tonumber(L, 2), 3);
}

static int random_tensor(lua_State *L, int normal) {
  const char *fname = normal ? "randn" : "rand";
  int64_t shape[VOLUA_MAX_DIMS];
  int nd = volua_lua_check_shape(L, 1, shape, fname);
  create_opts o = read_opts(L, 2, fname);
  if (o.dtype != VOLUA_FLOAT32) luaL_error(L, "%s: dtype must be float32, got int64", fname);
  char err[VOLUA_ERR_MAX];
  volua_tensor *t = push_alloc(L, fname, nd, shape, o.dtype, o.device);
  check(L, volua_random(t, normal, o.has_seed ? &o.seed : NULL, err), err);
  return 1;
}
static int l_rand(lua_State *L) { return random_tensor(L, 0); }
static int l_randn(lua_State *L) { return random_tensor(L, 1); }

static int l_manual_seed(lua_State *L) {
  volua_manual_seed((uint64_t)volua_lua_check_int(L, 1, "manual_seed", "seed"));
  return 0;
}

static int l_arange(lua_State *L) {
  int64_t n = volua_lua_check_int(L, 1, "arange", "n");
  if (n < 0) luaL_error(L, "arange: n must be non-negative, got %lld", (long long)n);
  create_opts o = read_opts(L, 2, "arange");
  volua_tensor *host = push_alloc(L, "arange", 1, &n, o.dtype, VOLUA_DEVICE_CPU);
  for (int64_t i = 0; i < n; i++) {
    if (o.dtype == VOLUA_FLOAT32) volua_tensor_f32(host)[i] = (float)i;
    else volua_tensor_i64(host)[i] = i;
  }
  if (o.device == VOLUA_DEVICE_CPU) return 1;
  char err[VOLUA_ERR_MAX];
  volua_tensor *t = volua_lua_push_empty(L);
  check(L, volua_tensor_to(t, host, o.device, err), err);
  return 1;
}

/* Walks nested tables at idx, recording the shape at first visit of each depth and checking it.
 * *leaf is the depth of the numbers once one has been seen (-1 before): no table may appear
 * there or deeper after it ({1, {2}} is as ragged as {{1}, 2}). */
static void nested_shape(lua_State *L, int idx, int depth, int *ndim, int64_t *shape, int *leaf) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    if (depth != *ndim)
      luaL_error(L, "tensor: data is ragged (a number at depth %d of %d)", depth + 1, *ndim + 1);
    *leaf = depth;
    return;
  }
  if (!lua_istable(L, idx)) luaL_error(L, "tensor: data must be numbers or nested tables, got %s", luaL_typename(L, idx));
  if (*leaf >= 0 && depth >= *leaf)
    luaL_error(L, "tensor: data is ragged (a table at depth %d, where numbers were)", depth + 1);
  if (depth >= VOLUA_MAX_DIMS) luaL_error(L, "tensor: data nests deeper than %d dims", VOLUA_MAX_DIMS);
  int64_t n = (int64_t)lua_objlen(L, idx);
  if (depth == *ndim) { /* first time this deep */
    shape[depth] = n;
    *ndim = depth + 1;
  } else if (depth > *ndim || shape[depth] != n) {
    luaL_error(L, "tensor: data is ragged (dim %d has sizes %lld and %lld)", depth + 1,
               (long long)shape[depth], (long long)n);
  }
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, (int)i);
    nested_shape(L, lua_gettop(L), depth + 1, ndim, shape, leaf);
    lua_pop(L, 1);
  }
  if (n == 0 && depth + 1 == *ndim) return;
}

static void nested_fill(lua_State *L, int idx, const volua_tensor *t, int64_t *pos) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    double v = lua_tonumber(L, idx);
    if (t->dtype == VOLUA_FLOAT32) volua_tensor_f32(t)[(*pos)++] = (float)v;
    else {
      if (!fits_int64(v)) luaL_error(L, "tensor: %g does not fit an int64 tensor (dtype int64)", v);
      volua_tensor_i64(t)[(*pos)++] = (int64_t)v;
    }
    return;
  }
  int n = (int)lua_objlen(L, idx);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    nested_fill(L, lua_gettop(L), t, pos);
    lua_pop(L, 1);
  }
}

static int l_tensor(lua_State *L) {
  int ndim = 0;
  int64_t shape[VOLUA_MAX_DIMS];
  if (volua_lua_test_tensor(L, 1)) luaL_error(L, "tensor: data is already a tensor (use t:clone())");
  int leaf = -1;
  nested_shape(L, 1, 0, &ndim, shape, &leaf);
  create_opts o = read_opts(L, 2, "tensor");
  volua_tensor *host = push_alloc(L, "tensor", ndim, shape, o.dtype, VOLUA_DEVICE_CPU);
  int64_t pos = 0;
  nested_fill(L, 1, host, &pos);
  if (o.device == VOLUA_DEVICE_CPU) return 1;
  char err[VOLUA_ERR_MAX];
  volua_tensor *t = volua_lua_push_empty(L);
  check(L, volua_tensor_to(t, host, o.device, err), err);
  return 1;
}

/* -- element access ---- */

/* The flat offset of 1-based (negative from the end) indices at stack positions first.. */
static int64_t flat_index(lua_State *L, const volua_tensor *t, int first, const char *fname) {
  int nidx = lua_gettop(L) - first + 1;
  if (nidx != t->ndim)
    luaL_error(L, "%s: tensor has %d dims but %d indices were given", fname, t->ndim, nidx);
  int64_t off = 0;
  for (int d = 0; d < t->ndim; d++) {
    char pname[32];
    snprintf(pname, sizeof pname, "index %d", d + 1);
    int64_t i = volua_lua_check_int(L, first + d, fname, pname);
    int64_t n = t->shape[d];
    if (i < 0) i += n + 1;
    if (i < 1 || i > n)
      luaL_error(L, "%s: index %lld is out of range for dim %d of size %lld", fname,
                 (long long)volua_lua_check_int(L, first + d, fname, pname), d + 1, (long long)n);
    off = off * n + (i - 1);
  }
  return off;
}

/* Reads element `off` of t into a double (copying one element back from the GPU). */
static double read_element(lua_State *L, const volua_tensor *t, int64_t off) {
  size_t es = volua_dtype_size(t->dtype);
  unsigned char buf[8];
  const void *src = (const char *)volua_tensor_data(t) + off * (int64_t)es;
  if (t->device == VOLUA_DEVICE_CPU) memcpy(buf, src, es);
  else {
    char err[VOLUA_ERR_MAX];
    check(L, volua_cuda_memcpy(buf, src, (int64_t)es, VOLUA_COPY_D2H, err), err);
  }
  if (t->dtype == VOLUA_FLOAT32) { float f; memcpy(&f, buf, 4); return f; }
  int64_t i; memcpy(&i, buf, 8); return (double)i;
}

static void push_element(lua_State *L, const volua_tensor *t, int64_t off) {
  lua_pushnumber(L, read_element(L, t, off));
}

static int m_get(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "get", "self");
  push_element(L, t, flat_index(L, t, 2, "get"));
  return 1;
}

static int m_set(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "set", "self");
  if (lua_type(L, 2) != LUA_TNUMBER) luaL_error(L, "set: value must be a number, got %s", luaL_typename(L, 2));
  double v = lua_tonumber(L, 2);
  int64_t off = flat_index(L, t, 3, "set");
  unsigned char buf[8];
  if (t->dtype == VOLUA_FLOAT32) { float f = (float)v; memcpy(buf, &f, 4); }
  else {
    if (!fits_int64(v)) luaL_error(L, "set: value %g does not fit an int64 tensor", v);
    int64_t i = (int64_t)v; memcpy(buf, &i, 8);
  }
  size_t es = volua_dtype_size(t->dtype);
  void *dst = (char *)volua_tensor_data(t) + off * (int64_t)es;
  volua_storage_written(t->storage);
  if (t->device == VOLUA_DEVICE_CPU) memcpy(dst, buf, es);
  else {
    char err[VOLUA_ERR_MAX];
    check(L, volua_cuda_memcpy(dst, buf, (int64_t)es, VOLUA_COPY_H2D, err), err);
  }
  lua_settop(L, 1);
  return 1;
}

static int m_item(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "item", "self");
  int64_t n = volua_tensor_numel(t);
  if (n != 1) luaL_error(L, "item: tensor has %lld elements, item needs exactly 1", (long long)n);
  push_element(L, t, 0);
  return 1;
}

/* t:table(): nested tables from a CPU copy. */
static void push_nested(lua_State *L, const volua_tensor *t, int d, int64_t *pos) {
  if (d == t->ndim) {
    lua_pushnumber(L, t->dtype == VOLUA_FLOAT32 ? (double)volua_tensor_f32(t)[*pos]
                                                : (double)volua_tensor_i64(t)[*pos]);
    (*pos)++;
    return;
  }
  lua_createtable(L, (int)t->shape[d], 0);
  for (int64_t i = 0; i < t->shape[d]; i++) {
    push_nested(L, t, d + 1, pos);
    lua_rawseti(L, -2, (int)(i + 1));
  }
}

static int m_table(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "table", "self");
  /* the nested tables count too: a (2^40, 0) tensor has no numbers but 2^40 empty rows */
  int64_t values = 1; /* at each depth: the tables (or, at the last, numbers) made there */
  for (int d = 0; d < t->ndim; d++) {
    if (__builtin_mul_overflow(values, t->shape[d], &values) || values > 100000000) {
      char s[256];
      luaL_error(L, "table: a tensor of shape %s needs more than 1e8 Lua values at depth %d, too "
                 "many for nested tables", volua_shape_str(t->ndim, t->shape, s, sizeof s), d + 1);
    }
  }
  const volua_tensor *src = t;
  if (t->device != VOLUA_DEVICE_CPU) {
    char err[VOLUA_ERR_MAX];
    volua_tensor *h = volua_lua_push_empty(L);
    check(L, volua_tensor_to(h, t, VOLUA_DEVICE_CPU, err), err);
    src = h;
  }
  int64_t pos = 0;
  push_nested(L, src, 0, &pos);
  return 1;
}

/* -- shape and metadata ---- */

static void push_shape(lua_State *L, const volua_tensor *t) {
  lua_createtable(L, t->ndim, 0);
  for (int i = 0; i < t->ndim; i++) {
    lua_pushnumber(L, (lua_Number)t->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

static int m_dim(lua_State *L) {
  lua_pushinteger(L, volua_lua_check_tensor(L, 1, "dim", "self")->ndim);
  return 1;
}
static int m_numel(lua_State *L) {
  lua_pushnumber(L, (lua_Number)volua_tensor_numel(volua_lua_check_tensor(L, 1, "numel", "self")));
  return 1;
}
static int m_size(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "size", "self");
  if (lua_isnoneornil(L, 2)) { push_shape(L, t); return 1; }
  int64_t d = volua_lua_check_int(L, 2, "size", "dim");
  int64_t dd = d < 0 ? d + t->ndim + 1 : d;
  if (dd < 1 || dd > t->ndim)
    luaL_error(L, "size: dim %lld is out of range for a tensor of %d dims", (long long)d, t->ndim);
  lua_pushnumber(L, (lua_Number)t->shape[dd - 1]);
  return 1;
}

static int m_reshape(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "reshape", "self");
  int64_t shape[VOLUA_MAX_DIMS];
  int nd;
  if (lua_istable(L, 2)) {
    nd = (int)lua_objlen(L, 2);
    if (nd > VOLUA_MAX_DIMS) luaL_error(L, "reshape: shape has %d dims, at most %d", nd, VOLUA_MAX_DIMS);
    for (int i = 0; i < nd; i++) {
      lua_rawgeti(L, 2, i + 1);
      shape[i] = volua_lua_check_int(L, -1, "reshape", "shape");
      lua_pop(L, 1);
    }
  } else {
    luaL_error(L, "reshape: shape must be a table of sizes, got %s", luaL_typename(L, 2));
    return 0;
  }
  int infer = -1, has_zero = 0;
  int64_t known = 1; /* the sizes other than -1 and 0: they must multiply within int64, as torch */
  char s1[128], s2[128];
  for (int i = 0; i < nd; i++) {
    if (shape[i] == -1) {
      if (infer >= 0) luaL_error(L, "reshape: only one size may be -1");
      infer = i;
    } else if (shape[i] < 0) {
      luaL_error(L, "reshape: invalid size %lld in shape", (long long)shape[i]);
    } else if (shape[i] == 0) {
      has_zero = 1;
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      luaL_error(L, "reshape: shape %s has more elements than int64 can count",
                 volua_shape_str(nd, shape, s1, sizeof s1));
    }
  }
  if (has_zero) known = 0;
  int64_t n = volua_tensor_numel(t);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      luaL_error(L, "reshape: shape %s is invalid for input of size %lld",
                 volua_shape_str(nd, shape, s1, sizeof s1), (long long)n);
    shape[infer] = n / known;
  } else if (known != n) {
    luaL_error(L, "reshape: shape %s is invalid for input of size %lld (shape %s)",
               volua_shape_str(nd, shape, s1, sizeof s1), (long long)n,
               volua_shape_str(t->ndim, t->shape, s2, sizeof s2));
  }
  volua_tensor *r = volua_lua_push_empty(L);
  volua_tensor_share(r, t); /* contiguous: a view of the same storage */
  r->ndim = nd;
  for (int i = 0; i < nd; i++) r->shape[i] = shape[i];
  return 1;
}

/* -- copies and moves ---- */

static int move_to(lua_State *L, volua_tensor *t, volua_device dev) {
  if (t->device == dev) { lua_pushvalue(L, 1); return 1; } /* like torch: no copy */
  char err[VOLUA_ERR_MAX];
  volua_tensor *r = volua_lua_push_empty(L);
  check(L, volua_tensor_to(r, t, dev, err), err);
  return 1;
}

static int m_to(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "to", "self");
  if (lua_type(L, 2) != LUA_TSTRING)
    luaL_error(L, "to: device (or dtype) must be a string, got %s", luaL_typename(L, 2));
  const char *s = lua_tostring(L, 2);
  if (strcmp(s, "float32") == 0 || strcmp(s, "int64") == 0) { /* a dtype conversion */
    volua_dtype dt = parse_dtype(L, s, "to");
    if (dt == t->dtype) { lua_pushvalue(L, 1); return 1; }
    char err[VOLUA_ERR_MAX];
    volua_tensor *r = push_alloc(L, "to", t->ndim, t->shape, dt, t->device);
    check(L, volua_tensor_copy(r, t, err), err);
    return 1;
  }
  return move_to(L, t, volua_lua_parse_device(L, s, "to"));
}
static int m_cpu(lua_State *L) { return move_to(L, volua_lua_check_tensor(L, 1, "cpu", "self"), VOLUA_DEVICE_CPU); }
static int m_cuda(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "cuda", "self");
  return move_to(L, t, volua_lua_parse_device(L, "cuda", "cuda"));
}

static int m_clone(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "clone", "self");
  char err[VOLUA_ERR_MAX];
  volua_tensor *r = volua_lua_push_empty(L);
  check(L, volua_tensor_to(r, t, t->device, err), err);
  return 1;
}
/* Every tensor is contiguous: contiguous() is the tensor itself, as in torch. */
static int m_contiguous(lua_State *L) {
  volua_lua_check_tensor(L, 1, "contiguous", "self");
  lua_settop(L, 1);
  return 1;
}

static int m_fill(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "fill", "self");
  if (lua_type(L, 2) != LUA_TNUMBER) luaL_error(L, "fill: value must be a number, got %s", luaL_typename(L, 2));
  char err[VOLUA_ERR_MAX];
  check(L, volua_fill(t, lua_tonumber(L, 2), err), err);
  lua_settop(L, 1);
  return 1;
}

static int m_copy(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "copy", "self");
  volua_tensor *src = volua_lua_check_tensor(L, 2, "copy", "src");
  char err[VOLUA_ERR_MAX];
  check(L, volua_tensor_copy(t, src, err), err);
  lua_settop(L, 1);
  return 1;
}

/* -- arithmetic ---- */

static int arith(lua_State *L, volua_binop op) {
  static const char *names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  volua_tensor *a = volua_lua_test_tensor(L, 1), *b = volua_lua_test_tensor(L, 2);
  if (!a && !b) /* only when called directly, as Tensor.add(1, 2) */
    luaL_error(L, "%s: operands must be tensors or numbers, one a tensor, got %s and %s", names[op],
               luaL_typename(L, 1), luaL_typename(L, 2));
  char err[VOLUA_ERR_MAX];
  volua_tensor *r = volua_lua_push_empty(L);
  int rc;
  if (a && b) {
    if (!a->storage || !b->storage) luaL_error(L, "%s: operand is a freed tensor", names[op]);
    rc = volua_binary(r, a, b, op, err);
  } else if (a) {
    if (lua_type(L, 2) != LUA_TNUMBER)
      luaL_error(L, "%s: operands must be tensors or numbers, got %s", names[op], luaL_typename(L, 2));
    if (!a->storage) luaL_error(L, "%s: operand is a freed tensor", names[op]);
    rc = volua_binary_scalar(r, a, lua_tonumber(L, 2), op, 0, err);
  } else {
    if (lua_type(L, 1) != LUA_TNUMBER)
      luaL_error(L, "%s: operands must be tensors or numbers, got %s", names[op], luaL_typename(L, 1));
    if (!b->storage) luaL_error(L, "%s: operand is a freed tensor", names[op]);
    rc = volua_binary_scalar(r, b, lua_tonumber(L, 1), op, 1, err);
  }
  check(L, rc, err);
  return 1;
}
static int mm_add(lua_State *L) { return arith(L, VOLUA_BIN_ADD); }
static int mm_sub(lua_State *L) { return arith(L, VOLUA_BIN_SUB); }
static int mm_mul(lua_State *L) { return arith(L, VOLUA_BIN_MUL); }
static int mm_div(lua_State *L) { return arith(L, VOLUA_BIN_DIV); }
/* vol.maximum(a, b), vol.minimum(a, b): torch.maximum / torch.minimum with broadcasting; a number
 * operand is a 0-dim scalar (dtype rules as the arithmetic's) */
static int l_maximum(lua_State *L) { return arith(L, VOLUA_BIN_MAXIMUM); }
static int l_minimum(lua_State *L) { return arith(L, VOLUA_BIN_MINIMUM); }

static int unary(lua_State *L, volua_unop op, const char *fname) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, fname, "self");
  char err[VOLUA_ERR_MAX];
  volua_tensor *r = volua_lua_push_empty(L);
  check(L, volua_unary(r, t, op, err), err);
  return 1;
}
static int mm_unm(lua_State *L) { return unary(L, VOLUA_UN_NEG, "neg"); }
static int m_abs(lua_State *L) { return unary(L, VOLUA_UN_ABS, "abs"); }
static int m_relu(lua_State *L) { return unary(L, VOLUA_UN_RELU, "relu"); }

static int reduce(lua_State *L, volua_reduce_op op, const char *fname) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, fname, "self");
  if (!lua_isnoneornil(L, 2))
    luaL_error(L, "%s: reduces the whole tensor and takes no dim (use vol.sum(x, dims) or vol.mean(x, dims) "
               "for per-dim sums and means)", fname);
  double r;
  char err[VOLUA_ERR_MAX];
  check(L, volua_reduce_all(t, op, &r, err), err);
  lua_pushnumber(L, r);
  return 1;
}
static int m_sum(lua_State *L) { return reduce(L, VOLUA_RED_SUM, "sum"); }
/* t:max() / t:min(): the whole tensor's, a number; t:max(dim [, keepdim]): vol.max's values and
 * indices (src/lua_softmax.c) */
static int m_max(lua_State *L) {
  return lua_isnoneornil(L, 2) ? reduce(L, VOLUA_RED_MAX, "max") : volua_lua_max_dim(L, 1);
}
static int m_min(lua_State *L) {
  return lua_isnoneornil(L, 2) ? reduce(L, VOLUA_RED_MIN, "min") : volua_lua_max_dim(L, 0);
}

static int l_max_abs_diff(lua_State *L) {
  volua_tensor *a = volua_lua_check_tensor(L, 1, "max_abs_diff", "a");
  volua_tensor *b = volua_lua_check_tensor(L, 2, "max_abs_diff", "b");
  double r;
  char err[VOLUA_ERR_MAX];
  check(L, volua_max_abs_diff(a, b, &r, err), err);
  lua_pushnumber(L, r);
  return 1;
}

static int l_allclose(lua_State *L) {
  volua_tensor *a = volua_lua_check_tensor(L, 1, "allclose", "a");
  volua_tensor *b = volua_lua_check_tensor(L, 2, "allclose", "b");
  double rtol = volua_lua_opt_number(L, 3, "rtol", 1e-5, "allclose");
  double atol = volua_lua_opt_number(L, 3, "atol", 1e-8, "allclose");
  int equal_nan = volua_lua_opt_bool(L, 3, "equal_nan", 0, "allclose");
  int r;
  char err[VOLUA_ERR_MAX];
  check(L, volua_allclose(a, b, rtol, atol, equal_nan, &r, err), err);
  lua_pushboolean(L, r);
  return 1;
}

/* -- printing: a header and at most a few rows of a few values, copying only what is shown ---- */

#define EDGE 3

/* Positions printed along a dim of size n: all if n <= 2*EDGE, else EDGE from each end. */
static int shown(int64_t n, int64_t *idx) {
  int k = 0;
  if (n <= 2 * EDGE) { for (int64_t i = 0; i < n; i++) idx[k++] = i; }
  else {
    for (int64_t i = 0; i < EDGE; i++) idx[k++] = i;
    for (int64_t i = n - EDGE; i < n; i++) idx[k++] = i;
  }
  return k;
}

static void fmt_value(char *buf, size_t n, double v, int dt, int sci) {
  if (dt == VOLUA_INT64) snprintf(buf, n, "%lld", (long long)v);
  else if (isnan(v)) snprintf(buf, n, "nan");
  else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
  else snprintf(buf, n, sci ? "%.4e" : "%.4f", v);
}

static int mm_tostring(lua_State *L) {
  volua_tensor *t = volua_lua_test_tensor(L, 1);
  if (!t) luaL_error(L, "tostring: not a tensor");
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  char s[256], line[512];
  if (!t->storage) { lua_pushstring(L, "volua.Tensor (freed)"); return 1; }
  snprintf(line, sizeof line, "volua.Tensor %s %s %s", volua_dtype_name(t->dtype),
           volua_device_name(t->device), volua_shape_str(t->ndim, t->shape, s, sizeof s));
  luaL_addstring(&b, line);
  int64_t n = volua_tensor_numel(t);
  if (n == 0) { luaL_pushresult(&b); return 1; }
  /* rows: the last dim is a row; earlier dims are flattened into a list of rows */
  int64_t cols = t->ndim ? t->shape[t->ndim - 1] : 1;
  int64_t rows = cols ? n / cols : 0;
  int64_t ci[2 * EDGE], ri[2 * EDGE];
  int nc = shown(cols, ci), nr = shown(rows, ri);
  double vals[2 * EDGE][2 * EDGE];
  double maxabs = 0, minabs = INFINITY;
  for (int r = 0; r < nr; r++)
    for (int c = 0; c < nc; c++) {
      double v = read_element(L, t, ri[r] * cols + ci[c]);
      vals[r][c] = v;
      if (isfinite(v) && v != 0) {
        if (fabs(v) > maxabs) maxabs = fabs(v);
        if (fabs(v) < minabs) minabs = fabs(v);
      }
    }
  int sci = maxabs >= 1e5 || (minabs < 1e-3 && maxabs > 0);
  for (int r = 0; r < nr; r++) {
    if (rows > 2 * EDGE && r == EDGE) luaL_addstring(&b, "\n  ...");
    luaL_addstring(&b, "\n  ");
    if (t->ndim > 1) { /* the row's leading index, 1-based */
      int64_t rem = ri[r];
      int64_t idx[VOLUA_MAX_DIMS];
      for (int d = t->ndim - 2; d >= 0; d--) { idx[d] = rem % t->shape[d] + 1; rem /= t->shape[d]; }
      size_t len = 0;
      len += (size_t)snprintf(line + len, sizeof line - len, "[");
      for (int d = 0; d < t->ndim - 1; d++)
        len += (size_t)snprintf(line + len, sizeof line - len, "%lld,", (long long)idx[d]);
      snprintf(line + len, sizeof line - len, ":]  ");
      luaL_addstring(&b, line);
    }
    for (int c = 0; c < nc; c++) {
      if (cols > 2 * EDGE && c == EDGE) luaL_addstring(&b, " ...");
      fmt_value(s, sizeof s, vals[r][c], t->dtype, sci);
      snprintf(line, sizeof line, c ? " %10s" : "%10s", s);
      luaL_addstring(&b, line);
    }
  }
  luaL_pushresult(&b);
  return 1;
}

static int mm_gc(lua_State *L) {
  volua_tensor *t = volua_lua_test_tensor(L, 1);
  if (t) volua_tensor_free(t);
  return 0;
}

static int mm_index(lua_State *L) {
  volua_tensor *t = volua_lua_test_tensor(L, 1);
  if (!t) luaL_error(L, "index: self must be a tensor, got %s", luaL_typename(L, 1));
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    if (strcmp(k, "shape") == 0) { if (!t->storage) return 0; push_shape(L, t); return 1; }
    if (strcmp(k, "dtype") == 0) { lua_pushstring(L, volua_dtype_name(t->dtype)); return 1; }
    if (strcmp(k, "device") == 0) { lua_pushstring(L, volua_device_name(t->device)); return 1; }
  }
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "__methods");
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

static int mm_len(lua_State *L) {
  volua_tensor *t = volua_lua_check_tensor(L, 1, "#", "self");
  lua_pushnumber(L, t->ndim ? (lua_Number)t->shape[0] : 1);
  return 1;
}

static const luaL_Reg functions[] = {
  {"tensor", l_tensor}, {"empty", l_empty}, {"zeros", l_zeros}, {"ones", l_ones},
  {"full", l_full}, {"rand", l_rand}, {"randn", l_randn}, {"arange", l_arange},
  {"manual_seed", l_manual_seed}, {"max_abs_diff", l_max_abs_diff}, {"allclose", l_allclose},
  /* elementwise maximum and minimum (the binary family) */
  {"maximum", l_maximum}, {"minimum", l_minimum},
  {NULL, NULL}};

static const luaL_Reg methods[] = {
  {"dim", m_dim}, {"numel", m_numel}, {"size", m_size}, {"to", m_to}, {"cpu", m_cpu},
  {"cuda", m_cuda}, {"clone", m_clone}, {"contiguous", m_contiguous}, {"reshape", m_reshape},
  {"fill", m_fill}, {"copy", m_copy}, {"item", m_item}, {"table", m_table}, {"get", m_get},
  {"set", m_set}, {"abs", m_abs}, {"relu", m_relu}, {"sum", m_sum}, {"max", m_max},
  {"min", m_min}, {"add", mm_add}, {"sub", mm_sub}, {"mul", mm_mul}, {"div", mm_div},
  {"neg", mm_unm}, {NULL, NULL}};

static const luaL_Reg metamethods[] = {
  {"__gc", mm_gc}, {"__tostring", mm_tostring}, {"__index", mm_index}, {"__add", mm_add},
  {"__sub", mm_sub}, {"__mul", mm_mul}, {"__div", mm_div}, {"__unm", mm_unm}, {"__len", mm_len},
  {NULL, NULL}};

void volua_lua_open_tensor(lua_State *L) {
  luaL_newmetatable(L, VOLUA_TENSOR_MT);
  for (const luaL_Reg *r = metamethods; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
  lua_newtable(L);
  for (const luaL_Reg *r = methods; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__methods");
  lua_setfield(L, -3, "Tensor"); /* module.Tensor = the method table (for completion and extension) */
  lua_pop(L, 1);
  for (const luaL_Reg *r = functions; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
