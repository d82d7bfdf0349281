// conv3d_cl.cu: conv3d on tensor cores through a channels-last copy of the input, for deep layers
// (many input channels) on Hopper (sm_90a), in both maths. conv3d_tc.cu's implicit GEMM stages a
// patch per (tile, channel chunk) and loads A fragments from it by a table of K offsets: with many
// channels its k-loop waits on those loads and on a block barrier per chunk (bench/NOTES.md, tenth
// session). Here the GEMM's operands are plain TMA boxes that wgmma reads from shared memory:
//
//   xcl = x as (N, D, H, W, C) rounded to TF32 (cl_layout_kernel), wcl = w as (tap, C_out, C_in)
//   (cl_weights_kernel), channels padded to a multiple of 4 with zeros;
//   a block's tile is a box of 128 or 256 output positions (bd x bh x bw) and BN = 64, 128 or 256
//   channels (256 positions only with BN <= 128: the accumulators of 128 x 256 at most);
//   K runs over (tap, 32 input channels): each step's A is the input box those positions read at
//   that tap (TMA: a 5-D box with the conv's strides as element strides, zeros outside the input:
//   the padding), its B the tap's weights for the block's channels (a 3-D box). Both land in the
//   128-byte swizzle, rows of 32 channels.
//
// A block is two consumer warpgroups (64 or 128 rows each, four m64nBNk8 wgmma per 64 rows and
// step) and a producer warp whose one thread issues the TMA loads into a ring of stages, each with
// a "full" mbarrier (its bytes landed) and an "empty" one (the 8 consumer warps are done with it).
// Where the tiles are fewer than the SMs, K is split over ksplit blocks; each writes its sums into
// its own copy of the output and cl_reduce_kernel adds the copies in a fixed order (results do not
// depend on which block finishes first) and the bias.
//
// The copies, the GEMM and the sum run as a chain of programmatic dependent launches: the weight
// copy starts beside the input copy and, once done, waits for it, so that its end means both ended;
// the GEMM and the sum start early (set-up, barriers) and wait for the kernel before them.
//
// Transposed convolutions (volua_cuda_conv_transpose3d_cl) run here too, as phases: the outputs
// o = stride*q + c of one phase c (per dim) see a fixed set of taps, a stride-1 convolution over q
// (conv_transpose3d_tc.cu's phase_of). All phases are one launch: a block's number says its phase
// (ClPhase: its grid, padding, taps, where its taps are in the weight, its output offset), so that
// deep layers on small volumes, whose phases each have a few tiles, fill the SMs. conv3d is the
// one-phase case (output step 1, taps walked forward).
//
// Math "fp32" is split TF32 (cl_conv_kernel's SPLIT): the copies hold the values unrounded, whose
// TF32 big parts the tensor core reads, and second copies of their small parts; each step loads
// four boxes and issues three products. Two sums a value bound a block to 128 positions by 64 or
// 128 channels. Measured against conv3d_tc.cu's paths (H200, bench/NOTES.md, eighteenth session):
// 512 -> 256 k4 s2 p1 of (1, 512, 4, 8, 8) 0.420 -> 0.086 ms, 256 -> 256 k3 of (2, 256, 8, 16, 16)
// 0.164 -> 0.125 (run s18r3).
#include "tc_core.cuh"

using namespace volua_tc;

namespace {

#define CL_ROWS 128                       // positions a block per MI: two warpgroups of 64 MI
#define CL_THREADS 288                    // 8 consumer warps + the producer warp
#define CL_A_BYTES (CL_ROWS * 128)        // a step's A per MI: 128 rows of 32 floats
#define CL_MAX_STAGES 8
// Channels a block (BN), ascending: the widths cl_launch is instantiated for (WN = BN / 8; the
// dispatch at the bottom), which the plan below chooses from and VOLUA_TC_CL_BN may force.
static const int cl_widths[] = {64, 128, 160, 192, 224, 256};

#define CL_MAX_PHASES 8

// One phase of the GEMM: positions q < Q of its grid (per dim) read input q * stride - pad + j * dil
// for its taps j < taps, whose weight is tap kfirst + j * kstep of the kernel, and write output
// q * ostep + oofs (conv3d: one phase, kfirst 0, kstep 1, ostep 1, oofs 0).
struct ClPhase {
  int64_t tiles[3]; // tiles along D, H, W
  int64_t first;    // its first block (the phases' blocks follow each other)
  int Q[3], pad[3], taps[3], kfirst[3], kstep[3], oofs[3];
  int niter; // its K steps: taps x channel chunks
};

struct ClParams {
  tc_tmap xmap, wmap;   // (C, W, H, D, N) of xcl; (C, C_out, tap, 1, 1) of wcl
  tc_tmap xsmap, wsmap; // (math "fp32") the same of their small parts, xcls and wcls
  float *y;           // the output, or (ksplit > 1) the parts' copies of it
  const float *bias;  // (ksplit 1) or NULL
  int64_t C_out, out[3], ysize;
  int box[3];         // bd, bh, bw: positions per tile along D, H, W (product 128 or 256)
  int stride[3], dil[3], ostep[3], kdim[3];
  int co_blocks, cchunks, ksplit, stages, nph;
  int *nf_flag, nf_stamp; // math "fp32": the non-finite flag (fast.h, volua_cuda_nf_begin), or NULL
  ClPhase ph[CL_MAX_PHASES];
};

// A stage: A (the input box), B (the weights); with SPLIT their small parts after them, As and Bs
// (each part a multiple of 1024 bytes: the swizzle's alignment).
#define CL_PROMOTE (TC_PROMOTE / 4) // stages (of 4 k-steps)
template <int WN, int MI, bool SPLIT> struct ClStage {
  static const int A_BYTES = MI * CL_A_BYTES, B_BYTES = WN * 8 * 128, BYTES = (SPLIT ? 2 : 1) * (A_BYTES + B_BYTES);
};

// Block b of phase f (b - first): unit u = (b - first) / ksplit = (tile mt, channel block cb) =
// (u / co_blocks, u % co_blocks), part (b - first) % ksplit.
// MI: 64-row slices a warpgroup (1 or 2: a tile of 128 or 256 positions, each B serving twice the rows).
// SPLIT (math "fp32"): xcl and wcl hold the values unrounded (the tensor core reads their TF32 big
// parts, the bits the truncation keeps) and xcls, wcls the rest; three products a k-step into acc,
// which every CL_PROMOTE stages (and at the end) goes into corr on the CUDA cores (tc_promote,
// tc_prims.cuh: the tensor core's truncated sums stay short).
template <int WN, int MI, bool SPLIT> TC_GLOBAL void TC_BOUNDS(CL_THREADS, 1) cl_conv_kernel(TC_GRID_CONST ClParams p) {
  TC_SMEM_DECL(smem_raw);
  unsigned char *smem = smem_raw + ((1024u - (tc_smem_addr(smem_raw) & 1023u)) & 1023u); // the swizzle's alignment
  typedef ClStage<WN, MI, SPLIT> Sh;
  const int S = p.stages, STAGE = Sh::BYTES, A_BYTES = Sh::A_BYTES, AB = Sh::A_BYTES + Sh::B_BYTES;
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + (size_t)S * STAGE), *empty = full + S;
  const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31;

