// softmax.cu: softmax and log_softmax over one dim, and the reductions over dims that share their
// walk: logsumexp, amax / amin, max / min with indices (references: src/cpu/softmax.c and
// src/cpu/reductions.c).
//
// Every op sees its input as slices, (outer, size, inner): a slice is `size` values `inner` apart.
// A slice's values fold into a state in one read: the online max and sum of exponentials
// (lse_state: softmax, log_softmax, logsumexp) or the extreme and its first index (ext_state: amax,
// amin, max, min, of float32 or int64 values); softmax and log_softmax then read the slice again to
// write it.
// - inner == 1 (rows): a warp a row for rows of at most ROW_WARP_MAX values (a block of 8 warps
//   takes 8 rows), else a block a row;
// - inner > 1 (columns, e.g. softmax over C of (N, C, D, H, W)): a thread a column, neighbouring
//   threads at neighbouring inner positions (coalesced), looping over the slice, loads four ahead.
// Where the slices are too few to fill the GPU (a few long rows, a few columns), each slice is cut
// into chunks: a pass writes each chunk's state to scratch, then a second pass folds a slice's
// chunk states in order (and softmax writes each chunk with the folded state).
// Reductions over several dims that do not coalesce into one run (dims 1 and 3 of a 4-D input):
// a thread an output, the reduced dims walked like an odometer (mean.cu's mean_thread_kernel).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common.cuh"

// -- the states ----

#define FULL_MASK 0xffffffffu

// The online log-sum-exp of the values folded in: m their max (NaN aside), s = sum exp(v - m) in
// double, nan whether a NaN was among them. Where m ends +-inf, s is not used (lse_* below), so
// s may then hold an inf - inf NaN; it never does while m is finite.
struct lse_state {
  float m;
  int nan;
  double s;
  __device__ __forceinline__ void init() {
    m = -INFINITY;
    nan = 0;
    s = 0.0;
  }
  __device__ __forceinline__ void add(float v, int64_t) {
    if (v != v) {
      nan = 1;
    } else if (v > m) { // a new max: the sum so far rescaled (exp(-inf) = 0 when m was -inf)
      s = s * exp((double)m - (double)v) + 1.0;
      m = v;
    } else if (v != -INFINITY) { // (-inf adds 0; with m -inf too it would add exp(NaN))
      s += (double)expf(v - m);
    }
  }
  __device__ __forceinline__ void merge(const lse_state &o) {
    nan |= o.nan;
    if (o.m > m) {
      s = s * exp((double)m - (double)o.m) + o.s;
      m = o.m;
    } else if (o.m != -INFINITY) {
      s += o.m == m ? o.s : o.s * exp((double)o.m - (double)m);
    }
  }
};
__device__ __forceinline__ lse_state shfl_down(const lse_state &a, int off) {
  lse_state b;
  b.m = __shfl_down_sync(FULL_MASK, a.m, off);
  b.nan = __shfl_down_sync(FULL_MASK, a.nan, off);
  b.s = __shfl_down_sync(FULL_MASK, a.s, off);
  return b;
}
__device__ __forceinline__ lse_state shfl_from(const lse_state &a, int lane) {
  lse_state b;
  b.m = __shfl_sync(FULL_MASK, a.m, lane);
  b.nan = __shfl_sync(FULL_MASK, a.nan, lane);
  b.s = __shfl_sync(FULL_MASK, a.s, lane);
  return b;
}

// The values max and min start from: float32 -inf and +inf, int64 its least and greatest.
template <class T> struct value_limits;
template <> struct value_limits<float> {
  static __device__ __forceinline__ float lowest() { return -INFINITY; }
  static __device__ __forceinline__ float highest() { return INFINITY; }
};
template <> struct value_limits<int64_t> {
  static __device__ __forceinline__ int64_t lowest() { return INT64_MIN; }
  static __device__ __forceinline__ int64_t highest() { return INT64_MAX; }
};
__device__ __forceinline__ float shfl_down_value(float v, int off) { return __shfl_down_sync(FULL_MASK, v, off); }
__device__ __forceinline__ int64_t shfl_down_value(int64_t v, int off) {
  return (int64_t)__shfl_down_sync(FULL_MASK, (long long)v, off);
}
__device__ __forceinline__ float shfl_value(float v, int lane) { return __shfl_sync(FULL_MASK, v, lane); }
__device__ __forceinline__ int64_t shfl_value(int64_t v, int lane) {
  return (int64_t)__shfl_sync(FULL_MASK, (long long)v, lane);
}

