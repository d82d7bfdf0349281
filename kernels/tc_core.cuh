// tc_core.cuh: the tensor-core implicit GEMM shared by conv3d_tc.cu, conv_transpose3d_tc.cu and
// conv3d_gn_mean_tc.cu (one machine for three op families, so it lives in a header rather than in
// one family's .cu). Read bench/NOTES.md for the design and the numbers behind it.
//
// The GEMM. For one sample n, a grid of positions q = (qd, qh, qw) reads the input at
//     i = q * istride - ipad + j * idil        (per dim, tap j < taps)
// and writes output o = q * ostep + oofs. conv3d is istride = stride, ipad = pad, ostep = 1; one
// phase (parity class) of a transposed convolution is istride = 1 and ostep = stride. Rows M are
// positions, columns N output channels, K = (input channel, tap). A block takes BM = 256 consecutive
// positions of one (n, qd) plane (flattened qh*Q2 + qw, so nothing is wasted on row ends) and BN
// channels; it stages the input patch those positions read into shared memory (one TMA box where W
// is a multiple of 4, else cp.async; zeros for padding) and multiplies it, through a table of K
// offsets, against weights a small kernel has laid
// out in the k-loop's order. The k-loop is wgmma (sm_90a, tc_compute_wg, where tc_plan's measured
// rule takes it) or mma.sync m16n8k8 (tc_compute: the rest, and any GPU other than compute
// capability 9.0), both TF32: math "tf32" is one product; math "fp32" splits
// each operand into big = tf32(v) and small = tf32(v - big) and adds big*small + small*big into a
// second accumulator (the tensor core truncates its sums; keeping the small terms apart keeps the
// result as accurate as an FMA loop: bench/NOTES.md has the simulation). Blocks are persistent and
// double-buffer the next (tile, channel chunk) while computing the current one.
#ifndef VOLUA_KERNELS_TC_CORE_CUH
#define VOLUA_KERNELS_TC_CORE_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "tc_prims.cuh"
#include "fast.h"
#include "pointwise.cuh"
#ifndef VOLUA_TC_EMULATE
#include "common.cuh"
#define TC_CHECK(expr) CUDA_CHECK(expr)
#define TC_CHECK_LAUNCH() CUDA_CHECK_LAUNCH()
// After a launch whose scratch must be freed on failure: 0, or the error recorded in err.
static inline int tc_launch_failed(const char *op, char *err) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : volua_kernel_error(err, op, e, "kernel launch", __FILE__, __LINE__);
}
#else
#define TC_CHECK(expr) (void)(expr)
#define TC_CHECK_LAUNCH() (void)0
static inline int tc_launch_failed(const char *, char *) { return 0; }
#endif

namespace volua_tc {

enum { EPI_STORE = 0, EPI_WBOX = 1, EPI_STATS = 2, EPI_PHASES = 3 };

// Rows of a warp: WM m16 tiles (2, or 4 in math "tf32" where the registers allow); a block has
// TC_WARPS warps stacked along M: BM = 256 or 512 positions.
#define TC_WARPS 8

// Blocks per SM the kernel is compiled for (__launch_bounds__): two where 128 registers a thread
// serve (the statistics kernels, and math "tf32" with WM 2 and at most 32 channels), else one.
#define TC_MIN_BLOCKS(epi, split, wm, wn) (((epi) == EPI_STATS || (!(split) && (wm) == 2 && (wn) <= 4)) ? 2 : 1)

// The kernels that come in a two-team instantiation (Params::teams 2): the plain store epilogue in
// math "tf32" with WM 4, no groups, one or two sub-GEMMs (the plans that gain: small K,
// bench/NOTES.md). The team arithmetic stays out of every other kernel: with it as run-time values,
// the one-team kernels took 3 to 8 % longer (more registers, 33 more instructions in the k-loop).
#define TC_TEAMABLE(epi, split, wm, nsub, groups) ((epi) == EPI_STORE && !(split) && (wm) == 4 && (groups) == 1)

// Where the weight of (co, ci, tap j) is: w[co*w_co + ci*w_ci + (k0*kdim1 + k1)*kdim2 + k2] with
// k = kfirst + j*kstep per dim (conv3d: kfirst 0, kstep 1; a transposed phase walks its taps);
// group g's weights start at w + g*w_g (co and ci count within the group).
struct WeightMap {
  const float *w;
  int64_t w_g, w_co, w_ci; // w_g: from one group's weights to the next's
  int64_t kdim[3], kfirst[3], kstep[3];
};

// Division by an invariant d (1 <= d < 2^31) of a dividend n < 2^31, by a multiply and a shift:
// n / d = (n * m) >> (31 + s), with s = ceil(log2 d) and m = ceil(2^(31 + s) / d) < 2^32
// (Granlund and Montgomery, "Division by invariant integers using multiplication", 1994,
// theorem 4.2 with N = 31). tc_plan makes them for the tile decode; a division by a value known only
// at run time is about 15 dependent instructions (ncu: 13 % of L2-23's tf32 samples in tile decode).
struct TcDiv {
  uint32_t m;
  int s;
};
static inline TcDiv tc_div_make(int64_t d) {
  TcDiv r;
  r.s = 0;
  while (((int64_t)1 << r.s) < d) r.s++;
  r.m = (uint32_t)((((uint64_t)1 << (31 + r.s)) + (uint64_t)d - 1) / (uint64_t)d);
  return r;
}

struct Params {
  // p.tma: the input patches are TMA boxes of this map (tc_encode_tmap; the kernel's parameter is
  // TC_GRID_CONST so that the copy engine reads the map where it is)
  tc_tmap tmap;
  const float *x, *wprep, *bias;
  float *y;
  double *partials; // EPI_STATS: (N, parts, C_out, 2) sums of v and v*v
  // EPI_STATS, the fused op's finish: blocks that have written their partial sums of sample n, in
  // done[n] (zeroed by tc_prep_kernel); the last applies GroupNorm (gn_groups groups, gn_S outputs
  // per channel, gn_eps, weight gn_w and bias gn_b or none) and writes the sample's mean to y[n]
  int *done; // (split K's counts too: see ksws)
  // math "fp32", not EPI_STATS: where a tile's sums end with a value that is not finite, nf_stamp
  // goes to *nf_flag and the op redoes its output (fast.h, volua_cuda_nf_begin); NULL: no check
  int *nf_flag;
  int nf_stamp;
  int64_t gn_groups, gn_S;
  double gn_eps;
  const float *gn_w, *gn_b;
  // groups: C_in and C_out are one group's channels; group g of sample n reads the input channels
  // from (n * groups + g) * C_in on and writes the outputs from (n * groups + g) * C_out on, with
  // weights of its own (EPI_STATS: groups 1)
  int64_t N, groups, C_in, C_out, in[3];
  int64_t Q[3], istride[3], ipad[3], idil[3], taps[3];
  int64_t out[3], ostep[3], oofs[3];
  // the plan (tc_plan)
  int WM, BM, BN, E, ci_chunk, nchunks, ksteps, co_blocks, parts;
  int64_t plane, tiles_per_plane, tiles_per_n, ntiles;
  int vec4, cshift, x32; // tc_stage_patch: 16-byte copies, left shift, int offsets
  int tma;                // the patch is one TMA box (prow rows always), completing on an mbarrier per buffer
  int contig;                 // EPI_STORE: a tile's outputs per channel are one run from its first position
  int off32;                  // BN output volumes (and every output coordinate) fit in int
  int prow, wp, pitch_w, pitch_d, pitch_c, patch_floats, zero_floats, buf_floats, w_floats;
  int kofs_bytes, stats_bytes;
  int dec32;               // fewer than 2^31 tiles and positions per plane: tc_decode and tc_qrow in 32 bits
  TcDiv div_tpp, div_q0;   // (dec32) by tiles_per_plane and Q[0]
  TcDiv div_q2;            // by Q[2] (< 2^28): a position's row
  int teams, order, tbufs; // 1 or 2 teams of warps (2: each runs its own tiles), whether they take turns at the
                           // mma, and patch buffers per team (1 or 2; a single team has 2)
  int wg;                  // the k-loop on wgmma (tc_compute_wg), the weights in its layout (tc_prep_index)
  int pst, pst_off;        // EPI_PHASES with two W phases: whole output rows through a warp's stage at byte pst_off
  int bound_chunks;        // tc_plan: the chunks of the plan with the bound's patch (0: none fits; tc_plan_store)
  size_t smem;
  // Sub-GEMMs (a transposed convolution's two W phases of stride 2, conv_transpose3d_tc.cu): nsub
  // GEMMs share the grid of positions (Q[2] the larger phase's column count) and the staged patch
  // (wspan columns per position row: both phases' taps), and differ in taps along W, their column
  // offset in the patch, weights and K table, their output column offset, and their columns
  // (sub_Q2). A block computes a tile's sub-GEMMs back to back, so that the two phases' outputs,
  // interleaved in each output row, reach L2 together: written by separate launches, each phase left
  // every sector half written, and the GPU read every such sector back from DRAM to complete it
  // (KernelBench L1-73: 400 MB read and 260 MB written per phase for 130 MB of outputs).
  // nsub 1: the plain fields hold everything (sub_ksteps and sub_w_floats [0] are set too).
  int nsub;
  // EPI_PHASES (conv_transpose3d_tc.cu): every phase of a transposed convolution with strides of
  // at most 2 in one GEMM. Rows are positions q of the phases' common grid, K the input channels
  // times the union of the phases' tap windows, columns (co, phase) with the phase fastest: column
  // co * nph + ph writes output o = q * ostep + (ph's offsets), ph = (c0 * phs1 + c1) * phs2 + c2.
  int nph, phs1, phs2;
  int phq[8]; // EPI_PHASES: column q (0..7) of a block's n8 tile: c0 | c1 << 8 | c2 << 16 | (q / nph) << 24 (tc_plan)
  int64_t wspan;                      // patch columns read per position row, 0: from taps[2]
  const float *sub_wprep[2];
  int64_t sub_taps2[2], sub_oofs2[2], sub_Q2[2];
  int sub_cofs[2], sub_ksteps[2], sub_w_floats[2];
  // Split K (KS kernels, ksplit > 1 parts): each part's sums of each (tile, channel block) in ksws
  // (tile-major, then channel block, part, value, thread); done[u] counts the parts of (tile,
  // channel block) u that have arrived. ndone: done's counts (N for EPI_STATS, else the units), zeroed
  // by tc_prep_kernel. (These fields last: the older fields' offsets, and so the other kernels'
  // code, stay as they were.)
  float *ksws;
  int64_t ndone;
  int ksplit;
  // The W-interleaved plan (conv3d_tc.cu, tc_kw_kernel; kwil 4, else 0): a tile's four m64 tiles
  // hold the columns 4c + i (i = 0..3) of the same (row, c) pairs, K is (kw, input channel, kd, kh)
  // with kks k-steps per kw, and c4 = ceil(Q2 / 4) pairs per output row (div_c4 divides by it).
  int kwil, kks, c4;
  TcDiv div_c4;
  // EPI_STORE and EPI_PHASES, the FUSE kernels: the first steps of a pointwise chain applied to each
  // value after the bias, in registers (tc_epi_apply; volua_cuda_epilogue_take); n 0: none. (Last,
  // so that the other fields keep the offsets they had before it.)
  volua_pw_chain epi;
};

// -- device side ----

TC_DEVICE float tc_float(uint32_t u) { return __uint_as_float(u); }

TC_DEVICE unsigned tc_div(unsigned n, TcDiv d) { return (unsigned)(((uint64_t)n * d.m) >> (31 + d.s)); } // n < 2^31

// Tile T -> sample n, plane qd and first position p0 of the plane.
// (p.dec32: 32-bit divisions by multiplication, tc_div. A 64-bit one is a subroutine of some 70
// instructions, and every thread decodes two tiles per item: ncu had 17 % of L1-60's tf32 samples in
// tile set-up.)
TC_DEVICE void tc_decode(const Params &p, int64_t T, int64_t &n, int64_t &qd, int64_t &p0) {
  if (p.dec32) {
    const unsigned t = (unsigned)T, tpp = (unsigned)p.tiles_per_plane, q0 = (unsigned)p.Q[0];
    const unsigned r = tc_div(t, p.div_tpp), nn = tc_div(r, p.div_q0);
    p0 = (int64_t)(t - r * tpp) * p.BM;
    qd = r - nn * q0;
    n = nn;
    return;
  }
  const int64_t pt = T % p.tiles_per_plane, r = T / p.tiles_per_plane;
  qd = r % p.Q[0];
  n = r / p.Q[0];
  p0 = pt * p.BM;
}

// The row (qh) of position v of a plane (0 <= v < plane).
TC_DEVICE int64_t tc_qrow(const Params &p, int64_t v) {
  return p.dec32 ? (int64_t)tc_div((unsigned)v, p.div_q2) : v / p.Q[2];
}

// The input patch tile T reads for channel chunk `chunk`: per channel, taps[0] planes of `rows`
// rows of wp columns; padding and channels past C_in become zeros. I is int where a sample's input
// has fewer than 2^31 elements (p.x32), else int64_t.
// With p.vec4 (W a multiple of 4, a 16-byte aligned input, pitches multiples of 4) the patch starts
// p.cshift columns left of the first column read, so that every group of 4 columns is wholly inside
// the input or wholly padding. Then the block's threads take the (row, group of 4 columns) pairs of
// the whole patch in turn, one 16-byte copy each, with the row's (channel, plane, row) advanced by
// carries (a warp used to take whole rows, some lanes per row: with rows of 9 groups (L1-77) over
// half of its lanes idled through ~110 instructions of row set-up per 16-byte copy).
// Without vec4, rows of at most 24 columns are dealt the same way one column (4 bytes) at a time
// (KernelBench L1-59, W 10: a warp per row left 22 lanes idle through 76 instructions a row, 59 % of
// the kernel's samples), and wider rows a row per warp, a column per lane.
template <int VW, class I>
TC_DEVICE void tc_stage_pairs(const Params &p, float *buf, const float *xn, int chunk, int rows, I id0, I ih0, int tid,
                              int nth) {
  const int td = (int)p.taps[0], nrows = p.ci_chunk * td * rows;
  const I D = (I)p.in[0], H = (I)p.in[1], W = (I)p.in[2], C = (I)p.C_in, dil0 = (I)p.idil[0];
  const I ipad2 = (I)(p.ipad[2] + p.cshift);
  const int G = (p.wp + VW - 1) / VW, total = nrows * G;
  const int dr = nth / G, dg = nth - dr * G; // a step of nth pairs: dr rows and dg groups
  // dr rows as (channels, planes, rows): added digit by digit, one carry each
  const int sc = dr / (td * rows), sj = (dr - sc * td * rows) / rows, sr = dr - (sc * td + sj) * rows;
  int r = tid / G, grp = tid - r * G;
  int cil = r / (td * rows), jd = (r - cil * td * rows) / rows, row = r - (cil * td + jd) * rows;
  for (int e = tid; e < total; e += nth) {
    const I ci = (I)chunk * p.ci_chunk + cil, id = id0 + jd * dil0, ih = ih0 + row, iw = VW * grp - ipad2;
    const bool ok = ci < C && id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W;
    float *dst = buf + cil * p.pitch_c + jd * p.pitch_d + row * p.pitch_w + VW * grp;
    if (VW == 4)
      tc_cp16z(dst, ok ? xn + ((ci * D + id) * H + ih) * W + iw : p.x, ok);
    else
      tc_cp4(dst, ok ? xn + ((ci * D + id) * H + ih) * W + iw : p.x, ok);
    grp += dg;
    row += sr;
    jd += sj;
    cil += sc;
    if (grp >= G) { // one more row
      grp -= G;
      row++;
    }
    if (row >= rows) {
      row -= rows;
      jd++;
    }
    if (jd >= td) {
      jd -= td;
      cil++;
    }
  }
}

template <class I>
TC_DEVICE void tc_stage_rows(const Params &p, float *buf, const float *xn, int chunk, int rows, I id0, I ih0, int tid,
                             int nth) {
  if (p.vec4) {
    tc_stage_pairs<4, I>(p, buf, xn, chunk, rows, id0, ih0, tid, nth);
    return;
  }
#ifndef VOLUA_TC_NO_VW1
  if (p.wp <= 24) {
    tc_stage_pairs<1, I>(p, buf, xn, chunk, rows, id0, ih0, tid, nth);
    return;
  }
#endif
  const int td = (int)p.taps[0], nrows = p.ci_chunk * td * rows;
  const I D = (I)p.in[0], H = (I)p.in[1], W = (I)p.in[2], C = (I)p.C_in, dil0 = (I)p.idil[0];
  const I ipad2 = (I)(p.ipad[2] + p.cshift);
  const int lane = tid & 31, warp = tid >> 5, nwarps = nth >> 5;
  int r = warp;
  int cil = r / (td * rows), jd = (r - cil * td * rows) / rows, row = r - (cil * td + jd) * rows;
  for (; r < nrows; r += nwarps) {
    const I ci = (I)chunk * p.ci_chunk + cil, id = id0 + jd * dil0, ih = ih0 + row;
    const bool rowok = ci < C && id >= 0 && id < D && ih >= 0 && ih < H;
    const float *src = rowok ? xn + ((ci * D + id) * H + ih) * W : p.x;
    float *dst = buf + cil * p.pitch_c + jd * p.pitch_d + row * p.pitch_w;
    for (int c = lane; c < p.wp; c += 32) {
      const I iw = c - ipad2;
      const bool ok = rowok && iw >= 0 && iw < W;
      tc_cp4(dst + c, ok ? src + iw : p.x, ok);
    }
    row += nwarps;
    while (row >= rows) {
      row -= rows;
      if (++jd == td) {
        jd = 0;
        cil++;
      }
    }
  }
}

TC_DEVICE void tc_stage_weights(int w_floats, float *wbuf, const float *src) {
  for (int i = threadIdx.x; i < w_floats / 4; i += blockDim.x) tc_cp16(wbuf + 4 * i, src + 4 * i);
}

// tid, nth: this thread's index among the nth threads that stage the patch (a block or a team).
// With p.tma the stagers' first thread has the copy engine move the patch as one box of the input
// (channels of the chunk x taps[0] planes x prow rows x pitch_w columns: the patch's own layout;
// rows, columns and channels outside the input arrive as zeros), completing on `bar`; the other
// stagers do nothing. ncu of KernelBench L1-73 (tf32): the copy loop below ran 57 instructions per
// 16 bytes, 31 % of the kernel's instructions.
// wsrc: NULL, or this item's weights (w_floats of them) to go to wdst with the patch: with p.tma one
// bulk copy on the same barrier (a chunked plan restages its weights per item: 3 500 cp.async for
// L1-77's 55 KB), else by the whole block's cp.async.
template <bool GR>
TC_DEVICE void tc_stage_patch(const Params &p, float *buf, int64_t T, int chunk, int grp, int tid, int nth,
                              uint64_t *bar, const float *wsrc = nullptr, float *wdst = nullptr, int w_floats = 0) {
  int64_t n, qd, p0;
  if (p.tma) {
    if (tid != 0) return;
    tc_decode(p, T, n, qd, p0);
    const int64_t qh0 = tc_qrow(p, p0);
    tc_mbar_expect_tx(bar, (unsigned)p.patch_floats * 4u + (wsrc ? (unsigned)w_floats * 4u : 0u));
    tc_tma_load5(buf, &p.tmap, -(int)(p.ipad[2] + p.cshift), (int)(qh0 * p.istride[1] - p.ipad[1]),
                 (int)(qd * p.istride[0] - p.ipad[0]), chunk * p.ci_chunk, (int)(GR ? n * p.groups + grp : n), bar);
    if (wsrc) tc_bulk_load(wdst, wsrc, (unsigned)w_floats * 4u, bar);
    return;
  }
  if (wsrc) tc_stage_weights(w_floats, wdst, wsrc);
  tc_decode(p, T, n, qd, p0);
  const int64_t plast = (p0 + p.BM < p.plane ? p0 + p.BM : p.plane) - 1;
  const int64_t qh0 = tc_qrow(p, p0), qh1 = tc_qrow(p, plast);
  const int rows = (int)((qh1 - qh0) * p.istride[1] + (p.taps[1] - 1) * p.idil[1] + 1);
  const int64_t ih0 = qh0 * p.istride[1] - p.ipad[1], id0 = qd * p.istride[0] - p.ipad[0];
  const float *xn = p.x + (GR ? n * p.groups + grp : n) * p.C_in * p.in[0] * p.in[1] * p.in[2];
  if (p.x32 && id0 > -(1 << 30) && id0 < (1 << 30) && ih0 > -(1 << 30) && ih0 < (1 << 30))
    tc_stage_rows<int>(p, buf, xn, chunk, rows, (int)id0, (int)ih0, tid, nth);
  else
    tc_stage_rows<int64_t>(p, buf, xn, chunk, rows, id0, ih0, tid, nth);
}

// (tc_join, math "fp32"'s big and small sums joined: tc_prims.cuh)

// A k-step's A fragments for the thread's WM m16 tiles (both k-loops): the patch values at row
// offsets ro[i][h] (bytes) plus the step's K offsets kk (x: column t, y: column t + 4), in mma's
// fragment order, as the bits the tensor core reads. SPLIT: b gets the TF32 big part, sm the rest
// (an infinite value makes its small part NaN: tc_join).
template <int WM, bool SPLIT>
TC_DEVICE void tc_load_a(const char *__restrict__ P0, const int (&ro)[WM][2], int2 kk, uint32_t (&b)[WM][4],
                         uint32_t (&sm)[WM][4]) {
#pragma unroll
  for (int i = 0; i < WM; i++) {
    const float v[4] = {*reinterpret_cast<const float *>(P0 + (ro[i][0] + kk.x)),
                        *reinterpret_cast<const float *>(P0 + (ro[i][1] + kk.x)),
                        *reinterpret_cast<const float *>(P0 + (ro[i][0] + kk.y)),
                        *reinterpret_cast<const float *>(P0 + (ro[i][1] + kk.y))};
#pragma unroll
    for (int r = 0; r < 4; r++) {
      if (SPLIT) {
        b[i][r] = tc_tf32_big(v[r]);
        sm[i][r] = __float_as_uint(tc_tf32_small(v[r]));
      } else {
        b[i][r] = __float_as_uint(v[r]);
      }
    }
  }
}

// One chunk of K for the warp's WM x WN tiles. ko holds, per k-step s and t = lane % 4, the byte
// offsets in the patch of k = 8s + t and 8s + t + 4; ro the byte offsets from P0 of the thread's
// rows g and g + 8 in the current patch buffer (32-bit sums: one IADD3 per load).
// The A operand goes to the tensor core as raw float bits, which it truncates to TF32: math "tf32"
// needs no conversion, and math "fp32" takes big = the truncated value and small = v - big (exact);
// the simulation in bench/NOTES.md finds truncation as accurate as rounding here, since the
// accumulator's own truncation dominates.
template <int WM, int WN, bool SPLIT>
TC_DEVICE void tc_compute(int ksteps, const char *__restrict__ P0, const int (&ro)[WM][2], const float *__restrict__ Wb,
                          const int2 *__restrict__ ko, float (&acc)[WM][WN][4], float (&corr)[WM][WN][4]) {
  const int lane = threadIdx.x & 31, t = lane & 3;
  int2 kn = ko[t]; // each step's K offsets loaded one step ahead (as in tc_compute_wg; the table's extra step)
#pragma unroll 2
  for (int s = 0; s < ksteps; s++) {
    if (SPLIT && s > 0 && s % TC_PROMOTE == 0) tc_promote(acc, corr);
    const int2 kk = kn;
    kn = ko[(s + 1) * 4 + t];
    uint32_t ab[WM][4], as[WM][4];
    tc_load_a<WM, SPLIT>(P0, ro, kk, ab, as);
#pragma unroll
    for (int j = 0; j < WN; j++) {
      uint32_t bb[2], bs[2];
      if (SPLIT) {
        const float4 w4 = reinterpret_cast<const float4 *>(Wb)[(s * WN + j) * 32 + lane];
        bb[0] = __float_as_uint(w4.x), bb[1] = __float_as_uint(w4.y);
        bs[0] = __float_as_uint(w4.z), bs[1] = __float_as_uint(w4.w);
      } else {
        const float2 w2 = reinterpret_cast<const float2 *>(Wb)[(s * WN + j) * 32 + lane];
        bb[0] = __float_as_uint(w2.x), bb[1] = __float_as_uint(w2.y);
      }
#pragma unroll
      for (int i = 0; i < WM; i++) {
        tc_mma(acc[i][j], ab[i], bb);
        if (SPLIT) {
          tc_mma(acc[i][j], ab[i], bs);
          tc_mma(acc[i][j], as[i], bb);
        }
      }
    }
  }
  if (SPLIT) tc_promote(acc, corr);
}

// The same k-loop on wgmma (Params::wg; sm_90a, compute capability 9.0). A warpgroup (4 warps)
// issues, per k-step and m16 tile i, one 64 x BN x 8 product: each warp's rows are its own A
// fragment (the same patch loads as tc_compute), B is the k-step's weights read by the tensor core
// from shared memory (tc_wg_index layout: BN x 8 big parts, then in math "fp32" BN x 8 small ones).
// The products are asynchronous: with NB 2 the A fragments alternate between two register sets, so
// that the next k-step's loads overlap this one's products (wait<1>: the products that read a set
// are done before it is loaded again). bench/wgmma_probe.cu measured this pattern at 377 TFLOP/s on
// an H200 against mma.sync's 282 (operands in registers). NB 1 (the statistics kernels, capped at
// 128 registers, where the second set spilled): load, products, wait; the SM's other warpgroups
// fill the gaps.
template <int WM, int WN, bool SPLIT, int NB>
TC_DEVICE void tc_compute_wg(int ksteps, const char *__restrict__ P0, const int (&ro)[WM][2], const float *Wb,
                             const int2 *__restrict__ ko, float (&acc)[WM][WN][4], float (&corr)[WM][WN][4]) {
  const int t = threadIdx.x & 3;
  constexpr unsigned step = WN * 32 * (SPLIT ? 4 : 2) * 4; // bytes of one k-step's weights
  constexpr unsigned small = WN * 64 * 4;                   // from a k-step's big parts to its small ones
  const tc_wg_ref w0 = tc_wg_make(Wb);
  uint32_t ab[NB][WM][4], as[NB][WM][4];
  // a step's K offsets come from the load before it (ncu, L1-60 tf32: the address arithmetic
  // waited on the table's LDS in every step). The table has one k-step more (zero-region offsets),
  // so that the last step's read stays inside it: past it are the weights, which chunked plans
  // restage meanwhile (racecheck flagged that read; skipping it by a predicate cost 2-6 %).
  int2 kn = ko[t];
  auto load = [&](uint32_t(&b)[WM][4], uint32_t(&sm)[WM][4], int s) {
    const int2 kk = kn;
    kn = ko[(s + 1) * 4 + t];
    tc_load_a<WM, SPLIT>(P0, ro, kk, b, sm);
  };
  auto issue = [&](const uint32_t(&b)[WM][4], const uint32_t(&sm)[WM][4], int s) {
    const tc_wg_ref w = tc_wg_at(w0, (unsigned)s * step);
    tc_wg_fence();
#pragma unroll
    for (int i = 0; i < WM; i++) {
      tc_wg_mma<WN>(acc[i], b[i], w);
      if (SPLIT) {
        tc_wg_mma<WN>(acc[i], b[i], tc_wg_at(w, small));
        tc_wg_mma<WN>(acc[i], sm[i], w);
      }
    }
    tc_wg_commit();
  };
  if constexpr (NB == 1) {
#pragma unroll 1
    for (int s = 0; s < ksteps; s++) {
      load(ab[0], as[0], s);
      issue(ab[0], as[0], s);
      tc_wg_wait<0>();
      if (SPLIT && (s + 1) % TC_PROMOTE == 0) tc_promote(acc, corr);
    }
  } else {
    load(ab[0], as[0], 0);
    int s = 0;
#pragma unroll 1
    for (; s + 1 < ksteps; s += 2) {
      issue(ab[0], as[0], s);
      tc_wg_wait<1>(); // step s - 1's products (set 1) are done
      load(ab[1], as[1], s + 1);
      issue(ab[1], as[1], s + 1);
      tc_wg_wait<1>(); // step s's (set 0)
      if (s + 2 < ksteps) load(ab[0], as[0], s + 2);
      if (SPLIT && (s + 2) % TC_PROMOTE == 0) { // every product done (the loads above meanwhile): acc into corr
        tc_wg_wait<0>();
        tc_promote(acc, corr);
      }
    }
    if (s < ksteps) issue(ab[0], as[0], s); // an odd last k-step, loaded above
    tc_wg_wait<0>();
  }
  if (SPLIT) tc_promote(acc, corr);
}

// The epilogues' walk over a thread's values: f(j, e, i, h, v) for each accumulator [i][j][2h + e]
// whose channel co0 + 8j + e is below C_out and whose row is live (CHECK false: every row), v its sum
// (SPLIT: big and small parts joined) plus the channel's bias (read once per channel; none: 0). Each
// epilogue says in f where v goes. Unrolled whole, so that f's offsets fold into constants per value.
template <int WM, int WN, bool SPLIT, bool CHECK, class F>
TC_DEVICE void tc_each_value(const float (&acc)[WM][WN][4], const float (&corr)[WM][WN][4], int64_t co0, int64_t C_out,
                             const float *bias, const bool (&live)[WM][2], F &&f) {
#pragma unroll
  for (int j = 0; j < WN; j++)
#pragma unroll
    for (int e = 0; e < 2; e++) {
      if (co0 + j * 8 + e >= C_out) continue;
      const float bv = bias ? __ldg(bias + co0 + j * 8 + e) : 0.0f;
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          if (CHECK && !live[i][h]) continue;
          float v = acc[i][j][2 * h + e];
          if (SPLIT) v = tc_join(v, corr[i][j][2 * h + e]);
          f(j, e, i, h, v + bv);
        }
    }
}

