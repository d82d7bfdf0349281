// elementwise.cu: tensor arithmetic with broadcasting, fills, dtype conversion and whole-tensor
// reductions (sum, max, min, max_abs_diff, allclose), matching src/cpu/elementwise.c.
// The ops here, by name:
//   binary: add, sub, mul, div, maximum, minimum (bin_f32, bin_i64, scalar_f32_rule)
//   unary: neg, abs, relu (unary_f32_rule); the activations, one rule each (<name>_rule, under
//     "activations"): tanh, sigmoid, exp, log, sqrt, gelu, gelu_tanh, silu, mish, softplus, elu,
//     leaky_relu, hardswish, hardsigmoid, clamp (hardtanh is clamp; clamp_i64_kernel for int64)
//   fill, convert, reduce (sum, max, min), max_abs_diff, allclose
#include <math.h>
#include <stdint.h>
#include <type_traits>

#include "common.cuh"
#include "elementwise_rules.cuh"

// -- element rules, shared by the kernels below (the CPU's, in src/cpu/elementwise.c) ----

// int64 arithmetic wraps around (two's complement), as torch's; division never gets here
// (the op layer computes it in float32).
__device__ __forceinline__ int64_t bin_i64(int64_t a, int64_t b, int op) {
  uint64_t x = (uint64_t)a, y = (uint64_t)b;
  switch (op) {
  case VOLUA_BIN_ADD: return (int64_t)(x + y);
  case VOLUA_BIN_SUB: return (int64_t)(x - y);
  case VOLUA_BIN_MAXIMUM: return max_nan(a, b);
  case VOLUA_BIN_MINIMUM: return min_nan(a, b);
  default: return (int64_t)(x * y);
  }
}

__device__ __forceinline__ float bin(float a, float b, int op) { return bin_f32(a, b, op); }
__device__ __forceinline__ int64_t bin(int64_t a, int64_t b, int op) { return bin_i64(a, b, op); }

struct binary_f32_rule {
  int op;
  __device__ __forceinline__ float operator()(float a, float b) const { return bin_f32(a, b, op); }
};

// -- contiguous float32: 16-byte accesses where the pointers are 16-byte aligned ----
// One element a thread and a block per 256 elements wrote 1.43 TB/s on the H200 (a 571 MB fill);
// 16-byte accesses wrote 4.1 TB/s (bench/overlap_probe.cu). Each thread takes MAP_UNROLL float4s a
// block apart and issues all their loads before any store, so that enough bytes are in flight
// (bench/NOTES.md, ninth session, bench/ops.py). F is the op's rule for one element (the
// functors above); the tail past the last multiple of 4, and misaligned pointers, go one at a time.
#define MAP_UNROLL 4

template <class F> static __global__ void map1_f32_kernel(int64_t n, int vec, const float *__restrict__ a,
                                                          float *__restrict__ y, F f) {
  const int64_t n4 = vec ? n / 4 : 0, tile = (int64_t)blockDim.x * MAP_UNROLL;
  for (int64_t i0 = (int64_t)blockIdx.x * tile + threadIdx.x; i0 < n4; i0 += (int64_t)gridDim.x * tile) {
    float4 v[MAP_UNROLL];
#pragma unroll
    for (int k = 0; k < MAP_UNROLL; k++)
      if (i0 + k * blockDim.x < n4) v[k] = reinterpret_cast<const float4 *>(a)[i0 + k * blockDim.x];
#pragma unroll
    for (int k = 0; k < MAP_UNROLL; k++)
      if (i0 + k * blockDim.x < n4)
        reinterpret_cast<float4 *>(y)[i0 + k * blockDim.x] = make_float4(f(v[k].x), f(v[k].y), f(v[k].z), f(v[k].w));
  }
  VOLUA_GRID_LOOP(j, n - 4 * n4) y[4 * n4 + j] = f(a[4 * n4 + j]);
}

