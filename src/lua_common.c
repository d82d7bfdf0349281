/* lua_common.c: the Tensor userdata and the argument readers every binding shares. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lua_common.h"

int volua_lua_raise(lua_State *L, const char *msg) {
  lua_pushstring(L, msg);
  return lua_error(L);
}

int volua_lua_errorf(lua_State *L, const char *fmt, ...) {
  char msg[VOLUA_ERR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lua_pushstring(L, msg);
  return lua_error(L);
}

volua_tensor *volua_lua_test_tensor(lua_State *L, int idx) {
  void *p = lua_touserdata(L, idx);
  if (!p || !lua_getmetatable(L, idx)) return NULL;
  luaL_getmetatable(L, VOLUA_TENSOR_MT);
  int ok = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return ok ? (volua_tensor *)p : NULL;
}

static const char *type_name(lua_State *L, int idx) {
  return volua_lua_test_tensor(L, idx) ? "tensor" : luaL_typename(L, idx);
}

volua_tensor *volua_lua_check_tensor(lua_State *L, int idx, const char *fname, const char *pname) {
  volua_tensor *t = volua_lua_test_tensor(L, idx);
  if (!t) luaL_error(L, "%s: %s must be a tensor, got %s", fname, pname, type_name(L, idx));
  if (!t->storage) luaL_error(L, "%s: %s is a freed tensor", fname, pname);
  return t;
}

volua_tensor *volua_lua_opt_tensor(lua_State *L, int idx, const char *fname, const char *pname) {
  if (lua_isnoneornil(L, idx)) return NULL;
  return volua_lua_check_tensor(L, idx, fname, pname);
}

/* A full collection once 1 GiB of tensors was allocated since the last: dead tensors then free
 * their (device) memory before the next allocation needs it. */
#define VOLUA_GC_BYTES ((int64_t)1 << 30)

volua_tensor *volua_lua_push_empty(lua_State *L) {
  if (volua_bytes_since_gc >= VOLUA_GC_BYTES) {
    volua_bytes_since_gc = 0;
    lua_gc(L, LUA_GCCOLLECT, 0);
  }
  volua_tensor *t = lua_newuserdata(L, sizeof *t);
  memset(t, 0, sizeof *t);
  luaL_getmetatable(L, VOLUA_TENSOR_MT);
  lua_setmetatable(L, -2);
  return t;
}

/* An integral number (no NaN, inf or fraction) from the value at idx, else an error. */
static int64_t to_int(lua_State *L, int idx, const char *fname, const char *pname) {
  if (lua_type(L, idx) != LUA_TNUMBER)
    luaL_error(L, "%s: %s must be an integer, got %s", fname, pname, type_name(L, idx));
  double v = lua_tonumber(L, idx);
  if (!(v == floor(v)) || !(fabs(v) < 9.2e18))
    luaL_error(L, "%s: %s must be an integer, got %s", fname, pname, lua_tostring(L, idx));
  return (int64_t)v;
}

int64_t volua_lua_check_int(lua_State *L, int idx, const char *fname, const char *pname) {
  return to_int(L, idx, fname, pname);
}

/* Pushes field key of the table at idx (nil when idx is not a table). */
static void get_opt(lua_State *L, int idx, const char *key, const char *fname) {
  if (lua_isnoneornil(L, idx)) { lua_pushnil(L); return; }
  if (!lua_istable(L, idx)) luaL_error(L, "%s: options must be a table, got %s", fname, type_name(L, idx));
  lua_getfield(L, idx, key);
}

