// conv3d_cl.cu: conv3d on tensor cores through a channels-last copy of the input, for deep layers
// (many input channels) in math "tf32" on Hopper (sm_90a). conv3d_tc.cu's implicit GEMM stages a
// patch per (tile, channel chunk) and loads A fragments from it by a table of K offsets: with many
// channels its k-loop waits on those loads and on a block barrier per chunk (bench/NOTES.md, tenth
// session). Here the GEMM's operands are plain TMA boxes that wgmma reads from shared memory:
//
//   xcl = x as (N, D, H, W, C) rounded to TF32 (cl_layout_kernel), wcl = w as (tap, C_out, C_in)
//   (cl_weights_kernel), channels padded to a multiple of 4 with zeros;
//   a block's tile is a box of 128 output positions (bd x bh x bw) and BN = 64, 128 or 256 channels;
//   K runs over (tap, 32 input channels): each step's A is the input box those positions read at
//   that tap (TMA: a 5-D box with the conv's strides as element strides, zeros outside the input:
//   the padding), its B the tap's weights for the block's channels (a 3-D box). Both land in the
//   128-byte swizzle, rows of 32 channels.
//
// A block is two consumer warpgroups (64 rows each, four m64nBNk8 wgmma per step) and a producer
// warp whose one thread issues the TMA loads into a ring of stages, each with a "full" mbarrier
// (its bytes landed) and an "empty" one (the 8 consumer warps are done with it). Where the tiles
// are fewer than the SMs, K is split over ksplit blocks; each writes its sums into its own copy
// of the output and cl_reduce_kernel adds the copies in a fixed order (results do not depend on
// which block finishes first) and the bias.
#include "tc_core.cuh"

using namespace volua_tc;

namespace {

#define CL_ROWS 128                       // positions per block: two warpgroups of 64
#define CL_THREADS 288                    // 8 consumer warps + the producer warp
#define CL_A_BYTES (CL_ROWS * 128)        // a step's A: 128 rows of 32 floats
#define CL_MAX_STAGES 8

struct ClParams {
  tc_tmap xmap, wmap; // (C, W, H, D, N) of xcl; (C, C_out, tap, 1, 1) of wcl
  float *y;           // the output, or (ksplit > 1) the parts' copies of it
  const float *bias;  // (ksplit 1) or NULL
  int64_t C_out, out[3], ysize;
  int64_t tiles[3]; // tiles along D, H, W
  int64_t mtiles;   // N * tiles[0] * tiles[1] * tiles[2]
  int box[3];       // bd, bh, bw: positions per tile along D, H, W (product 128)
  int stride[3], pad[3], dil[3], taps[3];
  int co_blocks, cchunks, niter, ksplit, stages;
};

template <int WN> struct ClStage {
  static const int B_BYTES = WN * 8 * 128, BYTES = CL_A_BYTES + B_BYTES;
};

// Block b: unit u = b / ksplit = (tile mt, channel block cb) = (u / co_blocks, u % co_blocks), part b % ksplit.
template <int WN> TC_GLOBAL void TC_BOUNDS(CL_THREADS, 1) cl_conv_kernel(TC_GRID_CONST ClParams p) {
  TC_SMEM_DECL(smem_raw);
  unsigned char *smem = smem_raw + ((1024u - (tc_smem_addr(smem_raw) & 1023u)) & 1023u); // the swizzle's alignment
  const int S = p.stages, STAGE = ClStage<WN>::BYTES;
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + (size_t)S * STAGE), *empty = full + S;
  const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31;

  int64_t u = blockIdx.x;
  const int part = (int)(u % p.ksplit);
  u /= p.ksplit;
  const int cb = (int)(u % p.co_blocks);
  int64_t t = u / p.co_blocks;
  const int64_t tw = t % p.tiles[2];
  t /= p.tiles[2];
  const int64_t th = t % p.tiles[1];
  t /= p.tiles[1];
  const int64_t td = t % p.tiles[0];
  const int64_t n = t / p.tiles[0];
  const int d0 = (int)(td * p.box[0]), h0 = (int)(th * p.box[1]), w0 = (int)(tw * p.box[2]);
  const int it_lo = (int)((int64_t)part * p.niter / p.ksplit), it_hi = (int)((int64_t)(part + 1) * p.niter / p.ksplit);

