// pool_emulate.cpp: the host side of scripts/pool_emulate.sh: a shim for the CUDA that
// kernels/avg_pool3d.cu and adaptive_pool3d.cu use (thread indices, __ldg checked for bounds and
// alignment, launches that run every thread in turn; common.cuh itself, its device intrinsics
// stubbed), then random
// geometries within PyTorch's rules, each run by the kernels' launchers and by the CPU references
// and compared bit for bit (both add in double in the same order and divide the same way).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <vector>

#include <cuda_runtime.h> // cudaStream_t, float2, float4 (host definitions); before the shim's defines

// -- the shim ----

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)

struct emu_index {
  unsigned x, y, z;
};
static emu_index blockIdx, threadIdx, blockDim, gridDim;
static const char *emu_lo, *emu_hi; // the input's bytes: every load must lie inside

template <class T> static T __ldg(const T *p) {
  const char *c = (const char *)p;
  if (c < emu_lo || c + sizeof(T) > emu_hi) {
    fprintf(stderr, "a load out of bounds: byte %td of the input\n", c - emu_lo);
    abort();
  }
  if ((uintptr_t)p % sizeof(T)) {
    fprintf(stderr, "a misaligned %zu-byte load\n", sizeof(T));
    abort();
  }
  return *p;
}

template <class K, class... A> static void emu_launch(K kernel, unsigned grid, unsigned block, A... args) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  for (unsigned b = 0; b < grid; b++)
    for (unsigned t = 0; t < block; t++) {
      blockIdx = {b, 0, 0};
      threadIdx = {t, 0, 0};
      kernel(args...);
    }
}

// what common.cuh's device helpers call, never run here (the pools use none of them)
template <class T> static T __shfl_down_sync(unsigned, T v, int) { return v; }
static void __syncthreads() {}
static float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

#include "common.cuh" // volua_grid_for, volua_unflatten5, CUDA_CHECK_LAUNCH, as the kernels see them
extern "C" {
#include "cpu/cpu.h"
#include "ops.h" // volua_pool_output_size (src/ops/pool3d.c)
}

#include EMU_AVG
#include EMU_ADAPTIVE

// -- what the CUDA runtime and src/ops/pool3d.c, checks.c need of the rest of volua (unused here) ----

extern "C" {
cudaError_t cudaGetLastError(void) { return cudaSuccess; } // (CUDA_CHECK_LAUNCH's; no runtime here)
const char *cudaGetErrorString(cudaError_t) { return "emulated"; }
volatile int volua_interrupted = 0;
int volua_cpu_check_interrupt(const char *, char *) { return 0; }
const char *volua_dtype_name(volua_dtype) { return "?"; }
const char *volua_device_name(volua_device) { return "?"; }
const char *volua_shape_str(int, const int64_t *, char *buf, size_t n) { return n ? (buf[0] = 0, buf) : buf; }
int volua_tensor_alloc(volua_tensor *, int, const int64_t *, volua_dtype, volua_device, char *) { return 1; }
void volua_tensor_free(volua_tensor *) {}
}

// -- the cases ----

static std::mt19937_64 rng;
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1)); }
static bool same(float a, float b) { return (a != a && b != b) || memcmp(&a, &b, 4) == 0; }
static int failures = 0;

// n normal values, with a NaN, inf and -inf at random places when nonfinite
static void fill(float *x, int64_t n, bool nonfinite) {
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < n; i++) x[i] = normal(rng);
  if (nonfinite)
    for (float v : {NAN, INFINITY, -INFINITY}) x[irand(0, n - 1)] = v;
}

static void check_avg(const volua_avg_pool3d_geom &g, int offset, bool nonfinite) {
  const volua_pool3d_geom &p = g.pool;
  const int64_t nin = p.planes * p.in[0] * p.in[1] * p.in[2], nout = p.planes * p.out[0] * p.out[1] * p.out[2];
  std::vector<float> buf((size_t)nin + 4);
  float *x = buf.data() + offset; // offset floats past a 16-byte boundary: the narrower paths
  fill(x, nin, nonfinite);
  std::vector<float> want((size_t)nout), got((size_t)nout + 64, NAN);
  char err[VOLUA_ERR_MAX];
  volua_cpu_avg_pool3d(&g, x, want.data(), err);
  emu_lo = (const char *)x, emu_hi = (const char *)(x + nin);
  volua_cuda_avg_pool3d(&g, x, got.data(), 0, err);
  for (int64_t i = 0; i < nout + 64; i++) {
    if (i < nout ? same(got[i], want[i]) : got[i] != got[i]) continue;
    fprintf(stderr,
            "avg_pool3d: output %lld %s: planes %lld, in (%lld %lld %lld), kernel (%lld %lld %lld), stride (%lld %lld "
            "%lld), padding (%lld %lld %lld), ceil_mode %d, count_include_pad %d, divisor %lld, offset %d\n",
            (long long)i, i < nout ? "differs" : "written past the end", (long long)p.planes, (long long)p.in[0],
            (long long)p.in[1], (long long)p.in[2], (long long)p.kernel[0], (long long)p.kernel[1],
            (long long)p.kernel[2], (long long)p.stride[0], (long long)p.stride[1], (long long)p.stride[2],
            (long long)p.padding[0], (long long)p.padding[1], (long long)p.padding[2], p.ceil_mode,
            g.count_include_pad, (long long)g.divisor_override, offset);
    failures++;
    return;
  }
}

