// avg_pool3d.cu: avg_pool3d with padding, ceil_mode, count_include_pad and divisor_override
// (src/cpu/avg_pool3d.c is the reference; the window and divisor rules are src/op_params.h's).
// Three kernels, by the launcher's choice:
//   ring: windows of 3 x 3 at stride 2 along H and W (k 3 s 2, the downsampling of 3D networks
//     and KernelBench's level 1 problem 46), any window along D: each input slice a block's tile
//     reads is staged once in shared memory (see the kernel). VOLUA_AVG_RING=0 turns it off
//     (avg_ring_plan).
//   tiled: windows that tile the rows (stride = kernel along W, kW 1, 2 or 4, no padding along W,
//     every window inside the input) of a multiple of VW = 2 or 4 floats: a thread reads each of
//     its windows' rows as one 8- or 16-byte vector and makes VW / kW outputs along W, so a warp
//     reads 256 or 512 contiguous bytes a row. The common k 2 s 2 (2 x 2 windows tiling D and H
//     too) has an instance of its own: four loads in flight a thread, no clipping.
//   point: a thread per output, its window's taps one float at a time (overlapping windows along
//     W, padding along W, ceil_mode overhangs, odd rows).
// All three add in double in the reference's order (d, h, w), and divide as it does.
//
// Memory: the op is bound by memory. The ring kernel reads each input slice once per block (the
// tile's halo rows and columns again from the neighbouring blocks, through L2), 16-byte copies
// where the rows are whole float4. The tiled kernel reads each input element its windows cover
// once per window (with stride = kernel along D and H as well, e.g. k 2 s 2: every element of the
// input once, 16-byte coalesced loads, 4 bytes an element) and writes each output once (4 bytes;
// a k 2 s 2 pooling writes an eighth of what it reads). The point kernel reads a window's taps with
// 4-byte loads: overlapping windows read an element several times, through L1 and L2.
#include <stdint.h>

#include "common.cuh"
#include "pool_tiles.cuh"

// -- the window of one output ----

// The sum of input plane xp over [d0, d1) x [h0, h1) x [w0, w1), in double, in the reference's order.
__device__ __forceinline__ double avg_window_sum(const float *__restrict__ xp, int64_t IH, int64_t IW, int64_t d0,
                                                 int64_t d1, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
  double sum = 0.0;
  for (int64_t d = d0; d < d1; d++)
    for (int64_t h = h0; h < h1; h++) {
      const float *row = xp + (d * IH + h) * IW;
      for (int64_t w = w0; w < w1; w++) sum += (double)__ldg(row + w);
    }
  return sum;
}

// Output (plane, od, oh, ow) of g, as the reference computes it.
__device__ __forceinline__ float avg_pool_point(const volua_avg_pool3d_geom &ag, const float *__restrict__ x,
                                                int64_t plane, int64_t od, int64_t oh, int64_t ow) {
  const volua_pool3d_geom &g = ag.pool;
  int64_t d0, d1, pd, h0, h1, ph, w0, w1, pw;
  volua_avg_pool_window(od, g.in[0], g.kernel[0], g.stride[0], g.padding[0], &d0, &d1, &pd);
  volua_avg_pool_window(oh, g.in[1], g.kernel[1], g.stride[1], g.padding[1], &h0, &h1, &ph);
  volua_avg_pool_window(ow, g.in[2], g.kernel[2], g.stride[2], g.padding[2], &w0, &w1, &pw);
  if (d0 >= d1 || h0 >= h1 || w0 >= w1) return 0.0f; // no input in the window: 0, as PyTorch
  const float *xp = x + plane * (g.in[0] * g.in[1] * g.in[2]);
  const double sum = avg_window_sum(xp, g.in[1], g.in[2], d0, d1, h0, h1, w0, w1);
  const int64_t divisor = volua_avg_pool_divisor(&ag, pd * ph * pw, (d1 - d0) * (h1 - h0) * (w1 - w0));
  return (float)(sum / (double)divisor);
}

// -- kernels ----

// A thread per output, W fastest, in a grid-stride loop. I: int where the outputs number below
// 2^30 (the grid has at most 2^28 threads, so no step overflows), else int64_t; the window's sizes
// and offsets are int64_t either way.
template <typename I>
static __global__ void avg_pool3d_point_kernel(volua_avg_pool3d_geom ag, const float *__restrict__ x,
                                               float *__restrict__ y, int64_t total) {
  const I OD = (I)ag.pool.out[0], OH = (I)ag.pool.out[1], OW = (I)ag.pool.out[2];
  const I step = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)total; i += step) {
    const volua_coord5<I> o = volua_unflatten5<I>(i, 1, OD, OH, OW); // the planes as N, C = 1
    y[i] = avg_pool_point(ag, x, o.n, o.d, o.h, o.w);
  }
}

