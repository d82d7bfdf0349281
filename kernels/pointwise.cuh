// pointwise.cuh: one step of a pointwise chain (src/op_params.h, volua_pw_chain) on one float32
// value, by the element rules of the op it names (elementwise_rules.cuh): kernels/pointwise.cu's
// pass, and the convolutions' fused epilogue (tc_core.cuh), which takes the chain's first steps
// that are a few instructions each (pw_cheap) and leaves the rest to the pass.
#ifndef VOLUA_KERNELS_POINTWISE_CUH
#define VOLUA_KERNELS_POINTWISE_CUH

#include "elementwise_rules.cuh"

// The steps a convolution's epilogue applies in its registers: neg, abs, relu, leaky_relu, clamp
// (and hardtanh), arithmetic with a number or a per-channel value, fills. The transcendental
// activations stay in the pass (their code, inlined at every store of the tensor-core kernels,
// would grow them several times over).
static inline int pw_cheap(const volua_pw_step *s) {
  if (s->kind != VOLUA_PW_UNARY) return 1;
  return s->op == VOLUA_UN_NEG || s->op == VOLUA_UN_ABS || s->op == VOLUA_UN_RELU || s->op == VOLUA_UN_LEAKY_RELU ||
         s->op == VOLUA_UN_CLAMP;
}

// The first steps of chain c that a convolution's stores can apply (pw_cheap; a channel step only
// where its operand has one value, or C channels of S values each, the output's) into dst; their count.
static inline int pw_take_prefix(const volua_pw_chain *c, volua_pw_chain *dst, int64_t C, int64_t S) {
  int n = 0;
  while (n < c->n) {
    const volua_pw_step *s = &c->step[n];
    if (!pw_cheap(s) || (s->kind == VOLUA_PW_CHANNEL && s->vstep != 0 && (s->C != C || s->S != S))) break;
    dst->step[n] = *s;
    n++;
  }
  dst->n = n;
  return n;
}

// A cheap step (pw_cheap) on v; operand: a channel step's value for v's channel.
VOLUA_RULE float pw_step_cheap(const volua_pw_step &s, float v, float operand) {
  if (s.kind == VOLUA_PW_SCALAR) return scalar_f32_rule{s.f0, s.op, s.scalar_first}(v);
  if (s.kind == VOLUA_PW_CHANNEL) return bin_f32(v, operand, s.op);
  if (s.kind == VOLUA_PW_FILL) return s.f0;
  if (s.op == VOLUA_UN_LEAKY_RELU) return leaky_relu_rule{s.f0}(v);
  if (s.op == VOLUA_UN_CLAMP) return clamp_rule{s.f0, s.f1}(v);
  return unary_f32_rule{s.op}(v); // neg, abs, relu
}

// Any step on v.
VOLUA_RULE float pw_step(const volua_pw_step &s, float v, float operand) {
  if (s.kind != VOLUA_PW_UNARY) return pw_step_cheap(s, v, operand);
  switch (s.op) {
  case VOLUA_UN_TANH: return tanh_rule{}(v);
  case VOLUA_UN_SIGMOID: return sigmoid_rule{}(v);
  case VOLUA_UN_EXP: return exp_rule{}(v);
  case VOLUA_UN_LOG: return log_rule{}(v);
  case VOLUA_UN_SQRT: return sqrt_rule{}(v);
  case VOLUA_UN_GELU: return gelu_rule{}(v);
  case VOLUA_UN_GELU_TANH: return gelu_tanh_rule{}(v);
  case VOLUA_UN_SILU: return silu_rule{}(v);
  case VOLUA_UN_MISH: return mish_rule{}(v);
  case VOLUA_UN_SOFTPLUS: return softplus_rule{s.p0, s.p1, s.f0}(v);
  case VOLUA_UN_ELU: return elu_rule{s.f0}(v);
  case VOLUA_UN_HARDSWISH: return hardswish_rule{}(v);
  case VOLUA_UN_HARDSIGMOID: return hardsigmoid_rule{}(v);
  default: return pw_step_cheap(s, v, operand); // neg, abs, relu, leaky_relu, clamp
  }
}

#endif
