// pointwise.cu: vol.pointwise's pass (a chain of elementwise steps over float32 values, each value
// read and written once), and the convolutions' epilogue hand-over: what the op offers, what the
// tensor-core kernels take into their stores (tc_core.cuh, tc_epi_apply), and the rest as this pass.
// Each step computes what its op alone computes on the GPU (pointwise.cuh, elementwise_rules.cuh).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "fast.h"
#include "pointwise.cuh"

// -- the epilogue offered by the op for the convolution call in progress ----

static const volua_pw_chain *offered = NULL;
static int taken = 0;

extern "C" void volua_cuda_epilogue_offer(const volua_pw_chain *c) {
  offered = c && c->n > 0 ? c : NULL;
  taken = 0;
}

extern "C" int volua_cuda_epilogue_end(void) {
  const int n = taken;
  offered = NULL;
  taken = 0;
  return n;
}

// VOLUA_TC_EPI=0 (for measuring): the kernels take no step; the pass applies the whole chain.
static bool take_on(void) {
  static const int on = [] {
    const char *v = getenv("VOLUA_TC_EPI");
    return !(v && strcmp(v, "0") == 0);
  }();
  return on;
}

extern "C" int volua_cuda_epilogue_take(volua_pw_chain *dst, int64_t C, int64_t S) {
  memset(dst, 0, sizeof *dst);
  if (!offered || !take_on()) return 0;
  int n = pw_take_prefix(offered, dst, C, S);
  // every launch of the call must take the same steps (the op applies the rest once, after)
  if (taken && n != taken) n = 0;
  dst->n = n;
  if (n) taken = n;
  return n;
}

extern "C" int volua_cuda_epilogue_taken(void) { return taken; }

extern "C" int volua_cuda_epilogue_redo(int64_t n, float *y, const int *flag, int stamp, cudaStream_t s, char *err) {
  if (!taken || !offered) return 0;
  return volua_cuda_pointwise(offered, 0, taken, n, y, y, flag, stamp, s, err);
}

// -- the pass ----

// Steps [first, last) of c on value v, element i.
__device__ __forceinline__ float pw_chain(const volua_pw_chain &c, int first, int last, float v, int64_t i) {
  for (int k = first; k < last; k++) {
    const volua_pw_step &s = c.step[k];
    float o = 0.0f;
    if (s.kind == VOLUA_PW_CHANNEL) o = __ldg(s.vec + (i / s.S) % s.C * s.vstep);
    v = pw_step(s, v, o);
  }
  return v;
}

// Four values a thread where x and y are 16-byte aligned (as elementwise.cu's maps), the tail one
// at a time. gate: as fast.h says.
static __global__ void pointwise_kernel(volua_pw_chain c, int first, int last, int64_t n, int vec,
                                        const float *__restrict__ x, float *__restrict__ y, const int *gate,
                                        int stamp) {
  if (gate && *gate != stamp) return;
  const int64_t n4 = vec ? n / 4 : 0;
  VOLUA_GRID_LOOP(q, n4) {
    const float4 v = reinterpret_cast<const float4 *>(x)[q];
    const int64_t i = 4 * q;
    reinterpret_cast<float4 *>(y)[q] = make_float4(pw_chain(c, first, last, v.x, i), pw_chain(c, first, last, v.y, i + 1),
                                                   pw_chain(c, first, last, v.z, i + 2),
                                                   pw_chain(c, first, last, v.w, i + 3));
  }
  VOLUA_GRID_LOOP(j, n - 4 * n4) y[4 * n4 + j] = pw_chain(c, first, last, x[4 * n4 + j], 4 * n4 + j);
}

extern "C" int volua_cuda_pointwise(const volua_pw_chain *c, int first, int last, int64_t n, const float *x,
                                    float *y, const int *gate, int stamp, cudaStream_t s, char *err) {
  const char *op = "pointwise";
  if (n <= 0 || (first >= last && x == y)) return 0;
  const int vec = ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0;
  unsigned grid = volua_grid_for(vec ? (n + 3) / 4 : n, VOLUA_THREADS);
  if (gate) { // (a few blocks an SM: most launches find the gate closed)
    int sms = 0;
    CUDA_CHECK(volua_sm_count(&sms));
    if ((int64_t)grid > 2 * (int64_t)sms) grid = (unsigned)(2 * sms);
  }
  pointwise_kernel<<<grid, VOLUA_THREADS, 0, s>>>(*c, first, last, n, vec, x, y, gate, stamp);
  CUDA_CHECK_LAUNCH();
  return 0;
}
