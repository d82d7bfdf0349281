// norm_moments.cuh: what the normalisation kernels share (group_norm.cu, batch_norm.cu,
// instance_norm.cu, layer_norm.cu): (count, mean, M2) states folded by Chan's parallel update, in
// double, over a block's walk of a contiguous run (float4s, four in flight a thread), and the
// normalisation of a run, y = (x - mean) * rstd * scale + shift, in double, rounded once.
#ifndef VOLUA_KERNELS_NORM_MOMENTS_CUH
#define VOLUA_KERNELS_NORM_MOMENTS_CUH

#include <stdint.h>

#include "common.cuh"

// -- (count, mean, M2) states: Chan, Golub and LeVeque's parallel update ----

struct volua_moments {
  double n, mean, m2; // m2: the sum of squared deviations from mean
};

// Folds (nb, mb, m2b) into a. nb > 0.
__device__ __forceinline__ void volua_moments_fold(volua_moments &a, double nb, double mb, double m2b) {
  const double n = a.n + nb, d = mb - a.mean, r = nb / n;
  a.mean += d * r;
  a.m2 += m2b + d * d * a.n * r;
  a.n = n;
}

// K values from registers: their own mean and squared deviations (two passes in double), folded in.
template <int K> __device__ __forceinline__ void volua_moments_fold_values(volua_moments &a, const float (&v)[K]) {
  double s = 0.0;
#pragma unroll
  for (int k = 0; k < K; k++) s += (double)v[k];
  const double mb = s * (1.0 / K); // K a power of two: exact
  double q = 0.0;
#pragma unroll
  for (int k = 0; k < K; k++) {
    const double d = (double)v[k] - mb;
    q += d * d;
  }
  volua_moments_fold(a, (double)K, mb, q);
}

__device__ __forceinline__ volua_moments volua_moments_shfl_down(const volua_moments &a, int o) {
  return {__shfl_down_sync(0xffffffffu, a.n, o), __shfl_down_sync(0xffffffffu, a.mean, o),
          __shfl_down_sync(0xffffffffu, a.m2, o)};
}

// The block's states folded (a fixed tree in each warp, then the warps in order); valid in thread 0.
// scratch holds 32 states. Ends with a barrier, so scratch may be reused at once.
__device__ __forceinline__ volua_moments volua_moments_block_fold(volua_moments a, volua_moments *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const volua_moments b = volua_moments_shfl_down(a, o);
    if (b.n > 0) volua_moments_fold(a, b.n, b.mean, b.m2);
  }
  if (lane == 0) scratch[warp] = a;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < nwarps; w++)
      if (scratch[w].n > 0) volua_moments_fold(a, scratch[w].n, scratch[w].mean, scratch[w].m2);
  __syncthreads();
  return a;
}

// 1 / sqrt(var + eps) of folded moments (the biased variance), as the CPU references compute it.
__device__ __forceinline__ double volua_moments_rstd(const volua_moments &a, double eps) { return 1.0 / sqrt(a.m2 / a.n + eps); }