// The fused epilogue (Params::epi): a thread's values v = sum + bias, then each step of the chain,
// left in acc (corr -0, so that tc_join(acc, corr) is acc to the bit); the stores after it add no
// bias (the caller drops it). chan(j, e): the channel of column 8j + 2t + e within the group (C_out
// or more: a column past the channels, computed and never stored); cg: the group's first channel.
// The step is chosen once per step, and each value takes its one rule (pw_step_cheap's ops).
template <int WM, int WN, class CH, class F>
TC_DEVICE void tc_epi_map(float (&acc)[WM][WN][4], const volua_pw_step &s, int64_t cg, int64_t C_out, CH &chan, F f) {
#pragma unroll
  for (int j = 0; j < WN; j++)
#pragma unroll
    for (int e = 0; e < 2; e++) {
      float o = 0.0f;
      if (s.kind == VOLUA_PW_CHANNEL) {
        const int64_t co = chan(j, e);
        if (co < C_out) o = __ldg(s.vec + (cg + co) * s.vstep);
      }
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) acc[i][j][2 * h + e] = f(acc[i][j][2 * h + e], o);
    }
}
template <int WM, int WN, bool SPLIT, class CH>
TC_DEVICE void tc_epi_apply(const Params &p, float (&acc)[WM][WN][4], float (&corr)[WM][WN][4], const float *bias,
                            int64_t cg, CH &&chan) {
#pragma unroll
  for (int j = 0; j < WN; j++)
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int64_t co = chan(j, e);
      const float bv = bias && co < p.C_out ? __ldg(bias + co) : 0.0f;
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          float v = acc[i][j][2 * h + e];
          if (SPLIT) {
            v = tc_join(v, corr[i][j][2 * h + e]);
            corr[i][j][2 * h + e] = -0.0f;
          }
          acc[i][j][2 * h + e] = v + bv;
        }
    }
#pragma unroll 1
  for (int k = 0; k < p.epi.n; k++) {
    const volua_pw_step &s = p.epi.step[k];
    const float f0 = s.f0, f1 = s.f1;
    const int64_t C = p.C_out;
    if (s.kind == VOLUA_PW_SCALAR) {
      if (s.op == VOLUA_BIN_ADD) tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return v + f0; });
      else if (s.op == VOLUA_BIN_MUL) tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return v * f0; });
      else if (s.op == VOLUA_BIN_SUB && !s.scalar_first) tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return v - f0; });
      else if (s.op == VOLUA_BIN_SUB) tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return f0 - v; });
      else if (s.op == VOLUA_BIN_MAXIMUM) tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return max_nan(v, f0); });
      else if (s.op == VOLUA_BIN_MINIMUM) tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return min_nan(v, f0); });
      else if (!s.scalar_first) tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return volua_fdiv_rn(v, f0); });
      else tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return volua_fdiv_rn(f0, v); });
    } else if (s.kind == VOLUA_PW_CHANNEL) {
      if (s.op == VOLUA_BIN_ADD) tc_epi_map(acc, s, cg, C, chan, [&](float v, float o) { return bin_f32(v, o, VOLUA_BIN_ADD); });
      else if (s.op == VOLUA_BIN_SUB) tc_epi_map(acc, s, cg, C, chan, [&](float v, float o) { return bin_f32(v, o, VOLUA_BIN_SUB); });
      else if (s.op == VOLUA_BIN_MUL) tc_epi_map(acc, s, cg, C, chan, [&](float v, float o) { return bin_f32(v, o, VOLUA_BIN_MUL); });
      else if (s.op == VOLUA_BIN_MAXIMUM) tc_epi_map(acc, s, cg, C, chan, [&](float v, float o) { return max_nan(v, o); });
      else if (s.op == VOLUA_BIN_MINIMUM) tc_epi_map(acc, s, cg, C, chan, [&](float v, float o) { return min_nan(v, o); });
      else tc_epi_map(acc, s, cg, C, chan, [&](float v, float o) { return bin_f32(v, o, VOLUA_BIN_DIV); });
    } else if (s.kind == VOLUA_PW_FILL) {
      tc_epi_map(acc, s, cg, C, chan, [&](float, float) { return f0; });
    } else if (s.op == VOLUA_UN_CLAMP) {
      tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return clamp_rule{f0, f1}(v); });
    } else if (s.op == VOLUA_UN_LEAKY_RELU) {
      tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return leaky_relu_rule{f0}(v); });
    } else {
      const int op = s.op; // neg, abs, relu
      tc_epi_map(acc, s, cg, C, chan, [&](float v, float) { return unary_f32_rule{op}(v); });
    }
  }
}