// The extreme (MAX: the largest) of the values folded in and its index, as torch.max(x, dim): a
// NaN beats any number, and among equals (NaNs too) the smaller index wins, so the fold gives the
// first occurrence of the max, or the first NaN, whatever the order of the merges. i = INT64_MAX:
// nothing folded in yet. T: float or int64_t (whose w != w is never true).
template <bool MAX, class T> struct ext_state {
  T v;
  int64_t i;
  __device__ __forceinline__ void init() {
    v = MAX ? value_limits<T>::lowest() : value_limits<T>::highest();
    i = INT64_MAX;
  }
  __device__ __forceinline__ void add(T w, int64_t j) {
    bool take;
    if (w != w) take = v == v || j < i;
    else if (v != v) take = false;
    else take = (MAX ? w > v : w < v) || (w == v && j < i);
    if (take) {
      v = w;
      i = j;
    }
  }
  __device__ __forceinline__ void merge(const ext_state &o) { add(o.v, o.i); }
};
template <bool MAX, class T>
__device__ __forceinline__ ext_state<MAX, T> shfl_down(const ext_state<MAX, T> &a, int off) {
  ext_state<MAX, T> b;
  b.v = shfl_down_value(a.v, off);
  b.i = shfl_down_value(a.i, off);
  return b;
}
template <bool MAX, class T>
__device__ __forceinline__ ext_state<MAX, T> shfl_from(const ext_state<MAX, T> &a, int lane) {
  ext_state<MAX, T> b;
  b.v = shfl_value(a.v, lane);
  b.i = shfl_value(a.i, lane);
  return b;
}

// The ops, and the state each folds values of type T into (T float but for max and min).
enum { OP_SOFTMAX = 0, OP_LOG_SOFTMAX, OP_LOGSUMEXP, OP_MAX, OP_MIN };
template <int OP, class T> struct op_state { typedef lse_state type; };
template <class T> struct op_state<OP_MAX, T> { typedef ext_state<true, T> type; };
template <class T> struct op_state<OP_MIN, T> { typedef ext_state<false, T> type; };
template <int OP> struct is_softmax { static const bool value = OP == OP_SOFTMAX || OP == OP_LOG_SOFTMAX; };

// -- folding states across threads ----

// The warp's fold, in lane 0 (a fixed tree: the same order every run).
template <class S> __device__ __forceinline__ S warp_fold(S st) {
  for (int off = 16; off > 0; off >>= 1) st.merge(shfl_down(st, off));
  return st;
}

// The block's fold, returned to every thread. scratch holds 32 states; ends with a barrier so that
// it can be reused right after.
template <class S> __device__ __forceinline__ S block_fold(S st, S *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  st = warp_fold(st);
  if (lane == 0) scratch[warp] = st;
  __syncthreads();
  if (warp == 0) {
    S t;
    if (lane < nwarps) t = scratch[lane];
    else t.init();
    t = warp_fold(t);
    if (lane == 0) scratch[0] = t;
  }
  __syncthreads();
  const S r = scratch[0];
  __syncthreads();
  return r;
}

// -- what a folded state gives ----

