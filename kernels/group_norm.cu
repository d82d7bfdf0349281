// group_norm.cu: group_norm on x viewed as (N, C, S), as src/cpu/group_norm.c: per (sample, group)
// the mean and the biased variance in double, then y = (x - mean) / sqrt(var + eps) * weight + bias
// (in double, rounded once to float). 64-bit indices throughout (a group may hold more than 2^31
// values).
//
// Two passes over x, the least a normalisation can read (PyTorch's kernels make the same two):
// 1. gn_stats_kernel: each group in `bpg` chunks, a block a chunk. A thread loads 16 values at a time
//    (four float4s in flight), takes their mean and squared deviations in double (two-pass, in
//    registers), and folds them into its running (count, mean, M2) by Chan's parallel update; the
//    block folds its threads' states in a fixed order, gn_finish_kernel a group's chunks.
//    Stable where the mean is large against the spread, as the CPU's two passes are, and the same
//    result every run (the order depends only on the shape and the GPU's size).
// 2. gn_apply_kernel: a block a chunk of one (sample, channel) row, so that the row's mean, rstd,
//    weight and bias are one load each; float4s, four in flight a thread.
// (The first version read x three times, one float at a time, and divided a 64-bit index by S and
// by C for every value of the apply pass: bench/NOTES.md, thirty-fifth session.)
#include <math.h>
#include <stdint.h>

#include "common.cuh"

#define GN_THREADS 256
#define GN_MIN_CHUNK 4096 /* values a chunk at least (a group's for the statistics, a row's to apply) */

// -- (count, mean, M2) states: Chan, Golub and LeVeque's parallel update ----

struct gn_moments {
  double n, mean, m2; // m2: the sum of squared deviations from mean
};

// Folds (nb, mb, m2b) into a. nb > 0.
__device__ __forceinline__ void gn_fold(gn_moments &a, double nb, double mb, double m2b) {
  const double n = a.n + nb, d = mb - a.mean, r = nb / n;
  a.mean += d * r;
  a.m2 += m2b + d * d * a.n * r;
  a.n = n;
}

// K values from registers: their own mean and squared deviations (two passes in double), folded in.
template <int K> __device__ __forceinline__ void gn_fold_values(gn_moments &a, const float (&v)[K]) {
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
  gn_fold(a, (double)K, mb, q);
}

__device__ __forceinline__ gn_moments gn_shfl_down(const gn_moments &a, int o) {
  return {__shfl_down_sync(0xffffffffu, a.n, o), __shfl_down_sync(0xffffffffu, a.mean, o),
          __shfl_down_sync(0xffffffffu, a.m2, o)};
}

// The block's states folded (a fixed tree in each warp, then the warps in order); valid in thread 0.
// scratch holds 32 states. Ends with a barrier, so scratch may be reused at once.
__device__ __forceinline__ gn_moments gn_block_fold(gn_moments a, gn_moments *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const gn_moments b = gn_shfl_down(a, o);
    if (b.n > 0) gn_fold(a, b.n, b.mean, b.m2);
  }
  if (lane == 0) scratch[warp] = a;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < nwarps; w++)
      if (scratch[w].n > 0) gn_fold(a, scratch[w].n, scratch[w].mean, scratch[w].m2);
  __syncthreads();
  return a;
}

// Values a thread folds one by one before the first 16-byte boundary of p (at most 3, at most len).
__device__ __forceinline__ int64_t gn_head(const float *p, int64_t len) {
  const int64_t h = (int64_t)((16 - ((uintptr_t)p & 15)) & 15) / 4;
  return h < len ? h : len;
}

// -- kernels ----

