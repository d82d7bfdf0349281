/* lua_device.c: devices and math modes from Lua: cuda_available, default device, sync, memory, set_math. */
#include <string.h>

#include "lua_common.h"
#include "cuda.h"
#include "ops.h"

volua_device volua_lua_default_device(void);
void volua_lua_set_default_device(volua_device d);
volua_device volua_lua_parse_device(lua_State *L, const char *s, const char *fname);

static int l_cuda_available(lua_State *L) {
  lua_pushboolean(L, volua_cuda_available());
  return 1;
}

/* vol.cuda_info() -> device description, or nil and the reason there is none. */
static int l_cuda_info(lua_State *L) {
  if (volua_cuda_available()) { lua_pushstring(L, volua_cuda_device_name()); return 1; }
  lua_pushnil(L);
  lua_pushstring(L, volua_cuda_unavailable_reason());
  return 2;
}

static int l_default_device(lua_State *L) {
  lua_pushstring(L, volua_device_name(volua_lua_default_device()));
  return 1;
}

static int l_set_default_device(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING)
    luaL_error(L, "set_default_device: device must be \"cpu\" or \"cuda\", got %s", luaL_typename(L, 1));
  volua_lua_set_default_device(volua_lua_parse_device(L, lua_tostring(L, 1), "set_default_device"));
  return 0;
}

static int l_sync(lua_State *L) {
  if (!volua_cuda_available()) return 0; /* nothing is ever queued */
  char err[VOLUA_ERR_MAX];
  if (volua_cuda_sync(err)) return volua_lua_raise(L, err);
  return 0;
}

static int l_set_math(lua_State *L) {
  const char *m = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : NULL;
  if (m && strcmp(m, "fp32") == 0) volua_set_math(VOLUA_MATH_FP32);
  else if (m && strcmp(m, "tf32") == 0) volua_set_math(VOLUA_MATH_TF32);
  else luaL_error(L, "set_math: mode must be \"fp32\" or \"tf32\", got %s",
                  m ? m : luaL_typename(L, 1));
  return 0;
}

static int l_get_math(lua_State *L) {
  lua_pushstring(L, volua_get_math() == VOLUA_MATH_TF32 ? "tf32" : "fp32");
  return 1;
}

static int l_memory_stats(lua_State *L) {
  volua_cuda_mem_stats s;
  memset(&s, 0, sizeof s);
  if (volua_cuda_available()) volua_cuda_memory_stats(&s);
  int64_t pw_bytes = 0;
  const int pw = volua_cuda_available() ? volua_cuda_derived_count(&pw_bytes) : 0;
  lua_createtable(L, 0, 7);
  lua_pushnumber(L, (lua_Number)s.allocated); lua_setfield(L, -2, "allocated");
  lua_pushnumber(L, (lua_Number)s.reserved); lua_setfield(L, -2, "reserved");
  lua_pushnumber(L, (lua_Number)s.peak_allocated); lua_setfield(L, -2, "peak");
  lua_pushnumber(L, (lua_Number)s.num_mallocs); lua_setfield(L, -2, "num_mallocs");
  lua_pushnumber(L, (lua_Number)s.num_frees); lua_setfield(L, -2, "num_frees");
  lua_pushnumber(L, (lua_Number)pw); lua_setfield(L, -2, "prepared_weights");
  lua_pushnumber(L, (lua_Number)pw_bytes); lua_setfield(L, -2, "prepared_bytes");
  return 1;
}

static int l_empty_cache(lua_State *L) {
  if (volua_cuda_available()) volua_cuda_empty_cache();
  return 0;
}

static const luaL_Reg functions[] = {
  {"cuda_available", l_cuda_available}, {"cuda_info", l_cuda_info},
  {"default_device", l_default_device}, {"set_default_device", l_set_default_device},
  {"sync", l_sync}, {"set_math", l_set_math}, {"get_math", l_get_math},
  {"memory_stats", l_memory_stats}, {"empty_cache", l_empty_cache}, {NULL, NULL}};

void volua_lua_open_device(lua_State *L) {
  for (const luaL_Reg *r = functions; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