// Whether a plan takes a fused epilogue (the caller then offers it to volua_cuda_epilogue_take):
// in math "fp32" only where K (a position's products) is at most 512. The split-TF32 kernels with
// the epilogue run their k-loop slower (more registers): measured on the H200 (run s38r9), L2-77's
// 64 -> 128 k5 (K 8000) took 9.81 ms with it against 9.09 plain and 0.12 for the pass, L2-61's k3
// (K 1728) 0.2 ms more; at K 216 (L2-90's 8 -> 64 k3) 2.89 against 2.51 plain and 0.84 for the pass,
// and L2-100's W pairs (K up to 512) 7.16 against 7.21 plain and 1.65 for the pass.
static inline bool tc_epi_worth(const Params &p) {
  return p.E != 4 || p.C_in * p.taps[0] * p.taps[1] * p.taps[2] <= 512;
}

// EPI_STATS: a tile's values (tc_each_value's walk) added to a thread's per-channel double sums of
// v and v * v, without the bias: nvals counts the values each channel got, and tc_conv_kernel adds
// the bias's terms once a block. In "tf32" a channel's 2 WM values of the tile are summed in float
// first, then converted and added once: a conversion (F2F) and a DADD or DFMA a value had been 17 %
// of L2-23's samples, and each value is already off by about 1e-3 of itself, far above the float
// sums' 2 WM - 1 roundings. In "fp32" that measured no faster, so it keeps a double add a value. (H200,
// twenty-second session, L2-23: "tf32" 0.1335 -> 0.1222 ms by the float sums, -> 0.1178 with the
// bias once a block; "fp32" 0.2305 -> 0.2200 by the bias.)
template <int WM, int WN, bool SPLIT, bool CHECK>
TC_DEVICE void tc_stats_add(const float (&acc)[WM][WN][4], const float (&corr)[WM][WN][4], int64_t co0, int64_t C_out,
                            const bool (&live)[WM][2], double (&dsum)[WN][2], double (&dsq)[WN][2], int64_t &nvals) {
#pragma unroll
  for (int i = 0; i < WM; i++)
#pragma unroll
    for (int h = 0; h < 2; h++) nvals += !CHECK || live[i][h];
  if (!SPLIT) {
    float fs[WN][2], fq[WN][2];
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int e = 0; e < 2; e++) fs[j][e] = fq[j][e] = 0.0f;
    tc_each_value<WM, WN, SPLIT, CHECK>(acc, corr, co0, C_out, nullptr, live, [&](int j, int e, int, int, float v) {
      fs[j][e] += v;
      fq[j][e] += v * v;
    });
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int e = 0; e < 2; e++) {
        dsum[j][e] += (double)fs[j][e];
        dsq[j][e] += (double)fq[j][e];
      }
  } else {
    tc_each_value<WM, WN, SPLIT, CHECK>(acc, corr, co0, C_out, nullptr, live, [&](int j, int e, int, int, float v) {
      dsum[j][e] += (double)v;
      dsq[j][e] += (double)v * (double)v;
    });
  }
}

// EPI_PHASES with two W phases (Params::pst): a thread's columns 2t and 2t + 1 are the W phases of one
// (channel, D phase, H phase) triple, so its value pairs are neighbouring outputs of one row; but
// stored as they are, each STG of a warp writes 4 rows x 8 values two floats apart: every 32-byte
// sector is written in two halves, by two instructions (ncu, L1-73 tf32: 2.25 L2 sector writes per
// output sector, 43 % of the samples in the epilogue, waiting on the store queue). Here the warp
// passes each n8 block through a stage of 4 rows (t) of 2 WM 16 values (its positions, each with
// its two W phases), and each STG writes 32 consecutive values of one row: whole sectors. A lane's
// 2 WM values (row r, column lane + 32 k) have their offsets within the block's first channel
// plane, and whether they are stored, worked out once a tile (tc_phase_rows); per block j only the
// channel changes. Rows start 0, 1, 16 and 17 banks apart, so that a warp's STS of one register
// hits 32 banks.
#define TC_PST_PITCH(WM) (WM * 32 + 32)
TC_DEVICE int tc_pst_row(int r) { return (r & 1) | ((r & 2) << 3); } // row r's start, in floats past r * pitch
template <int WM> struct TcPhaseRows {
  int off[4][WM], cofs[4]; // a lane's values (row r, k): offset from the block's channel base; row r's channel step
  unsigned ok;             // bit r * WM + k: stored (before the channel check)
};
template <int WM>
TC_DEVICE TcPhaseRows<WM> tc_phase_rows(const Params &p, int64_t qd, int64_t qh0, int qw0, int nlast, int wpos0) {
  TcPhaseRows<WM> pr;
  pr.ok = 0;
  const int lane = threadIdx.x & 31, e = lane & 1, O0 = (int)p.out[0], O1 = (int)p.out[1], O2 = (int)p.out[2];
  const int plane = O1 * O2;
#pragma unroll
  for (int r = 0; r < 4; r++) {
    const int pq = p.phq[2 * r + e], c1 = (pq >> 8) & 255, c2 = (pq >> 16) & 255;
    const int od = (int)(qd * p.ostep[0]) + (pq & 255);
    pr.cofs[r] = pq >> 24;
#pragma unroll
    for (int k = 0; k < WM; k++) {
      const int pos = wpos0 + ((lane + 32 * k) >> 1); // the value's position in the tile
      const unsigned rel = (unsigned)(qw0 + (pos <= nlast ? pos : nlast));
      const int dq = (int)tc_div(rel, p.div_q2), qw = (int)(rel - (unsigned)dq * (unsigned)p.Q[2]);
      const int oh = ((int)qh0 + dq) * (int)p.ostep[1] + c1, ow = qw * 2 + c2;
      pr.off[r][k] = (pr.cofs[r] * O0 + od) * plane + oh * O2 + ow;
      if (pos <= nlast && od < O0 && oh < O1 && ow < O2) pr.ok |= 1u << (r * WM + k);
    }
  }
  return pr;
}
template <int WM, int WN, bool SPLIT>
TC_DEVICE void tc_store_phase_rows(const Params &p, const float (&acc)[WM][WN][4], const float (&corr)[WM][WN][4],
                                   const TcPhaseRows<WM> &pr, float *stage, float *yb, int64_t cbase, int cstep,
                                   int64_t ovol, const float *bias) {
  constexpr int S = TC_PST_PITCH(WM);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float *srow = stage + t * S + tc_pst_row(t); // this thread's row
  const int cof = p.phq[2 * t] >> 24; // its channel step (pr.cofs[t]: an index by lane put pr on the stack)
#pragma unroll
  for (int j = 0; j < WN; j++) {
    const int64_t cj = cbase + cstep * j; // the block's first channel
    const float bv = bias && cj + cof < p.C_out ? __ldg(bias + cj + cof) : 0.0f;
#pragma unroll
    for (int e = 0; e < 2; e++)
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          float v = acc[i][j][2 * h + e];
          if (SPLIT) v = tc_join(v, corr[i][j][2 * h + e]);
          srow[2 * (i * 16 + g + 8 * h) + e] = v + bv;
        }
    tc_syncwarp();
    float *yj = yb + cstep * j * ovol;
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
      for (int k = 0; k < WM; k++)
        if (((pr.ok >> (r * WM + k)) & 1) && cj + pr.cofs[r] < p.C_out)
          yj[pr.off[r][k]] = stage[r * S + tc_pst_row(r) + lane + 32 * k];
    tc_syncwarp(); // read before the next block overwrites
  }
}

// EPI_STATS: the fused op's closed form for sample n from its partial sums (src/cpu/conv3d_gn_mean.c):
// mean = (1/C) sum_c (w_c * rstd_g * (mean_c - mu_g) + b_c), by one warp, lane c for channel c
// (C_out <= 32). Group sums by shuffles, the final sum by an xor tree, all in double. (As a kernel
// of its own, a thread per sample, ncu timed it at 27.6 us for L2-23; a warp per sample, 5 us plus
// a launch; here, in the sample's last statistics block, nothing but its own instructions.)
TC_DEVICE void tc_gn_finish(const Params &p, int64_t n, int parts, int lane) {
  const int c = lane, C = (int)p.C_out, cpg = (int)(p.C_out / p.gn_groups);
  double cm = 0.0, cs = 0.0; // channel c's mean, and its sum of squares
  if (c < C) {
    double s1 = 0.0, s2 = 0.0;
    for (int q = 0; q < parts; q++) {
      s1 += tc_ld_l2(p.partials + ((n * parts + q) * C + c) * 2 + 0);
      s2 += tc_ld_l2(p.partials + ((n * parts + q) * C + c) * 2 + 1);
    }
    cm = s1 / (double)p.gn_S;
    cs = s2;
  }
  // the group's mean and sum of squares, from its channels' lanes (every lane takes part)
  const int g0 = c < C ? c / cpg * cpg : 0;
  double mu = 0.0, sq = 0.0;
  for (int k = 0; k < cpg; k++) {
    mu += tc_shfl(cm, g0 + k);
    sq += tc_shfl(cs, g0 + k);
  }
  double v = 0.0;
  if (c < C) {
    mu /= (double)cpg;
    double var = sq / ((double)cpg * (double)p.gn_S) - mu * mu;
    if (var < 0.0) var = 0.0;
    const double rstd = 1.0 / sqrt(var + p.gn_eps);
    v = (p.gn_w ? (double)p.gn_w[c] : 1.0) * rstd * (cm - mu) + (p.gn_b ? (double)p.gn_b[c] : 0.0);
  }
  for (int m = 16; m >= 1; m >>= 1) v += tc_shfl_xor(v, m);
  if (c == 0) p.y[n] = (float)(v / (double)C);
}

// The persistent kernel. EPI_STORE writes y at each position; EPI_WBOX also writes bias (or 0)
// at the output columns between this phase's columns (a transposed convolution whose W dim has
// one live phase: every row it touches is then written whole, in one pass); EPI_STATS writes
// nothing per position but sums v and v*v per channel (double) for the fused group_norm mean:
// block (part, n) takes the tiles part, part + parts, ... of sample n.
// Statistics kernels and the small tf32 variant (WM 2, WN 4) are capped at 128 registers so that
// two blocks share an SM (one block alone leaves the tensor cores idle through its staging,
// barriers and epilogue). NSUB 2: the sub-GEMMs of Params (EPI_STORE only): a block's items are
// (tile, sub-GEMM, chunk), each with its own patch stage (the same patch for both sub-GEMMs).
// Shared memory: NSUB K tables, the weights (each sub-GEMM's once where there is one chunk, else two
// buffers that alternate by item), two patch buffers (TEAMS 2: tbufs per team), EPI_STATS sums.
// TEAMS 2 (TC_TEAMABLE kernels, plans with short K): see "Teams" below. GR: groups > 1 (a separate
// instantiation: the group arithmetic, folded away where there are none, cost the plain kernels
// 1.5 to 3.5 % on the H200). KS: split K (Params::ksplit; EPI_STORE, one team, one sub-GEMM, no
// groups): a block takes one part of each of its tiles' channel chunks, and the part that
// finishes a tile last adds the parts before the epilogue.
template <int WM, int WN, bool SPLIT, int EPI, int NSUB = 1, bool GR = false, int TEAMS = 1, bool KS = false,
          bool FUSE = false>
