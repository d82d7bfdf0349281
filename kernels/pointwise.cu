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

extern "C" int volua_cuda_epilogue_redo(int64_t n, float *y, const int *flag, int stamp, cudaStream_t s, char *err) {
  if (!taken || !offered) return 0;
  return volua_cuda_pointwise(offered, 0, taken, n, y, y, flag, stamp, s, err);
}

// -- the pass ----

// Values a thread: PW_UNROLL float4s a block apart, all loaded before any is computed (as
// elementwise.cu's maps: enough bytes in flight), then each step applied to all of them, so that a
// step's kind and op are read and dispatched once per 4 PW_UNROLL values, not per value.
#define PW_UNROLL 4
#define PW_N (4 * PW_UNROLL)

// v[j] = step s of v[j] for the N values; o[j]: a channel step's operand for value j. One loop per
// rule, so that the dispatch is outside the values.
template <int N> __device__ __forceinline__ void pw_apply(const volua_pw_step &s, float (&v)[N], const float (&o)[N]) {
#define PW_EACH(expr)                                                                                                  \
  do {                                                                                                                 \
    _Pragma("unroll") for (int j = 0; j < N; j++) {                                                                   \
      const float x = v[j];                                                                                            \
      (void)x;                                                                                                         \
      v[j] = (expr);                                                                                                   \
    }                                                                                                                  \
    return;                                                                                                            \
  } while (0)
  if (s.kind == VOLUA_PW_CHANNEL) {
    switch (s.op) {
    case VOLUA_BIN_ADD: PW_EACH(bin_f32(x, o[j], VOLUA_BIN_ADD));
    case VOLUA_BIN_SUB: PW_EACH(bin_f32(x, o[j], VOLUA_BIN_SUB));
    case VOLUA_BIN_MUL: PW_EACH(bin_f32(x, o[j], VOLUA_BIN_MUL));
    case VOLUA_BIN_MAXIMUM: PW_EACH(max_nan(x, o[j]));
    case VOLUA_BIN_MINIMUM: PW_EACH(min_nan(x, o[j]));
    default: PW_EACH(bin_f32(x, o[j], VOLUA_BIN_DIV));
    }
  }
  if (s.kind == VOLUA_PW_SCALAR) {
    const scalar_f32_rule r{s.f0, s.op, s.scalar_first};
    switch (s.op) {
    case VOLUA_BIN_ADD: PW_EACH(x + s.f0);
    case VOLUA_BIN_MUL: PW_EACH(x * s.f0);
    default: PW_EACH(r(x));
    }
  }
  if (s.kind == VOLUA_PW_FILL) PW_EACH(s.f0);
  switch (s.op) {
  case VOLUA_UN_RELU: PW_EACH(unary_f32_rule{VOLUA_UN_RELU}(x));
  case VOLUA_UN_NEG: PW_EACH(-x);
  case VOLUA_UN_ABS: PW_EACH(fabsf(x));
  case VOLUA_UN_CLAMP: PW_EACH((clamp_rule{s.f0, s.f1}(x)));
  case VOLUA_UN_LEAKY_RELU: PW_EACH(leaky_relu_rule{s.f0}(x));
  case VOLUA_UN_TANH: PW_EACH(tanh_rule{}(x));
  case VOLUA_UN_SIGMOID: PW_EACH(sigmoid_rule{}(x));
  case VOLUA_UN_EXP: PW_EACH(exp_rule{}(x));
  case VOLUA_UN_LOG: PW_EACH(log_rule{}(x));
  case VOLUA_UN_SQRT: PW_EACH(sqrt_rule{}(x));
  case VOLUA_UN_GELU: PW_EACH(gelu_rule{}(x));
  case VOLUA_UN_GELU_TANH: PW_EACH(gelu_tanh_rule{}(x));
  case VOLUA_UN_SILU: PW_EACH(silu_rule{}(x));
  case VOLUA_UN_MISH: PW_EACH(mish_rule{}(x));
  case VOLUA_UN_SOFTPLUS: PW_EACH((softplus_rule{s.p0, s.p1, s.f0}(x)));
  case VOLUA_UN_ELU: PW_EACH(elu_rule{s.f0}(x));
  case VOLUA_UN_HARDSWISH: PW_EACH(hardswish_rule{}(x));
  default: PW_EACH(hardsigmoid_rule{}(x));
  }
#undef PW_EACH
}

