// conv3d_tc.cu: conv3d on tensor cores (the implicit GEMM of tc_core.cuh) for padding_mode
// "zeros", any groups, stride, dilation and padding; also the fast-path call counter.
#include "tc_core.cuh"

using namespace volua_tc;

// -- the counter of served calls (calls come from the one thread that runs Lua) ----

static int64_t fast_calls = 0;
extern "C" int64_t volua_cuda_fast_calls(void) { return fast_calls; }
extern "C" void volua_cuda_fast_note_call(void) { fast_calls++; }
extern "C" int volua_cuda_fast_disabled(void) { return tc_fast_disabled(); }

// -- the split-TF32 GEMMs' non-finite flag (fast.h) ----

static int *nf_flag = NULL, nf_stamp = 0, nf_open = 0, nf_used = 0;
extern "C" int volua_cuda_nf_begin(cudaStream_t s, char *err) {
  if (!nf_flag) {
    int *f = NULL;
    if (volua_cuda_malloc(reinterpret_cast<void **>(&f), sizeof(int), err)) return 1;
    if (tc_memset_async(f, 0, sizeof(int), s) != 0) {
      volua_cuda_free(f);
      snprintf(err, VOLUA_ERR_MAX, "conv: could not clear the non-finite flag");
      return 1;
    }
    nf_flag = f;
  }
  nf_stamp = nf_stamp == INT32_MAX ? 1 : nf_stamp + 1; // (never 0, the flag's first value)
  nf_open = 1;
  nf_used = 0;
  return 0;
}
extern "C" void volua_cuda_nf_get(int **flag, int *stamp) {
  *flag = nf_open ? nf_flag : NULL;
  *stamp = nf_stamp;
  nf_used |= nf_open;
}
extern "C" int volua_cuda_nf_end(int **flag, int *stamp) {
  nf_open = 0;
  *flag = nf_flag;
  *stamp = nf_stamp;
  return nf_used;
}

// -- conv3d as the GEMM: q = output position, i = q*stride - pad_lo + j*dilation ----

static void conv3d_params(const volua_conv3d_geom *g, Params &p) {
  p.N = g->N;
  p.groups = g->groups;
  p.C_in = g->C_in / g->groups; // one group's channels
  p.C_out = g->C_out / g->groups;
  for (int d = 0; d < 3; d++) {
    p.in[d] = g->in[d];
    p.Q[d] = g->out[d];
    p.istride[d] = g->stride[d];
    p.ipad[d] = g->pad_lo[d];
    p.idil[d] = g->dilation[d];
    p.taps[d] = g->kernel[d];
    p.out[d] = g->out[d];
    p.ostep[d] = 1;
    p.oofs[d] = 0;
  }
}

// conv3d's weight (C_out, C_in / groups, kD, kH, kW) walked tap by tap; group g's output channels
// are rows g * C_out / groups on.
static WeightMap conv3d_weights(const volua_conv3d_geom *g, const float *w) {
  WeightMap m;
  const int64_t kvol = g->kernel[0] * g->kernel[1] * g->kernel[2];
  m.w = w;
  m.w_co = g->C_in / g->groups * kvol;
  m.w_ci = kvol;
  m.w_g = g->C_out / g->groups * m.w_co;
  for (int d = 0; d < 3; d++) {
    m.kdim[d] = g->kernel[d];
    m.kfirst[d] = 0;
    m.kstep[d] = 1;
  }
  return m;
}