  int f = 0;
  while (f + 1 < p.nph && (int64_t)blockIdx.x >= p.ph[f + 1].first) f++;
  const ClPhase &P = p.ph[f];
  int64_t u = (int64_t)blockIdx.x - P.first;
  const int part = (int)(u % p.ksplit);
  u /= p.ksplit;
  const int cb = (int)(u % p.co_blocks);
  int64_t t = u / p.co_blocks;
  const int64_t tw = t % P.tiles[2];
  t /= P.tiles[2];
  const int64_t th = t % P.tiles[1];
  t /= P.tiles[1];
  const int64_t td = t % P.tiles[0];
  const int64_t n = t / P.tiles[0];
  const int d0 = (int)(td * p.box[0]), h0 = (int)(th * p.box[1]), w0 = (int)(tw * p.box[2]);
  const int it_lo = (int)((int64_t)part * P.niter / p.ksplit), it_hi = (int)((int64_t)(part + 1) * P.niter / p.ksplit);

  if (tid == 0) {
    for (int s = 0; s < S; s++) {
      tc_mbar_init(full + s, 1);
      tc_mbar_init(empty + s, 8);
    }
    tc_mbar_fence_init();
  }
  TC_SYNC();
  tc_grid_wait(); // the copies are done (programmatic dependent launch)

  if (warp == 8) { // the producer: one thread issues every load
    if (lane == 0) {
      // (stage s = i % S and its phase, the tap and channel chunk of step it, carried from step to
      // step: the divisions by run-time values they replace, here and in the consumers' loop, held
      // about 16 % of the 256 -> 256 GEMM's ncu samples, which went from 55 to 46 us without them)
      int s = 0, ph = 0, tap = it_lo / p.cchunks, cc = it_lo - tap * p.cchunks;
      int jd = tap / (P.taps[1] * P.taps[2]), jh = tap / P.taps[2] % P.taps[1], jw = tap % P.taps[2];
      // the kernel tap of (jd, jh, jw): its row in wcl
      auto ktap = [&]() {
        return ((P.kfirst[0] + jd * P.kstep[0]) * p.kdim[1] + P.kfirst[1] + jh * P.kstep[1]) * p.kdim[2] + P.kfirst[2] +
               jw * P.kstep[2];
      };
      int kt = ktap();
      for (int it = it_lo; it < it_hi; it++) {
        const int i = it - it_lo;
        if (i >= S) tc_mbar_wait(empty + s, ph ^ 1); // the consumers are done with step i - S
        unsigned char *st = smem + (size_t)s * STAGE;
        tc_mbar_expect_tx(full + s, (unsigned)STAGE);
        tc_tma_load5(st, &p.xmap, cc * 32, w0 * p.stride[2] - P.pad[2] + jw * p.dil[2],
                     h0 * p.stride[1] - P.pad[1] + jh * p.dil[1], d0 * p.stride[0] - P.pad[0] + jd * p.dil[0], (int)n,
                     full + s);
        tc_tma_load5(st + A_BYTES, &p.wmap, cc * 32, cb * WN * 8, kt, 0, 0, full + s);
        if (SPLIT) {
          tc_tma_load5(st + AB, &p.xsmap, cc * 32, w0 * p.stride[2] - P.pad[2] + jw * p.dil[2],
                       h0 * p.stride[1] - P.pad[1] + jh * p.dil[1], d0 * p.stride[0] - P.pad[0] + jd * p.dil[0], (int)n,
                       full + s);
          tc_tma_load5(st + AB + A_BYTES, &p.wsmap, cc * 32, cb * WN * 8, kt, 0, 0, full + s);
        }
        if (++s == S) s = 0, ph ^= 1;
        if (++cc == p.cchunks) {
          cc = 0;
          if (++jw == P.taps[2]) {
            jw = 0;
            if (++jh == P.taps[1]) jh = 0, jd++;
          }
          kt = ktap();
        }
      }
    }
    return;
  }

  // the consumers: warpgroup g has rows 64 MI g .. 64 MI (g + 1) - 1 of the tile, slice m its rows 64 (MI g + m) ..
  const int g = warp >> 2;
  float acc[MI][WN][4], corr[MI][WN][4]; // (corr: SPLIT only; otherwise the compiler drops it)
#pragma unroll
  for (int m = 0; m < MI; m++)
    for (int j = 0; j < WN; j++)
      for (int e = 0; e < 4; e++) acc[m][j][e] = corr[m][j][e] = 0.0f;
  int s = 0, ph = 0, prev = S - 1; // step i's stage and its phase (as the producer's), step i - 1's stage
  for (int it = it_lo; it < it_hi; it++) {
    const int i = it - it_lo;
    tc_mbar_wait(full + s, ph);
    const unsigned char *st = smem + (size_t)s * STAGE;
    const uint64_t db = tc_wg_desc128(st + A_BYTES), dbs = tc_wg_desc128(st + AB + A_BYTES);
    tc_wg_fence();
#pragma unroll
    for (int m = 0; m < MI; m++) {
      const uint64_t da = tc_wg_desc128(st + (MI * g + m) * (CL_A_BYTES / 2)),
                     das = tc_wg_desc128(st + AB + (MI * g + m) * (CL_A_BYTES / 2));
#pragma unroll
      for (int k = 0; k < 4; k++) { // 32 bytes a k-step (16-byte units)
        tc_wg_mma_ss<WN>(acc[m], da + 2 * k, db + 2 * k);
        if (SPLIT) {
          tc_wg_mma_ss<WN>(acc[m], da + 2 * k, dbs + 2 * k);
          tc_wg_mma_ss<WN>(acc[m], das + 2 * k, db + 2 * k);
        }
      }
    }
    tc_wg_commit();
    if (SPLIT && (i + 1) % CL_PROMOTE == 0) { // every product done: acc into corr
      tc_wg_wait<0>();
      tc_promote(acc, corr);
    } else {
      tc_wg_wait<1>(); // step i - 1's products are done: its stage goes back to the producer
    }
    if (i > 0 && lane == 0) tc_mbar_arrive(empty + prev);
    prev = s;
    if (++s == S) s = 0, ph ^= 1;
  }
  tc_wg_wait<0>();
  if (SPLIT) {
    tc_promote(acc, corr);
    tc_note_nonfinite(corr, p.nf_flag, p.nf_stamp);
  }

  // the epilogue: row r of the tile is position (r / (bh bw), r / bw % bh, r % bw) of its box, in
  // the phase's grid; its output is q * ostep + oofs
  const int bhw = p.box[1] * p.box[2];
  const int64_t vol = p.out[0] * p.out[1] * p.out[2];
  float *y = p.y + (p.ksplit > 1 ? (int64_t)part * p.ysize : 0);
#pragma unroll
  for (int mh = 0; mh < 2 * MI; mh++) { // (unrolled: acc's indices must be constants, or acc goes to the stack)
    const int m = mh >> 1, half = mh & 1;
    const int r = (MI * g + m) * 64 + (warp & 3) * 16 + (lane >> 2) + half * 8;
    const int qd = d0 + r / bhw, qh = h0 + r / p.box[2] % p.box[1], qw = w0 + r % p.box[2];
    if (qd >= P.Q[0] || qh >= P.Q[1] || qw >= P.Q[2]) continue;
    const int64_t od = (int64_t)qd * p.ostep[0] + P.oofs[0], oh = (int64_t)qh * p.ostep[1] + P.oofs[1],
                  ow = (int64_t)qw * p.ostep[2] + P.oofs[2];
    float *yq = y + n * p.C_out * vol + (od * p.out[1] + oh) * p.out[2] + ow;
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int e = 0; e < 2; e++) {
        const int64_t co = (int64_t)cb * WN * 8 + j * 8 + 2 * (lane & 3) + e;
        const float v = SPLIT ? tc_join(acc[m][j][half * 2 + e], corr[m][j][half * 2 + e]) : acc[m][j][half * 2 + e];
        if (co < p.C_out) yq[co * vol] = v + (p.bias ? p.bias[co] : 0.0f);
      }
  }
}

