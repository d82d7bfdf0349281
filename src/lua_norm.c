/* lua_norm.c: the Lua bindings of vol.group_norm(x, num_groups [, weight [, bias [, eps]]]),
 * vol.mean(x [, dims [, keepdim]]) and vol.sum(x [, dims [, keepdim]]), dims 1-based (negative
 * counts from the end). */
#include <stdio.h>

#include "lua_common.h"
#include "ops.h"

static int l_group_norm(lua_State *L) {
  const volua_tensor *x = volua_lua_check_tensor(L, 1, "group_norm", "input");
  int64_t num_groups = volua_lua_check_int(L, 2, "group_norm", "num_groups");
  const volua_tensor *weight = volua_lua_opt_tensor(L, 3, "group_norm", "weight");
  const volua_tensor *bias = volua_lua_opt_tensor(L, 4, "group_norm", "bias");
  double eps = 1e-5;
  if (!lua_isnoneornil(L, 5)) {
    if (lua_type(L, 5) != LUA_TNUMBER)
      luaL_error(L, "group_norm: eps must be a number, got %s", luaL_typename(L, 5));
    eps = lua_tonumber(L, 5);
  }

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_group_norm(out, x, num_groups, weight, bias, eps, err)) return volua_lua_raise(L, err);
  return 1;
}

/* -- mean's and sum's dims: 1-based or negative Lua dims to 0-based ones ---- */

/* The dim at stack index idx, checked against an ndim-D input and made 0-based. A 0-D input
 * takes dim 1 or -1, as PyTorch lets dim 0 or -1 name a scalar's (absent) dim. fn: the function. */
static int read_dim(lua_State *L, const char *fn, int idx, int ndim, const char *pname) {
  int64_t d = volua_lua_check_int(L, idx, fn, pname);
  int n = ndim > 0 ? ndim : 1;
  if (d == 0 || d > n || d < -n) {
    char err[VOLUA_ERR_MAX]; /* lua_pushfstring knows no %lld */
    snprintf(err, sizeof err, "%s: %s (%lld) is out of range for a %d-D input (dims are "
             "1-based: 1..%d, or -%d..-1 from the end)", fn, pname, (long long)d, ndim, n, n);
    volua_lua_raise(L, err);
  }
  return (int)(d > 0 ? d - 1 : n + d);
}

/* Reads dims (nil: all, a number, or a list) into dims[]; returns their count, 0 meaning all. */
static int read_dims(lua_State *L, const char *fn, int idx, int ndim, int dims[VOLUA_MAX_DIMS]) {
  int seen[VOLUA_MAX_DIMS] = {0}, count = 0;
  if (lua_isnoneornil(L, idx)) return 0;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    dims[count++] = read_dim(L, fn, idx, ndim, "dims");
  } else if (lua_istable(L, idx)) {
    int len = (int)lua_objlen(L, idx);
    for (int i = 1; i <= len; i++) {
      char pname[32];
      snprintf(pname, sizeof pname, "dims[%d]", i);
      lua_rawgeti(L, idx, i);
      int d = read_dim(L, fn, -1, ndim, pname);
      lua_pop(L, 1);
      if (seen[d]) luaL_error(L, "%s: dim %d appears more than once in dims", fn, d + 1);
      seen[d] = 1;
      dims[count++] = d;
    }
  } else {
    luaL_error(L, "%s: dims must be a number, a list of numbers or nil, got %s", fn,
               luaL_typename(L, idx));
  }
  /* a scalar's only "dim" is itself: reducing over it is reducing over everything */
  return ndim == 0 ? 0 : count;
}

/* vol.mean and vol.sum: (x [, dims [, keepdim]]); fn names the function, sum picks it. */
static int reduce_dims(lua_State *L, const char *fn, int sum) {
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fn, "input");
  int dims[VOLUA_MAX_DIMS];
  int ndims = read_dims(L, fn, 2, x->ndim, dims);
  int keepdim = 0;
  if (!lua_isnoneornil(L, 3)) {
    if (!lua_isboolean(L, 3))
      luaL_error(L, "%s: keepdim must be a boolean, got %s", fn, luaL_typename(L, 3));
    keepdim = lua_toboolean(L, 3);
  }

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if ((sum ? volua_sum : volua_mean)(out, x, ndims, dims, keepdim, err)) return volua_lua_raise(L, err);
  return 1;
}

static int l_mean(lua_State *L) { return reduce_dims(L, "mean", 0); }
static int l_sum(lua_State *L) { return reduce_dims(L, "sum", 1); }

static const luaL_Reg norm_functions[] = {
  {"group_norm", l_group_norm},
  {"mean", l_mean},
  {"sum", l_sum},
  {NULL, NULL},
};

/* Adds group_norm, mean and sum to the module table at the top of the stack. */
void volua_lua_open_norm(lua_State *L) {
  luaL_register(L, NULL, norm_functions);
}

/* -- dims readers, shared with lua_softmax.c (softmax, logsumexp, amax, max, ...) ---- */

int volua_lua_read_dim(lua_State *L, const char *fn, int idx, int ndim, const char *pname) {
  return read_dim(L, fn, idx, ndim, pname);
}

int volua_lua_read_dims(lua_State *L, const char *fn, int idx, int ndim, int dims[VOLUA_MAX_DIMS]) {
  return read_dims(L, fn, idx, ndim, dims);
}
