// conv3d_pointwise.cu: 1x1x1 convolutions (stride 1, no padding, groups 1) on the tensor cores, in
// one kernel: for each sample, y (C_out, S) = w (C_out, C_in) x (C_in, S) + bias, S = D H W. The
// input is read in its own layout, with no channels-last copy and no weight preparation. These
// layers are memory-bound, and on 256 -> 64 of (2, 256, 16, 32, 32) the channels-last copy took
// about half of conv3d_cl.cu's time and the weight preparation a sixth of conv3d_tc.cu's
// (bench/NOTES.md, fifteenth session).
//
// A block computes BM positions of one sample by PW_BN output channels, walking C_in in chunks
// of BK through a ring of PW_STAGES shared-memory stages filled by cp.async: x's chunk as BK
// rows of BM positions (each row contiguous in memory), w's as PW_BN rows of BK channels (PwShape:
// BM 256, BK 16 in math "tf32"; 128 and 32 in "fp32").
// Eight warps, each BM / 4 positions by 32 channels: per k-step of 8, BM / 64 m16 tiles by four n8 tiles of
// mma.sync m16n8k8 (TF32), A (positions x channels) read from the x rows, B from the w rows. Math
// "tf32": the raw float bits, which the tensor core truncates to TF32 (as conv3d_tc.cu); math
// "fp32": each operand split into a TF32 big part and the rest, three products (big big, big small,
// small big) into one accumulator, added to a second one on the CUDA cores after each chunk of BK
// channels (tc_promote in tc_prims.cuh: the tensor core's truncated sums stay short). The output
// goes straight from the accumulators: lanes g = 0..7 of a fragment
// hold 8 consecutive positions of one channel, 32 bytes a store.
// conv3d_pointwise_tma_kernel: from 128 input channels on Hopper, both maths, the loads by TMA and
// wgmma's 64 x 64 x 8 products (A from registers, w from the stage) in place of mma.sync.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "fast.h"
#include "tc_core.cuh" // (tc_get_env: whether the sm_90a code, with wgmma, runs here)

#define PW_BN 64 // output channels a block
#define PW_STAGES 4
#define PW_THREADS 256

// A block's shape: 64 MI positions (each warp 16 MI of them by 32 channels: MI m16 tiles by four
// n8 tiles) and BK input channels a stage. x rows' pitch XP and w rows' pitch WP put the A loads
// (rows t, columns g) and the B loads (rows g, columns t) in 32 banks.
template <int MI, int BK_> struct PwShape {
  static const int BM = 64 * MI, BK = BK_, XP = BM + 8, WP = BK + 4, STAGE = BK * XP + PW_BN * WP; // (floats)
};

struct PwParams {
  const float *x, *w, *bias; // bias: NULL for none (and with ksplit > 1: added by pw_reduce_kernel)
  float *y;                  // the output, or with ksplit > 1 the parts' sums (ksplit copies of it)
  int64_t S, C_in, C_out;    // positions a sample, channels
  int64_t ptiles;            // tiles a sample: ceil(S / BM)
  int64_t cblocks;           // channel blocks: ceil(C_out / PW_BN)
  int64_t kchunks;           // chunks of C_in: ceil(C_in / BK)
  int64_t ksplit;            // parts of C_in (at most kchunks)
  int64_t units;             // N ptiles cblocks ksplit (below 2^31)
  int64_t ysize;             // N C_out S
  unsigned units32, ksplit32, cblocks32, ptiles32, kchunks32; // the same in 32 bits (the cursors' divisions)
  int bm;                    // positions a tile (the kernel's BM)
  int wvec;                  // 16-byte copies of w (C_in a multiple of 4, w 16-byte aligned)
  int *nf_flag, nf_stamp;    // math "fp32": the non-finite flag (fast.h, volua_cuda_nf_begin), or NULL
};

// A block takes units blockIdx.x, + gridDim.x, ... and each unit's chunks of C_in in turn: one
// stream of steps, which the ring of stages runs through across units (a unit of one or two chunks
// still has the next unit's loads in flight). Unit u: part u % ksplit of channel block
// u / ksplit % cblocks of tile u / (ksplit cblocks) (a tile's blocks run side by side and read its x
// through L2 once); a tile: sample n, positions p0 ...
struct PwCursor {
  unsigned u, n;    // the unit, its sample
  int kc, hi, part; // the chunk, the unit's end chunk, its part
  int64_t p0, co0;  // its first position and channel
};
__device__ __forceinline__ void pw_unit(PwCursor &c, const PwParams &p, unsigned u) {
  c.u = u;
  if (u >= p.units32) return;
  const unsigned part = u % p.ksplit32, cu = u / p.ksplit32, tile = cu / p.cblocks32;
  c.part = (int)part;
  c.kc = (int)(part * p.kchunks32 / p.ksplit32); // (16 kchunks < 2^32: the host's limit on C_in)
  c.hi = (int)((part + 1) * p.kchunks32 / p.ksplit32);
  c.co0 = (int64_t)(cu - tile * p.cblocks32) * PW_BN;
  c.n = tile / p.ptiles32;
  c.p0 = (int64_t)(tile - c.n * p.ptiles32) * p.bm;
}
__device__ __forceinline__ void pw_next(PwCursor &c, const PwParams &p) {
  if (++c.kc == c.hi) pw_unit(c, p, c.u + gridDim.x); // (below 2^32: units and the grid below 2^31)
}