// y = bias + the ksplit parts' sums, in part order. A thread takes V values 256 apart (ksplit at
// most 16 / V) and issues all its loads together: about 16 in flight (measured in the pipeline,
// 256 -> 256 of (2, 256, 8, 16, 16) with 4 parts: 0.0708 ms a call with a value a thread, 0.0665 with
// 4). Indices in 32 bits (ysize < 2^26 where K is split: a 64-bit division per value had made the
// first version compute-bound).
template <int V>
TC_GLOBAL void cl_reduce_kernel(const float *ws, int ksplit, int64_t ysize, const float *bias, int64_t C_out,
                                int64_t vol, float *y) {
  const unsigned n = (unsigned)ysize, i0 = blockIdx.x * (256 * V) + threadIdx.x;
  tc_grid_wait(); // the GEMM is done
  float v[V][16 / V];
#pragma unroll
  for (int k = 0; k < 16 / V; k++)
#pragma unroll
    for (int u = 0; u < V; u++)
      if (k < ksplit && i0 + 256 * u < n) v[u][k] = ws[(size_t)k * n + i0 + 256 * u];
#pragma unroll
  for (int u = 0; u < V; u++) {
    const unsigned i = i0 + 256 * u;
    if (i >= n) break;
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 16 / V; k++)
      if (k < ksplit) sum += v[u][k];
    y[i] = bias ? sum + bias[i / (unsigned)vol % (unsigned)C_out] : sum;
  }
}

// What a copy keeps of value v: v itself where its small part is copied too (math "fp32", split:
// the GEMM reads the TF32 big part of it, tc_tf32_big), else v rounded to TF32 (math "tf32").
TC_DEVICE float cl_kept(float v, bool split) { return split ? v : __uint_as_float(tc_tf32(v)); }

// xcl (N, S, Cp) = tf32(x (N, C, S)), S = D H W positions, channels C..Cp-1 zero: a transpose of
// each sample's (C, S) plane. Block: CL_LS positions (blockIdx.x, with the sample) by 32 channels
// (blockIdx.y) through shared memory: a warp reads 128 bytes of one channel's positions and writes
// 128 bytes of one position's channels; a thread's CL_LS / 8 loads are issued before its stores to
// shared memory. Measured (ncu, cold caches, 128 channels): (2, 16, 32, 32) 12.0 us with 32
// positions a block, 9.8 with 64; (1, 32, 64, 64) 41.8 and 35.2.
// Math "fp32" (xcls not NULL): xcl = x unrounded and xcls its small parts (cl_conv_kernel's SPLIT).
#define CL_LS 64
TC_GLOBAL void cl_layout_kernel(const float *x, float *xcl, float *xcls, int64_t C, int64_t Cp, int64_t S,
                                int64_t stiles) {
  TC_SMEM_DECL(raw);
  float(*tile)[CL_LS + 1] = reinterpret_cast<float(*)[CL_LS + 1]>(raw); // 32 channels x CL_LS positions
  const int64_t n = blockIdx.x / stiles, s0 = (blockIdx.x - n * stiles) * CL_LS, c0 = (int64_t)blockIdx.y * 32;
  const int tx = (int)(threadIdx.x & 31), ty = (int)(threadIdx.x >> 5); // 8 warps
  tc_grid_launch_dependents(); // the weight copy may start beside this one
  float v[CL_LS / 8];
#pragma unroll
  for (int u = 0; u < CL_LS / 8; u++) {
    const int cy = ty + 8 * (u % 4), sx = (u / 4) * 32 + tx;
    v[u] = c0 + cy < C && s0 + sx < S ? x[(n * C + c0 + cy) * S + s0 + sx] : 0.0f;
  }
#pragma unroll
  for (int u = 0; u < CL_LS / 8; u++) tile[ty + 8 * (u % 4)][(u / 4) * 32 + tx] = cl_kept(v[u], xcls != NULL);
  TC_SYNC();
#pragma unroll
  for (int sy = ty; sy < CL_LS; sy += 8) {
    const int64_t c = c0 + tx, sx = s0 + sy;
    if (c < Cp && sx < S) {
      xcl[(n * S + sx) * Cp + c] = tile[tx][sy];
      if (xcls) xcls[(n * S + sx) * Cp + c] = tc_tf32_small(tile[tx][sy]);
    }
  }
}

