// common.cuh: what every kernels/*.cu shares: the error-returning CUDA_CHECK, launch sizes,
// block reductions in double, and the convolution index helpers used by conv3d and the fused op.
#ifndef VOLUA_KERNELS_COMMON_CUH
#define VOLUA_KERNELS_COMMON_CUH

#include <stdint.h>
#include <stdio.h>
#include <cuda_runtime.h>

#include "kernels.h"
extern "C" {
#include "../src/tensor.h" /* volua_dtype, VOLUA_ERR_MAX */
}

// -- errors ----


// "<op>: <cuda error> (<code>) in <expr> at <file>:<line>"; returns the code.
static inline int volua_kernel_error(char *err, const char *op, cudaError_t e, const char *expr,
                                     const char *file, int line) {
  // Clear a non-sticky error so that it does not resurface at the next launch check.
  if (!volua_cuda_error_is_sticky(e)) cudaGetLastError();
  const char *base = file;
  for (const char *c = file; *c; c++)
    if (*c == '/') base = c + 1;
  if (err)
    snprintf(err, VOLUA_ERR_MAX, "%s: %s (%d) in %s at %s:%d%s", op, cudaGetErrorString(e), (int)e,
             expr, base, line,
             volua_cuda_error_is_sticky(e) ? "; the GPU context is lost, restart volua to use the GPU again"
                                           : "");
  return (int)e;
}

// Evaluates a CUDA call; on failure records what failed in `err` and returns from the caller.
// `op` and `err` must be in scope (every entry names its op and takes `char *err`).
#define CUDA_CHECK(expr)                                                                   \
  do {                                                                                     \
    cudaError_t volua_e_ = (expr);                                                         \
    if (volua_e_ != cudaSuccess)                                                           \
      return volua_kernel_error(err, op, volua_e_, #expr, __FILE__, __LINE__);             \
  } while (0)

// After every <<<...>>>: launch-configuration errors show here; faults show at the next sync.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// -- launch sizes ----

#define VOLUA_THREADS 256

// Blocks for a grid-stride loop over n items (n > 0): enough to fill the GPU, never more than
// the grid allows. Every kernel loops with int64_t, so capping the grid is always correct.
static inline unsigned volua_grid_for(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  const int64_t cap = (int64_t)1 << 20;
  return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

// Device 0's multiprocessor count into *sms, read once per kernel file (volua uses device 0 only).
static inline cudaError_t volua_sm_count(int *sms) {
  static int cached = 0;
  if (cached == 0) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&cached, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) {
      cached = 0;
      return e;
    }
  }
  *sms = cached;
  return cudaSuccess;
}

// Grid-stride loop over [0, n) with 64-bit indices.
#define VOLUA_GRID_LOOP(i, n)                                                              \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                \
       i += (int64_t)blockDim.x * gridDim.x)

// -- block reductions (blockDim.x a multiple of 32, at most 1024) ----

// The coordinates of flat index i in an (N, C, D, H, W) grid, W fastest (I: int64_t, or int where
// the grid has fewer than 2^31 points). The simple kernels' one-output-per-thread decode.
template <class I> struct volua_coord5 {
  I n, c, d, h, w;
};
template <class I> __device__ __forceinline__ volua_coord5<I> volua_unflatten5(I i, I C, I D, I H, I W) {
  volua_coord5<I> p;
  p.w = i % W;
  i /= W;
  p.h = i % H;
  i /= H;
  p.d = i % D;
  i /= D;
  p.c = i % C;
  p.n = i / C;
  return p;
}

__device__ __forceinline__ double volua_warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; the result is valid in thread 0. `scratch` holds 32 doubles. Ends with a
// barrier so that scratch can be reused right after.
__device__ __forceinline__ double volua_block_sum(double v, double *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  v = volua_warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double r = 0.0;
  if (warp == 0) {
    r = lane < nwarps ? scratch[lane] : 0.0;
    r = volua_warp_sum(r);
  }
  __syncthreads();
  return r;
}

// Values of the float run p[0, len) before its first 16-byte boundary (0 to 3, at most len): the
// scalar head of the walks that go on in float4s.
__device__ __forceinline__ int64_t volua_head16(const float *p, int64_t len) {
  const int64_t h = (int64_t)((16 - ((uintptr_t)p & 15)) & 15) / 4;
  return h < len ? h : len;
}