// Stage `st` <- the cursor's chunk of x's rows (channels) and w's columns. VEC: 16-byte copies of x
// (S a multiple of 4: a row's 4-position groups are whole or wholly past S); else 4-byte copies.
// Out-of-range elements (past C_in, S or C_out) are filled with zeros.
template <bool VEC, class Sh>
__device__ __forceinline__ void pw_load(float *st, const PwParams &p, const PwCursor &c) {
  const int BK = Sh::BK;
  const int tid = (int)threadIdx.x;
  const float *xs = p.x + c.n * p.C_in * p.S;
  const int64_t p0 = c.p0, co0 = c.co0, k0 = (int64_t)c.kc * BK;
  float *xsm = st, *wsm = st + BK * Sh::XP;
  if (VEC) {
#pragma unroll
    for (int j = 0; j < BK * Sh::BM / 4 / PW_THREADS; j++) {
      const int c = tid + j * PW_THREADS, row = c / (Sh::BM / 4), col = (c % (Sh::BM / 4)) * 4;
      const bool ok = k0 + row < p.C_in && p0 + col < p.S;
      const float *src = ok ? xs + (k0 + row) * p.S + p0 + col : p.x;
      tc_cp16z(xsm + row * Sh::XP + col, src, ok);
    }
  } else {
#pragma unroll 4
    for (int j = 0; j < BK * Sh::BM / PW_THREADS; j++) {
      const int c = tid + j * PW_THREADS, row = c / Sh::BM, col = c % Sh::BM;
      const bool ok = k0 + row < p.C_in && p0 + col < p.S;
      const float *src = ok ? xs + (k0 + row) * p.S + p0 + col : p.x;
      tc_cp4(xsm + row * Sh::XP + col, src, ok);
    }
  }
  if (p.wvec) {
#pragma unroll
    for (int j = 0; j < PW_BN * BK / 4 / PW_THREADS; j++) {
      const int c = tid + j * PW_THREADS, row = c / (BK / 4), col = (c % (BK / 4)) * 4;
      const bool ok = co0 + row < p.C_out && k0 + col < p.C_in;
      const float *src = ok ? p.w + (co0 + row) * p.C_in + k0 + col : p.w;
      tc_cp16z(wsm + row * Sh::WP + col, src, ok);
    }
  } else {
#pragma unroll
    for (int j = 0; j < PW_BN * BK / PW_THREADS; j++) {
      const int c = tid + j * PW_THREADS, row = c / BK, col = c % BK;
      const bool ok = co0 + row < p.C_out && k0 + col < p.C_in;
      const float *src = ok ? p.w + (co0 + row) * p.C_in + k0 + col : p.w;
      tc_cp4(wsm + row * Sh::WP + col, src, ok);
    }
  }
}

// both accumulators to zero (at the start, and after each unit's stores)
template <int MI, int NJ> __device__ __forceinline__ void pw_zero(float (&acc)[MI][NJ][4], float (&corr)[MI][NJ][4]) {
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int j = 0; j < NJ; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = corr[i][j][e] = 0.0f;
}

// an operand's TF32 big part (truncation, as the tensor core reads raw bits) and, for SPLIT, the rest
template <bool SPLIT> __device__ __forceinline__ void pw_split(float v, uint32_t &big, uint32_t &small) {
  if (SPLIT) {
    big = tc_tf32_big(v);
    small = __float_as_uint(tc_tf32_small(v));
  } else {
    big = __float_as_uint(v);
  }
}

