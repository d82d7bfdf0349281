/* lua_volua.c: the "volua.core" module: gathers every binding file's functions into one table. */
#include "lua_common.h"

int luaopen_volua_core(lua_State *L) {
  lua_newtable(L);
  volua_lua_open_tensor(L);
  volua_lua_open_device(L);
  volua_lua_open_conv(L);
  volua_lua_open_pool(L);
  volua_lua_open_norm(L);
  volua_lua_open_io(L);
  volua_lua_open_png(L);
  volua_lua_open_bench(L);
  volua_lua_open_softmax(L); /* softmax, log_softmax, logsumexp, amax, amin, max, min */
  /* activations and clamp (after the tensor methods: vol.relu is t.relu) */
  volua_lua_open_activation(L);
  volua_lua_open_pointwise(L); /* pointwise: a chain of those in one pass */
  return 1;
}
