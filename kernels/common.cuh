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
