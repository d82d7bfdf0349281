// conv_transpose3d_tc.cu: conv_transpose3d on tensor cores for any groups, phase by phase. Output o
// (per dim) receives input i through tap k when o = i*stride - padding + k*dilation; the outputs of
// one phase o = stride*q + c see a fixed set of taps (k*dilation = c + padding mod stride), an
// ordinary convolution over q that tc_core.cuh computes as an implicit GEMM. Phases with no taps
// (with stride 2 and dilation 2, every even o) are bias or zero: the whole output is set first where
// they are most of it, else a fill writes them after the GEMMs (and where W has a single live
// phase, the GEMM writes the dead columns of its rows itself: whole rows at once, EPI_WBOX).
// With strides of at most 2 and every phase live, all phases can run as one GEMM (EPI_PHASES,
// below); with stride 2 along W, a (D, H) phase's two W phases as one launch (Params::nsub).
#include "tc_core.cuh"

using namespace volua_tc;

// Fills dst[0, len) with v, by the threads tid < nth: scalar stores up to a 16-byte boundary,
// then 16-byte stores, then the scalar tail (one store instruction then moves 512 bytes, not 128:
// stores of 4 bytes ran this kernel at a third of the copy bandwidth).
TC_DEVICE void tc_fill_run(float *dst, int64_t len, float v, int tid, int nth) {
  int64_t head = (int64_t)((16 - ((uintptr_t)dst & 15)) & 15) / 4;
  if (head > len) head = len;
  if (tid < head) dst[tid] = v;
  float4 *body = reinterpret_cast<float4 *>(dst + head);
  const int64_t n4 = (len - head) / 4;
  const float4 v4 = make_float4(v, v, v, v);
  for (int64_t i = tid; i < n4; i += nth) body[i] = v4;
  const int64_t done = head + 4 * n4;
  if (tid < len - done) dst[done + tid] = v;
}

// Transposed convolution: bias (or 0) at every output no phase GEMM writes. Block (x, y) takes the
// (n, co, od) planes of OH x OW outputs with od = x, x + gridDim.x, ... and n * C_out + co = y,
// y + gridDim.y, ... (no division per plane but one modulo for co). A plane whose od phase has
// no taps is dead and written whole, contiguously; in a live plane a row (oh) whose phase has no
// taps is dead, and in a live row the columns whose phase has none are dead too, unless the GEMM
// wrote whole rows (EPI_WBOX: skip_live_rows). Strides are at most 64: phases are ints, advanced
// by additions.
TC_GLOBAL void tc_fill_kernel(float *y, const float *bias, int64_t NC, int64_t C_out, int64_t OD,
                              int64_t OH, int64_t OW, int sd, int sh, int sw, unsigned long long live_d,
                              unsigned long long live_h, unsigned long long live_w, int skip_live_rows) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int64_t plane_size = OH * OW;
  for (int64_t nc = blockIdx.y; nc < NC; nc += gridDim.y) {
    const float v = bias ? __ldg(bias + nc % C_out) : 0.0f;
    for (int64_t od = blockIdx.x; od < OD; od += gridDim.x) {
      float *plane = y + (nc * OD + od) * plane_size;
      if (!((live_d >> (int)(od % sd)) & 1)) {
        tc_fill_run(plane, plane_size, v, threadIdx.x, blockDim.x);
        continue;
      }
      int hph = warp % sh; // the phase of row oh
      const int hstep = nwarps % sh;
      for (int64_t oh = warp; oh < OH; oh += nwarps) {
        const bool live = (live_h >> hph) & 1;
        hph += hstep;
        if (hph >= sh) hph -= sh;
        if (live && skip_live_rows) continue;
        float *row = plane + oh * OW;
        if (!live) {
          tc_fill_run(row, OW, v, lane, 32);
        } else {
          int c = lane % sw; // the phase of column ow, kept as ow advances by 32
          const int step = 32 % sw;
          for (int64_t ow = lane; ow < OW; ow += 32) {
            if (!((live_w >> c) & 1)) row[ow] = v;
            c += step;
            if (c >= sw) c -= sw;
          }
        }
      }
    }
  }
}

