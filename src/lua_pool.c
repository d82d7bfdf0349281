/* lua_pool.c: the Lua binding of vol.max_pool3d(x, {kernel_size=, stride=, padding=, dilation=,
 * ceil_mode=, return_indices=}) -> out [, indices]. */
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

static const luaL_Reg pool_functions[] = {
  {"max_pool3d", l_max_pool3d},
  {NULL, NULL},
};

/* Adds the pooling functions to the module table at the top of the stack. */
void volua_lua_open_pool(lua_State *L) {
  luaL_register(L, NULL, pool_functions);
}
