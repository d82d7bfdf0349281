/* lua_pointwise.c: vol.pointwise(x, steps), a chain of elementwise steps in one pass, and the
 * reader of steps that the convolutions' `epilogue` option shares (volua_lua_read_pw_spec).
 * A step is a name ("relu") or a table {name, args...} ({"clamp", -1, nil}, {"mul", 0.5},
 * {"add", bias_c111}); src/ops/pointwise.c checks them against the tensor. */
#include <string.h>

#include "lua_common.h"
#include "ops.h"

/* The names, their kind and op, and how many arguments each takes (at most). */
static const struct {
  const char *name;
  volua_pw_kind kind;
  int op, nargs, scalar_first;
} steps[] = {
  {"neg", VOLUA_PW_UNARY, VOLUA_UN_NEG, 0, 0},
  {"abs", VOLUA_PW_UNARY, VOLUA_UN_ABS, 0, 0},
  {"relu", VOLUA_PW_UNARY, VOLUA_UN_RELU, 0, 0},
  {"tanh", VOLUA_PW_UNARY, VOLUA_UN_TANH, 0, 0},
  {"sigmoid", VOLUA_PW_UNARY, VOLUA_UN_SIGMOID, 0, 0},
  {"exp", VOLUA_PW_UNARY, VOLUA_UN_EXP, 0, 0},
  {"log", VOLUA_PW_UNARY, VOLUA_UN_LOG, 0, 0},
  {"sqrt", VOLUA_PW_UNARY, VOLUA_UN_SQRT, 0, 0},
  {"gelu", VOLUA_PW_UNARY, VOLUA_UN_GELU, 1, 0},
  {"silu", VOLUA_PW_UNARY, VOLUA_UN_SILU, 0, 0},
  {"mish", VOLUA_PW_UNARY, VOLUA_UN_MISH, 0, 0},
  {"softplus", VOLUA_PW_UNARY, VOLUA_UN_SOFTPLUS, 2, 0},
  {"elu", VOLUA_PW_UNARY, VOLUA_UN_ELU, 1, 0},
  {"leaky_relu", VOLUA_PW_UNARY, VOLUA_UN_LEAKY_RELU, 1, 0},
  {"hardtanh", VOLUA_PW_UNARY, VOLUA_UN_HARDTANH, 2, 0},
  {"hardswish", VOLUA_PW_UNARY, VOLUA_UN_HARDSWISH, 0, 0},
  {"hardsigmoid", VOLUA_PW_UNARY, VOLUA_UN_HARDSIGMOID, 0, 0},
  {"clamp", VOLUA_PW_UNARY, VOLUA_UN_CLAMP, 2, 0},
  {"add", VOLUA_PW_SCALAR, VOLUA_BIN_ADD, 1, 0},
  {"sub", VOLUA_PW_SCALAR, VOLUA_BIN_SUB, 1, 0},
  {"mul", VOLUA_PW_SCALAR, VOLUA_BIN_MUL, 1, 0},
  {"div", VOLUA_PW_SCALAR, VOLUA_BIN_DIV, 1, 0},
  {"maximum", VOLUA_PW_SCALAR, VOLUA_BIN_MAXIMUM, 1, 0},
  {"minimum", VOLUA_PW_SCALAR, VOLUA_BIN_MINIMUM, 1, 0},
  {"rsub", VOLUA_PW_SCALAR, VOLUA_BIN_SUB, 1, 1},
  {"rdiv", VOLUA_PW_SCALAR, VOLUA_BIN_DIV, 1, 1},
};
#define NSTEPS ((int)(sizeof steps / sizeof steps[0]))

/* Argument j (1-based after the name) of the step table at idx: a number, or def where nil (has:
 * whether it was given). */