// wcl (tap, C_out, Cp) = tf32(w), the weight of (co, c, tap) at w[co * w_co + c * w_c + tap] (conv3d's
// (C_out, C, taps): w_co = C taps, w_c = taps; a transposed convolution's (C, C_out, taps): w_co =
// taps, w_c = C_out taps), channels C..Cp-1 zero. Block: one output channel (blockIdx.y) and CL_WC
// input channels (blockIdx.x), tt taps at a time (all of them where they fit in 48 KB of shared
// memory): the reads are runs of tt floats (conv3d with all taps: one contiguous run of cn x tt;
// CL_WLOADS in flight a thread, 16 bytes each where the run is aligned and the tile's pitch is tt;
// a transposed convolution's runs of a multiple of 4 taps 16 bytes a lane), the writes a row of
// CL_WC channels (512 bytes) per tap, a warp a row. Shared memory holds
// (channel, tap) with an odd pitch (tn, or tn + 1 where tn is even), so that the writes' reads of
// one tap from 32 channels hit 32 banks: with the pitch even (64 taps of a k4 transposed
// convolution) they were 32-way conflicts, and the copy of 512 -> 256 k4 took 52 us (bench/NOTES.md,
// seventeenth session). The kernel was then bound by its instructions (ncu: 21 M warp instructions
// for 8.4 M values); without divisions, with 16-byte loads and a row a warp, 512 -> 256 k4 took 19.6
// us in "tf32" (33.9 before) and 28.2 in "fp32" (36.0), 7.8 M and 9.3 M instructions (run s18r9).
// Math "fp32" (wcls not NULL): wcl = w unrounded and wcls its small parts.
#define CL_WC 128
#define CL_WSMEM 12288 // floats
#define CL_WLOADS 8
TC_GLOBAL void cl_weights_kernel(const float *w, float *wcl, float *wcls, int64_t C_out, int64_t C, int64_t Cp,
                                  int64_t taps, int tt, int64_t w_co, int64_t w_c) {
  TC_SMEM_DECL(raw);
  float *tile = reinterpret_cast<float *>(raw); // CL_WC x pitch
  const int64_t co = blockIdx.y, c0 = (int64_t)blockIdx.x * CL_WC;
  const int cn = (int)(C - c0 < CL_WC ? C - c0 : CL_WC); // (cn > 0: c0 < Cp <= C + 3, c0 % 128 == 0)
  const int tid = (int)threadIdx.x;
  tc_grid_launch_dependents(); // the GEMM may start (and wait) while this runs
  for (int64_t t0 = 0; t0 < taps; t0 += tt) {
    const int tn = (int)(taps - t0 < tt ? taps - t0 : tt), n = cn * tn;
    const bool run = tn == taps && w_c == taps; // value i of the run, (channel i / tn, tap i % tn), at src[i]
    const int pitch = tn | 1;
    const bool flat = pitch == tn; // ... at tile[i]
    const float *src = w + co * w_co + c0 * w_c + t0;
    if (run && flat && ((uintptr_t)src & 15) == 0) {
      // one contiguous run, 16-byte aligned (conv3d with C_in a multiple of 4), to a tile of the
      // same order (an odd number of taps): thread i0 + 256 u takes values 4 (i0 + 256 u) to 4 (i0 +
      // 256 u) + 3, then the tail of n % 4 values one a thread
      const int n4 = n / 4;
      const float4 *s4 = reinterpret_cast<const float4 *>(src);
      float4 *t4 = reinterpret_cast<float4 *>(tile);
      for (int i0 = tid; i0 < n4; i0 += 256 * CL_WLOADS) {
        float4 v[CL_WLOADS];
#pragma unroll
        for (int u = 0; u < CL_WLOADS; u++) {
          const int i = i0 + u * 256;
          v[u] = i < n4 ? s4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < CL_WLOADS; u++) {
          const int i = i0 + u * 256;
          if (i < n4)
            t4[i] = make_float4(cl_kept(v[u].x, wcls != NULL), cl_kept(v[u].y, wcls != NULL), cl_kept(v[u].z, wcls != NULL),
                                cl_kept(v[u].w, wcls != NULL));
        }
      }
      if (4 * n4 + tid < n) tile[4 * n4 + tid] = cl_kept(src[4 * n4 + tid], wcls != NULL);
    } else if (run) { // one contiguous run: thread i0 + 256 u takes value i0 + 256 u
      for (int i0 = tid; i0 < n; i0 += 256 * CL_WLOADS) {
        float v[CL_WLOADS];
#pragma unroll
        for (int u = 0; u < CL_WLOADS; u++) {
          const int i = i0 + u * 256;
          v[u] = i >= n ? 0.0f : src[i];
        }
#pragma unroll
        for (int u = 0; u < CL_WLOADS; u++) {
          const int i = i0 + u * 256;
          if (i < n) tile[flat ? i : i / tn * pitch + i % tn] = cl_kept(v[u], wcls != NULL);
        }
      }
    } else { // runs of tn taps a channel, w_c apart (no division: with a division per (channel, 32
      // taps) item, and one per value before that, the kernel was bound by its instructions;
      // bench/NOTES.md, seventeenth and eighteenth sessions)
      const int warp = tid >> 5, lane = tid & 31;
      if (tn % 4 == 0 && w_c % 4 == 0 && ((uintptr_t)src & 15) == 0) {
        // 16 bytes a lane: 4 taps (runs of tn taps, each 16-byte aligned); a warp takes 32 / (tn / 4)
        // channels at a time where tn <= 128
        const int q = tn / 4, per = q < 32 ? 32 / q : 1; // lanes a run; runs a warp load
        const int lc = q < 32 ? lane / q : 0, lt = q < 32 ? lane % q : lane;
        for (int cb = warp * per + lc; cb < cn && lane < per * q; cb += 8 * per * CL_WLOADS) // (lanes past per q idle)
          for (int g = 4 * lt; g < tn; g += 128) {
            float4 v[CL_WLOADS];
#pragma unroll
            for (int u = 0; u < CL_WLOADS; u++) {
              const int c = cb + 8 * per * u;
              v[u] = c < cn ? *reinterpret_cast<const float4 *>(src + (int64_t)c * w_c + g) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < CL_WLOADS; u++) {
              const int c = cb + 8 * per * u;
              if (c < cn) {
                float *d = tile + c * pitch + g;
                d[0] = cl_kept(v[u].x, wcls != NULL);
                d[1] = cl_kept(v[u].y, wcls != NULL);
                d[2] = cl_kept(v[u].z, wcls != NULL);
                d[3] = cl_kept(v[u].w, wcls != NULL);
              }
            }
          }
      } else { // 4 bytes a lane: warp w takes channels w, w + 8, .., a lane a tap
        const int64_t s8 = 8 * w_c; // channel c + 8's run after channel c's
        for (int cb = warp; cb < cn; cb += 8 * CL_WLOADS)
          for (int g = 0; g < tn; g += 32) { // taps g .. g + 31
            const int t = g + lane;
            const float *sp = src + (int64_t)cb * w_c + t;
            float v[CL_WLOADS];
#pragma unroll
            for (int u = 0; u < CL_WLOADS; u++) v[u] = cb + 8 * u < cn && t < tn ? sp[u * s8] : 0.0f;
#pragma unroll
            for (int u = 0; u < CL_WLOADS; u++)
              if (cb + 8 * u < cn && t < tn) tile[(cb + 8 * u) * pitch + t] = cl_kept(v[u], wcls != NULL);
          }
      }
    }
    TC_SYNC();
    // tap t's row of CL_WC channels: a warp a tap, a lane channels lane, lane + 32, ... (the tile's
    // reads of 32 channels in 32 banks, the pitch being odd; 128-byte stores)
    for (int t = tid >> 5; t < tn; t += 8) {
      float *dst = wcl + ((t0 + t) * C_out + co) * Cp + c0, *dsts = wcls ? wcls + (dst - wcl) : NULL;
#pragma unroll
      for (int k = 0; k < CL_WC / 32; k++) {
        const int c = k * 32 + (tid & 31);
        if (c0 + c < Cp) {
          const float v = c < cn ? tile[c * pitch + t] : 0.0f;
          dst[c] = v;
          if (dsts) dsts[c] = tc_tf32_small(v);
        }
      }
    }
    TC_SYNC();
  }
  tc_grid_wait(); // the input copy (the kernel before this one) is done too: this kernel's end says both ended
}


static int64_t cl_pow2_at_least(int64_t v, int64_t cap) {
  int64_t r = 1;
  while (r < v && r < cap) r *= 2;
  return r;
}

// A tile's box of `rows` positions (a power of 2) of a grid of Q positions: W first (up to 128
// positions), then H, then D.
static void cl_box(const int64_t Q[3], int rows, int box[3]) {
  box[2] = (int)cl_pow2_at_least(Q[2], 128);
  box[1] = (int)cl_pow2_at_least(Q[1], rows / box[2]);
  box[0] = rows / (box[2] * box[1]);
}

// A launch in the chain (the top of this file): a programmatic dependent launch, or with
// VOLUA_TC_CL_PDL=0 (for measuring) a plain one, after which the kernels' waits return at once.
static bool cl_pdl() {
  static const bool on = tc_switch_on("VOLUA_TC_CL_PDL");
  return on;
}
template <class... P, class... A>
static void cl_chain_launch(void (*kernel)(P...), tc_dim3 grid, tc_dim3 block, size_t smem, tc_stream s, A... args) {
  if (cl_pdl())
    (void)tc_launch_pdl(kernel, grid, block, smem, s, args...);
  else
    TC_LAUNCH(kernel, grid, block, smem, s, args...);
}

