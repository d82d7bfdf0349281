// group_norm.cu: group_norm on x viewed as (N, C, S), as src/cpu/group_norm.c: per (sample, group)
// the mean and the biased variance in double, then y = (x - mean) / sqrt(var + eps) * weight + bias
// (in double, rounded once to float). 64-bit indices throughout (a group may hold more than 2^31
// values).
//
// The statistics: a group in chunks, a block a chunk. A thread loads 16 values at a time (four
// float4s in flight), takes their mean and squared deviations in double (two-pass, in registers),
// and folds them into its running (count, mean, M2) by Chan's parallel update; the block folds its
// threads' states in a fixed order, and a group's chunks are folded in order. Stable where the mean
// is large against the spread, as the CPU's two passes are, and the same result every run (the
// order depends only on the shape and the GPU's size).
//
// Two ways to run it:
// - gn_fused_kernel (groups of at most GN_FUSED_MAX_GROUP values): one launch. A block takes a
//   chunk's statistics, waits for the rest of its group's chunks (the last block to finish folds
//   them), then normalises its chunk, which L2 may still hold (ncu on (8, 64, 32, 64, 64): 68 % of
//   the second read of x came from L2).
// - three kernels (larger groups, or VOLUA_GN_FUSED=0): gn_stats_kernel (the chunks' moments),
//   volua_channel_finish_kernel (a group's fold, norm_moments.cuh), gn_apply_kernel (a block a
//   chunk of one (sample, channel) row, so that the row's mean, rstd, weight and bias are one load
//   each; float4s, four in flight a thread). x is read twice, as PyTorch's kernels read it.
// (The first version read x three times, one float at a time, and divided a 64-bit index by S and
// by C for every value of the apply pass: bench/NOTES.md, thirty-fifth session.)
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "norm_moments.cuh"

#define GN_THREADS 256
#define GN_MIN_CHUNK 4096 /* values a chunk at least (a group's for the statistics, a row's to apply) */
#define GN_FUSED_CHUNK 16384 /* the fused kernel's chunks: 4 blocks an SM on 132 SMs hold 35 MB of them */
#define GN_FUSED_MAX_GROUP (128 * GN_FUSED_CHUNK) /* larger groups: three passes (measured faster) */

// The (count, mean, M2) states, their folds and the apply walk: norm_moments.cuh.

// -- three passes: statistics, their fold, the normalisation ----

// Task t = group * bpg + k: values [k * chunk, (k + 1) * chunk) of the group (the last shorter),
// its state to part[t].
static __global__ void __launch_bounds__(GN_THREADS, 4)
    gn_stats_kernel(const float *__restrict__ x, int64_t M, int64_t tasks, int64_t bpg, int64_t chunk,
                    volua_moments *__restrict__ part) {
  __shared__ volua_moments scratch[32];
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t grp = task / bpg, lo = (task - grp * bpg) * chunk;
    const int64_t len = lo + chunk < M ? chunk : M - lo;
    const volua_moments a = volua_moments_block_fold(volua_run_moments(x + grp * M + lo, len), scratch);
    if (threadIdx.x == 0) part[task] = a;
  }
}

// Task t = row * cpr + k (row = n * C + c): values [k * chunk, (k + 1) * chunk) of the row.
// (Six blocks an SM, 40 registers: one volume of 8 groups of 8.4 M values 0.2297 -> 0.2241 ms on the H200
// against the 64 registers the compiler chose, run s35r10.)
static __global__ void __launch_bounds__(GN_THREADS, 6)
    gn_apply_kernel(volua_group_norm_geom g, int64_t cpr, int64_t chunk, const float *__restrict__ x,
                    const double *__restrict__ mean, const double *__restrict__ rstd, const float *__restrict__ w,
                    const float *__restrict__ b, float *__restrict__ y) {
  const int64_t cpg = g.C / g.groups, tasks = g.N * g.C * cpr;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t row = task / cpr, lo = (task - row * cpr) * chunk;
    const int64_t n = row / g.C, c = row - n * g.C, grp = n * g.groups + c / cpg;
    const double sc = w ? (double)w[c] : 1.0, sh = b ? (double)b[c] : 0.0;
    const int64_t len = lo + chunk < g.S ? chunk : g.S - lo;
    volua_norm_apply_run<false>(x + row * g.S + lo, y + row * g.S + lo, len, mean[grp], rstd[grp], sc, sh);
  }
}

// -- one pass from DRAM: the fused kernel ----