// Task t = group * bpg + k: values [k * chunk, (k + 1) * chunk) of the group (the last shorter),
// its state to part[t].
static __global__ void __launch_bounds__(GN_THREADS, 4)
    gn_stats_kernel(const float *__restrict__ x, int64_t M, int64_t tasks, int64_t bpg, int64_t chunk,
                    gn_moments *__restrict__ part) {
  __shared__ gn_moments scratch[32];
  const int64_t bd = blockDim.x;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t grp = task / bpg, lo = (task - grp * bpg) * chunk;
    const int64_t len = lo + chunk < M ? chunk : M - lo;
    const float *p = x + grp * M + lo;
    gn_moments a = {0.0, 0.0, 0.0};
    const int64_t head = gn_head(p, len);
    if (threadIdx.x < head) gn_fold(a, 1.0, (double)p[threadIdx.x], 0.0);
    const float4 *p4 = reinterpret_cast<const float4 *>(p + head);
    const int64_t n4 = (len - head) / 4;
    int64_t t = threadIdx.x;
    for (; t + 3 * bd < n4; t += 4 * bd) {
      float4 u[4];
#pragma unroll
      for (int k = 0; k < 4; k++) u[k] = p4[t + k * bd];
      const float v[16] = {u[0].x, u[0].y, u[0].z, u[0].w, u[1].x, u[1].y, u[1].z, u[1].w,
                           u[2].x, u[2].y, u[2].z, u[2].w, u[3].x, u[3].y, u[3].z, u[3].w};
      gn_fold_values<16>(a, v);
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
          gn_fold_values<4>(a, v);
        }
    }
    for (int64_t e = head + 4 * n4 + threadIdx.x; e < len; e += bd) gn_fold(a, 1.0, (double)p[e], 0.0);
    a = gn_block_fold(a, scratch);
    if (threadIdx.x == 0) part[task] = a;
  }
}

// Block per group: its bpg chunk states folded (threads strided over them, then the block), then
// mean and 1 / sqrt(var + eps) as the CPU computes them.
static __global__ void gn_finish_kernel(int64_t count, int64_t bpg, double eps, const gn_moments *__restrict__ part,
                                        double *__restrict__ mean, double *__restrict__ rstd) {
  __shared__ gn_moments scratch[32];
  for (int64_t grp = blockIdx.x; grp < count; grp += gridDim.x) {
    gn_moments a = {0.0, 0.0, 0.0};
    for (int64_t k = threadIdx.x; k < bpg; k += blockDim.x) {
      const gn_moments b = part[grp * bpg + k];
      if (b.n > 0) gn_fold(a, b.n, b.mean, b.m2);
    }
    a = gn_block_fold(a, scratch);
    if (threadIdx.x == 0) {
      mean[grp] = a.mean;
      rstd[grp] = 1.0 / sqrt(a.m2 / a.n + eps);
    }
  }
}

// y for one value: the CPU's expression, in double.
__device__ __forceinline__ float gn_apply(float v, double mean, double rstd, double scale, double shift) {
  return (float)(((double)v - mean) * rstd * scale + shift);
}

// Task t = row * cpr + k (row = n * C + c): values [k * chunk, (k + 1) * chunk) of the row.
static __global__ void gn_apply_kernel(volua_group_norm_geom g, int64_t cpr, int64_t chunk, const float *__restrict__ x,
                                       const double *__restrict__ mean, const double *__restrict__ rstd,
                                       const float *__restrict__ w, const float *__restrict__ b,
                                       float *__restrict__ y) {
  const int64_t bd = blockDim.x, cpg = g.C / g.groups, tasks = g.N * g.C * cpr;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t row = task / cpr, lo = (task - row * cpr) * chunk;
    const int64_t n = row / g.C, c = row - n * g.C, grp = n * g.groups + c / cpg;
    const double m = mean[grp], r = rstd[grp], sc = w ? (double)w[c] : 1.0, sh = b ? (double)b[c] : 0.0;
    const int64_t len = lo + chunk < g.S ? chunk : g.S - lo;
    const float *xp = x + row * g.S + lo;
    float *yp = y + row * g.S + lo;
    if (((uintptr_t)xp & 15) != ((uintptr_t)yp & 15)) { // x and y apart by other than 16-byte steps
      for (int64_t e = threadIdx.x; e < len; e += bd) yp[e] = gn_apply(xp[e], m, r, sc, sh);
      continue;
    }
    const int64_t head = gn_head(xp, len);
    if (threadIdx.x < head) yp[threadIdx.x] = gn_apply(xp[threadIdx.x], m, r, sc, sh);
    const float4 *x4 = reinterpret_cast<const float4 *>(xp + head);
    float4 *y4 = reinterpret_cast<float4 *>(yp + head);
    const int64_t n4 = (len - head) / 4;
    int64_t t = threadIdx.x;
    for (; t + 3 * bd < n4; t += 4 * bd) {
      float4 u[4];
#pragma unroll
      for (int k = 0; k < 4; k++) u[k] = x4[t + k * bd];
#pragma unroll
      for (int k = 0; k < 4; k++)
        y4[t + k * bd] = make_float4(gn_apply(u[k].x, m, r, sc, sh), gn_apply(u[k].y, m, r, sc, sh),
                                     gn_apply(u[k].z, m, r, sc, sh), gn_apply(u[k].w, m, r, sc, sh));
    }
    if (t < n4) { // the last, partial group of four
      float4 u[4];
#pragma unroll
      for (int k = 0; k < 4; k++)
        if (t + k * bd < n4) u[k] = x4[t + k * bd];
#pragma unroll
      for (int k = 0; k < 4; k++)
        if (t + k * bd < n4)
          y4[t + k * bd] = make_float4(gn_apply(u[k].x, m, r, sc, sh), gn_apply(u[k].y, m, r, sc, sh),
                                       gn_apply(u[k].z, m, r, sc, sh), gn_apply(u[k].w, m, r, sc, sh));
    }
    for (int64_t e = head + 4 * n4 + threadIdx.x; e < len; e += bd) yp[e] = gn_apply(xp[e], m, r, sc, sh);
  }
}