void volua_lua_opt_triple(lua_State *L, int idx, const char *key, const int64_t def[3],
                          int64_t out[3], const char *fname) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  get_opt(L, idx, key, fname);
  if (lua_isnil(L, -1)) {
    if (!def) luaL_error(L, "%s: %s is required", fname, key);
    for (int i = 0; i < 3; i++) out[i] = def[i];
  } else if (lua_type(L, -1) == LUA_TNUMBER) {
    int64_t v = to_int(L, -1, fname, key);
    for (int i = 0; i < 3; i++) out[i] = v;
  } else if (lua_istable(L, -1)) {
    int n = (int)lua_objlen(L, -1);
    if (n == 1) { /* {k} means k in every dim, as PyTorch's _triple */
      lua_rawgeti(L, -1, 1);
      int64_t v = to_int(L, -1, fname, key);
      lua_pop(L, 1);
      for (int i = 0; i < 3; i++) out[i] = v;
    } else if (n == 3) {
      for (int i = 0; i < 3; i++) {
        lua_rawgeti(L, -1, i + 1);
        char pname[64];
        snprintf(pname, sizeof pname, "%s[%d]", key, i + 1);
        out[i] = to_int(L, -1, fname, pname);
        lua_pop(L, 1);
      }
    } else {
      luaL_error(L, "%s: %s must be a number or a table of 3 numbers {d, h, w}, got a table of %d",
                 fname, key, n);
    }
  } else {
    luaL_error(L, "%s: %s must be a number or a table of 3 numbers {d, h, w}, got %s", fname, key,
               type_name(L, -1));
  }
  lua_pop(L, 1);
}

int64_t volua_lua_opt_int(lua_State *L, int idx, const char *key, int64_t def, const char *fname) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  get_opt(L, idx, key, fname);
  int64_t v = lua_isnil(L, -1) ? def : to_int(L, -1, fname, key);
  lua_pop(L, 1);
  return v;
}

double volua_lua_opt_number(lua_State *L, int idx, const char *key, double def, const char *fname) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  get_opt(L, idx, key, fname);
  double v = def;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      luaL_error(L, "%s: %s must be a number, got %s", fname, key, type_name(L, -1));
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

int volua_lua_opt_bool(lua_State *L, int idx, const char *key, int def, const char *fname) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  get_opt(L, idx, key, fname);
  int v = def;
  if (!lua_isnil(L, -1)) {
    if (!lua_isboolean(L, -1))
      luaL_error(L, "%s: %s must be a boolean, got %s", fname, key, type_name(L, -1));
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

const char *volua_lua_opt_string(lua_State *L, int idx, const char *key, const char *def,
                                 const char *fname) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  get_opt(L, idx, key, fname);
  const char *v = def;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s: %s must be a string, got %s", fname, key, type_name(L, -1));
    v = lua_tostring(L, -1); /* the options table keeps the string alive */
  }
  lua_pop(L, 1);
  return v;
}

int volua_lua_check_shape(lua_State *L, int idx, int64_t *shape, const char *fname) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    shape[0] = to_int(L, idx, fname, "shape");
    if (shape[0] < 0) luaL_error(L, "%s: shape has a negative size (%lld)", fname, (long long)shape[0]);
    return 1;
  }
  if (!lua_istable(L, idx))
    luaL_error(L, "%s: shape must be a table of sizes, got %s", fname, type_name(L, idx));
  int n = (int)lua_objlen(L, idx);
  if (n > VOLUA_MAX_DIMS)
    luaL_error(L, "%s: shape has %d dims, at most %d are supported", fname, n, VOLUA_MAX_DIMS);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    char pname[32];
    snprintf(pname, sizeof pname, "shape[%d]", i + 1);
    shape[i] = to_int(L, -1, fname, pname);
    lua_pop(L, 1);
    if (shape[i] < 0)
      luaL_error(L, "%s: shape[%d] is negative (%lld)", fname, i + 1, (long long)shape[i]);
  }
  /* The sizes must multiply within int64 even when one is 0 (as torch's storage size check):
   * code that counts elements dim by dim must not overflow on the way to the 0. */
  int64_t count = 1;
  for (int i = 0; i < n; i++) {
    if (shape[i] != 0 && __builtin_mul_overflow(count, shape[i], &count)) {
      char s[256];
      luaL_error(L, "%s: shape %s has more elements than int64 can count", fname,
                 volua_shape_str(n, shape, s, sizeof s));
    }
  }
  return n;
}

void volua_lua_add_methods(lua_State *L, const luaL_Reg *methods) {
  luaL_getmetatable(L, VOLUA_TENSOR_MT);
  lua_getfield(L, -1, "__methods");
  for (; methods->name; methods++) {
    lua_pushcfunction(L, methods->func);
    lua_setfield(L, -2, methods->name);
  }
  lua_pop(L, 2);
}