// softmax / log_softmax of one value of a slice whose state is folded: torch's exp(x - m) / sum and
// (x - m) - log(sum), in which a NaN, a +inf (inf - inf) or a slice of -inf only (-inf - -inf) make
// every value NaN.
struct softmax_consts {
  bool bad; // the slice is all NaN
  float m, inv_sum, log_sum;
};
__device__ __forceinline__ softmax_consts softmax_prepare(const lse_state &st) {
  softmax_consts c;
  c.bad = st.nan || isinf(st.m);
  c.m = st.m;
  c.inv_sum = (float)(1.0 / st.s);
  c.log_sum = (float)log(st.s);
  return c;
}
template <int OP> __device__ __forceinline__ float softmax_value(const softmax_consts &c, float v) {
  if (c.bad) return __int_as_float(0x7fffffff);
  return OP == OP_LOG_SOFTMAX ? (v - c.m) - c.log_sum : expf(v - c.m) * c.inv_sum;
}

// torch.logsumexp: NaN with a NaN; +inf with a +inf; -inf with only -inf (or nothing); else
// m + log(sum exp(v - m)).
__device__ __forceinline__ float lse_result(const lse_state &st) {
  if (st.nan) return __int_as_float(0x7fffffff);
  if (isinf(st.m)) return st.m;
  return (float)((double)st.m + log(st.s));
}

// A reduction's output o from its folded state (indices: max / min only, when asked for).
__device__ __forceinline__ void put_result(const lse_state &st, int64_t o, float *y, int64_t *) {
  y[o] = lse_result(st);
}
template <bool MAX, class T>
__device__ __forceinline__ void put_result(const ext_state<MAX, T> &st, int64_t o, T *y, int64_t *idx) {
  y[o] = st.v;
  if (idx) idx[o] = st.i;
}

// -- the slices ----

typedef struct slice_plan {
  int64_t outer, size, inner;
  int64_t chunks, per_chunk; // each slice in `chunks` chunks of per_chunk values (the last shorter)
} slice_plan;

__device__ __forceinline__ int64_t chunk_end(const slice_plan &p, int64_t k0) {
  return k0 + p.per_chunk < p.size ? k0 + p.per_chunk : p.size;
}

// Rows (inner == 1), a team a task t = (row o, chunk c): a warp (WARP) or the block. The team folds
// its chunk's values; with one chunk it then writes (softmax: the row, reading it again; a
// reduction: its output), else its state goes to part[t] for rows_fold_kernel.
template <int OP, class T, bool WARP>
static __global__ void rows_kernel(slice_plan p, const T *__restrict__ x, T *__restrict__ y,
                                   int64_t *__restrict__ idx, typename op_state<OP, T>::type *__restrict__ part) {
  typedef typename op_state<OP, T>::type S;
  __shared__ S scratch[32];
  const int64_t team_size = WARP ? 32 : blockDim.x;
  const int64_t lane = WARP ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = WARP ? blockDim.x / 32 : 1;
  const int64_t team = (int64_t)blockIdx.x * per_block + (WARP ? threadIdx.x / 32 : 0);
  const int64_t teams = (int64_t)gridDim.x * per_block, tasks = p.outer * p.chunks;
  for (int64_t t = team; t < tasks; t += teams) { // (the same trip count for the whole team)
    const int64_t o = t / p.chunks, c = t - o * p.chunks;
    const int64_t k0 = c * p.per_chunk, k1 = chunk_end(p, k0);
    const T *xr = x + o * p.size;
    S st;
    st.init();
    int64_t k = k0 + lane;
    for (; k + 3 * team_size < k1; k += 4 * team_size) { // four loads in flight, then their folds
      T u[4];
#pragma unroll
      for (int q = 0; q < 4; q++) u[q] = xr[k + q * team_size];
#pragma unroll
      for (int q = 0; q < 4; q++) st.add(u[q], k + q * team_size);
    }
    for (; k < k1; k += team_size) st.add(xr[k], k);
    if (WARP) st = shfl_from(warp_fold(st), 0);
    else st = block_fold(st, scratch);
    if (p.chunks > 1) {
      if (lane == 0) part[t] = st;
    } else if constexpr (is_softmax<OP>::value) {
      const softmax_consts sc = softmax_prepare(st);
      float *yr = y + o * p.size;
      for (int64_t j = k0 + lane; j < k1; j += team_size) yr[j] = softmax_value<OP>(sc, xr[j]);
    } else if (lane == 0) {
      put_result(st, o, y, idx);
    }
  }
}

