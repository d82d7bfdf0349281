/* lua_conv.c: the Lua bindings of vol.conv3d(x, weight [, bias] [, opts]),
 * vol.conv_transpose3d(x, weight [, bias] [, opts]) and
 * vol.conv3d_group_norm_mean(x, conv_w, conv_b, num_groups, gn_w, gn_b [, opts]). */
#include <stdio.h>
#include <string.h>

#include "lua_common.h"
#include "ops.h"

static const int64_t zero3[3] = {0, 0, 0}, one3[3] = {1, 1, 1};

static const char *const conv3d_options[] = {"stride", "padding", "dilation", "groups",
                                             "padding_mode", "epilogue", NULL};
static const char *const transpose_options[] = {"stride", "padding", "output_padding", "dilation",
                                                "groups", "padding_mode", "epilogue", NULL};
static const char *const gn_mean_options[] = {"eps",    "stride",       "padding",     "dilation",
                                              "groups", "padding_mode", "kernel_size", NULL};

/* -- argument readers shared by the three functions ---- */

/* A misspelt option would otherwise be ignored silently (PyTorch rejects unknown keywords).
 * The value at idx is nil or none (no options) or a table. */
static void check_options(lua_State *L, int idx, const char *fname, const char *const *names) {
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx))
    luaL_error(L, "%s: options must be a table, got %s", fname, luaL_typename(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1); /* the value */
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s: options must be named (stride = ...), got a %s key", fname,
                 luaL_typename(L, -1));
    const char *key = lua_tostring(L, -1);
    int known = 0;
    for (const char *const *n = names; *n; n++) known |= strcmp(key, *n) == 0;
    if (!known) luaL_error(L, "%s: unknown option '%s'", fname, key);
  }
}

/* Nothing may follow the options: extra arguments are a mistake PyTorch would reject too. */
static void check_no_more(lua_State *L, int last, const char *fname, const char *usage) {
  for (int i = lua_gettop(L); i > last; i--)
    if (!lua_isnil(L, i))
      luaL_error(L, "%s: unexpected argument %d (%s); usage: %s", fname, i, luaL_typename(L, i), usage);
}

/* `padding`: a number, {d, h, w}, or (where strings_ok) "same" / "valid". */
static void read_padding(lua_State *L, int idx, const char *fname, int strings_ok, int64_t pad[3],
                         volua_padding_kind *kind) {
  *kind = VOLUA_PADDING_EXPLICIT;
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "padding");
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *s = lua_tostring(L, -1);
      if (strings_ok && strcmp(s, "same") == 0) *kind = VOLUA_PADDING_SAME;
      else if (strings_ok && strcmp(s, "valid") == 0) *kind = VOLUA_PADDING_VALID;
      else if (strings_ok)
        luaL_error(L, "%s: padding must be a number, {d, h, w}, \"same\" or \"valid\", got '%s'",
                   fname, s);
      else
        luaL_error(L, "%s: padding must be a number or {d, h, w}, got '%s' (\"same\" and "
                   "\"valid\" are conv3d's)", fname, s);
      lua_pop(L, 1);
      for (int i = 0; i < 3; i++) pad[i] = 0;
      return;
    }
    lua_pop(L, 1);
  }
  volua_lua_opt_triple(L, idx, "padding", zero3, pad, fname);
}

static volua_padding_mode read_padding_mode(lua_State *L, int idx, const char *fname) {
  static const char *const names[] = {"zeros", "reflect", "replicate", "circular"};
  static const volua_padding_mode modes[] = {VOLUA_PAD_ZEROS, VOLUA_PAD_REFLECT, VOLUA_PAD_REPLICATE,
                                             VOLUA_PAD_CIRCULAR};
  const char *s = volua_lua_opt_string(L, idx, "padding_mode", "zeros", fname);
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) return modes[i];
  luaL_error(L, "%s: padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular', got '%s'",
             fname, s);
  return VOLUA_PAD_ZEROS;
}

static void read_conv3d_args(lua_State *L, int idx, const char *fname, volua_conv3d_args *a) {
  volua_lua_opt_triple(L, idx, "stride", one3, a->stride, fname);
  read_padding(L, idx, fname, 1, a->padding, &a->padding_kind);
  volua_lua_opt_triple(L, idx, "dilation", one3, a->dilation, fname);
  a->groups = volua_lua_opt_int(L, idx, "groups", 1, fname);
  a->padding_mode = read_padding_mode(L, idx, fname);
  a->epilogue = NULL;
}

/* `epilogue`: a list of pointwise steps applied to the output (vol.pointwise's), into spec; NULL
 * where there is none. The list stays on the stack (its tensors are borrowed). */
static const volua_pw_spec *read_epilogue(lua_State *L, int idx, const char *fname, volua_pw_spec *spec) {
  if (!lua_istable(L, idx)) return NULL;
  lua_getfield(L, idx, "epilogue");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  char fn[64];
  snprintf(fn, sizeof fn, "%s: epilogue", fname);
  volua_lua_read_pw_spec(L, lua_gettop(L), fn, spec);
  return spec;
}

/* (x, weight [, bias] [, opts]): a plain table in place of the bias is the options. Returns the
 * options' stack index and sets *bias. */