// -- the W-interleaved plan (math "tf32", kW 7, stride and dilation 1 along W) ----
//
// Why: the plain k-loop (tc_core.cuh, tc_compute_wg) loads every A fragment by LDS, 16 a k-step for
// 4 products, and with B read by the tensor core that fills the SM's shared-memory bandwidth
// (bench/NOTES.md, thirtieth session: with half of those loads, results aside, L1-60 took 10 % less
// time). This kernel loads 12 (16-byte) a k-step of K' for 28 products.
// Here a warpgroup's four m64 tiles i = 0..3 hold the output columns 4c + i of the same (row, c)
// pairs, so that tile i at tap kw reads the same patch values as tile 0 at tap i + kw: K is
// ordered (kw, then K' = (input channel, kd, kh) in kks k-steps of 8), and a k-step of K' needs
// the fragments F[e], e = 0..KW + 2, for all KW x 4 products (10 fragments for 28 products at kW
// 7, against 28 fragments before). A thread's F[0..3] (and F[4..7], F[8..9]) for one row and one
// k are four consecutive patch floats: one 16-byte LDS (the pitches are multiples of 4 floats, the
// rows' columns 4c too). The patch rows are pitched 8 or 24 banks mod 32, so that a quarter warp's
// 16-byte loads (rows c, c + 1, four kh apart) meet no bank twice.
// The values of a thread are then 4 consecutive columns of each of its rows and channels. Stored
// as they are (8-byte stores half-filling each sector, twice) they cost L1-60 0.3 ms; the epilogue
// passes them through a stage per warp instead, so that each store writes 64 consecutive floats of
// one channel (thirtieth session, bench/NOTES.md).
// Tiles: 128 consecutive (row, c) pairs of one (n, qd) plane (8 warps of 16, two warpgroups), or
// with two teams 64 pairs a warpgroup (tc_plan_kw); the pairs' columns past Q2 are computed and not
// stored. One block an SM, weights staged once, two patch buffers a team by TMA. No block barrier
// in the tile loop: a warp that has done its products arrives on its buffer's "free" mbarrier, and
// the team's first thread stages the tile after next there once all have, after its own epilogue.
// A warp's epilogue stage: 8 channels of 64 floats, each 68 apart (16-byte stores of a quarter warp
// then meet 8 different bank groups).
#define TC_KW_STAGE_PITCH 68
#define TC_KW_STAGE_BYTES (TC_WARPS * 8 * TC_KW_STAGE_PITCH * 4)
// One tile's products. ro[h]: byte offsets of the thread's rows g and g + 8 (column 4c) in the
// patch buffer at P0; ko: the K' table (as tc_compute_wg's, one step more); Wb: the weights, kks
// k-steps per kw.
template <int WN, int KW>
TC_DEVICE void tc_kw_compute(int kks, const char *__restrict__ P0, const int (&ro)[2], const float *Wb,
                             const int2 *__restrict__ ko, float (&acc)[4][WN][4]) {
  constexpr int NF = KW + 3; // fragments a k-step
  constexpr unsigned step = WN * 32 * 2 * 4; // bytes of one k-step's weights
  const int t = threadIdx.x & 3;
  const unsigned kwstep = (unsigned)kks * step;
  const tc_wg_ref w0 = tc_wg_make(Wb);
  uint32_t F[NF][4];
  int2 kk = ko[t], kn = ko[4 + t];
  // F[e0 .. e0 + n - 1] of the current step: per fragment register r, row h = r & 1, k = t (r < 2) or t + 4
  auto load = [&](int e0, int n) {
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const char *a = P0 + ro[r & 1] + (r < 2 ? kk.x : kk.y) + 4 * e0;
      if (n == 4) {
        const float4 v = *reinterpret_cast<const float4 *>(a);
        F[e0][r] = __float_as_uint(v.x), F[e0 + 1][r] = __float_as_uint(v.y);
        F[e0 + 2][r] = __float_as_uint(v.z), F[e0 + 3][r] = __float_as_uint(v.w);
      } else if (n == 2) {
        const float2 v = *reinterpret_cast<const float2 *>(a);
        F[e0][r] = __float_as_uint(v.x), F[e0 + 1][r] = __float_as_uint(v.y);
      } else {
        F[e0][r] = __float_as_uint(*reinterpret_cast<const float *>(a));
      }
    }
  };
  auto load_rest = [&]() { // F[4 ..]
#pragma unroll
    for (int e0 = 4; e0 < NF; e0 += 4) load(e0, NF - e0 >= 4 ? 4 : NF - e0 >= 2 ? 2 : 1);
  };
  // group w: the 4 products of tap w (tile i reads F[i + w])
  auto group = [&](int s, int w) {
    const tc_wg_ref b = tc_wg_at(w0, (unsigned)w * kwstep + (unsigned)s * step);
#pragma unroll
    for (int i = 0; i < 4; i++) tc_wg_mma<WN>(acc[i], F[i + w], b);
    tc_wg_commit();
  };
  load(0, 4);