// VW floats of p, a VW * 4-byte aligned address, as one load.
template <int VW> struct avg_vec;
template <> struct avg_vec<4> {
  float v[4];
  __device__ __forceinline__ void load(const float *p) {
    const float4 u = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = u.x;
    v[1] = u.y;
    v[2] = u.z;
    v[3] = u.w;
  }
};
template <> struct avg_vec<2> {
  float v[2];
  __device__ __forceinline__ void load(const float *p) {
    const float2 u = __ldg(reinterpret_cast<const float2 *>(p));
    v[0] = u.x;
    v[1] = u.y;
  }
};

// Windows that tile the rows (see the top): a thread makes G = VW / KW outputs along W of one
// output row (plane, od, oh), from one VW-float vector per input row (d, h) of the window.
// KDH 0: the windows along D and H are any (padding, ceil_mode, overlap), clipped as the reference
// clips them. KDH 2: they are 2 x 2 and tile D and H too (stride 2, no padding, none past the
// end), the common k 2 s 2: the four rows' loads are issued before any add, and the divisor is
// the same for every output. Threads are numbered over (plane, od, oh, group of G outputs), the
// group fastest. I as the point kernel's.
template <typename I, int VW, int KW, int KDH>
static __global__ void avg_pool3d_tiled_kernel(volua_avg_pool3d_geom ag, const float *__restrict__ x,
                                               float *__restrict__ y, int64_t total) {
  constexpr int G = VW / KW;
  const volua_pool3d_geom &g = ag.pool;
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const I OD = (I)g.out[0], OH = (I)g.out[1];
  const int64_t OW = g.out[2];
  const I groups = (I)((OW + G - 1) / G);
  const I step = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)total; i += step) {
    const volua_coord5<I> o = volua_unflatten5<I>(i, 1, OD, OH, groups); // the planes as N, C = 1
    const I plane = o.n, od = o.d, oh = o.h, q = o.w;
    const int64_t w0 = (int64_t)q * VW; // the first column; the launcher checked w0 + VW <= IW
    double acc[G];
#pragma unroll
    for (int k = 0; k < G; k++) acc[k] = 0.0;
    double divisor;
    bool empty = false; // a window without input (the argument checks leave none): 0, as PyTorch

    if constexpr (KDH == 2) {
      const float *p = x + (((int64_t)plane * ID + 2 * (int64_t)od) * IH + 2 * (int64_t)oh) * IW + w0;
      avg_vec<VW> v[4]; // rows (d, h) = (0, 0), (0, 1), (1, 0), (1, 1): the reference's order
      v[0].load(p);
      v[1].load(p + IW);
      v[2].load(p + IH * IW);
      v[3].load(p + IH * IW + IW);
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int k = 0; k < G; k++)
#pragma unroll
          for (int j = 0; j < KW; j++) acc[k] += (double)v[r].v[k * KW + j];
      divisor = (double)volua_avg_pool_divisor(&ag, 4 * KW, 4 * KW); // no padding, nothing past the end
    } else {
      int64_t d0, d1, pd, h0, h1, ph;
      volua_avg_pool_window(od, ID, g.kernel[0], g.stride[0], g.padding[0], &d0, &d1, &pd);
      volua_avg_pool_window(oh, IH, g.kernel[1], g.stride[1], g.padding[1], &h0, &h1, &ph);
      const float *xp = x + (int64_t)plane * (ID * IH * IW) + w0;
      for (int64_t d = d0; d < d1; d++) {
#pragma unroll 2
        for (int64_t h = h0; h < h1; h++) {
          avg_vec<VW> v;
          v.load(xp + (d * IH + h) * IW);
#pragma unroll
          for (int k = 0; k < G; k++)
#pragma unroll
            for (int j = 0; j < KW; j++) acc[k] += (double)v.v[k * KW + j];
        }
      }
      // every window is inside the input along W, so both of its counts along W are KW
      divisor = (double)volua_avg_pool_divisor(&ag, pd * ph * KW, (d1 - d0) * (h1 - h0) * KW);
      empty = d0 >= d1 || h0 >= h1;
    }

    float *yp = y + (((int64_t)plane * OD + od) * OH + oh) * OW;
