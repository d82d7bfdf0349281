// pool_emulate.cpp: the host side of scripts/pool_emulate.sh: a shim for the CUDA that
// kernels/avg_pool3d.cu and adaptive_pool3d.cu use (thread indices, __ldg checked for bounds and
// alignment, launches that run every thread in turn; for the ring kernel, blocks whose threads are
// fibers that meet at its barriers, shared memory and cp.async; common.cuh itself, its device
// intrinsics stubbed), then random
// geometries within PyTorch's rules, each run by the kernels' launchers and by the CPU references
// and compared bit for bit (both add in double in the same order and divide the same way).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>
#include <random>
#include <vector>

#include <ucontext.h>

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

// -- blocks whose threads share memory (avg_pool3d's ring kernel) ----
//
// Each thread of a block is a fiber (ucontext) that runs until its next __syncthreads or its end;
// a barrier's epoch runs every waiting thread in turn, in ascending or (emu_reverse) descending
// order, so either thread of a pair that a missing barrier would race runs first in one of the
// two. The block's dynamic shared memory is poisoned first (3e38, which no window of normal
// values hides; one holding inf or NaN can) with a guard past its end, as the GPU leaves it
// holding anything. A
// cp.async copy (pool_cp_async16/4) is checked for bounds and alignment on both sides, and lands
// at its issue (emu_late 0: a copy that overwrote a buffer another thread still reads is seen
// first) or at the wait_group that covers it (emu_late 1: a read of a buffer before its copies'
// wait and barrier sees the old contents).
static int emu_late, emu_reverse;
static float *emu_shared;        // the block's dynamic shared memory
static size_t emu_shared_floats; // its size (the launch's bytes / 4)
static const float EMU_SMEM_POISON = 3e38f;
struct emu_copy {
  float *dst;
  const float *src;
  int floats, group;
};
struct emu_fiber {
  ucontext_t ctx;
  std::vector<char> stack;
  bool done, at_barrier;
  int committed; // groups committed so far; a copy belongs to the group open at its issue
  std::vector<emu_copy> pending;
};
static std::vector<emu_fiber> emu_fibers;
static ucontext_t emu_main;
static int emu_cur = -1; // the fiber running, -1: none (emu_launch's kernels)
static std::function<void()> emu_body;
static long emu_barriers; // epochs run, over all blocks (the report's count)

static void emu_fiber_entry() {
  emu_body();
  emu_fibers[emu_cur].done = true; // (uc_link returns to the scheduler)
}

static void emu_fail(const char *what) {
  fprintf(stderr, "ring kernel: %s (block %u %u %u, thread %u)\n", what, blockIdx.x, blockIdx.y, blockIdx.z,
          threadIdx.x);
  abort();
}

static void __syncthreads() {
  if (emu_cur < 0) return; // (emu_launch's kernels use none)
  emu_fibers[emu_cur].at_barrier = true;
  swapcontext(&emu_fibers[emu_cur].ctx, &emu_main);
}

static void emu_land(const emu_copy &c) { memcpy(c.dst, c.src, 4 * (size_t)c.floats); }

static void emu_cp_async(float *dst, const float *src, int floats) {
  const char *c = (const char *)src;
  if (emu_cur < 0) emu_fail("cp.async outside a shared-memory block");
  if (c < emu_lo || c + 4 * floats > emu_hi) emu_fail("a cp.async read out of bounds");
  if (dst < emu_shared || dst + floats > emu_shared + emu_shared_floats)
    emu_fail("a cp.async write past shared memory");
  if ((uintptr_t)src % (4 * floats) || (uintptr_t)dst % (4 * floats)) emu_fail("a misaligned cp.async");
  emu_fiber &f = emu_fibers[emu_cur];
  const emu_copy cp = {dst, src, floats, f.committed};
  if (emu_late) f.pending.push_back(cp);
  else emu_land(cp);
}
static void pool_cp_async16(float *dst, const float *src) { emu_cp_async(dst, src, 4); }
static void pool_cp_async4(float *dst, const float *src) { emu_cp_async(dst, src, 1); }
static void pool_cp_commit() { emu_fibers[emu_cur].committed++; }
static void emu_cp_wait(int newest) { // cp.async.wait_group newest: all but the newest committed groups land
  emu_fiber &f = emu_fibers[emu_cur];
  std::vector<emu_copy> keep;
  for (const emu_copy &c : f.pending)
    if (c.group < f.committed - newest) emu_land(c);
    else keep.push_back(c);
  f.pending.swap(keep);
}
static void pool_cp_wait0() { emu_cp_wait(0); }
static void pool_cp_wait1() { emu_cp_wait(1); }

static void emu_run_block(unsigned block) {
  for (size_t i = 0; i < emu_shared_floats + 64; i++) emu_shared[i] = EMU_SMEM_POISON;
  if (emu_fibers.size() < block) emu_fibers.resize(block);
  for (unsigned t = 0; t < block; t++) {
    emu_fiber &f = emu_fibers[t];
    if (f.stack.empty()) f.stack.resize(256 * 1024);
    f.done = f.at_barrier = false;
    f.committed = 0;
    f.pending.clear();
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = &emu_main;
    makecontext(&f.ctx, emu_fiber_entry, 0);
  }
  for (;;) {
    for (unsigned i = 0; i < block; i++) {
      const unsigned t = emu_reverse ? block - 1 - i : i;
      if (emu_fibers[t].done) continue;
      emu_cur = (int)t;
      threadIdx = {t, 0, 0};
      swapcontext(&emu_main, &emu_fibers[t].ctx);
    }
    emu_cur = -1;
    unsigned done = 0;
    for (unsigned t = 0; t < block; t++) done += emu_fibers[t].done;
    if (done == block) break;
    if (done) emu_fail("some threads ended while others wait at a barrier");
    for (unsigned t = 0; t < block; t++) emu_fibers[t].at_barrier = false;
    emu_barriers++;
  }
  for (unsigned t = 0; t < block; t++) { // copies in flight at the end land (nothing reads them)
    for (const emu_copy &c : emu_fibers[t].pending) emu_land(c);
    emu_fibers[t].pending.clear();
  }
  for (size_t i = emu_shared_floats; i < emu_shared_floats + 64; i++)
    if (memcmp(&emu_shared[i], &EMU_SMEM_POISON, 4)) emu_fail("a store past the block's shared memory");
}

