// layer_norm.cu: layer_norm on x viewed as (rows, cols), as src/cpu/layer_norm.c: per row the mean
// and biased variance in double, then y = (x - mean) / sqrt(var + eps) * w[j] + b[j] (weight and bias
// elementwise over the row), in double, rounded once. 64-bit indices throughout.
//
// - Rows of at most LN_WARP_MAX values: ln_warp_kernel, a warp a row, the CPU's two passes (the sum,
//   then the squared deviations from the mean, each added in double and folded in a fixed tree), then
//   the normalisation. x is read from DRAM once; its second and third reads hit the cache (a row
//   is 4 KB at most).
// - Longer rows: each row in chunks, volua_channel_stats_kernel (norm_moments.cuh, with N = 1: a row
//   is one run) and volua_channel_finish_kernel give its mean and rstd (Chan-merged moments in
//   double), then ln_apply_kernel, a block a chunk of a row. x is read twice, y written once.
#include <math.h>
#include <stdint.h>

#include "common.cuh"
#include "norm_moments.cuh"

#define LN_WARP_MAX 1024

// The warp's sum of v, the same in every lane (a fixed tree to lane 0, then broadcast).
__device__ __forceinline__ double ln_warp_allsum(double v) {
  return __shfl_sync(0xffffffffu, volua_warp_sum(v), 0);
}

static __global__ void __launch_bounds__(VOLUA_NORM_THREADS)
    ln_warp_kernel(int64_t rows, int64_t cols, double eps, const float *__restrict__ x, const float *__restrict__ w,
                   const float *__restrict__ b, float *__restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t per_block = blockDim.x / 32, step = (int64_t)gridDim.x * per_block;
  for (int64_t r = (int64_t)blockIdx.x * per_block + threadIdx.x / 32; r < rows; r += step) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    double sum = 0.0;
    for (int64_t j = lane; j < cols; j += 32) sum += (double)xr[j];
    const double mean = ln_warp_allsum(sum) / (double)cols;
    double squares = 0.0;
    for (int64_t j = lane; j < cols; j += 32) {
      const double d = (double)xr[j] - mean;
      squares += d * d;
    }
    const double rstd = 1.0 / sqrt(ln_warp_allsum(squares) / (double)cols + eps);
    for (int64_t j = lane; j < cols; j += 32)
      yr[j] = volua_norm_apply(xr[j], mean, rstd, w ? (double)w[j] : 1.0, b ? (double)b[j] : 0.0);
  }
}

// Task t = row * cpr + k: values [k * chunk, (k + 1) * chunk) of the row, a thread a value (coalesced).
static __global__ void __launch_bounds__(VOLUA_NORM_THREADS)
    ln_apply_kernel(int64_t rows, int64_t cols, int64_t cpr, int64_t chunk, const float *__restrict__ x,
                    const double *__restrict__ mean, const double *__restrict__ rstd, const float *__restrict__ w,
                    const float *__restrict__ b, float *__restrict__ y) {
  const int64_t tasks = rows * cpr;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t row = task / cpr, lo = (task - row * cpr) * chunk;
    const int64_t hi = lo + chunk < cols ? lo + chunk : cols;
    const double m = mean[row], r = rstd[row];
    const float *xr = x + row * cols;
    float *yr = y + row * cols;
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x)
      yr[j] = volua_norm_apply(xr[j], m, r, w ? (double)w[j] : 1.0, b ? (double)b[j] : 0.0);
  }
}

static int launch_layer_norm(const volua_layer_norm_geom *g, const float *x, const float *w, const float *b, float *y,
                             cudaStream_t s, char *err) {
  const char *op = "layer_norm";
  const int64_t rows = g->rows, cols = g->cols;
  if (rows <= 0 || cols <= 0) return 0;
  if (cols <= LN_WARP_MAX) {
    const int64_t blocks = (rows + VOLUA_NORM_THREADS / 32 - 1) / (VOLUA_NORM_THREADS / 32);
    const unsigned grid = (unsigned)(blocks < ((int64_t)1 << 20) ? blocks : ((int64_t)1 << 20));
    ln_warp_kernel<<<grid, VOLUA_NORM_THREADS, 0, s>>>(rows, cols, g->eps, x, w, b, y);
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  static int64_t stats_resident = 0, apply_resident = 0;
  if (!stats_resident) stats_resident = volua_resident_blocks(volua_channel_stats_kernel, VOLUA_NORM_THREADS);
  if (!apply_resident) apply_resident = volua_resident_blocks(ln_apply_kernel, VOLUA_NORM_THREADS);
  int64_t cpr = 0, chunk = 0;
  volua_channel_stats_plan(rows, cols, stats_resident, &cpr, &chunk);
  const int64_t tasks = rows * cpr;
  void *scratch = NULL;
  const int64_t bytes = tasks * (int64_t)sizeof(volua_moments) + 2 * rows * (int64_t)sizeof(double);
  if (volua_cuda_malloc(&scratch, bytes, err)) return 1;
  volua_moments *part = (volua_moments *)scratch;
  double *mean = (double *)(part + tasks), *rstd = mean + rows;
  const unsigned sgrid = (unsigned)(tasks < stats_resident ? tasks : stats_resident);
  volua_channel_stats_kernel<<<sgrid, VOLUA_NORM_THREADS, 0, s>>>(1, rows, cols, cpr, chunk, x, part);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    const unsigned fgrid = (unsigned)(rows < 65535 ? rows : 65535);
    volua_channel_finish_kernel<<<fgrid, VOLUA_NORM_THREADS, 0, s>>>(rows, cpr, g->eps, 0.0, part, mean, rstd, NULL,
                                                                    NULL);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    const unsigned agrid = (unsigned)(tasks < apply_resident ? tasks : apply_resident);
    ln_apply_kernel<<<agrid, VOLUA_NORM_THREADS, 0, s>>>(rows, cols, cpr, chunk, x, mean, rstd, w, b, y);
    e = cudaGetLastError();
  }
  volua_cuda_free(scratch); // (stream-ordered: the caching allocator reuses it only after these kernels)
  if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
  return 0;
}

extern "C" int volua_cuda_layer_norm(const volua_layer_norm_geom *g, const float *x, const float *w, const float *b,
                                     float *y, cudaStream_t s, char *err) {
  return launch_layer_norm(g, x, w, b, y, s, err);
}
