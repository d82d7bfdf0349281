/* lua_volua.c: the "volua.core" module: gathers every binding file's functions into one table. */
#include "lua_common.h"

/* Binding files written in parallel register through these; a missing one is skipped. */
void volua_lua_open_conv(lua_State *L) __attribute__((weak));
void volua_lua_open_pool(lua_State *L) __attribute__((weak));
void volua_lua_open_norm(lua_State *L) __attribute__((weak));
void volua_lua_open_io(lua_State *L) __attribute__((weak));
void volua_lua_open_png(lua_State *L) __attribute__((weak));
void volua_lua_open_bench(lua_State *L) __attribute__((weak));

int luaopen_volua_core(lua_State *L) {
  lua_newtable(L);
  volua_lua_open_tensor(L);
  volua_lua_open_device(L);
  void (*opens[])(lua_State *) = {volua_lua_open_conv, volua_lua_open_pool, volua_lua_open_norm,
                                  volua_lua_open_io, volua_lua_open_png, volua_lua_open_bench};
  for (size_t i = 0; i < sizeof opens / sizeof opens[0]; i++)
    if (opens[i]) opens[i](L);
  return 1;
}
