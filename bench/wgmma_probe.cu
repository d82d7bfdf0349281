// wgmma_probe.cu: what the tensor cores of this GPU do with TF32, measured, outside volua.
// (1) Checks the layouts a wgmma path would use: wgmma.m64nNk8.tf32 with A from registers in
//     mma.sync's m16n8k8 A-fragment order (a warp per 16 rows) and B from shared memory in the
//     no-swizzle K-major core-matrix layout (8 rows x 16 bytes per core matrix; the descriptor's
//     LBO = the distance between core matrices along K, SBO = along N); and the accumulator order
//     (mma.sync's C fragment per n8 tile). Against a host product of small integers (exact).
// (2) Issue rates, as TFLOP/s over the whole GPU: mma.sync m16n8k8 (registers only: the ceiling of
//     volua's present k-loop), wgmma with A from registers (N 24, 64, 128), wgmma with A from
//     registers loaded by LDS each k-step (the shape of an implicit-GEMM k-loop), and wgmma with
//     both operands in shared memory.
// Build (sm_90a: wgmma): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/wgmma_probe.cu -o wgmma_probe
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define TC_DEV __device__ __forceinline__
#include "probe_check.h"

TC_DEV void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
TC_DEV void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> TC_DEV void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
TC_DEV unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
// no-swizzle descriptor: start, LBO (K direction), SBO (M/N direction), all in bytes
TC_DEV uint64_t wg_desc(const void *s, unsigned lbo, unsigned sbo) {
  return (uint64_t)((smem_addr(s) >> 4) & 0x3fff) | (uint64_t)((lbo >> 4) & 0x3fff) << 16 |
         (uint64_t)((sbo >> 4) & 0x3fff) << 32;
}
TC_DEV void mma1688(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d (64 x 24) += A (registers) * B (descriptor), tf32; scale_d 0: d = A * B
TC_DEV void wg_rs_n24(float (&d)[12], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %17, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n24k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, %16, p, 1, 1;\n}"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// d (64 x 64) += A (registers) * B (descriptor), tf32; scale_d 0: d = A * B
TC_DEV void wg_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %37, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// d (64 x 128) += A (registers) * B (descriptor), tf32; scale_d 0: d = A * B
TC_DEV void wg_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// d (64 x 64) += A (descriptor) * B (descriptor), tf32
TC_DEV void wg_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(da), "l"(db), "r"(scale_d));
}

// element (r, k) of a K-major 8-column operand (r: row of A or column of B) in core-matrix order:
// core (r / 8, k / 4) at r / 8 * 256 + k / 4 * 128 bytes, row r % 8 at 16 bytes each
__host__ __device__ inline int core_index(int r, int k) { return (r >> 3) * 64 + (k >> 2) * 32 + (r & 7) * 4 + (k & 3); }

// (1) one 64 x N x 8 product; variant 0: LBO 128, SBO 256; 1: swapped. ss: A from shared memory too.
template <int N>
__global__ void check_kernel(const float *A, const float *B, float *D, int variant, int ss) {
  __shared__ __align__(128) float sa[64 * 8];
  __shared__ __align__(128) float sb[N * 8];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  for (int i = tid; i < 64 * 8; i += 128) sa[core_index(i / 8, i % 8)] = A[i];
  for (int i = tid; i < N * 8; i += 128) sb[core_index(i / 8, i % 8)] = B[i]; // B[n][k]
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); // generic-proxy writes, read by wgmma
  __syncthreads();
  const unsigned lbo = variant ? 256 : 128, sbo = variant ? 128 : 256;
  const int r0 = warp * 16 + g;
  uint32_t a[4] = {__float_as_uint(A[r0 * 8 + t]), __float_as_uint(A[(r0 + 8) * 8 + t]),
                   __float_as_uint(A[r0 * 8 + t + 4]), __float_as_uint(A[(r0 + 8) * 8 + t + 4])};
  float d[N / 2];
  for (int i = 0; i < N / 2; i++) d[i] = 0.0f;
  wg_fence();
  if constexpr (N == 64) {
    if (ss) wg_ss_n64(d, wg_desc(sa, lbo, sbo), wg_desc(sb, lbo, sbo), 0);
    else wg_rs_n64(d, a, wg_desc(sb, lbo, sbo), 0);
  } else if constexpr (N == 24) {
    wg_rs_n24(d, a, wg_desc(sb, lbo, sbo), 0);
  } else {
    wg_rs_n128(d, a, wg_desc(sb, lbo, sbo), 0);
  }
  wg_commit();
  wg_wait<0>();
  for (int j = 0; j < N / 8; j++)
    for (int r = 0; r < 4; r++) D[(r0 + (r >> 1) * 8) * N + j * 8 + 2 * t + (r & 1)] = d[j * 4 + r];
}

