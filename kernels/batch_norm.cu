// batch_norm.cu: batch_norm on x viewed as (N, C, S), as src/cpu/batch_norm.c, and instance_norm's
// running-statistics update (as src/cpu/instance_norm.c: the same statistics kernel on each
// instance's run). 64-bit indices throughout.
//
// Training: volua_channel_stats_kernel (norm_moments.cuh) takes each channel's moments in chunks (a
// grid of (channel, chunk) blocks: a channel's values are N runs of S, not contiguous), Chan-merged
// in double; volua_channel_finish_kernel folds a channel's chunks in order into mean and
// 1 / sqrt(var + eps) and updates the running statistics in place; bn_apply_rows_kernel (S of
// VOLUA_NORM_RUN_MIN or more: a block a chunk of one (sample, channel) run, float4s) or
// bn_apply_flat_kernel (shorter runs: a thread a value) writes y. Each byte of x is read twice (the
// statistics, the normalisation) and each byte of y written once, as PyTorch's kernels do.
// Eval: bn_running_kernel turns the running statistics into mean and rstd, then the same apply:
// x read once, y written once.
#include <math.h>
#include <stdint.h>

#include "common.cuh"
#include "norm_moments.cuh"

// Eval: mean[c] and rstd[c] from the running statistics, as the CPU computes them.
static __global__ void bn_running_kernel(int64_t C, double eps, const float *__restrict__ running_mean,
                                         const float *__restrict__ running_var, double *__restrict__ mean,
                                         double *__restrict__ rstd) {
  VOLUA_GRID_LOOP(c, C) {
    mean[c] = (double)running_mean[c];
    rstd[c] = 1.0 / sqrt((double)running_var[c] + eps);
  }
}

// Task t = row * cpr + k (row = n * C + c): values [k * chunk, (k + 1) * chunk) of the row's run.
static __global__ void __launch_bounds__(VOLUA_NORM_THREADS)
    bn_apply_rows_kernel(int64_t rows, int64_t C, int64_t S, int64_t cpr, int64_t chunk, const float *__restrict__ x,
                         const double *__restrict__ mean, const double *__restrict__ rstd, const float *__restrict__ w,
                         const float *__restrict__ b, float *__restrict__ y) {
  const int64_t tasks = rows * cpr;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t row = task / cpr, lo = (task - row * cpr) * chunk, c = row % C;
    const int64_t len = lo + chunk < S ? chunk : S - lo;
    const double sc = w ? (double)w[c] : 1.0, sh = b ? (double)b[c] : 0.0;
    volua_norm_apply_run<false>(x + row * S + lo, y + row * S + lo, len, mean[c], rstd[c], sc, sh);
  }
}

// Runs shorter than VOLUA_NORM_RUN_MIN: a thread a value, its channel (i / S) % C.
static __global__ void bn_apply_flat_kernel(int64_t total, int64_t C, int64_t S, const float *__restrict__ x,
                                            const double *__restrict__ mean, const double *__restrict__ rstd,
                                            const float *__restrict__ w, const float *__restrict__ b,
                                            float *__restrict__ y) {
  VOLUA_GRID_LOOP(i, total) {
    const int64_t c = (i / S) % C;
    y[i] = volua_norm_apply(x[i], mean[c], rstd[c], w ? (double)w[c] : 1.0, b ? (double)b[c] : 0.0);
  }
}

// instance_norm's update: block per channel c; the threads stride over the batch, each instance's
// chunk states (part[(n * C + c) * cpr ...]) folded in order into its mean and unbiased variance
// (m2 / (S - 1)), their sums over the batch added in a fixed tree (volua_block_sum), then running =
// momentum * batch mean + (1 - momentum) * running.
static __global__ void in_update_kernel(int64_t N, int64_t C, int64_t cpr, double momentum,
                                        const volua_moments *__restrict__ part, float *running_mean,
                                        float *running_var) {
  __shared__ double scratch[32];
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double mean_sum = 0.0, var_sum = 0.0;
    for (int64_t n = threadIdx.x; n < N; n += blockDim.x) {
      volua_moments a = {0.0, 0.0, 0.0};
      for (int64_t k = 0; k < cpr; k++) {
        const volua_moments b = part[(n * C + c) * cpr + k];
        if (b.n > 0) volua_moments_fold(a, b.n, b.mean, b.m2);
      }
      mean_sum += a.mean;
      var_sum += a.m2 / (a.n - 1.0);
    }
    mean_sum = volua_block_sum(mean_sum, scratch);
    var_sum = volua_block_sum(var_sum, scratch);
    if (threadIdx.x == 0) {
      if (running_mean)
        running_mean[c] = (float)(momentum * (mean_sum / (double)N) + (1.0 - momentum) * (double)running_mean[c]);
      if (running_var)
        running_var[c] = (float)(momentum * (var_sum / (double)N) + (1.0 - momentum) * (double)running_var[c]);
    }
  }
}

// -- launchers ----