#pragma unroll 1
  for (int s = 0; s < kks; s++) {
    tc_wg_fence(); // F[0..3] (and, on the first step, the zeroed accumulators)
    group(s, 0);
    tc_wg_wait<1>(); // the last step's groups are done: F[4..] are free
    load_rest();
    tc_wg_fence();
#pragma unroll
    for (int w = 1; w < KW; w++) group(s, w);
    kk = kn; // the next step's K offsets (the table has one step more)
    kn = ko[(s + 2 < kks + 1 ? s + 2 : kks) * 4 + t];
    tc_wg_wait<3>(); // groups 0..KW - 4 of this step are done: F[0..3] are free (KW >= 4)
    if (s + 1 < kks) load(0, 4);
  }
  tc_wg_wait<0>();
}

// TEAMS 2: each warpgroup runs tiles of its own (64 pairs: rows of fewer pairs waste less at a
// plane's end; L1-60's 900 pairs a plane fill 7.03 tiles of 128 and 14.06 of 64), with patch
// buffers and barriers of its own.
template <int WN, int KW, int TEAMS>
TC_GLOBAL void TC_BOUNDS(TC_WARPS * 32, 1) tc_kw_kernel(TC_GRID_CONST Params p) {
  TC_SMEM_DECL(smem);
  constexpr int BN = WN * 8, TW = TC_WARPS / TEAMS; // a team's warps
  int *kot = reinterpret_cast<int *>(smem);
  float *wb = reinterpret_cast<float *>(smem + p.kofs_bytes);
  float *pb0 = wb + p.w_floats; // two patch buffers a team
  uint64_t *mbar0 = reinterpret_cast<uint64_t *>(pb0 + TEAMS * 2 * p.buf_floats);
  float *stg = reinterpret_cast<float *>(mbar0 + 4 * TEAMS); // the warps' stages (TC_KW_STAGE_BYTES)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int team = TEAMS == 1 ? 0 : warp / TW, twarp = warp - team * TW, ttid = tid - team * TW * 32;
  float *pb = pb0 + team * 2 * p.buf_floats;
  // the team's barriers: mbar[b], buffer b's patch has arrived (TMA); mbar[2 + b], the team's warps
  // are done reading it
  uint64_t *mbar = mbar0 + 4 * team;
  tc_grid_launch_dependents();
  { // the K' table: (input channel, kd, kh) offsets in the patch, padding at the zero region
    const int t0 = (int)p.taps[0], t1 = (int)p.taps[1], kvalid = (int)p.C_in * t0 * t1;
    for (int k = tid; k < (p.kks + 1) * 8; k += blockDim.x) {
      int v = p.patch_floats;
      if (k < kvalid) {
        const int cil = k / (t0 * t1), tap = k - cil * t0 * t1, jd = tap / t1, jh = tap - jd * t1;
        v = cil * p.pitch_c + jd * p.pitch_d + jh * (int)p.idil[1] * p.pitch_w;
      }
      kot[((k >> 3) * 4 + (k & 3)) * 2 + ((k >> 2) & 1)] = v * (int)sizeof(float);
    }
  }
  for (int b = 0; b < 2 * TEAMS; b++)
    for (int i = tid; i < p.zero_floats; i += blockDim.x) pb0[b * p.buf_floats + p.patch_floats + i] = 0.0f;
  if (tid == 0) {
    for (int k = 0; k < TEAMS; k++) {
      tc_mbar_init(mbar0 + 4 * k, 1);
      tc_mbar_init(mbar0 + 4 * k + 1, 1);
      tc_mbar_init(mbar0 + 4 * k + 2, TW);
      tc_mbar_init(mbar0 + 4 * k + 3, TW);
    }
    tc_mbar_fence_init();
  }
  TC_SYNC();
  const int cb = (int)(blockIdx.x % p.co_blocks);
  const int64_t T0 = (int64_t)(blockIdx.x / p.co_blocks) * TEAMS + team, Tstep = (int64_t)(gridDim.x / p.co_blocks) * TEAMS;
  const int64_t vplane = p.Q[1] * (int64_t)p.c4;
  // tile T's patch into buffer b: (channels, taps[0] planes, prow rows, pitch_w columns)
  auto stage = [&](int64_t T, int b) {
    if (ttid != 0) return;
    int64_t n, qd, r0;
    tc_decode(p, T, n, qd, r0);
    const int64_t qh0 = tc_div((unsigned)r0, p.div_c4);
    tc_mbar_expect_tx(mbar + b, (unsigned)p.patch_floats * 4u);
    tc_tma_load5(pb + b * p.buf_floats, &p.tmap, -(int)p.ipad[2], (int)(qh0 * p.istride[1] - p.ipad[1]),
                 (int)(qd * p.istride[0] - p.ipad[0]), 0, (int)n, mbar + b);
  };
  tc_grid_wait();
  if (T0 - team >= p.ntiles) return; // (the block's first team has a tile where any team has)
  tc_stage_weights(p.w_floats, wb, p.wprep + (int64_t)cb * p.w_floats);
  tc_commit();
  if (T0 < p.ntiles) stage(T0, 0);
  if (T0 + Tstep < p.ntiles) stage(T0 + Tstep, 1);
  tc_wait<0>();
  tc_fence_proxy_async(); // the weights this thread staged (cp.async), before wgmma reads them
  TC_SYNC();
  const float *bias = p.bias;
  const int ovol = (int)(p.out[0] * p.plane), Q2 = (int)p.Q[2];
  float *st = stg + warp * 8 * TC_KW_STAGE_PITCH; // this warp's stage: 8 channels x 16 (row, c) pairs x 4 columns
  float acc[4][WN][4];
  int64_t it = 0;
  for (int64_t T = T0; T < p.ntiles; T += Tstep, it++) {
    tc_mbar_wait(mbar + (it & 1), (int)((it >> 1) & 1));
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < WN; j++)
#pragma unroll
        for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;
    int64_t n, qd, r0;
    tc_decode(p, T, n, qd, r0);
    const int qh0 = (int)tc_div((unsigned)r0, p.div_c4);
    int ro[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int64_t rr = r0 + twarp * 16 + g + 8 * h;
      const int rc = (int)(rr < vplane ? rr : vplane - 1), qh = (int)tc_div((unsigned)rc, p.div_c4), c = rc - qh * p.c4;
      ro[h] = ((int)(it & 1) * p.buf_floats + (qh - qh0) * (int)p.istride[1] * p.pitch_w + 4 * c) * 4;
    }
    tc_kw_compute<WN, KW>(p.kks, reinterpret_cast<const char *>(pb), ro, wb, reinterpret_cast<const int2 *>(kot), acc);
    // this warp is done with the buffer. No block barrier: a warpgroup goes on to its epilogue while
    // the other may still be in its products, and the tensor cores are not left idle by both at once.
    tc_syncwarp();
    if (lane == 0) tc_mbar_arrive(mbar + 2 + (it & 1));
    // -- the epilogue, through the warp's stage: thread (g, t) puts columns 4c .. 4c + 3 of its rows
    // (tiles 0..3) for channels 2t + e of each n8 block; then per channel lane l writes columns
    // 4c + 2 (l & 1) and one more of the warp's pair l / 2: 32 lanes, 64 floats of consecutive
    // columns (two runs where the pairs reach the next row), 8-byte stores (Q2 even) ----
    const int64_t rl = r0 + twarp * 16 + (lane >> 1);
    const int rcl = (int)(rl < vplane ? rl : vplane - 1), qhl = (int)tc_div((unsigned)rcl, p.div_c4);
    const int cl = 4 * (rcl - qhl * p.c4) + 2 * (lane & 1);
    const bool sok = rl < vplane && cl < Q2;
    float *yt = p.y + ((n * p.C_out + (int64_t)cb * BN) * p.out[0] + qd) * p.plane + (qhl * Q2 + cl);
#pragma unroll
    for (int j = 0; j < WN; j++) {
#pragma unroll
      for (int e = 0; e < 2; e++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int r = 2 * h + e;
          *reinterpret_cast<float4 *>(st + (2 * t + e) * TC_KW_STAGE_PITCH + (g + 8 * h) * 4) =
              make_float4(acc[0][j][r], acc[1][j][r], acc[2][j][r], acc[3][j][r]);
        }
      tc_syncwarp();
      if (bias) {
#pragma unroll
        for (int ch = 0; ch < 8; ch++) {
          const int64_t co = (int64_t)cb * BN + 8 * j + ch;
          if (co >= p.C_out) break;
          const float bv = __ldg(bias + co);
          const float2 v = *reinterpret_cast<const float2 *>(st + ch * TC_KW_STAGE_PITCH + 2 * lane);
          if (sok) *reinterpret_cast<float2 *>(yt + (8 * j + ch) * ovol) = make_float2(v.x + bv, v.y + bv);
        }
      } else { // (no adds of 0)
#pragma unroll
        for (int ch = 0; ch < 8; ch++) {
          if ((int64_t)cb * BN + 8 * j + ch >= p.C_out) break;
          const float2 v = *reinterpret_cast<const float2 *>(st + ch * TC_KW_STAGE_PITCH + 2 * lane);
          if (sok) *reinterpret_cast<float2 *>(yt + (8 * j + ch) * ovol) = v;
        }
      }
      tc_syncwarp(); // read before the next block's values go there
    }
    if (ttid == 0 && T + 2 * Tstep < p.ntiles) { // the tile after next, into this buffer once every warp is done with it
      tc_mbar_wait(mbar + 2 + (it & 1), (int)((it >> 1) & 1));
      stage(T + 2 * Tstep, (int)(it & 1));
    }
  }
}