#pragma unroll
    for (int k = 0; k < G; k++) {
      const int64_t ow = (int64_t)q * G + k;
      if (ow < OW) yp[ow] = empty ? 0.0f : (float)(acc[k] / divisor);
    }
  }
}

// -- the ring kernel ----

// Windows of KH x KW at stride SH x SW along h and w, and any window along d (k 3 s 2): as
// max_pool3d's ring kernel (kernels/max_pool3d.cu), a block owns a tile of TH x TW outputs of one
// plane and a run of its output depths, and stages each input slice its windows read once, by
// cp.async, in a ring of buffers: the slices of one output depth's window and those the next
// output depth adds, staged while this one is computed. Positions outside the input are 0 in the
// buffers (set once), so no tap needs a bounds check. A thread takes its column and RT rows,
// converts each input value its windows read in a slice to double once, and adds them in the
// reference's order (d, h, w), so the sums are the reference's to the bit: it starts from +0.0,
// and adding +0.0 for a tap outside the input leaves a double sum as it was (a sum is never -0.0).
// A slice shared by two output depths (k 3 s 2: the last of one window, the first of the next) is
// summed once: the sum of its taps from +0.0, which the next window's sum starts with, is kept in
// registers beside the running sums (VOLUA_AVG_CARRY=0: summed for each window, measuring).
// The point kernel, which these shapes take while this one is off, reads 27 taps an output with
// 4-byte loads at stride 2 (half of every sector), each input element about 3.4 times through L1.
#define AVG_RING_RT 2 // rows a thread (PoolTile's RT0)
#define AVG_RING_NB 8 // buffers at most: a window's slices kD plus its stride sD
#ifndef AVG_RING_BLOCKS
#define AVG_RING_BLOCKS 4 // blocks an SM: 64 registers a thread (its shared memory allows 4 at 128 columns)
#endif
struct AvgRingGeom {
  int tiles_w, tiles_h, dchunk; // pool_tiles_plan's
  int nb;                       // buffers: kD + sD
  int carry;                    // 1: consecutive windows share one slice (kD = sD + 1), summed once
};

template <int KH, int KW, int SH, int SW, int TILE>
struct AvgRingTile : PoolTile<TILE, AVG_RING_RT> {
  using P = PoolTile<TILE, AVG_RING_RT>;
  static constexpr int RT = P::RT, TH = P::TH, TW = P::TW;
  static constexpr int SR = (TH - 1) * SH + KH; // a buffer's rows (from oh0 SH - pH)
  // a buffer's columns (from ow0 SW - 4)
  static constexpr int SC = pool_pitch(((TW - 1) * SW + KW + 4 + 3) / 4 * 4, RT * SH, P::LW < 32);
  static constexpr int SN = SR * SC, NR = (RT - 1) * SH + KH; // a thread's input rows a slice
};