static long emu_smem_launches;
template <class K, class... A>
static void emu_launch_smem(K kernel, dim3 grid, unsigned block, size_t bytes, A... args) {
  gridDim = {grid.x, grid.y, grid.z};
  blockDim = {block, 1, 1};
  std::vector<float> smem(bytes / 4 + 64 + 4);
  emu_shared = (float *)(((uintptr_t)smem.data() + 15) / 16 * 16);
  emu_shared_floats = bytes / 4;
  emu_body = [&] { kernel(args...); };
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned b = 0; b < grid.x; b++) {
        blockIdx = {b, y, z};
        emu_run_block(block);
      }
  emu_smem_launches++;
}

// what the kernels call of CUDA's device library and the ring kernel's launcher of the runtime
static int min(int a, int b) { return a < b ? a : b; }
static int max(int a, int b) { return a > b ? a : b; }
template <class T> static cudaError_t cudaFuncSetAttribute(T *, cudaFuncAttribute, int) { return cudaSuccess; }

// what common.cuh's device helpers call, never run here (the pools use none of them)
template <class T> static T __shfl_down_sync(unsigned, T v, int) { return v; }
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
cudaError_t cudaGetDevice(int *d) { return *d = 0, cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int) { // an H100's SMs (the ring kernel's plan)
  *v = a == cudaDevAttrMultiProcessorCount ? 132 : 0;
  return cudaSuccess;
}
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

// avg_pool3d's ring kernel (on unless VOLUA_AVG_RING=0): windows of 3 x 3 at stride 2 along h and w with
// 16 output columns or more, any window along d whose slices and stride fit its 8 buffers; rows of
// whole float4 or not (odd widths, inputs 1 to 3 floats past a 16-byte boundary); few planes (the
// plan then splits a plane's output depths into chunks) and many (up to 130: more blocks than
// the plan's target); each case under one of the four schedules (copies early or late, threads
// ascending or descending), each schedule a quarter of the cases.
static void ring_trials(int trials) {
  long ran = 0, before = emu_smem_launches;
  for (int t = 0; t < trials; t++) {
    volua_avg_pool3d_geom g = {};
    volua_pool3d_geom &p = g.pool;
    p.planes = irand(0, 5) ? irand(1, 4) : irand(20, 130);
    p.kernel[0] = irand(1, 5), p.stride[0] = irand(1, 3), p.padding[0] = irand(0, p.kernel[0] / 2);
    for (int i = 1; i < 3; i++) p.kernel[i] = 3, p.stride[i] = 2, p.padding[i] = irand(0, 1);
    for (int i = 0; i < 3; i++) p.dilation[i] = 1;
    p.in[0] = irand(p.kernel[0], p.kernel[0] + (p.planes > 4 ? 3 : 16));
    p.in[1] = irand(3, p.planes > 4 ? 12 : 40);
    p.in[2] = irand(0, 1) ? 4 * irand(8, p.planes > 4 ? 20 : 75) : irand(31, p.planes > 4 ? 80 : 300);
    p.ceil_mode = (int)irand(0, 1);
    for (int i = 0; i < 3; i++)
      p.out[i] = volua_pool_output_size(p.in[i], p.kernel[i], p.stride[i], p.padding[i], 1, p.ceil_mode);
    if (p.out[0] < 1 || p.out[1] < 1 || p.out[2] < 16) continue;
    g.count_include_pad = (int)irand(0, 1);
    static const int64_t divisors[] = {-3, 1, 5, 100};
    g.divisor_override = irand(0, 3) ? 0 : divisors[irand(0, 3)];
    emu_late = t & 1, emu_reverse = (t >> 1) & 1;
    check_avg(g, irand(0, 3) ? 0 : (int)irand(1, 3), irand(0, 2) == 0);
    ran++;
  }
  emu_late = emu_reverse = 0;
  printf("avg_pool3d ring kernel: %ld cases, %ld by the ring kernel, %ld barrier epochs; %d failed so far\n", ran,
         emu_smem_launches - before, emu_barriers, failures);
  if (emu_smem_launches - before != ran) {
    printf("avg_pool3d ring kernel: %ld of the cases did not take it\n", ran - (emu_smem_launches - before));
    failures++;
  }
}

int main(int argc, char **argv) {
  const int trials = argc > 1 ? atoi(argv[1]) : 20000;
  rng.seed(argc > 2 ? strtoull(argv[2], NULL, 10) : 20261128);
  setenv("VOLUA_AVG_RING", "1", 1); // the ring kernel's cases take it whatever the caller's environment says
  ring_trials(trials / 50 > 20 ? trials / 50 : 20);
  const long ring_before = emu_smem_launches;
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
  printf("avg_pool3d: %ld cases (%ld by the tiled kernel, %ld of them 2 x 2 x 2 tiles, %ld by the ring kernel); "
         "adaptive: %d cases; %d failed\n", ran, tiled, tiles_2, emu_smem_launches - ring_before, trials / 2, failures);
  return failures != 0;
}
