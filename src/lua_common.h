/* lua_common.h: what every binding file shares: the Tensor userdata, argument readers that
 * raise errors naming the function and the parameter, and the registration hooks. */
#ifndef VOLUA_LUA_COMMON_H
#define VOLUA_LUA_COMMON_H

#include <lua.h>
#include <lauxlib.h>
#include "tensor.h"

#define VOLUA_TENSOR_MT "volua.Tensor"

/* The userdata behind a Lua tensor is a volua_tensor itself. */
volua_tensor *volua_lua_check_tensor(lua_State *L, int idx, const char *fname, const char *pname);
/* NULL when the value at idx is nil/none; an error if it is neither nil nor a tensor. */
volua_tensor *volua_lua_opt_tensor(lua_State *L, int idx, const char *fname, const char *pname);
volua_tensor *volua_lua_test_tensor(lua_State *L, int idx); /* NULL if not a tensor */
/* Pushes a new empty tensor (NULL storage, metatable set) to be filled by an op:
 * a failed allocation then leaves an object that __gc skips. */
volua_tensor *volua_lua_push_empty(lua_State *L);

/* Raises msg as a Lua error (never as a format string). */
int volua_lua_raise(lua_State *L, const char *msg);
/* luaL_error with C's printf formats (%lld, %g, ...): Lua 5.1's lua_pushfstring knows only
 * %d %s %f %p %c, and sizes here are int64_t. Every binding's luaL_error goes through it. */
int volua_lua_errorf(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define luaL_error volua_lua_errorf

/* Reads field `key` of the options table at idx (absent table or field: default).
 * Per-dimension values take a number or a {d, h, w} table. */
void volua_lua_opt_triple(lua_State *L, int idx, const char *key, const int64_t def[3],
                          int64_t out[3], const char *fname);
int64_t volua_lua_opt_int(lua_State *L, int idx, const char *key, int64_t def, const char *fname);
double volua_lua_opt_number(lua_State *L, int idx, const char *key, double def, const char *fname);
int volua_lua_opt_bool(lua_State *L, int idx, const char *key, int def, const char *fname);
const char *volua_lua_opt_string(lua_State *L, int idx, const char *key, const char *def,
                                 const char *fname);
/* An integer argument at stack position idx (errors on non-integers, NaN, inf). */
int64_t volua_lua_check_int(lua_State *L, int idx, const char *fname, const char *pname);
/* Reads a shape table (or a number for 1-D) into shape; returns ndim. */
int volua_lua_check_shape(lua_State *L, int idx, int64_t *shape, const char *fname);

/* Registration: each binding file adds its functions to the module table at the top
 * of the stack (and methods to the Tensor metatable's method table where it has some). */
void volua_lua_open_tensor(lua_State *L);  /* lua_tensor.c: creation, methods, metatable */
void volua_lua_open_conv(lua_State *L);   /* lua_conv.c: conv3d, conv_transpose3d, the fused op */
void volua_lua_open_pool(lua_State *L);   /* lua_pool.c: max_pool3d */
void volua_lua_open_norm(lua_State *L);   /* lua_norm.c: group_norm, mean */
void volua_lua_open_io(lua_State *L);      /* lua_io.c: load/save npy and safetensors */
void volua_lua_open_device(lua_State *L);  /* lua_device.c: cuda_available, sync, memory, math */
void volua_lua_open_png(lua_State *L);     /* lua_png.c: save_png, load_png */
void volua_lua_open_bench(lua_State *L);   /* lua_bench.c: bench, fast_calls */
void volua_lua_open_softmax(lua_State *L); /* lua_softmax.c: softmax, logsumexp, amax, max, ... */
/* lua_norm.c's dims readers (vol.mean's rules): the dim at idx (1-based, negative from the end;
 * a 0-D input takes 1 or -1) made 0-based; and dims (nil: all, a number or a list) into dims[],
 * returning their count, 0 meaning all. Errors name fn and pname. */
int volua_lua_read_dim(lua_State *L, const char *fn, int idx, int ndim, const char *pname);
int volua_lua_read_dims(lua_State *L, const char *fn, int idx, int ndim, int dims[VOLUA_MAX_DIMS]);
/* t:max(dim [, keepdim]) and t:min(...) (lua_softmax.c): vol.max / vol.min from a method. */
int volua_lua_max_dim(lua_State *L, int is_max);

/* lua_activation.c: tanh, sigmoid, exp, log, sqrt, gelu, silu, mish, softplus, elu, leaky_relu,
 * hardtanh, hardswish, hardsigmoid, clamp (methods and functions), vol.relu, vol.abs */
void volua_lua_open_activation(lua_State *L);
/* lua_pointwise.c: vol.pointwise; and the reader of a list of pointwise steps at idx (vol.pointwise,
 * the convolutions' `epilogue`): fills spec (its tensors borrowed from the list), returns the count. */
void volua_lua_open_pointwise(lua_State *L);
struct volua_pw_spec;
int volua_lua_read_pw_spec(lua_State *L, int idx, const char *fn, struct volua_pw_spec *spec);
/* Adds methods to the Tensor method table (from any binding file). */
void volua_lua_add_methods(lua_State *L, const luaL_Reg *methods);

/* The core module: luaopen of "volua.core". */
int luaopen_volua_core(lua_State *L);

#endif
