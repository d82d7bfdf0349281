/* lua_bench.c: timing from Lua for scripts/bench.lua: vol.bench (CUDA events on volua's stream,
 * an L2 flush before each call, the median) and vol.fast_calls (calls the tensor-core paths took). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_common.h"
#include "cuda.h"
#ifdef VOLUA_CUDA
#include "../kernels/fast.h"
#endif

#ifdef VOLUA_CUDA
static int cmp_float(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}
#endif

/* vol.bench(fn [, {warmup = 3, reps = 30, flush_mb = 256}]) -> median ms, {ms of each call}
 * Calls fn() warmup times, then reps times, each one after a full garbage collection (so that the
 * results of earlier calls do not pile up in GPU memory) and a write of a flush_mb MB buffer (so
 * that no input is left in L2), between two CUDA events recorded on volua's stream. fn's work must
 * go to volua's stream, as every op's does. */
static int l_bench(lua_State *L) {
  if (lua_type(L, 1) != LUA_TFUNCTION)
    return luaL_error(L, "bench: fn must be a function, got %s", luaL_typename(L, 1));
  if (!lua_isnoneornil(L, 2) && !lua_istable(L, 2))
    return luaL_error(L, "bench: options must be a table, got %s", luaL_typename(L, 2));
  const int64_t warmup = volua_lua_opt_int(L, 2, "warmup", 3, "bench");
  const int64_t reps = volua_lua_opt_int(L, 2, "reps", 30, "bench");
  const int64_t flush_mb = volua_lua_opt_int(L, 2, "flush_mb", 256, "bench");
  char err[VOLUA_ERR_MAX];
  if (warmup < 0 || warmup > 100000 || reps < 1 || reps > 100000 || flush_mb < 0 || flush_mb > 65536) {
    snprintf(err, sizeof err,
             "bench: warmup must be in 0..100000, reps in 1..100000 and flush_mb in 0..65536; got warmup %lld, "
             "reps %lld, flush_mb %lld",
             (long long)warmup, (long long)reps, (long long)flush_mb);
    return volua_lua_raise(L, err);
  }
#ifndef VOLUA_CUDA
  return luaL_error(L, "bench: volua was built without CUDA");
#else
  if (!volua_cuda_available()) return luaL_error(L, "bench: no usable GPU (%s)", volua_cuda_unavailable_reason());
  /* Kept for the whole run: one timer, one flush buffer (grown on demand). */
  static volua_cuda_timer *timer = NULL;
  static void *flush = NULL;
  static int64_t flush_bytes = 0;
  if (!timer && volua_cuda_timer_create(&timer, err)) return volua_lua_raise(L, err);
  const int64_t bytes = flush_mb << 20;
  if (bytes > flush_bytes) {
    volua_cuda_free(flush);
    flush = NULL;
    flush_bytes = 0;
    if (volua_cuda_malloc(&flush, bytes, err)) return volua_lua_raise(L, err);
    flush_bytes = bytes;
  }

  for (int64_t i = 0; i < warmup; i++) {
    lua_pushvalue(L, 1);
    lua_call(L, 0, 0);
  }
  if (volua_cuda_sync(err)) return volua_lua_raise(L, err);

  float *ms = (float *)lua_newuserdata(L, (size_t)reps * 2 * sizeof(float)); /* freed by the GC */
  const int ms_idx = lua_gettop(L);
  for (int64_t r = 0; r < reps; r++) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    if (bytes > 0 && volua_cuda_flush(flush, bytes, (int)r, err)) return volua_lua_raise(L, err);
    if (volua_cuda_timer_start(timer, err)) return volua_lua_raise(L, err);
    lua_pushvalue(L, 1);
    lua_call(L, 0, 0);
    if (volua_cuda_timer_stop(timer, &ms[r], err)) return volua_lua_raise(L, err);
  }

  float *sorted = ms + reps;
  memcpy(sorted, ms, (size_t)reps * sizeof(float));
  qsort(sorted, (size_t)reps, sizeof(float), cmp_float);
  const double median = reps % 2 ? sorted[reps / 2] : 0.5 * ((double)sorted[reps / 2 - 1] + sorted[reps / 2]);
  lua_pushnumber(L, median);
  lua_createtable(L, (int)reps, 0);
  for (int64_t r = 0; r < reps; r++) {
    lua_pushnumber(L, ms[r]);
    lua_rawseti(L, -2, (int)(r + 1));
  }
  lua_remove(L, ms_idx);
  return 2;
#endif
}

/* vol.fast_calls() -> how many op calls a tensor-core fast path has served so far. */
static int l_fast_calls(lua_State *L) {
#ifdef VOLUA_CUDA
  lua_pushnumber(L, (lua_Number)volua_cuda_fast_calls());
#else
  lua_pushnumber(L, 0);
#endif
  return 1;
}

static const luaL_Reg functions[] = {{"bench", l_bench}, {"fast_calls", l_fast_calls}, {NULL, NULL}};

void volua_lua_open_bench(lua_State *L) {
  for (const luaL_Reg *r = functions; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