// This thread's moments of the run p[0, len) (a chunk of one group, channel or row), before the
// block's fold.
__device__ __forceinline__ volua_moments volua_run_moments(const float *__restrict__ p, int64_t len) {
  const int64_t bd = blockDim.x;
  volua_moments a = {0.0, 0.0, 0.0};
  const int64_t head = volua_head16(p, len);
  if (threadIdx.x < head) volua_moments_fold(a, 1.0, (double)p[threadIdx.x], 0.0);
  const float4 *p4 = reinterpret_cast<const float4 *>(p + head);
  const int64_t n4 = (len - head) / 4;
  int64_t t = threadIdx.x;
  for (; t + 3 * bd < n4; t += 4 * bd) {
    float4 u[4];
#pragma unroll
    for (int k = 0; k < 4; k++) u[k] = p4[t + k * bd];
    const float v[16] = {u[0].x, u[0].y, u[0].z, u[0].w, u[1].x, u[1].y, u[1].z, u[1].w,
                         u[2].x, u[2].y, u[2].z, u[2].w, u[3].x, u[3].y, u[3].z, u[3].w};
    volua_moments_fold_values<16>(a, v);
  }
  if (t < n4) { // the last, partial group of four: its loads first, all in flight
    float4 u[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (t + k * bd < n4) u[k] = p4[t + k * bd];
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (t + k * bd < n4) {
        const float v[4] = {u[k].x, u[k].y, u[k].z, u[k].w};
        volua_moments_fold_values<4>(a, v);
      }
  }
  for (int64_t e = head + 4 * n4 + threadIdx.x; e < len; e += bd) volua_moments_fold(a, 1.0, (double)p[e], 0.0);
  return a;
}

// y for one value: the CPU's expression, in double.
__device__ __forceinline__ float volua_norm_apply(float v, double mean, double rstd, double scale, double shift) {
  return (float)(((double)v - mean) * rstd * scale + shift);
}

// y = volua_norm_apply(x) over the run [0, len) of one channel, by the block: float4s from the first 16-byte
// boundary, four in flight a thread. LAST: x's last read (evict-first loads) and streaming stores,
// so that L2 keeps what the fused kernel still has to read again.
template <bool LAST>
__device__ __forceinline__ void volua_norm_apply_run(const float *__restrict__ xp, float *__restrict__ yp, int64_t len,
                                             double m, double r, double sc, double sh) {
  const int64_t bd = blockDim.x;
  if (((uintptr_t)xp & 15) != ((uintptr_t)yp & 15)) { // x and y apart by other than 16-byte steps
    for (int64_t e = threadIdx.x; e < len; e += bd) yp[e] = volua_norm_apply(xp[e], m, r, sc, sh);
    return;
  }
  const int64_t head = volua_head16(xp, len);
  if (threadIdx.x < head) yp[threadIdx.x] = volua_norm_apply(xp[threadIdx.x], m, r, sc, sh);
  const float4 *x4 = reinterpret_cast<const float4 *>(xp + head);
  float4 *y4 = reinterpret_cast<float4 *>(yp + head);
  const int64_t n4 = (len - head) / 4;
  for (int64_t t = threadIdx.x; t < n4; t += 4 * bd) {
    float4 u[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (t + k * bd < n4) u[k] = LAST ? __ldcs(x4 + t + k * bd) : x4[t + k * bd];
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (t + k * bd < n4) {
        const float4 v = make_float4(volua_norm_apply(u[k].x, m, r, sc, sh), volua_norm_apply(u[k].y, m, r, sc, sh),
                                     volua_norm_apply(u[k].z, m, r, sc, sh), volua_norm_apply(u[k].w, m, r, sc, sh));
        if (LAST)
          __stcs(y4 + t + k * bd, v);
        else
          y4[t + k * bd] = v;
      }
  }
  for (int64_t e = head + 4 * n4 + threadIdx.x; e < len; e += bd) yp[e] = volua_norm_apply(xp[e], m, r, sc, sh);
}

// -- statistics over N runs of S values a channel (x viewed as (N, C, S)) ----
// batch_norm.cu's channels; instance_norm's and layer_norm's rows are the same with N = 1 and C the
// number of rows. A channel's N * S values, taken as the concatenation of its runs, are cut into
// cpc chunks of `chunk` values: task t = c * cpc + k, a block a task, its folded moments to part[t].
// Runs of at least VOLUA_NORM_RUN_MIN values are walked block-wide (volua_run_moments: float4s);
// shorter ones value by value, the block's threads striding over the chunk (a division a value).

#define VOLUA_NORM_THREADS 256
#define VOLUA_NORM_RUN_MIN 256
#define VOLUA_NORM_MIN_CHUNK 4096 /* values a chunk at least */

static __global__ void __launch_bounds__(VOLUA_NORM_THREADS)
    volua_channel_stats_kernel(int64_t N, int64_t C, int64_t S, int64_t cpc, int64_t chunk, const float *__restrict__ x,
                               volua_moments *__restrict__ part) {
  __shared__ volua_moments scratch[32];
  const int64_t M = N * S, tasks = C * cpc;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t c = task / cpc, lo = (task - c * cpc) * chunk, hi = lo + chunk < M ? lo + chunk : M;
    volua_moments a = {0.0, 0.0, 0.0};
    if (S >= VOLUA_NORM_RUN_MIN) {
      for (int64_t n = lo / S; n * S < hi; n++) { // the runs the chunk meets, each cut to it
        const int64_t a0 = n * S > lo ? n * S : lo, a1 = (n + 1) * S < hi ? (n + 1) * S : hi;
        const volua_moments b = volua_run_moments(x + (n * C + c) * S + (a0 - n * S), a1 - a0);
        if (b.n > 0) volua_moments_fold(a, b.n, b.mean, b.m2);
      }
    } else {
      for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        const int64_t n = j / S;
        volua_moments_fold(a, 1.0, (double)x[(n * C + c) * S + (j - n * S)], 0.0);
      }
    }
    a = volua_moments_block_fold(a, scratch);
    if (threadIdx.x == 0) part[task] = a;
  }
}

// Block per channel: its cpc chunk states folded in a fixed order (threads strided over them, then
// the block's fold), then mean[c] and rstd[c] = 1 / sqrt(biased var + eps); where running_mean /
// running_var are given, running = momentum * batch + (1 - momentum) * running, the variance
// unbiased (m2 / (n - 1)), as src/cpu/batch_norm.c.
static __global__ void volua_channel_finish_kernel(int64_t C, int64_t cpc, double eps, double momentum,
                                                   const volua_moments *__restrict__ part, double *__restrict__ mean,
                                                   double *__restrict__ rstd, float *running_mean, float *running_var) {
  __shared__ volua_moments scratch[32];
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    volua_moments a = {0.0, 0.0, 0.0};
    for (int64_t k = threadIdx.x; k < cpc; k += blockDim.x) {
      const volua_moments b = part[c * cpc + k];
      if (b.n > 0) volua_moments_fold(a, b.n, b.mean, b.m2);
    }
    a = volua_moments_block_fold(a, scratch);
    if (threadIdx.x == 0) {
      mean[c] = a.mean;
      rstd[c] = volua_moments_rstd(a, eps);
      if (running_mean) running_mean[c] = (float)(momentum * a.mean + (1.0 - momentum) * (double)running_mean[c]);
      if (running_var)
        running_var[c] = (float)(momentum * (a.m2 / (a.n - 1.0)) + (1.0 - momentum) * (double)running_var[c]);
    }
  }
}

// Chunks a channel (of M values) for the statistics: at least VOLUA_NORM_MIN_CHUNK values, a
// multiple of 4, in whole waves of the resident blocks where that allows. *cpc and *chunk.
static inline void volua_channel_stats_plan(int64_t C, int64_t M, int64_t resident, int64_t *cpc, int64_t *chunk) {
  int64_t k = volua_chunks_per_item(C, M, VOLUA_NORM_MIN_CHUNK, resident);
  int64_t ch = (M + k - 1) / k;
  ch = (ch + 3) / 4 * 4;
  *chunk = ch;
  *cpc = (M + ch - 1) / ch;
}

#endif