// VEC: the rows are whole float4 (IW a multiple of 4, x 16-byte aligned): staged 16 bytes at a time.
template <int KH, int KW, int SH, int SW, int TILE, bool VEC>
static __global__ void __launch_bounds__(256, AVG_RING_BLOCKS)
    avg_pool3d_ring_kernel(volua_avg_pool3d_geom ag, AvgRingGeom rg, const float *__restrict__ x,
                           float *__restrict__ y) {
  using T = AvgRingTile<KH, KW, SH, SW, TILE>;
  constexpr int WX = T::WX, LW = T::LW, LS = T::LS, RT = T::RT, TH = T::TH, TW = T::TW, SC = T::SC, SN = T::SN;
  constexpr int NR = T::NR;
  constexpr int E = VEC ? 4 : 1, NS = (SN / E + 255) / 256; // staged units a thread
  extern __shared__ __align__(16) float ring[];             // rg.nb buffers of SN floats
  const volua_pool3d_geom &g = ag.pool;
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int kD = (int)g.kernel[0], sD = (int)g.stride[0], pD = (int)g.padding[0];
  const int pH = (int)g.padding[1], pW = (int)g.padding[2];
  const int HW = IH * IW, nb = rg.nb;
  const int64_t plane = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
  if (plane >= g.planes) return;
  int b = blockIdx.x;
  const int tw = b % rg.tiles_w;
  b /= rg.tiles_w;
  const int th = b % rg.tiles_h, chunk = b / rg.tiles_h;
  const int oh0 = th * TH, ow0 = tw * TW, od0 = chunk * rg.dchunk, od1 = min(od0 + rg.dchunk, OD);
  const int da = max(od0 * sD - pD, 0); // the first slice staged: buffer (d - da) % nb holds slice d
  const float *xp = x + plane * ((int64_t)ID * HW);

  int soff[NS]; // each staged unit's offset in a slice, or -1 (outside the input: 0; past the buffer)
  pool_stage_offsets<NS, E, SC, SN>(soff, oh0 * SH - pH, ow0 * SW - 4, IH, IW, [&](int i) {
    for (int q = 0; q < nb; q++)
#pragma unroll
      for (int u = 0; u < E; u++) ring[q * SN + i + u] = 0.0f;
  });
  // Buffer (d - da) mod nb holds slice d; the slots are counted, not divided for.
  int next = da, next_slot = 0; // the next slice to stage, and its buffer
  auto stage = [&](int first, int last) { // slices max(next, first) .. last that exist, one group
    for (; next < first; next++) next_slot = next_slot + 1 == nb ? 0 : next_slot + 1;
    for (; next <= min(last, ID - 1); next++) {
      const float *sp = xp + (int64_t)next * HW;
      float *dst = ring + next_slot * SN;
      next_slot = next_slot + 1 == nb ? 0 : next_slot + 1;
      pool_stage_slice<NS, VEC>(dst, sp, soff);
    }
    pool_cp_commit();
  };
  stage(od0 * sD - pD, od0 * sD - pD + kD - 1);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wx = warp % WX, wy = warp / WX;
  const int lc = LW * wx + lane % LW, lr = (wy * LS + lane / LW) * RT; // column and first row in the tile
  const int ow = ow0 + lc, ohr = oh0 + lr;                             // this thread's column, its first row
  const float *tap0 = ring + (lr * SH) * SC + lc * SW + 4 - pW;
  // The windows' lengths along h and w (the reference's volua_avg_pool_window), as products for
  // volua_avg_pool_divisor: in the padded input, and inside the input (0: no input in the window).
  int hw_padded[RT], hw_inside[RT];
  {
    int64_t w0, w1, wp, h0, h1, hp;
    volua_avg_pool_window(min(ow, OW - 1), IW, KW, SW, pW, &w0, &w1, &wp);
#pragma unroll
    for (int rr = 0; rr < RT; rr++) {
      volua_avg_pool_window(min(ohr + rr, OH - 1), IH, KH, SH, pH, &h0, &h1, &hp);
      hw_padded[rr] = (int)(hp * wp);
      hw_inside[rr] = h1 > h0 && w1 > w0 ? (int)((h1 - h0) * (w1 - w0)) : 0;
    }
  }
  const int64_t OHW = (int64_t)OH * OW;
  double carry[RT];
  bool carried = false;
  int slot0 = ((od0 * sD - pD - da) % nb + nb) % nb; // the buffer of od's first window slice (which may not exist)
  for (int od = od0; od < od1; od++, slot0 = slot0 + sD >= nb ? slot0 + sD - nb : slot0 + sD) {
    const int e0 = od * sD - pD;
    pool_cp_wait0();
    __syncthreads(); // od's slices are in; every thread is done with od - 1's
    if (od + 1 < od1) stage(e0 + sD, e0 + sD + kD - 1); // the next output depth's slices, beside this one's work
    // With a carry, this window's first slice is the last one of the window before, whose sum
    // from +0.0 (the first thing the reference adds for this output depth) is in carry.
    double acc[RT];
#pragma unroll
    for (int rr = 0; rr < RT; rr++) acc[rr] = carried ? carry[rr] : 0.0;
    const bool give = rg.carry && od + 1 < od1; // this window's last slice is the next one's first
    for (int k = carried ? 1 : 0; k < kD; k++) {
      const int d = e0 + k;
      const bool last = give && k == kD - 1;
      if (last)
#pragma unroll
        for (int rr = 0; rr < RT; rr++) carry[rr] = 0.0;
      if (d < 0 || d >= ID) continue; // (the same for the whole block)
      const float *bp = tap0 + (slot0 + k >= nb ? slot0 + k - nb : slot0 + k) * SN;
      double v[NR][KW]; // each value once in double; rows shared by the thread's windows
#pragma unroll
      for (int i = 0; i < NR; i++)
#pragma unroll
        for (int kw = 0; kw < KW; kw++) v[i][kw] = (double)bp[i * SC + kw];
      auto add_taps = [&](double(&sum)[RT]) { // the slice's taps of each window, in (h, w) order
#pragma unroll
        for (int rr = 0; rr < RT; rr++)
#pragma unroll
          for (int kh = 0; kh < KH; kh++)
#pragma unroll
            for (int kw = 0; kw < KW; kw++) sum[rr] += v[rr * SH + kh][kw];
      };
      add_taps(acc);
      if (last) add_taps(carry);
    }
    carried = give;
    if (ow < OW) {
      int64_t d0, d1, dp; // the window along d
      volua_avg_pool_window(od, ID, kD, sD, pD, &d0, &d1, &dp);
      const int64_t o = (plane * OD + od) * OHW + (int64_t)ohr * OW + ow;
#pragma unroll
      for (int rr = 0; rr < RT; rr++) {
        if (ohr + rr >= OH) break;
        const int64_t inside = (d1 - d0) * hw_inside[rr]; // 0: no input in the window, which gives 0, as PyTorch
        y[o + (int64_t)rr * OW] =
            d1 > d0 && inside > 0 ? (float)(acc[rr] / (double)volua_avg_pool_divisor(&ag, dp * hw_padded[rr], inside))
                                  : 0.0f;
      }
    }
  }
}