TC_GLOBAL void TC_BOUNDS(TC_WARPS * 32, TC_MIN_BLOCKS(EPI, SPLIT, WM, WN))
    tc_conv_kernel(TC_GRID_CONST Params p) {
  TC_SMEM_DECL(smem);
  constexpr int BN = WN * 8;
  constexpr int BM = TC_WARPS / TEAMS * WM * 16; // a tile's positions
  int *kot = reinterpret_cast<int *>(smem);
  const bool wonce = p.nchunks == 1; // weights staged once per block
  // NSUB 2 with the weights whole: a tile's sub-GEMMs read one patch, staged once per tile (the
  // patch slot of item it is then its tile; else the item itself)
  const bool share = NSUB > 1 && wonce;
  auto pslot = [&](int64_t i) -> int64_t { return share ? i / NSUB : i; };
  float *wb0 = reinterpret_cast<float *>(smem + NSUB * p.kofs_bytes);
  float *wb1 = wb0 + p.w_floats; // the second weight buffer (chunks), or sub-GEMM 1's weights
  float *pb0 = wb0 + (wonce ? NSUB : 2) * p.w_floats;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  // Teams (TEAMS 2, weights staged once): the warps split into two teams that each run their
  // own tiles with their own patch buffers and barriers, so that one team's staging, barriers and
  // epilogue overlap the other's mma; with p.order the teams take turns at the mma loop. A team has
  // two patch buffers (the next item loads during this one's mma), or where shared memory is short
  // one (p.tbufs 1: the next item loads during this one's epilogue and the other team's mma).
  constexpr int teams = TEAMS, twarps = TC_WARPS / teams, tthreads = twarps * 32;
  const bool order = teams > 1 && p.order;
  const int team = teams > 1 ? warp / twarps : 0, ttid = tid - team * tthreads, twarp = warp - team * twarps;
  const int nbuf = teams > 1 ? p.tbufs : 2;
  // a team's barrier (one team: __syncthreads), and the stagers of its patches (one team: the block)
  auto tsync = [&]() {
    if (teams == 1) TC_SYNC();
    else tc_bar_sync(1 + team, tthreads);
  };
  // (read where used: a value held through the loop costs a register the statistics kernels lack)
  auto stid = [&]() { return teams == 1 ? (int)threadIdx.x : ttid; };
  auto snth = [&]() { return teams == 1 ? (int)blockDim.x : tthreads; };
  float *pb = pb0 + team * nbuf * p.buf_floats;                                // this team's patch buffers
  double *red = reinterpret_cast<double *>(pb0 + teams * nbuf * p.buf_floats); // EPI_STATS: TC_WARPS x BN x 2
  // p.tma: an mbarrier per patch buffer (team-major). A buffer's k-th staging completes its phase k:
  // with two buffers per team the patch of slot s is in buffer s & 1, phase s >> 1; with one, phase s.
  uint64_t *mbar = reinterpret_cast<uint64_t *>(reinterpret_cast<unsigned char *>(red) + p.stats_bytes);
  auto sbar = [&](int64_t slot) { return mbar + team * nbuf + (nbuf == 2 ? (int)(slot & 1) : 0); };
  auto sphase = [&](int64_t slot) { return (int)((nbuf == 2 ? slot >> 1 : slot) & 1); };

  // A kernel launched after this one as a programmatic dependent launch (conv_transpose3d.cu's
  // gated redo) may start once every block of this one has begun (in practice as they leave: these
  // blocks hold most of an SM's registers); it waits for this one's end before reading memory.
  tc_grid_launch_dependents();
  // -- tables: K offsets into the patch (the padded tail of K reads the zero region) ----
  if (NSUB == 1) {
    const int tv = (int)(p.taps[0] * p.taps[1] * p.taps[2]), kvalid = p.ci_chunk * tv;
    for (int k = tid; k < (p.ksteps + 1) * 8; k += blockDim.x) { // (one k-step more: tc_compute's look-ahead)
      int v = p.patch_floats;
      if (k < kvalid) {
        const int cil = k / tv, tap = k - cil * tv, t12 = (int)(p.taps[1] * p.taps[2]);
        const int jd = tap / t12, jh = (tap - jd * t12) / (int)p.taps[2], jw = tap - jd * t12 - jh * (int)p.taps[2];
        v = cil * p.pitch_c + jd * p.pitch_d + jh * (int)p.idil[1] * p.pitch_w + jw * (int)p.idil[2];
      }
      v *= (int)sizeof(float); // bytes
      kot[((k >> 3) * 4 + (k & 3)) * 2 + ((k >> 2) & 1)] = v;
    }
  } else {
#pragma unroll 1
    for (int sb = 0; sb < NSUB; sb++) { // each sub-GEMM's taps along W, shifted by its column offset
      const int tw = (int)p.sub_taps2[sb], cofs = p.sub_cofs[sb];
      const int tv = (int)(p.taps[0] * p.taps[1]) * tw, kvalid = p.ci_chunk * tv;
      int *kt = kot + sb * (p.kofs_bytes / 4);
      for (int k = tid; k < (p.sub_ksteps[sb] + 1) * 8; k += blockDim.x) {
        int v = p.patch_floats;
        if (k < kvalid) {
          const int cil = k / tv, tap = k - cil * tv, t12 = (int)p.taps[1] * tw;
          const int jd = tap / t12, jh = (tap - jd * t12) / tw, jw = tap - jd * t12 - jh * tw;
          v = cil * p.pitch_c + jd * p.pitch_d + jh * (int)p.idil[1] * p.pitch_w + jw * (int)p.idil[2] + cofs;
        }
        v *= (int)sizeof(float); // bytes
        kt[((k >> 3) * 4 + (k & 3)) * 2 + ((k >> 2) & 1)] = v;
      }
    }
  }
  for (int b = 0; b < teams * nbuf; b += 2) // the buffers two at a time (one team: the pair)
    for (int i = tid; i < p.zero_floats; i += blockDim.x)
      pb0[b * p.buf_floats + p.patch_floats + i] = pb0[(b + 1) * p.buf_floats + p.patch_floats + i] = 0.0f;
  if (p.tma) {
    if (tid == 0) {
      for (int b = 0; b < teams * nbuf; b++) tc_mbar_init(mbar + b, 1);
      tc_mbar_fence_init();
    }
    TC_SYNC();
  }

  // -- this block's tiles: a block keeps one (group, channel block) pair, so its weights ----
  int cb, grp;
  int64_t T0, Tstep, Tend, nst = 0;
  if (EPI == EPI_STATS) {
    cb = grp = 0;
    nst = blockIdx.y;
    T0 = nst * p.tiles_per_n + (int64_t)blockIdx.x * teams + team;
    Tstep = (int64_t)gridDim.x * teams;
    Tend = (nst + 1) * p.tiles_per_n;
  } else if (!GR) {
    grp = 0;
    cb = (int)(blockIdx.x % p.co_blocks);
    const int cols = KS ? p.co_blocks * p.ksplit : p.co_blocks; // KS: (channel block, part of K) pairs
    T0 = (int64_t)(blockIdx.x / cols) * teams + team;
    Tstep = (int64_t)(gridDim.x / cols) * teams;
    Tend = p.ntiles;
  } else {
    const int cols = p.co_blocks * (int)p.groups; // (group, channel block) pairs, group-major
    const int cg = (int)(blockIdx.x % cols);
    grp = cg / p.co_blocks;
    cb = cg - grp * p.co_blocks;
    T0 = (int64_t)(blockIdx.x / cols) * teams + team;
    Tstep = (int64_t)(gridDim.x / cols) * teams;
    Tend = p.ntiles;
  }
  // KS (split K, Params::ksplit): this block's part kpart of K, chunks C_LO to C_HI - 1 of each tile
  const int kpart = KS ? (int)(blockIdx.x / p.co_blocks % p.ksplit) : 0;
  const int ks_lo = KS ? (int)((int64_t)kpart * p.nchunks / p.ksplit) : 0;
  const int ks_hi = KS ? (int)((int64_t)(kpart + 1) * p.nchunks / p.ksplit) : 0;
  // (as expressions: with them as variables the compiler laid out the other kernels differently)
#define C_LO (KS ? ks_lo : 0)
#define C_HI (KS ? ks_hi : p.nchunks)
  const int per_tile = NSUB * (KS ? ks_hi - ks_lo : p.nchunks); // items per tile
  // An item's chunk c (fastest), sub-GEMM sb and tile T, advanced by carries from item to item:
  // computed from the item's number, they were 64-bit divisions at every item (ncu: 13 % of L2-23's
  // tf32 samples with the tile decode; where a tile has several items, 18 % of KernelBench L1-73's
  // fp32 samples in its chunked launch).
  struct Item {
    int c, sb;
    int64_t T;
  };
  auto next_item = [&](Item a) {
    if (++a.c == C_HI) {
      a.c = C_LO;
      if (++a.sb == NSUB) {
        a.sb = 0;
        a.T += Tstep;
      }
    }
    return a;
  };
  auto items_from = [&](int64_t t0) -> int64_t { return t0 < Tend ? (Tend - t0 + Tstep - 1) / Tstep * per_tile : 0; };
  const int64_t nitems = items_from(T0);
  // team 0's items, at least team 1's: the block's weights are staged where it has any, and
  // ordered teams both run that many turns (team 1 idles through a turn it has no item for)
  const int64_t nitems0 = items_from(T0 - team), nloop = order ? nitems0 : nitems;
  // Turns (order): barrier 3 + k is team k's. A team waits for its turn (team 0's first is free),
  // runs its mma loop, and passes the turn on (but for the last turn of all, team 1's, which no one
  // would wait for).
  auto take_turn = [&](int64_t it) {
    if (it > 0 || team == 1) tc_bar_sync(3 + team, 2 * tthreads);
  };
  auto pass_turn = [&](int64_t it) {
    if (!(team == 1 && it == nloop - 1)) tc_bar_arrive(3 + (team ^ 1), 2 * tthreads);
  };
  const int64_t gcb = GR ? (int64_t)grp * p.co_blocks + cb : cb;
  // the weights of sub-GEMM sb, chunk c (each sub-GEMM's are laid out (group, channel block, chunk))
  const float *wsrc1 = p.wprep + gcb * p.nchunks * p.w_floats;
  auto wsrc = [&](int sb, int c) -> const float * {
    return NSUB == 1 ? wsrc1 + (int64_t)c * p.w_floats
                     : p.sub_wprep[sb] + (gcb * p.nchunks + c) * p.sub_w_floats[sb];
  };
  auto wfloats = [&](int sb) { return NSUB == 1 ? p.w_floats : p.sub_w_floats[sb]; };

  // item 0: chunk 0 of the weights (all of them when nchunks == 1: by the whole block) and its patch
  // Launched after its weight preparation as a programmatic dependent launch (tc_launch_kernel):
  // what is above reads only p; every global read and write is below, after the kernel before this
  // one has completed (at once where it was a plain launch).
  tc_grid_wait();
  if (nitems0 > 0) {
    if (wonce)
#pragma unroll
      for (int sb = 0; sb < NSUB; sb++) tc_stage_weights(wfloats(sb), wb0 + sb * p.w_floats, wsrc(sb, 0));
    if (teams == 1) // (chunks: with item 0's weights; one team then)
      tc_stage_patch<GR>(p, pb, T0, C_LO, grp, stid(), snth(), sbar(0), wonce ? nullptr : wsrc(0, C_LO), wb0, wfloats(0));
  }
  if (teams > 1 && nitems > 0) tc_stage_patch<GR>(p, pb, T0, 0, grp, stid(), snth(), sbar(0));
  tc_commit();
  if (teams > 1) { // the weights, staged by both teams, before either reads them
    tc_wait<0>();
    if (p.wg) tc_fence_proxy_async();
    TC_SYNC();
  }

  float acc[WM][WN][4], corr[WM][WN][4];
  double dsum[WN][2], dsq[WN][2];
#pragma unroll
  for (int j = 0; j < WN; j++) dsum[j][0] = dsum[j][1] = dsq[j][0] = dsq[j][1] = 0.0;
  int64_t nvals = 0; // EPI_STATS: the values each of the thread's channels has had (tc_stats_add)

  Item cur = {C_LO, 0, T0}; // item it's
  for (int64_t it = 0; it < nloop; it++, cur = next_item(cur)) {
    const bool have = it < nitems; // false only for an ordered team's idle turns
    if (!have) { // take the turn, and pass it on
      take_turn(it);
      pass_turn(it);
      continue;
    }
    const int c = cur.c, sb = cur.sb;
    const int64_t T = cur.T;
    const Item nx = next_item(cur); // item it + 1's
    if (nbuf == 2 && it + 1 < nitems && pslot(it + 1) != pslot(it)) { // stage the next item into the other buffers
      tc_stage_patch<GR>(p, (pslot(it + 1) & 1) ? pb + p.buf_floats : pb, nx.T, nx.c, grp, stid(), snth(),
                         sbar(pslot(it + 1)), wonce ? nullptr : wsrc(nx.sb, nx.c), ((it + 1) & 1) ? wb1 : wb0, wfloats(nx.sb));
      tc_commit();
      tc_wait<1>();
    } else {
      tc_wait<0>();
    }
    if (p.tma) tc_mbar_wait(sbar(pslot(it)), sphase(pslot(it))); // (again for a shared patch: returns at once)
    if (p.wg) tc_fence_proxy_async(); // weights this thread staged (cp.async), before wgmma reads them
    tsync();

    if (c == C_LO) {
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int j = 0; j < WN; j++)
#pragma unroll
          for (int r = 0; r < 4; r++) acc[i][j][r] = corr[i][j][r] = 0.0f;
    }
    int64_t n, qd, p0;
    tc_decode(p, T, n, qd, p0);
    const int64_t ng = GR ? n * p.groups + grp : n; // the (sample, group) slab of x and y
    const int64_t Q2 = p.Q[2];
    const int64_t qh0 = tc_qrow(p, p0);
    // positions of this thread relative to the tile's first row, in 32-bit arithmetic (tc_plan keeps
    // Q2 and the tile's rows far below 2^31): dq[i][h] rows below qh0, column qw[i][h]
    const int qw0 = (int)(p0 - qh0 * Q2), nlast = (int)((p0 + BM < p.plane ? BM : p.plane - p0) - 1);
    const unsigned uQ2 = (unsigned)Q2;
    int dq[WM][2], qw[WM][2];
    bool live[WM][2];
#pragma unroll
    for (int i = 0; i < WM; i++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int off = twarp * WM * 16 + i * 16 + g + 8 * h;
        live[i][h] = off <= nlast;
        const unsigned rel = (unsigned)(qw0 + (off <= nlast ? off : nlast)); // past the plane: computed, never stored
        dq[i][h] = (int)tc_div(rel, p.div_q2);
        qw[i][h] = (int)(rel - (unsigned)dq[i][h] * uQ2);
      }
    const int buf_off = nbuf == 2 && (pslot(it) & 1) ? p.buf_floats : 0;
    int ro[WM][2];
#pragma unroll
    for (int i = 0; i < WM; i++)
#pragma unroll
      for (int h = 0; h < 2; h++)
        ro[i][h] = (buf_off + dq[i][h] * (int)p.istride[1] * p.pitch_w + qw[i][h] * (int)p.istride[2] + p.cshift) * 4;
    if (order) take_turn(it);
    {
      const int ks = NSUB == 1 ? p.ksteps : p.sub_ksteps[sb];
      const float *wk = NSUB == 1 ? ((p.nchunks > 1 && (it & 1)) ? wb1 : wb0)
                                  : wonce ? wb0 + sb * p.w_floats : (it & 1) ? wb1 : wb0;
      const int2 *kt = reinterpret_cast<const int2 *>(kot + sb * (p.kofs_bytes / 4));
      if (p.wg) tc_compute_wg<WM, WN, SPLIT, EPI == EPI_STATS ? 1 : 2>(ks, reinterpret_cast<const char *>(pb), ro, wk, kt, acc, corr);
      else tc_compute<WM, WN, SPLIT>(ks, reinterpret_cast<const char *>(pb), ro, wk, kt, acc, corr);
    }
    if (order) pass_turn(it);
    if (nbuf == 1) { // the team's one buffer is read: the next item loads during this epilogue
      tsync();
      if (it + 1 < nitems && pslot(it + 1) != pslot(it)) {
        tc_stage_patch<GR>(p, pb, nx.T, nx.c, grp, stid(), snth(),
                           sbar(pslot(it + 1)));
        tc_commit();
      }
    }
    if (NSUB > 1) { // this sub-GEMM's columns
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) live[i][h] = live[i][h] && qw[i][h] < p.sub_Q2[sb];
    }
    const int64_t oofs2 = NSUB == 1 ? p.oofs[2] : p.sub_oofs2[sb];
    if (SPLIT && EPI != EPI_STATS && c == C_HI - 1) tc_note_nonfinite(corr, p.nf_flag, p.nf_stamp);
    if (KS && c == C_HI - 1) {
      // -- split K (Params::ksplit): this part's sums (the values the epilogue would take, bias
      // aside) to the scratch, one value of every thread after another (whole lines); the tile's
      // part that arrives last adds the parts in part order (so the result does not depend on
      // which arrives last) and goes on to the epilogue; the others go on to their next item ----
      constexpr int NV = WM * WN * 4, NT = TC_WARPS * 32;
      const int64_t unit = T * p.co_blocks + cb; // (tile, channel block)
      const int64_t ustride = (int64_t)NV * NT;  // one part's values of a unit
      float *mine = p.ksws + (unit * p.ksplit + kpart) * ustride + tid;
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int j = 0; j < WN; j++)
#pragma unroll
          for (int r = 0; r < 4; r++)
            mine[((i * WN + j) * 4 + r) * NT] = SPLIT ? tc_join(acc[i][j][r], corr[i][j][r]) : acc[i][j][r];
      tc_threadfence();
      TC_SYNC();
      if (!tc_sync_or(tid == 0 && tc_atomic_add(p.done + unit, 1) == p.ksplit - 1)) {
        if (nbuf == 2) tsync(); // (as at the loop's end)
        continue;
      }
      tc_threadfence();
      // every part from the scratch (this one's too), a part at a time: a part's values are
      // independent loads, all in flight at once (a loop over the parts per value waited for each
      // load in turn: 64 round trips to L2, and a 64 -> 64 channel conv3d took 60 % longer split)
      const float *parts = p.ksws + unit * p.ksplit * ustride + tid;
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int j = 0; j < WN; j++)
#pragma unroll
          for (int r = 0; r < 4; r++) {
            acc[i][j][r] = tc_ld_l2f(parts + ((i * WN + j) * 4 + r) * NT);
            corr[i][j][r] = 0.0f;
          }
#pragma unroll 1
      for (int q = 1; q < p.ksplit; q++)
#pragma unroll
        for (int i = 0; i < WM; i++)