static void check_adaptive(volua_adaptive_pool3d_geom g, bool nonfinite) {
  const int64_t nin = g.planes * g.in[0] * g.in[1] * g.in[2], nout = g.planes * g.out[0] * g.out[1] * g.out[2];
  std::vector<float> x((size_t)nin);
  fill(x.data(), nin, nonfinite);
  std::vector<float> want((size_t)nout), wmax((size_t)nout);
  std::vector<int64_t> widx((size_t)nout);
  std::vector<float> got((size_t)nout + 64, NAN), gmax((size_t)nout + 64, NAN), gmax2((size_t)nout + 64, NAN);
  std::vector<int64_t> gidx((size_t)nout + 64, -7);
  char err[VOLUA_ERR_MAX];
  volua_cpu_adaptive_avg_pool3d(&g, x.data(), want.data(), err);
  volua_cpu_adaptive_max_pool3d(&g, x.data(), wmax.data(), widx.data(), err);
  emu_lo = (const char *)x.data(), emu_hi = (const char *)(x.data() + nin);
  volua_cuda_adaptive_avg_pool3d(&g, x.data(), got.data(), 0, err);
  g.return_indices = 1;
  volua_cuda_adaptive_max_pool3d(&g, x.data(), gmax.data(), gidx.data(), 0, err);
  g.return_indices = 0;
  volua_cuda_adaptive_max_pool3d(&g, x.data(), gmax2.data(), nullptr, 0, err);
  for (int64_t i = 0; i < nout + 64; i++) {
    const bool ok = i < nout ? same(got[i], want[i]) && same(gmax[i], wmax[i]) && same(gmax2[i], wmax[i]) &&
                                   gidx[i] == widx[i]
                             : got[i] != got[i] && gmax[i] != gmax[i] && gmax2[i] != gmax2[i] && gidx[i] == -7;
    if (ok) continue;
    fprintf(stderr, "adaptive pools: output %lld %s: planes %lld, in (%lld %lld %lld), out (%lld %lld %lld)\n",
            (long long)i, i < nout ? "differs" : "written past the end", (long long)g.planes, (long long)g.in[0],
            (long long)g.in[1], (long long)g.in[2], (long long)g.out[0], (long long)g.out[1], (long long)g.out[2]);
    failures++;
    return;
  }
}

int main(int argc, char **argv) {
  const int trials = argc > 1 ? atoi(argv[1]) : 20000;
  rng.seed(argc > 2 ? strtoull(argv[2], NULL, 10) : 20261128);
  long tiled = 0, tiles_2 = 0, ran = 0;
  for (int t = 0; t < trials; t++) {
    volua_avg_pool3d_geom g = {};
    volua_pool3d_geom &p = g.pool;
    p.planes = irand(1, 4);
    // a quarter k 2 s 2 (the common case), a quarter kernels of 1, 2 or 4 mostly at stride = kernel
    // without padding (the tiled kernel's other instances), half anything
    const int64_t mode = irand(0, 3);
    const bool tiling = mode == 1;
    for (int i = 0; i < 3; i++) {
      static const int64_t tile_kernels[] = {1, 2, 2, 2, 4};
      p.kernel[i] = mode == 0 ? 2 : tiling ? tile_kernels[irand(0, 4)] : irand(1, 5);
      p.stride[i] = mode == 0 || (tiling && irand(0, 3)) ? p.kernel[i] : irand(1, 5);
      p.padding[i] = mode == 0 || (tiling && irand(0, 1)) ? 0 : irand(0, p.kernel[i] / 2);
      p.in[i] = irand(p.kernel[i], p.kernel[i] + 9); // avg_pool3d: the input holds a kernel
      p.dilation[i] = 1;
    }
    if (irand(0, 1)) p.in[2] = std::max(p.kernel[2], 4 * irand(1, 12) + (irand(0, 3) ? 0 : 2));
    p.ceil_mode = (int)irand(0, 1);
    bool valid = true;
    for (int i = 0; i < 3; i++) {
      p.out[i] = volua_pool_output_size(p.in[i], p.kernel[i], p.stride[i], p.padding[i], 1, p.ceil_mode);
      valid = valid && p.out[i] >= 1;
    }
    if (!valid) continue;
    g.count_include_pad = (int)irand(0, 1);
    static const int64_t divisors[] = {-3, 1, 5, 100};
    g.divisor_override = irand(0, 3) ? 0 : divisors[irand(0, 3)];
    const int offset = irand(0, 3) ? 0 : (int)irand(1, 3);
    const float *aligned = reinterpret_cast<const float *>((uintptr_t)64 + 4 * offset);
    if (tiled_width(&g, aligned)) {
      tiled++;
      tiles_2 += p.kernel[2] == 2 && tiles_2x2(&p);
    }
    check_avg(g, offset, irand(0, 2) == 0);
    ran++;
  }
  for (int t = 0; t < trials / 2; t++) {
    volua_adaptive_pool3d_geom g = {};
    g.planes = irand(1, 3);
    for (int i = 0; i < 3; i++) {
      g.in[i] = irand(1, 12);
      g.out[i] = irand(1, 14);
    }
    check_adaptive(g, irand(0, 2) == 0);
  }
  printf("avg_pool3d: %ld cases (%ld by the tiled kernel, %ld of them 2 x 2 x 2 tiles); adaptive: %d cases; "
         "%d failed\n", ran, tiled, tiles_2, trials / 2, failures);
  return failures != 0;
}