template <class F> static __global__ void map2_f32_kernel(int64_t n, int vec, const float *__restrict__ a,
                                                          const float *__restrict__ b, float *__restrict__ y, F f) {
  const int64_t n4 = vec ? n / 4 : 0, tile = (int64_t)blockDim.x * MAP_UNROLL;
  for (int64_t i0 = (int64_t)blockIdx.x * tile + threadIdx.x; i0 < n4; i0 += (int64_t)gridDim.x * tile) {
    float4 u[MAP_UNROLL], v[MAP_UNROLL];
#pragma unroll
    for (int k = 0; k < MAP_UNROLL; k++)
      if (i0 + k * blockDim.x < n4) {
        u[k] = reinterpret_cast<const float4 *>(a)[i0 + k * blockDim.x];
        v[k] = reinterpret_cast<const float4 *>(b)[i0 + k * blockDim.x];
      }
#pragma unroll
    for (int k = 0; k < MAP_UNROLL; k++)
      if (i0 + k * blockDim.x < n4)
        reinterpret_cast<float4 *>(y)[i0 + k * blockDim.x] =
            make_float4(f(u[k].x, v[k].x), f(u[k].y, v[k].y), f(u[k].z, v[k].z), f(u[k].w, v[k].w));
  }
  VOLUA_GRID_LOOP(j, n - 4 * n4) y[4 * n4 + j] = f(a[4 * n4 + j], b[4 * n4 + j]);
}

static __global__ void fill_f32_kernel(int64_t n, int vec, float *__restrict__ y, float v) {
  const int64_t n4 = vec ? n / 4 : 0, tile = (int64_t)blockDim.x * MAP_UNROLL;
  for (int64_t i0 = (int64_t)blockIdx.x * tile + threadIdx.x; i0 < n4; i0 += (int64_t)gridDim.x * tile)
#pragma unroll
    for (int k = 0; k < MAP_UNROLL; k++)
      if (i0 + k * blockDim.x < n4) reinterpret_cast<float4 *>(y)[i0 + k * blockDim.x] = make_float4(v, v, v, v);
  VOLUA_GRID_LOOP(j, n - 4 * n4) y[4 * n4 + j] = v;
}

static inline int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// Blocks for the loops above: one per MAP_UNROLL float4s a thread (all of n where it is aligned),
// at most the grid-stride cap.
static inline unsigned map_grid(int64_t n) { return volua_grid_for((n + 3) / 4, VOLUA_THREADS * MAP_UNROLL); }

// -- binary with broadcasting ----

template <typename T>
static __global__ void binary_contiguous_kernel(int64_t n, const T *__restrict__ a, const T *__restrict__ b,
                                         T *__restrict__ y, int op) {
  VOLUA_GRID_LOOP(i, n) y[i] = bin(a[i], b[i], op);
}

// The offsets in a and b of index `rest` over dims [0, nd) of the broadcast (strides 0 on broadcast
// dims), added to oa and ob.
__device__ __forceinline__ void bcast_offsets(const volua_bcast_geom &g, int64_t rest, int nd, int64_t &oa, int64_t &ob) {
  for (int d = nd - 1; d >= 0; d--) {
    const int64_t k = rest % g.shape[d];
    rest /= g.shape[d];
    oa += k * g.stride_a[d];
    ob += k * g.stride_b[d];
  }
}

// Offsets of output element i in a and b through their broadcast strides (0 on broadcast dims).
template <typename T>
static __global__ void binary_bcast_kernel(volua_bcast_geom g, const T *__restrict__ a, const T *__restrict__ b,
                                    T *__restrict__ y, int op) {
  VOLUA_GRID_LOOP(i, g.numel) {
    int64_t oa = 0, ob = 0;
    bcast_offsets(g, i, g.ndim, oa, ob);
    y[i] = bin(a[oa], b[ob], op);
  }
}