#pragma unroll
          for (int j = 0; j < WN; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] += tc_ld_l2f(parts + q * ustride + ((i * WN + j) * 4 + r) * NT);
    }

    if (EPI == EPI_STORE && c == C_HI - 1 && p.contig) {
      // -- epilogue of a plain convolution: position p0 + off of channel co is at
      // y[((n * C_out + co) * OD + qd) * plane + p0 + off], so 32-bit offsets from one tile base.
      // A tile wholly inside the plane (all but a plane's last) needs no per-position checks: from
      // the thread's first position a channel's pointer is one multiple of the output volume, and
      // its positions are at constant offsets (i * 16 + 8 * h), one FADD and one STG a value. (With
      // the offsets computed per store, ncu had 17 % of L1-60's tf32 samples in this epilogue.) ----
      const int ovol = (int)(p.out[0] * p.plane);
      const int64_t co0 = (int64_t)cb * BN + 2 * t;
      const float *bias = GR && p.bias ? p.bias + (int64_t)grp * p.C_out : p.bias; // this group's
      if (FUSE && EPI != EPI_WBOX && p.epi.n) { // the fused epilogue (tc_epi_apply); the stores below add no bias
        tc_epi_apply<WM, WN, SPLIT>(p, acc, corr, bias, GR ? (int64_t)grp * p.C_out : 0,
                                    [&](int j, int e) -> int64_t { return co0 + j * 8 + e; });
        bias = nullptr;
      }
      float *yt = p.y + ((ng * p.C_out + co0) * p.out[0] + qd) * p.plane + p0;
      float *yw = yt + (twarp * WM * 16 + g); // the thread's first position, channel co0
      auto put = [&](int j, int e, int i, int h, float v) {
        (yw + (j * 8 + e) * ovol)[i * 16 + 8 * h] = v; // (a pointer per channel: constant offsets)
      };
      if (nlast == BM - 1) tc_each_value<WM, WN, SPLIT, false>(acc, corr, co0, p.C_out, bias, live, put);
      else tc_each_value<WM, WN, SPLIT, true>(acc, corr, co0, p.C_out, bias, live, put);
    } else if (EPI == EPI_PHASES && c == C_HI - 1 && p.off32) {
      // -- every phase of a transposed convolution, with 32-bit offsets within an output volume.
      // nph divides 8 (tc_plan) and a channel block's columns start at a multiple of 8, so this
      // thread's column 8j + 2t + e has the phase (2t + e) % nph whatever j, and the channel
      // (8 / nph) (cb WN + j) + (2t + e) / nph. A value's offset within its (channel, od) plane
      // then depends on (e, i, h) only: computed once, with whether it is stored. (Computed per
      // value, with 64-bit divisions, this epilogue took about 70 instructions a value and 62 % of
      // the samples of a k3 s2 transposed convolution, 32 -> 16 channels, in tf32.) ----
      const int O1 = (int)p.out[1], O2 = (int)p.out[2];
      const int64_t plane = p.out[1] * p.out[2];
      const float *bias = GR && p.bias ? p.bias + (int64_t)grp * p.C_out : p.bias; // this group's
      if (FUSE && p.epi.n) { // the fused epilogue (tc_epi_apply); the stores below add no bias
        const int64_t cs = 8 / p.nph, cb0 = cs * (int64_t)cb * WN;
        tc_epi_apply<WM, WN, SPLIT>(p, acc, corr, bias, GR ? (int64_t)grp * p.C_out : 0,
                                    [&](int j, int e) -> int64_t { return cb0 + cs * j + (p.phq[2 * t + e] >> 24); });
        bias = nullptr;
      }
      if (p.pst) { // whole rows through the warp's stage (tc_store_phase_rows)
        const TcPhaseRows<WM> pr = tc_phase_rows<WM>(p, qd, qh0, qw0, nlast, twarp * WM * 16);
        const int64_t cbase = (int64_t)(8 / p.nph) * cb * WN;
        tc_store_phase_rows<WM, WN, SPLIT>(p, acc, corr, pr, reinterpret_cast<float *>(smem + p.pst_off) + warp * 4 * TC_PST_PITCH(WM),
                                           p.y + (ng * p.C_out + cbase) * p.out[0] * plane, cbase, 8 / p.nph,
                                           p.out[0] * plane, bias);
      } else {
        int off[2][WM][2], od[2], cofs[2];
        unsigned ok = 0; // bit (e * WM + i) * 2 + h: stored
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const int pq = p.phq[2 * t + e], c1 = (pq >> 8) & 255, c2 = (pq >> 16) & 255; // (no divisions per tile)
          od[e] = (int)(qd * p.ostep[0]) + (pq & 255);
          cofs[e] = pq >> 24;
#pragma unroll
          for (int i = 0; i < WM; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
              const int oh = ((int)qh0 + dq[i][h]) * (int)p.ostep[1] + c1, ow = qw[i][h] * (int)p.ostep[2] + c2;
              off[e][i][h] = oh * O2 + ow;
              if (live[i][h] && oh < O1 && ow < O2) ok |= 1u << ((e * WM + i) * 2 + h);
            }
        }
        const bool all = tc_all(ok == (1u << (4 * WM)) - 1u);
        const int64_t cstep = 8 / p.nph, cbase = cstep * (int64_t)cb * WN;
#pragma unroll
        for (int j = 0; j < WN; j++)
#pragma unroll
          for (int e = 0; e < 2; e++) {
            const int64_t co = cbase + cstep * j + cofs[e];
            if (co >= p.C_out || od[e] >= p.out[0]) continue;
            const float bv = bias ? __ldg(bias + co) : 0.0f;
            float *yc = p.y + ((ng * p.C_out + co) * p.out[0] + od[e]) * plane;
#pragma unroll
            for (int i = 0; i < WM; i++)
#pragma unroll
              for (int h = 0; h < 2; h++) {
                if (!all && !((ok >> ((e * WM + i) * 2 + h)) & 1)) continue;
                float v = acc[i][j][2 * h + e];
                if (SPLIT) v = tc_join(v, corr[i][j][2 * h + e]);
                yc[off[e][i][h]] = v + bv;
              }
          }
      }
    } else if (EPI == EPI_PHASES && c == C_HI - 1) {
      // -- every phase of a transposed convolution: column co * nph + ph of position q is output
      // (q0 * ostep0 + c0, q1 * ostep1 + c1, q2 * ostep2 + c2) of channel co, where inside the
      // output. A thread's columns 2t and 2t + 1 are neighbouring phases, so its two stores of a
      // position fill adjacent outputs, and the block writes whole (2 x 2 x 2) output cells ----
      const int64_t O0 = p.out[0], O1 = p.out[1], O2 = p.out[2];
      const int64_t cstep = 8 / p.nph, cbase = cstep * (int64_t)cb * WN; // column 8j + 2t + e: as above, by p.phq
      const float *bias = GR && p.bias ? p.bias + (int64_t)grp * p.C_out : p.bias; // this group's
      if (FUSE && p.epi.n) { // the fused epilogue (tc_epi_apply); the stores below add no bias
        tc_epi_apply<WM, WN, SPLIT>(p, acc, corr, bias, GR ? (int64_t)grp * p.C_out : 0,
                                    [&](int j, int e) -> int64_t { return cbase + cstep * j + (p.phq[2 * t + e] >> 24); });
        bias = nullptr;
      }
#pragma unroll
      for (int j = 0; j < WN; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const int pq = p.phq[2 * t + e], c1 = (pq >> 8) & 255, c2 = (pq >> 16) & 255;
          const int64_t co = cbase + cstep * j + (pq >> 24), od = qd * p.ostep[0] + (pq & 255);
          if (co >= p.C_out || od >= O0) continue;
          const float bv = bias ? __ldg(bias + co) : 0.0f;
          float *yc = p.y + ((ng * p.C_out + co) * O0 + od) * O1 * O2;
#pragma unroll
          for (int i = 0; i < WM; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
              const int64_t oh = (qh0 + dq[i][h]) * p.ostep[1] + c1, ow = (int64_t)qw[i][h] * p.ostep[2] + c2;
              if (!live[i][h] || oh >= O1 || ow >= O2) continue;
              float v = acc[i][j][2 * h + e];
              if (SPLIT) v = tc_join(v, corr[i][j][2 * h + e]);
              yc[oh * O2 + ow] = v + bv;
            }
        }
    } else if (EPI != EPI_STATS && c == C_HI - 1 && p.off32) {
      // -- epilogue with 32-bit offsets from the tile's (n, first channel) base (p.off32: BN output
      // volumes fit in int): row offsets once per position, then per channel one add ----
      const int ovol = (int)(p.out[0] * p.out[1] * p.out[2]), out2 = (int)p.out[2], ost2 = (int)p.ostep[2];
      const int od = (int)(qd * p.ostep[0] + p.oofs[0]), oh0 = (int)(qh0 * p.ostep[1] + p.oofs[1]);
      const int64_t co0 = (int64_t)cb * BN + 2 * t;
      const float *bias = GR && p.bias ? p.bias + (int64_t)grp * p.C_out : p.bias; // this group's
      if (FUSE && EPI != EPI_WBOX && p.epi.n) { // the fused epilogue (tc_epi_apply); the stores below add no bias
        tc_epi_apply<WM, WN, SPLIT>(p, acc, corr, bias, GR ? (int64_t)grp * p.C_out : 0,
                                    [&](int j, int e) -> int64_t { return co0 + j * 8 + e; });
        bias = nullptr;
      }
      float *yt = p.y + (ng * p.C_out + co0) * (int64_t)ovol;
      int ro32[WM][2], ow32[WM][2];
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          ow32[i][h] = qw[i][h] * ost2 + (int)oofs2;
          ro32[i][h] = (od * (int)p.out[1] + oh0 + dq[i][h] * (int)p.ostep[1]) * out2;
        }
      // A warp whose positions are all stored (inside the plane, and within this sub-GEMM's
      // columns) stores without checks, at offsets computed once for all channels: one FADD, one
      // address and one STG a value, where the checked stores took about ten instructions (ncu of
      // KernelBench L1-73's first W-pair launch, 8 k-steps: the epilogue was 55 % of its samples).
      bool all = true;
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) all = all && live[i][h];
      if (tc_all(all)) {
        int o32[WM][2];
#pragma unroll
        for (int i = 0; i < WM; i++)
#pragma unroll
          for (int h = 0; h < 2; h++) o32[i][h] = ro32[i][h] + ow32[i][h];
        tc_each_value<WM, WN, SPLIT, false>(acc, corr, co0, p.C_out, bias, live, [&](int j, int e, int i, int h, float v) {
          (yt + (j * 8 + e) * ovol)[o32[i][h]] = v;
        });
      } else {
        tc_each_value<WM, WN, SPLIT, true>(acc, corr, co0, p.C_out, bias, live, [&](int j, int e, int i, int h, float v) {
          (yt + (j * 8 + e) * ovol)[ro32[i][h] + ow32[i][h]] = v;
        });
      }
      if (EPI == EPI_WBOX) {
        // The dead columns after each live one (to the next live one, or to the row's end) and
        // before the first: bias or 0, independent of the sums, so a rolled loop (an unrolled one
        // per channel made the kernel overflow the instruction cache).
#pragma unroll 1
        for (int ih = 0; ih < 2 * WM; ih++) {
          const int off = twarp * WM * 16 + (ih >> 1) * 16 + g + 8 * (ih & 1);
          if (off > nlast) continue;
          const unsigned rel = (unsigned)(qw0 + off);
          const int dqv = (int)tc_div(rel, p.div_q2), qwv = (int)(rel - (unsigned)dqv * uQ2);
          const int ow = qwv * ost2 + (int)p.oofs[2], hi = qwv == Q2 - 1 ? out2 : ow + ost2;
          const int lo = qwv == 0 ? 0 : ow + 1;
          float *yr = yt + (od * (int)p.out[1] + oh0 + dqv * (int)p.ostep[1]) * out2;
#pragma unroll 1
          for (int ch = 0; ch < 2 * WN; ch++) {
            const int cl = (ch >> 1) * 8 + (ch & 1);
            if (co0 + cl >= p.C_out) continue;
            const float bv = bias ? __ldg(bias + co0 + cl) : 0.0f;
            float *yc = yr + cl * ovol;
            for (int o = lo; o < hi; o++)
              if (o != ow) yc[o] = bv;
          }
        }
      }
    } else if (EPI == EPI_STATS && c == C_HI - 1) {
      // -- statistics; a tile wholly inside its plane without position checks (with them, each
      // value took a compare and four selects of the double sums beside its FADD, F2F, DADD and
      // DFMA; the epilogue was 27 % of L2-23's tf32 samples). The same sums in the same order ----
      if (nlast == BM - 1) tc_stats_add<WM, WN, SPLIT, false>(acc, corr, (int64_t)cb * BN + 2 * t, p.C_out, live, dsum, dsq, nvals);
      else tc_stats_add<WM, WN, SPLIT, true>(acc, corr, (int64_t)cb * BN + 2 * t, p.C_out, live, dsum, dsq, nvals);
    } else if (c == C_HI - 1) { // -- epilogue: per channel (bias and base once), then the thread's rows ----
      const int64_t ovol = p.out[0] * p.out[1] * p.out[2], od = qd * p.ostep[0] + p.oofs[0];
      int64_t rowoff[WM][2];
#pragma unroll
      for (int i = 0; i < WM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++)
          rowoff[i][h] = (od * p.out[1] + (qh0 + dq[i][h]) * p.ostep[1] + p.oofs[1]) * p.out[2];
      const int64_t co0 = (int64_t)cb * BN + 2 * t;
      const float *bias = GR && p.bias ? p.bias + (int64_t)grp * p.C_out : p.bias; // this group's
      if (FUSE && EPI != EPI_WBOX && p.epi.n) { // the fused epilogue (tc_epi_apply); the stores below add no bias
        tc_epi_apply<WM, WN, SPLIT>(p, acc, corr, bias, GR ? (int64_t)grp * p.C_out : 0,
                                    [&](int j, int e) -> int64_t { return co0 + j * 8 + e; });
        bias = nullptr;
      }
      float *ybase = p.y + (ng * p.C_out + co0) * ovol;
      tc_each_value<WM, WN, SPLIT, true>(acc, corr, co0, p.C_out, bias, live, [&](int j, int e, int i, int h, float v) {
        const int64_t ow = (int64_t)qw[i][h] * p.ostep[2] + oofs2;
        float *yr = ybase + (int64_t)(j * 8 + e) * ovol + rowoff[i][h];
        if (EPI == EPI_WBOX) { // the dead columns around the live one: bias or 0
          const float bv = bias ? __ldg(bias + co0 + j * 8 + e) : 0.0f;
          const int64_t lo = qw[i][h] == 0 ? 0 : ow, hi = qw[i][h] == Q2 - 1 ? p.out[2] : ow + p.ostep[2];
          for (int64_t o = lo; o < hi; o++) yr[o] = o == ow ? v : bv;
        } else {
          yr[ow] = v;
        }
      });
    }
    if (nbuf == 2) tsync(); // the next iteration stages item it + 2 into the buffers this item read
  }

  if (EPI == EPI_STATS) { // -- per-channel sums of this block, in a fixed order ----
    if (p.bias) { // the bias b of n values with sum S: n b to the sum, (2 S + n b) b to the squares
#pragma unroll
      for (int j = 0; j < WN; j++)
#pragma unroll
        for (int e = 0; e < 2; e++)
          if (j * 8 + 2 * t + e < p.C_out) {
            const double b = (double)__ldg(p.bias + j * 8 + 2 * t + e), n = (double)nvals;
            dsq[j][e] += (2.0 * dsum[j][e] + n * b) * b;
            dsum[j][e] += n * b;
          }
    }
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int e = 0; e < 2; e++)
#pragma unroll
        for (int m = 4; m < 32; m <<= 1) {
          dsum[j][e] += tc_shfl_xor(dsum[j][e], m);
          dsq[j][e] += tc_shfl_xor(dsq[j][e], m);
        }
    if (g == 0) {
#pragma unroll
      for (int j = 0; j < WN; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          red[(warp * BN + j * 8 + 2 * t + e) * 2 + 0] = dsum[j][e];
          red[(warp * BN + j * 8 + 2 * t + e) * 2 + 1] = dsq[j][e];
        }
    }
    TC_SYNC();
    if (tid < p.C_out) {
      double s1 = 0.0, s2 = 0.0;
      for (int w = 0; w < TC_WARPS; w++) {
        s1 += red[(w * BN + tid) * 2 + 0];
        s2 += red[(w * BN + tid) * 2 + 1];
      }
      double *out = p.partials + ((nst * p.parts + blockIdx.x) * p.C_out + tid) * 2;
      out[0] = s1;
      out[1] = s2;
    }
    // The sample's last block to have written its sums applies the closed form (the usual fence,
    // barrier, count; the count's old value says who is last). red is free again after the barrier.
    tc_threadfence();
    TC_SYNC();
    int *last = reinterpret_cast<int *>(red);
    if (tid == 0) *last = tc_atomic_add(p.done + nst, 1) == (int)gridDim.x - 1;
    TC_SYNC();
    if (*last && warp == 0) {
      tc_threadfence();
      tc_gn_finish(p, nst, (int)gridDim.x, lane);
    }
  }
}

#undef C_LO
#undef C_HI

// Weights -> the fragment order tc_compute reads: for (group, co block, chunk, k-step, n tile, lane) the
// B fragment's two values b0 = W[co][k], b1 = W[co][k + 4] (co = 8*tile + lane/4, k = 8*step +
// lane%4) as TF32, followed in math "fp32" by their small parts. Zeros pad K, C_in and C_out.
// With Params::wg the same values are in the layout tc_compute_wg reads (see there).
// A k-step's values (4 BN E of them) are consecutive, the steps in the order (group, co block,
// chunk, step), the step fastest: tc_prep_kernel and conv_transpose3d_tc.cu's phase preparation
// give a block a range of whole k-steps, decode the first (tc_prep_step) and carry to the next
// (tc_prep_next), and look up each step's 8 K indices' weight offsets once (a table in shared
// memory); a value then costs shifts and one load. (One thread a value, with the decode per value,
// took 83 us for 512 -> 512 k3 in tf32, ncu: 7 divisions by run-time values a value; 38 now.)
struct PrepStep {
  int64_t grp, cb;
  int c, s; // chunk, k-step
};
TC_DEVICE PrepStep tc_prep_step(const Params &p, int64_t r) {
  PrepStep x;
  x.s = (int)(r % p.ksteps);
  r /= p.ksteps;
  x.c = (int)(r % p.nchunks);
  r /= p.nchunks;
  x.cb = r % p.co_blocks;
  x.grp = r / p.co_blocks;
  return x;
}
// The next k-step in that order (carries, no divisions).
TC_DEVICE void tc_prep_next(const Params &p, PrepStep &x) {
  if (++x.s < p.ksteps) return;
  x.s = 0;
  if (++x.c < p.nchunks) return;
  x.c = 0;
  if (++x.cb < p.co_blocks) return;
  x.cb = 0;
  x.grp++;
}

// Value j of a k-step: its part e (0, 1: b0, b1; 2, 3: their small parts; wgmma's layout: 0 big, 2
// small), its K within the step (0..7) and its column within the block.
TC_DEVICE void tc_prep_in_step(const Params &p, int j, int &e, int &kin, int &nin) {
  if (p.wg) { // per k-step, part (big, small: E / 2 of them), each at tc_wg_index(n, k)
    const int per = p.BN * 8, part = j >= per ? 1 : 0, ci = j - part * per;
    e = 2 * part; // (tc_prep_part: e >= 2 is a small part)
    kin = ((ci >> 5) & 1) * 4 + (ci & 3);
    nin = (ci >> 6) * 8 + ((ci >> 2) & 7);
  } else { // mma.sync's: per k-step, n8 tile, lane, the E values (2 or 4) a lane loads at once
    const int r = j >> (p.E == 4 ? 2 : 1), lane = r & 31;
    e = j & (p.E - 1);
    kin = (lane & 3) + ((e & 1) ? 4 : 0);
    nin = (r >> 5) * 8 + (lane >> 2);
  }
}

// K index kin of step st: its input channel *ci and tap coordinates u (d, h, w, each counted within
// p.taps), or false where it pads K or C_in. 32-bit: a chunk's prepared weights fit in shared memory,
// so its K indices are small. Shared by both preparations' offset tables.
TC_DEVICE bool tc_prep_k(const Params &p, const PrepStep &st, int kin, int64_t *ci, int64_t u[3]) {
  if (p.kwil) { // the W-interleaved plan: step kw * kks + s holds taps kw of K' = (ci, kd, kh), one chunk
    const uint32_t kw = (uint32_t)st.s / (uint32_t)p.kks, k = ((uint32_t)st.s - kw * (uint32_t)p.kks) * 8u + (uint32_t)kin;
    const uint32_t t01 = (uint32_t)(p.taps[0] * p.taps[1]), cil = k / t01, tap = k - cil * t01;
    *ci = cil;
    if (*ci >= p.C_in) return false;
    u[0] = tap / (uint32_t)p.taps[1], u[1] = tap % (uint32_t)p.taps[1], u[2] = kw;
    return true;
  }
  const uint32_t tv = (uint32_t)(p.taps[0] * p.taps[1] * p.taps[2]), t12 = (uint32_t)(p.taps[1] * p.taps[2]);
  const uint32_t k = (uint32_t)st.s * 8u + (uint32_t)kin, cil = k / tv, tap = k - cil * tv;
  *ci = (int64_t)st.c * p.ci_chunk + cil;
  if ((int64_t)k >= p.ci_chunk * (int64_t)tv || *ci >= p.C_in) return false;
  const uint32_t t2 = (uint32_t)p.taps[2], jd = tap / t12, r = tap - jd * t12, jh = r / t2;
  u[0] = jd, u[1] = jh, u[2] = r - jh * t2;
  return true;
}

