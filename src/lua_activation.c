/* lua_activation.c: the activations and clamp, each both a tensor method and a vol function (one C
 * function: x:gelu("tanh") is vol.gelu(x, "tanh")): tanh, sigmoid, exp, log, sqrt, gelu, silu,
 * mish, softplus, elu, leaky_relu, hardtanh, hardswish, hardsigmoid, clamp; and vol.relu, vol.abs
 * (the methods t:relu(), t:abs() of lua_tensor.c). The ops are src/ops/elementwise.c's unary family. */
#include <string.h>

#include "lua_common.h"
#include "ops.h"

/* Raises an error when more than `most` arguments were given (PyTorch rejects extra ones too). */
static void check_count(lua_State *L, int most, const char *fname) {
  int n = lua_gettop(L);
  if (n > most)
    luaL_error(L, "%s: takes at most %d argument%s (the input first), got %d", fname, most,
               most == 1 ? "" : "s", n);
}

/* A number argument, or def when it is nil or absent. */
static double opt_number(lua_State *L, int idx, double def, const char *fname, const char *pname) {
  if (lua_isnoneornil(L, idx)) return def;
  if (lua_type(L, idx) != LUA_TNUMBER)
    luaL_error(L, "%s: %s must be a number, got %s", fname, pname,
               volua_lua_test_tensor(L, idx) ? "tensor" : luaL_typename(L, idx));
  return lua_tonumber(L, idx);
}

/* Runs op on the input (argument 1) and pushes the result. */
static int run(lua_State *L, const char *fname, volua_unop op, const volua_unary_args *p) {
  volua_tensor *x = volua_lua_check_tensor(L, 1, fname, "input");
  char err[VOLUA_ERR_MAX];
  volua_tensor *r = volua_lua_push_empty(L);
  if (volua_unary_with_args(r, x, op, p, err)) volua_lua_raise(L, err);
  return 1;
}

/* The ops without parameters. */
static int plain(lua_State *L, const char *fname, volua_unop op) {
  check_count(L, 1, fname);
  return run(L, fname, op, NULL);
}
static int l_tanh(lua_State *L) { return plain(L, "tanh", VOLUA_UN_TANH); }
static int l_sigmoid(lua_State *L) { return plain(L, "sigmoid", VOLUA_UN_SIGMOID); }
static int l_exp(lua_State *L) { return plain(L, "exp", VOLUA_UN_EXP); }
static int l_log(lua_State *L) { return plain(L, "log", VOLUA_UN_LOG); }
static int l_sqrt(lua_State *L) { return plain(L, "sqrt", VOLUA_UN_SQRT); }
static int l_silu(lua_State *L) { return plain(L, "silu", VOLUA_UN_SILU); }
static int l_mish(lua_State *L) { return plain(L, "mish", VOLUA_UN_MISH); }
static int l_hardswish(lua_State *L) { return plain(L, "hardswish", VOLUA_UN_HARDSWISH); }
static int l_hardsigmoid(lua_State *L) { return plain(L, "hardsigmoid", VOLUA_UN_HARDSIGMOID); }

/* gelu(x [, approximate="none"]): "none" (erf) or "tanh". */
static int l_gelu(lua_State *L) {
  check_count(L, 2, "gelu");
  volua_unop op = VOLUA_UN_GELU;
  if (!lua_isnoneornil(L, 2)) {
    const char *s = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
    if (s && strcmp(s, "tanh") == 0) op = VOLUA_UN_GELU_TANH;
    else if (!s || strcmp(s, "none") != 0) {
      if (s) luaL_error(L, "gelu: approximate must be \"none\" or \"tanh\", got \"%s\"", s);
      luaL_error(L, "gelu: approximate must be \"none\" or \"tanh\", got %s",
                 volua_lua_test_tensor(L, 2) ? "tensor" : luaL_typename(L, 2));
    }
  }
  return run(L, "gelu", op, NULL);
}

/* softplus(x [, beta=1 [, threshold=20]]) */
static int l_softplus(lua_State *L) {
  check_count(L, 3, "softplus");
  volua_unary_args p = {opt_number(L, 2, 1.0, "softplus", "beta"),
                        opt_number(L, 3, 20.0, "softplus", "threshold"), 1, 1};
  return run(L, "softplus", VOLUA_UN_SOFTPLUS, &p);
}

/* elu(x [, alpha=1]) */
static int l_elu(lua_State *L) {
  check_count(L, 2, "elu");
  volua_unary_args p = {opt_number(L, 2, 1.0, "elu", "alpha"), 0, 1, 0};
  return run(L, "elu", VOLUA_UN_ELU, &p);
}

/* leaky_relu(x [, negative_slope=0.01]) */
static int l_leaky_relu(lua_State *L) {
  check_count(L, 2, "leaky_relu");
  volua_unary_args p = {opt_number(L, 2, 0.01, "leaky_relu", "negative_slope"), 0, 1, 0};
  return run(L, "leaky_relu", VOLUA_UN_LEAKY_RELU, &p);
}

/* hardtanh(x [, min_val=-1 [, max_val=1]]) */
static int l_hardtanh(lua_State *L) {
  check_count(L, 3, "hardtanh");
  volua_unary_args p = {opt_number(L, 2, -1.0, "hardtanh", "min_val"),
                        opt_number(L, 3, 1.0, "hardtanh", "max_val"), 1, 1};
  return run(L, "hardtanh", VOLUA_UN_HARDTANH, &p);
}

/* clamp(x, min, max): either bound may be nil, not both (the op layer says so) */
static int l_clamp(lua_State *L) {
  check_count(L, 3, "clamp");
  volua_unary_args p = {opt_number(L, 2, 0.0, "clamp", "min"), opt_number(L, 3, 0.0, "clamp", "max"),
                        !lua_isnoneornil(L, 2), !lua_isnoneornil(L, 3)};
  return run(L, "clamp", VOLUA_UN_CLAMP, &p);
}

static const luaL_Reg activations[] = {
  {"tanh", l_tanh}, {"sigmoid", l_sigmoid}, {"exp", l_exp}, {"log", l_log}, {"sqrt", l_sqrt},
  {"gelu", l_gelu}, {"silu", l_silu}, {"mish", l_mish}, {"softplus", l_softplus}, {"elu", l_elu},
  {"leaky_relu", l_leaky_relu}, {"hardtanh", l_hardtanh}, {"hardswish", l_hardswish},
  {"hardsigmoid", l_hardsigmoid}, {"clamp", l_clamp}, {NULL, NULL}};

/* Adds the methods, then sets vol.<name> to the very same function values (so that help finds one
 * name for both), and vol.relu, vol.abs to the methods t:relu, t:abs (torch.relu, torch.abs). */
void volua_lua_open_activation(lua_State *L) {
  volua_lua_add_methods(L, activations);
  luaL_getmetatable(L, VOLUA_TENSOR_MT);
  lua_getfield(L, -1, "__methods"); /* module, metatable, methods */
  for (const luaL_Reg *r = activations; r->name; r++) {
    lua_getfield(L, -1, r->name);
    lua_setfield(L, -4, r->name);
  }
  const char *same[] = {"relu", "abs"};
  for (int i = 0; i < 2; i++) {
    lua_getfield(L, -1, same[i]);
    lua_setfield(L, -4, same[i]);
  }
  lua_pop(L, 2);
}
