/* lua_io.c: vol.load, vol.save (.npy) and vol.load_safetensors, vol.save_safetensors. */
#include <string.h>

#include "io.h"
#include "lua_common.h"

/* Holds a loaded safetensors file while its tensors move into Lua: if the move fails half
 * way (out of memory), __gc releases whatever is left. */
#define SAFETENSORS_BOX_MT "volua.safetensors_box"

static int box_gc(lua_State *L) {
  volua_safetensors_free(luaL_checkudata(L, 1, SAFETENSORS_BOX_MT));
  return 0;
}

static const char *check_path(lua_State *L, int idx, const char *fname) {
  if (lua_type(L, idx) != LUA_TSTRING)
    luaL_error(L, "%s: path must be a string, got %s", fname, luaL_typename(L, idx));
  size_t n;
  const char *p = lua_tolstring(L, idx, &n);
  if (strlen(p) != n) luaL_error(L, "%s: path contains a NUL byte", fname);
  return p;
}

/* A CPU tensor with t's contents: t itself, or a copy pushed on the stack (Lua owns it). */
static const volua_tensor *on_cpu(lua_State *L, const volua_tensor *t) {
  if (t->device == VOLUA_DEVICE_CPU) return t;
  char err[VOLUA_ERR_MAX];
  volua_tensor *c = volua_lua_push_empty(L);
  if (volua_tensor_to(c, t, VOLUA_DEVICE_CPU, err)) volua_lua_raise(L, err);
  return c;
}

static int l_load(lua_State *L) {
  const char *path = check_path(L, 1, "load");
  char err[VOLUA_ERR_MAX];
  volua_tensor *t = volua_lua_push_empty(L);
  if (volua_npy_load(path, t, err)) return volua_lua_raise(L, err);
  return 1;
}

static int l_save(lua_State *L) {
  const char *path = check_path(L, 1, "save");
  const volua_tensor *t = on_cpu(L, volua_lua_check_tensor(L, 2, "save", "tensor"));
  char err[VOLUA_ERR_MAX];
  if (volua_npy_save(path, t, err)) return volua_lua_raise(L, err);
  return 0;
}

/* vol.load_safetensors(path) -> {[name] = tensor}, {[key] = value} (empty without __metadata__) */
static int l_load_safetensors(lua_State *L) {
  const char *path = check_path(L, 1, "load_safetensors");
  char err[VOLUA_ERR_MAX];
  volua_safetensors *st = lua_newuserdata(L, sizeof *st);
  memset(st, 0, sizeof *st);
  luaL_getmetatable(L, SAFETENSORS_BOX_MT);
  lua_setmetatable(L, -2);
  if (volua_safetensors_load(path, st, err)) return volua_lua_raise(L, err);
  lua_createtable(L, 0, st->ntensors < 1 << 20 ? (int)st->ntensors : 1 << 20);
  for (int64_t i = 0; i < st->ntensors; i++) {
    lua_pushlstring(L, st->names[i].s, st->names[i].len);
    volua_tensor *t = volua_lua_push_empty(L);
    *t = st->tensors[i]; /* the userdata owns it now */
    memset(&st->tensors[i], 0, sizeof st->tensors[i]);
    lua_rawset(L, -3);
  }
  lua_createtable(L, 0, st->nmeta < 1 << 20 ? (int)st->nmeta : 1 << 20);
  for (int64_t i = 0; i < st->nmeta; i++) {
    lua_pushlstring(L, st->meta[i].key.s, st->meta[i].key.len);
    lua_pushlstring(L, st->meta[i].value.s, st->meta[i].value.len);
    lua_rawset(L, -3);
  }
  volua_safetensors_free(st); /* names and metadata now live in Lua; the box is empty */
  return 2;
}

/* Counts the pairs of the table at idx, checking every key is a string. */
static int64_t count_string_keys(lua_State *L, int idx, const char *fname, const char *pname) {
  int64_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "%s: %s keys must be strings, got a %s key", fname, pname, luaL_typename(L, -2));
    n++;
    lua_pop(L, 1);
  }
  return n;
}

/* vol.save_safetensors(path, {[name] = tensor} [, {[key] = value}]) */
static int l_save_safetensors(lua_State *L) {
  const char *fname = "save_safetensors";
  const char *path = check_path(L, 1, fname);
  if (!lua_istable(L, 2))
    return luaL_error(L, "%s: tensors must be a table {[name] = tensor}, got %s", fname, luaL_typename(L, 2));
  int has_meta = !lua_isnoneornil(L, 3);
  if (has_meta && !lua_istable(L, 3))
    return luaL_error(L, "%s: metadata must be a table {[key] = string}, got %s", fname, luaL_typename(L, 3));
  lua_settop(L, 3);

  /* The arrays handed to the core live in userdata, and GPU tensors' CPU copies in a table,
   * so that an error anywhere below leaks nothing. */
  int64_t n = count_string_keys(L, 2, fname, "tensors");
  volua_st_entry *entries = lua_newuserdata(L, (size_t)(n + 1) * sizeof *entries); /* 4 */
  lua_newtable(L);                                                                /* 5: copies */
  int64_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    size_t len;
    const char *name = lua_tolstring(L, -2, &len); /* kept alive by the tensors table */
    volua_tensor *t = volua_lua_test_tensor(L, -1);
    if (!t || !t->storage)
      return luaL_error(L, "%s: tensors[\"%s\"] must be a tensor, got %s", fname, name,
                        t ? "a freed tensor" : luaL_typename(L, -1));
    entries[i].name.s = name;
    entries[i].name.len = len;
    entries[i].tensor = on_cpu(L, t);
    if (entries[i].tensor != t) lua_rawseti(L, 5, (int)(i + 1));
    i++;
    lua_pop(L, 1);
  }

  int64_t nmeta = has_meta ? count_string_keys(L, 3, fname, "metadata") : 0;
  volua_st_pair *meta = lua_newuserdata(L, (size_t)(nmeta + 1) * sizeof *meta);
  i = 0;
  if (has_meta) {
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      if (lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "%s: metadata[\"%s\"] must be a string, got %s", fname,
                          lua_tostring(L, -2), luaL_typename(L, -1));
      meta[i].key.s = lua_tolstring(L, -2, &meta[i].key.len);
      meta[i].value.s = lua_tolstring(L, -1, &meta[i].value.len);
      i++;
      lua_pop(L, 1);
    }
  }
  char err[VOLUA_ERR_MAX];
  if (volua_safetensors_save(path, entries, n, has_meta, meta, nmeta, err))
    return volua_lua_raise(L, err);
  return 0;
}

void volua_lua_open_io(lua_State *L) {
  luaL_newmetatable(L, SAFETENSORS_BOX_MT);
  lua_pushcfunction(L, box_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
      {"load", l_load},
      {"save", l_save},
      {"load_safetensors", l_load_safetensors},
      {"save_safetensors", l_save_safetensors},
      {NULL, NULL},
  };
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
}