// The ring kernel's plan: *wx its tile (PoolTile's code; 0 where it does not run), its tiles and
// buffers. It runs on windows of 3 x 3 at stride 2 along h and w with padding up to 4 (the buffers
// start 4 columns before the tile's first window), any window along d whose slices and stride fit
// 8 buffers, 16 output columns or more, and planes whose in-plane offsets fit 32 bits.
// On by default since its first GPU run (bench/NOTES.md, fortieth session: L1-46 3.76 ms against
// the point kernel's 10.48 on an H100); VOLUA_AVG_RING=0 turns it off, for measuring and so that
// scripts/gpu_check.sh can run the specs' k 3 s 2 shapes on the point kernel too.
static cudaError_t avg_ring_plan(const volua_avg_pool3d_geom *ag, AvgRingGeom *rg, int *wx) {
  static const char *mode = getenv("VOLUA_AVG_RING");
  const volua_pool3d_geom *g = &ag->pool;
  *wx = 0;
  if (mode && mode[0] == '0') return cudaSuccess;
  for (int i = 1; i < 3; i++)
    if (g->kernel[i] != 3 || g->stride[i] != 2 || g->padding[i] > 4) return cudaSuccess;
  const int64_t nb = g->kernel[0] + g->stride[0];
  if (nb > AVG_RING_NB || g->out[2] < 16) return cudaSuccess;
  // 32-bit in-plane offsets and window positions (a ceil_mode window may reach past the input)
  int64_t span = 1;
  for (int i = 0; i < 3 && span < ((int64_t)1 << 31); i++) span *= g->in[i] + g->kernel[i] + g->stride[i];
  if (span >= ((int64_t)1 << 31) || g->out[0] * g->stride[0] >= ((int64_t)1 << 30)) return cudaSuccess;
  rg->nb = (int)nb;
  static const char *carry = getenv("VOLUA_AVG_CARRY");
  rg->carry = g->kernel[0] == g->stride[0] + 1 && !(carry && carry[0] == '0');
  return pool_tiles_plan<AVG_RING_RT>(g, NULL, rg, wx);
}

// -- launcher ----

// The vector width for the tiled kernel (0: the point kernel): windows that tile W inside the
// input, kW dividing the width, rows and x aligned to it.
static int tiled_width(const volua_avg_pool3d_geom *ag, const float *x) {
  const volua_pool3d_geom *g = &ag->pool;
  const int64_t kW = g->kernel[2];
  if (g->stride[2] != kW || g->padding[2] != 0 || (kW != 1 && kW != 2 && kW != 4)) return 0;
  if (g->out[2] * kW > g->in[2]) return 0; // a ceil_mode window hangs over the end
  if (g->in[2] % 4 == 0 && (uintptr_t)x % 16 == 0) return 4;
  if (kW <= 2 && g->in[2] % 2 == 0 && (uintptr_t)x % 8 == 0) return 2;
  return 0;
}

// Whether the windows are 2 x 2 along D and H and tile them: stride 2, no padding, none past the end.
static bool tiles_2x2(const volua_pool3d_geom *g) {
  for (int i = 0; i < 2; i++)
    if (g->kernel[i] != 2 || g->stride[i] != 2 || g->padding[i] != 0 || g->out[i] * 2 > g->in[i]) return false;
  return true;
}