  if (tid == 0) {
    for (int s = 0; s < S; s++) {
      tc_mbar_init(full + s, 1);
      tc_mbar_init(empty + s, 8);
    }
    tc_mbar_fence_init();
  }
  TC_SYNC();

  if (warp == 8) { // the producer: one thread issues every load
    if (lane == 0) {
      const int t12 = p.taps[1] * p.taps[2];
      for (int it = it_lo; it < it_hi; it++) {
        const int i = it - it_lo, s = i % S;
        if (i >= S) tc_mbar_wait(empty + s, (i / S - 1) & 1); // the consumers are done with step i - S
        const int tap = it / p.cchunks, cc = it - tap * p.cchunks;
        const int jd = tap / t12, jh = (tap - jd * t12) / p.taps[2], jw = tap - jd * t12 - jh * p.taps[2];
        unsigned char *st = smem + (size_t)s * STAGE;
        tc_mbar_expect_tx(full + s, (unsigned)STAGE);
        tc_tma_load5(st, &p.xmap, cc * 32, w0 * p.stride[2] - p.pad[2] + jw * p.dil[2],
                     h0 * p.stride[1] - p.pad[1] + jh * p.dil[1], d0 * p.stride[0] - p.pad[0] + jd * p.dil[0], (int)n,
                     full + s);
        tc_tma_load5(st + CL_A_BYTES, &p.wmap, cc * 32, cb * WN * 8, tap, 0, 0, full + s);
      }
    }
    return;
  }

  // the consumers: warpgroup g has rows 64 g .. 64 g + 63 of the tile
  const int g = warp >> 2;
  float acc[WN][4];
  for (int j = 0; j < WN; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  for (int it = it_lo; it < it_hi; it++) {
    const int i = it - it_lo, s = i % S;
    tc_mbar_wait(full + s, (i / S) & 1);
    const unsigned char *st = smem + (size_t)s * STAGE;
    const uint64_t da = tc_wg_desc128(st + g * (CL_A_BYTES / 2)), db = tc_wg_desc128(st + CL_A_BYTES);
    tc_wg_fence();
#pragma unroll
    for (int k = 0; k < 4; k++) tc_wg_mma_ss<WN>(acc, da + 2 * k, db + 2 * k); // 32 bytes a k-step (16-byte units)
    tc_wg_commit();
    tc_wg_wait<1>(); // step i - 1's products are done: its stage goes back to the producer
    if (i > 0 && lane == 0) tc_mbar_arrive(empty + (i - 1) % S);
  }
  tc_wg_wait<0>();

  // the epilogue: row r of the tile is position (r / (bh bw), r / bw % bh, r % bw) of its box
  const int bhw = p.box[1] * p.box[2];
  const int64_t vol = p.out[0] * p.out[1] * p.out[2];
  float *y = p.y + (p.ksplit > 1 ? (int64_t)part * p.ysize : 0);
#pragma unroll
  for (int half = 0; half < 2; half++) { // (unrolled: acc's indices must be constants, or acc goes to the stack)
    const int r = g * 64 + (warp & 3) * 16 + (lane >> 2) + half * 8;
    const int od = d0 + r / bhw, oh = h0 + r / p.box[2] % p.box[1], ow = w0 + r % p.box[2];
    if (od >= p.out[0] || oh >= p.out[1] || ow >= p.out[2]) continue;
    float *yq = y + n * p.C_out * vol + ((int64_t)od * p.out[1] + oh) * p.out[2] + ow;
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int e = 0; e < 2; e++) {
        const int64_t co = (int64_t)cb * WN * 8 + j * 8 + 2 * (lane & 3) + e;
        if (co < p.C_out) yq[co * vol] = acc[j][half * 2 + e] + (p.bias ? p.bias[co] : 0.0f);
      }
  }
}

// y = bias + the ksplit parts' sums, in part order.
TC_GLOBAL void cl_reduce_kernel(const float *ws, int ksplit, int64_t ysize, const float *bias, int64_t C_out,
                                int64_t vol, float *y) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < ysize; i += (int64_t)gridDim.x * blockDim.x) {
    float v = 0.0f;
    for (int k = 0; k < ksplit; k++) v += ws[k * ysize + i];
    y[i] = bias ? v + bias[i / vol % C_out] : v;
  }
}