// -- whole-run float32 reductions (elementwise.cu's sum, max and min; mean.cu's mean of everything) ----
// A grid of as many blocks as fit at once (volua_resident_blocks) walks the run in tiles of
// 4 x blockDim float4s, a tile a block at a time: each thread loads four float4s a block apart, all
// four in flight, then folds them into its state. The values before the first 16-byte boundary and
// after the last whole float4 go one by one. R is the state: sums in double, max and min in float.
// The block's result goes to partial[blockIdx.x]; a one-block kernel folds the partials in order.
// (Scalar loads over a fixed grid of 1024 blocks ran max at 0.95x and mean at 0.96x PyTorch on the
// H200: bench/NOTES.md, ninth and thirty-fifth sessions.)

struct volua_sum_state { // four sums, one per float4 lane, so that the adds do not wait on each other
  double s[4];
  __device__ __forceinline__ void init() { s[0] = s[1] = s[2] = s[3] = 0.0; }
  __device__ __forceinline__ void add(float4 u) {
    s[0] += u.x;
    s[1] += u.y;
    s[2] += u.z;
    s[3] += u.w;
  }
  __device__ __forceinline__ void add1(float v) { s[0] += v; }
  __device__ __forceinline__ double value() const { return (s[0] + s[1]) + (s[2] + s[3]); }
};

// max / min with NaN propagating (PTX's .NaN forms: a NaN operand gives NaN), as torch.max() / min()
__device__ __forceinline__ float volua_max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float volua_min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <bool MAX> struct volua_extreme_state {
  float v;
  __device__ __forceinline__ static float pick(float a, float b) {
    return MAX ? volua_max_nan(a, b) : volua_min_nan(a, b);
  }
  __device__ __forceinline__ void init() { v = MAX ? -INFINITY : INFINITY; }
  __device__ __forceinline__ void add(float4 u) { v = pick(v, pick(pick(u.x, u.y), pick(u.z, u.w))); }
  __device__ __forceinline__ void add1(float x) { v = pick(v, x); }
  __device__ __forceinline__ double value() const { return (double)v; }
};

// Each thread's state over its share of a[0, n), before the block's fold.
template <class R> __device__ __forceinline__ R volua_reduce_f32_thread(int64_t n, const float *__restrict__ a) {
  R r;
  r.init();
  const int64_t bd = blockDim.x, tid = (int64_t)blockIdx.x * bd + threadIdx.x;
  const int64_t head = volua_head16(a, n);
  if (tid < head) r.add1(a[tid]);
  const float4 *a4 = reinterpret_cast<const float4 *>(a + head);
  const int64_t n4 = (n - head) / 4, tile = 4 * bd, step = (int64_t)gridDim.x * tile;
  int64_t i = (int64_t)blockIdx.x * tile + threadIdx.x;
  for (; i + 3 * bd < n4; i += step) {
    float4 u[4];
#pragma unroll
    for (int k = 0; k < 4; k++) u[k] = a4[i + k * bd];
#pragma unroll
    for (int k = 0; k < 4; k++) r.add(u[k]);
  }
  for (; i < n4; i += bd) r.add(a4[i]); // the last, partial tile (only its block gets here)
  for (int64_t e = head + 4 * n4 + tid; e < n; e += (int64_t)gridDim.x * bd) r.add1(a[e]);
  return r;
}