typedef void (*avg_kernel)(volua_avg_pool3d_geom, const float *, float *, int64_t);

// Runs a kernel over `total` threads: its int instance where total is below 2^30, else its int64_t one.
static void avg_launch(avg_kernel k32, avg_kernel k64, const volua_avg_pool3d_geom *ag, const float *x, float *y,
                       int64_t total, cudaStream_t s) {
  const unsigned blocks = volua_grid_for(total, VOLUA_THREADS);
  if (total < ((int64_t)1 << 30)) k32<<<blocks, VOLUA_THREADS, 0, s>>>(*ag, x, y, total);
  else k64<<<blocks, VOLUA_THREADS, 0, s>>>(*ag, x, y, total);
}

extern "C" int volua_cuda_avg_pool3d(const volua_avg_pool3d_geom *ag, const float *x, float *y, cudaStream_t s,
                                     char *err) {
  const char *op = "avg_pool3d";
  const volua_pool3d_geom *g = &ag->pool;
  const int64_t rows = g->planes * g->out[0] * g->out[1];
  if (rows == 0 || g->out[2] == 0) return 0;
  AvgRingGeom rg;
  int rwx = 0;
  CUDA_CHECK(avg_ring_plan(ag, &rg, &rwx));
  if (rwx) {
    const bool vec = g->in[2] % 4 == 0 && (uintptr_t)x % 16 == 0;
    const int64_t py = g->planes < 65535 ? g->planes : 65535;
    dim3 rgrid((unsigned)pool_tiles_blocks(&rg, g->out[0]), (unsigned)py, (unsigned)((g->planes + py - 1) / py));
#define AVG_RING(TILE, V)                                                                                      \
  do {                                                                                                         \
    constexpr int sn = AvgRingTile<3, 3, 2, 2, TILE>::SN * (int)sizeof(float);                                 \
    CUDA_CHECK((pool_smem_limit<avg_pool3d_ring_kernel<3, 3, 2, 2, TILE, V>>(AVG_RING_NB * sn)));             \
    avg_pool3d_ring_kernel<3, 3, 2, 2, TILE, V><<<rgrid, 256, (size_t)(rg.nb * sn), s>>>(*ag, rg, x, y);       \
  } while (0)
#define AVG_RING_WX(V)                                                                                         \
  do {                                                                                                         \
    if (rwx == 4) AVG_RING(4, V);                                                                              \
    else if (rwx == 2) AVG_RING(2, V);                                                                         \
    else if (rwx == 1) AVG_RING(1, V);                                                                         \
    else AVG_RING(16, V);                                                                                      \
  } while (0)
    if (vec) AVG_RING_WX(true);
    else AVG_RING_WX(false);
#undef AVG_RING_WX
#undef AVG_RING
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  const int vw = tiled_width(ag, x);
  if (vw) {
    const int64_t kw = g->kernel[2];
    const int64_t total = rows * ((g->out[2] + vw / kw - 1) / (vw / kw));
    const bool k2 = kw == 2 && tiles_2x2(g);
#define AVG_TILED(VW, KW, KDH) avg_pool3d_tiled_kernel<int, VW, KW, KDH>, avg_pool3d_tiled_kernel<int64_t, VW, KW, KDH>
    if (vw == 4 && k2) avg_launch(AVG_TILED(4, 2, 2), ag, x, y, total, s);
    else if (vw == 2 && k2) avg_launch(AVG_TILED(2, 2, 2), ag, x, y, total, s);
    else if (vw == 4 && kw == 4) avg_launch(AVG_TILED(4, 4, 0), ag, x, y, total, s);
    else if (vw == 4 && kw == 2) avg_launch(AVG_TILED(4, 2, 0), ag, x, y, total, s);
    else if (vw == 4) avg_launch(AVG_TILED(4, 1, 0), ag, x, y, total, s);
    else if (kw == 2) avg_launch(AVG_TILED(2, 2, 0), ag, x, y, total, s);
    else avg_launch(AVG_TILED(2, 1, 0), ag, x, y, total, s);
#undef AVG_TILED
  } else {
    avg_launch(avg_pool3d_point_kernel<int>, avg_pool3d_point_kernel<int64_t>, ag, x, y, rows * g->out[2], s);
  }
  CUDA_CHECK_LAUNCH();
  return 0;
}