// Rows of a coalesced broadcast (bcast_coalesce): the output's last dim, W long, in rows
// r = blockIdx.y, blockIdx.y + gridDim.y, ...; a row's first offsets in a and b from one div/mod
// walk over the outer dims (by one thread a block), then MAP_UNROLL groups of 4 consecutive elements a
// thread at column steps sa, sb. With VEC
// (float32; every operand's last-dim step 0 or 1, W and the row starts of stride-1 operands
// multiples of 4, 16-byte aligned pointers) an operand of step 1 is one float4 load, one of step 0 a
// single load. (The per-element walk above, over 5 dims with a division and a modulo each, ran a
// per-channel multiply of a 537 MB volume at 0.73 TB/s on the H200, 0.27x PyTorch.)
template <typename T, bool VEC>
static __global__ void binary_rows_kernel(volua_bcast_geom g, const T *__restrict__ a, const T *__restrict__ b,
                                          T *__restrict__ y, int op) {
  __shared__ int64_t row_off[2]; // the row's first offsets in a and b, worked out by thread 0
  const int last = g.ndim - 1;
  const int64_t W = g.shape[last], sa = g.stride_a[last], sb = g.stride_b[last], rows = g.numel / W;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    if (threadIdx.x == 0) {
      int64_t oa = 0, ob = 0;
      bcast_offsets(g, r, last, oa, ob);
      row_off[0] = oa;
      row_off[1] = ob;
    }
    __syncthreads();
    const int64_t oa = row_off[0], ob = row_off[1];
    T *yr = y + r * W;
    const int64_t tile = 4 * (int64_t)blockDim.x * MAP_UNROLL; // a block's columns per pass
    for (int64_t w0 = (int64_t)blockIdx.x * tile + 4 * threadIdx.x; w0 < W; w0 += (int64_t)gridDim.x * tile) {
      if constexpr (VEC) { // MAP_UNROLL float4s a block apart, loads before stores (as map1_f32_kernel)
        float4 u[MAP_UNROLL], v[MAP_UNROLL];
#pragma unroll
        for (int k = 0; k < MAP_UNROLL; k++) {
          const int64_t w = w0 + 4 * (int64_t)k * blockDim.x;
          if (w < W) {
            u[k] = sa ? *reinterpret_cast<const float4 *>(a + oa + w) : make_float4(a[oa], a[oa], a[oa], a[oa]);
            v[k] = sb ? *reinterpret_cast<const float4 *>(b + ob + w) : make_float4(b[ob], b[ob], b[ob], b[ob]);
          }
        }
#pragma unroll
        for (int k = 0; k < MAP_UNROLL; k++) {
          const int64_t w = w0 + 4 * (int64_t)k * blockDim.x;
          if (w < W)
            *reinterpret_cast<float4 *>(yr + w) =
                make_float4(bin(u[k].x, v[k].x, op), bin(u[k].y, v[k].y, op), bin(u[k].z, v[k].z, op), bin(u[k].w, v[k].w, op));
        }
      } else {
        for (int k = 0; k < MAP_UNROLL; k++) {
          const int64_t w = w0 + 4 * (int64_t)k * blockDim.x, n = W - w < 4 ? W - w : 4;
          for (int64_t e = 0; e < n; e++) yr[w + e] = bin(a[oa + (w + e) * sa], b[ob + (w + e) * sb], op);
        }
      }
    }
    __syncthreads(); // every thread has read row_off before thread 0 writes the next row's
  }
}

// -- with a scalar ----

static __global__ void binary_scalar_i64_kernel(int64_t n, const int64_t *__restrict__ a, int64_t s,
                                         int64_t *__restrict__ y, int op, int scalar_first) {
  VOLUA_GRID_LOOP(i, n) y[i] = scalar_first ? bin_i64(s, a[i], op) : bin_i64(a[i], s, op);
}

// -- unary, fill, convert ----

static __global__ void unary_i64_kernel(int64_t n, const int64_t *__restrict__ a, int64_t *__restrict__ y, int op) {
  VOLUA_GRID_LOOP(i, n) {
    int64_t v = a[i];
    int64_t neg = (int64_t)(0 - (uint64_t)v);
    y[i] = op == VOLUA_UN_NEG ? neg : op == VOLUA_UN_ABS ? (v < 0 ? neg : v) : (v < 0 ? 0 : v);
  }
}

static __global__ void clamp_i64_kernel(int64_t n, const int64_t *__restrict__ a, int64_t *__restrict__ y,
                                        int64_t lo, int64_t hi) {
  VOLUA_GRID_LOOP(i, n) {
    const int64_t r = a[i] < lo ? lo : a[i];
    y[i] = hi < r ? hi : r;
  }
}

// An int64 clamp bound from its double (-inf and +inf: no bound), as the CPU's bound_i64.
static inline int64_t bound_i64(double v) { return v <= -0x1p63 ? INT64_MIN : v >= 0x1p63 ? INT64_MAX : (int64_t)v; }

static __global__ void fill_i64_kernel(int64_t n, int64_t *__restrict__ y, int64_t v) {
  VOLUA_GRID_LOOP(i, n) y[i] = v;
}

static __global__ void f32_to_i64_kernel(int64_t n, const float *__restrict__ s, int64_t *__restrict__ d) {
  VOLUA_GRID_LOOP(i, n) {
    // truncation toward zero, as torch; NaN -> 0 and saturation, as the CPU
    float v = s[i];
    d[i] = isnan(v) ? 0
           : v >= 9.2233720368547758e18f  ? INT64_MAX
           : v <= -9.2233720368547758e18f ? INT64_MIN
                                          : (int64_t)v;
  }
}