// The W-interleaved plan for conv3d in math "tf32" (tc_kw_kernel), or 0 where it does not apply:
// wgmma, no groups, kW 7 with stride and dilation 1 and padding a multiple of 4 along W (the TMA
// box then starts at a multiple of 4 columns), an input W a multiple of 4 at a 16-byte aligned base
// (TMA), Q2 even and y 8-byte aligned (8-byte stores), more than 32 output channels (64 a block), all input channels in
// one chunk, and the shared memory for the weights and two patches. VOLUA_TC_KW=0 turns it off
// (for measuring).
static int tc_plan_kw_teams(Params &p, const Env &env, int teams);
static int tc_plan_kw(Params &p, bool split, const Env &env) {
  const char *v = getenv("VOLUA_TC_KW");
  if (v && strcmp(v, "0") == 0) return 0;
  if (split || !env.wg || p.groups != 1 || p.taps[2] != 7 || p.istride[2] != 1 || p.idil[2] != 1 || p.ipad[2] % 4 != 0)
    return 0;
  if (p.Q[2] % 2 != 0 || p.C_out <= 32 || p.in[2] % 4 != 0 || ((uintptr_t)p.x % 16) != 0 || ((uintptr_t)p.y % 8) != 0 ||
      p.C_in > 256)
    return 0;
  for (int d = 0; d < 3; d++)
    if (p.Q[d] <= 0 || p.taps[d] <= 0 || p.in[d] >= INT32_MAX / 2 || p.Q[d] * p.istride[d] + p.ipad[d] >= INT32_MAX / 2 ||
        p.ipad[d] >= INT32_MAX / 2 || p.taps[d] > 256 || p.istride[d] > 4096 || p.idil[d] > 4096)
      return 0;
  if (p.idil[0] > 8 || p.N >= INT32_MAX) return 0;
  const int64_t c4 = tc_cdiv(p.Q[2], 4), vplane = p.Q[1] * c4;
  // two teams where their tiles of 64 pairs waste 3 % fewer pairs at the planes' ends and their
  // buffers fit (VOLUA_TC_KW_TEAMS=1|2 forces one, where it fits)
  const char *tv = getenv("VOLUA_TC_KW_TEAMS");
  const int want = tv ? atoi(tv) : 0;
  const bool fewer = tc_cdiv(vplane, 64) * 64 * 100 < tc_cdiv(vplane, 128) * 128 * 97;
  if ((want == 2 || (want != 1 && fewer)) && tc_plan_kw_teams(p, env, 2)) return 1;
  return tc_plan_kw_teams(p, env, 1);
}

