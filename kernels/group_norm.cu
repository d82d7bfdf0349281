// group_norm.cu: group_norm on x viewed as (N, C, S): per (sample, group) a two-pass mean and
// biased variance in double, then y = (x - mean) / sqrt(var + eps) * weight + bias, as
// src/cpu/group_norm.c. 64-bit indices throughout (a group may hold more than 2^31 values).
#include <math.h>
#include <stdint.h>

#include "common.cuh"

// y for one value, written once for both variants (the CPU's expression, in double).
__device__ __forceinline__ float gn_apply(float v, double mean, double rstd, const float *w, const float *b,
                                          int64_t c) {
  const double scale = w ? (double)w[c] : 1.0, shift = b ? (double)b[c] : 0.0;
  return (float)(((double)v - mean) * rstd * scale + shift);
}

// -- variant 1: one block per group (many groups, or small ones): no scratch ----

// Group i = n * groups + k is the contiguous run x[i * M, (i + 1) * M) with M = (C / groups) * S.
static __global__ void group_norm_block_kernel(volua_group_norm_geom g, const float *__restrict__ x,
                                               const float *__restrict__ w, const float *__restrict__ b,
                                               float *__restrict__ y) {
  __shared__ double scratch[32];
  __shared__ double stats[2];
  const int64_t cpg = g.C / g.groups, M = cpg * g.S, count = g.N * g.groups;
  for (int64_t grp = blockIdx.x; grp < count; grp += gridDim.x) {
    const float *xg = x + grp * M;
    float *yg = y + grp * M;
    double s = 0.0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) s += (double)xg[j];
    s = volua_block_sum(s, scratch);
    if (threadIdx.x == 0) stats[0] = s / (double)M;
    __syncthreads();
    const double mean = stats[0];
    double q = 0.0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const double d = (double)xg[j] - mean;
      q += d * d;
    }
    q = volua_block_sum(q, scratch);
    if (threadIdx.x == 0) stats[1] = 1.0 / sqrt(q / (double)M + g.eps);
    __syncthreads();
    const double rstd = stats[1];
    const int64_t c0 = (grp % g.groups) * cpg;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) yg[j] = gn_apply(xg[j], mean, rstd, w, b, c0 + j / g.S);
    __syncthreads(); // stats is rewritten by the next group
  }
}

// -- variant 2: few large groups, each split over `bpg` blocks ----

// PASS 0 sums x, PASS 1 sums (x - mean)^2; task = group * bpg + chunk writes partial[task].
template <int PASS>
static __global__ void group_norm_partial_kernel(const float *__restrict__ x, int64_t M, int64_t count, int64_t bpg,
                                                 int64_t chunk, const double *__restrict__ mean,
                                                 double *__restrict__ partial) {
  __shared__ double scratch[32];
  for (int64_t task = blockIdx.x; task < count * bpg; task += gridDim.x) {
    const int64_t grp = task / bpg, lo = (task % bpg) * chunk;
    const int64_t hi = lo + chunk < M ? lo + chunk : M;
    const float *xg = x + grp * M;
    const double m = PASS ? mean[grp] : 0.0;
    double s = 0.0;
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
      const double d = (double)xg[j] - m;
      s += PASS ? d * d : d;
    }
    s = volua_block_sum(s, scratch);
    if (threadIdx.x == 0) partial[task] = s;
  }
}

// One thread per group: PASS 0 writes the mean, PASS 1 the reciprocal standard deviation.
template <int PASS>
static __global__ void group_norm_finish_kernel(int64_t M, int64_t count, int64_t bpg, double eps,
                                                const double *__restrict__ partial, double *__restrict__ out) {
  VOLUA_GRID_LOOP(grp, count) {
    double s = 0.0;
    for (int64_t k = 0; k < bpg; k++) s += partial[grp * bpg + k];
    out[grp] = PASS ? 1.0 / sqrt(s / (double)M + eps) : s / (double)M;
  }
}