template <int N> static double check(int variant, int ss) {
  float hA[64 * 8], hB[N * 8], hD[64 * N];
  for (int m = 0; m < 64; m++)
    for (int k = 0; k < 8; k++) hA[m * 8 + k] = (float)((m * 3 + k * 5) % 7 - 3);
  for (int n = 0; n < N; n++)
    for (int k = 0; k < 8; k++) hB[n * 8 + k] = (float)((n * 5 + k * 3) % 9 - 4);
  float *dA, *dB, *dD;
  CK(cudaMalloc(&dA, sizeof hA));
  CK(cudaMalloc(&dB, sizeof hB));
  CK(cudaMalloc(&dD, sizeof hD));
  CK(cudaMemcpy(dA, hA, sizeof hA, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB, sizeof hB, cudaMemcpyHostToDevice));
  CK(cudaMemset(dD, 0xff, sizeof hD)); // NaN: a missing store shows
  check_kernel<N><<<1, 128>>>(dA, dB, dD, variant, ss);
  CK(cudaGetLastError());
  CK(cudaMemcpy(hD, dD, sizeof hD, cudaMemcpyDeviceToHost));
  double worst = 0.0;
  for (int m = 0; m < 64; m++)
    for (int n = 0; n < N; n++) {
      double ref = 0.0;
      for (int k = 0; k < 8; k++) ref += (double)hA[m * 8 + k] * hB[n * 8 + k];
      const double e = fabs(ref - hD[m * N + n]);
      if (!(e <= worst)) worst = e != e ? 1e30 : e;
    }
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dD));
  return worst;
}

// (2) rates. Every kernel: 256 threads, `iters` rounds, results summed into out (so nothing is dead).
// mma.sync: a warp's 4 x 8 tiles (volua's WM 4, WN 8), operands in registers.
__global__ void __launch_bounds__(256, 1) rate_mma(const float *in, float *out, int iters) {
  const int lane = threadIdx.x & 31;
  uint32_t a[4][4], b[8][2];
  for (int i = 0; i < 4; i++)
    for (int r = 0; r < 4; r++) a[i][r] = __float_as_uint(in[(i * 4 + r + lane) & 63]);
  for (int j = 0; j < 8; j++)
    for (int r = 0; r < 2; r++) b[j][r] = __float_as_uint(in[(j * 2 + r + lane + 7) & 63]);
  float acc[4][8][4] = {};
  for (int it = 0; it < iters; it++)
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int i = 0; i < 4; i++) mma1688(acc[i][j], a[i], b[j]);
  float s = 0.0f;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++)
      for (int r = 0; r < 4; r++) s += acc[i][j][r];
  atomicAdd(out, s);
}

// wgmma, A from registers held fixed: 4 products of 64 x N per round per warpgroup (two warpgroups),
// into 4 accumulators (N 128: 2, for registers)
template <int N> __global__ void __launch_bounds__(256, 1) rate_wg_rs(const float *in, float *out, int iters) {
  __shared__ __align__(128) float sb[N * 8 * 4];
  for (int i = threadIdx.x; i < N * 8 * 4; i += 256) sb[i] = in[i & 63];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int lane = threadIdx.x & 31;
  uint32_t a[4] = {__float_as_uint(in[lane & 63]), __float_as_uint(in[(lane + 1) & 63]),
                   __float_as_uint(in[(lane + 2) & 63]), __float_as_uint(in[(lane + 3) & 63])};
  constexpr int NA = N == 128 ? 2 : 4;
  float d[NA][N / 2];
  for (int i = 0; i < NA; i++)
    for (int r = 0; r < N / 2; r++) d[i][r] = 0.0f;
  uint64_t db[4];
  for (int i = 0; i < 4; i++) db[i] = wg_desc(sb + i * N * 8, 128, 256);
  wg_fence();
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      if constexpr (N == 24) wg_rs_n24(d[i], a, db[(i + it) & 3], 1);
      else if constexpr (N == 64) wg_rs_n64(d[i], a, db[(i + it) & 3], 1);
      else wg_rs_n128(d[i % NA], a, db[(i + it) & 3], 1);
    }
    wg_commit();
    wg_wait<1>();
  }
  wg_wait<0>();
  float s = 0.0f;
  for (int i = 0; i < NA; i++)
    for (int r = 0; r < N / 2; r++) s += d[i][r];
  atomicAdd(out, s);
}