static int launch_batch_norm(const volua_batch_norm_geom *g, const float *x, const float *w, const float *b,
                             float *rm, float *rv, float *y, cudaStream_t s, char *err) {
  const char *op = "batch_norm";
  const int64_t N = g->N, C = g->C, S = g->S, M = N * S, rows = N * C;
  if (C <= 0 || M <= 0) return 0;
  static int64_t stats_resident = 0, apply_resident = 0;
  if (!stats_resident) stats_resident = volua_resident_blocks(volua_channel_stats_kernel, VOLUA_NORM_THREADS);
  if (!apply_resident) apply_resident = volua_resident_blocks(bn_apply_rows_kernel, VOLUA_NORM_THREADS);

  int64_t cpc = 0, chunk = 0;
  if (g->training) volua_channel_stats_plan(C, M, stats_resident, &cpc, &chunk);
  const int64_t tasks = C * cpc;
  void *scratch = NULL;
  const int64_t bytes = tasks * (int64_t)sizeof(volua_moments) + 2 * C * (int64_t)sizeof(double);
  if (volua_cuda_malloc(&scratch, bytes, err)) return 1;
  volua_moments *part = (volua_moments *)scratch;
  double *mean = (double *)(part + tasks), *rstd = mean + C;

  cudaError_t e;
  if (g->training) {
    const unsigned sgrid = (unsigned)(tasks < stats_resident ? tasks : stats_resident);
    volua_channel_stats_kernel<<<sgrid, VOLUA_NORM_THREADS, 0, s>>>(N, C, S, cpc, chunk, x, part);
    e = cudaGetLastError();
    if (e == cudaSuccess) {
      const unsigned fgrid = (unsigned)(C < 65535 ? C : 65535);
      volua_channel_finish_kernel<<<fgrid, VOLUA_NORM_THREADS, 0, s>>>(C, cpc, g->eps, g->momentum, part, mean, rstd,
                                                                      rm, rv);
      e = cudaGetLastError();
    }
  } else {
    bn_running_kernel<<<volua_grid_for(C, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(C, g->eps, rm, rv, mean, rstd);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    if (S >= VOLUA_NORM_RUN_MIN) { // each run in cpr chunks, the way group_norm's apply cuts its rows
      int64_t cpr = volua_chunks_per_item(rows, S, VOLUA_NORM_MIN_CHUNK, apply_resident);
      const int64_t achunk = ((S + cpr - 1) / cpr + 3) / 4 * 4;
      cpr = (S + achunk - 1) / achunk;
      const int64_t atasks = rows * cpr;
      const unsigned agrid = (unsigned)(atasks < apply_resident ? atasks : apply_resident);
      bn_apply_rows_kernel<<<agrid, VOLUA_NORM_THREADS, 0, s>>>(rows, C, S, cpr, achunk, x, mean, rstd, w, b, y);
    } else {
      bn_apply_flat_kernel<<<volua_grid_for(rows * S, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(rows * S, C, S, x, mean,
                                                                                          rstd, w, b, y);
    }
    e = cudaGetLastError();
  }
  volua_cuda_free(scratch); // (stream-ordered: the caching allocator reuses it only after these kernels)
  if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
  return 0;
}

// instance_norm's update: each instance (n, c), a run of S values, is a "channel" of the statistics
// kernel (N = 1, C = N*C rows); x is read once more (the output came from group_norm.cu).
static int launch_instance_norm_update(const volua_batch_norm_geom *g, const float *x, float *rm, float *rv,
                                       cudaStream_t s, char *err) {
  const char *op = "instance_norm";
  const int64_t rows = g->N * g->C;
  if (rows <= 0 || g->S <= 0 || (!rm && !rv)) return 0;
  static int64_t stats_resident = 0;
  if (!stats_resident) stats_resident = volua_resident_blocks(volua_channel_stats_kernel, VOLUA_NORM_THREADS);
  int64_t cpr = 0, chunk = 0;
  volua_channel_stats_plan(rows, g->S, stats_resident, &cpr, &chunk);
  const int64_t tasks = rows * cpr;
  void *scratch = NULL;
  if (volua_cuda_malloc(&scratch, tasks * (int64_t)sizeof(volua_moments), err)) return 1;
  volua_moments *part = (volua_moments *)scratch;
  const unsigned sgrid = (unsigned)(tasks < stats_resident ? tasks : stats_resident);
  volua_channel_stats_kernel<<<sgrid, VOLUA_NORM_THREADS, 0, s>>>(1, rows, g->S, cpr, chunk, x, part);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    const unsigned ugrid = (unsigned)(g->C < 65535 ? g->C : 65535);
    in_update_kernel<<<ugrid, VOLUA_NORM_THREADS, 0, s>>>(g->N, g->C, cpr, g->momentum, part, rm, rv);
    e = cudaGetLastError();
  }
  volua_cuda_free(scratch);
  if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
  return 0;
}

// -- entries ----

extern "C" int volua_cuda_batch_norm(const volua_batch_norm_geom *g, const float *x, const float *w, const float *b,
                                     float *running_mean, float *running_var, float *y, cudaStream_t s, char *err) {
  return launch_batch_norm(g, x, w, b, running_mean, running_var, y, s, err);
}

extern "C" int volua_cuda_instance_norm_update(const volua_batch_norm_geom *g, const float *x, float *running_mean,
                                               float *running_var, cudaStream_t s, char *err) {
  return launch_instance_norm_update(g, x, running_mean, running_var, s, err);
}