// Rows in chunks, the second pass: block t folds row o's chunk states, in the same order for every
// chunk; softmax then writes chunk c (task t = (o, c)), a reduction its output (task t = o).
template <int OP, class T>
static __global__ void rows_fold_kernel(slice_plan p, const T *__restrict__ x, T *__restrict__ y,
                                        int64_t *__restrict__ idx, const typename op_state<OP, T>::type *__restrict__ part) {
  typedef typename op_state<OP, T>::type S;
  __shared__ S scratch[32];
  const int64_t tasks = is_softmax<OP>::value ? p.outer * p.chunks : p.outer;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int64_t o = is_softmax<OP>::value ? t / p.chunks : t;
    S st;
    st.init();
    for (int64_t q = threadIdx.x; q < p.chunks; q += blockDim.x) st.merge(part[o * p.chunks + q]);
    st = block_fold(st, scratch);
    if constexpr (is_softmax<OP>::value) {
      const int64_t k0 = (t - o * p.chunks) * p.per_chunk, k1 = chunk_end(p, k0);
      const softmax_consts sc = softmax_prepare(st);
      const float *xr = x + o * p.size;
      float *yr = y + o * p.size;
      for (int64_t j = k0 + threadIdx.x; j < k1; j += blockDim.x) yr[j] = softmax_value<OP>(sc, xr[j]);
    } else if (threadIdx.x == 0) {
      put_result(st, o, y, idx);
    }
  }
}

// Columns (inner > 1): thread (threadIdx.x, threadIdx.y) of block (x, y) takes inner position
// i = blockIdx.x * blockDim.x + threadIdx.x of task t = (outer o, chunk c), t from
// blockIdx.y * blockDim.y + threadIdx.y on. It folds its chunk of the column; with one chunk it then
// writes (softmax: the column, reading it again; a reduction: its output), else its state goes to
// part[t * inner + i] for cols_fold_kernel.
template <int OP, class T>
static __global__ void cols_kernel(slice_plan p, const T *__restrict__ x, T *__restrict__ y,
                                   int64_t *__restrict__ idx, typename op_state<OP, T>::type *__restrict__ part) {
  typedef typename op_state<OP, T>::type S;
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.inner) return; // (no barriers below)
  const int64_t tasks = p.outer * p.chunks, n = p.inner;
  for (int64_t t = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; t < tasks; t += (int64_t)gridDim.y * blockDim.y) {
    const int64_t o = t / p.chunks, c = t - o * p.chunks;
    const int64_t k0 = c * p.per_chunk, k1 = chunk_end(p, k0);
    const T *xc = x + o * p.size * n + i;
    S st;
    st.init();
    int64_t k = k0;
    for (; k + 3 < k1; k += 4) {
      T u[4];
#pragma unroll
      for (int q = 0; q < 4; q++) u[q] = xc[(k + q) * n];
#pragma unroll
      for (int q = 0; q < 4; q++) st.add(u[q], k + q);
    }
    for (; k < k1; k++) st.add(xc[k * n], k);
    if (p.chunks > 1) {
      part[t * n + i] = st;
    } else if constexpr (is_softmax<OP>::value) {
      const softmax_consts sc = softmax_prepare(st);
      float *yc = y + o * p.size * n + i;
      for (int64_t j = k0; j < k1; j++) yc[j * n] = softmax_value<OP>(sc, xc[j * n]);
    } else {
      put_result(st, o * n + i, y, idx);
    }
  }
}