// xcl (N, D, H, W, Cp) = tf32(x (N, C, D, H, W)), channels C..Cp-1 zero. Block: one (n, d, h) row,
// 32 columns by 32 channels (blockIdx.y, blockIdx.z) through shared memory (reads along W, writes
// along C). (With the channels in a loop, (1, 512, 4, 8, 8) had 32 blocks and took 31 us: ncu.)
TC_GLOBAL void cl_layout_kernel(const float *x, float *xcl, int64_t C, int64_t Cp, int64_t D, int64_t H, int64_t W) {
  TC_SMEM_DECL(raw);
  float(*tile)[33] = reinterpret_cast<float(*)[33]>(raw); // 32 x 33 floats
  const int64_t row = blockIdx.x; // (n, d, h)
  const int64_t h = row % H, d = row / H % D, n = row / (H * D);
  const int64_t w0 = (int64_t)blockIdx.y * 32;
  const int tx = (int)(threadIdx.x & 31), ty = (int)(threadIdx.x >> 5); // 8 warps
  const int64_t c0 = (int64_t)blockIdx.z * 32;
  for (int cy = ty; cy < 32; cy += 8) {
    const int64_t c = c0 + cy, w = w0 + tx;
    float v = 0.0f;
    if (c < C && w < W) v = x[(((n * C + c) * D + d) * H + h) * W + w];
    tile[cy][tx] = __uint_as_float(tc_tf32(v));
  }
  TC_SYNC();
  for (int wy = ty; wy < 32; wy += 8) {
    const int64_t c = c0 + tx, w = w0 + wy;
    if (c < Cp && w < W) xcl[(((n * D + d) * H + h) * W + w) * Cp + c] = tile[tx][wy];
  }
}

// wcl (tap, C_out, Cp) = tf32(w (C_out, C, taps)), channels C..Cp-1 zero. Block: CL_WCO output
// channels and 32 input channels, 32 taps at a time through shared memory: reads of each channel's
// taps (contiguous), writes of 32 channels (128 bytes) per tap. Measured on 512 -> 512 k3 (ncu,
// cold caches): one thread an element, reading with a stride of `taps` floats, 41 us; this with
// CL_WCO 1 31 us, with CL_WCO 4 (more loads in flight, a quarter of the blocks) 62 us.
#define CL_WCO 1
TC_GLOBAL void cl_weights_kernel(const float *w, float *wcl, int64_t C_out, int64_t C, int64_t Cp, int64_t taps) {
  TC_SMEM_DECL(raw);
  float(*tile)[32][33] = reinterpret_cast<float(*)[32][33]>(raw); // CL_WCO x 32 channels x 32 taps
  const int64_t co0 = (int64_t)blockIdx.y * CL_WCO, c0 = (int64_t)blockIdx.x * 32; // (consecutive blocks: one row of wcl)
  const int tx = (int)(threadIdx.x & 31), ty = (int)(threadIdx.x >> 5); // 8 warps
  for (int64_t t0 = 0; t0 < taps; t0 += 32) {
#pragma unroll
    for (int o = 0; o < CL_WCO; o++)
      for (int cy = ty; cy < 32; cy += 8) {
        const int64_t co = co0 + o, c = c0 + cy, t = t0 + tx;
        tile[o][cy][tx] = co < C_out && c < C && t < taps ? __uint_as_float(tc_tf32(w[(co * C + c) * taps + t])) : 0.0f;
      }
    TC_SYNC();
#pragma unroll
    for (int o = 0; o < CL_WCO; o++)
      for (int ty2 = ty; ty2 < 32; ty2 += 8) {
        const int64_t co = co0 + o, t = t0 + ty2, c = c0 + tx;
        if (co < C_out && t < taps && c < Cp) wcl[(t * C_out + co) * Cp + c] = tile[o][tx][ty2];
      }
    TC_SYNC();
  }
}

