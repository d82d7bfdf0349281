/* io_common.c: what the .npy and safetensors readers share: messages about hostile files. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io.h"

int volua_io_fail(char *err, const char *op, const char *path, const char *fmt, ...) {
  int n = snprintf(err, VOLUA_ERR_MAX, "%s: %s: ", op, path);
  if (n < 0 || n >= VOLUA_ERR_MAX) return 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, (size_t)(VOLUA_ERR_MAX - n), fmt, ap);
  va_end(ap);
  return 1;
}

const char *volua_io_printable(const void *s, size_t n, char *buf, size_t cap) {
  const unsigned char *p = s;
  size_t o = 0;
  for (size_t i = 0; i < n && o + 5 < cap; i++) {
    if (i == 48) { memcpy(buf + o, "...", 3); o += 3; break; }
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') buf[o++] = (char)p[i];
    else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", p[i]);
  }
  buf[o] = 0;
  return buf;
}
