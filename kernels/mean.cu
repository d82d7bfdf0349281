// mean.cu: mean over any set of dims (keepdim only changes the output's shape, not its order),
// accumulated in double, as src/cpu/mean.c.
#include <stdint.h>

#include "common.cuh"

// The input's dims split into kept ones (the output's, in order) and reduced ones, with the
// input's row-major strides.
typedef struct mean_plan {
  int nkept, nred;
  int64_t kept_size[VOLUA_MEAN_MAX_DIMS], kept_stride[VOLUA_MEAN_MAX_DIMS];
  int64_t red_size[VOLUA_MEAN_MAX_DIMS], red_stride[VOLUA_MEAN_MAX_DIMS];
  int64_t out_numel, reduce_numel;
} mean_plan;

// Input offset of output o's first element.
__device__ __forceinline__ int64_t kept_offset(const mean_plan &p, int64_t o) {
  int64_t off = 0;
  for (int k = p.nkept - 1; k >= 0; k--) {
    off += (o % p.kept_size[k]) * p.kept_stride[k];
    o /= p.kept_size[k];
  }
  return off;
}

// Offset of the r-th reduced element relative to the output's first element.
__device__ __forceinline__ int64_t reduced_offset(const mean_plan &p, int64_t r) {
  int64_t off = 0;
  for (int k = p.nred - 1; k >= 0; k--) {
    off += (r % p.red_size[k]) * p.red_stride[k];
    r /= p.red_size[k];
  }
  return off;
}

// -- kernels ----

// One block per output (large reductions).
static __global__ void mean_block_kernel(mean_plan p, const float *__restrict__ x, float *__restrict__ y) {
  __shared__ double scratch[32];
  for (int64_t o = blockIdx.x; o < p.out_numel; o += gridDim.x) {
    const float *xo = x + kept_offset(p, o);
    double s = 0.0;
    for (int64_t r = threadIdx.x; r < p.reduce_numel; r += blockDim.x) s += (double)xo[reduced_offset(p, r)];
    s = volua_block_sum(s, scratch);
    // reduce_numel 0 gives 0 / 0 = NaN, as torch.mean
    if (threadIdx.x == 0) y[o] = (float)(s / (double)p.reduce_numel);
  }
}

// One thread per output (small reductions): the reduced dims are walked like an odometer.
static __global__ void mean_thread_kernel(mean_plan p, const float *__restrict__ x, float *__restrict__ y) {
  VOLUA_GRID_LOOP(o, p.out_numel) {
    int64_t off = kept_offset(p, o);
    int64_t coord[VOLUA_MEAN_MAX_DIMS];
#pragma unroll
    for (int k = 0; k < VOLUA_MEAN_MAX_DIMS; k++) coord[k] = 0;
    double s = 0.0;
    for (int64_t r = 0; r < p.reduce_numel; r++) {
      s += (double)x[off];
      // unrolled so that coord stays in registers (a run-time index would put it in local memory)
#pragma unroll
      for (int k = VOLUA_MEAN_MAX_DIMS - 1; k >= 0; k--) {
        if (k >= p.nred) continue;
        off += p.red_stride[k];
        if (++coord[k] < p.red_size[k]) break;
        off -= coord[k] * p.red_stride[k];
        coord[k] = 0;
      }
    }
    y[o] = (float)(s / (double)p.reduce_numel);
  }
}

// -- launcher ----

#define MEAN_THREAD_LIMIT 256 /* reductions this small run one per thread */

static int launch_mean(const volua_mean_geom *g, const float *x, float *y, cudaStream_t s, char *err) {
  const char *op = "mean";
  mean_plan p;
  p.nkept = p.nred = 0;
  int64_t stride = 1, strides[VOLUA_MEAN_MAX_DIMS];
  for (int d = g->ndim - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= g->shape[d];
  }
  for (int d = 0; d < g->ndim; d++) {
    if (g->reduce[d]) {
      p.red_size[p.nred] = g->shape[d];
      p.red_stride[p.nred++] = strides[d];
    } else {
      p.kept_size[p.nkept] = g->shape[d];
      p.kept_stride[p.nkept++] = strides[d];
    }
  }
  p.out_numel = g->out_numel;
  p.reduce_numel = g->reduce_numel;
  if (p.out_numel <= 0) return 0;
  if (p.reduce_numel <= MEAN_THREAD_LIMIT)
    mean_thread_kernel<<<volua_grid_for(p.out_numel, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(p, x, y);
  else
    mean_block_kernel<<<volua_grid_for(p.out_numel, 1), VOLUA_THREADS, 0, s>>>(p, x, y);
  CUDA_CHECK_LAUNCH();
  return 0;
}

// -- entry ----

extern "C" int volua_cuda_mean(const volua_mean_geom *g, const float *x, float *y, cudaStream_t s, char *err) {
  if (g->ndim < 0 || g->ndim > VOLUA_MEAN_MAX_DIMS) {
    snprintf(err, VOLUA_ERR_MAX, "mean: rank %d is outside 0..%d", g->ndim, VOLUA_MEAN_MAX_DIMS);
    return 1;
  }
  return launch_mean(g, x, y, s, err);
}