// The two maps (cuTensorMapEncodeTiled, tc_core.cuh's tc_encoder): FLOAT32, no
// interleave, swizzle 128 B (3), L2 promotion 128 B (2), zeros outside (0). 0, or 1 where refused.
static int cl_encode(tc_tmap *m, const float *base, const int64_t dim[5], const int box[5], const int es[5]) {
  for (int d = 0; d < 5; d++)
    if (box[d] < 1 || box[d] > 256 || es[d] < 1 || es[d] > 8 || dim[d] < 1) return 1;
#ifndef VOLUA_TC_EMULATE
  const tc_encode_fn encode = tc_encoder();
  if (!encode) return 1;
  uint64_t gdim[5], gstride[4];
  uint32_t b[5], e[5];
  uint64_t st = 4;
  for (int d = 0; d < 5; d++) {
    gdim[d] = (uint64_t)dim[d];
    if (d > 0) gstride[d - 1] = st;
    st *= gdim[d];
    b[d] = (uint32_t)box[d];
    e[d] = (uint32_t)es[d];
  }
  return encode(m, 7, 5, const_cast<float *>(base), gdim, gstride, b, e, 0, 3, 2, 0) != 0;
#else
  m->base = base;
  int64_t st = 1;
  for (int d = 0; d < 5; d++) {
    m->dim[d] = dim[d];
    m->stride[d] = st;
    st *= dim[d];
    m->box[d] = box[d];
    m->estride[d] = es[d];
  }
  m->swz = 1;
  return 0;
#endif
}

static int64_t cl_pow2_at_least(int64_t v, int64_t cap) {
  int64_t r = 1;
  while (r < v && r < cap) r *= 2;
  return r;
}

template <int WN> static int cl_launch(ClParams &p, const Env &env, tc_stream s, const char *op, char *err) {
  void (*kernel)(const ClParams) = cl_conv_kernel<WN>;
  const size_t smem = (size_t)p.stages * ClStage<WN>::BYTES + 2 * CL_MAX_STAGES * 8 + 1024;
  static size_t smem_set = 0;
  if (smem > smem_set) {
    TC_CHECK(tc_prepare_kernel(kernel, smem));
    smem_set = smem;
  }
  (void)env;
  TC_LAUNCH(kernel, (unsigned)(p.mtiles * p.co_blocks * p.ksplit), CL_THREADS, smem, s, p);
  return tc_launch_failed(op, err);
}

} // namespace

// Whether this path takes the convolution: VOLUA_TC_CL=0 never, 1 wherever it can; else the rule.
static int cl_wanted(const volua_conv3d_geom *g) {
  const char *v = getenv("VOLUA_TC_CL");
  if (v && strcmp(v, "0") == 0) return 0;
  if (v && strcmp(v, "1") == 0) return 1;
  return g->C_in >= 256; // measured (bench/NOTES.md, eleventh session): faster there, slower below
}