static __global__ void i64_to_f32_kernel(int64_t n, const int64_t *__restrict__ s, float *__restrict__ d) {
  VOLUA_GRID_LOOP(i, n) d[i] = (float)s[i];
}

// -- reductions: two stages, per-block partials in double, then one block over the partials ----

struct sum_op {
  static __device__ __forceinline__ double identity() { return 0.0; }
  static __device__ __forceinline__ double combine(double a, double b) { return a + b; }
};
// max and min propagate NaN, like torch.max()
// (combine in float for float32 inputs too: the same choices, so the same result)
struct max_op {
  static __device__ __forceinline__ double identity() { return -INFINITY; }
  template <typename V> static __device__ __forceinline__ V combine(V a, V b) {
    return isnan(a) ? a : isnan(b) ? b : (a > b ? a : b);
  }
};
struct min_op {
  static __device__ __forceinline__ double identity() { return INFINITY; }
  template <typename V> static __device__ __forceinline__ V combine(V a, V b) {
    return isnan(a) ? a : isnan(b) ? b : (a < b ? a : b);
  }
};

// Per-element values fed to the reduction.
template <typename T>
struct load_value {
  const T *a;
  __device__ __forceinline__ double operator()(int64_t i) const { return (double)a[i]; }
};
// |a - b|, NaN where exactly one side is NaN, 0 where both are NaN or both equal (inf == inf).
template <typename T>
struct abs_diff_value {
  const T *a, *b;
  __device__ __forceinline__ double operator()(int64_t i) const {
    double x = (double)a[i], y = (double)b[i];
    if (isnan(x) && isnan(y)) return 0.0;
    if (isnan(x) || isnan(y)) return NAN;
    if (x == y) return 0.0;
    return fabs(x - y);
  }
};
// 1 where a[i] is not close to b[i], as torch.isclose: equal (inf == inf), both NaN with
// equal_nan, or a finite |a - b| <= atol + rtol * |b|.
template <typename T>
struct not_close_value {
  const T *a, *b;
  double rtol, atol;
  int equal_nan;
  __device__ __forceinline__ double operator()(int64_t i) const {
    double x = (double)a[i], y = (double)b[i];
    if (x == y) return 0.0;
    if (isnan(x) || isnan(y)) return equal_nan && isnan(x) && isnan(y) ? 0.0 : 1.0;
    double d = fabs(x - y);
    return isfinite(d) && d <= atol + rtol * fabs(y) ? 0.0 : 1.0;
  }
};

template <typename Op>
__device__ __forceinline__ double block_reduce(double v, double *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double r = Op::identity();
  if (warp == 0) {
    r = lane < nwarps ? scratch[lane] : Op::identity();
    for (int o = 16; o > 0; o >>= 1) r = Op::combine(r, __shfl_down_sync(0xffffffffu, r, o));
  }
  return r;
}

