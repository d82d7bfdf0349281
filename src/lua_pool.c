/* lua_pool.c: the Lua bindings of the pools: vol.max_pool3d(x, {kernel_size=, stride=, padding=,
 * dilation=, ceil_mode=, return_indices=}) -> out [, indices]; vol.avg_pool3d(x, {kernel_size=,
 * stride=, padding=, ceil_mode=, count_include_pad=, divisor_override=}) -> out;
 * vol.adaptive_avg_pool3d(x, output_size) -> out; vol.adaptive_max_pool3d(x, output_size
 * [, return_indices]) -> out [, indices]. */
#include <stdio.h>
#include <string.h>

#include "lua_common.h"
#include "ops.h"

static const char *const pool_options[] = {"kernel_size", "stride",    "padding",
                                           "dilation",    "ceil_mode", "return_indices", NULL};

/* A misspelt option would otherwise be ignored silently (PyTorch rejects unknown keywords). */
static void check_option_names(lua_State *L, int idx, const char *fname,
                               const char *const *names) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1); /* the value */
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s: options must be named (kernel_size = ...), got a %s key", fname,
                 luaL_typename(L, -1));
    const char *key = lua_tostring(L, -1);
    int known = 0;
    for (const char *const *n = names; *n; n++) known |= strcmp(key, *n) == 0;
    if (!known) luaL_error(L, "%s: unknown option '%s'", fname, key);
  }
}

static int l_max_pool3d(lua_State *L) {
  const volua_tensor *x = volua_lua_check_tensor(L, 1, "max_pool3d", "input");
  if (!lua_istable(L, 2))
    luaL_error(L, "max_pool3d: options must be a table {kernel_size = ...}, got %s",
               luaL_typename(L, 2));
  check_option_names(L, 2, "max_pool3d", pool_options);

  volua_max_pool3d_args a;
  static const int64_t zero[3] = {0, 0, 0}, one[3] = {1, 1, 1};
  volua_lua_opt_triple(L, 2, "kernel_size", NULL, a.kernel_size, "max_pool3d");
  volua_lua_opt_triple(L, 2, "stride", a.kernel_size, a.stride, "max_pool3d");
  volua_lua_opt_triple(L, 2, "padding", zero, a.padding, "max_pool3d");
  volua_lua_opt_triple(L, 2, "dilation", one, a.dilation, "max_pool3d");
  a.ceil_mode = volua_lua_opt_bool(L, 2, "ceil_mode", 0, "max_pool3d");
  a.return_indices = volua_lua_opt_bool(L, 2, "return_indices", 0, "max_pool3d");

  volua_tensor *out = volua_lua_push_empty(L);
  volua_tensor *indices = a.return_indices ? volua_lua_push_empty(L) : NULL;
  char err[VOLUA_ERR_MAX];
  if (volua_max_pool3d(out, indices, x, &a, err)) return volua_lua_raise(L, err);
  return a.return_indices ? 2 : 1;
}

static const char *const avg_pool_options[] = {
  "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override", NULL};

static int l_avg_pool3d(lua_State *L) {
  const char *f = "avg_pool3d";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, f, "input");
  if (!lua_istable(L, 2))
    luaL_error(L, "avg_pool3d: options must be a table {kernel_size = ...}, got %s",
               luaL_typename(L, 2));
  check_option_names(L, 2, f, avg_pool_options);

  volua_avg_pool3d_args a = {0};
  static const int64_t zero[3] = {0, 0, 0};
  volua_lua_opt_triple(L, 2, "kernel_size", NULL, a.kernel_size, f);
  volua_lua_opt_triple(L, 2, "stride", a.kernel_size, a.stride, f);
  volua_lua_opt_triple(L, 2, "padding", zero, a.padding, f);
  a.ceil_mode = volua_lua_opt_bool(L, 2, "ceil_mode", 0, f);
  a.count_include_pad = volua_lua_opt_bool(L, 2, "count_include_pad", 1, f);
  lua_getfield(L, 2, "divisor_override");
  if (!lua_isnil(L, -1)) {
    a.has_divisor_override = 1;
    a.divisor_override = volua_lua_check_int(L, lua_gettop(L), f, "divisor_override");
  }
  lua_pop(L, 1);

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_avg_pool3d(out, x, &a, err)) return volua_lua_raise(L, err);
  return 1;
}

/* output_size at idx: a number for every dim, or {d, h, w} whose entries may be nil (PyTorch's
 * None: that dim keeps the input's size). Lua cannot tell {4, 4} from {4, 4, nil}: a missing
 * last entry is a nil one. */
static void check_output_size(lua_State *L, int idx, const char *f, volua_adaptive_pool3d_args *a) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    const int64_t v = volua_lua_check_int(L, idx, f, "output_size");
    for (int i = 0; i < 3; i++) a->output_size[i] = v;
    return;
  }
  if (!lua_istable(L, idx))
    luaL_error(L, "%s: output_size must be a number or a table {d, h, w} (nil entries keep the "
               "input's size), got %s", f, lua_isnone(L, idx) ? "nothing" : luaL_typename(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1); /* the value */
    const double k = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
    if (k != 1 && k != 2 && k != 3)
      luaL_error(L, "%s: output_size must be a table {d, h, w} of 3 entries, got a key %s", f,
                 lua_type(L, -1) == LUA_TNUMBER || lua_type(L, -1) == LUA_TSTRING
                     ? lua_tostring(L, -1) : luaL_typename(L, -1));
  }
  for (int i = 0; i < 3; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (lua_isnil(L, -1)) {
      a->keep[i] = 1;
    } else {
      char pname[32];
      snprintf(pname, sizeof pname, "output_size[%d]", i + 1);
      a->output_size[i] = volua_lua_check_int(L, lua_gettop(L), f, pname);
    }
    lua_pop(L, 1);
  }
}

static int l_adaptive_avg_pool3d(lua_State *L) {
  const char *f = "adaptive_avg_pool3d";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, f, "input");
  volua_adaptive_pool3d_args a = {0};
  check_output_size(L, 2, f, &a);
  if (!lua_isnone(L, 3)) luaL_error(L, "%s: takes (x, output_size), got a third argument", f);

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_adaptive_avg_pool3d(out, x, &a, err)) return volua_lua_raise(L, err);
  return 1;
}

static int l_adaptive_max_pool3d(lua_State *L) {
  const char *f = "adaptive_max_pool3d";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, f, "input");
  volua_adaptive_pool3d_args a = {0};
  check_output_size(L, 2, f, &a);
  if (!lua_isnoneornil(L, 3) && !lua_isboolean(L, 3))
    luaL_error(L, "%s: return_indices must be a boolean, got %s", f, luaL_typename(L, 3));
  a.return_indices = lua_toboolean(L, 3);

  volua_tensor *out = volua_lua_push_empty(L);
  volua_tensor *indices = a.return_indices ? volua_lua_push_empty(L) : NULL;
  char err[VOLUA_ERR_MAX];
  if (volua_adaptive_max_pool3d(out, indices, x, &a, err)) return volua_lua_raise(L, err);
  return a.return_indices ? 2 : 1;
}

static const luaL_Reg pool_functions[] = {
  {"max_pool3d", l_max_pool3d},
  {"avg_pool3d", l_avg_pool3d},
  {"adaptive_avg_pool3d", l_adaptive_avg_pool3d},
  {"adaptive_max_pool3d", l_adaptive_max_pool3d},
  {NULL, NULL},
};

/* Adds the pooling functions to the module table at the top of the stack. */
void volua_lua_open_pool(lua_State *L) {
  luaL_register(L, NULL, pool_functions);
}