template <int WN, int MI, bool SPLIT>
static int cl_launch(ClParams &p, int64_t blocks, tc_stream s, const char *op, char *err) {
  void (*kernel)(const ClParams) = cl_conv_kernel<WN, MI, SPLIT>;
  p.nf_flag = NULL;
  if (SPLIT) volua_cuda_nf_get(&p.nf_flag, &p.nf_stamp);
  const size_t smem = (size_t)p.stages * ClStage<WN, MI, SPLIT>::BYTES + 2 * CL_MAX_STAGES * 8 + 1024;
  static size_t smem_set = 0;
  if (smem > smem_set) {
    TC_CHECK(tc_prepare_kernel(kernel, smem));
    smem_set = smem;
  }
  cl_chain_launch(kernel, tc_dim3((unsigned)blocks), tc_dim3(CL_THREADS), smem, s, p);
  return tc_launch_failed(op, err);
}

// What cl_run computes: a convolution of x (N, C_in, in) with weights at w[co * w_co + c * w_c + tap]
// (tap = (kd kdim[1] + kh) kdim[2] + kw) into y (N, C_out, out), as the GEMMs of nph phases (ClPhase;
// here with int64_t fields, checked against int before the launch) that share stride, dil and ostep.
struct ClJob {
  const char *op;
  bool split;  // math "fp32": split TF32 (cl_conv_kernel's SPLIT)
  bool forced; // VOLUA_TC_CL=1: wherever it can (cl_wanted)
  int64_t N, C_in, C_out, in[3], out[3], kdim[3], w_co, w_c;
  int64_t stride[3], dil[3], ostep[3];
  int nph;
  struct {
    int64_t Q[3], pad[3], taps[3], kfirst[3], kstep[3], oofs[3];
  } ph[CL_MAX_PHASES];
};

} // namespace

