/* fuzz_common.h: helpers shared by the fuzz targets: a file holding the input (so the file
 * readers are fuzzed too) and checks that turn a broken invariant into a crash. */
#ifndef VOLUA_FUZZ_COMMON_H
#define VOLUA_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../src/tensor.h"

#define FUZZ_CHECK(cond)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                \
    }                                                                         \
  } while (0)

/* An in-memory file holding data; its path is written to path. Returns the fd or -1. */
static inline int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t cap) {
  int fd = memfd_create("volua-fuzz", 0);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) { close(fd); return -1; }
    off += (size_t)w;
  }
  snprintf(path, cap, "/proc/self/fd/%d", fd);
  return fd;
}

/* A message must be a terminated string that starts with the operation and the path. */
static inline void fuzz_check_message(const char *err, const char *prefix) {
  FUZZ_CHECK(memchr(err, 0, VOLUA_ERR_MAX) != NULL);
  FUZZ_CHECK(strncmp(err, prefix, strlen(prefix)) == 0);
  FUZZ_CHECK(strlen(err) > strlen(prefix));
}

static inline int fuzz_same_tensor(const volua_tensor *a, const volua_tensor *b) {
  if (a->ndim != b->ndim || a->dtype != b->dtype) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  size_t bytes = (size_t)volua_tensor_numel(a) * volua_dtype_size(a->dtype);
  return bytes == 0 || memcmp(volua_tensor_data(a), volua_tensor_data(b), bytes) == 0;
}

#endif