// The thread's values of the warp's MI m16 tiles by NJ n8 tiles to y (or the part's copy): tile i
// at positions wm + IS i of the block's, n8 tile j at channels wn + 8 j; fragment (i, j), e 0, 1 at
// position row g, channels 2t, 2t + 1; e 2, 3 at row g + 8.
template <bool SPLIT, int MI, int NJ, int IS>
__device__ __forceinline__ void pw_store(const PwParams &p, const PwCursor &c, float (&acc)[MI][NJ][4],
                                         float (&corr)[MI][NJ][4], int wm, int wn) {
  const int lane = (int)threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  if (SPLIT) tc_note_nonfinite(corr, p.nf_flag, p.nf_stamp);
  float *yn = p.y + (p.ksplit > 1 ? c.part * p.ysize : 0) + c.n * p.C_out * p.S;
#pragma unroll
  for (int j = 0; j < NJ; j++)
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int64_t co = c.co0 + wn + j * 8 + 2 * t + e;
      if (co >= p.C_out) continue;
      const float bias = p.bias ? p.bias[co] : 0.0f;
      float *yc = yn + co * p.S;
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int64_t pos = c.p0 + wm + i * IS + h * 8 + g;
          const float v = SPLIT ? tc_join(acc[i][j][2 * h + e], corr[i][j][2 * h + e]) : acc[i][j][2 * h + e];
          if (pos < p.S) yc[pos] = v + bias;
        }
    }
}

template <bool SPLIT, bool VEC, int MI, int BK>
static __global__ void __launch_bounds__(PW_THREADS, 2) conv3d_pointwise_kernel(const PwParams p) {
  typedef PwShape<MI, BK> Sh;
  extern __shared__ __align__(16) float smem[];
  tc_grid_launch_dependents(); // pw_reduce_kernel (split K) may start; it waits for this kernel's end
  const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wm = (warp & 3) * 16 * MI, wn = (warp >> 2) * 32; // the warp's positions and channels in the tile

  float acc[MI][4][4], corr[MI][4][4];
  pw_zero<MI, 4>(acc, corr);

  PwCursor ld, cs; // the loads' step (PW_STAGES - 1 ahead) and the products'
  pw_unit(ld, p, blockIdx.x);
  pw_unit(cs, p, blockIdx.x);
#pragma unroll
  for (int s = 0; s < PW_STAGES - 1; s++) {
    if (ld.u < p.units32) {
      pw_load<VEC, Sh>(smem + s * Sh::STAGE, p, ld);
      pw_next(ld, p);
    }
    tc_commit(); // (empty groups past the last step: the wait below counts groups)
  }
  int stage = 0, lstage = PW_STAGES - 1;
  while (cs.u < p.units32) {
    tc_wait<PW_STAGES - 2>(); // this step's chunk has landed (this thread's copies) ...
    __syncthreads();          // ... and everyone's; the previous step's stage is free again
    if (ld.u < p.units32) {
      pw_load<VEC, Sh>(smem + lstage * Sh::STAGE, p, ld);
      pw_next(ld, p);
    }
    tc_commit();
    if (++lstage == PW_STAGES) lstage = 0;
    const float *xsm = smem + stage * Sh::STAGE, *wsm = xsm + BK * Sh::XP;
    if (++stage == PW_STAGES) stage = 0;
    // the warp's n8 tiles that hold channels (a head's few channels: the others' products skipped)
    const int64_t left = p.C_out - cs.co0 - wn;
    const int jn = left >= 32 ? 4 : left <= 0 ? 0 : (int)(left + 7) / 8;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      if (jn == 0) break;
      uint32_t ab[MI][4], as[MI][4];
#pragma unroll
      for (int i = 0; i < MI; i++) {
        const float *a = xsm + (kk + t) * Sh::XP + wm + i * 16 + g; // A(m, k) = x row k, position m
        pw_split<SPLIT>(a[0], ab[i][0], as[i][0]);
        pw_split<SPLIT>(a[8], ab[i][1], as[i][1]);
        pw_split<SPLIT>(a[4 * Sh::XP], ab[i][2], as[i][2]);
        pw_split<SPLIT>(a[4 * Sh::XP + 8], ab[i][3], as[i][3]);
      }
#pragma unroll
      for (int j = 0; j < 4; j++) {
        if (j >= jn) break;
        const float *bp = wsm + (wn + j * 8 + g) * Sh::WP + kk + t; // B(k, n) = w row n, channel k
        uint32_t bb[2], bs[2];
        pw_split<SPLIT>(bp[0], bb[0], bs[0]);
        pw_split<SPLIT>(bp[4], bb[1], bs[1]);
#pragma unroll
        for (int i = 0; i < MI; i++) {
          tc_mma(acc[i][j], ab[i], bb);
          if (SPLIT) {
            tc_mma(acc[i][j], ab[i], bs);
            tc_mma(acc[i][j], as[i], bb);
          }
        }
      }
    }
    if (SPLIT) tc_promote(acc, corr); // (BK / 8 k-steps: 4 in math "fp32")
    if (cs.kc + 1 == cs.hi) { // the unit's last chunk: its values out, the sums back to zero
      pw_store<SPLIT, MI, 4, 16>(p, cs, acc, corr, wm, wn);
      pw_zero<MI, 4>(acc, corr);
    }
    pw_next(cs, p);
  }
  tc_wait<0>();
}

