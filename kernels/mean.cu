// mean.cu: mean and sum over any set of dims (keepdim only changes the output's shape, not its
// order), accumulated in double, as src/cpu/mean.c; a sum is a mean whose divisor is 1.
//
// The input's dims are coalesced first: size-1 dims dropped, neighbours of the same kind (kept or
// reduced) merged, so that a mean over (D, H, W) of (N, C, D, H, W) is a mean over the last dim of
// (N*C, D*H*W), and one over C is (N, C, D*H*W) with the middle dim reduced. Then:
// - everything reduced (mean_all_kernel): common.cuh's whole-run walk, a grid of as many blocks as
//   fit at once;
// - each output one contiguous run (mean_runs_kernel: only trailing dims reduced, as a mean over
//   (D, H, W)): a block per (output, slice), the tasks over a grid of as many blocks as fit at once;
// - else the last dim reduced (mean_rows_kernel): a block per (output, slice of its reduced
//   elements), its threads along the contiguous runs of the last dim;
// - the last dim kept (mean_cols_kernel): a thread per output of the last dim (neighbouring threads,
//   neighbouring outputs), a block row per (outer output, slice), the reduced dims walked like an
//   odometer;
// - small reductions (at most MEAN_THREAD_LIMIT elements an output) but for a kept last dim of 32 or
//   more, and the last dim reduced in runs shorter than MEAN_MIN_RUN: a thread per output.
// Slices write their sums in double to a scratch buffer, which mean_finish_kernel adds in order
// (one slice: the output directly), so the result does not depend on the schedule. (The first
// version took a block per output and a division and a modulo per dim per element: a mean of a whole
// 537 MB volume ran on one block, 530 ms on the H200; bench/NOTES.md, ninth session.)
#include <stdint.h>
#include <string.h>

#include "common.cuh"

// The coalesced dims, kept and reduced, with the input's row-major strides.
typedef struct mean_plan {
  int nkept, nred;
  int64_t kept_size[VOLUA_MEAN_MAX_DIMS], kept_stride[VOLUA_MEAN_MAX_DIMS];
  int64_t red_size[VOLUA_MEAN_MAX_DIMS], red_stride[VOLUA_MEAN_MAX_DIMS];
  int64_t out_numel, reduce_numel;
  int64_t slices, per_slice; // each output's reduced elements in `slices` slices of per_slice (the last shorter)
  double divisor;             // reduce_numel for a mean (0: 0 / 0 = NaN, as torch.mean), 1 for a sum
} mean_plan;

// Input offset of the first element of output o, over kept dims [0, nk).
__device__ __forceinline__ int64_t kept_offset(const mean_plan &p, int64_t o, int nk) {
  int64_t off = 0;
  for (int k = nk - 1; k >= 0; k--) {
    off += (o % p.kept_size[k]) * p.kept_stride[k];
    o /= p.kept_size[k];
  }
  return off;
}

// Offset of reduced element r (flattened over reduced dims [0, nr)) from its output's first element.
__device__ __forceinline__ int64_t reduced_offset(const mean_plan &p, int64_t r, int nr) {
  int64_t off = 0;
  for (int k = nr - 1; k >= 0; k--) {
    off += (r % p.red_size[k]) * p.red_stride[k];
    r /= p.red_size[k];
  }
  return off;
}

// The next reduced element after the one at coord (reduced dims [0, nr)): off moves by its stride.
// Unrolled whole, so that coord stays in registers (a run-time index would put it in local memory).
__device__ __forceinline__ void reduced_next(const mean_plan &p, int64_t (&coord)[VOLUA_MEAN_MAX_DIMS], int64_t &off,
                                             int nr) {
#pragma unroll
  for (int k = VOLUA_MEAN_MAX_DIMS - 1; k >= 0; k--) {
    if (k >= nr) continue;
    off += p.red_stride[k];
    if (++coord[k] < p.red_size[k]) break;
    off -= coord[k] * p.red_stride[k];
    coord[k] = 0;
  }
}

// Where slice s of output o goes: the output itself (one slice), or its place among the partials.
__device__ __forceinline__ void mean_put(const mean_plan &p, int64_t o, int64_t s, double sum, float *y, double *part) {
  if (p.slices == 1) y[o] = (float)(sum / p.divisor);
  else part[o * p.slices + s] = sum;
}

