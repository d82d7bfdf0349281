/* pointwise.c: the CPU reference of a pointwise chain (vol.pointwise, the convolutions' epilogue):
 * each step is its op's own CPU function over the whole tensor, in turn, so that the chain gives
 * exactly what the ops give one by one. */
#include <string.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_pointwise(const volua_pw_chain *c, int first, int64_t n, const float *x, float *y, char *err) {
  if (first >= c->n) {
    if (x != y) memcpy(y, x, (size_t)n * sizeof(float));
    return 0;
  }
  for (int k = first; k < c->n; k++) {
    const volua_pw_step *s = &c->step[k];
    const float *src = k == first ? x : y;
    if (volua_cpu_check_interrupt("pointwise", err)) return 1;
    if (s->kind == VOLUA_PW_UNARY) {
      const volua_unary_args a = {s->p0, s->p1, 1, 1};
      volua_cpu_unary(n, VOLUA_FLOAT32, src, y, (volua_unop)s->op, &a);
    } else if (s->kind == VOLUA_PW_SCALAR) {
      volua_cpu_binary_scalar(n, VOLUA_FLOAT32, src, s->p0, y, (volua_binop)s->op, s->scalar_first);
    } else if (s->kind == VOLUA_PW_CHANNEL) {
      /* (n / (C S), C, S) against the operand's (1, C, 1) (or one value: vstep 0) */
      volua_bcast_geom g;
      memset(&g, 0, sizeof g);
      g.ndim = 3;
      g.shape[0] = n / (s->C * s->S);
      g.shape[1] = s->C;
      g.shape[2] = s->S;
      g.stride_a[0] = s->C * s->S;
      g.stride_a[1] = s->S;
      g.stride_a[2] = 1;
      g.stride_b[1] = s->vstep;
      g.numel = n;
      volua_cpu_binary(&g, VOLUA_FLOAT32, src, s->vec, y, (volua_binop)s->op);
    } else {
      volua_cpu_fill(n, VOLUA_FLOAT32, y, s->p0);
    }
  }
  return 0;
}
