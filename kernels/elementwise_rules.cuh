// elementwise_rules.cuh: the float32 element rules of the elementwise ops (kernels/elementwise.cu)
// and the pointwise chains (kernels/pointwise.cu, the convolutions' fused epilogue in tc_core.cuh):
// one definition per op, so that a chain computes each value exactly as the op alone does.
// Compiled for the GPU, or with VOLUA_TC_EMULATE for the host (bench/tc_emulate.cpp), where the
// float functions are the C library's.
#ifndef VOLUA_KERNELS_ELEMENTWISE_RULES_CUH
#define VOLUA_KERNELS_ELEMENTWISE_RULES_CUH

#include <math.h>
#include <stdint.h>

#include "../src/op_params.h"

#ifdef VOLUA_TC_EMULATE
#define VOLUA_RULE inline
static inline float volua_fdiv_rn(float a, float b) { return a / b; }
#else
#define VOLUA_RULE __device__ __forceinline__
#define volua_fdiv_rn(a, b) __fdiv_rn(a, b)
#endif

// maximum / minimum: NaN propagates (torch.maximum), else the first operand on ties, as the CPU's
// max_nan / min_nan (exact in any precision).
template <typename V> VOLUA_RULE V max_nan(V a, V b) { return a != a ? a : b != b ? b : a < b ? b : a; }
template <typename V> VOLUA_RULE V min_nan(V a, V b) { return a != a ? a : b != b ? b : b < a ? b : a; }

// float32 arithmetic as the CPU does it: in double, rounded once to float.
VOLUA_RULE float bin_f32(float a, float b, int op) {
  double x = a, y = b;
  switch (op) {
  case VOLUA_BIN_ADD: return (float)(x + y);
  case VOLUA_BIN_SUB: return (float)(x - y);
  case VOLUA_BIN_MUL: return (float)(x * y);
  case VOLUA_BIN_MAXIMUM: return max_nan(a, b);
  case VOLUA_BIN_MINIMUM: return min_nan(a, b);
  default: return (float)(x / y);
  }
}

// float32 with a float scalar: in float, as torch computes in the tensor's dtype.
struct scalar_f32_rule {
  float s;
  int op, scalar_first;
  VOLUA_RULE float operator()(float v) const {
    switch (op) {
    case VOLUA_BIN_ADD: return v + s;
    case VOLUA_BIN_SUB: return scalar_first ? s - v : v - s;
    case VOLUA_BIN_MUL: return v * s;
    case VOLUA_BIN_MAXIMUM: return max_nan(v, s);
    case VOLUA_BIN_MINIMUM: return min_nan(v, s);
    default: return scalar_first ? volua_fdiv_rn(s, v) : volua_fdiv_rn(v, s);
    }
  }
};

struct unary_f32_rule {
  int op;
  // relu keeps NaN (v < 0 is false for NaN), as torch.relu
  VOLUA_RULE float operator()(float v) const {
    return op == VOLUA_UN_NEG ? -v : op == VOLUA_UN_ABS ? fabsf(v) : (v < 0.0f ? 0.0f : v);
  }
};

// -- activations: PyTorch's formulas in float (as its CUDA kernels compute them), with CUDA's
// accurate functions (expf, tanhf, erff, logf, log1pf, expm1f; sqrtf and "/" IEEE-rounded: no
// fast-math), so that each result is within a few ulp of the CPU's double reference; the bounds
// are derived in spec/activation_spec.lua. One rule per op, so that each map keeps
// map1_f32_kernel's straight-line loop. ----

struct tanh_rule {
  VOLUA_RULE float operator()(float x) const { return tanhf(x); }
};
struct sigmoid_rule { // expf(-x) = inf for x < -88.7: 1 / inf = 0
  VOLUA_RULE float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); }
};
struct exp_rule {
  VOLUA_RULE float operator()(float x) const { return expf(x); }
};
struct log_rule {
  VOLUA_RULE float operator()(float x) const { return logf(x); }
};
struct sqrt_rule {
  VOLUA_RULE float operator()(float x) const { return sqrtf(x); }
};
struct gelu_rule {
  VOLUA_RULE float operator()(float x) const {
    return x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
  }
};
struct gelu_tanh_rule { // x * x * x overflows to inf for |x| > 7e12: tanh(+-inf) = +-1, as in double
  VOLUA_RULE float operator()(float x) const {
    const float beta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(beta * (x + kappa * (x * x * x))));
  }
};
struct silu_rule {
  VOLUA_RULE float operator()(float x) const { return x / (1.0f + expf(-x)); }
};
struct mish_rule {
  VOLUA_RULE float operator()(float x) const { return x * tanhf(log1pf(expf(x))); }
};
// The threshold test in double, as the CPU makes it, so that both take the same branch (float
// rounding of x * beta could flip it, and the two branches differ by up to log(2) / beta).
struct softplus_rule {
  double beta, threshold;
  float fbeta;
  VOLUA_RULE float operator()(float x) const {
    const double z = (double)x * beta;
    return z > threshold ? x : log1pf(expf((float)z)) / fbeta;
  }
};
struct elu_rule {
  float alpha;
  VOLUA_RULE float operator()(float x) const { return x > 0.0f ? x : expm1f(x) * alpha; }
};
struct leaky_relu_rule {
  float slope;
  VOLUA_RULE float operator()(float x) const { return x > 0.0f ? x : x * slope; }
};
// std::min(std::max(...)) as comparisons, so that NaN passes through (fminf / fmaxf would drop it).
// In double, as the CPU: the same operations in the same order, so the same float. (In float,
// x * 6 overflows to inf for x > 5.7e37, where hardswish(x) is x; PyTorch's float formula gives
// that inf.)
struct hardswish_rule {
  VOLUA_RULE float operator()(float x) const {
    double m = (double)x + 3.0;
    m = m < 0.0 ? 0.0 : m;
    m = 6.0 < m ? 6.0 : m;
    return (float)((double)x * m / 6.0);
  }
};
struct hardsigmoid_rule {
  VOLUA_RULE float operator()(float x) const {
    double m = (double)x + 3.0;
    m = m < 0.0 ? 0.0 : m;
    m = 6.0 < m ? 6.0 : m;
    return (float)(m / 6.0);
  }
};
// Bounds rounded to float give the CPU's result exactly: x is a float and rounding is monotonic.
struct clamp_rule {
  float lo, hi;
  VOLUA_RULE float operator()(float x) const {
    const float r = x < lo ? lo : x;
    return hi < r ? hi : r;
  }
};

#endif
