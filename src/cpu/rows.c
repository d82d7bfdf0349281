/* rows.c: the parallel row loop the convolution references share (volua_cpu_rows). */
#include <stdio.h>
#include <stdlib.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_rows(int64_t slabs, int64_t rows, int64_t cols, volua_cpu_row_fn row, const void *ctx,
                   float *y, const char *op, char *err) {
  int nomem = 0;
#pragma omp parallel
  {
    double *buf = malloc((size_t)(cols > 0 ? cols : 1) * sizeof *buf);
    if (!buf) {
#pragma omp atomic write
      nomem = 1;
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t s = 0; s < slabs; s++) {
      if (!buf || volua_interrupted) continue;
      float *ys = y + s * rows * cols;
      for (int64_t r = 0; r < rows; r++) {
        row(ctx, s, r, buf);
        for (int64_t c = 0; c < cols; c++) ys[r * cols + c] = (float)buf[c];
      }
    }
    free(buf);
  }
  if (nomem) {
    snprintf(err, VOLUA_ERR_MAX, "%s: out of memory for a row buffer of %lld doubles", op,
             (long long)cols);
    return 1;
  }
  return volua_cpu_check_interrupt(op, err);
}