// The GEMM of job J on the channels-last copies: 0, 1 (an error, in err) or VOLUA_FAST_NOT_APPLICABLE
// (nothing launched).
static int cl_run(const ClJob &J, const float *x, const float *w, const float *b, float *y, tc_stream s, char *err) {
  const char *op = J.op;
  if (J.nph < 1 || J.nph > CL_MAX_PHASES) return VOLUA_FAST_NOT_APPLICABLE;
  for (int d = 0; d < 3; d++)
    if (J.stride[d] > 8 || J.out[d] <= 0 || J.out[d] > (1 << 30) || J.in[d] > (1 << 30) || J.kdim[d] > (1 << 20) ||
        J.dil[d] > (1 << 20) || J.ostep[d] > 64)
      return VOLUA_FAST_NOT_APPLICABLE;
  Env env;
  if (tc_get_env(&env, op, err)) return 1;
  if (!env.wg) return VOLUA_FAST_NOT_APPLICABLE; // wgmma and TMA: the sm_90a code
  ClParams p;
  memset(&p, 0, sizeof p);
  const int64_t Cp = (J.C_in + 3) / 4 * 4, taps = J.kdim[0] * J.kdim[1] * J.kdim[2];
  if (taps > (1 << 20) || J.C_in > (1 << 20) || J.N > (1 << 30) || J.C_out > 65535) // (grid y)
    return VOLUA_FAST_NOT_APPLICABLE;
  // the phases' grids: the box is the largest grid's (every phase tiles with the same box, so that
  // one input map serves them all); the most K steps of a phase
  int64_t Qmax[3] = {0, 0, 0}, ptaps = 0;
  for (int f = 0; f < J.nph; f++) {
    int64_t pt = 1;
    for (int d = 0; d < 3; d++) {
      if (J.ph[f].Q[d] <= 0 || J.ph[f].taps[d] <= 0) return VOLUA_FAST_NOT_APPLICABLE;
      if (J.ph[f].Q[d] > Qmax[d]) Qmax[d] = J.ph[f].Q[d];
      pt *= J.ph[f].taps[d];
    }
    if (pt > ptaps) ptaps = pt;
  }
  // Math "fp32": from 16 K steps (taps of the phase with the most, times 32-channel chunks). Below
  // that (1x1x1 below 512 input channels, k2 s2 below 512) the copies cost more than the GEMM gains:
  // 64 -> 256 1x1x1 of (2, 64, 16, 32, 32) took 0.063 ms here, 0.037 on conv3d_tc.cu's path; 256 -> 128
  // k2 s2 of (2, 256, 8, 16, 16) 0.050 and 0.047 (run s18r2).
  if (J.split && !J.forced && ptaps * tc_cdiv(J.C_in, 32) < 16) return VOLUA_FAST_NOT_APPLICABLE;
  cl_box(Qmax, CL_ROWS, p.box);
  // tiles of a box of `rows` positions, over all phases
  auto tiles_of = [&](const int box[3]) {
    int64_t t = 0;
    for (int f = 0; f < J.nph; f++) {
      int64_t tf = J.N;
      for (int d = 0; d < 3; d++) tf *= tc_cdiv(J.ph[f].Q[d], box[d]);
      t += tf;
    }
    return t;
  };
  // channels a block (BN): of 64 (only below 128 output channels), 128, 160, 192, 224 and 256, no more
  // than C_out, the one whose blocks pad C_out to the fewest columns, the widest of those (each A
  // box then serves more columns); 256 only where its blocks, split at most 16 ways, still fill the
  // SMs. Measured on (2, C, 8, 16, 16), tf32 ms: 256 -> 256 0.109 -> 0.094 with 256 (against 128);
  // 512 -> 512 of (1, 512, 4, 8, 8), whose 4 units of 256 give 64 blocks, 0.116 -> 0.106 with 128;
  // with 128 and 256 only, 320 -> 320 took 0.152 with 256 (512 columns) and 0.136 with 128 (384),
  // 384 -> 384 0.167 and 0.154; with 160 and 192, 0.104 and 0.131. 144 -> 144 0.0573 with 128 (256
  // columns), 0.0601 with 64 (192): fewer columns, but slower.
  // With 224 (fifteenth session): 448 -> 448 of (2, 448, 8, 16, 16) 0.151 against 0.175 with 256;
  // 224 -> 448 of (1, 224, 16, 32, 32) 0.254 against 0.312; 224 -> 224 of (2, 224, 8, 16, 16) 0.0544,
  // where the binary before it took 0.0726 with 256.
  // VOLUA_TC_CL_BN=64|128|160|192|224|256 for measuring.
  int WN = 8;
  {
    const int64_t t = tiles_of(p.box);
    const int64_t steps = ptaps * tc_cdiv(J.C_in, 32), most = steps / 8 < 16 ? steps / 8 : 16;
    const bool fill256 = t * tc_cdiv(J.C_out, 256) * (most > 1 ? most : 1) >= env.sms;
    int64_t best = INT64_MAX;
    for (const int bn : cl_widths) { // (ascending: the last of equal paddings is the widest)
      if (bn > J.C_out || (bn == 64 && J.C_out >= 128) || (bn == 256 && !fill256)) continue;
      const int64_t cols = tc_cdiv(J.C_out, bn) * bn;
      if (cols <= best) best = cols, WN = bn / 8;
    }
  }
  const char *fbn = getenv("VOLUA_TC_CL_BN");
  const int fb = fbn ? atoi(fbn) : 0;
  for (const int bn : cl_widths)
    if (fb == bn && fb <= J.C_out) WN = fb / 8;
  // Math "fp32" keeps two sums (acc and corr) a value: 64 or 128 channels a block and 128 positions
  // (with 160, ptxas caps the kernel at 168 registers and spills 1.8 KB); 128 from 128 output
  // channels (or forced: 64 measured slower on every deep layer of bench/small.py, run s18r5).
  if (J.split) WN = J.C_out >= 128 && fb != 64 ? 16 : 8;
  // 256 positions a block (MI 2: each B box serves twice the rows, a quarter less traffic a flop)
  // where BN is at most 128 and those blocks, unsplit, fill at least half the SMs. Measured (H200,
  // tf32): 128 -> 128 of (2, 128, 16, 32, 32), 128 blocks, GEMM 145 -> 108 us, the call 0.165 ->
  // 0.127 ms; 512 -> 512 of (1, 512, 4, 8, 8) (4 units, split) 0.056 -> 0.068, so not there.
  // VOLUA_TC_CL_BM=128|256 for measuring.
  int MI = 1, box2[3];
  cl_box(Qmax, 2 * CL_ROWS, box2);
  if (WN <= 16 && !J.split) {
    const int64_t units2 = tiles_of(box2) * tc_cdiv(J.C_out, WN * 8);
    const char *fbm = getenv("VOLUA_TC_CL_BM");
    MI = fbm && (atoi(fbm) == 128 || atoi(fbm) == 256) ? atoi(fbm) / 128 : 2 * units2 >= env.sms ? 2 : 1;
  }
  if (MI == 2)
    for (int d = 0; d < 3; d++) p.box[d] = box2[d];
  const int BN = WN * 8;
  p.C_out = J.C_out;
  p.ysize = J.N * J.C_out * J.out[0] * J.out[1] * J.out[2];
  p.co_blocks = (int)tc_cdiv(J.C_out, BN);
  p.cchunks = (int)tc_cdiv(J.C_in, 32);
  p.nph = J.nph;
  for (int d = 0; d < 3; d++) {
    p.stride[d] = (int)J.stride[d];
    p.dil[d] = (int)J.dil[d];
    p.ostep[d] = (int)J.ostep[d];
    p.kdim[d] = (int)J.kdim[d];
    p.out[d] = J.out[d];
    if ((int64_t)p.box[d] * J.stride[d] > 256) return VOLUA_FAST_NOT_APPLICABLE;
  }
  int64_t units = 0, min_niter = INT64_MAX;
  for (int f = 0; f < J.nph; f++) {
    ClPhase &P = p.ph[f];
    int64_t tf = J.N, pt = 1;
    for (int d = 0; d < 3; d++) {
      const int64_t Q = J.ph[f].Q[d], pad = J.ph[f].pad[d], kf = J.ph[f].kfirst[d], ks = J.ph[f].kstep[d];
      P.tiles[d] = tc_cdiv(Q, p.box[d]);
      tf *= P.tiles[d];
      pt *= J.ph[f].taps[d];
      // TMA coordinates and every tap index are 32-bit; the outputs q * ostep + oofs inside out
      const int64_t last_tap = kf + (J.ph[f].taps[d] - 1) * ks;
      if (P.tiles[d] * p.box[d] * J.stride[d] + (J.ph[f].taps[d] - 1) * J.dil[d] > ((int64_t)1 << 30) ||
          pad > ((int64_t)1 << 30) || pad < -((int64_t)1 << 30) || kf < 0 || kf >= J.kdim[d] || last_tap < 0 ||
          last_tap >= J.kdim[d] || (Q - 1) * J.ostep[d] + J.ph[f].oofs[d] >= J.out[d] || J.ph[f].oofs[d] < 0)
        return VOLUA_FAST_NOT_APPLICABLE;
      P.Q[d] = (int)Q;
      P.pad[d] = (int)pad;
      P.taps[d] = (int)J.ph[f].taps[d];
      P.kfirst[d] = (int)kf;
      P.kstep[d] = (int)ks;
      P.oofs[d] = (int)J.ph[f].oofs[d];
    }
    P.niter = (int)(pt * p.cchunks);
    if (P.niter < min_niter) min_niter = P.niter;
    units += tf * p.co_blocks;
  }
  p.stages = (int)((env.smem_optin - 1024 - 2 * CL_MAX_STAGES * 8) / ((J.split ? 2 : 1) * (MI * CL_A_BYTES + BN * 128)));
  if (p.stages > CL_MAX_STAGES) p.stages = CL_MAX_STAGES;
  if (p.stages < 2 || units > ((int64_t)1 << 30)) return VOLUA_FAST_NOT_APPLICABLE;
  // split K where the units leave SMs idle: parts of at least 8 steps (of the phase with the fewest),
  // at most 16 parts
  int64_t parts = units < env.sms ? env.sms / units : 1;
  if (parts > min_niter / 8) parts = min_niter / 8;
  const char *ks = getenv("VOLUA_TC_KSPLIT");
  if (ks && atoi(ks) >= 1) parts = atoi(ks) < min_niter ? atoi(ks) : min_niter;
  if (parts > 16) parts = 16; // (cl_reduce_kernel's most)
  if (parts < 1) parts = 1;
  while (parts > 1 && parts * p.ysize * 4 > ((int64_t)1 << 28)) parts--; // the copies: at most 256 MB
  p.ksplit = (int)parts;
  int64_t first = 0; // the phases' blocks, one after the other
  for (int f = 0; f < J.nph; f++) {
    p.ph[f].first = first;
    first += J.N * p.ph[f].tiles[0] * p.ph[f].tiles[1] * p.ph[f].tiles[2] * p.co_blocks * p.ksplit;
  }
  if (first > INT32_MAX) return VOLUA_FAST_NOT_APPLICABLE;

  // (with J.split each copy's small parts follow it: xcls = xcl + xn, wcls = wcl + wn, 16-byte
  // aligned as TMA wants, Cp being a multiple of 4)
  float *xcl = NULL, *wcl = NULL, *ws = NULL;
  const int64_t xn = J.N * J.in[0] * J.in[1] * J.in[2] * Cp, wn = taps * J.C_out * Cp, copies = J.split ? 2 : 1;
  char merr[VOLUA_ERR_MAX];
  // The weights' copy is kept across calls where the op named this weight (src/cuda.c, "prepared
  // weights"): what decides its contents besides w is this recipe. Asked for last: no allocation
  // follows that could drop it before the launches below read it.
  const int64_t recipe[] = {J.C_out, J.C_in, Cp, taps, J.w_co, J.w_c, J.split};
  int wfill = 1;
  bool wkept = false;
  if (volua_cuda_malloc(reinterpret_cast<void **>(&xcl), copies * xn * 4, merr) ||
      (p.ksplit > 1 && volua_cuda_malloc(reinterpret_cast<void **>(&ws), p.ksplit * p.ysize * 4, merr)) ||
      !((wkept = (wcl = static_cast<float *>(volua_cuda_derived(w, recipe, (int)(sizeof recipe / sizeof *recipe), copies * wn * 4, &wfill, merr))) != NULL) ||
        volua_cuda_malloc(reinterpret_cast<void **>(&wcl), copies * wn * 4, merr) == 0)) {
    volua_cuda_free(xcl); // no memory for the copies: the other paths
    volua_cuda_free(ws);
#ifndef VOLUA_TC_EMULATE
    (void)cudaGetLastError();
#endif
    return VOLUA_FAST_NOT_APPLICABLE;
  }
  auto wdone = [&](bool ok) { // the weights' copy: kept (dropped if this call failed after writing it) or freed
    if (!wkept) volua_cuda_free(wcl);
    else if (!ok && wfill) volua_cuda_derived_failed(wcl);
    else volua_cuda_derived_release(wcl);
  };
  const int64_t xdim[5] = {Cp, J.in[2], J.in[1], J.in[0], J.N};
  const int xbox[5] = {32, p.box[2] * p.stride[2], p.box[1] * p.stride[1], p.box[0] * p.stride[0], 1};
  const int xes[5] = {1, p.stride[2], p.stride[1], p.stride[0], 1};
  const int64_t wdim[5] = {Cp, J.C_out, taps, 1, 1};
  const int wbox[5] = {32, BN, 1, 1, 1}, wes[5] = {1, 1, 1, 1, 1};
  // (both 128-byte swizzled, as tc_wg_desc128 reads them)
  float *xcls = J.split ? xcl + xn : NULL, *wcls = J.split ? wcl + wn : NULL;
  if (tc_encode_map(&p.xmap, xcl, 5, xdim, xbox, xes, 3) || tc_encode_map(&p.wmap, wcl, 5, wdim, wbox, wes, 3) ||
      (J.split && (tc_encode_map(&p.xsmap, xcls, 5, xdim, xbox, xes, 3) ||
                   tc_encode_map(&p.wsmap, wcls, 5, wdim, wbox, wes, 3)))) {
    volua_cuda_free(xcl);
    wdone(false);
    volua_cuda_free(ws);
    return VOLUA_FAST_NOT_APPLICABLE;
  }
  p.y = p.ksplit > 1 ? ws : y;
  p.bias = p.ksplit > 1 ? NULL : b;

  int rc = 0;
  const int64_t S = J.in[0] * J.in[1] * J.in[2], stiles = tc_cdiv(S, CL_LS);
  const int tt = (int)(taps < CL_WSMEM / CL_WC - 1 ? taps : CL_WSMEM / CL_WC - 1);
  if (J.N * stiles < ((int64_t)1 << 31) && tc_cdiv(Cp, 32) < 65536) {
    TC_LAUNCH(cl_layout_kernel, tc_dim3((unsigned)(J.N * stiles), (unsigned)tc_cdiv(Cp, 32), 1), 256, 32 * (CL_LS + 1) * 4,
              s, x, xcl, xcls, J.C_in, Cp, S, stiles);
    rc = tc_launch_failed(op, err);
  } else {
    rc = VOLUA_FAST_NOT_APPLICABLE;
  }
  if (rc == 0 && wfill) { // (a kept copy of these weights: the GEMM waits on the input's copy alone)
    cl_chain_launch(cl_weights_kernel, tc_dim3((unsigned)tc_cdiv(Cp, CL_WC), (unsigned)J.C_out, 1), tc_dim3(256),
                    (size_t)CL_WC * (tt | 1) * 4, s, w, wcl, wcls, J.C_out, J.C_in, Cp, taps, tt, J.w_co, J.w_c);
    rc = tc_launch_failed(op, err);
  }
  if (rc == 0)
    rc = J.split    ? (WN == 16 ? cl_launch<16, 1, true>(p, first, s, op, err) : cl_launch<8, 1, true>(p, first, s, op, err))
         : WN == 32 ? cl_launch<32, 1, false>(p, first, s, op, err)
         : WN == 28 ? cl_launch<28, 1, false>(p, first, s, op, err)
         : WN == 24 ? cl_launch<24, 1, false>(p, first, s, op, err)
         : WN == 20 ? cl_launch<20, 1, false>(p, first, s, op, err)
         : MI == 2  ? (WN == 16 ? cl_launch<16, 2, false>(p, first, s, op, err) : cl_launch<8, 2, false>(p, first, s, op, err))
         : WN == 16 ? cl_launch<16, 1, false>(p, first, s, op, err)
                    : cl_launch<8, 1, false>(p, first, s, op, err);
  if (rc == 0 && p.ksplit > 1) {
    const int64_t vol = J.out[0] * J.out[1] * J.out[2];
    const int V = p.ksplit <= 4 ? 4 : p.ksplit <= 8 ? 2 : 1;
    const unsigned rb = (unsigned)tc_cdiv(p.ysize, 256 * V);
    void (*reduce)(const float *, int, int64_t, const float *, int64_t, int64_t, float *) =
        V == 4 ? cl_reduce_kernel<4> : V == 2 ? cl_reduce_kernel<2> : cl_reduce_kernel<1>;
    cl_chain_launch(reduce, tc_dim3(rb), tc_dim3(256), 0, s, ws, p.ksplit, p.ysize, b, J.C_out, vol, y);
    rc = tc_launch_failed(op, err);
  }
  volua_cuda_free(xcl); // stream-ordered reuse, as conv3d_tc.cu's scratch
  wdone(rc == 0);
  volua_cuda_free(ws);
  if (rc == 0) {
    volua_cuda_fast_note_call();
    if (tc_verbose())
      fprintf(stderr, "volua cl: %s%s, %d phase(s), box (%d, %d, %d) BN %d, %lld blocks of %d channel blocks, %d parts of K, weights %s\n",
              op, J.split ? " (split TF32)" : "", p.nph, p.box[0], p.box[1], p.box[2], BN, (long long)first, p.co_blocks, p.ksplit,
              !wkept ? "copied" : wfill ? "copied and kept" : "kept from an earlier call");
  }
  return rc;
}