// On wgmma, with the loads by TMA (sm_90a; S and C_in multiples of 4). The cp.async
// kernel above spends most of its issue slots on the loads' addresses and bounds; so did a wgmma
// version of it, tried and dropped in the sixteenth session (ncu of 1024 -> 256: 0.45 warps issued a
// cycle, busy, with the data 4 stages ahead; bench/NOTES.md). Here warp 8's lane 0 issues a stage
// as two copies (three in math "fp32"), and the copy engine fills the zeros past S, C_in and C_out:
// - w's chunk: a box of 32 input by 64 output channels, 128-byte swizzled (rows of 32 floats), as
//   wgmma's B descriptor (tc_wg_desc128) reads it;
// - x's chunk: a box of 136 positions by 32 channels (8 positions past the tile: the pitch that
//   puts the A loads in 32 banks).
// Full and empty mbarriers a stage between the producer and the 8 consumer warps; the consumers'
// k-loop: per k-step of 8 each warpgroup's 64 x 64 x 8 product, A (positions x channels) from registers,
// loaded from the x rows as mma.sync's fragments (warp w of the group holding rows 16w.., so that D is
// in mma.sync's C order, as pw_store reads it), B (w) read by the tensor core from the stage. A
// k-step's loads overlap the previous one's products (two register sets, wait<1>), and a stage goes
// back to the producer once the products of the step that read it are done.
// Math "fp32" (SPLIT): w's small parts (w minus its TF32 big part, pw_wsplit_kernel) are a second
// tensor with a map of their own, staged after w's; x is split in registers (pw_split); three
// products a k-step (big big, big small, small big), the small ones in a second accumulator, joined
// at the end as in conv3d_pointwise_kernel.
#define PWT_THREADS 288 // 8 consumer warps + the producer warp
#define PWT_XP 136      // x rows' pitch (floats): the box's positions
#define PWT_W_BYTES (PW_BN * 128)
#define PWT_STAGE(SPLIT) ((SPLIT ? 2 : 1) * PWT_W_BYTES + 32 * PWT_XP * 4) // bytes: w (1024-byte aligned), its small parts, x
struct PwTmaParams {
  tc_tmap xmap, wmap, wsmap; // (S, C_in, N) of x; (C_in, C_out) of w and (SPLIT) of its small parts
  PwParams p;                // the rest (units, cursors, the output)
  int stages;
};
// ws = w's small parts: w - its TF32 big part (the bits pw_split keeps), n floats
static __global__ void pw_wsplit_kernel(const float *w, int64_t n, float *ws) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t big, small;
    pw_split<true>(w[i], big, small);
    ws[i] = __uint_as_float(small);
  }
}
template <bool SPLIT>
static __global__ void __launch_bounds__(PWT_THREADS, 2) conv3d_pointwise_tma_kernel(const __grid_constant__ PwTmaParams tp) {
  const PwParams &p = tp.p;
  const int STAGE = PWT_STAGE(SPLIT), X_OFF = (SPLIT ? 2 : 1) * PWT_W_BYTES;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char *smem = smem_raw + ((1024u - (tc_smem_addr(smem_raw) & 1023u)) & 1023u); // the swizzle's alignment
  const int S = tp.stages;
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + (size_t)S * STAGE), *empty = full + S;
  const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  tc_grid_launch_dependents(); // as conv3d_pointwise_kernel
  if (tid == 0) {
    for (int s = 0; s < S; s++) {
      tc_mbar_init(full + s, 1);
      tc_mbar_init(empty + s, 8);
    }
    tc_mbar_fence_init();
  }
  __syncthreads();

  if (warp == 8) { // the producer: one thread issues every load
    if (lane == 0) {
      PwCursor ld;
      int s = 0, ph = 0;
      for (pw_unit(ld, p, blockIdx.x); ld.u < p.units32; pw_next(ld, p)) {
        tc_mbar_wait(empty + s, ph ^ 1); // the consumers are done with this stage's last step (at once the first time round)
        unsigned char *st = smem + (size_t)s * STAGE;
        tc_mbar_expect_tx(full + s, (unsigned)STAGE);
        tc_tma_load5(st, &tp.wmap, ld.kc * 32, (int)ld.co0, 0, 0, 0, full + s);
        if (SPLIT) tc_tma_load5(st + PWT_W_BYTES, &tp.wsmap, ld.kc * 32, (int)ld.co0, 0, 0, 0, full + s);
        tc_tma_load5(st + X_OFF, &tp.xmap, (int)ld.p0, ld.kc * 32, (int)ld.n, 0, 0, full + s);
        if (++s == S) s = 0, ph ^= 1;
      }
    }
    return;
  }

  const int wm = (warp >> 2) * 64 + (warp & 3) * 16; // the warp's first row in the tile
  float acc[1][PW_BN / 8][4], corr[1][PW_BN / 8][4];
  pw_zero<1, PW_BN / 8>(acc, corr);
  PwCursor cs;
  int s = 0, ph = 0, prev = -1; // the step's stage and phase; the stage the step before read
  for (pw_unit(cs, p, blockIdx.x); cs.u < p.units32; pw_next(cs, p)) {
    tc_mbar_wait(full + s, ph);
    const unsigned char *st = smem + (size_t)s * STAGE;
    const float *xsm = reinterpret_cast<const float *>(st + X_OFF);
    const uint64_t db = tc_wg_desc128(st), dbs = tc_wg_desc128(st + PWT_W_BYTES);
    uint32_t a[2][4], as[2][4];
#pragma unroll
    for (int ks = 0; ks < 4; ks++) {
      uint32_t(&ar)[4] = a[ks & 1], (&asr)[4] = as[ks & 1];
      const float *x0 = xsm + (ks * 8 + t) * PWT_XP + wm + g; // A(m, k) = x row k, position m
      pw_split<SPLIT>(x0[0], ar[0], asr[0]);
      pw_split<SPLIT>(x0[8], ar[1], asr[1]);
      pw_split<SPLIT>(x0[4 * PWT_XP], ar[2], asr[2]);
      pw_split<SPLIT>(x0[4 * PWT_XP + 8], ar[3], asr[3]);
      tc_wg_fence();
      tc_wg_mma<PW_BN / 8>(acc[0], ar, db + 2 * ks); // 32 bytes a k-step (16-byte units)
      if (SPLIT) {
        tc_wg_mma<PW_BN / 8>(acc[0], ar, dbs + 2 * ks);
        tc_wg_mma<PW_BN / 8>(acc[0], asr, db + 2 * ks);
      }
      tc_wg_commit();
      tc_wg_wait<1>(); // the k-step before's products are done: its register set is free
      if (ks == 0 && prev >= 0 && lane == 0) tc_mbar_arrive(empty + prev); // (the step before's last products too)
    }
    prev = s;
    if (++s == S) s = 0, ph ^= 1;
    const bool last = cs.kc + 1 == cs.hi; // the unit's last chunk
    if (SPLIT && (last || (cs.kc & 1))) { // every 8 k-steps (two stages) and at the end: acc into corr
      tc_wg_wait<0>();
      tc_promote(acc, corr);
    }
    if (last) { // its values out, the sums back to zero
      tc_wg_wait<0>();
      pw_store<SPLIT, 1, PW_BN / 8, 64>(p, cs, acc, corr, wm, 0);
      pw_zero<1, PW_BN / 8>(acc, corr);
    }
  }
  tc_wg_wait<0>();
}

