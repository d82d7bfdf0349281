/* lua_norm.c: the Lua bindings of vol.group_norm(x, num_groups [, weight [, bias [, eps]]]),
 * vol.batch_norm, vol.instance_norm, vol.layer_norm (below group_norm), vol.mean(x [, dims
 * [, keepdim]]) and vol.sum(x [, dims [, keepdim]]), dims 1-based (negative counts from the end). */
#include <stdio.h>
#include <string.h>

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

/* -- batch_norm, instance_norm, layer_norm ---- */

/* An optional number at stack index idx (nil: def), named in the error. */
static double opt_number_arg(lua_State *L, int idx, double def, const char *fn, const char *pname) {
  if (lua_isnoneornil(L, idx)) return def;
  if (lua_type(L, idx) != LUA_TNUMBER)
    luaL_error(L, "%s: %s must be a number, got %s", fn, pname, luaL_typename(L, idx));
  return lua_tonumber(L, idx);
}

/* vol.batch_norm(x, running_mean, running_var [, weight [, bias [, training=false [, momentum=0.1
 * [, eps=1e-5]]]]]): F.batch_norm's positional arguments. */
static int l_batch_norm(lua_State *L) {
  const char *fn = "batch_norm";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fn, "input");
  volua_tensor *rm = volua_lua_opt_tensor(L, 2, fn, "running_mean");
  volua_tensor *rv = volua_lua_opt_tensor(L, 3, fn, "running_var");
  const volua_tensor *weight = volua_lua_opt_tensor(L, 4, fn, "weight");
  const volua_tensor *bias = volua_lua_opt_tensor(L, 5, fn, "bias");
  int training = 0;
  if (!lua_isnoneornil(L, 6)) {
    if (!lua_isboolean(L, 6)) luaL_error(L, "batch_norm: training must be a boolean, got %s", luaL_typename(L, 6));
    training = lua_toboolean(L, 6);
  }
  const double momentum = opt_number_arg(L, 7, 0.1, fn, "momentum");
  const double eps = opt_number_arg(L, 8, 1e-5, fn, "eps");

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_batch_norm(out, x, rm, rv, weight, bias, training, momentum, eps, err)) return volua_lua_raise(L, err);
  return 1;
}

static const char *const instance_norm_options[] = {"running_mean", "running_var", "weight", "bias",
                                                    "use_input_stats", "momentum", "eps", NULL};

/* vol.instance_norm(x [, {running_mean=, running_var=, weight=, bias=, use_input_stats=true,
 * momentum=0.1, eps=1e-5}]) */
static int l_instance_norm(lua_State *L) {
  const char *fn = "instance_norm";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fn, "input");
  if (!lua_isnoneornil(L, 2) && !lua_istable(L, 2))
    luaL_error(L, "instance_norm: options must be a table {running_mean = ..., weight = ...}, got %s",
               luaL_typename(L, 2));
  volua_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* running_mean, running_var, weight, bias */
  int use_input_stats = 1;
  double momentum = 0.1, eps = 1e-5;
  if (lua_istable(L, 2)) {
    /* a misspelt option would otherwise be ignored silently (PyTorch rejects unknown keywords) */
    lua_pushnil(L);
    while (lua_next(L, 2)) {
      lua_pop(L, 1);
      int known = 0;
      if (lua_type(L, -1) == LUA_TSTRING)
        for (const char *const *n = instance_norm_options; *n; n++) known |= strcmp(lua_tostring(L, -1), *n) == 0;
      if (!known)
        luaL_error(L, "instance_norm: unknown option '%s'", lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
                                                                                         : luaL_typename(L, -1));
    }
    for (int i = 0; i < 4; i++) { /* the table keeps the tensors alive */
      lua_getfield(L, 2, instance_norm_options[i]);
      t[i] = volua_lua_opt_tensor(L, lua_gettop(L), fn, instance_norm_options[i]);
      lua_pop(L, 1);
    }
    use_input_stats = volua_lua_opt_bool(L, 2, "use_input_stats", 1, fn);
    momentum = volua_lua_opt_number(L, 2, "momentum", 0.1, fn);
    eps = volua_lua_opt_number(L, 2, "eps", 1e-5, fn);
  }

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_instance_norm(out, x, t[0], t[1], t[2], t[3], use_input_stats, momentum, eps, err))
    return volua_lua_raise(L, err);
  return 1;
}

/* vol.layer_norm(x, normalized_shape [, weight [, bias [, eps=1e-5]]]): normalized_shape a size or
 * a list of sizes. */
static int l_layer_norm(lua_State *L) {
  const char *fn = "layer_norm";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fn, "input");
  int64_t nshape[VOLUA_MAX_DIMS];
  int nnorm = 0;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    nshape[nnorm++] = volua_lua_check_int(L, 2, fn, "normalized_shape");
  } else if (lua_istable(L, 2)) {
    const int len = (int)lua_objlen(L, 2);
    if (len > VOLUA_MAX_DIMS)
      luaL_error(L, "layer_norm: normalized_shape has %d dims, at most %d are supported", len, VOLUA_MAX_DIMS);
    for (int i = 1; i <= len; i++) {
      char pname[40];
      snprintf(pname, sizeof pname, "normalized_shape[%d]", i);
      lua_rawgeti(L, 2, i);
      nshape[nnorm++] = volua_lua_check_int(L, lua_gettop(L), fn, pname);
      lua_pop(L, 1);
    }
  } else {
    luaL_error(L, "layer_norm: normalized_shape must be a size or a list of sizes, got %s", luaL_typename(L, 2));
  }
  const volua_tensor *weight = volua_lua_opt_tensor(L, 3, fn, "weight");
  const volua_tensor *bias = volua_lua_opt_tensor(L, 4, fn, "bias");
  const double eps = opt_number_arg(L, 5, 1e-5, fn, "eps");

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_layer_norm(out, x, nnorm, nshape, weight, bias, eps, err)) return volua_lua_raise(L, err);
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
  {"batch_norm", l_batch_norm},
  {"instance_norm", l_instance_norm},
  {"layer_norm", l_layer_norm},
  {"mean", l_mean},
  {"sum", l_sum},
  {NULL, NULL},
};

/* Adds group_norm, batch_norm, instance_norm, layer_norm, mean and sum to the module table at the top of the stack. */
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