// The fields of J that conv3d and conv_transpose3d fill alike: sizes, and the weight's strides
// (conv3d's w is (C_out, C_in, taps), a transposed convolution's (C_in, C_out, taps)).
static void cl_job_init(ClJob &J, const char *op, volua_math_mode math, bool forced, int64_t N, int64_t C_in,
                        int64_t C_out, const int64_t in[3], const int64_t out[3], const int64_t kernel[3], bool transposed) {
  memset(&J, 0, sizeof J);
  J.op = op;
  J.split = math == VOLUA_MATH_FP32;
  J.forced = forced;
  J.N = N, J.C_in = C_in, J.C_out = C_out;
  const int64_t taps = kernel[0] * kernel[1] * kernel[2];
  J.w_c = transposed ? C_out * taps : taps;
  J.w_co = transposed ? taps : C_in * taps;
  for (int d = 0; d < 3; d++) J.in[d] = in[d], J.out[d] = out[d], J.kdim[d] = kernel[d];
}

// Whether a path that wants deep layers takes them: VOLUA_TC_CL=0 never, 1 wherever it can; else
// from 256 input channels, or from 64 with 128 output channels or more. Measured for conv3d
// (bench/NOTES.md, eleventh to fourteenth sessions): 64 -> 128 of (4, 64, 8, 16, 16): 0.0308 ms here,
// 0.0395 on conv3d_tc.cu's path; but 128 -> 64 of (2, 128, 16, 32, 32): 0.0974 here, 0.0824 there.
// Transposed convolutions whose phases differ in taps (`uneven`: k4 s2 p1, k3 s2; their one-GEMM
// form pads K with the taps a phase lacks) from 64 input channels; the others (stride 1, k2 s2: every
// phase the same taps) by conv3d's rule. Measured on the H200 (tf32, bench/NOTES.md, seventeenth
// session) against conv_transpose3d_tc.cu's paths: k4 s2 p1 128 -> 64 of (2, 128, 16, 32, 32)
// 0.300 ms against 0.552, k3 s2 p1 op1 128 -> 64 0.196 against 0.232, 64 -> 64 k4 of (4, 64, 8, 32,
// 32) 0.208 against 0.306; but k2 s2 128 -> 64 of (2, 128, 32, 32, 32) 0.314 against 0.160 (the
// one GEMM, unpadded), while 256 -> 128 of (2, 256, 8, 16, 16) 0.033 against 0.042. Math "fp32"
// (split TF32) by the same rule and 16 K steps at least (cl_run). Measured (run s18r3), of the rows
// of bench/small.py's three sets this takes: 1.07x to 4.9x faster than there, except 64 -> 128 k3
// s2 p1 of (2, 64, 32, 64, 64) (0.192 ms against 0.183: its input copy has 8 times the output's
// positions) and 128 -> 64 k4 s2 p1 of (2, 128, 16, 32, 32) (0.447 against 0.439); of the rows it
// leaves, 128 -> 64 k3 of (2, 128, 16, 32, 32) took 0.141 there and 0.162 here (s18r1).
// Transposed convolutions, since the thirty-seventh session (run s37r5, H200, this path against
// VOLUA_TC_CL=0, fp32 / tf32 ms): with 128 output channels the tc paths won every shape measured:
// L2-61's 64 -> 128 k3 of (16, 64, 32, 32, 32) 2.74 / 1.32 against 4.21 / 1.85 here, L2-77's k5
// 9.03 / 3.52 against 13.45 / 4.83, L2-100's k3 s2 p1 of (16, 64, 24, 48, 48) 6.43 / 5.56 against
// 11.61 / 9.80, the same at N 2, k3 s2 p1 of (2, 64, 32, 64, 64) 2.10 / 1.50 against 3.15 / 2.93,
// k3 of (2, 64, 16, 32, 32) 0.207 / 0.103 against 0.303 / 0.152. Below 128 this path still wins
// k3 s2 p1 op1 128 -> 64 (0.260 / 0.149 against 0.350 / 0.208) and k4 s2 p1 in tf32 at N 2, and
// loses k4 s2 p1 128 -> 64 at N 8 (1.83 / 0.95 against 1.45 / 0.86): kept there. From 256 input
// channels: not measured, kept. (The three conv3d shapes of that run stay here: 64 -> 128 and
// 256 -> 128 were 5-30 % faster on this path.)
static int cl_wanted(int64_t C_in, int64_t C_out, bool transposed, bool uneven) { // (2: forced)
  const char *v = getenv("VOLUA_TC_CL");
  if (v && strcmp(v, "0") == 0) return 0;
  if (v && strcmp(v, "1") == 0) return 2;
  if (transposed) return C_in >= 256 || (uneven && C_in >= 64 && C_out < 128);
  return C_in >= 256 || (C_in >= 64 && C_out >= 128);
}