// -- kernels ----

// The last dim reduced: block (x, y) sums slice x of output y (and y + gridDim.y, ...). The slice's
// elements are runs of the last dim (length L, stride 1); a run's offset comes from one walk over
// the other reduced dims, then the threads read it in float4s, four at a time.
static __global__ void mean_rows_kernel(mean_plan p, const float *__restrict__ x, float *__restrict__ y,
                                        double *__restrict__ part) {
  __shared__ double scratch[32];
  const int64_t L = p.red_size[p.nred - 1], bd = blockDim.x, s = blockIdx.x;
  const int64_t r0 = s * p.per_slice, r1 = r0 + p.per_slice < p.reduce_numel ? r0 + p.per_slice : p.reduce_numel;
  for (int64_t o = blockIdx.y; o < p.out_numel; o += gridDim.y) {
    const int64_t base = kept_offset(p, o, p.nkept);
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    for (int64_t r = r0; r < r1;) {
      const int64_t q = r / L, j = r - q * L, len = L - j < r1 - r ? L - j : r1 - r;
      const float *xr = x + base + reduced_offset(p, q, p.nred - 1) + j;
      // up to 3 elements to a 16-byte boundary, then float4s four at a time, then the tail
      const int64_t head = volua_head16(xr, len);
      if (threadIdx.x < head) a0 += xr[threadIdx.x];
      const float4 *x4 = reinterpret_cast<const float4 *>(xr + head);
      const int64_t n4 = (len - head) / 4;
      int64_t t = threadIdx.x;
      for (; t + 3 * bd < n4; t += 4 * bd) { // four loads in flight a thread, then their sums
        float4 u[4];
#pragma unroll
        for (int k = 0; k < 4; k++) u[k] = x4[t + k * bd];
#pragma unroll
        for (int k = 0; k < 4; k++) {
          a0 += u[k].x;
          a1 += u[k].y;
          a2 += u[k].z;
          a3 += u[k].w;
        }
      }
      for (; t < n4; t += bd) {
        const float4 u = x4[t];
        a0 += u.x;
        a1 += u.y;
        a2 += u.z;
        a3 += u.w;
      }
      for (int64_t e = head + 4 * n4 + threadIdx.x; e < len; e += bd) a0 += xr[e];
      r += len;
    }
    const double sum = volua_block_sum((a0 + a1) + (a2 + a3), scratch);
    if (threadIdx.x == 0) mean_put(p, o, s, sum, y, part);
  }
}