// Task t = group * bpg + k, taken in order from a counter (*next) by whichever block is free: the
// block takes the chunk's moments, and where the group has several chunks, leaves them in part[t] and
// counts itself in cnt[group]. The last of the group's blocks folds the group's parts (in order) into
// stat[group] and raises flag[group]; the others wait for the flag. Then each block normalises its
// chunk, which it read a moment ago: from L2, not DRAM, when the blocks' chunks fit in it together.
// A block waits only for chunks already taken, or next in line, by blocks running at once (the
// launch is cooperative: every block is resident), and a group's chunks are at most the grid's
// blocks: no block waits for one that cannot run. Where every group is one chunk (bpg 1), nobody
// waits: a plain launch, next and the rest NULL, and block i takes tasks i, i + grid, ...
static __global__ void __launch_bounds__(GN_THREADS, 4)
    gn_fused_kernel(volua_group_norm_geom g, int64_t M, int64_t bpg, int64_t chunk, const float *__restrict__ x,
                    const float *__restrict__ w, const float *__restrict__ b, float *__restrict__ y,
                    volua_moments *__restrict__ part, double2 *__restrict__ stat, unsigned long long *next,
                    unsigned int *cnt, unsigned int *flag) {
  __shared__ volua_moments scratch[32];
  __shared__ int64_t s_task;
  __shared__ int s_last;
  __shared__ double s_mean, s_rstd;
  const int64_t tasks = g.N * g.groups * bpg, cpg = g.C / g.groups;
  for (int64_t it = blockIdx.x;; it += gridDim.x) {
    if (next) { // (NULL where every group is one chunk: nobody waits, and blocks take tasks in grid order)
      if (threadIdx.x == 0) s_task = (int64_t)atomicAdd(next, 1ull);
      __syncthreads();
    }
    const int64_t task = next ? s_task : it;
    if (task >= tasks) break;
    const int64_t grp = task / bpg, lo = (task - grp * bpg) * chunk;
    const int64_t len = lo + chunk < M ? chunk : M - lo;
    const float *xg = x + grp * M;
    volua_moments a = volua_moments_block_fold(volua_run_moments(xg + lo, len), scratch);
    if (bpg == 1) {
      if (threadIdx.x == 0) {
        s_mean = a.mean;
        s_rstd = volua_moments_rstd(a, g.eps);
      }
    } else {
      if (threadIdx.x == 0) {
        part[task] = a;
        __threadfence();
        s_last = atomicAdd(cnt + grp, 1u) == (unsigned)(bpg - 1);
      }
      __syncthreads();
      if (s_last) { // every part is in: fold them in order, publish, raise the flag
        __threadfence();
        a = {0.0, 0.0, 0.0};
        const double *pd = reinterpret_cast<const double *>(part + grp * bpg);
        for (int64_t k = threadIdx.x; k < bpg; k += blockDim.x) {
          const double n = __ldcg(pd + 3 * k), mb = __ldcg(pd + 3 * k + 1), m2 = __ldcg(pd + 3 * k + 2);
          volua_moments_fold(a, n, mb, m2);
        }
        a = volua_moments_block_fold(a, scratch);
        if (threadIdx.x == 0) {
          s_mean = a.mean;
          s_rstd = volua_moments_rstd(a, g.eps);
          stat[grp] = make_double2(s_mean, s_rstd);
          __threadfence();
          atomicExch(flag + grp, 1u);
        }
      } else if (threadIdx.x == 0) {
        const volatile unsigned int *f = flag + grp;
        while (*f == 0) __nanosleep(64);
        __threadfence();
        const double2 mr = __ldcg(stat + grp);
        s_mean = mr.x;
        s_rstd = mr.y;
      }
    }
    __syncthreads();
    const double m = s_mean, r = s_rstd;
    // the chunk's channels, each its own run: [max(lo, j S), min(lo + len, (j + 1) S)) for channel j
    const int64_t c0 = (grp % g.groups) * cpg, j1 = (lo + len - 1) / g.S;
    for (int64_t j = lo / g.S; j <= j1; j++) {
      const int64_t a0 = j * g.S > lo ? j * g.S : lo, a1 = (j + 1) * g.S < lo + len ? (j + 1) * g.S : lo + len;
      const double sc = w ? (double)w[c0 + j] : 1.0, sh = b ? (double)b[c0 + j] : 0.0;
      volua_norm_apply_run<true>(xg + a0, y + grp * M + a0, a1 - a0, m, r, sc, sh);
    }
    __syncthreads(); // s_task, s_mean and s_rstd are rewritten by the next task
  }
}

// -- launcher ----