// Columns in chunks, the second pass: a thread per (task, i), tasks (o, c) for softmax, o for a
// reduction; it folds column (o, i)'s chunk states in order, then softmax writes chunk c.
template <int OP, class T>
static __global__ void cols_fold_kernel(slice_plan p, const T *__restrict__ x, T *__restrict__ y,
                                        int64_t *__restrict__ idx, const typename op_state<OP, T>::type *__restrict__ part) {
  typedef typename op_state<OP, T>::type S;
  const int64_t n = p.inner, tasks = is_softmax<OP>::value ? p.outer * p.chunks : p.outer;
  VOLUA_GRID_LOOP(e, tasks * n) {
    const int64_t t = e / n, i = e - t * n;
    const int64_t o = is_softmax<OP>::value ? t / p.chunks : t;
    S st;
    st.init();
    for (int64_t q = 0; q < p.chunks; q++) st.merge(part[(o * p.chunks + q) * n + i]);
    if constexpr (is_softmax<OP>::value) {
      const int64_t k0 = (t - o * p.chunks) * p.per_chunk, k1 = chunk_end(p, k0);
      const softmax_consts sc = softmax_prepare(st);
      const float *xc = x + o * p.size * n + i;
      float *yc = y + o * p.size * n + i;
      for (int64_t j = k0; j < k1; j++) yc[j * n] = softmax_value<OP>(sc, xc[j * n]);
    } else {
      put_result(st, o * n + i, y, idx);
    }
  }
}

// -- reductions whose dims do not coalesce into one run ----

typedef struct odometer_plan {
  int nkept, nred;
  int64_t kept_size[VOLUA_MEAN_MAX_DIMS], kept_stride[VOLUA_MEAN_MAX_DIMS];
  int64_t red_size[VOLUA_MEAN_MAX_DIMS], red_stride[VOLUA_MEAN_MAX_DIMS];
  int64_t out_numel, reduce_numel;
} odometer_plan;

// A thread per output: its reduced elements in row-major order, the reduced dims walked like an
// odometer (unrolled whole, so that coord stays in registers).
template <int OP, class T>
static __global__ void odometer_kernel(odometer_plan p, const T *__restrict__ x, T *__restrict__ y,
                                       int64_t *__restrict__ idx) {
  typedef typename op_state<OP, T>::type S;
  VOLUA_GRID_LOOP(o, p.out_numel) {
    int64_t off = 0, rest = o, coord[VOLUA_MEAN_MAX_DIMS];
    for (int k = p.nkept - 1; k >= 0; k--) {
      off += (rest % p.kept_size[k]) * p.kept_stride[k];
      rest /= p.kept_size[k];
    }
#pragma unroll
    for (int k = 0; k < VOLUA_MEAN_MAX_DIMS; k++) coord[k] = 0;
    S st;
    st.init();
    for (int64_t r = 0; r < p.reduce_numel; r++) {
      st.add(x[off], r);
#pragma unroll
      for (int k = VOLUA_MEAN_MAX_DIMS - 1; k >= 0; k--) {
        if (k >= p.nred) continue;
        off += p.red_stride[k];
        if (++coord[k] < p.red_size[k]) break;
        off -= coord[k] * p.red_stride[k];
        coord[k] = 0;
      }
    }
    put_result(st, o, y, idx);
  }
}

// -- launchers ----

#define ROW_WARP_MAX 1024   /* rows up to this long: a warp a row */
#define ROW_CHUNK_MIN 8192  /* long rows cut into chunks of at least this many values */
#define COL_CHUNK_MIN 64    /* columns cut into chunks of at least this many values */
#define COL_CHUNKS_MAX 64   /* and into at most this many (cols_fold_kernel folds them one by one) */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int sm_count() {
  int sms = 0;
  if (volua_sm_count(&sms) != cudaSuccess || sms < 1) {
    (void)cudaGetLastError();
    sms = 16;
  }
  return sms;
}