// Steps [first, last) of c on the n values x into y; gate: as fast.h says. The float4 part where x
// and y are 16-byte aligned (vec), the tail one value a thread. A channel step's operand index:
// (i / S) % C, once per float4 where S is a multiple of 4 (then its values share a channel), in 32
// bits where n < 2^31.
static __global__ void pointwise_kernel(volua_pw_chain c, int first, int last, int64_t n, int vec,
                                        const float *__restrict__ x, float *__restrict__ y, const int *gate,
                                        int stamp) {
  if (gate && *gate != stamp) return;
  const int64_t n4 = vec ? n / 4 : 0, tile = (int64_t)blockDim.x * PW_UNROLL;
  const bool small = n < ((int64_t)1 << 31);
  for (int64_t q0 = (int64_t)blockIdx.x * tile + threadIdx.x; q0 < n4; q0 += (int64_t)gridDim.x * tile) {
    float v[PW_N], o[PW_N];
#pragma unroll
    for (int u = 0; u < PW_UNROLL; u++) {
      const int64_t q = q0 + (int64_t)u * blockDim.x;
      float4 f = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (q < n4) f = reinterpret_cast<const float4 *>(x)[q];
      v[4 * u] = f.x, v[4 * u + 1] = f.y, v[4 * u + 2] = f.z, v[4 * u + 3] = f.w;
    }
    for (int k = first; k < last; k++) {
      const volua_pw_step &s = c.step[k];
      if (s.kind == VOLUA_PW_CHANNEL) {
#pragma unroll
        for (int u = 0; u < PW_UNROLL; u++) {
          const int64_t q = q0 + (int64_t)u * blockDim.x;
          if (q >= n4) continue;
          if (s.vstep == 0) {
#pragma unroll
            for (int e = 0; e < 4; e++) o[4 * u + e] = __ldg(s.vec);
          } else if (s.S % 4 == 0) {
            const int64_t ch = small ? (int64_t)((uint32_t)(4 * q) / (uint32_t)s.S % (uint32_t)s.C) : 4 * q / s.S % s.C;
            const float ov = __ldg(s.vec + ch);
#pragma unroll
            for (int e = 0; e < 4; e++) o[4 * u + e] = ov;
          } else {
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const int64_t i = 4 * q + e;
              const int64_t ch = small ? (int64_t)((uint32_t)i / (uint32_t)s.S % (uint32_t)s.C) : i / s.S % s.C;
              o[4 * u + e] = __ldg(s.vec + ch);
            }
          }
        }
      }
      pw_apply(s, v, o);
    }
#pragma unroll
    for (int u = 0; u < PW_UNROLL; u++) {
      const int64_t q = q0 + (int64_t)u * blockDim.x;
      if (q < n4) reinterpret_cast<float4 *>(y)[q] = make_float4(v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3]);
    }
  }
  VOLUA_GRID_LOOP(j, n - 4 * n4) {
    const int64_t i = 4 * n4 + j;
    float v = x[i];
    for (int k = first; k < last; k++) {
      const volua_pw_step &s = c.step[k];
      const float o = s.kind == VOLUA_PW_CHANNEL ? __ldg(s.vec + i / s.S % s.C * s.vstep) : 0.0f;
      v = pw_step(s, v, o);
    }
    y[i] = v;
  }
}

extern "C" int volua_cuda_pointwise(const volua_pw_chain *c, int first, int last, int64_t n, const float *x,
                                    float *y, const int *gate, int stamp, cudaStream_t s, char *err) {
  const char *op = "pointwise";
  if (n <= 0 || (first >= last && x == y)) return 0;
  const int vec = ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0;
  unsigned grid = vec ? volua_grid_for((n + 3) / 4, VOLUA_THREADS * PW_UNROLL) : volua_grid_for(n, VOLUA_THREADS);
  if (gate) { // (a few blocks an SM: most launches find the gate closed)
    int sms = 0;
    CUDA_CHECK(volua_sm_count(&sms));
    if ((int64_t)grid > 2 * (int64_t)sms) grid = (unsigned)(2 * sms);
  }
  pointwise_kernel<<<grid, VOLUA_THREADS, 0, s>>>(*c, first, last, n, vec, x, y, gate, stamp);
  CUDA_CHECK_LAUNCH();
  return 0;
}