static int64_t gn_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The fused kernel, if the GPU launches cooperative kernels and VOLUA_GN_FUSED is not 0. Chunks of
// GN_FUSED_CHUNK values (VOLUA_GN_CHUNK, for measuring), or more where a group would otherwise have
// more chunks than the grid has blocks. *ran says whether it ran (a cooperative launch the GPU
// refuses leaves it 0, for the three passes).
static int launch_group_norm_fused(const volua_group_norm_geom *g, const float *x, const float *w, const float *b,
                                   float *y, cudaStream_t s, char *err, int *ran) {
  const char *op = "group_norm";
  *ran = 0;
  static int coop = -1;
  static int64_t resident = 0;
  if (coop < 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess)
      coop = 0;
    (void)cudaGetLastError();
    resident = volua_resident_blocks(gn_fused_kernel, GN_THREADS);
  }
  const char *env = getenv("VOLUA_GN_FUSED"); // 0: never; 2: whatever the group's size
  const int64_t M = (g->C / g->groups) * g->S, count = g->N * g->groups;
  if (!coop || (env && strcmp(env, "0") == 0)) return 0;
  if (M > GN_FUSED_MAX_GROUP && !(env && strcmp(env, "2") == 0)) return 0;
  const char *want = getenv("VOLUA_GN_CHUNK");
  int64_t chunk = want && atoll(want) > 0 ? atoll(want) : GN_FUSED_CHUNK;
  if (chunk < gn_cdiv(M, resident)) chunk = gn_cdiv(M, resident);
  chunk = gn_cdiv(chunk, 4) * 4; // a multiple of 4: the chunks keep x's alignment
  if (chunk > M) chunk = M;
  int64_t bpg = gn_cdiv(M, chunk);
  const int64_t tasks = count * bpg, grid = tasks < resident ? tasks : resident;
  if (bpg == 1) { // every group one chunk: no block waits for another, so a plain launch, no scratch
    gn_fused_kernel<<<(unsigned)grid, GN_THREADS, 0, s>>>(*g, M, bpg, chunk, x, w, b, y, NULL, NULL, NULL, NULL, NULL);
    CUDA_CHECK_LAUNCH();
    *ran = 1;
    return 0;
  }
  // scratch: stat[count], part[tasks] (several chunks a group only), then what the memset zeroes:
  // next, cnt[count], flag[count]
  const int64_t part_n = bpg > 1 ? tasks : 0;
  const int64_t sync_bytes = 8 + 8 * count;
  const int64_t bytes = count * (int64_t)sizeof(double2) + part_n * (int64_t)sizeof(volua_moments) + sync_bytes;
  void *scratch = NULL;
  if (volua_cuda_malloc(&scratch, bytes, err)) return 1;
  double2 *stat = (double2 *)scratch;
  volua_moments *part = (volua_moments *)(stat + count);
  unsigned long long *next = (unsigned long long *)(part + part_n);
  unsigned int *cnt = (unsigned int *)(next + 1), *flag = cnt + count;
  volua_group_norm_geom gg = *g;
  void *args[] = {&gg, (void *)&M, &bpg, &chunk, (void *)&x, (void *)&w, (void *)&b,
                  &y, &part, &stat, &next, &cnt, &flag};
  cudaError_t e = cudaMemsetAsync(next, 0, (size_t)sync_bytes, s);
  if (e == cudaSuccess) {
    e = cudaLaunchCooperativeKernel((const void *)gn_fused_kernel, dim3((unsigned)grid), dim3(GN_THREADS), args, 0, s);
    if (e == cudaErrorCooperativeLaunchTooLarge) { // (another context holds part of the GPU): three passes
      (void)cudaGetLastError();
      volua_cuda_free(scratch);
      return 0;
    }
  }
  volua_cuda_free(scratch); // (stream-ordered: the caching allocator reuses it only after this kernel)
  if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
  *ran = 1;
  return 0;
}

static int launch_group_norm(const volua_group_norm_geom *g, const float *x, const float *w, const float *b, float *y,
                             cudaStream_t s, char *err) {
  const char *op = "group_norm";
  const int64_t M = (g->C / g->groups) * g->S, count = g->N * g->groups;
  if (count <= 0 || M <= 0) return 0;
  int ran = 0;
  if (launch_group_norm_fused(g, x, w, b, y, s, err, &ran)) return 1;
  if (ran) return 0;
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
  const int64_t bytes = tasks * (int64_t)sizeof(volua_moments) + 2 * count * (int64_t)sizeof(double);
  if (volua_cuda_malloc(&scratch, bytes, err)) return 1;
  volua_moments *part = (volua_moments *)scratch;
  double *mean = (double *)(part + tasks), *rstd = mean + count;
  const unsigned sgrid = (unsigned)(tasks < stats_resident ? tasks : stats_resident);
  const unsigned fgrid = (unsigned)(count < 65535 ? count : 65535);
  const unsigned agrid = (unsigned)(atasks < apply_resident ? atasks : apply_resident);
  gn_stats_kernel<<<sgrid, GN_THREADS, 0, s>>>(x, M, tasks, bpg, chunk, part);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    // (a group's fold is a channel's of norm_moments.cuh, without running statistics)
    volua_channel_finish_kernel<<<fgrid, GN_THREADS, 0, s>>>(count, bpg, g->eps, 0.0, part, mean, rstd, NULL, NULL);
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