extern "C" int volua_cuda_conv3d_cl(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                    float *y, volua_math_mode math, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  if (math != VOLUA_MATH_TF32 || g->groups != 1 || g->padding_mode != VOLUA_PAD_ZEROS || g->C_in < 32 ||
      g->C_out < 64 || !cl_wanted(g))
    return VOLUA_FAST_NOT_APPLICABLE;
  for (int d = 0; d < 3; d++)
    if (g->stride[d] > 8 || g->out[d] <= 0 || g->out[d] > (1 << 30) || g->in[d] > (1 << 30)) return VOLUA_FAST_NOT_APPLICABLE;
  Env env;
  if (tc_get_env(&env, op, err)) return 1;
  if (!env.wg) return VOLUA_FAST_NOT_APPLICABLE; // wgmma and TMA: the sm_90a code
  ClParams p;
  memset(&p, 0, sizeof p);
  const int64_t Cp = (g->C_in + 3) / 4 * 4, taps = g->kernel[0] * g->kernel[1] * g->kernel[2];
  if (taps > (1 << 20) || g->C_in > (1 << 20) || g->N > (1 << 30) || g->C_out > 65535 * CL_WCO) // (grid y)
    return VOLUA_FAST_NOT_APPLICABLE;
  // the box: W first (up to 128 positions), then H, then D
  p.box[2] = (int)cl_pow2_at_least(g->out[2], 128);
  p.box[1] = (int)cl_pow2_at_least(g->out[1], CL_ROWS / p.box[2]);
  p.box[0] = CL_ROWS / (p.box[2] * p.box[1]);
  // channels a block: 256 (each A box serves more columns) where C_out has them and the blocks,
  // split at most 16 ways, still fill the SMs; else 128 or 64 (a box no wider than the weights'
  // C_out). Measured: 256 -> 256 of (2, 256, 8, 16, 16) 0.109 -> 0.094 ms with 256; 512 -> 512 of
  // (1, 512, 4, 8, 8), whose 4 units of 256 give 64 blocks, 0.116 -> 0.106 with 128.
  // VOLUA_TC_CL_BN=64|128|256 for measuring.
  int WN = g->C_out >= 128 ? 16 : 8;
  if (g->C_out >= 256) {
    int64_t t = g->N;
    for (int d = 0; d < 3; d++) t *= tc_cdiv(g->out[d], p.box[d]);
    const int64_t steps = taps * tc_cdiv(g->C_in, 32), most = steps / 8 < 16 ? steps / 8 : 16;
    if (t * tc_cdiv(g->C_out, 256) * (most > 1 ? most : 1) >= env.sms) WN = 32;
  }
  const char *fbn = getenv("VOLUA_TC_CL_BN");
  if (fbn && (atoi(fbn) == 64 || atoi(fbn) == 128 || atoi(fbn) == 256) && atoi(fbn) <= g->C_out) WN = atoi(fbn) / 8;
  const int BN = WN * 8;
  for (int d = 0; d < 3; d++) {
    p.stride[d] = (int)g->stride[d];
    p.pad[d] = (int)g->pad_lo[d];
    p.dil[d] = (int)g->dilation[d];
    p.taps[d] = (int)g->kernel[d];
    p.out[d] = g->out[d];
    p.tiles[d] = tc_cdiv(g->out[d], p.box[d]);
    if ((int64_t)p.box[d] * g->stride[d] > 256) return VOLUA_FAST_NOT_APPLICABLE;
    // TMA coordinates are 32-bit
    if ((int64_t)(p.tiles[d] * p.box[d]) * g->stride[d] + (g->kernel[d] - 1) * g->dilation[d] > ((int64_t)1 << 30) ||
        g->pad_lo[d] > ((int64_t)1 << 30))
      return VOLUA_FAST_NOT_APPLICABLE;
  }
  p.C_out = g->C_out;
  p.ysize = g->N * g->C_out * g->out[0] * g->out[1] * g->out[2];
  p.mtiles = g->N * p.tiles[0] * p.tiles[1] * p.tiles[2];
  p.co_blocks = (int)tc_cdiv(g->C_out, BN);
  p.cchunks = (int)tc_cdiv(g->C_in, 32);
  p.niter = (int)(taps * p.cchunks);
  p.stages = (int)((env.smem_optin - 1024 - 2 * CL_MAX_STAGES * 8) / (CL_A_BYTES + BN * 128));
  if (p.stages > CL_MAX_STAGES) p.stages = CL_MAX_STAGES;
  if (p.stages < 2 || p.mtiles * p.co_blocks > ((int64_t)1 << 30)) return VOLUA_FAST_NOT_APPLICABLE;
  // split K where the units leave SMs idle: parts of at least 8 steps, at most 16 parts
  const int64_t units = p.mtiles * p.co_blocks;
  int64_t parts = units < env.sms ? env.sms / units : 1;
  if (parts > p.niter / 8) parts = p.niter / 8;
  if (parts > 16) parts = 16;
  const char *ks = getenv("VOLUA_TC_KSPLIT");
  if (ks && atoi(ks) >= 1) parts = atoi(ks) < p.niter ? atoi(ks) : p.niter;
  if (parts < 1) parts = 1;
  while (parts > 1 && parts * p.ysize * 4 > ((int64_t)1 << 28)) parts--; // the copies: at most 256 MB
  p.ksplit = (int)parts;

  float *xcl = NULL, *wcl = NULL, *ws = NULL;
  const int64_t xn = g->N * g->in[0] * g->in[1] * g->in[2] * Cp, wn = taps * g->C_out * Cp;
  char merr[VOLUA_ERR_MAX];
  if (volua_cuda_malloc(reinterpret_cast<void **>(&xcl), xn * 4, merr) ||
      volua_cuda_malloc(reinterpret_cast<void **>(&wcl), wn * 4, merr) ||
      (p.ksplit > 1 && volua_cuda_malloc(reinterpret_cast<void **>(&ws), p.ksplit * p.ysize * 4, merr))) {
    volua_cuda_free(xcl); // no memory for the copies: the other paths
    volua_cuda_free(wcl);
#ifndef VOLUA_TC_EMULATE
    (void)cudaGetLastError();
#endif
    return VOLUA_FAST_NOT_APPLICABLE;
  }
  const int64_t xdim[5] = {Cp, g->in[2], g->in[1], g->in[0], g->N};
  const int xbox[5] = {32, p.box[2] * p.stride[2], p.box[1] * p.stride[1], p.box[0] * p.stride[0], 1};
  const int xes[5] = {1, p.stride[2], p.stride[1], p.stride[0], 1};
  const int64_t wdim[5] = {Cp, g->C_out, taps, 1, 1};
  const int wbox[5] = {32, BN, 1, 1, 1}, wes[5] = {1, 1, 1, 1, 1};
  if (cl_encode(&p.xmap, xcl, xdim, xbox, xes) || cl_encode(&p.wmap, wcl, wdim, wbox, wes)) {
    volua_cuda_free(xcl);
    volua_cuda_free(wcl);
    volua_cuda_free(ws);
    return VOLUA_FAST_NOT_APPLICABLE;
  }
  p.y = p.ksplit > 1 ? ws : y;
  p.bias = p.ksplit > 1 ? NULL : b;

  int rc = 0;
  const int64_t rows = g->N * g->in[0] * g->in[1];
  if (rows > 0 && rows < ((int64_t)1 << 31) && tc_cdiv(g->in[2], 32) < 65536 && tc_cdiv(Cp, 32) < 65536) {
    TC_LAUNCH(cl_layout_kernel, tc_dim3((unsigned)rows, (unsigned)tc_cdiv(g->in[2], 32), (unsigned)tc_cdiv(Cp, 32)), 256,
              32 * 33 * 4, s, x, xcl, g->C_in, Cp, g->in[0], g->in[1], g->in[2]);
    rc = tc_launch_failed(op, err);
  } else {
    rc = VOLUA_FAST_NOT_APPLICABLE;
  }
  if (rc == 0) {
    TC_LAUNCH(cl_weights_kernel, tc_dim3((unsigned)tc_cdiv(Cp, 32), (unsigned)tc_cdiv(g->C_out, CL_WCO)), 256,
              CL_WCO * 32 * 33 * 4, s, w, wcl, g->C_out, g->C_in, Cp, taps);
    rc = tc_launch_failed(op, err);
  }
  if (rc == 0)
    rc = WN == 32 ? cl_launch<32>(p, env, s, op, err) : WN == 16 ? cl_launch<16>(p, env, s, op, err) : cl_launch<8>(p, env, s, op, err);
  if (rc == 0 && p.ksplit > 1) {
    const int64_t vol = g->out[0] * g->out[1] * g->out[2];
    TC_LAUNCH(cl_reduce_kernel, (unsigned)(p.ysize / 256 + 1 < 8192 ? p.ysize / 256 + 1 : 8192), 256, 0, s, ws, p.ksplit,
              p.ysize, b, g->C_out, vol, y);
    rc = tc_launch_failed(op, err);
  }
  volua_cuda_free(xcl); // stream-ordered reuse, as conv3d_tc.cu's scratch
  volua_cuda_free(wcl);
  volua_cuda_free(ws);
  if (rc == 0) {
    volua_cuda_fast_note_call();
    if (tc_verbose())
      fprintf(stderr, "volua cl: conv3d box (%d, %d, %d) BN %d, %lld tiles x %d channel blocks, %d steps, %d stages, K in %d part(s)\n",
              p.box[0], p.box[1], p.box[2], BN, (long long)p.mtiles, p.co_blocks, p.niter, p.stages, p.ksplit);
  }
  return rc;
}