// wgmma N 64, A loaded from shared memory by each warp every k-step (4 m16 rows x 8 k per product:
// 16 LDS.32 per thread per k-step, the pattern of volua's k-loop), double-buffered in registers;
// B: `ksteps` k-steps of weights (64 x 8 each) in shared memory, cycled.
template <int N> __global__ void __launch_bounds__(256, 1) rate_wg_lds(const float *in, float *out, int iters, int ksteps) {
  extern __shared__ __align__(128) float sm[];
  float *sb = sm, *sp = sm + ksteps * N * 8; // weights, then a 16 KB "patch"
  for (int i = threadIdx.x; i < ksteps * N * 8 + 4096; i += 256) sm[i] = in[i & 63];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  // each thread's A rows: 4 floats apart, k by t (one LDS.32 of a warp reads 32 distinct banks)
  int ro[4][2];
  for (int i = 0; i < 4; i++)
    for (int h = 0; h < 2; h++) ro[i][h] = ((warp & 3) * 64 + i * 16 + g + 8 * h) * 4 + t;
  float d[4][N / 2];
  for (int i = 0; i < 4; i++)
    for (int r = 0; r < N / 2; r++) d[i][r] = 0.0f;
  uint32_t a[2][4][4];
  int s = 0;
  auto load = [&](uint32_t(&aa)[4][4], int ks) {
    const int ko = (ks * 8) & 511;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      aa[i][0] = __float_as_uint(sp[(ro[i][0] + ko) & 4095]);
      aa[i][1] = __float_as_uint(sp[(ro[i][1] + ko) & 4095]);
      aa[i][2] = __float_as_uint(sp[(ro[i][0] + ko + 4) & 4095]);
      aa[i][3] = __float_as_uint(sp[(ro[i][1] + ko + 4) & 4095]);
    }
  };
  load(a[0], 0);
  for (int it = 0; it < iters; it++) {
#pragma unroll 1
    for (int k = 0; k < ksteps; k += 2) { // two k-steps per round: the register buffers alternate
      wg_fence();
      const uint64_t db0 = wg_desc(sb + k * N * 8, 128, 256);
#pragma unroll
      for (int i = 0; i < 4; i++) {
        if constexpr (N == 64) wg_rs_n64(d[i], a[0][i], db0, 1);
        else wg_rs_n24(d[i], a[0][i], db0, 1);
      }
      wg_commit();
      wg_wait<1>(); // the products that read a[1] are done: it may be loaded again
      load(a[1], k + 1);
      wg_fence();
      const uint64_t db1 = wg_desc(sb + (k + 1) * N * 8, 128, 256);
#pragma unroll
      for (int i = 0; i < 4; i++) {
        if constexpr (N == 64) wg_rs_n64(d[i], a[1][i], db1, 1);
        else wg_rs_n24(d[i], a[1][i], db1, 1);
      }
      wg_commit();
      wg_wait<1>();
      load(a[0], k + 2);
    }
    s += ksteps;
  }
  wg_wait<0>();
  float sum = (float)s;
  for (int i = 0; i < 4; i++)
    for (int r = 0; r < N / 2; r++) sum += d[i][r];
  atomicAdd(out, sum);
}