// v as part e of a prepared weight: TF32 (round to nearest), or in math "fp32" for e >= 2 the TF32
// of v minus that (an infinite v has no small part).
TC_DEVICE float tc_prep_part(float v, int e, int E) {
  const uint32_t big = tc_tf32(v);
  uint32_t o = big;
  if (E == 4 && e >= 2) o = tc_tf32(fabsf(v) < INFINITY ? v - tc_float(big) : 0.0f);
  return tc_float(o);
}

// The prepared values of this block's share of the total / (4 BN E) k-steps (a contiguous range).
// Each step's table: koff[kin * per + q] (-1: a zero), per entries for each of its 8 K indices,
// made by fill(step, t) for t < 8 per; col_to(col, &co, &q) names a column's output channel and its
// entry q. Dynamic shared memory: 8 per int64_t.
template <class Fill, class Col>
TC_DEVICE void tc_prep_steps(const Params &p, const float *w, int64_t w_co, float *out, int64_t total, int per,
                             Fill fill, Col col_to) {
  TC_SMEM_DECL(raw);
  int64_t *koff = reinterpret_cast<int64_t *>(raw);
  const int step_vals = 4 * p.BN * p.E;
  const int64_t steps = total / step_vals, b0 = steps * blockIdx.x / gridDim.x, b1 = steps * (blockIdx.x + 1) / gridDim.x;
  PrepStep st = tc_prep_step(p, b0); // (ncu: with one step a block, most instructions went to its decode)
  for (int64_t b = b0; b < b1; b++, tc_prep_next(p, st)) {
    if ((int)threadIdx.x < 8 * per) koff[threadIdx.x] = fill(st, (int)threadIdx.x);
    TC_SYNC();
    float *o = out + b * step_vals;
    for (int j = (int)threadIdx.x; j < step_vals; j += (int)blockDim.x) {
      int e, kin, nin, q;
      tc_prep_in_step(p, j, e, kin, nin);
      int64_t co;
      col_to(st.cb * p.BN + nin, &co, &q);
      const int64_t off = koff[kin * per + q];
      o[j] = tc_prep_part(off >= 0 && co < p.C_out ? __ldg(w + off + co * w_co) : 0.0f, e, p.E);
    }
    TC_SYNC();
  }
}

TC_GLOBAL void tc_prep_kernel(WeightMap m, Params p, float *out, int64_t total) {
  tc_grid_launch_dependents(); // the GEMM may start its set-up (it waits for this kernel's end)
  if (p.done) // the counts of EPI_STATS's finish or split K's parts, zeroed here (a launch fewer than a memset)
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.ndone; i += (int64_t)blockDim.x * gridDim.x)
      p.done[i] = 0;
  tc_prep_steps(
      p, m.w, m.w_co, out, total, 1,
      [&](const PrepStep &st, int kin) -> int64_t {
        int64_t ci, u[3];
        if (!tc_prep_k(p, st, kin, &ci, u)) return -1;
        const int64_t kd = m.kfirst[0] + u[0] * m.kstep[0], kh = m.kfirst[1] + u[1] * m.kstep[1], kw = m.kfirst[2] + u[2] * m.kstep[2];
        return st.grp * m.w_g + ci * m.w_ci + (kd * m.kdim[1] + kh) * m.kdim[2] + kw;
      },
      [](int64_t col, int64_t *co, int *q) {
        *co = col;
        *q = 0;
      });
}

// -- host side: plan and launch ----

struct Env {
  int sms;        // multiprocessors
  int smem_optin; // bytes of dynamic shared memory a block may have
  int wg;         // k-loops on wgmma: compute capability 9.0 (the sm_90a code), unless VOLUA_TC_WGMMA=0 (2: every plan)
};