// tc_plan_kw's plan for 1 or 2 teams, or 0 where it does not fit.
static int tc_plan_kw_teams(Params &p, const Env &env, int teams) {
  const int64_t RR = TC_WARPS / teams * 16, c4 = tc_cdiv(p.Q[2], 4), vplane = p.Q[1] * c4;
  const int64_t span = (RR - 1) / c4 + 2, nq = p.Q[1] < span ? p.Q[1] : span;
  const int64_t prow = (nq - 1) * p.istride[1] + (p.taps[1] - 1) * p.idil[1] + 1, wp = 4 * c4 + 6;
  int64_t pitch = wp;
  while (pitch % 4 != 0 || (pitch % 32 != 8 && pitch % 32 != 24)) pitch++;
  const int64_t span0 = (p.taps[0] - 1) * p.idil[0] + 1;
  if (pitch > 256 || prow > 256 || span0 > 256) return 0;
  const int64_t pitch_d = prow * pitch, pitch_c = p.taps[0] * pitch_d, patch = p.C_in * pitch_c;
  const int64_t kks = tc_cdiv(p.C_in * p.taps[0] * p.taps[1], 8), ksteps = 7 * kks, w_floats = ksteps * 8 * 32 * 2;
  const int64_t buf = (patch + pitch_d + 31) / 32 * 32, kofs_bytes = ((kks + 1) * 8 * 4 + 127) / 128 * 128;
  const int64_t smem = kofs_bytes + w_floats * 4 + teams * (2 * buf * 4 + 32) + TC_KW_STAGE_BYTES;
  if (smem > env.smem_optin || patch > ((int64_t)1 << 28)) return 0;
  const int64_t tpp = tc_cdiv(vplane, RR), ntiles = p.N * p.Q[0] * tpp;
  if (ntiles >= INT32_MAX || vplane >= INT32_MAX) return 0;
  if ((int64_t)64 * p.out[0] * p.out[1] * p.out[2] >= ((int64_t)1 << 31) - 4096) return 0; // int offsets in a block
  // (the fields the kernel, the weight preparation, the map and the plan's report read; p came zeroed
  // from conv3d_params' caller)
  p.nsub = 1, p.teams = teams, p.tbufs = 2, p.BM = (int)RR, p.BN = 64, p.E = 2, p.wg = 1, p.tma = 1;
  p.kwil = 4, p.kks = (int)kks, p.c4 = (int)c4, p.div_c4 = tc_div_make(c4);
  p.plane = p.Q[1] * p.Q[2];
  p.tiles_per_plane = tpp, p.tiles_per_n = p.Q[0] * tpp, p.ntiles = ntiles, p.dec32 = 1;
  p.div_tpp = tc_div_make(tpp), p.div_q0 = tc_div_make(p.Q[0]);
  p.prow = (int)prow, p.pitch_w = (int)pitch, p.pitch_d = (int)pitch_d, p.pitch_c = (int)pitch_c;
  p.zero_floats = (int)pitch_d, p.co_blocks = (int)tc_cdiv(p.C_out, 64);
  p.ci_chunk = (int)p.C_in, p.nchunks = 1, p.ksteps = (int)ksteps, p.w_floats = (int)w_floats;
  p.patch_floats = (int)patch, p.buf_floats = (int)buf, p.kofs_bytes = (int)kofs_bytes, p.smem = (size_t)smem;
  return 1;
}