static double step_number(lua_State *L, int idx, int j, double def, int *has, const char *fn, int k,
                          const char *name, const char *pname) {
  lua_rawgeti(L, idx, j + 1);
  double v = def;
  if (has) *has = !lua_isnil(L, -1);
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      luaL_error(L, "%s: step %d (%s): %s must be a number, got %s", fn, k, name, pname,
                 volua_lua_test_tensor(L, -1) ? "tensor" : luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* Step k (1-based) at stack index idx into spec->step[k - 1]. */
static void read_step(lua_State *L, int idx, const char *fn, int k, volua_pw_spec *spec) {
  const int is_table = lua_istable(L, idx);
  if (is_table) lua_rawgeti(L, idx, 1);
  else lua_pushvalue(L, idx);
  if (lua_type(L, -1) != LUA_TSTRING)
    luaL_error(L, "%s: step %d must be a name (\"relu\") or a table {name, args...}, got %s", fn, k,
               volua_lua_test_tensor(L, -1) ? "tensor" : luaL_typename(L, -1));
  const char *name = lua_tostring(L, -1);
  int i = 0;
  while (i < NSTEPS && strcmp(steps[i].name, name) != 0) i++;
  if (i == NSTEPS)
    luaL_error(L, "%s: step %d: unknown op '%s' (neg, abs, relu, tanh, sigmoid, exp, log, sqrt, gelu, silu, "
               "mish, softplus, elu, leaky_relu, hardtanh, hardswish, hardsigmoid, clamp, add, sub, mul, "
               "div, maximum, minimum, rsub, rdiv)", fn, k, name);
  lua_pop(L, 1);
  /* no argument past the step's own (a table's holes: nil arguments in the middle are allowed) */
  if (is_table)
    for (int j = steps[i].nargs + 2; j <= steps[i].nargs + 8; j++) {
      lua_rawgeti(L, idx, j);
      const int extra = !lua_isnil(L, -1);
      lua_pop(L, 1);
      if (extra)
        luaL_error(L, "%s: step %d (%s) takes at most %d argument%s, got one at position %d", fn, k, name,
                   steps[i].nargs, steps[i].nargs == 1 ? "" : "s", j - 1);
    }
  memset(&spec->step[k - 1], 0, sizeof spec->step[k - 1]);
  spec->step[k - 1].kind = steps[i].kind;
  spec->step[k - 1].op = steps[i].op;
  spec->step[k - 1].scalar_first = steps[i].scalar_first;
  volua_unary_args *a = &spec->step[k - 1].args;
  if (steps[i].kind == VOLUA_PW_UNARY) {
    if (!is_table) lua_newtable(L), lua_replace(L, idx); /* no arguments: the defaults below */
    switch (steps[i].op) {
    case VOLUA_UN_GELU: {
      lua_rawgeti(L, idx, 2);
      if (!lua_isnil(L, -1)) {
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        if (s && strcmp(s, "tanh") == 0) spec->step[k - 1].op = VOLUA_UN_GELU_TANH;
        else if (!s || strcmp(s, "none") != 0)
          luaL_error(L, "%s: step %d (gelu): approximate must be \"none\" or \"tanh\", got %s", fn, k,
                     s ? s : luaL_typename(L, -1));
      }
      lua_pop(L, 1);
      break;
    }
    case VOLUA_UN_SOFTPLUS:
      a->p0 = step_number(L, idx, 1, 1.0, NULL, fn, k, name, "beta");
      a->p1 = step_number(L, idx, 2, 20.0, NULL, fn, k, name, "threshold");
      a->has_p0 = a->has_p1 = 1;
      break;
    case VOLUA_UN_ELU:
      a->p0 = step_number(L, idx, 1, 1.0, NULL, fn, k, name, "alpha");
      a->has_p0 = 1;
      break;
    case VOLUA_UN_LEAKY_RELU:
      a->p0 = step_number(L, idx, 1, 0.01, NULL, fn, k, name, "negative_slope");
      a->has_p0 = 1;
      break;
    case VOLUA_UN_HARDTANH:
      a->p0 = step_number(L, idx, 1, -1.0, NULL, fn, k, name, "min_val");
      a->p1 = step_number(L, idx, 2, 1.0, NULL, fn, k, name, "max_val");
      a->has_p0 = a->has_p1 = 1;
      break;
    case VOLUA_UN_CLAMP:
      a->p0 = step_number(L, idx, 1, 0.0, &a->has_p0, fn, k, name, "min");
      a->p1 = step_number(L, idx, 2, 0.0, &a->has_p1, fn, k, name, "max");
      break;
    default:
      break;
    }
    return;
  }
  /* with an operand: a number, or (not rsub / rdiv) a tensor of one value per channel */
  if (!is_table) luaL_error(L, "%s: step %d (%s) needs an operand: {\"%s\", value}", fn, k, name, name);
  lua_rawgeti(L, idx, 2);
  if (lua_type(L, -1) == LUA_TNUMBER) {
    spec->step[k - 1].s = lua_tonumber(L, -1);
  } else if (!steps[i].scalar_first && volua_lua_test_tensor(L, -1)) {
    spec->step[k - 1].kind = VOLUA_PW_CHANNEL;
    spec->step[k - 1].t = volua_lua_test_tensor(L, -1); /* kept alive by the steps table */
  } else {
    luaL_error(L, "%s: step %d (%s): the operand must be a number%s, got %s", fn, k, name,
               steps[i].scalar_first ? "" : " or a tensor of one value per channel",
               volua_lua_test_tensor(L, -1) ? "tensor" : luaL_typename(L, -1));
  }
  lua_pop(L, 1);
}

int volua_lua_read_pw_spec(lua_State *L, int idx, const char *fn, volua_pw_spec *spec) {
  if (!lua_istable(L, idx) || volua_lua_test_tensor(L, idx))
    luaL_error(L, "%s: steps must be a list of steps, e.g. {\"relu\", {\"mul\", 2}}, got %s", fn,
               volua_lua_test_tensor(L, idx) ? "tensor" : luaL_typename(L, idx));
  const int n = (int)lua_objlen(L, idx);
  if (n > VOLUA_PW_MAX) luaL_error(L, "%s: a chain has at most %d steps, got %d", fn, VOLUA_PW_MAX, n);
  spec->n = n;
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, idx, k);
    read_step(L, lua_gettop(L), fn, k, spec);
    lua_pop(L, 1);
  }
  return n;
}

/* vol.pointwise(x, steps) */
static int l_pointwise(lua_State *L) {
  const volua_tensor *x = volua_lua_check_tensor(L, 1, "pointwise", "input");
  if (lua_gettop(L) > 2) luaL_error(L, "pointwise: takes 2 arguments (x, steps), got %d", lua_gettop(L));
  volua_pw_spec spec;
  volua_lua_read_pw_spec(L, 2, "pointwise", &spec);
  char err[VOLUA_ERR_MAX];
  volua_tensor *r = volua_lua_push_empty(L);
  if (volua_pointwise(r, x, &spec, err)) return volua_lua_raise(L, err);
  return 1;
}

void volua_lua_open_pointwise(lua_State *L) {
  lua_pushcfunction(L, l_pointwise);
  lua_setfield(L, -2, "pointwise");
}