// The last dim kept (I outputs a row): thread i of block (x, y) takes inner outputs V * i .. V * i +
// V - 1 (V 4: I a multiple of 4, so that every row start is 16-byte aligned; else 1) of outer output
// oo and slice s, (oo, s) = divmod(y, slices), and walks its slice's reduced elements: one reduced
// dim by a strided loop, four loads at a time; more by an odometer (started by one division per dim).
template <int V> __device__ __forceinline__ void load_v(float (&u)[V], const float *p) {
  if constexpr (V == 4) {
    const float4 w = *reinterpret_cast<const float4 *>(p);
    u[0] = w.x;
    u[1] = w.y;
    u[2] = w.z;
    u[3] = w.w;
  } else {
    u[0] = *p;
  }
}
template <int V> __device__ __forceinline__ void add_v(double (&acc)[V], const float *p) {
  float u[V];
  load_v<V>(u, p);
#pragma unroll
  for (int v = 0; v < V; v++) acc[v] += u[v];
}
template <int V>
static __global__ void mean_cols_kernel(mean_plan p, const float *__restrict__ x, float *__restrict__ y,
                                        double *__restrict__ part) {
  const int nk = p.nkept - 1, nr = p.nred;
  const int64_t I = p.kept_size[nk], outer = p.out_numel / I;
  const int64_t i = V * ((int64_t)blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= I) return;
  for (int64_t yy = blockIdx.y; yy < outer * p.slices; yy += gridDim.y) {
    const int64_t oo = yy / p.slices, s = yy - oo * p.slices;
    const int64_t r0 = s * p.per_slice, r1 = r0 + p.per_slice < p.reduce_numel ? r0 + p.per_slice : p.reduce_numel;
    const float *xo = x + kept_offset(p, oo, nk) + i;
    double a0[V], a1[V];
#pragma unroll
    for (int v = 0; v < V; v++) a0[v] = a1[v] = 0.0;
    if (nr == 1) { // one reduced dim: a plain strided loop, four loads in flight, then their sums
      const int64_t st = p.red_stride[0];
      int64_t r = r0;
      for (; r + 3 < r1; r += 4) {
        float u[4][V];
#pragma unroll
        for (int k = 0; k < 4; k++) load_v<V>(u[k], xo + (r + k) * st);
#pragma unroll
        for (int k = 0; k < 4; k++)
#pragma unroll
          for (int v = 0; v < V; v++) (k & 1 ? a1 : a0)[v] += u[k][v];
      }
      for (; r < r1; r++) add_v<V>(a0, xo + r * st);
    } else {
      int64_t coord[VOLUA_MEAN_MAX_DIMS], off = 0, rest = r0;
#pragma unroll
      for (int k = VOLUA_MEAN_MAX_DIMS - 1; k >= 0; k--) {
        coord[k] = 0;
        if (k >= nr) continue;
        coord[k] = rest % p.red_size[k];
        rest /= p.red_size[k];
        off += coord[k] * p.red_stride[k];
      }
      for (int64_t r = r0; r < r1; r++) {
        add_v<V>(a0, xo + off);
        reduced_next(p, coord, off, nr);
      }
    }
#pragma unroll
    for (int v = 0; v < V; v++) mean_put(p, oo * I + i + v, s, a0[v] + a1[v], y, part);
  }
}

// Small reductions: a thread per output, the reduced dims walked like an odometer.
static __global__ void mean_thread_kernel(mean_plan p, const float *__restrict__ x, float *__restrict__ y) {
  VOLUA_GRID_LOOP(o, p.out_numel) {
    int64_t off = kept_offset(p, o, p.nkept), coord[VOLUA_MEAN_MAX_DIMS];
#pragma unroll
    for (int k = 0; k < VOLUA_MEAN_MAX_DIMS; k++) coord[k] = 0;
    double s = 0.0;
    for (int64_t r = 0; r < p.reduce_numel; r++) {
      s += (double)x[off];
      reduced_next(p, coord, off, p.nred);
    }
    y[o] = (float)(s / p.divisor);
  }
}

// Everything reduced (one output): common.cuh's whole-run walk over the grid's blocks, each block's
// sum to part[blockIdx.x] (mean_finish_kernel adds them, with p.slices = the grid's blocks). (The
// rows kernel above, a slice of the run a block, ran it at 0.96x PyTorch on the H200.)
static __global__ void mean_all_kernel(int64_t n, const float *__restrict__ x, double *__restrict__ part) {
  __shared__ double scratch[32];
  const volua_sum_state r = volua_reduce_f32_thread<volua_sum_state>(n, x);
  const double sum = volua_block_sum(r.value(), scratch);
  if (threadIdx.x == 0) part[blockIdx.x] = sum;
}

// Each output a contiguous run of p.reduce_numel values (after coalescing, one kept dim and one
// reduced dim, the last): task t = o * p.slices + s sums slice s of output o, a block a task, the tasks
// over a grid of as many blocks as fit at once. (mean_rows_kernel, a grid of (slice, output) blocks
// of 62 registers, ran a mean over (D, H, W) of (8, 32, 32, 128, 128) at 0.92x PyTorch on the H200.)
static __global__ void mean_runs_kernel(mean_plan p, const float *__restrict__ x, float *__restrict__ y,
                                        double *__restrict__ part) {
  __shared__ double scratch[32];
  const int64_t tasks = p.out_numel * p.slices;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int64_t o = t / p.slices, s = t - o * p.slices, lo = s * p.per_slice;
    const int64_t len = p.per_slice < p.reduce_numel - lo ? p.per_slice : p.reduce_numel - lo;
    const volua_sum_state r = volua_reduce_f32_block_run<volua_sum_state>(x + o * p.reduce_numel + lo, len);
    const double sum = volua_block_sum(r.value(), scratch);
    if (threadIdx.x == 0) mean_put(p, o, s, sum, y, part);
  }
}