// Every output of (n, co) volume nc = blockIdx.y, blockIdx.y + gridDim.y, ... set to bias[co], the
// volume cut in gridDim.x pieces: the whole output before the GEMMs, where most of it is dead and
// there is a bias (without one, a memset does it).
TC_GLOBAL void tc_fill_all_kernel(float *y, const float *bias, int64_t NC, int64_t C_out, int64_t vol) {
  const int64_t per = (vol + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per, hi = lo + per < vol ? lo + per : vol;
  for (int64_t nc = blockIdx.y; nc < NC; nc += gridDim.y)
    if (lo < hi) tc_fill_run(y + nc * vol + lo, hi - lo, __ldg(bias + nc % C_out), threadIdx.x, blockDim.x);
}

// One phase c of one dim: its output count Q, its taps (from kfirst down by kstep) and where they
// read: i = q - ipad + j*idil (fast.h: conv3d_cl.cu reads them too).
typedef volua_tconv_phase phase;

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static void phase_of(int64_t out, int64_t kernel, int64_t stride, int64_t pad, int64_t dil, int64_t c, phase *ph) {
  memset(ph, 0, sizeof *ph);
  ph->Q = c < out ? (out - c + stride - 1) / stride : 0;
  int64_t kmax = -1;
  for (int64_t k = kernel - 1; k >= 0; k--)
    if (((c + pad - k * dil) % stride + stride) % stride == 0) {
      if (kmax < 0) kmax = k;
      ph->taps++;
    }
  ph->live = ph->taps > 0 && ph->Q > 0;
  if (!ph->live) return;
  const int64_t gg = gcd64(stride, dil);
  ph->kfirst = kmax;
  ph->kstep = -(stride / gg);
  ph->ipad = -((c + pad - kmax * dil) / stride); /* exact: stride divides it */
  ph->idil = dil / gg;
}

#define MAX_PHASES 512

// -- every phase in one GEMM (EPI_PHASES): strides of at most 2, every phase live, at most 128 (256)
// columns (channels of a group times phases) ----
// Per dim, phase c reads i = q - ipad_c + j (j < taps_c; idil 1); over the common grid q with
// ipad = max ipad_c that is union tap u = cofs_c + j, cofs_c = ipad - ipad_c, of U = max (cofs_c +
// taps_c) union taps. K is (input channel, union taps), columns (co, phase): the weight of a
// union tap a phase does not have is 0. Stride 2 with kernel 2 has U 1 (the phases read the same
// input: no zeros); kernel 3 has U 2 (27 of 64 weights nonzero).
struct PhaseMap {
  const float *w;
  int64_t w_g, w_co, w_ci, kdim[3];
  int64_t cofs[3][2], taps[3][2], kfirst[3][2], kstep[3][2];
  // Where some phase lacks a union tap, its zero weights meet every input, and an infinite or NaN
  // input times 0 is NaN: outputs that input does not reach would be NaN. So the preparation also
  // scans the input (scan_n floats at scan_x, NULL: none) and writes `stamp` (this call's number) to
  // *flag where it finds a value that is not finite; the direct gather then redoes the output,
  // gated on the device by *flag == stamp (volua_cuda_conv_transpose3d_redo).
  const float *scan_x;
  int64_t scan_n;
  int *flag;
  int stamp;
};

// Whether any of 4 values is infinite or NaN, without branches.
TC_DEVICE unsigned tc_nonfinite4(float a, float b, float c, float d) {
  return (unsigned)!(fabsf(a) < INFINITY) | (unsigned)!(fabsf(b) < INFINITY) | (unsigned)!(fabsf(c) < INFINITY) |
         (unsigned)!(fabsf(d) < INFINITY);
}

TC_GLOBAL void tc_prep_phases_kernel(PhaseMap m, Params p, float *out, int64_t total) {
  tc_grid_launch_dependents(); // the GEMM may start its set-up (it waits for this kernel's end)
  if (m.scan_x) { // 16-byte loads where the input allows (p.vec4 implies its alignment), then the tail
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, nth = (int64_t)blockDim.x * gridDim.x;
    const int64_t n4 = ((uintptr_t)m.scan_x % 16) == 0 ? m.scan_n / 4 : 0;
    unsigned bad = 0;
#pragma unroll 4
    for (int64_t i = tid; i < n4; i += nth) {
      const float4 v = __ldg(reinterpret_cast<const float4 *>(m.scan_x) + i);
      bad |= tc_nonfinite4(v.x, v.y, v.z, v.w);
    }
    for (int64_t i = 4 * n4 + tid; i < m.scan_n; i += nth) bad |= tc_nonfinite4(__ldg(m.scan_x + i), 0.0f, 0.0f, 0.0f);
    if (bad) *m.flag = m.stamp;
  }
  // the table: per (K index, phase), the offset of that phase's weight (-1 where the phase lacks
  // the union tap); the columns are (co, phase), nph of them a channel
  const int nph = p.nph, sh = nph == 8 ? 3 : nph == 4 ? 2 : nph == 2 ? 1 : 0;
  tc_prep_steps(
      p, m.w, m.w_co, out, total, nph,
      [&](const PrepStep &st, int t) -> int64_t {
        const int kin = t / nph, ph = t - kin * nph;
        int64_t ci, u[3]; // u: the union tap
        if (!tc_prep_k(p, st, kin, &ci, u)) return -1;
        const int pc[3] = {ph / (p.phs1 * p.phs2), (ph / p.phs2) % p.phs1, ph % p.phs2};
        int64_t kk[3];
        for (int d = 0; d < 3; d++) {
          const int64_t j = u[d] - m.cofs[d][pc[d]];
          if (j < 0 || j >= m.taps[d][pc[d]]) return -1;
          kk[d] = m.kfirst[d][pc[d]] + j * m.kstep[d][pc[d]];
        }
        return st.grp * m.w_g + ci * m.w_ci + (kk[0] * m.kdim[1] + kk[1]) * m.kdim[2] + kk[2];
      },
      [&](int64_t col, int64_t *co, int *q) { // (nph divides 8: a shift)
        *co = col >> sh;
        *q = (int)(col & (nph - 1));
      });
}

// The every-phase weights, kept across calls (tc_prep_kept; the input scan still runs every call
// where m asks for it). Besides the plan's sizes the preparation reads m's phase tables, which
// phase_of derives from each dim's kernel, stride (nph, phs1, phs2), padding and dilation: those
// stand for them in the recipe (every phase is live on this path, so the output's size does not
// enter).
static int tc_prep_phases(const Params &p, const PhaseMap &m, const volua_conv_transpose3d_geom *g, float **out,
                          tc_stream s, const char *op, char *err, int64_t min_threads) {
  const int64_t recipe[] = {2, p.ksteps, p.nchunks, p.co_blocks, p.wg, p.BN, p.E, p.taps[0], p.taps[1], p.taps[2],
                            p.ci_chunk, p.C_in, p.C_out, p.groups, p.w_floats, p.nph, p.phs1, p.phs2,
                            m.w_co, m.w_ci, m.w_g, m.kdim[0], m.kdim[1], m.kdim[2],
                            g->padding[0], g->padding[1], g->padding[2], g->dilation[0], g->dilation[1], g->dilation[2]};
  return tc_prep_kept(tc_prep_phases_kernel, p, m, m.w, recipe, (int)(sizeof recipe / sizeof *recipe),
                      m.scan_x != NULL, min_threads, out, s, op, err);
}

extern "C" int volua_cuda_conv_transpose3d_tc(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                              const float *b, float *y, volua_math_mode math, cudaStream_t s,
                                              char *err) {
  const char *op = "conv_transpose3d";
  if (tc_fast_disabled() || g->groups < 1) return VOLUA_FAST_NOT_APPLICABLE;
  if (g->N <= 0 || g->C_in <= 0 || g->C_out <= 0 || g->out[0] <= 0 || g->out[1] <= 0 || g->out[2] <= 0)
    return VOLUA_FAST_NOT_APPLICABLE;
  for (int d = 0; d < 3; d++)
    if (g->stride[d] < 1 || g->stride[d] > 64 || g->dilation[d] < 1) return VOLUA_FAST_NOT_APPLICABLE;
  Env env;
  if (tc_get_env(&env, op, err)) return 1;

  // -- phases per dim ----
  static phase ph[3][64];
  unsigned long long live[3] = {0, 0, 0};
  int nlive[3] = {0, 0, 0}, dead[3] = {0, 0, 0};
  for (int d = 0; d < 3; d++)
    for (int64_t c = 0; c < g->stride[d]; c++) {
      phase_of(g->out[d], g->kernel[d], g->stride[d], g->padding[d], g->dilation[d], c, &ph[d][c]);
      if (ph[d][c].live) {
        live[d] |= 1ull << c;
        nlive[d]++;
      } else if (ph[d][c].Q > 0) {
        dead[d] = 1;
      }
    }
  if ((int64_t)nlive[0] * nlive[1] * nlive[2] > MAX_PHASES) return VOLUA_FAST_NOT_APPLICABLE;

  // -- deep layers: every phase in one launch on the channels-last path (conv3d_cl.cu),
  // where its rule takes them ----
  {
    const int cl = volua_cuda_conv_transpose3d_cl(g, ph, x, w, b, y, math, s, err);
    if (cl != VOLUA_FAST_NOT_APPLICABLE) return cl;
  }

  // -- every phase in one GEMM, where it applies and fits (VOLUA_TC_PHASES=0: phase by phase; =1: also
  // at 129 to 1024 columns in math "fp32" with padded K) ----
  {
    const char *pe = getenv("VOLUA_TC_PHASES");
    int ok = !(pe && strcmp(pe, "0") == 0);
    int nph = 1;
    for (int d = 0; d < 3; d++) {
      ok = ok && g->stride[d] <= 2 && nlive[d] == g->stride[d] && ph[d][0].idil == 1;
      nph *= (int)g->stride[d];
    }
    // Measured on the H200 (bench/NOTES.md): one GEMM gains where a group's columns (C_out / groups
    // times the phases) are at most 128 (k2 s2 and k3 s2 with 16 channels, L1-72, groups 4 with 8
    // channels: 1.2x to 2x). At 256 columns (four shapes with 32 channels, L1-73 among them, with
    // TMA patches and the epilogue of offsets per (e, i, h)) it gains in math "tf32" (7-20 %, one
    // even) and where no phase lacks a union tap (k2 s2: 30-44 %), and loses in math "fp32" where
    // K is padded with the taps a phase lacks (k3 s2: 2.4x the products, three times each: 35-45 %
    // slower). From 257 to 1024 columns (ninth session: k3 s2 with 64 and 128 channels, k5 s2 with
    // 64): it gains in math "tf32" (L2-100-like 64 -> 128 channels 8 %, 32 -> 64 channels 4 %, a
    // small 128 -> 64 channels 3.5x; k5 s2 loses 2 %), and in math "fp32" it loses 13-38 % but where
    // the phase-by-phase launches would leave SMs idle (fewer tiles than SMs: the small 128 -> 64
    // channels, 2.9x faster). Beyond 1024 columns: not measured, phase by phase.
    const int64_t cols = g->C_out / g->groups * nph;
    ok = ok && cols <= 1024;
    if (ok && nph >= 2) {
      Params p;
      memset(&p, 0, sizeof p);
      PhaseMap m;
      memset(&m, 0, sizeof m);
      const int64_t kvol = g->kernel[0] * g->kernel[1] * g->kernel[2];
      p.x = x;
      p.bias = b;
      p.y = y;
      p.N = g->N;
      p.groups = g->groups;
      p.C_in = g->C_in / g->groups;
      p.C_out = g->C_out / g->groups;
      p.nph = nph;
      p.phs1 = (int)g->stride[1];
      p.phs2 = (int)g->stride[2];
      m.w = w;
      m.w_co = kvol; /* weight (C_in, C_out / groups, kD, kH, kW) */
      m.w_ci = p.C_out * kvol;
      m.w_g = p.C_in * m.w_ci;
      for (int d = 0; d < 3; d++) {
        int64_t Q = 0, ipad = ph[d][0].ipad, U = 0;
        for (int64_t c = 0; c < g->stride[d]; c++) {
          if (ph[d][c].Q > Q) Q = ph[d][c].Q;
          if (ph[d][c].ipad > ipad) ipad = ph[d][c].ipad;
        }
        for (int64_t c = 0; c < g->stride[d]; c++) {
          m.cofs[d][c] = ipad - ph[d][c].ipad;
          m.taps[d][c] = ph[d][c].taps;
          m.kfirst[d][c] = ph[d][c].kfirst;
          m.kstep[d][c] = ph[d][c].kstep;
          if (m.cofs[d][c] + ph[d][c].taps > U) U = m.cofs[d][c] + ph[d][c].taps;
        }
        m.kdim[d] = g->kernel[d];
        p.in[d] = g->in[d];
        p.Q[d] = Q;
        p.istride[d] = 1;
        p.ipad[d] = ipad;
        p.idil[d] = 1;
        p.taps[d] = U;
        p.out[d] = g->out[d];
        p.ostep[d] = g->stride[d];
      }
      int dense = 1; // every phase has every union tap (K is not padded)
      for (int d = 0; d < 3; d++)
        for (int64_t c = 0; c < g->stride[d]; c++) dense = dense && m.taps[d][c] == p.taps[d];
      // a phase's tiles of 256 positions times its channel blocks of 64 (the phase-by-phase plan):
      // fewer than the SMs, and a launch per phase leaves most of the GPU idle
      const int64_t few = (p.N * p.groups * p.Q[0] * p.Q[1] * p.Q[2] + 255) / 256 * ((p.C_out + 63) / 64) < env.sms;
      const int forced = pe && strcmp(pe, "1") == 0; // (measuring)
      const int wide_ok = math != VOLUA_MATH_FP32 || dense || few || forced;
      const int cols_ok = cols <= 256 || math != VOLUA_MATH_FP32 || few || forced;
      // K padded over 3 times (the union taps against a phase's on average: k4 s2 p1 has 27 against
      // 8) only up to 128 columns: measured (H200, seventeenth session) at 256 columns, 64 -> 32 k4 s2
      // p1 of (2, 64, 16, 32, 32), one GEMM 0.155 / 0.283 ms (tf32 / fp32) against 0.146 / 0.192 phase
      // by phase, and at 512 columns 128 -> 64 0.537 against 0.301 in tf32; at 128 columns (32 -> 16)
      // one GEMM 0.316 against 0.422 in tf32, even in fp32. (k3 s2 pads 2.4 times, k5 s2 1.7.)
      double kph = 1.0; // K of a phase, on average (the union's: p.taps)
      for (int d = 0; d < 3; d++) {
        double sum = 0.0;
        for (int64_t c = 0; c < g->stride[d]; c++) sum += (double)m.taps[d][c];
        kph *= sum / (double)g->stride[d];
      }
      const int padded_ok = cols <= 128 || forced || (double)(p.taps[0] * p.taps[1] * p.taps[2]) <= 3.0 * kph;
      if ((cols <= 128 || wide_ok) && cols_ok && padded_ok && tc_plan_store(p, math == VOLUA_MATH_FP32, EPI_PHASES, env)) {
        // Where a phase lacks a union tap, its zero weights meet every input: an infinite or NaN
        // input would make NaN of outputs it does not reach. The weight preparation then also scans
        // the input and stamps a device flag where a value is not finite, and the direct gather
        // redoes the output, gated on the device by the flag (PhaseMap). The flag is one int kept
        // for the process, cleared once; each call writes its own stamp.
        static int *flag = NULL;
        static int stamp = 0;
        const int64_t xn = g->N * g->C_in * g->in[0] * g->in[1] * g->in[2];
        if (!dense) {
          if (!flag) {
            if (volua_cuda_malloc(reinterpret_cast<void **>(&flag), sizeof(int), err)) return 1;
            if (tc_memset_async(flag, 0, sizeof(int), s) != 0) {
              volua_cuda_free(flag);
              flag = NULL;
              snprintf(err, VOLUA_ERR_MAX, "%s: could not clear the non-finite flag", op);
              return 1;
            }
          }
          stamp = stamp == INT32_MAX ? 1 : stamp + 1;
          m.scan_x = x;
          m.scan_n = xn;
          m.flag = flag;
          m.stamp = stamp;
        }
        float *wprep = NULL;
        if (tc_prep_phases(p, m, g, &wprep, s, op, err, dense ? 0 : xn / 16)) return 1;
        p.wprep = wprep;
        // every output is one of the GEMM's (every phase live): it takes the epilogue where a fused
        // kernel exists (tc_launch_epi: one group)
        if (p.groups == 1 && tc_epi_worth(p)) volua_cuda_epilogue_take(&p.epi, g->C_out, g->out[0] * g->out[1] * g->out[2]);
        int rc = tc_launch_phases(p, env, s, op, err);
        tc_weights_free(wprep);
        if (rc == 0 && !dense) rc = volua_cuda_conv_transpose3d_redo(g, x, w, b, y, math, flag, stamp, s, err);
        if (rc == 0 && !dense) rc = volua_cuda_epilogue_redo(g->N * g->C_out * g->out[0] * g->out[1] * g->out[2], y, flag,
                                                             stamp, s, err);
        if (rc == 0) volua_cuda_fast_note_call();
        return rc;
      }
    }
  }

  // -- the outputs no tap reaches: set first, or filled after ----
  // Where they are at least half of the output (L1-77: 76 %), every output is set first (a memset,
  // or bias by contiguous runs) and the GEMMs store only the live ones: writing the live outputs
  // twice costs less than writing the dead ones where they interleave with live rows (partial
  // sectors). H200, L1-77 fp32: GEMM with whole-row stores + fill after 1.089 ms; memset + the same
  // GEMM 0.941; memset + GEMM storing live outputs only 0.757. Else a fill kernel writes the dead
  // outputs after the GEMMs, and where W has one live phase and dead ones the GEMM writes its rows
  // whole (the dead columns too: EPI_WBOX), leaving the fill whole rows and planes. (With no dead
  // columns, stride 1 along W, EPI_WBOX only walked empty column ranges: 11-18 % of L1-61's and
  // L1-68's tf32 samples.) VOLUA_TC_FILL=first|after forces either (for measuring).
  int64_t live_out = 1;
  for (int d = 0; d < 3; d++) {
    int64_t n = 0;
    for (int64_t c = 0; c < g->stride[d]; c++)
      if (ph[d][c].live) n += ph[d][c].Q;
    live_out *= n;
  }
  const int64_t all_out = g->out[0] * g->out[1] * g->out[2];
  const int any_dead = dead[0] || dead[1] || dead[2];
  const char *force = getenv("VOLUA_TC_FILL");
  int fill_first = any_dead && 2 * live_out <= all_out;
  if (any_dead && force && strcmp(force, "first") == 0) fill_first = 1;
  if (any_dead && force && strcmp(force, "after") == 0) fill_first = 0;
  const int wbox = !fill_first && nlive[2] == 1 && dead[2]; // (stride 1: no dead columns, the plain store)
  const int epi = wbox ? EPI_WBOX : EPI_STORE;
  const int need_fill = !fill_first && (dead[0] || dead[1] || (!wbox && dead[2]));

  // -- plan every live phase before launching anything (a phase that does not fit: not applicable) ----
  // With stride 2 along W and both W phases live, a (cd, ch) pair of phases is one launch of two
  // sub-GEMMs over a shared grid and patch (tc_core.cuh, Params::nsub), so that each output row's
  // sectors are written whole by one block: as two launches every sector was written half, then
  // read back from DRAM to be completed (KernelBench L1-73: 400 MB read, 260 MB written per phase
  // for 130 MB of outputs). Where the pair does not fit shared memory, its phases run one by one.
  // VOLUA_TC_WPAIR=0 runs every phase on its own (for measuring).
  const char *wpair_env = getenv("VOLUA_TC_WPAIR");
  const int wpair = g->stride[2] == 2 && nlive[2] == 2 && epi == EPI_STORE && !(wpair_env && strcmp(wpair_env, "0") == 0);
  static Params plans[MAX_PHASES];
  static WeightMap maps[MAX_PHASES][2];
  int nplans = 0;
  const int64_t kvol = g->kernel[0] * g->kernel[1] * g->kernel[2];
  for (int64_t cd = 0; cd < g->stride[0]; cd++)
    for (int64_t ch = 0; ch < g->stride[1]; ch++)
      for (int64_t cw = 0; cw < g->stride[2]; cw++) {
        const phase *f[3] = {&ph[0][cd], &ph[1][ch], &ph[2][cw]};
        if (!f[0]->live || !f[1]->live || !f[2]->live) continue;
        const int64_t c3[3] = {cd, ch, cw};
        Params &p = plans[nplans];
        memset(&p, 0, sizeof p);
        p.x = x;
        p.bias = b;
        p.y = y;
        p.N = g->N;
        p.groups = g->groups;
        p.C_in = g->C_in / g->groups; /* one group's channels */
        p.C_out = g->C_out / g->groups;
        WeightMap &m = maps[nplans][0];
        m.w = w;
        m.w_co = kvol; /* weight (C_in, C_out / groups, kD, kH, kW): group g's rows g * C_in / groups on */
        m.w_ci = p.C_out * kvol;
        m.w_g = p.C_in * m.w_ci;
        for (int d = 0; d < 3; d++) {
          p.in[d] = g->in[d];
          p.Q[d] = f[d]->Q;
          p.istride[d] = 1;
          p.ipad[d] = f[d]->ipad;
          p.idil[d] = f[d]->idil;
          p.taps[d] = f[d]->taps;
          p.out[d] = g->out[d];
          p.ostep[d] = g->stride[d];
          p.oofs[d] = c3[d];
          m.kdim[d] = g->kernel[d];
          m.kfirst[d] = f[d]->kfirst;
          m.kstep[d] = f[d]->kstep;
        }
        if (wpair && cw == 0) { // both W phases in one launch, where they fit
          const phase *w0 = &ph[2][0], *w1 = &ph[2][1];
          Params q = p;
          q.nsub = 2;
          q.Q[2] = w0->Q > w1->Q ? w0->Q : w1->Q;
          q.ipad[2] = w0->ipad > w1->ipad ? w0->ipad : w1->ipad;
          q.taps[2] = w0->taps > w1->taps ? w0->taps : w1->taps;
          q.oofs[2] = 0;
          int64_t span = 0;
          for (int sb = 0; sb < 2; sb++) {
            const phase *fw = sb ? w1 : w0;
            q.sub_taps2[sb] = fw->taps;
            q.sub_oofs2[sb] = sb;
            q.sub_Q2[sb] = fw->Q;
            q.sub_cofs[sb] = (int)(q.ipad[2] - fw->ipad);
            const int64_t e = q.sub_cofs[sb] + (fw->taps - 1) * fw->idil + 1;
            if (e > span) span = e;
          }
          q.wspan = span;
          // (not where the pair's tiles would fill a quarter of the SMs at most and K comes in chunks:
          // then each phase on its own, with K split across blocks, below. Measured on the H200: 512 ->
          // 256 k4 s2 p1 of (1, 512, 4, 8, 8), 4 units a pair, fp32 1.30 -> 0.415 ms; 64 -> 32 of (2, 64,
          // 16, 32, 32), 64 units a pair, lost with its phases split in 2: 0.146 -> 0.172 in tf32)
          if (tc_plan_store(q, math == VOLUA_MATH_FP32, EPI_STORE, env) &&
              !(q.nchunks >= 2 && 4 * q.ntiles * q.co_blocks <= env.sms)) {
            p = q;
            maps[nplans][1] = m;
            maps[nplans][1].kfirst[2] = w1->kfirst;
            maps[nplans][1].kstep[2] = w1->kstep;
            maps[nplans][0].kfirst[2] = w0->kfirst;
            maps[nplans][0].kstep[2] = w0->kstep;
            nplans++;
            cw++; // phase 1 is the pair's second sub-GEMM
            continue;
          }
        }
        if (!tc_plan_store(p, math == VOLUA_MATH_FP32, epi, env)) return VOLUA_FAST_NOT_APPLICABLE;
        // K split across blocks where the phase's tiles leave SMs idle (tc_plan_ksplit's rule, as
        // conv3d_tc.cu's): deep layers on small volumes, whose phases have a few tiles each (512 ->
        // 256 k4 s2 p1 of (1, 512, 4, 8, 8) in math "fp32": 4 blocks a phase launch before)
        if (epi == EPI_STORE) tc_plan_ksplit(p, math == VOLUA_MATH_FP32, env);
        nplans++;
      }

  // -- the epilogue: where the GEMMs' stores write every output (nothing set first or filled after,
  // no dead columns) and a fused kernel exists for each plan (tc_launch_epi: one group, K whole),
  // each launch applies the same first steps ----
  bool fusable = !fill_first && !need_fill && epi == EPI_STORE && nplans > 0;
  for (int i = 0; i < nplans; i++) fusable = fusable && plans[i].groups == 1 && plans[i].ksplit <= 1 && tc_epi_worth(plans[i]);
  if (fusable && volua_cuda_epilogue_take(&plans[0].epi, g->C_out, all_out))
    for (int i = 1; i < nplans; i++) plans[i].epi = plans[0].epi;

  // -- the outputs set first, the phases' GEMMs, or the GEMMs and the fill ----
  if (fill_first) {
    const int64_t NC = g->N * g->C_out;
    if (!b) {
      TC_CHECK(tc_memset_async(y, 0, (size_t)(NC * all_out) * sizeof(float), s));
    } else {
      const unsigned gy = (unsigned)(NC < 65535 ? NC : 65535), gx = all_out >= 65536 ? 16 : 1;
      TC_LAUNCH(tc_fill_all_kernel, tc_dim3(gx, gy), 256, 0, s, y, b, NC, g->C_out, all_out);
      TC_CHECK_LAUNCH();
    }
  }
  for (int i = 0; i < nplans; i++) {
    Params &p = plans[i];
    if (p.nsub == 2) { // each sub-GEMM's weights, prepared as a plain phase's
      float *wp2[2] = {NULL, NULL};
      for (int sb = 0; sb < 2; sb++) {
        Params q = p;
        q.nsub = 1;
        q.taps[2] = p.sub_taps2[sb];
        q.ksteps = p.sub_ksteps[sb];
        q.w_floats = p.sub_w_floats[sb];
        if (tc_prep_weights(q, maps[i][sb], &wp2[sb], s, op, err)) {
          tc_weights_free(wp2[0]);
          return 1;
        }
        p.sub_wprep[sb] = wp2[sb];
      }
      p.wprep = wp2[0];
      const int rc = tc_launch_store2(p, env, s, op, err);
      tc_weights_free(wp2[0]);
      tc_weights_free(wp2[1]);
      if (rc) return rc;
      continue;
    }
    float *ksws = tc_ksplit_scratch(p, err); // split K: the parts' sums, then the units' counts
    float *wprep = NULL;
    if (tc_prep_weights(p, maps[i][0], &wprep, s, op, err)) {
      volua_cuda_free(ksws);
      return 1;
    }
    p.wprep = wprep;
    const int rc = p.ksplit > 1 ? tc_launch_ksplit(p, env, s, op, err) : tc_launch_store(p, env, epi, s, op, err);
    tc_weights_free(wprep);
    volua_cuda_free(ksws);
    if (rc) return rc;
  }
  if (need_fill) {
    const int64_t NC = g->N * g->C_out;
    const unsigned gx = (unsigned)(g->out[0] < 65535 ? g->out[0] : 65535);
    const unsigned gy = (unsigned)(NC < 65535 ? NC : 65535);
    TC_LAUNCH(tc_fill_kernel, tc_dim3(gx, gy), 256, 0, s, y, b, NC, g->C_out, g->out[0], g->out[1], g->out[2],
              (int)g->stride[0], (int)g->stride[1], (int)g->stride[2], live[0], live[1], live[2], wbox);
    TC_CHECK_LAUNCH();
  }
  volua_cuda_fast_note_call();
  return 0;
}