// -- launcher ----

static int64_t gn_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int launch_group_norm(const volua_group_norm_geom *g, const float *x, const float *w, const float *b, float *y,
                             cudaStream_t s, char *err) {
  const char *op = "group_norm";
  const int64_t M = (g->C / g->groups) * g->S, count = g->N * g->groups;
  if (count <= 0 || M <= 0) return 0;
  static int64_t stats_resident = 0, apply_resident = 0;
  if (!stats_resident) stats_resident = volua_resident_blocks(gn_stats_kernel, GN_THREADS);
  if (!apply_resident) apply_resident = volua_resident_blocks(gn_apply_kernel, GN_THREADS);

  // stats: each group in bpg chunks of at least GN_MIN_CHUNK values, a multiple of 4 (so that the chunks
  // keep x's alignment), in whole waves of blocks where that allows
  int64_t bpg = volua_chunks_per_item(count, M, GN_MIN_CHUNK, stats_resident);
  const int64_t chunk = gn_cdiv(gn_cdiv(M, bpg), 4) * 4;
  bpg = gn_cdiv(M, chunk);
  const int64_t tasks = count * bpg;

  // apply: each row in cpr chunks, the same way
  const int64_t rows = g->N * g->C;
  int64_t cpr = volua_chunks_per_item(rows, g->S, GN_MIN_CHUNK, apply_resident);
  const int64_t achunk = gn_cdiv(gn_cdiv(g->S, cpr), 4) * 4;
  cpr = gn_cdiv(g->S, achunk);
  const int64_t atasks = rows * cpr;

  void *scratch = NULL;
  const int64_t bytes = tasks * (int64_t)sizeof(gn_moments) + 2 * count * (int64_t)sizeof(double);
  if (volua_cuda_malloc(&scratch, bytes, err)) return 1;
  gn_moments *part = (gn_moments *)scratch;
  double *mean = (double *)(part + tasks), *rstd = mean + count;
  const unsigned sgrid = (unsigned)(tasks < stats_resident ? tasks : stats_resident);
  const unsigned fgrid = (unsigned)(count < 65535 ? count : 65535);
  const unsigned agrid = (unsigned)(atasks < apply_resident ? atasks : apply_resident);
  gn_stats_kernel<<<sgrid, GN_THREADS, 0, s>>>(x, M, tasks, bpg, chunk, part);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    gn_finish_kernel<<<fgrid, GN_THREADS, 0, s>>>(count, bpg, g->eps, part, mean, rstd);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    gn_apply_kernel<<<agrid, GN_THREADS, 0, s>>>(*g, cpr, achunk, x, mean, rstd, w, b, y);
    e = cudaGetLastError();
  }
  volua_cuda_free(scratch); // (stream-ordered: the caching allocator reuses it only after these kernels)
  if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
  return 0;
}

// -- entry ----

extern "C" int volua_cuda_group_norm(const volua_group_norm_geom *g, const float *x, const float *w, const float *b,
                                     float *y, cudaStream_t s, char *err) {
  return launch_group_norm(g, x, w, b, y, s, err);
}