static __global__ void group_norm_apply_kernel(volua_group_norm_geom g, const float *__restrict__ x,
                                               const double *__restrict__ mean, const double *__restrict__ rstd,
                                               const float *__restrict__ w, const float *__restrict__ b,
                                               float *__restrict__ y) {
  const int64_t cpg = g.C / g.groups, total = g.N * g.C * g.S;
  VOLUA_GRID_LOOP(i, total) {
    const int64_t row = i / g.S, c = row % g.C, n = row / g.C;
    const int64_t grp = n * g.groups + c / cpg;
    y[i] = gn_apply(x[i], mean[grp], rstd[grp], w, b, c);
  }
}

// -- launcher ----

#define GN_BLOCK_THREADS 256
#define GN_SPLIT_MIN_CHUNK 16384 /* values per block at least, in the split variant */
#define GN_SPLIT_TARGET_BLOCKS 2048

static int launch_group_norm_split(const volua_group_norm_geom *g, const float *x, const float *w, const float *b,
                                   float *y, double *scratch, int64_t bpg, cudaStream_t s, char *err) {
  const char *op = "group_norm";
  const int64_t M = (g->C / g->groups) * g->S, count = g->N * g->groups;
  const int64_t chunk = (M + bpg - 1) / bpg;
  double *partial = scratch, *mean = scratch + count * bpg, *rstd = mean + count;
  const unsigned blocks = volua_grid_for(count * bpg, 1);
  const unsigned fblocks = volua_grid_for(count, VOLUA_THREADS);
  group_norm_partial_kernel<0><<<blocks, GN_BLOCK_THREADS, 0, s>>>(x, M, count, bpg, chunk, NULL, partial);
  CUDA_CHECK_LAUNCH();
  group_norm_finish_kernel<0><<<fblocks, VOLUA_THREADS, 0, s>>>(M, count, bpg, g->eps, partial, mean);
  CUDA_CHECK_LAUNCH();
  group_norm_partial_kernel<1><<<blocks, GN_BLOCK_THREADS, 0, s>>>(x, M, count, bpg, chunk, mean, partial);
  CUDA_CHECK_LAUNCH();
  group_norm_finish_kernel<1><<<fblocks, VOLUA_THREADS, 0, s>>>(M, count, bpg, g->eps, partial, rstd);
  CUDA_CHECK_LAUNCH();
  const int64_t total = g->N * g->C * g->S;
  group_norm_apply_kernel<<<volua_grid_for(total, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(*g, x, mean, rstd, w, b, y);
  CUDA_CHECK_LAUNCH();
  return 0;
}

static int launch_group_norm(const volua_group_norm_geom *g, const float *x, const float *w, const float *b,
                             float *y, cudaStream_t s, char *err) {
  const char *op = "group_norm";
  const int64_t M = (g->C / g->groups) * g->S, count = g->N * g->groups;
  if (count <= 0 || M <= 0) return 0;
  // Enough groups to fill the GPU, or groups small enough for one block: a block each.
  if (count >= 1024 || M <= 65536) {
    group_norm_block_kernel<<<volua_grid_for(count, 1), GN_BLOCK_THREADS, 0, s>>>(*g, x, w, b, y);
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  int64_t bpg = (M + GN_SPLIT_MIN_CHUNK - 1) / GN_SPLIT_MIN_CHUNK;
  const int64_t want = (GN_SPLIT_TARGET_BLOCKS + count - 1) / count;
  if (bpg > want) bpg = want;
  if (bpg < 1) bpg = 1;
  double *scratch = NULL;
  if (volua_cuda_malloc((void **)&scratch, (count * bpg + 2 * count) * (int64_t)sizeof(double), err)) return 1;
  int rc = launch_group_norm_split(g, x, w, b, y, scratch, bpg, s, err);
  // The block goes back to the cache; the stream orders its reuse after these kernels.
  volua_cuda_free(scratch);
  return rc;
}

// -- entry ----

extern "C" int volua_cuda_group_norm(const volua_group_norm_geom *g, const float *x, const float *w,
                                     const float *b, float *y, cudaStream_t s, char *err) {
  return launch_group_norm(g, x, w, b, y, s, err);
}