static int tc_launch_kw(Params &p, const Env &env, tc_stream s, const char *op, char *err) {
  void (*kernel)(const Params) = p.teams == 2 ? tc_kw_kernel<8, 7, 2> : tc_kw_kernel<8, 7, 1>;
  static size_t smem_set[2] = {0, 0};
  if (p.smem > smem_set[p.teams - 1]) {
    TC_CHECK(tc_prepare_kernel(kernel, p.smem));
    smem_set[p.teams - 1] = p.smem;
  }
  int64_t per_cb = env.sms / p.co_blocks; // one block an SM (p.tmap: encoded by the caller)
  if (per_cb < 1) per_cb = 1;
  if (per_cb > tc_cdiv(p.ntiles, p.teams)) per_cb = tc_cdiv(p.ntiles, p.teams);
  tc_report(p, op, EPI_STORE, per_cb * p.co_blocks, 1, 1);
  if (tc_launch_kernel(kernel, tc_dim3((unsigned)(per_cb * p.co_blocks)), p.smem, s, p, op, err)) return 1;
  TC_CHECK_LAUNCH();
  return 0;
}

extern "C" int volua_cuda_conv3d_tc(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                    float *y, volua_math_mode math, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  if (tc_fast_disabled() || g->groups < 1 || g->padding_mode != VOLUA_PAD_ZEROS) return VOLUA_FAST_NOT_APPLICABLE;
  if (g->N <= 0 || g->C_in <= 0 || g->C_out <= 0 || g->out[0] <= 0 || g->out[1] <= 0 || g->out[2] <= 0)
    return VOLUA_FAST_NOT_APPLICABLE;
  const int cl = volua_cuda_conv3d_cl(g, x, w, b, y, math, s, err); // deep layers (conv3d_cl.cu)
  if (cl != VOLUA_FAST_NOT_APPLICABLE) return cl;
  Env env;
  if (tc_get_env(&env, op, err)) return 1;
  Params p;
  memset(&p, 0, sizeof p);
  conv3d_params(g, p);
  p.x = x;
  p.bias = b;
  p.y = y;
  Params kw = p; // the W-interleaved kernel (above), where its plan applies and its map is accepted
  if (tc_plan_kw(kw, math == VOLUA_MATH_FP32, env) && !tc_encode_tmap(kw)) {
    float *wprep = NULL;
    if (tc_prep_weights(kw, conv3d_weights(g, w), &wprep, s, op, err)) return 1;
    kw.wprep = wprep;
    const int rc = tc_launch_kw(kw, env, s, op, err);
    tc_weights_free(wprep);
    if (rc == 0) volua_cuda_fast_note_call();
    return rc;
  }
  if (!tc_plan_store(p, math == VOLUA_MATH_FP32, EPI_STORE, env)) return VOLUA_FAST_NOT_APPLICABLE;
  tc_plan_ksplit(p, math == VOLUA_MATH_FP32, env);
  // every output is stored by it: it takes the epilogue where a fused kernel exists (tc_launch_epi)
  if (p.groups == 1 && p.ksplit <= 1 && tc_epi_worth(p))
    volua_cuda_epilogue_take(&p.epi, g->C_out, g->out[0] * g->out[1] * g->out[2]);
  float *ksws = tc_ksplit_scratch(p, err); // split K: the parts' sums, then the units' counts
  float *wprep = NULL;
  if (tc_prep_weights(p, conv3d_weights(g, w), &wprep, s, op, err)) {
    volua_cuda_free(ksws);
    return 1;
  }
  p.wprep = wprep;
  const int rc = p.ksplit > 1 ? tc_launch_ksplit(p, env, s, op, err) : tc_launch_store<false>(p, env, EPI_STORE, s, op, err);
  tc_weights_free(wprep); // stream-ordered reuse: later work on the stream runs after this launch
  volua_cuda_free(ksws);
  if (rc == 0) volua_cuda_fast_note_call();
  return rc;
}