static inline int64_t tc_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Blocks of one plan an SM holds: as many as its registers allow (TC_MIN_BLOCKS, the kernels' launch
// bounds), fewer where smem bytes a block do not fit in cap bytes (an SM's shared memory is cap +
// 1 KB, and each block takes 1 KB more than it asks for).
static inline int64_t tc_blocks_an_sm(int epi, bool split, int WM, int WN, int64_t smem, int64_t cap) {
  const int64_t regs = TC_MIN_BLOCKS(epi, split, WM, WN), fit = (cap + 1024) / (smem + 1024);
  return fit < regs ? fit : regs;
}
static inline int64_t tc_gcd(int64_t a, int64_t b) { return b ? tc_gcd(b, a % b) : a; }

// Fills the plan fields of p for BN = 8*WN channels per block, or returns 0 when the geometry does
// not fit shared memory or 32-bit shared offsets. Prefers the whole of C_in in one chunk (weights
// staged once per block), else the fewest chunks that fit.
// teams 2: two teams of TC_WARPS / 2 warps, each with tiles of half as many positions and tbufs
// patch buffers of its own (2, or 1); only where the weights fit whole (staged once for both teams).
// rows: -1, patch rows for (BM - 1) / Q2 + 2 output rows (a bound); 0, for the exact span below;
// n > 0, n rows past that (for measuring: VOLUA_TC_ROWS).
static inline int tc_plan_rows(Params &p, int WN, bool split, int epi, const Env &env, int WM, int teams, int tbufs,
                               int rows) {
  if (p.groups < 1 || (epi == EPI_STATS && p.groups != 1)) return 0;
  if (p.nsub < 1) p.nsub = 1;
  if (p.nsub > 2 || (p.nsub > 1 && epi != EPI_STORE)) return 0;
  if (epi == EPI_PHASES ? p.nph < 2 || 8 % p.nph != 0 || p.phs1 < 1 || p.phs2 < 1 : p.nph > 1) return 0;
  if (p.nph < 1) p.nph = 1;
  for (int q = 0; q < 8; q++) { // EPI_PHASES (checked above: phs1, phs2 >= 1): column q's phase offsets and channel
    const int ph = q % p.nph;
    p.phq[q] = epi != EPI_PHASES ? 0
                                 : (ph / (p.phs2 * p.phs1)) | ((ph / p.phs2) % p.phs1) << 8 | (ph % p.phs2) << 16 | (q / p.nph) << 24;
  }
  if ((teams != 1 && teams != 2) || (tbufs != 2 && (teams == 1 || tbufs != 1))) return 0;
  p.teams = teams;
  p.tbufs = tbufs;
  p.order = 0;
  p.WM = WM;
  p.BM = TC_WARPS / teams * WM * 16;
  p.BN = WN * 8;
  p.E = split ? 4 : 2;
  for (int d = 0; d < 3; d++)
    if (p.Q[d] <= 0 || p.taps[d] <= 0 || p.taps[d] > 4096 || p.istride[d] > 4096 || p.idil[d] > 4096) return 0;
  const int64_t lim = (int64_t)1 << 28; // keeps every shared-memory offset product in int
  p.plane = p.Q[1] * p.Q[2];
  p.tiles_per_plane = tc_cdiv(p.plane, p.BM);
  p.tiles_per_n = p.Q[0] * p.tiles_per_plane;
  p.ntiles = p.N * p.tiles_per_n;
  p.dec32 = p.ntiles < INT32_MAX && p.plane < INT32_MAX;
  // The output rows a tile spans: tiles start at multiples of BM in a plane, so at columns that are
  // multiples of gcd(BM, Q2), and BM positions from such a column reach at most (Q2 - gcd + BM - 1) /
  // Q2 + 1 rows (brute-forced for BM 128 to 512 and Q2 to 1200: bench/NOTES.md, twentieth session).
  const int64_t span = rows < 0 ? (p.BM - 1) / p.Q[2] + 2 : (p.Q[2] - tc_gcd(p.BM, p.Q[2]) + p.BM - 1) / p.Q[2] + 1;
  const int64_t nq = p.Q[1] < span ? p.Q[1] : span;
  const int64_t prow = (nq - 1) * p.istride[1] + (p.taps[1] - 1) * p.idil[1] + 1 + (rows > 0 ? rows : 0);
  const int64_t wp0 = (p.Q[2] - 1) * p.istride[2] + (p.wspan > 0 ? p.wspan : (p.taps[2] - 1) * p.idil[2] + 1);
  if (prow > lim || wp0 > lim) return 0;
  p.div_q2 = tc_div_make(p.Q[2]);
  if (p.dec32) {
    p.div_tpp = tc_div_make(p.tiles_per_plane);
    p.div_q0 = tc_div_make(p.Q[0]);
  }
  // 16-byte staging: the patch starts cshift columns early so that its column c reads input column
  // c - (ipad + cshift), a multiple of 4 at every fourth c
  p.vec4 = p.in[2] % 4 == 0 && ((uintptr_t)p.x % 16) == 0;
  p.cshift = p.vec4 ? (int)(((-p.ipad[2]) % 4 + 4) % 4) : 0;
  const int64_t wp = wp0 + p.cshift;
  p.x32 = p.C_in * p.in[0] * p.in[1] * p.in[2] < ((int64_t)1 << 31) - 1;
  p.contig = epi == EPI_STORE && p.Q[1] == p.out[1] && p.Q[2] == p.out[2];
  for (int d = 0; d < 3; d++) p.contig = p.contig && p.ostep[d] == 1 && p.oofs[d] == 0;
  p.contig = p.contig && (int64_t)(WN * 8) * p.out[0] * p.out[1] * p.out[2] < ((int64_t)1 << 31) - 4096;
  p.off32 = (int64_t)(WN * 8) * p.out[0] * p.out[1] * p.out[2] < ((int64_t)1 << 31) - 4096;
  { // VOLUA_TC_OFF32=0: the 64-bit epilogue (for measuring)
    const char *o32 = getenv("VOLUA_TC_OFF32");
    if (o32 && strcmp(o32, "0") == 0) p.off32 = 0;
  }
  int64_t pitch = wp;
  while (pitch % 32 < 9 || pitch % 32 > 23 || (p.vec4 && pitch % 4 != 0)) pitch++; // rows 9..23 banks apart: no A-load conflicts
  const int64_t pitch_d = prow * pitch, pitch_c = p.taps[0] * pitch_d;
  if (pitch_d > lim || pitch_c > lim) return 0;
  int64_t tvs[2];
  for (int sb = 0; sb < p.nsub; sb++) {
    const int64_t tw = p.nsub == 1 ? p.taps[2] : p.sub_taps2[sb]; // taps along W
    tvs[sb] = p.taps[0] * p.taps[1] * tw;
    if (tw <= 0 || tvs[sb] > lim) return 0;
  }
  // TMA patches (p.tma; VOLUA_TC_TMA=0 turns them off, for measuring): the box is the patch's own
  // layout, so its columns (pitch), rows (prow), planes and channels must each be at most 256, the
  // dilation along D at most 8 (the box's element stride there), and every coordinate an int. The
  // buffers then start at multiples of 128 bytes. (The channel count is checked per chunk below.)
  {
    const char *te = getenv("VOLUA_TC_TMA");
    const int64_t span0 = (p.taps[0] - 1) * p.idil[0] + 1;
    p.tma = p.vec4 && !(te && strcmp(te, "0") == 0) && pitch <= 256 && prow <= 256 && span0 <= 256 && p.idil[0] <= 8;
    for (int d = 0; d < 3; d++)
      p.tma = p.tma && p.in[d] < INT32_MAX / 2 && p.Q[d] * p.istride[d] + p.ipad[d] < INT32_MAX / 2 && p.ipad[d] < INT32_MAX / 2;
    p.tma = p.tma && p.N * p.groups < INT32_MAX && p.C_in < INT32_MAX / 2;
  }
  p.prow = (int)prow;
  p.wp = (int)wp;
  p.pitch_w = (int)pitch;
  p.pitch_d = (int)pitch_d;
  p.pitch_c = (int)pitch_c;
  p.zero_floats = (int)pitch_d; // > any row offset mo: the padded K reads zeros at any row
  p.co_blocks = (int)tc_cdiv(p.C_out * p.nph, p.BN); // EPI_PHASES: nph columns a channel
  p.stats_bytes = epi == EPI_STATS ? TC_WARPS * p.BN * 2 * 8 : 0;
  // Channel chunks: all of C_in at once if it fits (weights staged once per block), else the split
  // with the fewest k-steps in all, counting one k-step per chunk for its barrier and staging.
  int64_t best_score = -1;
  int64_t smem_cap = env.smem_optin;
  { // VOLUA_TC_SMEM_CAP=bytes: a lower shared-memory limit per block (for measuring: more blocks per SM)
    const char *cap = getenv("VOLUA_TC_SMEM_CAP");
    if (cap && atoll(cap) > 0 && atoll(cap) < smem_cap) smem_cap = atoll(cap);
  }
  for (int64_t nch = 1; nch <= (teams > 1 ? 1 : p.C_in); nch++) {
    const int64_t cc = tc_cdiv(p.C_in, nch);
    if (nch > 1 && cc == tc_cdiv(p.C_in, nch - 1)) continue; // same chunk size: no gain
    int64_t ksteps = 0, ksum = 0, ks[2];
    for (int sb = 0; sb < p.nsub; sb++) {
      ks[sb] = tc_cdiv(cc * tvs[sb], 8);
      ksum += ks[sb];
      if (ks[sb] > ksteps) ksteps = ks[sb];
    }
    const int64_t w_floats = ksteps * WN * 32 * p.E; // the largest sub-GEMM's
    if (p.tma && cc > 256) continue; // a box of at most 256 channels
    const int al = p.tma ? 32 : 4; // buffer starts: 128 or 16 bytes
    const int64_t patch = cc * pitch_c, buf = (patch + p.zero_floats + al - 1) / al * al;
    const int64_t kofs_bytes = ((ksteps + 1) * 8 * 4 + al * 4 - 1) / (al * 4) * (al * 4); // (+1: the look-ahead)
    const int64_t smem = p.nsub * kofs_bytes + (nch > 1 ? 2 : p.nsub) * w_floats * 4 + teams * tbufs * buf * 4 +
                         p.stats_bytes + (p.tma ? 8 * teams * tbufs : 0);
    if (ksteps > lim || patch > lim || smem > smem_cap) continue;
    const int64_t chunks = tc_cdiv(p.C_in, cc), score = chunks * (ksum + p.nsub);
    if (best_score >= 0 && (p.nchunks == 1 || score >= best_score)) continue;
    best_score = score;
    p.ci_chunk = (int)cc;
    p.nchunks = (int)chunks;
    p.ksteps = (int)ksteps;
    p.w_floats = (int)w_floats;
    for (int sb = 0; sb < p.nsub; sb++) {
      p.sub_ksteps[sb] = (int)ks[sb];
      p.sub_w_floats[sb] = (int)(ks[sb] * WN * 32 * p.E);
    }
    p.patch_floats = (int)patch;
    p.buf_floats = (int)buf;
    p.kofs_bytes = (int)kofs_bytes;
    p.smem = (size_t)smem;
  }
  // k-loops on wgmma where they measured faster (bench/NOTES.md, seventh session: every tensor-core
  // shape both ways, on the H200): math "fp32" everywhere (three products per A fragment: 3 to 35 %
  // faster); math "tf32" with 32 or 64 channels per block (up to 18 % faster), but not for grouped
  // plans (X-conv-g4 and X-convT-g4, 32-channel blocks: 1 % slower), the statistics kernels (L2-23,
  // 24 channels: 5 % slower) or two-team plans of at most 4 k-steps (L1-59: 4 % slower).
  // VOLUA_TC_WGMMA=2 takes it everywhere (for measuring).
  p.wg = env.wg == 2 ||
         (env.wg && (split || (WN >= 4 && p.groups == 1 && epi != EPI_STATS && !(teams > 1 && p.ksteps <= 4))));
  // EPI_PHASES with two W phases: whole output rows through a stage per warp (tc_store_phase_rows),
  // after everything else, where it costs no block of an SM (smem_optin + 1 KB: an SM's shared
  // memory). VOLUA_TC_PST=0: off (for measuring).
  {
    const char *v = getenv("VOLUA_TC_PST");
    const int64_t off = ((int64_t)p.smem + 15) / 16 * 16, with = off + (int64_t)TC_WARPS * 4 * TC_PST_PITCH(WM) * 4;
    p.pst = best_score >= 0 && epi == EPI_PHASES && p.phs2 == 2 && p.off32 && !(v && strcmp(v, "0") == 0) &&
            with <= smem_cap &&
            tc_blocks_an_sm(epi, split, WM, WN, with, smem_cap) == tc_blocks_an_sm(epi, split, WM, WN, (int64_t)p.smem, smem_cap);
    if (p.pst) {
      p.pst_off = (int)off;
      p.smem = (size_t)with;
    }
  }
  return best_score >= 0;
}

// Fills the plan fields of p (tc_plan_rows). The patch holds the rows of the bound (BM - 1) / Q2 + 2
// unless the exact span's fewer rows make a better plan: fewer chunks, the staged-rows epilogue, or
// more blocks an SM. (H200, bench/NOTES.md, twentieth and twenty-first sessions: that way L1-72
// "tf32" 0.151 -> 0.129 ms (2 blocks an SM), k2 s2 128 -> 64 "tf32" 0.152 -> 0.140 and 64 -> 32
// "fp32" 0.229 -> 0.202 (staged rows), L1-73 "fp32" 1.627 -> 1.579 (one chunk); with the plan the
// same otherwise, the smaller patch was slower on three shapes, conv3d 32 -> 32 k3 on 64 x 64 planes
// by 1.8 % ("fp32") and 2.5 % ("tf32"), k2 s2 32 -> 16 by 4 % ("tf32"), and faster by at most 1 %
// on two.) VOLUA_TC_ROWS=n: n rows past the exact span (for measuring).
static inline int tc_plan(Params &p, int WN, bool split, int epi, const Env &env, int WM = 2, int teams = 1,
                          int tbufs = 2) {
  p.bound_chunks = 0;
  Params a = p;
  if (const char *v = getenv("VOLUA_TC_ROWS"))
    if (atoi(v) >= 0 && atoi(v) <= 8 && tc_plan_rows(a, WN, split, epi, env, WM, teams, tbufs, atoi(v))) {
      p = a;
      return 1;
    }
  const int ok = tc_plan_rows(p, WN, split, epi, env, WM, teams, tbufs, -1);
  p.bound_chunks = a.bound_chunks = ok ? p.nchunks : 0;
  if (!tc_plan_rows(a, WN, split, epi, env, WM, teams, tbufs, 0)) return ok;
  auto nb = [&](const Params &q) { return tc_blocks_an_sm(epi, split, WM, WN, (int64_t)q.smem, env.smem_optin); };
  if (!ok || a.nchunks < p.nchunks || (a.pst && !p.pst) || nb(a) > nb(p)) p = a;
  return 1;
}

#ifndef VOLUA_TC_EMULATE
template <class K> static inline cudaError_t tc_prepare_kernel(K kernel, size_t smem) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
}
template <class K> static inline cudaError_t tc_blocks_per_sm(K kernel, size_t smem, int *nb) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(nb, kernel, TC_WARPS * 32, smem);
}
// Device 0's SM count and shared-memory limit, read once (volua uses device 0 only).
static inline int tc_get_env(Env *env, const char *op, char *err) {
  static Env cached = {0, 0};
  if (cached.sms == 0) {
    int dev = 0;
    Env e;
    TC_CHECK(cudaGetDevice(&dev));
    TC_CHECK(cudaDeviceGetAttribute(&e.sms, cudaDevAttrMultiProcessorCount, dev));
    TC_CHECK(cudaDeviceGetAttribute(&e.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    int major = 0, minor = 0;
    TC_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    TC_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    // (CUDA_FORCE_PTX_JIT=1 makes the runtime JIT the compute_90 PTX, which has no wgmma: its
    // k-loops would trap, so the mma.sync ones run then)
    const char *w = getenv("VOLUA_TC_WGMMA"), *jit = getenv("CUDA_FORCE_PTX_JIT");
    const bool ptx = jit && jit[0] && strcmp(jit, "0") != 0;
    e.wg = major == 9 && minor == 0 && !ptx && !(w && strcmp(w, "0") == 0) ? (w && strcmp(w, "2") == 0 ? 2 : 1) : 0;
    cached = e;
  }
  *env = cached;
  return 0;
}
// TMA maps (tc_encode_map, below) come from a driver function reached through the runtime (volua
// links no libcuda). Its signature and enum values are the driver's cuTensorMapEncodeTiled (cuda.h,
// CUDA 12.0 on): data type 7 FLOAT32, interleave 0 none, swizzle 0 none or 3 128 B, L2 promotion 2
// (128 B), out-of-bounds fill 0 (zeros); it returns 0 (CUDA_SUCCESS) or an error.
typedef int (*tc_encode_fn)(tc_tmap *, int, uint32_t, void *, const uint64_t *, const uint64_t *, const uint32_t *,
                            const uint32_t *, int, int, int, int);
// The encoder, looked up once (NULL where the driver has none).
static inline tc_encode_fn tc_encoder(void) {
  static tc_encode_fn encode = NULL;
  static int looked = 0;
  if (!looked) {
    looked = 1;
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      encode = reinterpret_cast<tc_encode_fn>(fn);
    else
      (void)cudaGetLastError();
  }
  return encode;
}
#else
template <class K> static inline int tc_prepare_kernel(K, size_t) { return 0; }
template <class K> static inline int tc_blocks_per_sm(K, size_t, int *nb) {
  *nb = 1;
  return 0;
}
extern Env tc_emu_env;
static inline int tc_get_env(Env *env, const char *, char *) {
  *env = tc_emu_env;
  return 0;
}
#endif

// A map of the contiguous float tensor at `base` with `rank` dims (innermost first; up to 5, the
// rest taken as 1): boxes of `box`, element strides `es` (NULL: all 1), swizzle 0 (none) or 3 (128
// bytes), zeros outside. 0, or 1 where the encoder is missing or refuses (the callers then take
// another way). The maps of tc_encode_tmap (below), conv3d_cl.cu and conv3d_pointwise.cu. Emulated:
// what the GPU's encoder is given (tc_prims.cuh's emulated TMA), refused where it would refuse a
// box row or a base that is not 16-byte aligned.
static inline int tc_encode_map(tc_tmap *m, const float *base, int rank, const int64_t *dim, const int *box,
                                const int *es, int swizzle) {
  uint64_t gdim[5], gstride[4]; // elements; bytes, of dims 1..4
  uint32_t b[5], e[5];
  uint64_t st = 4;
  for (int d = 0; d < 5; d++) {
    const int64_t n = d < rank ? dim[d] : 1;
    const int bx = d < rank ? box[d] : 1, ex = d < rank && es ? es[d] : 1;
    if (n < 1 || bx < 1 || bx > 256 || ex < 1 || ex > 8) return 1;
    gdim[d] = (uint64_t)n, b[d] = (uint32_t)bx, e[d] = (uint32_t)ex;
    if (d > 0) gstride[d - 1] = st;
    st *= gdim[d];
  }
#ifndef VOLUA_TC_EMULATE
  const tc_encode_fn encode = tc_encoder();
  if (!encode) return 1;
  return encode(m, 7, 5, const_cast<float *>(base), gdim, gstride, b, e, 0, swizzle, 2, 0) != 0;
#else
  m->base = base;
  for (int d = 0; d < 5; d++) {
    m->dim[d] = (int64_t)gdim[d];
    m->stride[d] = d == 0 ? 1 : (int64_t)(gstride[d - 1] / 4);
    m->box[d] = (int)b[d];
    m->estride[d] = (int)e[d];
  }
  m->swz = swizzle == 3;
  return (b[0] * 4) % 16 != 0 || ((uintptr_t)base % 16) != 0;
#endif
}
// p.tmap for p.tma: the input as a 5-dimensional tensor (W, H, D, C_in, N * groups), a box of
// (pitch_w, prow, planes spanned along D, ci_chunk, 1) with element stride idil[0] along D, no
// swizzle (the caller stages by threads where this refuses).
static inline int tc_encode_tmap(Params &p) {
  const int64_t dim[5] = {p.in[2], p.in[1], p.in[0], p.C_in, p.N * p.groups};
  const int box[5] = {p.pitch_w, p.prow, (int)((p.taps[0] - 1) * p.idil[0] + 1), p.ci_chunk, 1};
  const int es[5] = {1, 1, (int)p.idil[0], 1, 1};
  return tc_encode_map(&p.tmap, p.x, 5, dim, box, es, 0);
}

// The weights in fragment order (scratch from the caching allocator; the caller frees it after
// the launches that read it, with tc_weights_free: every launch is on one stream).
// Kernel is tc_prep_kernel (WeightMap) or conv_transpose3d_tc.cu's phase preparation (PhaseMap).
// min_threads: a larger grid where the kernel has more to do (the phase preparation's input scan).
// Shared memory: the k-step's table of weight offsets, up to 8 x 8 (tc_prep_steps).
// tc_prep_launch runs kernel over the total floats at buf (total 0: it zeroes p.done's counts only).
template <class Map>
static inline int tc_prep_launch(void (*kernel)(Map, Params, float *, int64_t), const Params &p, const Map &m, float *buf,
                                 int64_t total, tc_stream s, const char *op, char *err, int64_t min_threads) {
  const int64_t steps = total / (4 * p.BN * p.E);
  int64_t blocks = steps > min_threads / 256 ? steps : min_threads / 256; // at least a k-step a block
#ifdef VOLUA_TC_EMULATE
  const int64_t most = 16; // (256 threads a block there)
#else
  const int64_t most = 1024;
#endif
  if (blocks > most) blocks = most;
  if (blocks < 1) blocks = 1;
  TC_LAUNCH(kernel, (unsigned)blocks, 256, 8 * 8 * sizeof(int64_t), s, m, p, buf, total);
  return tc_launch_failed(op, err);
}

template <class Map>
static inline int tc_prep_with(void (*kernel)(Map, Params, float *, int64_t), const Params &p, const Map &m,
                               float **out, tc_stream s, const char *op, char *err, int64_t min_threads = 0) {
  const int64_t total = p.groups * p.co_blocks * p.nchunks * p.w_floats;
  if (volua_cuda_malloc(reinterpret_cast<void **>(out), total * 4, err)) return 1;
  if (tc_prep_launch(kernel, p, m, *out, total, s, op, err, min_threads)) {
    volua_cuda_free(*out);
    *out = NULL;
    return 1;
  }
  return 0;
}

// A preparation by kernel of the weights at w, kept across calls where the op named w as its call's
// weight (src/cuda.c, "prepared weights"; bench/NOTES.md, twenty-fourth session): recipe holds every
// value of p and m that the preparation reads. A kept copy still needs the kernel's other work done
// where there is some (p.done's counts zeroed; `more`: the phase preparation's input scan): then it
// runs over no weights. min_threads as tc_prep_launch's. Free what this gives with tc_weights_free.
template <class Map>
static inline int tc_prep_kept(void (*kernel)(Map, Params, float *, int64_t), const Params &p, const Map &m,
                               const float *w, const int64_t *recipe, int nrecipe, bool more, int64_t min_threads,
                               float **out, tc_stream s, const char *op, char *err) {
  const int64_t total = p.groups * p.co_blocks * p.nchunks * p.w_floats;
  int fill = 1;
  char merr[VOLUA_ERR_MAX];
  float *kept = static_cast<float *>(volua_cuda_derived(w, recipe, nrecipe, total * 4, &fill, merr));
  if (!kept) return tc_prep_with(kernel, p, m, out, s, op, err, min_threads);
  *out = kept;
  if (!fill && !p.done && !more) return 0;
  if (tc_prep_launch(kernel, p, m, kept, fill ? total : 0, s, op, err, min_threads)) {
    if (fill) volua_cuda_derived_failed(kept);
    else volua_cuda_derived_release(kept);
    *out = NULL;
    return 1;
  }
  return 0;
}

// tc_prep_kernel's weights (WeightMap), kept (tc_prep_kept). The recipe's first value names the
// layout (conv_transpose3d_tc.cu's every-phase weights: 2); conv3d_cl.cu's recipes have other lengths.
static inline int tc_prep_weights(const Params &p, const WeightMap &m, float **out, tc_stream s, const char *op,
                                  char *err) {
  const int64_t recipe[] = {p.kwil ? 3 : 1, p.ksteps, p.nchunks, p.co_blocks, p.wg, p.BN, p.E, p.taps[0], p.taps[1], p.taps[2],
                            p.ci_chunk, p.C_in, p.C_out, p.groups, p.w_floats, m.w_co, m.w_ci, m.w_g,
                            m.kfirst[0], m.kfirst[1], m.kfirst[2], m.kstep[0], m.kstep[1], m.kstep[2],
                            m.kdim[0], m.kdim[1], m.kdim[2]};
  return tc_prep_kept(tc_prep_kernel, p, m, m.w, recipe, (int)(sizeof recipe / sizeof *recipe), false, 0, out, s, op,
                      err);
}

// Gives back what tc_prep_kept (tc_prep_weights, tc_prep_phases) or tc_prep_with gave, after the
// launches that read it are queued: a kept copy stays kept (released for eviction), a scratch one
// is freed.
static inline void tc_weights_free(float *w) {
  if (!volua_cuda_derived_release(w)) volua_cuda_free(w);
}

// VOLUA_TC_VERBOSE=1 (read once): the plans on stderr (tc_report, conv3d_cl.cu's lines).
static inline int tc_verbose(void) {
  static int verbose = -1;
  if (verbose < 0) {
    const char *v = getenv("VOLUA_TC_VERBOSE");
    verbose = v && v[0] && strcmp(v, "0") != 0;
  }
  return verbose;
}

// One line per launch on stderr with the plan (for bench/NOTES.md), where tc_verbose.
static inline void tc_report(const Params &p, const char *op, int epi, int64_t grid_x, int64_t grid_y, int nb) {
  if (!tc_verbose()) return;
  static char last[512];
  char line[512];
  snprintf(line, sizeof line,
          "volua tc: %s %s BM %d BN %d %s, Q (%lld, %lld, %lld) taps (%lld, %lld, %lld), C_in %lld in %d chunk(s) of "
          "%d, %d k-steps, %lld tiles, smem %zu B, %d block(s)/SM, grid %lld x %lld, %d team(s)%s%s%s%s%s\n",
          op, epi == EPI_STATS ? "stats" : epi == EPI_WBOX ? "wbox" : epi == EPI_PHASES ? "phases" : "store", p.BM, p.BN, p.E == 4 ? "fp32 (split)" : "tf32",
          (long long)p.Q[0], (long long)p.Q[1], (long long)p.Q[2], (long long)p.taps[0], (long long)p.taps[1],
          (long long)p.taps[2], (long long)p.C_in, p.nchunks, p.ci_chunk, p.ksteps, (long long)p.ntiles, p.smem, nb,
          (long long)grid_x, (long long)grid_y, p.teams, p.order ? " in turns" : "",
          p.teams > 1 && p.tbufs == 1 ? ", one patch buffer each" : "", p.tma ? ", TMA patches" : "", p.wg ? ", wgmma" : "", p.pst ? ", staged rows" : "");
  char more[160] = ""; // the patch's rows and pitches, the parts of K, and the two sub-GEMMs' taps along W
  snprintf(more, sizeof more, ", patch %d rows x %d (plane %d)", p.prow, p.pitch_w, p.pitch_d);
  if (p.ksplit > 1) snprintf(more + strlen(more), sizeof more - strlen(more), ", K in %d parts", p.ksplit);
  if (p.epi.n > 0) snprintf(more + strlen(more), sizeof more - strlen(more), ", epilogue of %d step(s)", p.epi.n);
  if (p.nsub == 2)
    snprintf(more + strlen(more), sizeof more - strlen(more), ", 2 sub-GEMMs (W taps %lld, %lld)",
             (long long)p.sub_taps2[0], (long long)p.sub_taps2[1]);
  const size_t len = strlen(line);
  if (more[0] && len > 0 && len < sizeof line) snprintf(line + len - 1, sizeof line - len + 1, "%s\n", more);
  if (strcmp(line, last) == 0) return; // a plan is printed when it changes, not at every call
  memcpy(last, line, sizeof line);
  fputs(line, stderr);
}

static inline int tc_no_variant(const Params &p, const char *op, char *err) {
  if (err) snprintf(err, VOLUA_ERR_MAX, "%s: no tensor-core variant for %d channels per block and %d team(s)", op, p.BN, p.teams);
  return 1;
}

// The GEMM's launch: a programmatic dependent launch (tc_prims.cuh), so that its blocks start, and
// build their tables and barriers, while the weight preparation before it runs (that kernel lets
// them start at once; tc_conv_kernel waits for its end before reading memory). Measured against
// plain launches in bench/NOTES.md (fourteenth session). VOLUA_TC_PDL=0 (tc_pdl): plain.
static inline int tc_launch_kernel(void (*kernel)(const Params), tc_dim3 grid, size_t smem, tc_stream s, const Params &p,
                                   const char *op, char *err) {
  if (tc_pdl()) TC_CHECK(tc_launch_pdl(kernel, grid, tc_dim3(TC_WARPS * 32), smem, s, p));
  else TC_LAUNCH(kernel, grid, TC_WARPS * 32, smem, s, p);
  (void)op, (void)err;
  return 0;
}

template <int WM, int WN, bool SPLIT, int EPI, int NSUB = 1, bool GR = false, int TEAMS = 1, bool KS = false,
          bool FUSE = false>
static inline int tc_launch_main(Params &p, const Env &env, tc_stream s, const char *op, char *err) {
  void (*kernel)(const Params) = tc_conv_kernel<WM, WN, SPLIT, EPI, NSUB, GR, TEAMS, KS, FUSE>;
  if (p.teams != TEAMS) return tc_no_variant(p, op, err);
  p.nf_flag = NULL;
  if (SPLIT && EPI != EPI_STATS) volua_cuda_nf_get(&p.nf_flag, &p.nf_stamp);
  // The shared-memory limit and the occupancy query cost host time inside a timed call: done once
  // per kernel and size (one thread calls ops: the statics need no lock).
  static size_t smem_set = 0, nb_smem = 0;
  static int nb_cached = 0;
  if (p.smem > smem_set) {
    TC_CHECK(tc_prepare_kernel(kernel, p.smem));
    smem_set = p.smem;
  }
  if (p.smem != nb_smem || nb_cached < 1) {
    int nbq = 0;
    TC_CHECK(tc_blocks_per_sm(kernel, p.smem, &nbq));
    nb_cached = nbq;
    nb_smem = p.smem;
  }
  int nb = nb_cached;
  if (nb < 1) nb = 1;
  if (p.tma && tc_encode_tmap(p)) p.tma = 0; // stage by threads (the plan's layout serves both)
  if (EPI == EPI_STATS) {
    int64_t parts = (int64_t)nb * env.sms / p.N;
    if (parts < 1) parts = 1;
    if (parts > p.tiles_per_n) parts = p.tiles_per_n;
    if (parts > p.parts) parts = p.parts; // the room the caller allocated for partial sums
    p.parts = (int)parts;
    tc_report(p, op, EPI, parts, p.N, nb);
    if (tc_launch_kernel(kernel, tc_dim3((unsigned)parts, (unsigned)p.N), p.smem, s, p, op, err)) return 1;
  } else {
    const int64_t cols = p.co_blocks * p.groups * (KS ? p.ksplit : 1); // a block per (group, channel block, part of K) at least
    int64_t per_cb = (int64_t)nb * env.sms / cols;
    if (per_cb < 1) per_cb = 1;
    if (per_cb > p.ntiles) per_cb = p.ntiles;
    if (per_cb * cols > INT32_MAX) per_cb = INT32_MAX / cols;
    tc_report(p, op, EPI, per_cb * cols, 1, nb);
    if (tc_launch_kernel(kernel, tc_dim3((unsigned)(per_cb * cols)), p.smem, s, p, op, err)) return 1;
  }
  TC_CHECK_LAUNCH();
  return 0;
}

// Dispatch on (positions per block, channels per block, math). Store and statistics launches are
// separate functions, so that a .cu instantiates only the kernels it launches.

// Store epilogues come in 32 and 64 channels per block (WN 4, 8), the statistics epilogue in 8 to
// 32 (WN 1 to 4: all of C_out in one block); each helper instantiates only those.
// Groups > 1 come in 32 channels per block only (tc_plan_store_wm): a group's output channels are
// often few, and each variant is a kernel to compile. KS: the split-K kernels (tc_launch_ksplit,
// which leaves only one team and one group to this dispatch).
// FUSE: the kernels with the fused epilogue (Params::epi), a separate instantiation (its code in
// the plain kernels cost them registers, spills in five, and 2-5 % of their "fp32" time on the
// H200, run s38r5); they exist for one group and K whole only.
template <int WM, bool SPLIT, int EPI, class P, int NSUB = 1, bool KS = false, bool FUSE = false>
static inline int tc_launch_store_wn(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  if constexpr (TC_TEAMABLE(EPI, SPLIT, WM, NSUB, 1))
    if (p.teams == 2 && p.groups == 1) switch (p.BN / 8) {
      case 4: return tc_launch_main<WM, 4, SPLIT, EPI, NSUB, false, 2, false, FUSE>(p, env, s, op, err);
      case 8: return tc_launch_main<WM, 8, SPLIT, EPI, NSUB, false, 2, false, FUSE>(p, env, s, op, err);
      default: return tc_no_variant(p, op, err);
      }
  if (p.groups > 1) {
    if constexpr (!FUSE)
      return p.BN == 32 ? tc_launch_main<WM, 4, SPLIT, EPI, NSUB, true>(p, env, s, op, err) : tc_no_variant(p, op, err);
    return tc_no_variant(p, op, err);
  }
  switch (p.BN / 8) {
  case 4: return tc_launch_main<WM, 4, SPLIT, EPI, NSUB, false, 1, KS, FUSE>(p, env, s, op, err);
  case 8: return tc_launch_main<WM, 8, SPLIT, EPI, NSUB, false, 1, KS, FUSE>(p, env, s, op, err);
  default: return tc_no_variant(p, op, err);
  }
}

template <int WM, bool SPLIT, class P>
static inline int tc_launch_stats_wn(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  switch (p.BN / 8) {
  case 1: return tc_launch_main<WM, 1, SPLIT, EPI_STATS>(p, env, s, op, err);
  case 2: return tc_launch_main<WM, 2, SPLIT, EPI_STATS>(p, env, s, op, err);
  case 3: return tc_launch_main<WM, 3, SPLIT, EPI_STATS>(p, env, s, op, err);
  case 4: return tc_launch_main<WM, 4, SPLIT, EPI_STATS>(p, env, s, op, err);
  default: return tc_no_variant(p, op, err);
  }
}

// The (WM, math) pairs that exist for an epilogue: WM 2 in both maths, WM 4 in math "tf32" only.
template <int EPI, int NSUB, bool KS, bool FUSE, class P>
static inline int tc_launch_epi_wm(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  const bool split = p.E == 4;
  if (split && p.WM == 2) return tc_launch_store_wn<2, true, EPI, P, NSUB, KS, FUSE>(p, env, s, op, err);
  if (!split && p.WM == 2) return tc_launch_store_wn<2, false, EPI, P, NSUB, KS, FUSE>(p, env, s, op, err);
  if (!split && p.WM == 4) return tc_launch_store_wn<4, false, EPI, P, NSUB, KS, FUSE>(p, env, s, op, err);
  return tc_no_variant(p, op, err);
}
// With a fused epilogue (p.epi.n > 0: the caller took steps, volua_cuda_epilogue_take, only for
// plans these kernels cover: one group, K whole; W pairs too), its kernels; else the plain ones.
template <int EPI, int NSUB = 1, bool KS = false, class P>
static inline int tc_launch_epi(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  if (p.epi.n > 0) {
    if constexpr ((EPI == EPI_STORE || (EPI == EPI_PHASES && NSUB == 1)) && !KS)
      if (p.groups == 1) return tc_launch_epi_wm<EPI, NSUB, KS, true>(p, env, s, op, err);
    return tc_no_variant(p, op, err);
  }
  return tc_launch_epi_wm<EPI, NSUB, KS, false>(p, env, s, op, err);
}

// EPI_STORE or EPI_WBOX. WBOX: whether the caller may ask for EPI_WBOX (conv3d never does: its .cu
// then instantiates the store kernels only).
template <bool WBOX = true, class P>
static inline int tc_launch_store(P &p, const Env &env, int epi, tc_stream s, const char *op, char *err) {
  if (epi != EPI_WBOX) return tc_launch_epi<EPI_STORE>(p, env, s, op, err);
  if constexpr (WBOX) return tc_launch_epi<EPI_WBOX>(p, env, s, op, err);
  return tc_no_variant(p, op, err);
}

// Split K (Params::ksplit > 1, tc_plan_ksplit; conv3d_tc.cu): the store epilogue of one group, one
// team and one sub-GEMM, through tc_launch_epi's (WM, math, channels per block) dispatch.
template <class P> static inline int tc_launch_ksplit(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  if (p.ksplit < 2 || p.groups != 1 || p.teams != 1 || p.nsub != 1) return tc_no_variant(p, op, err);
  return tc_launch_epi<EPI_STORE, 1, true>(p, env, s, op, err);
}

// Every phase in one GEMM (EPI_PHASES, conv_transpose3d_tc.cu).
template <class P> static inline int tc_launch_phases(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  return tc_launch_epi<EPI_PHASES>(p, env, s, op, err);
}

// Two sub-GEMMs (Params::nsub 2: a transposed convolution's W phase pair), store epilogue only.
template <class P> static inline int tc_launch_store2(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  if (p.nsub != 2) return tc_no_variant(p, op, err);
  return tc_launch_epi<EPI_STORE, 2>(p, env, s, op, err);
}

template <class P> static inline int tc_launch_stats(P &p, const Env &env, tc_stream s, const char *op, char *err) {
  const bool split = p.E == 4;
  if (split && p.WM == 2) return tc_launch_stats_wn<2, true>(p, env, s, op, err);
  if (!split && p.WM == 2) return tc_launch_stats_wn<2, false>(p, env, s, op, err);
  if (!split && p.WM == 4) return tc_launch_stats_wn<4, false>(p, env, s, op, err);
  return tc_no_variant(p, op, err);
}

// Variant choice for a store epilogue: 64 channels per block wherever that plan fits (with the
// weights in chunks where 32 channels would hold them whole: each patch is then staged once, not
// once per channel block; H200, twelfth session: L1-66 in "fp32" 0.787 -> 0.704 ms, 3 -> 128
// channels k(3,5,7) 1.541 -> 1.377, 4 -> 64 k5 in "tf32" 0.431 -> 0.328), else 32; in math "tf32",
// 512 positions per block (WM 4: half the weight loads per mma, and fewer staged rows per position)
// where that plan has as few chunks. VOLUA_TC_BN=32|64 and VOLUA_TC_WM=2|4 force one (for
// measuring both).
static inline int tc_plan_store_wm(Params &p, bool split, int epi, const Env &env, int wm) {
  const char *force = getenv("VOLUA_TC_BN");
  const int want = force ? atoi(force) : 0;
  if (want == 32) return tc_plan(p, 4, split, epi, env, wm);
  Params a = p, b = p;
  // (a forced 64 where it does not fit: 32, not the plain kernels)
  if ((want == 64 || p.C_out * (p.nph > 1 ? p.nph : 1) > 32) && p.groups == 1 && tc_plan(a, 8, split, epi, env, wm)) {
    p = a;
    return 1;
  }
  if (tc_plan(b, 4, split, epi, env, wm)) {
    p = b;
    return 1;
  }
  return 0;
}

// Two teams that take turns at the mma loop where K is short (at most TC_TEAMS_KSTEPS k-steps: a
// tile's mma is then short beside its staging and epilogue), the kernel has a two-team variant
// (TC_TEAMABLE), the weights fit whole and the teams' patch buffers (two each, else one) fit beside
// them. VOLUA_TC_TEAMS=1|2|2o forces one team, two, or two in turns (wherever they fit);
// VOLUA_TC_TBUFS=1 one patch buffer per team.
// (H200, conv3d 64 channels k3, tf32, with TMA patches: two teams 25 % faster at 11 k-steps, 13 %
// at 24, 7 % at 27, even at 34 and 41; L1-60 and L1-66 (40 k-steps) 4-5 % slower; bench/NOTES.md)
#define TC_TEAMS_KSTEPS 27
static inline int tc_plan_teams(Params &p, bool split, int epi, const Env &env) {
  const char *v = getenv("VOLUA_TC_TEAMS"), *nb = getenv("VOLUA_TC_TBUFS");
  const int teams = v ? (atoi(v) == 2 ? 2 : 1) : p.ksteps <= TC_TEAMS_KSTEPS ? 2 : 1;
  const int order = v ? strchr(v, 'o') != NULL : 1;
  if (teams == 1 || p.nchunks != 1 || !TC_TEAMABLE(epi, split, p.WM, p.nsub, p.groups)) return 1;
  for (int bufs = nb && atoi(nb) == 1 ? 1 : 2; bufs >= 1; bufs--) {
    Params a = p;
    if (tc_plan(a, p.BN / 8, split, epi, env, p.WM, teams, bufs)) {
      a.order = order;
      p = a;
      return 1;
    }
  }
  return 1;
}

static inline int tc_plan_store(Params &p, bool split, int epi, const Env &env) {
  const char *force = getenv("VOLUA_TC_WM");
  const int want = force ? atoi(force) : 0;
  if (split || want == 2) return tc_plan_store_wm(p, split, epi, env, 2) && tc_plan_teams(p, split, epi, env);
  if (want == 4) return tc_plan_store_wm(p, split, epi, env, 4) && tc_plan_teams(p, split, epi, env);
  Params a = p, b = p;
  const int ok4 = tc_plan_store_wm(a, split, epi, env, 4), ok2 = tc_plan_store_wm(b, split, epi, env, 2);
  // WM 4 unless it needs more chunks or pads the planes' last tiles with noticeably more rows. An
  // every-phase GEMM whose K is chunked at WM 2 as well takes WM 4's extra chunks where they keep 8
  // channels or more (H200, tf32, bench/NOTES.md, twentieth session: KernelBench L1-73 1.057 ->
  // 0.984 ms, k3 s2 p1 32 -> 32 on (2, 32, 15, 30, 45) 0.164 -> 0.137; with chunks of 4 channels,
  // k4 s2 p1 32 -> 16 on (2, 32, 32, 64, 64) went 0.312 -> 0.316, so those keep WM 2)
  // An every-phase GEMM keeps WM 2 where only that has the staged-rows epilogue (p.pst): with the
  // exact tile span (tc_plan), WM 4 without it was 19 % slower on k3 s2 p1 op1 16 -> 8 in "tf32"
  // (bench/NOTES.md, twentieth session).
  // And WM 2 where WM 4's (tile, group, channel block) units leave SMs idle and WM 2 has more: with
  // the exact span, WM 4 fitted k4 s2 p1 64 -> 32 on (2, 64, 16, 32, 32) in 4 chunks, 64 tiles for
  // 132 SMs, and took 0.211 ms against WM 2's 0.145 (twenty-first session). WM 2's chunks are counted
  // with the bound's patch, as when the rule was measured: where only the exact span cut them
  // (conv3d 32 -> 32 k3 d2 on (1, 32, 64, 128, 128): 8 -> 4), WM 2 was 11 % slower than WM 4's 8.
  const bool more_chunks = epi == EPI_PHASES && b.bound_chunks > 1 && a.ci_chunk >= 8;
  const bool loses_pst = ok2 && b.pst && !a.pst;
  const int64_t units4 = a.ntiles * a.co_blocks * a.groups, units2 = b.ntiles * b.co_blocks * b.groups;
  const bool idles = ok2 && units4 < env.sms && units2 > units4;
  const int chunks2 = b.bound_chunks > 0 ? b.bound_chunks : b.nchunks;
  if (ok4 && !loses_pst && !idles &&
      (!ok2 || ((a.nchunks <= chunks2 || more_chunks) && a.tiles_per_plane * a.BM * 8 <= b.tiles_per_plane * b.BM * 9))) {
    p = a;
    return tc_plan_teams(p, split, epi, env);
  }
  if (ok2) {
    p = b;
    return tc_plan_teams(p, split, epi, env);
  }
  return 0;
}

// The statistics epilogue: all of C_out in one block; in math "tf32" 512 positions per block (WM 4)
// where that pads the planes' last tiles with no noticeably more rows: half the tiles, so half the
// per-tile staging, barriers and epilogues (L2-23: 88 tiles per sample of 11 k-steps each).
// VOLUA_TC_WM=2|4 forces one.
static inline int tc_plan_stats(Params &p, bool split, const Env &env) {
  const int wn = (int)tc_cdiv(p.C_out, 8);
  const char *force = getenv("VOLUA_TC_WM");
  const int want = force ? atoi(force) : 0;
  Params a = p;
  const int ok2 = tc_plan(p, wn, split, EPI_STATS, env);
  const int ok4 = !split && want != 2 && tc_plan(a, wn, split, EPI_STATS, env, 4);
  if (ok4 && (!ok2 || want == 4 || a.tiles_per_plane * a.BM * 8 <= p.tiles_per_plane * p.BM * 9)) {
    p = a;
    return tc_plan_teams(p, split, EPI_STATS, env);
  }
  return ok2 && tc_plan_teams(p, split, EPI_STATS, env);
}

// Split K (Params::ksplit): where a store plan has fewer (tile, channel block) units than the GPU
// holds blocks, each unit's channel chunks go to ksplit blocks, ksplit = the blocks per unit
// (at most the chunks, and 16), and the last part to finish adds the parts (tc_conv_kernel). One
// group, one team, one sub-GEMM, at least two chunks. (Deep layers on small volumes: 512 -> 512
// channels on 4 x 8 x 8 had 32 units for 132 SMs.) VOLUA_TC_KSPLIT=n forces n parts (1: none; for
// measuring, and for the emulator's few SMs).
static inline void tc_plan_ksplit(Params &p, bool split, const Env &env) {
  p.ksplit = 1;
  if (p.nsub != 1 || p.teams != 1 || p.groups != 1 || p.nchunks < 2 || (p.BN != 32 && p.BN != 64)) return;
  const char *v = getenv("VOLUA_TC_KSPLIT");
  int64_t parts;
  if (v && atoi(v) > 0) {
    parts = atoi(v);
  } else {
    const int64_t slots = tc_blocks_an_sm(EPI_STORE, split, p.WM, p.BN / 8, (int64_t)p.smem, env.smem_optin) * env.sms;
    parts = slots / (p.ntiles * p.co_blocks);
  }
  if (parts > p.nchunks) parts = p.nchunks;
  if (parts > 16) parts = 16;
  if (parts >= 2) p.ksplit = (int)parts;
}

// Split K's scratch (Params::ksplit > 1): each unit's parts' sums, then the units' counts, set in p.
// Returns it (for volua_cuda_free after the launch), or NULL with ksplit back to 1 where there is no
// memory for it (the same plan with K whole needs none) or no split.
static inline float *tc_ksplit_scratch(Params &p, char *err) {
  if (p.ksplit < 2) return NULL;
  float *ksws = NULL;
  const int64_t units = p.ntiles * p.co_blocks, nws = units * p.ksplit * p.BM * p.BN;
  if (volua_cuda_malloc(reinterpret_cast<void **>(&ksws), nws * 4 + units * 4, err)) {
    p.ksplit = 1;
    if (err) err[0] = '\0';
    return NULL;
  }
  p.ksws = ksws;
  p.done = reinterpret_cast<int *>(ksws + nws);
  p.ndone = units;
  return ksws;
}

static inline int tc_fast_disabled(void) {
  const char *s = getenv("VOLUA_FAST");
  return s && strcmp(s, "0") == 0;
}

} // namespace volua_tc

#endif