extern "C" int volua_cuda_conv3d_cl(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                    float *y, volua_math_mode math, cudaStream_t s, char *err) {
  const int want = cl_wanted(g->C_in, g->C_out, false, false);
  if ((math != VOLUA_MATH_TF32 && math != VOLUA_MATH_FP32) || g->groups != 1 || g->padding_mode != VOLUA_PAD_ZEROS ||
      g->C_in < 32 || g->C_out < 64 || !want)
    return VOLUA_FAST_NOT_APPLICABLE;
  ClJob J;
  cl_job_init(J, "conv3d", math, want == 2, g->N, g->C_in, g->C_out, g->in, g->out, g->kernel, false);
  J.nph = 1;
  for (int d = 0; d < 3; d++) {
    J.stride[d] = g->stride[d], J.dil[d] = g->dilation[d], J.ostep[d] = 1;
    J.ph[0].Q[d] = g->out[d], J.ph[0].pad[d] = g->pad_lo[d], J.ph[0].taps[d] = g->kernel[d];
    J.ph[0].kfirst[d] = 0, J.ph[0].kstep[d] = 1, J.ph[0].oofs[d] = 0;
  }
  return cl_run(J, x, w, b, y, s, err);
}

// A transposed convolution's phases (conv_transpose3d_tc.cu's phase_of): every output a phase of
// its own, that is every phase live (no output is bias alone), at most CL_MAX_PHASES of them.
extern "C" int volua_cuda_conv_transpose3d_cl(const volua_conv_transpose3d_geom *g, const volua_tconv_phase (*ph)[64],
                                              const float *x, const float *w, const float *b, float *y,
                                              volua_math_mode math, cudaStream_t s, char *err) {
  int64_t n[3]; // the phases with outputs, per dim
  bool uneven = false; // phases of one dim with other taps or padding than each other
  for (int d = 0; d < 3; d++) {
    if (g->stride[d] > 8) return VOLUA_FAST_NOT_APPLICABLE;
    n[d] = g->stride[d] < g->out[d] ? g->stride[d] : g->out[d];
    for (int64_t c = 1; c < n[d]; c++) uneven = uneven || ph[d][c].taps != ph[d][0].taps || ph[d][c].ipad != ph[d][0].ipad;
  }
  const int want = cl_wanted(g->C_in, g->C_out, true, uneven);
  if ((math != VOLUA_MATH_TF32 && math != VOLUA_MATH_FP32) || g->groups != 1 || g->C_in < 32 || g->C_out < 64 || !want ||
      n[0] * n[1] * n[2] > CL_MAX_PHASES)
    return VOLUA_FAST_NOT_APPLICABLE;
  ClJob J;
  cl_job_init(J, "conv_transpose3d", math, want == 2, g->N, g->C_in, g->C_out, g->in, g->out, g->kernel, true);
  for (int d = 0; d < 3; d++) J.stride[d] = 1, J.ostep[d] = g->stride[d], J.dil[d] = ph[d][0].idil; // (idil: the same for every phase of a dim)
  J.nph = 0;
  for (int64_t cd = 0; cd < n[0]; cd++)
    for (int64_t ch = 0; ch < n[1]; ch++)
      for (int64_t cw = 0; cw < n[2]; cw++) {
        const int64_t c3[3] = {cd, ch, cw};
        for (int d = 0; d < 3; d++) {
          const volua_tconv_phase &f = ph[d][c3[d]];
          if (!f.live) return VOLUA_FAST_NOT_APPLICABLE; // a dead phase: its outputs are bias alone
          J.ph[J.nph].Q[d] = f.Q, J.ph[J.nph].taps[d] = f.taps, J.ph[J.nph].pad[d] = f.ipad;
          J.ph[J.nph].kfirst[d] = f.kfirst, J.ph[J.nph].kstep[d] = f.kstep, J.ph[J.nph].oofs[d] = c3[d];
        }
        J.nph++;
      }
  return cl_run(J, x, w, b, y, s, err);
}