// One block's states over the run p[0, len) (elements of one output, one chunk): float4s from the
// first 16-byte boundary, four in flight a thread (the last four predicated), the rest one by one.
template <class R> __device__ __forceinline__ R volua_reduce_f32_block_run(const float *__restrict__ p, int64_t len) {
  R r;
  r.init();
  const int64_t bd = blockDim.x;
  const int64_t head = volua_head16(p, len);
  if (threadIdx.x < head) r.add1(p[threadIdx.x]);
  const float4 *p4 = reinterpret_cast<const float4 *>(p + head);
  const int64_t n4 = (len - head) / 4;
  for (int64_t t = threadIdx.x; t < n4; t += 4 * bd) {
    float4 u[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (t + k * bd < n4) u[k] = p4[t + k * bd];
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (t + k * bd < n4) r.add(u[k]);
  }
  for (int64_t e = head + 4 * n4 + threadIdx.x; e < len; e += bd) r.add1(p[e]);
  return r;
}

// Chunks to cut each of `count` items of `len` values into, for a grid of `resident` blocks (as many
// as fit at once) taking a chunk at a time: chunks of at least `least` values (one, if the item is
// shorter), and whole waves of blocks where that allows (at most 4 waves; the last one is then short
// by fewer than `count` chunks). Fewer chunks than blocks run all at once.
static inline int64_t volua_chunks_per_item(int64_t count, int64_t len, int64_t least, int64_t resident) {
  const int64_t cap = len / least > 1 ? len / least : 1;
  if (count >= 4 * resident) return 1;
  const int64_t most = count * cap, waves = most / resident < 4 ? most / resident : 4;
  if (waves == 0) return cap;
  const int64_t c = waves * resident / count;
  return c < 1 ? 1 : c > cap ? cap : c;
}

// Blocks of `threads` that fit on the GPU at once for `kernel` (at least 1; 16 SMs if the count fails).
template <class K> static inline int64_t volua_resident_blocks(K kernel, int threads) {
  int sms = 0, per_sm = 0;
  if (volua_sm_count(&sms) != cudaSuccess || sms < 1) {
    (void)cudaGetLastError();
    sms = 16;
  }
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess || per_sm < 1) {
    (void)cudaGetLastError();
    per_sm = 1;
  }
  return (int64_t)sms * per_sm;
}

// -- the dims of a reduction over a contiguous input (mean.cu, and softmax.cu's logsumexp, amax, max) ----

// g's dims coalesced, outermost first, into kinds (1: reduced) and sizes; returns how many. Size-1
// dims are dropped, and a dim is merged into the previous one of the same kind (the input is
// contiguous: the previous one's stride is this one's times its size).
static inline __host__ int volua_coalesce_dims(const volua_mean_geom *g, int kinds[VOLUA_MEAN_MAX_DIMS],
                                               int64_t sizes[VOLUA_MEAN_MAX_DIMS]) {
  int n = 0;
  for (int d = 0; d < g->ndim; d++) {
    if (g->shape[d] == 1) continue;
    if (n > 0 && kinds[n - 1] == g->reduce[d]) {
      sizes[n - 1] *= g->shape[d];
      continue;
    }
    kinds[n] = g->reduce[d];
    sizes[n++] = g->shape[d];
  }
  return n;
}

// The n coalesced dims, each with its row-major stride, appended to a plan's kept and reduced
// lists (P: mean.cu's mean_plan, softmax.cu's odometer_plan, zeroed).
template <class P>
static inline __host__ void volua_split_dims(P &p, int n, const int kinds[], const int64_t sizes[]) {
  int64_t stride = 1, strides[VOLUA_MEAN_MAX_DIMS];
  for (int d = n - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= sizes[d];
  }
  for (int d = 0; d < n; d++) {
    if (kinds[d]) {
      p.red_size[p.nred] = sizes[d];
      p.red_stride[p.nred++] = strides[d];
    } else {
      p.kept_size[p.nkept] = sizes[d];
      p.kept_stride[p.nkept++] = strides[d];
    }
  }
}

// -- pooling (max_pool3d.cu's grid-stride kernel, adaptive_pool3d.cu's max) ----

// PyTorch's max over a window of the plane xp (slices of IH x IW): d from d0 below d1 in steps of
// sd, h and w likewise. From -inf at the window's first position, a larger value or any NaN takes
// over, so the first maximum wins, or the last NaN; *best_index: the winner's flat index in the plane.
__device__ __forceinline__ float volua_window_max(const float *xp, int64_t IH, int64_t IW, int64_t d0,
                                                  int64_t d1, int64_t h0, int64_t h1, int64_t w0, int64_t w1,
                                                  int64_t sd, int64_t sh, int64_t sw, int64_t *best_index) {
  float best = -INFINITY;
  int64_t at = (d0 * IH + h0) * IW + w0;
  for (int64_t d = d0; d < d1; d += sd)
    for (int64_t h = h0; h < h1; h += sh) {
      const int64_t row = (d * IH + h) * IW;
      for (int64_t w = w0; w < w1; w += sw) {
        const float v = __ldg(xp + row + w);
        if (v > best || isnan(v)) {
          best = v;
          at = row + w;
        }
      }
    }
  *best_index = at;
  return best;
}