// Output o: its slices' sums added by a block, threads striding over them and then the block's
// fixed tree (the same order every run). (A thread per output added 1056 sums in 69 us for a mean
// of everything: one dependent load after the other.)
static __global__ void mean_finish_kernel(mean_plan p, const double *__restrict__ part, float *__restrict__ y) {
  __shared__ double scratch[32];
  for (int64_t o = blockIdx.x; o < p.out_numel; o += gridDim.x) {
    double s = 0.0;
    for (int64_t k = threadIdx.x; k < p.slices; k += blockDim.x) s += part[o * p.slices + k];
    s = volua_block_sum(s, scratch);
    if (threadIdx.x == 0) y[o] = (float)(s / p.divisor);
  }
}

// -- launcher ----

#define MEAN_THREAD_LIMIT 256 /* reductions this small run one per thread */
#define MEAN_MIN_RUN 64       /* mean_rows_kernel where the last dim's runs are at least this long */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Each output's reduction in slices: as many as `want` blocks over `units` blocks an output ask
// for, but each of at least `least` elements.
static void mean_slices(mean_plan &p, int64_t want, int64_t units, int64_t least) {
  int64_t sl = cdiv(want, units), most = p.reduce_numel / least;
  if (sl > most) sl = most;
  if (sl < 1) sl = 1;
  p.per_slice = cdiv(p.reduce_numel, sl);
  p.slices = cdiv(p.reduce_numel, p.per_slice);
}