template <int OP, class T>
static int launch_slices(slice_plan p, const T *x, T *y, int64_t *idx, cudaStream_t s, const char *op,
                         char *err) {
  typedef typename op_state<OP, T>::type S;
  if (p.outer <= 0 || p.inner <= 0) return 0;
  p.chunks = 1;
  p.per_chunk = p.size;
  S *part = NULL;
  cudaError_t e;
  if (p.inner == 1 && p.size <= ROW_WARP_MAX) { // a warp a row, 8 rows a block
    rows_kernel<OP, T, true><<<volua_grid_for(p.outer, 8), VOLUA_THREADS, 0, s>>>(p, x, y, idx, part);
    e = cudaGetLastError();
  } else if (p.inner == 1) { // a block a row, or a block a chunk of a row
    static int64_t resident = 0;
    if (!resident) resident = volua_resident_blocks(rows_kernel<OP, T, false>, VOLUA_THREADS);
    const int64_t sl = volua_chunks_per_item(p.outer, p.size, ROW_CHUNK_MIN, resident);
    p.per_chunk = cdiv(p.size, sl);
    p.chunks = cdiv(p.size, p.per_chunk);
    const int64_t tasks = p.outer * p.chunks;
    if (p.chunks > 1 && volua_cuda_malloc((void **)&part, tasks * (int64_t)sizeof(S), err)) return 1;
    rows_kernel<OP, T, false><<<(unsigned)(tasks < resident ? tasks : resident), VOLUA_THREADS, 0, s>>>(p, x, y, idx, part);
    e = cudaGetLastError();
    if (e == cudaSuccess && p.chunks > 1) {
      const int64_t fold_tasks = is_softmax<OP>::value ? tasks : p.outer;
      rows_fold_kernel<OP, T><<<volua_grid_for(fold_tasks, 1), VOLUA_THREADS, 0, s>>>(p, x, y, idx, part);
      e = cudaGetLastError();
    }
  } else { // columns: blocks of (bx, by) threads, bx along inner
    const int bx = p.inner >= VOLUA_THREADS ? VOLUA_THREADS : (int)cdiv(p.inner, 32) * 32;
    const int by = VOLUA_THREADS / bx;
    const int64_t want = (int64_t)sm_count() * 2048; // threads to fill the GPU
    const int64_t columns = p.outer * p.inner;
    int64_t sl = columns >= want ? 1 : cdiv(want, columns);
    const int64_t most = p.size / COL_CHUNK_MIN < COL_CHUNKS_MAX ? p.size / COL_CHUNK_MIN : COL_CHUNKS_MAX;
    if (sl > most) sl = most;
    if (sl < 1) sl = 1;
    p.per_chunk = cdiv(p.size, sl);
    p.chunks = cdiv(p.size, p.per_chunk);
    const int64_t tasks = p.outer * p.chunks, gx = cdiv(p.inner, bx), gy = cdiv(tasks, by);
    if (gx > 0x7fffffff) {
      snprintf(err, VOLUA_ERR_MAX, "%s: %lld values along the inner dims are too many", op, (long long)p.inner);
      return 1;
    }
    if (p.chunks > 1 && volua_cuda_malloc((void **)&part, tasks * p.inner * (int64_t)sizeof(S), err)) return 1;
    cols_kernel<OP, T><<<dim3((unsigned)gx, (unsigned)(gy < 65535 ? gy : 65535)), dim3(bx, by), 0, s>>>(p, x, y, idx, part);
    e = cudaGetLastError();
    if (e == cudaSuccess && p.chunks > 1) {
      const int64_t fold_tasks = is_softmax<OP>::value ? tasks : p.outer;
      cols_fold_kernel<OP, T><<<volua_grid_for(fold_tasks * p.inner, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(p, x, y, idx, part);
      e = cudaGetLastError();
    }
  }
  volua_cuda_free(part); // (stream-ordered: the caching allocator reuses it only after this stream's work)
  if (e != cudaSuccess) return volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
  return 0;
}

// The reduction op over g: its dims coalesced (size-1 dims dropped, neighbours of one kind merged);
// one reduced run left (or none): the slice kernels, else the odometer kernel.
template <int OP, class T>
static int launch_reduce(const volua_mean_geom *g, const T *x, T *y, int64_t *idx, cudaStream_t s,
                         const char *op, char *err) {
  int kinds[VOLUA_MEAN_MAX_DIMS];
  int64_t sizes[VOLUA_MEAN_MAX_DIMS];
  const int n = volua_coalesce_dims(g, kinds, sizes);
  int nred = 0, red_at = -1;
  for (int d = 0; d < n; d++)
    if (kinds[d]) {
      nred++;
      red_at = d;
    }
  if (g->reduce_numel == 0 || nred <= 1) { // (outer, size, inner) around the one reduced run
    slice_plan p;
    memset(&p, 0, sizeof p);
    p.outer = 1;
    p.inner = 1;
    p.size = g->reduce_numel;
    if (g->reduce_numel == 0 || red_at < 0) {
      p.outer = g->out_numel; // nothing to reduce (-inf for logsumexp), or only size-1 dims
    } else {
      for (int d = 0; d < red_at; d++) p.outer *= sizes[d];
      for (int d = red_at + 1; d < n; d++) p.inner *= sizes[d];
    }
    return launch_slices<OP, T>(p, x, y, idx, s, op, err);
  }
  odometer_plan p;
  memset(&p, 0, sizeof p);
  p.out_numel = g->out_numel;
  p.reduce_numel = g->reduce_numel;
  volua_split_dims(p, n, kinds, sizes);
  odometer_kernel<OP, T><<<volua_grid_for(p.out_numel, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(p, x, y, idx);
  CUDA_CHECK_LAUNCH();
  return 0;
}

// -- entries ----

extern "C" int volua_cuda_softmax(const volua_softmax_geom *g, const float *x, float *y, cudaStream_t s,
                                  char *err) {
  slice_plan p;
  memset(&p, 0, sizeof p);
  p.outer = g->outer;
  p.size = g->size;
  p.inner = g->inner;
  if (p.size <= 0) return 0;
  if (g->log) return launch_slices<OP_LOG_SOFTMAX, float>(p, x, y, NULL, s, "log_softmax", err);
  return launch_slices<OP_SOFTMAX, float>(p, x, y, NULL, s, "softmax", err);
}

extern "C" int volua_cuda_reduce_dims(const volua_mean_geom *g, volua_dim_reduce_op op, int dt, const void *x,
                                      void *y, int64_t *indices, cudaStream_t s, char *err) {
  const char *name = op == VOLUA_DIMRED_LOGSUMEXP ? "logsumexp" : op == VOLUA_DIMRED_MAX ? "max" : "min";
  if (g->ndim < 0 || g->ndim > VOLUA_MEAN_MAX_DIMS) {
    snprintf(err, VOLUA_ERR_MAX, "%s: rank %d is outside 0..%d", name, g->ndim, VOLUA_MEAN_MAX_DIMS);
    return 1;
  }
  if (g->out_numel <= 0) return 0;
  const float *xf = (const float *)x;
  float *yf = (float *)y;
  const int64_t *xi = (const int64_t *)x;
  int64_t *yi = (int64_t *)y;
  const bool i64 = dt == VOLUA_INT64;
  if (dt != VOLUA_FLOAT32 && !(i64 && op != VOLUA_DIMRED_LOGSUMEXP)) {
    snprintf(err, VOLUA_ERR_MAX, "%s: dtype %d is not supported here", name, dt);
    return 1;
  }
  switch (op) {
  case VOLUA_DIMRED_LOGSUMEXP: return launch_reduce<OP_LOGSUMEXP, float>(g, xf, yf, NULL, s, name, err);
  case VOLUA_DIMRED_MAX:
    return i64 ? launch_reduce<OP_MAX, int64_t>(g, xi, yi, indices, s, name, err)
               : launch_reduce<OP_MAX, float>(g, xf, yf, indices, s, name, err);
  case VOLUA_DIMRED_MIN:
    return i64 ? launch_reduce<OP_MIN, int64_t>(g, xi, yi, indices, s, name, err)
               : launch_reduce<OP_MIN, float>(g, xf, yf, indices, s, name, err);
  }
  snprintf(err, VOLUA_ERR_MAX, "%s: unknown reduction %d", name, (int)op);
  return 1;
}