// y = bias + the ksplit parts' sums, in part order (split K). (Measured against the parts summed
// in the GEMM by each unit's last part, with counters zeroed by a memset: 512 -> 128 of (1, 512, 8,
// 16, 16) tf32 0.0136 ms here, 0.0157 there.)
static __global__ void pw_reduce_kernel(const float *ws, int64_t ksplit, int64_t ysize, const float *bias,
                                        int64_t C_out, int64_t S, float *y) {
  tc_grid_wait(); // the parts are written
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < ysize; i += (int64_t)gridDim.x * blockDim.x) {
    float sum = 0.0f;
    for (int64_t k = 0; k < ksplit; k++) sum += ws[k * ysize + i];
    y[i] = bias ? sum + bias[i / S % C_out] : sum;
  }
}

template <bool SPLIT, bool VEC, int MI, int BK>
static int pw_launch(const PwParams &p, unsigned grid, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  const size_t smem = (size_t)PW_STAGES * PwShape<MI, BK>::STAGE * sizeof(float);
  static bool set = false; // (one attribute call per instantiation)
  if (!set) {
    CUDA_CHECK(cudaFuncSetAttribute(conv3d_pointwise_kernel<SPLIT, VEC, MI, BK>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    set = true;
  }
  conv3d_pointwise_kernel<SPLIT, VEC, MI, BK><<<grid, PW_THREADS, smem, s>>>(p);
  CUDA_CHECK_LAUNCH();
  return 0;
}

template <bool SPLIT> static int pw_launch_tma(const PwTmaParams &tp, unsigned grid, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  const size_t smem = (size_t)tp.stages * PWT_STAGE(SPLIT) + 2 * tp.stages * 8 + 1024;
  static size_t smem_set = 0;
  if (smem > smem_set) {
    CUDA_CHECK(cudaFuncSetAttribute(conv3d_pointwise_tma_kernel<SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    smem_set = smem;
  }
  conv3d_pointwise_tma_kernel<SPLIT><<<grid, PWT_THREADS, smem, s>>>(tp);
  CUDA_CHECK_LAUNCH();
  return 0;
}

// The plan: units of BM positions by PW_BN channels; where they are fewer than the SMs, C_in
// split into parts of at least 4 chunks (128 channels), summed by pw_reduce_kernel in part order. A grid of at most 2 blocks an SM, each taking every gridDim-th
// unit. VOLUA_PW=0: never this path, 1: wherever it applies; VOLUA_PW_KSPLIT=n forces n parts;
// VOLUA_PW_GRID=n n blocks an SM, 0 a block a unit (all for measuring).
extern "C" int volua_cuda_conv3d_pointwise(const volua_conv3d_geom *g, const float *x, const float *w,
                                           const float *b, float *y, volua_math_mode math, cudaStream_t s,
                                           char *err) {
  const char *op = "conv3d";
  const char *pe = getenv("VOLUA_PW");
  const bool off = pe && strcmp(pe, "0") == 0, force = pe && strcmp(pe, "1") == 0;
  if (volua_cuda_fast_disabled() || off || g->groups != 1) return VOLUA_FAST_NOT_APPLICABLE;
  for (int d = 0; d < 3; d++)
    if (g->kernel[d] != 1 || g->stride[d] != 1 || g->pad_lo[d] != 0 || g->pad_hi[d] != 0 || g->out[d] != g->in[d])
      return VOLUA_FAST_NOT_APPLICABLE;
  PwParams p;
  memset(&p, 0, sizeof p);
  p.x = x, p.w = w, p.bias = b, p.y = y;
  p.S = g->in[0] * g->in[1] * g->in[2];
  p.C_in = g->C_in, p.C_out = g->C_out;
  if (g->N <= 0 || p.S <= 0 || p.C_out <= 0 || p.C_in <= 0 || p.C_in > (1 << 30)) return VOLUA_FAST_NOT_APPLICABLE;
  // the shape: math "tf32" 256 positions by 16 channels a stage where those tiles give every SM
  // one (else 128 by 32, and more units), "fp32" (two accumulators: no registers for 256) 128 by 32.
  // Measured (H200, tf32 ms, 256 against 128): 64 -> 256 of (2, 64, 16, 32, 32) 0.0224 against
  // 0.0259, 64 -> 64 of (2, 64, 32, 64, 64) 0.0470 against 0.0519; but 256 -> 64 of (2, 256, 16,
  // 32, 32) 0.0336 against 0.0226 (128 tiles of 256: K split, and a second launch).
  // VOLUA_PW_BM=128|256 forces one in math "tf32" (for measuring; not on the TMA kernel, whose
  // tiles are 128).
  const char *bme = getenv("VOLUA_PW_BM");
  const int fbm = bme ? atoi(bme) : 0;
  int sms = 0;
  CUDA_CHECK(volua_sm_count(&sms));
  // From 128 input channels, both maths, on wgmma with TMA loads (conv3d_pointwise_tma_kernel),
  // where the sm_90a code runs, the copy engine can read x and w (rows 16-byte aligned) and the maps
  // encode. Measured on an H200 against the mma.sync kernel (sixteenth session, runs s16r26 and r29;
  // ms, PyTorch's in brackets, with TF32 off for "fp32"): "tf32" 1024 -> 256 of (2, 1024, 8, 14, 14)
  // 0.0215 against 0.0355 [0.0241], 256 -> 1024 0.0209 against 0.0297 [0.0289], 256 -> 64 of (2,
  // 256, 16, 32, 32) 0.0197 against 0.0225 [0.0255], 128 -> 128 0.0180 against 0.0197; "fp32"
  // 1024 -> 256 0.0349 against 0.0555 [0.0836], 256 -> 1024 0.0344 against 0.0530 [0.0728]; but
  // with 64 input channels (two chunks a unit) it lost in "tf32": 64 -> 256 0.0233 against 0.0223,
  // 64 -> 64 of (2, 64, 32, 64, 64) 0.0509 against 0.0483. VOLUA_PW_TMA=0: never, 2: wherever it
  // can (for measuring and the specs).
  volua_tc::Env env;
  if (volua_tc::tc_get_env(&env, op, err)) return 1;
  const char *tme = getenv("VOLUA_PW_TMA");
  PwTmaParams tp;
  memset(&tp, 0, sizeof tp);
  bool tma = env.wg && tc_switch_on("VOLUA_PW_TMA") &&
             ((tme && strcmp(tme, "2") == 0) || p.C_in >= 128) && p.S % 4 == 0 && p.C_in % 4 == 0 &&
             ((uintptr_t)x & 15) == 0 && ((uintptr_t)w & 15) == 0 && p.S + PWT_XP < ((int64_t)1 << 31) &&
             g->N < ((int64_t)1 << 31);
  if (tma) {
    const int64_t xdim[3] = {p.S, p.C_in, g->N}, wdim[2] = {p.C_in, p.C_out};
    const int xbox[3] = {PWT_XP, 32, 1}, wbox[2] = {32, PW_BN};
    tma = volua_tc::tc_encode_map(&tp.xmap, x, 3, xdim, xbox, NULL, 0) == 0 &&
          volua_tc::tc_encode_map(&tp.wmap, w, 2, wdim, wbox, NULL, 3) == 0;
  }
  const bool wide = math == VOLUA_MATH_TF32 && !tma &&
                    (fbm == 256 || (fbm != 128 && g->N * ((p.S + 255) / 256) * ((p.C_out + PW_BN - 1) / PW_BN) >= sms));
  p.bm = wide ? 256 : 128;
  const int bk = wide ? 16 : 32; // (the kernels' BK)
  p.ptiles = (p.S + p.bm - 1) / p.bm;
  p.cblocks = (p.C_out + PW_BN - 1) / PW_BN;
  p.kchunks = (p.C_in + bk - 1) / bk;
  p.ysize = g->N * p.C_out * p.S;
  if (p.ptiles > INT32_MAX || p.cblocks > INT32_MAX || g->N > INT32_MAX || g->N * p.ptiles > INT32_MAX / p.cblocks)
    return VOLUA_FAST_NOT_APPLICABLE;
  const int64_t units = g->N * p.ptiles * p.cblocks;
  const int64_t resident = 2 * (int64_t)sms;
  // The rule, measured on an H200 against conv3d_tc.cu's and conv3d_cl.cu's paths (bench/NOTES.md,
  // fifteenth session; ms, PyTorch's in brackets): math "tf32" from 64 output channels (256 -> 64
  // of (2, 256, 16, 32, 32) 0.0223 against 0.0390 [0.0253]; 64 -> 256 0.0282 against 0.0491
  // [0.0426]; but 32 -> 2 of (1, 32, 128, 128, 128) 0.152 against 0.0975), and in both maths where
  // the units are fewer than the SMs and C_in splits (K in parts here; 512 -> 128 of (1, 512, 8, 16, 16) tf32 0.0135
  // against 0.0188 [0.0131], fp32 0.0167 against 0.0246). Math "fp32" also from 2^16 weights
  // (256 -> 1024 of (2, 256, 8, 14, 14) 0.0530 against 0.0856 [TF32 off: 0.0726]; conv3d_tc.cu
  // prepares the weights and reads x once per 64 channels); below, it is faster on conv3d_tc.cu's
  // path (three products a k-step here: 256 -> 64 0.0319 against 0.0306, 64 -> 64 of (2, 64, 32,
  // 64, 64) 0.0795 against 0.0647). VOLUA_PW=1: this path wherever it applies.
  // (parts: as many as the resident blocks hold, so that no second, partial wave waits on the
  // first: 1024 -> 256 of (2, 1024, 8, 14, 14), 104 units, took 0.0395 ms in 3 parts, 0.0355 in 2)
  int64_t parts = units < sms ? resident / units : 1;
  if (parts > p.kchunks * bk / 128) parts = p.kchunks * bk / 128; // (parts of at least 128 channels)
  // (math "fp32" by TMA also below 2^16 weights, from 64 output channels: 256 -> 64 0.0233 against
  // conv3d_tc.cu's 0.0309 [0.0617], 128 -> 128 0.0251 against 0.0321 [0.0500]; run s16r29)
  const bool taken = parts > 1 || (math == VOLUA_MATH_TF32 ? p.C_out >= 64
                                                            : p.C_in * p.C_out >= (1 << 16) || (tma && p.C_out >= 64));
  if (!force && !taken) return VOLUA_FAST_NOT_APPLICABLE;
  if (math == VOLUA_MATH_FP32) volua_cuda_nf_get(&p.nf_flag, &p.nf_stamp); // (this path runs: fast.h)
  const char *ks = getenv("VOLUA_PW_KSPLIT");
  if (ks && atoi(ks) >= 1) parts = atoi(ks);
  if (parts > p.kchunks) parts = p.kchunks;
  if (parts > 16) parts = 16;
  if (parts < 1) parts = 1;
  while (parts > 1 && parts * p.ysize * 4 > ((int64_t)1 << 28)) parts--; // the parts' copies: at most 256 MB
  float *ws = NULL;
  if (parts > 1) {
    char merr[VOLUA_ERR_MAX];
    if (volua_cuda_malloc(reinterpret_cast<void **>(&ws), parts * p.ysize * 4, merr)) {
      (void)cudaGetLastError();
      ws = NULL, parts = 1; // no memory for them: K whole
    }
  }
  p.ksplit = parts;
  p.units = units * parts;
  if (parts > 1) p.y = ws, p.bias = NULL;
  p.units32 = (unsigned)p.units, p.ksplit32 = (unsigned)parts, p.cblocks32 = (unsigned)p.cblocks;
  p.ptiles32 = (unsigned)p.ptiles, p.kchunks32 = (unsigned)p.kchunks;
  p.wvec = p.C_in % 4 == 0 && ((uintptr_t)w & 15) == 0;
  int64_t blocks = resident;
  const char *ge = getenv("VOLUA_PW_GRID"); // (measuring: 0 a block a unit, else that many blocks an SM)
  if (ge) blocks = atoi(ge) > 0 ? atoi(ge) * (int64_t)sms : p.units;
  if (blocks > INT32_MAX) blocks = INT32_MAX; // (the blocks take the rest in turn)
  const unsigned grid = (unsigned)(p.units < blocks ? p.units : blocks);
  // 16-byte copies of x need every row start 16-byte aligned: x itself and S a multiple of 4
  const bool vec = p.S % 4 == 0 && ((uintptr_t)x & 15) == 0;
  int rc;
  float *wsmall = NULL; // math "fp32" by TMA: w's small parts
  if (tma && math != VOLUA_MATH_TF32) {
    char merr[VOLUA_ERR_MAX];
    const int64_t wdim[2] = {p.C_in, p.C_out}, n = p.C_in * p.C_out;
    const int wbox[2] = {32, PW_BN};
    if (volua_cuda_malloc(reinterpret_cast<void **>(&wsmall), n * 4, merr)) {
      (void)cudaGetLastError();
      volua_cuda_free(ws);
      return VOLUA_FAST_NOT_APPLICABLE; // no memory for them: the other paths
    }
    const int64_t want = (n + 255) / 256, most = 4 * (int64_t)sms;
    pw_wsplit_kernel<<<(unsigned)(want < most ? want : most), 256, 0, s>>>(w, n, wsmall);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      volua_cuda_free(wsmall);
      volua_cuda_free(ws);
      return volua_kernel_error(err, op, e, "pw_wsplit_kernel", __FILE__, __LINE__);
    }
    if (volua_tc::tc_encode_map(&tp.wsmap, wsmall, 2, wdim, wbox, NULL, 3)) {
      volua_cuda_free(wsmall);
      volua_cuda_free(ws);
      return VOLUA_FAST_NOT_APPLICABLE;
    }
  }
  if (tma) {
    tp.p = p;
    // stages: 4 (103 KB) in math "tf32", 3 (102 KB, with w's small parts) in "fp32": 2 blocks an SM
    tp.stages = math == VOLUA_MATH_TF32 ? 4 : 3;
    rc = math == VOLUA_MATH_TF32 ? pw_launch_tma<false>(tp, grid, s, err) : pw_launch_tma<true>(tp, grid, s, err);
  } else if (math == VOLUA_MATH_TF32 && wide)
    rc = vec ? pw_launch<false, true, 4, 16>(p, grid, s, err) : pw_launch<false, false, 4, 16>(p, grid, s, err);
  else if (math == VOLUA_MATH_TF32)
    rc = vec ? pw_launch<false, true, 2, 32>(p, grid, s, err) : pw_launch<false, false, 2, 32>(p, grid, s, err);
  else
    rc = vec ? pw_launch<true, true, 2, 32>(p, grid, s, err) : pw_launch<true, false, 2, 32>(p, grid, s, err);
  if (rc == 0 && parts > 1) {
    const int64_t want = (p.ysize + 255) / 256, most = 8 * (int64_t)sms;
    const dim3 rgrid((unsigned)(want < most ? want : most));
    cudaError_t e = cudaSuccess;
    if (tc_pdl())
      e = tc_launch_pdl(pw_reduce_kernel, rgrid, dim3(256), 0, s, (const float *)ws, p.ksplit, p.ysize, b, p.C_out, p.S, y);
    else
      pw_reduce_kernel<<<rgrid, 256, 0, s>>>(ws, p.ksplit, p.ysize, b, p.C_out, p.S, y);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) rc = volua_kernel_error(err, op, e, "pw_reduce_kernel", __FILE__, __LINE__);
  }
  volua_cuda_free(ws); // (stream-ordered: reused only by work queued after this call's)
  volua_cuda_free(wsmall);
  if (rc == 0) volua_cuda_fast_note_call();
  return rc;
}