static int launch_mean(const volua_mean_geom *g, const float *x, float *y, cudaStream_t s, char *err) {
  const char *op = g->sum ? "sum" : "mean";
  if (g->out_numel <= 0) return 0;
  mean_plan p;
  memset(&p, 0, sizeof p);
  p.out_numel = g->out_numel;
  p.reduce_numel = g->reduce_numel;
  p.divisor = g->sum ? 1.0 : (double)g->reduce_numel;
  // coalesced dims, outermost first (size-1 dims dropped, neighbours of one kind merged: common.cuh)
  int kinds[VOLUA_MEAN_MAX_DIMS];
  int64_t sizes[VOLUA_MEAN_MAX_DIMS];
  const int n = volua_coalesce_dims(g, kinds, sizes);
  volua_split_dims(p, n, kinds, sizes);
  const bool last_kept = n > 0 && !kinds[n - 1]; // (the last kept dim is then the input's innermost)
  p.slices = 1;
  p.per_slice = p.reduce_numel;
  // a thread per output where the reduction is small, unless the last dim is kept and at least 32
  // long (then neighbouring outputs are neighbouring inputs: mean_cols_kernel reads them as float4s;
  // a thread per output ran a mean over C of (8, 32, 32, 128, 128) at 1.3 TB/s)
  const bool cols_small = last_kept && p.kept_size[p.nkept - 1] >= 32;
  if (p.nred == 0 || p.reduce_numel == 0 || (p.reduce_numel <= MEAN_THREAD_LIMIT && !cols_small)) {
    mean_thread_kernel<<<volua_grid_for(p.out_numel, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(p, x, y);
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  if (p.nkept == 0) { // one output: blocks as fit at once (fewer for short runs), then their sums added
    static int64_t resident = 0;
    if (!resident) resident = volua_resident_blocks(mean_all_kernel, VOLUA_THREADS);
    const int64_t tiles = cdiv(p.reduce_numel / 4, 4 * VOLUA_THREADS);
    p.slices = tiles < resident ? tiles : resident;
    if (p.slices < 1) p.slices = 1;
    double *part = NULL;
    if (volua_cuda_malloc((void **)&part, p.slices * (int64_t)sizeof(double), err)) return 1;
    mean_all_kernel<<<(unsigned)p.slices, VOLUA_THREADS, 0, s>>>(p.reduce_numel, x, part);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
      mean_finish_kernel<<<1, 128, 0, s>>>(p, part, y);
      e = cudaGetLastError();
    }
    volua_cuda_free(part);
    if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
    return 0;
  }
  if (!last_kept && p.nred == 1) { // contiguous runs: mean_runs_kernel, slices of at least 8192 values
    static int64_t resident = 0;
    if (!resident) resident = volua_resident_blocks(mean_runs_kernel, VOLUA_THREADS);
    const int64_t sl = volua_chunks_per_item(p.out_numel, p.reduce_numel, 8192, resident);
    p.per_slice = cdiv(cdiv(p.reduce_numel, sl), 4) * 4; // (a multiple of 4: the slices keep x's alignment)
    p.slices = cdiv(p.reduce_numel, p.per_slice);
    const int64_t tasks = p.out_numel * p.slices;
    double *part = NULL;
    if (p.slices > 1 && volua_cuda_malloc((void **)&part, tasks * (int64_t)sizeof(double), err)) return 1;
    mean_runs_kernel<<<(unsigned)(tasks < resident ? tasks : resident), VOLUA_THREADS, 0, s>>>(p, x, y, part);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && p.slices > 1) {
      mean_finish_kernel<<<volua_grid_for(p.out_numel, 1), 128, 0, s>>>(p, part, y);
      e = cudaGetLastError();
    }
    volua_cuda_free(part);
    if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
    return 0;
  }
  int sms = 0;
  if (volua_sm_count(&sms) != cudaSuccess || sms < 1) {
    (void)cudaGetLastError();
    sms = 16;
  }
  const int64_t want = (int64_t)sms * 8; // blocks to fill the GPU
  dim3 grid;
  int cols4 = 0; // mean_cols_kernel<4>
  const bool rows = !last_kept && p.red_size[p.nred - 1] >= MEAN_MIN_RUN;
  if (rows) { // slices of at least 8192 elements
    mean_slices(p, want, p.out_numel, 8192);
    grid = dim3((unsigned)p.slices, (unsigned)(p.out_numel < 65535 ? p.out_numel : 65535));
  } else if (last_kept) { // slices of at least 64 elements a thread
    const int64_t I = p.kept_size[p.nkept - 1], outer = p.out_numel / I;
    cols4 = I % 4 == 0 && ((uintptr_t)x & 15) == 0;
    const int64_t bx = cdiv(I, (int64_t)VOLUA_THREADS * (cols4 ? 4 : 1));
    mean_slices(p, want, bx * outer, 64);
    const int64_t gy = outer * p.slices;
    if (bx > 0x7fffffff) {
      snprintf(err, VOLUA_ERR_MAX, "%s: %lld outputs along the last dim are too many", op, (long long)I);
      return 1;
    }
    grid = dim3((unsigned)bx, (unsigned)(gy < 65535 ? gy : 65535));
  } else { // the last dim reduced in short runs: a thread per output
    mean_thread_kernel<<<volua_grid_for(p.out_numel, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(p, x, y);
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  double *part = NULL;
  if (p.slices > 1 && volua_cuda_malloc((void **)&part, p.out_numel * p.slices * (int64_t)sizeof(double), err)) return 1;
  if (rows) mean_rows_kernel<<<grid, VOLUA_THREADS, 0, s>>>(p, x, y, part);
  else if (cols4) mean_cols_kernel<4><<<grid, VOLUA_THREADS, 0, s>>>(p, x, y, part);
  else mean_cols_kernel<1><<<grid, VOLUA_THREADS, 0, s>>>(p, x, y, part);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && p.slices > 1) {
    mean_finish_kernel<<<volua_grid_for(p.out_numel, 1), 128, 0, s>>>(p, part, y);
    e = cudaGetLastError();
  }
  volua_cuda_free(part); // (stream-ordered: the caching allocator reuses it only after this stream's work)
  if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
  return 0;
}

// -- entry ----

extern "C" int volua_cuda_mean(const volua_mean_geom *g, const float *x, float *y, cudaStream_t s, char *err) {
  if (g->ndim < 0 || g->ndim > VOLUA_MEAN_MAX_DIMS) {
    snprintf(err, VOLUA_ERR_MAX, "%s: rank %d is outside 0..%d", g->sum ? "sum" : "mean", g->ndim, VOLUA_MEAN_MAX_DIMS);
    return 1;
  }
  return launch_mean(g, x, y, s, err);
}
