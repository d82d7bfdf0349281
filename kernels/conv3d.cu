// conv3d.cu: direct 3D convolution with groups, stride, dilation, asymmetric padding and the four
// padding modes; one output element per thread, accumulated in double (src/cpu/conv3d.c is the reference).
#include <stdint.h>

#include "common.cuh"
#include "fast.h"

// -- kernel ----

// Threads of a warp share (n, co) and walk consecutive ow: the weight loads are broadcasts and
// the input loads are (for stride 1) coalesced.
template <bool TF32>
static __global__ void conv3d_direct_kernel(volua_conv3d_geom g, const float *__restrict__ x,
                                            const float *__restrict__ w, const float *__restrict__ b,
                                            float *__restrict__ y) {
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t total = g.N * g.C_out * OD * OH * OW;
  VOLUA_GRID_LOOP(i, total) {
    const volua_coord5<int64_t> o = volua_unflatten5<int64_t>(i, g.C_out, OD, OH, OW);
    double acc = volua_conv3d_point<TF32>(g, x, w, o.n, o.c, o.d, o.h, o.w);
    if (b) acc += (double)b[o.c];
    y[i] = (float)acc;
  }
}

// -- launcher ----

// math: "fp32" multiplies float32 operands exactly (double accumulation); "tf32" first rounds
// the operands to TF32, as a tensor core would.
static int launch_conv3d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y,
                         volua_math_mode math, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  const int64_t total = g->N * g->C_out * g->out[0] * g->out[1] * g->out[2];
  if (total <= 0) return 0;
  if (math == VOLUA_MATH_TF32)
    conv3d_direct_kernel<true><<<volua_grid_for(total, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(*g, x, w, b, y);
  else
    conv3d_direct_kernel<false><<<volua_grid_for(total, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(*g, x, w, b, y);
  CUDA_CHECK_LAUNCH();
  return 0;
}

// -- entry ----

extern "C" int volua_cuda_conv3d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                 float *y, volua_math_mode math, cudaStream_t s, char *err) {
  // the fast paths first (kernels/fast.h); they decline shapes they do not cover
  int fast = volua_cuda_conv3d_depthwise(g, x, w, b, y, math, s, err);
  if (fast != VOLUA_FAST_NOT_APPLICABLE) return fast;
  fast = volua_cuda_conv3d_tc(g, x, w, b, y, math, s, err);
  if (fast != VOLUA_FAST_NOT_APPLICABLE) return fast;
  return launch_conv3d(g, x, w, b, y, math, s, err);
}