// wgmma N 64, both operands from shared memory
__global__ void __launch_bounds__(256, 1) rate_wg_ss(const float *in, float *out, int iters) {
  __shared__ __align__(128) float sm[8 * 512];
  for (int i = threadIdx.x; i < 8 * 512; i += 256) sm[i] = in[i & 63];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float d[4][32];
  for (int i = 0; i < 4; i++)
    for (int r = 0; r < 32; r++) d[i][r] = 0.0f;
  wg_fence();
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int i = 0; i < 4; i++)
      wg_ss_n64(d[i], wg_desc(sm + i * 512, 128, 256), wg_desc(sm + (4 + ((i + it) & 3)) * 512, 128, 256), 1);
    wg_commit();
    wg_wait<1>();
  }
  wg_wait<0>();
  float s = 0.0f;
  for (int i = 0; i < 4; i++)
    for (int r = 0; r < 32; r++) s += d[i][r];
  atomicAdd(out, s);
}

template <class F> static float time_ms(F launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  launch(); // warm-up
  CK(cudaGetLastError());
  float best = 1e30f;
  for (int r = 0; r < 5; r++) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (ms < best) best = ms;
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return best;
}

int main() {
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device: %s, %d SMs\n", prop.name, sms);
  printf("layout check (max |error| against the exact product; 0 = the layout is right):\n");
  for (int v = 0; v < 2; v++)
    printf("  %s: RS n64 %g, SS n64 %g, RS n24 %g, RS n128 %g\n", v ? "LBO 256 SBO 128" : "LBO 128 SBO 256",
           check<64>(v, 0), check<64>(v, 1), check<24>(v, 0), check<128>(v, 0));

  float *in, *out;
  CK(cudaMalloc(&in, 64 * sizeof(float)));
  CK(cudaMalloc(&out, sizeof(float)));
  float h[64];
  for (int i = 0; i < 64; i++) h[i] = 1.0f / (float)(i + 1);
  CK(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
  const int iters = 20000;
  auto tf = [&](double flops, float ms) { return flops / (ms * 1e-3) / 1e12; };
  for (int bps = 1; bps <= 1; bps++) { // (163 registers: one block of 8 warps per SM)
    const int blocks = sms * bps;
    const float ms = time_ms([&] { rate_mma<<<blocks, 256>>>(in, out, iters); });
    printf("mma.sync m16n8k8, %d block(s) of 8 warps per SM: %.1f TFLOP/s\n", bps,
           tf((double)blocks * 8 * iters * 32 * 2048.0, ms));
  }
  {
    const int blocks = sms;
    float ms = time_ms([&] { rate_wg_rs<24><<<blocks, 256>>>(in, out, iters); });
    printf("wgmma RS m64n24k8, 2 warpgroups per SM: %.1f TFLOP/s\n", tf((double)blocks * 2 * iters * 4 * 2.0 * 64 * 24 * 8, ms));
    ms = time_ms([&] { rate_wg_rs<64><<<blocks, 256>>>(in, out, iters); });
    printf("wgmma RS m64n64k8, 2 warpgroups per SM: %.1f TFLOP/s\n", tf((double)blocks * 2 * iters * 4 * 2.0 * 64 * 64 * 8, ms));
    ms = time_ms([&] { rate_wg_rs<128><<<blocks, 256>>>(in, out, iters); });
    printf("wgmma RS m64n128k8, 2 warpgroups per SM: %.1f TFLOP/s\n", tf((double)blocks * 2 * iters * 4 * 2.0 * 64 * 128 * 8, ms));
    ms = time_ms([&] { rate_wg_ss<<<blocks, 256>>>(in, out, iters); });
    printf("wgmma SS m64n64k8, 2 warpgroups per SM: %.1f TFLOP/s\n", tf((double)blocks * 2 * iters * 4 * 2.0 * 64 * 64 * 8, ms));
    auto lds = [&](auto kern, int n, int ks) {
      const size_t smem = (size_t)(ks * n * 8 + 4096) * 4;
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
      const int it2 = iters / ks * 2;
      const float t = time_ms([&] { kern<<<blocks, 256, smem>>>(in, out, it2, ks); });
      printf("wgmma RS m64n%dk8 with A by LDS each k-step (conflict-free; %d k-steps of weights): %.1f TFLOP/s\n", n, ks,
             tf((double)blocks * 2 * it2 * ks * 4 * 2.0 * 64 * n * 8, t));
    };
    lds(rate_wg_lds<64>, 64, 8);
    lds(rate_wg_lds<64>, 64, 40);
    lds(rate_wg_lds<24>, 24, 12);
  }
  CK(cudaFree(in));
  CK(cudaFree(out));
  return 0;
}
