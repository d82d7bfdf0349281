/* lua_softmax.c: the Lua bindings of vol.softmax(x, dim), vol.log_softmax(x, dim),
 * vol.logsumexp(x, dims [, keepdim]), vol.amax / vol.amin(x [, dims [, keepdim]]) and
 * vol.max / vol.min(x, dim [, keepdim]) -> values, indices (also t:max(dim) and t:min(dim)).
 * Dims are 1-based (negative counts from the end), read as vol.mean's (src/lua_norm.c). */
#include "lua_common.h"
#include "ops.h"

/* The optional keepdim at idx (default false). */
static int read_keepdim(lua_State *L, const char *fn, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  if (!lua_isboolean(L, idx))
    luaL_error(L, "%s: keepdim must be a boolean, got %s", fn, luaL_typename(L, idx));
  return lua_toboolean(L, idx);
}

/* A dim that torch requires (softmax's implicit dim is deprecated; max(x) has no indices). */
static int read_required_dim(lua_State *L, const char *fn, int idx, int ndim, const char *why) {
  if (lua_isnoneornil(L, idx))
    luaL_error(L, "%s: dim is required (1-based, negative from the end)%s", fn, why);
  return volua_lua_read_dim(L, fn, idx, ndim, "dim");
}

static int softmax(lua_State *L, int log) {
  const char *fn = log ? "log_softmax" : "softmax";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fn, "input");
  int dim = read_required_dim(L, fn, 2, x->ndim, ", as torch's implicit dim is deprecated");
  if (!lua_isnone(L, 3)) luaL_error(L, "%s: takes (x, dim), got %d arguments", fn, lua_gettop(L));
  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_softmax(out, x, dim, log, err)) return volua_lua_raise(L, err);
  return 1;
}
static int l_softmax(lua_State *L) { return softmax(L, 0); }
static int l_log_softmax(lua_State *L) { return softmax(L, 1); }

static int l_logsumexp(lua_State *L) {
  const volua_tensor *x = volua_lua_check_tensor(L, 1, "logsumexp", "input");
  if (lua_isnoneornil(L, 2))
    luaL_error(L, "logsumexp: dims is required (a 1-based dim or a list of them), as in torch");
  int dims[VOLUA_MAX_DIMS];
  int ndims = volua_lua_read_dims(L, "logsumexp", 2, x->ndim, dims);
  int keepdim = read_keepdim(L, "logsumexp", 3);
  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_logsumexp(out, x, ndims, dims, keepdim, err)) return volua_lua_raise(L, err);
  return 1;
}

static int amax(lua_State *L, int is_max) {
  const char *fn = is_max ? "amax" : "amin";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fn, "input");
  int dims[VOLUA_MAX_DIMS];
  int ndims = volua_lua_read_dims(L, fn, 2, x->ndim, dims);
  int keepdim = read_keepdim(L, fn, 3);
  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_amax(out, x, ndims, dims, keepdim, is_max, err)) return volua_lua_raise(L, err);
  return 1;
}
static int l_amax(lua_State *L) { return amax(L, 1); }
static int l_amin(lua_State *L) { return amax(L, 0); }

int volua_lua_max_dim(lua_State *L, int is_max) {
  const char *fn = is_max ? "max" : "min";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fn, "input");
  int dim = read_required_dim(L, fn, 2, x->ndim, is_max ? " (t:max() gives the whole tensor's max)"
                                                        : " (t:min() gives the whole tensor's min)");
  int keepdim = read_keepdim(L, fn, 3);
  volua_tensor *values = volua_lua_push_empty(L);
  volua_tensor *indices = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_max_dim(values, indices, x, dim, keepdim, is_max, err)) return volua_lua_raise(L, err);
  return 2;
}
static int l_max(lua_State *L) { return volua_lua_max_dim(L, 1); }
static int l_min(lua_State *L) { return volua_lua_max_dim(L, 0); }

static const luaL_Reg softmax_functions[] = {
  {"softmax", l_softmax},
  {"log_softmax", l_log_softmax},
  {"logsumexp", l_logsumexp},
  {"amax", l_amax},
  {"amin", l_amin},
  {"max", l_max},
  {"min", l_min},
  {NULL, NULL},
};

/* Adds softmax, log_softmax, logsumexp, amax, amin, max and min to the module table at the top of
 * the stack. */
void volua_lua_open_softmax(lua_State *L) {
  luaL_register(L, NULL, softmax_functions);
}