template <typename Op, typename F>
static __global__ void reduce_partial_kernel(int64_t n, F f, double *__restrict__ partial) {
  __shared__ double scratch[32];
  double v = Op::identity();
  VOLUA_GRID_LOOP(i, n) v = Op::combine(v, f(i));
  v = block_reduce<Op>(v, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

// float32 sum, max and min: common.cuh's whole-run walk (float4s, four in flight a thread), R its
// per-thread state (sums in double; max and min in float, exact), folded over the block in double.
template <class R, typename Op>
static __global__ void reduce_f32_kernel(int64_t n, const float *__restrict__ a, double *__restrict__ partial) {
  __shared__ double scratch[32];
  const R r = volua_reduce_f32_thread<R>(n, a);
  const double v = block_reduce<Op>(r.value(), scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

template <typename Op>
static __global__ void reduce_final_kernel(int64_t n, const double *__restrict__ partial, double *__restrict__ out) {
  __shared__ double scratch[32];
  double v = Op::identity();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) v = Op::combine(v, partial[i]);
  v = block_reduce<Op>(v, scratch);
  if (threadIdx.x == 0) *out = v;
}

#define REDUCE_BLOCKS 4096 /* partials at most */

// The second stage and the copy out: the partials' fold to scratch[REDUCE_BLOCKS], copied to *result,
// the stream waited on.
template <typename Op>
static int reduce_finish(const char *op, unsigned blocks, double *scratch, double *result, cudaStream_t s, char *err) {
  reduce_final_kernel<Op><<<1, 1024, 0, s>>>((int64_t)blocks, scratch, scratch + REDUCE_BLOCKS);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpyAsync(result, scratch + REDUCE_BLOCKS, sizeof(double), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return 0;
}

// scratch holds REDUCE_BLOCKS + 1 doubles. F: a per-element value functor.
template <typename Op, typename F>
static int launch_reduce(const char *op, int64_t n, F f, double *scratch, double *result, cudaStream_t s,
                         char *err) {
  unsigned blocks = volua_grid_for(n, VOLUA_THREADS);
  if (blocks > 1024) blocks = 1024;
  reduce_partial_kernel<Op, F><<<blocks, VOLUA_THREADS, 0, s>>>(n, f, scratch);
  CUDA_CHECK_LAUNCH();
  return reduce_finish<Op>(op, blocks, scratch, result, s, err);
}

// float32 sum, max, min: reduce_f32_kernel on as many blocks as fit at once (fewer for short runs).
template <class R, typename Op>
static int launch_reduce_f32(const char *op, int64_t n, const float *a, double *scratch, double *result,
                             cudaStream_t s, char *err) {
  static int64_t resident = 0;
  if (!resident) resident = volua_resident_blocks(reduce_f32_kernel<R, Op>, VOLUA_THREADS);
  const int64_t tiles = (n / 4 + 4 * VOLUA_THREADS - 1) / (4 * VOLUA_THREADS);
  int64_t blocks = tiles < resident ? tiles : resident;
  if (blocks > REDUCE_BLOCKS) blocks = REDUCE_BLOCKS;
  if (blocks < 1) blocks = 1;
  reduce_f32_kernel<R, Op><<<(unsigned)blocks, VOLUA_THREADS, 0, s>>>(n, a, scratch);
  CUDA_CHECK_LAUNCH();
  return reduce_finish<Op>(op, (unsigned)blocks, scratch, result, s, err);
}

// Which reduction, on which values.
typedef enum { RED_PLAIN, RED_ABS_DIFF, RED_NOT_CLOSE } reduce_kind;
typedef struct {
  reduce_kind kind;
  volua_reduce_op op; /* RED_PLAIN only */
  double rtol, atol;
  int equal_nan;
} reduce_job;

template <typename T>
static int launch_reduce_typed(const char *op, const reduce_job *j, int64_t n, const T *a, const T *b,
                               double *scratch, double *result, cudaStream_t s, char *err) {
  switch (j->kind) {
  case RED_ABS_DIFF:
    return launch_reduce<max_op>(op, n, abs_diff_value<T>{a, b}, scratch, result, s, err);
  case RED_NOT_CLOSE:
    return launch_reduce<max_op>(op, n, not_close_value<T>{a, b, j->rtol, j->atol, j->equal_nan},
                                 scratch, result, s, err);
  default:
    if constexpr (std::is_same<T, float>::value) {
      const float *f = (const float *)a;
      if (j->op == VOLUA_RED_SUM) return launch_reduce_f32<volua_sum_state, sum_op>(op, n, f, scratch, result, s, err);
      if (j->op == VOLUA_RED_MAX)
        return launch_reduce_f32<volua_extreme_state<true>, max_op>(op, n, f, scratch, result, s, err);
      return launch_reduce_f32<volua_extreme_state<false>, min_op>(op, n, f, scratch, result, s, err);
    }
    if (j->op == VOLUA_RED_SUM) return launch_reduce<sum_op>(op, n, load_value<T>{a}, scratch, result, s, err);
    if (j->op == VOLUA_RED_MAX) return launch_reduce<max_op>(op, n, load_value<T>{a}, scratch, result, s, err);
    return launch_reduce<min_op>(op, n, load_value<T>{a}, scratch, result, s, err);
  }
}

// Allocates the partials, runs the reduction, frees the partials whatever happened.
static int run_reduce(const char *op, const reduce_job *j, int64_t n, int dt, const void *a, const void *b,
                      double *result, cudaStream_t s, char *err) {
  double *scratch = NULL;
  if (volua_cuda_malloc((void **)&scratch, (REDUCE_BLOCKS + 1) * (int64_t)sizeof(double), err)) return 1;
  int rc = dt == VOLUA_INT64
               ? launch_reduce_typed(op, j, n, (const int64_t *)a, (const int64_t *)b, scratch, result, s, err)
               : launch_reduce_typed(op, j, n, (const float *)a, (const float *)b, scratch, result, s, err);
  volua_cuda_free(scratch);
  return rc;
}

// -- launchers ----

// The same broadcast with fewer dims: size-1 dims dropped, and a dim merged into the next where
// both operands step over it as over a contiguous block of the next (the output is contiguous).
// A per-channel factor on (N, C, D, H, W) becomes (N, C, D*H*W) with steps (0, 1, 0).
static volua_bcast_geom bcast_coalesce(const volua_bcast_geom *g) {
  volua_bcast_geom c = *g;
  int n = 0;
  for (int d = 0; d < g->ndim; d++) {
    if (g->shape[d] == 1) continue;
    if (n > 0 && c.stride_a[n - 1] == g->stride_a[d] * g->shape[d] && c.stride_b[n - 1] == g->stride_b[d] * g->shape[d]) {
      c.shape[n - 1] *= g->shape[d];
      c.stride_a[n - 1] = g->stride_a[d];
      c.stride_b[n - 1] = g->stride_b[d];
      continue;
    }
    c.shape[n] = g->shape[d];
    c.stride_a[n] = g->stride_a[d];
    c.stride_b[n] = g->stride_b[d];
    n++;
  }
  if (n == 0) { // every dim of size 1: one element
    c.shape[0] = 1;
    c.stride_a[0] = c.stride_b[0] = 0;
    n = 1;
  }
  c.ndim = n;
  return c;
}

// Whether binary_rows_kernel's float4 path applies: each operand's last-dim step is 0 or 1, and
// where it is 1, its row starts (every outer stride) are multiples of 4 and its pointer 16-byte aligned.
static int rows_vec_ok(const volua_bcast_geom *c, const void *a, const void *b, const void *y) {
  const int last = c->ndim - 1;
  if (c->shape[last] % 4 != 0 || ((uintptr_t)y & 15) != 0) return 0;
  const int64_t *st[2] = {c->stride_a, c->stride_b};
  const void *p[2] = {a, b};
  for (int o = 0; o < 2; o++) {
    if (st[o][last] == 0) continue;
    if (st[o][last] != 1 || ((uintptr_t)p[o] & 15) != 0) return 0;
    for (int d = 0; d < last; d++)
      if (st[o][d] % 4 != 0) return 0;
  }
  return 1;
}

static int launch_binary(const volua_bcast_geom *g, int dt, const void *a, const void *b, void *y,
                         volua_binop bop, cudaStream_t s, char *err) {
  const char *op = "binary";
  // No broadcast when both operands have the output's contiguous strides.
  int contiguous = 1;
  int64_t stride = 1;
  for (int d = g->ndim - 1; d >= 0; d--) {
    if (g->shape[d] != 1 && (g->stride_a[d] != stride || g->stride_b[d] != stride)) contiguous = 0;
    stride *= g->shape[d];
  }
  unsigned blocks = volua_grid_for(g->numel, VOLUA_THREADS);
  // Broadcasts whose rows (the coalesced last dim) are at least 256 long: by rows (binary_rows_kernel)
  const volua_bcast_geom c = bcast_coalesce(g);
  const int64_t W = c.shape[c.ndim - 1], rows = g->numel / W;
  if (!contiguous && W >= 256) {
    const unsigned gx = volua_grid_for((W + 3) / 4, VOLUA_THREADS * MAP_UNROLL);
    const dim3 grid(gx, (unsigned)(rows < 65535 ? rows : 65535));
    if (dt == VOLUA_INT64)
      binary_rows_kernel<int64_t, false><<<grid, VOLUA_THREADS, 0, s>>>(c, (const int64_t *)a, (const int64_t *)b,
                                                                        (int64_t *)y, (int)bop);
    else if (rows_vec_ok(&c, a, b, y))
      binary_rows_kernel<float, true><<<grid, VOLUA_THREADS, 0, s>>>(c, (const float *)a, (const float *)b, (float *)y,
                                                                     (int)bop);
    else
      binary_rows_kernel<float, false><<<grid, VOLUA_THREADS, 0, s>>>(c, (const float *)a, (const float *)b, (float *)y,
                                                                      (int)bop);
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  if (dt == VOLUA_INT64) {
    if (contiguous)
      binary_contiguous_kernel<int64_t><<<blocks, VOLUA_THREADS, 0, s>>>(
          g->numel, (const int64_t *)a, (const int64_t *)b, (int64_t *)y, (int)bop);
    else
      binary_bcast_kernel<int64_t><<<blocks, VOLUA_THREADS, 0, s>>>(c, (const int64_t *)a, (const int64_t *)b,
                                                                    (int64_t *)y, (int)bop);
  } else {
    if (contiguous)
      map2_f32_kernel<<<map_grid(g->numel), VOLUA_THREADS, 0, s>>>(
          g->numel, aligned16(a) && aligned16(b) && aligned16(y), (const float *)a, (const float *)b, (float *)y,
          binary_f32_rule{(int)bop});
    else
      binary_bcast_kernel<float><<<blocks, VOLUA_THREADS, 0, s>>>(c, (const float *)a, (const float *)b,
                                                                  (float *)y, (int)bop);
  }
  CUDA_CHECK_LAUNCH();
  return 0;
}

// -- entries ----

extern "C" int volua_cuda_binary(const volua_bcast_geom *g, int dt, const void *a, const void *b, void *y,
                                 volua_binop op, cudaStream_t s, char *err) {
  if (g->numel <= 0) return 0;
  return launch_binary(g, dt, a, b, y, op, s, err);
}

extern "C" int volua_cuda_binary_scalar(int64_t n, int dt, const void *a, double v, void *y, volua_binop bop,
                                        int scalar_first, cudaStream_t s, char *err) {
  const char *op = "binary_scalar";
  if (n <= 0) return 0;
  unsigned blocks = volua_grid_for(n, VOLUA_THREADS);
  if (dt == VOLUA_INT64) {
    // the op layer sends only whole, finite scalars here; the cast is the CPU's
    binary_scalar_i64_kernel<<<blocks, VOLUA_THREADS, 0, s>>>(n, (const int64_t *)a, (int64_t)v, (int64_t *)y,
                                                              (int)bop, scalar_first);
  } else {
    map1_f32_kernel<<<map_grid(n), VOLUA_THREADS, 0, s>>>(n, aligned16(a) && aligned16(y), (const float *)a, (float *)y,
                                                          scalar_f32_rule{(float)v, (int)bop, scalar_first});
  }
  CUDA_CHECK_LAUNCH();
  return 0;
}

// One float32 map of rule f over a[0, n) into y.
template <class F> static void map1_f32(int64_t n, const void *a, void *y, F f, cudaStream_t s) {
  map1_f32_kernel<<<map_grid(n), VOLUA_THREADS, 0, s>>>(n, aligned16(a) && aligned16(y), (const float *)a, (float *)y, f);
}

// The activations' float32 maps (the op layer sends only float32 here).
static void launch_activation(int64_t n, const void *a, void *y, volua_unop uop, const volua_unary_args *p,
                              cudaStream_t s) {
  switch (uop) {
  case VOLUA_UN_TANH: map1_f32(n, a, y, tanh_rule{}, s); break;
  case VOLUA_UN_SIGMOID: map1_f32(n, a, y, sigmoid_rule{}, s); break;
  case VOLUA_UN_EXP: map1_f32(n, a, y, exp_rule{}, s); break;
  case VOLUA_UN_LOG: map1_f32(n, a, y, log_rule{}, s); break;
  case VOLUA_UN_SQRT: map1_f32(n, a, y, sqrt_rule{}, s); break;
  case VOLUA_UN_GELU: map1_f32(n, a, y, gelu_rule{}, s); break;
  case VOLUA_UN_GELU_TANH: map1_f32(n, a, y, gelu_tanh_rule{}, s); break;
  case VOLUA_UN_SILU: map1_f32(n, a, y, silu_rule{}, s); break;
  case VOLUA_UN_MISH: map1_f32(n, a, y, mish_rule{}, s); break;
  case VOLUA_UN_SOFTPLUS: map1_f32(n, a, y, softplus_rule{p->p0, p->p1, (float)p->p0}, s); break;
  case VOLUA_UN_ELU: map1_f32(n, a, y, elu_rule{(float)p->p0}, s); break;
  case VOLUA_UN_LEAKY_RELU: map1_f32(n, a, y, leaky_relu_rule{(float)p->p0}, s); break;
  case VOLUA_UN_HARDSWISH: map1_f32(n, a, y, hardswish_rule{}, s); break;
  case VOLUA_UN_HARDSIGMOID: map1_f32(n, a, y, hardsigmoid_rule{}, s); break;
  default: map1_f32(n, a, y, clamp_rule{(float)p->p0, (float)p->p1}, s); break; // clamp, hardtanh
  }
}

extern "C" int volua_cuda_unary(int64_t n, int dt, const void *a, void *y, volua_unop uop,
                                const volua_unary_args *p, cudaStream_t s, char *err) {
  const char *op = "unary";
  if (n <= 0) return 0;
  unsigned blocks = volua_grid_for(n, VOLUA_THREADS);
  const int activation = uop >= VOLUA_UN_TANH;
  if (dt == VOLUA_INT64 && activation) // clamp (and hardtanh): the only activations kept in int64
    clamp_i64_kernel<<<blocks, VOLUA_THREADS, 0, s>>>(n, (const int64_t *)a, (int64_t *)y, bound_i64(p->p0),
                                                      bound_i64(p->p1));
  else if (dt == VOLUA_INT64)
    unary_i64_kernel<<<blocks, VOLUA_THREADS, 0, s>>>(n, (const int64_t *)a, (int64_t *)y, (int)uop);
  else if (activation)
    launch_activation(n, a, y, uop, p, s);
  else
    map1_f32_kernel<<<map_grid(n), VOLUA_THREADS, 0, s>>>(n, aligned16(a) && aligned16(y), (const float *)a, (float *)y,
                                                          unary_f32_rule{(int)uop});
  CUDA_CHECK_LAUNCH();
  return 0;
}

extern "C" int volua_cuda_fill(int64_t n, int dt, void *y, double v, cudaStream_t s, char *err) {
  const char *op = "fill";
  if (n <= 0) return 0;
  // int64 zeros: a memset. (float32 zeros too until the thirty-fifth session: the kernel below wrote
  // a 537 MB volume in 0.1185 ms against the memset's 0.1195 on the H200, four pairs, run s35r5.)
  if (dt == VOLUA_INT64 && (int64_t)v == 0) {
    CUDA_CHECK(cudaMemsetAsync(y, 0, (size_t)n * 8, s));
    return 0;
  }
  if (dt == VOLUA_INT64)
    fill_i64_kernel<<<volua_grid_for(n, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(n, (int64_t *)y, (int64_t)v);
  else
    fill_f32_kernel<<<map_grid(n), VOLUA_THREADS, 0, s>>>(n, aligned16(y), (float *)y, (float)v);
  CUDA_CHECK_LAUNCH();
  return 0;
}

extern "C" int volua_cuda_convert(int64_t n, int dst_dt, void *dst, int src_dt, const void *src,
                                  cudaStream_t s, char *err) {
  const char *op = "convert";
  if (n <= 0) return 0;
  if (dst_dt == src_dt) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, (size_t)n * (dst_dt == VOLUA_INT64 ? 8 : 4), cudaMemcpyDeviceToDevice, s));
    return 0;
  }
  unsigned blocks = volua_grid_for(n, VOLUA_THREADS);
  if (dst_dt == VOLUA_INT64)
    f32_to_i64_kernel<<<blocks, VOLUA_THREADS, 0, s>>>(n, (const float *)src, (int64_t *)dst);
  else
    i64_to_f32_kernel<<<blocks, VOLUA_THREADS, 0, s>>>(n, (const int64_t *)src, (float *)dst);
  CUDA_CHECK_LAUNCH();
  return 0;
}

extern "C" int volua_cuda_reduce(int64_t n, int dt, const void *a, volua_reduce_op rop, double *result,
                                 cudaStream_t s, char *err) {
  static const char *names[] = {"sum", "max", "min"};
  if (n <= 0) {
    *result = rop == VOLUA_RED_SUM ? 0.0 : NAN;
    return 0;
  }
  reduce_job j = {RED_PLAIN, rop, 0.0, 0.0, 0};
  return run_reduce(names[rop], &j, n, dt, a, a, result, s, err);
}

extern "C" int volua_cuda_max_abs_diff(int64_t n, int dt, const void *a, const void *b, double *result,
                                       cudaStream_t s, char *err) {
  if (n <= 0) {
    *result = 0.0;
    return 0;
  }
  reduce_job j = {RED_ABS_DIFF, VOLUA_RED_MAX, 0.0, 0.0, 0};
  return run_reduce("max_abs_diff", &j, n, dt, a, b, result, s, err);
}

extern "C" int volua_cuda_allclose(int64_t n, int dt, const void *a, const void *b, double rtol, double atol,
                                   int equal_nan, int *result, cudaStream_t s, char *err) {
  if (n <= 0) {
    *result = 1;
    return 0;
  }
  reduce_job j = {RED_NOT_CLOSE, VOLUA_RED_MAX, rtol, atol, equal_nan};
  double worst = 0.0;
  if (run_reduce("allclose", &j, n, dt, a, b, &worst, s, err)) return 1;
  *result = worst == 0.0;
  return 0;
}