static int read_bias_and_opts(lua_State *L, const char *fname, const volua_tensor **bias,
                              const char *usage) {
  int opts = 4;
  *bias = NULL;
  if (lua_istable(L, 3)) opts = 3;
  else *bias = volua_lua_opt_tensor(L, 3, fname, "bias");
  check_no_more(L, opts, fname, usage);
  return opts;
}

/* -- the functions ---- */

static int l_conv3d(lua_State *L) {
  static const char usage[] = "vol.conv3d(x, weight [, bias] [, opts])";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, "conv3d", "input");
  const volua_tensor *weight = volua_lua_check_tensor(L, 2, "conv3d", "weight");
  const volua_tensor *bias;
  const int opts = read_bias_and_opts(L, "conv3d", &bias, usage);
  check_options(L, opts, "conv3d", conv3d_options);
  volua_conv3d_args a;
  read_conv3d_args(L, opts, "conv3d", &a);
  volua_pw_spec epi;
  a.epilogue = read_epilogue(L, opts, "conv3d", &epi);

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_conv3d(out, x, weight, bias, &a, err)) return volua_lua_raise(L, err);
  return 1;
}

static int l_conv_transpose3d(lua_State *L) {
  static const char usage[] = "vol.conv_transpose3d(x, weight [, bias] [, opts])";
  const char *fname = "conv_transpose3d";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fname, "input");
  const volua_tensor *weight = volua_lua_check_tensor(L, 2, fname, "weight");
  const volua_tensor *bias;
  const int opts = read_bias_and_opts(L, fname, &bias, usage);
  check_options(L, opts, fname, transpose_options);

  volua_conv_transpose3d_args a;
  volua_padding_kind kind;
  volua_lua_opt_triple(L, opts, "stride", one3, a.stride, fname);
  read_padding(L, opts, fname, 0, a.padding, &kind);
  volua_lua_opt_triple(L, opts, "output_padding", zero3, a.output_padding, fname);
  volua_lua_opt_triple(L, opts, "dilation", one3, a.dilation, fname);
  a.groups = volua_lua_opt_int(L, opts, "groups", 1, fname);
  if (read_padding_mode(L, opts, fname) != VOLUA_PAD_ZEROS) /* as nn.ConvTranspose3d */
    luaL_error(L, "%s: only padding_mode 'zeros' is supported", fname);
  volua_pw_spec epi;
  a.epilogue = read_epilogue(L, opts, fname, &epi);

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_conv_transpose3d(out, x, weight, bias, &a, err)) return volua_lua_raise(L, err);
  return 1;
}

static int l_conv3d_group_norm_mean(lua_State *L) {
  const char *fname = "conv3d_group_norm_mean";
  const volua_tensor *x = volua_lua_check_tensor(L, 1, fname, "input");
  const volua_tensor *conv_w = volua_lua_check_tensor(L, 2, fname, "conv_w");
  const volua_tensor *conv_b = volua_lua_opt_tensor(L, 3, fname, "conv_b");
  const int64_t num_groups = volua_lua_check_int(L, 4, fname, "num_groups");
  const volua_tensor *gn_w = volua_lua_opt_tensor(L, 5, fname, "gn_w");
  const volua_tensor *gn_b = volua_lua_opt_tensor(L, 6, fname, "gn_b");
  check_no_more(L, 7, fname, "vol.conv3d_group_norm_mean(x, conv_w, conv_b, num_groups, gn_w, gn_b [, opts])");
  check_options(L, 7, fname, gn_mean_options);
  volua_conv3d_args a;
  read_conv3d_args(L, 7, fname, &a);
  const double eps = volua_lua_opt_number(L, 7, "eps", 1e-5, fname);
  /* kernel_size is implied by conv_w; where it is given it must agree (nn.Conv3d's argument) */
  if (lua_istable(L, 7)) {
    lua_getfield(L, 7, "kernel_size");
    const int given = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (given) {
      int64_t k[3];
      volua_lua_opt_triple(L, 7, "kernel_size", NULL, k, fname);
      if (conv_w->ndim == 5 &&
          (k[0] != conv_w->shape[2] || k[1] != conv_w->shape[3] || k[2] != conv_w->shape[4]))
        luaL_error(L, "%s: kernel_size (%lld, %lld, %lld) does not match conv_w's kernel (%lld, %lld, %lld)",
                   fname, (long long)k[0], (long long)k[1], (long long)k[2],
                   (long long)conv_w->shape[2], (long long)conv_w->shape[3],
                   (long long)conv_w->shape[4]);
    }
  }

  volua_tensor *out = volua_lua_push_empty(L);
  char err[VOLUA_ERR_MAX];
  if (volua_conv3d_group_norm_mean(out, x, conv_w, conv_b, num_groups, gn_w, gn_b, eps, &a, err))
    return volua_lua_raise(L, err);
  return 1;
}

static const luaL_Reg conv_functions[] = {
  {"conv3d", l_conv3d},
  {"conv_transpose3d", l_conv_transpose3d},
  {"conv3d_group_norm_mean", l_conv3d_group_norm_mean},
  {NULL, NULL},
};

/* Adds the convolution functions to the module table at the top of the stack. */
void volua_lua_open_conv(lua_State *L) {
  luaL_register(L, NULL, conv_functions);
}