// -- convolution helpers (conv3d.cu and conv3d_gn_mean.cu) ----

// Maps a coordinate of the padded input (i = o*stride - pad_lo + k*dilation) to the input
// index it reads, or -1 for a zero. The same rule as src/cpu/conv3d.c, i.e. PyTorch's F.pad
// followed by an unpadded convolution: reflect mirrors without repeating the edge (needs
// pad < n), replicate clamps, circular wraps (needs pad <= n).
__device__ __forceinline__ int64_t volua_pad_index(int64_t i, int64_t n, int mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
  case VOLUA_PAD_REFLECT:
    if (n == 1) return 0;
    if (i < 0 && -i < n) return -i; // (within one reflection: no division)
    if (i >= n && i <= 2 * (n - 1)) return 2 * (n - 1) - i;
    {
      // Period 2(n-1): correct for any distance, not just pad < n.
      int64_t p = 2 * (n - 1);
      i %= p;
      if (i < 0) i += p;
      return i < n ? i : p - i;
    }
  case VOLUA_PAD_REPLICATE:
    return i < 0 ? 0 : n - 1;
  case VOLUA_PAD_CIRCULAR:
    if (i < 0 && i >= -n) return i + n; // (within one wrap: no division)
    if (i >= n && i < 2 * n) return i - n;
    i %= n;
    return i < 0 ? i + n : i;
  default:
    return -1;
  }
}

// An operand as the tensor cores see it in math "tf32": rounded to 10 mantissa bits (nearest,
// ties away), as cvt.rna.tf32.f32 does; math "fp32" keeps it whole.
template <bool TF32>
__device__ __forceinline__ double volua_operand(float v) {
  if (!TF32) return (double)v;
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return (double)__uint_as_float(r);
}

// One output value of conv3d (without bias) at (n, co, od, oh, ow), accumulated in double:
// every product of two floats is exact in double, so the sum is the float64 reference's up
// to the order of additions. Used by the simple conv3d kernel and the fused op. With TF32 the
// operands are first rounded to TF32, so math "tf32" gives what a TF32 tensor core would.
template <bool TF32 = false>
__device__ __forceinline__ double volua_conv3d_point(const volua_conv3d_geom &g, const float *__restrict__ x,
                                                     const float *__restrict__ w, int64_t n, int64_t co,
                                                     int64_t od, int64_t oh, int64_t ow) {
  const int64_t cin_g = g.C_in / g.groups, cout_g = g.C_out / g.groups;
  const int64_t grp = co / cout_g;
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t kD = g.kernel[0], kH = g.kernel[1], kW = g.kernel[2];
  const int mode = (int)g.padding_mode;
  const int64_t d0 = od * g.stride[0] - g.pad_lo[0];
  const int64_t h0 = oh * g.stride[1] - g.pad_lo[1];
  const int64_t w0 = ow * g.stride[2] - g.pad_lo[2];
  const float *wc = w + co * cin_g * kD * kH * kW;
  double acc = 0.0;
  for (int64_t ci = 0; ci < cin_g; ci++) {
    const float *xc = x + ((n * g.C_in) + grp * cin_g + ci) * D * H * W;
    const float *wk = wc + ci * kD * kH * kW;
    for (int64_t kd = 0; kd < kD; kd++) {
      int64_t id = volua_pad_index(d0 + kd * g.dilation[0], D, mode);
      if (id < 0) continue;
      for (int64_t kh = 0; kh < kH; kh++) {
        int64_t ih = volua_pad_index(h0 + kh * g.dilation[1], H, mode);
        if (ih < 0) continue;
        const float *xr = xc + (id * H + ih) * W;
        const float *wr = wk + (kd * kH + kh) * kW;
        for (int64_t kw = 0; kw < kW; kw++) {
          int64_t iw = volua_pad_index(w0 + kw * g.dilation[2], W, mode);
          if (iw < 0) continue;
          acc += volua_operand<TF32>(__ldg(xr + iw)) * volua_operand<TF32>(__ldg(wr + kw));
        }
      }
    }
  }
  return acc;
}

#endif
