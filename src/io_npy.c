/* io_npy.c: NumPy .npy files (format 1.0, 2.0, 3.0; little-endian, C order) <-> CPU tensors. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "volua's file formats are little-endian and are copied as they lie: port io_npy.c first"
#endif

/* numpy refuses headers over 10000 bytes unless told otherwise; ours are far smaller, so
 * this limit only stops a lying length from making us read (and allocate) much. */
#define NPY_MAX_HEADER (1 << 20)
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21 /* numpy leaves room to grow the first size in place */

typedef enum { NPY_F4, NPY_F8, NPY_I4, NPY_I8 } npy_kind;

typedef struct npy_info {
  npy_kind kind;
  size_t itemsize;
  volua_dtype dtype;
  int ndim;
  int64_t shape[VOLUA_MAX_DIMS];
  int64_t numel;
  uint64_t data_offset; /* bytes before the data */
  uint64_t data_bytes;  /* numel * itemsize, as stored */
} npy_info;



/* -- the preamble: magic, version, header length ---- */

/* Reads the fixed part from buf (at least min(total, 12) bytes of a file `total` long) and
 * says where the header dictionary lies. */
static int npy_preamble(const uint8_t *buf, uint64_t total, uint64_t *hstart, uint64_t *hlen,
                        char *what) {
  if (total < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
    if (total >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0)
      snprintf(what, VOLUA_ERR_MAX, "truncated header: the file is only %llu bytes",
               (unsigned long long)total);
    else
      snprintf(what, VOLUA_ERR_MAX, "not a .npy file (it does not start with \\x93NUMPY)");
    return 1;
  }
  int major = buf[6], minor = buf[7];
  if (minor != 0 || major < 1 || major > 3) {
    snprintf(what, VOLUA_ERR_MAX, "unsupported .npy format version %d.%d (volua reads 1.0, 2.0, 3.0)",
             major, minor);
    return 1;
  }
  if (major == 1) {
    *hstart = 10;
    *hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
  } else {
    if (total < 12) {
      snprintf(what, VOLUA_ERR_MAX, "truncated header: the file is only %llu bytes",
               (unsigned long long)total);
      return 1;
    }
    *hstart = 12;
    *hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 |
            (uint64_t)buf[11] << 24;
  }
  if (*hlen > NPY_MAX_HEADER) {
    snprintf(what, VOLUA_ERR_MAX, "header length %llu is over the limit of %d bytes",
             (unsigned long long)*hlen, NPY_MAX_HEADER);
    return 1;
  }
  if (*hstart + *hlen > total) {
    snprintf(what, VOLUA_ERR_MAX,
             "truncated header: it says it is %llu bytes long but the file has %llu after the preamble",
             (unsigned long long)*hlen, (unsigned long long)(total - *hstart));
    return 1;
  }
  return 0;
}

/* -- the header dictionary: a Python literal such as
 *    {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }  ---- */

typedef struct cursor {
  const uint8_t *p, *end, *base; /* base: the file's first byte, for positions in messages */
} cursor;

static void skip_space(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r' ||
                           *c->p == '\f'))
    c->p++;
}

static int at(cursor *c, char ch) { return c->p < c->end && *c->p == (uint8_t)ch; }

static const char *next_token(cursor *c, char *buf, size_t cap) {
  if (c->p >= c->end) return "the end of the header";
  size_t n = (size_t)(c->end - c->p);
  return volua_io_printable(c->p, n < 12 ? n : 12, buf, cap);
}

static int expected(cursor *c, const char *what_expected, char *what) {
  char tok[80];
  snprintf(what, VOLUA_ERR_MAX, "bad header: expected %s at byte %td, found '%s'", what_expected,
           c->p - c->base, next_token(c, tok, sizeof tok));
  return 1;
}

/* A quoted Python string without escapes (numpy writes none). */
static int parse_string(cursor *c, const uint8_t **s, size_t *n, char *what) {
  if (!at(c, '\'') && !at(c, '"')) return expected(c, "a quoted string", what);
  uint8_t q = *c->p++;
  const uint8_t *start = c->p;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || *c->p == '\n') {
      snprintf(what, VOLUA_ERR_MAX, "bad header: escapes and line breaks in strings are not supported");
      return 1;
    }
    c->p++;
  }
  if (c->p >= c->end) {
    snprintf(what, VOLUA_ERR_MAX, "bad header: unterminated string");
    return 1;
  }
  *s = start;
  *n = (size_t)(c->p - start);
  c->p++;
  return 0;
}

static int word_is(const uint8_t *s, size_t n, const char *w) {
  return n == strlen(w) && memcmp(s, w, n) == 0;
}

static int parse_bool(cursor *c, int *v, char *what) {
  const uint8_t *s = c->p;
  while (c->p < c->end && ((*c->p >= 'A' && *c->p <= 'Z') || (*c->p >= 'a' && *c->p <= 'z'))) c->p++;
  size_t n = (size_t)(c->p - s);
  if (word_is(s, n, "True")) { *v = 1; return 0; }
  if (word_is(s, n, "False")) { *v = 0; return 0; }
  c->p = s;
  return expected(c, "True or False for 'fortran_order'", what);
}

/* A size: a non-negative decimal integer (Python 2 wrote a trailing L). */
static int parse_size(cursor *c, int64_t *v, char *what) {
  int neg = 0;
  if (at(c, '-')) { neg = 1; c->p++; skip_space(c); }
  if (!(c->p < c->end && *c->p >= '0' && *c->p <= '9')) return expected(c, "a size in 'shape'", what);
  int64_t x = 0;
  int big = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *c->p - '0', &x)) big = 1;
    c->p++;
  }
  if (at(c, 'L') || at(c, 'l')) c->p++;
  if (neg && (x != 0 || big)) {
    snprintf(what, VOLUA_ERR_MAX, "bad header: 'shape' has a negative size");
    return 1;
  }
  if (big) {
    snprintf(what, VOLUA_ERR_MAX, "bad header: a size in 'shape' does not fit in int64");
    return 1;
  }
  *v = x;
  return 0;
}

/* A tuple of sizes: (), (3,), (2, 3), (2, 3,) */
static int parse_shape(cursor *c, npy_info *info, char *what) {
  if (!at(c, '(')) return expected(c, "a tuple such as (2, 3) for 'shape'", what);
  c->p++;
  info->ndim = 0;
  int commas = 0;
  for (;;) {
    skip_space(c);
    if (at(c, ')')) break;
    if (info->ndim == VOLUA_MAX_DIMS) {
      snprintf(what, VOLUA_ERR_MAX, "'shape' has more than %d dimensions, volua's limit",
               VOLUA_MAX_DIMS);
      return 1;
    }
    if (parse_size(c, &info->shape[info->ndim], what)) return 1;
    info->ndim++;
    skip_space(c);
    if (at(c, ',')) { c->p++; commas++; continue; }
    if (at(c, ')')) break;
    return expected(c, "',' or ')' in 'shape'", what);
  }
  c->p++;
  if (info->ndim == 1 && commas == 0) {
    snprintf(what, VOLUA_ERR_MAX, "bad header: 'shape' (%lld) is not a tuple (a 1-tuple is written (%lld,))",
             (long long)info->shape[0], (long long)info->shape[0]);
    return 1;
  }
  return 0;
}

static int parse_descr(cursor *c, npy_info *info, char *what) {
  if (at(c, '[')) {
    snprintf(what, VOLUA_ERR_MAX, "structured dtypes (a list in 'descr') are not supported");
    return 1;
  }
  const uint8_t *s;
  size_t n;
  if (parse_string(c, &s, &n, what)) return 1;
  char shown[160];
  volua_io_printable(s, n, shown, sizeof shown);
  static const struct { const char *descr; npy_kind kind; size_t size; volua_dtype dtype; } known[] = {
      {"<f4", NPY_F4, 4, VOLUA_FLOAT32}, {"<f8", NPY_F8, 8, VOLUA_FLOAT32},
      {"<i4", NPY_I4, 4, VOLUA_INT64},   {"<i8", NPY_I8, 8, VOLUA_INT64},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    if (word_is(s, n, known[i].descr)) {
      info->kind = known[i].kind;
      info->itemsize = known[i].size;
      info->dtype = known[i].dtype;
      return 0;
    }
  }
  if (n >= 2 && s[0] == '|' && s[1] == 'O')
    snprintf(what, VOLUA_ERR_MAX, "object arrays ('%s') are not supported: they hold pickled Python objects", shown);
  else if (n >= 1 && s[0] == '>')
    snprintf(what, VOLUA_ERR_MAX, "big-endian dtype '%s' is not supported (volua reads '<f4', '<f8', '<i4', '<i8')", shown);
  else
    snprintf(what, VOLUA_ERR_MAX, "dtype '%s' is not supported (volua reads '<f4', '<f8', '<i4', '<i8')", shown);
  return 1;
}

/* The element count, and the stored byte count, checked for overflow; in memory an element
 * takes up to 8 bytes, so that product is checked too. Like numpy, the product of the
 * non-zero sizes must fit even when a zero makes the array empty: code that multiplies
 * sizes in another order must never overflow. */
static int npy_sizes(npy_info *info, char *what) {
  int64_t n = 1, bytes;
  int zero = 0;
  for (int i = 0; i < info->ndim; i++) {
    if (info->shape[i] == 0) zero = 1;
    else if (__builtin_mul_overflow(n, info->shape[i], &n)) goto overflow;
  }
  if (__builtin_mul_overflow(n, (int64_t)8, &bytes)) goto overflow;
  if (zero) n = 0;
  info->numel = n;
  info->data_bytes = (uint64_t)n * info->itemsize;
  return 0;
overflow: {
  char s[256];
  snprintf(what, VOLUA_ERR_MAX, "'shape' %s has more elements than int64 can count",
           volua_shape_str(info->ndim, info->shape, s, sizeof s));
  return 1;
}
}

static int npy_dict(const uint8_t *file, size_t hstart, size_t n, npy_info *info, char *what) {
  cursor c = {file + hstart, file + hstart + n, file};
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
  skip_space(&c);
  if (!at(&c, '{')) return expected(&c, "'{' opening the header dictionary", what);
  c.p++;
  for (;;) {
    skip_space(&c);
    if (at(&c, '}')) break;
    const uint8_t *key;
    size_t klen;
    if (parse_string(&c, &key, &klen, what)) return 1;
    skip_space(&c);
    if (!at(&c, ':')) return expected(&c, "':' after a key", what);
    c.p++;
    skip_space(&c);
    int *seen;
    int rc;
    if (word_is(key, klen, "descr")) { seen = &have_descr; rc = parse_descr(&c, info, what); }
    else if (word_is(key, klen, "fortran_order")) { seen = &have_order; rc = parse_bool(&c, &fortran, what); }
    else if (word_is(key, klen, "shape")) { seen = &have_shape; rc = parse_shape(&c, info, what); }
    else {
      char shown[160];
      snprintf(what, VOLUA_ERR_MAX, "bad header: unexpected key '%s' (numpy writes 'descr', 'fortran_order', 'shape')",
               volua_io_printable(key, klen, shown, sizeof shown));
      return 1;
    }
    if (rc) return 1;
    if (*seen) {
      char shown[160];
      snprintf(what, VOLUA_ERR_MAX, "bad header: key '%s' appears twice", volua_io_printable(key, klen, shown, sizeof shown));
      return 1;
    }
    *seen = 1;
    skip_space(&c);
    if (at(&c, ',')) { c.p++; continue; }
    if (at(&c, '}')) break;
    return expected(&c, "',' or '}' in the header dictionary", what);
  }
  c.p++;
  /* numpy pads with spaces and ends with '\n'; older writers padded with NULs. */
  while (c.p < c.end && (*c.p == ' ' || *c.p == '\n' || *c.p == '\r' || *c.p == '\t' || *c.p == 0)) c.p++;
  if (c.p < c.end) return expected(&c, "only padding after the header dictionary", what);
  const char *missing = !have_descr ? "descr" : !have_order ? "fortran_order" : !have_shape ? "shape" : NULL;
  if (missing) {
    snprintf(what, VOLUA_ERR_MAX, "bad header: key '%s' is missing", missing);
    return 1;
  }
  if (fortran) {
    /* Column-major and row-major agree when at most one size exceeds 1. */
    int big = 0;
    for (int i = 0; i < info->ndim; i++) big += info->shape[i] > 1;
    if (big > 1) {
      snprintf(what, VOLUA_ERR_MAX, "fortran_order True (column-major data) is not supported; "
                                    "save np.ascontiguousarray(a) instead");
      return 1;
    }
  }
  return npy_sizes(info, what);
}

/* Checks the data's length, total bytes in all, against the header. */
static int npy_check_length(const npy_info *info, uint64_t total, char *what) {
  uint64_t have = total - info->data_offset;
  if (have == info->data_bytes) return 0;
  char s[256];
  volua_shape_str(info->ndim, info->shape, s, sizeof s);
  if (have < info->data_bytes)
    snprintf(what, VOLUA_ERR_MAX, "data is truncated: shape %s needs %llu bytes but the file has %llu after the header",
             s, (unsigned long long)info->data_bytes, (unsigned long long)have);
  else
    snprintf(what, VOLUA_ERR_MAX, "the file has %llu bytes after the header but shape %s needs %llu",
             (unsigned long long)have, s, (unsigned long long)info->data_bytes);
  return 1;
}

/* Parses everything before the data; buf holds at least hstart + hlen bytes (the preamble
 * says how many) of a file `total` bytes long. */
static int npy_header(const uint8_t *buf, size_t avail, uint64_t total, npy_info *info,
                      uint64_t *need, char *what) {
  uint64_t hstart, hlen;
  if (npy_preamble(buf, total, &hstart, &hlen, what)) return 1;
  *need = hstart + hlen;
  if (avail < *need) return 0; /* the caller reads more and calls again */
  memset(info, 0, sizeof *info);
  if (npy_dict(buf, (size_t)hstart, (size_t)hlen, info, what)) return 1;
  info->data_offset = hstart + hlen;
  return npy_check_length(info, total, what);
}

/* Stored elements -> tensor elements (float64 rounds to float32, int32 widens). */
static void npy_convert(npy_kind kind, const uint8_t *src, int64_t count, void *dst) {
  switch (kind) {
  case NPY_F4: memcpy(dst, src, (size_t)count * 4); break;
  case NPY_I8: memcpy(dst, src, (size_t)count * 8); break;
  case NPY_F8:
    for (int64_t i = 0; i < count; i++) {
      double d;
      memcpy(&d, src + 8 * i, 8);
      ((float *)dst)[i] = (float)d;
    }
    break;
  case NPY_I4:
    for (int64_t i = 0; i < count; i++) {
      int32_t v;
      memcpy(&v, src + 4 * i, 4);
      ((int64_t *)dst)[i] = v;
    }
    break;
  }
}

static int npy_alloc(const npy_info *info, volua_tensor *out, const char *path, char *err) {
  char e[VOLUA_ERR_MAX];
  if (volua_tensor_alloc(out, info->ndim, info->shape, info->dtype, VOLUA_DEVICE_CPU, e))
    return volua_io_fail(err, "load", path, "%s", e);
  return 0;
}

/* -- reading ---- */

int volua_npy_parse(const uint8_t *buf, size_t len, const char *path, volua_tensor *out,
                    char *err) {
  npy_info info;
  uint64_t need;
  char what[VOLUA_ERR_MAX];
  if (npy_header(buf, len, len, &info, &need, what)) return volua_io_fail(err, "load", path, "%s", what);
  if (npy_alloc(&info, out, path, err)) return 1;
  npy_convert(info.kind, buf + info.data_offset, info.numel, volua_tensor_data(out));
  return 0;
}

int volua_npy_load(const char *path, volua_tensor *out, char *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return volua_io_fail(err, "load", path, "cannot open: %s", strerror(errno));
  struct stat st;
  uint8_t *hdr = NULL, *bounce = NULL;
  char what[VOLUA_ERR_MAX];
  int rc = 1;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    volua_io_fail(err, "load", path, "not a regular file");
    goto done;
  }
  uint64_t total = (uint64_t)st.st_size, need = 0;
  npy_info info;
  uint8_t pre[12];
  size_t got = fread(pre, 1, total < 12 ? (size_t)total : 12, f);
  if (npy_header(pre, got, total, &info, &need, what)) { volua_io_fail(err, "load", path, "%s", what); goto done; }
  hdr = malloc((size_t)need); /* need <= 12 + NPY_MAX_HEADER, checked against the file size */
  if (!hdr) { volua_io_fail(err, "load", path, "out of memory reading the header"); goto done; }
  memcpy(hdr, pre, got);
  if (fread(hdr + got, 1, (size_t)need - got, f) != (size_t)need - got) {
    volua_io_fail(err, "load", path, "read failed (the file shrank?)");
    goto done;
  }
  if (npy_header(hdr, (size_t)need, total, &info, &need, what)) {
    volua_io_fail(err, "load", path, "%s", what);
    goto done;
  }
  if (npy_alloc(&info, out, path, err)) goto done;
  /* Straight into the tensor where the layout matches, through a bounce buffer otherwise. */
  uint8_t *dst = volua_tensor_data(out);
  size_t dsize = volua_dtype_size(info.dtype);
  enum { CHUNK = 1 << 16 };
  if (info.itemsize != dsize && !(bounce = malloc(CHUNK * 8))) {
    volua_io_fail(err, "load", path, "out of memory");
    volua_tensor_free(out);
    goto done;
  }
  int64_t done_n = 0;
  while (done_n < info.numel) {
    int64_t n = info.numel - done_n;
    if (info.itemsize != dsize && n > CHUNK) n = CHUNK;
    uint8_t *src = info.itemsize == dsize ? dst + done_n * (int64_t)dsize : bounce;
    if (fread(src, info.itemsize, (size_t)n, f) != (size_t)n) {
      volua_io_fail(err, "load", path, "read failed (the file shrank?)");
      volua_tensor_free(out);
      goto done;
    }
    if (info.itemsize != dsize) npy_convert(info.kind, src, n, dst + done_n * (int64_t)dsize);
    done_n += n;
  }
  rc = 0;
done:
  free(bounce);
  free(hdr);
  fclose(f);
  return rc;
}

/* -- writing ---- */

size_t volua_npy_header(const volua_tensor *t, char *hdr, size_t cap) {
  char dict[512];
  size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                              t->dtype == VOLUA_INT64 ? "<i8" : "<f4");
  for (int i = 0; i < t->ndim; i++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
  n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", t->ndim == 1 ? "," : "");
  if (t->ndim > 0) {
    char first[32];
    int digits = snprintf(first, sizeof first, "%lld", (long long)t->shape[0]);
    for (int i = digits; i < NPY_GROWTH_DIGITS; i++) dict[n++] = ' ';
  }
  /* As numpy's _wrap_header: spaces then '\n' so the data starts at a multiple of 64
   * (a whole 64 bytes of padding when already aligned). */
  size_t pad = NPY_ALIGN - (10 + n + 1) % NPY_ALIGN;
  size_t hlen = n + pad + 1, total = 10 + hlen;
  if (total > cap || hlen > 0xffff) return 0;
  memcpy(hdr, "\x93NUMPY\x01\x00", 8);
  hdr[8] = (char)(hlen & 0xff);
  hdr[9] = (char)(hlen >> 8);
  memcpy(hdr + 10, dict, n);
  memset(hdr + 10 + n, ' ', pad);
  hdr[total - 1] = '\n';
  return total;
}

int volua_npy_save(const char *path, const volua_tensor *t, char *err) {
  if (!t->storage) return volua_io_fail(err, "save", path, "the tensor has been freed");
  if (t->device != VOLUA_DEVICE_CPU) return volua_io_fail(err, "save", path, "the tensor is on %s; copy it to the cpu first",
                                                 volua_device_name(t->device));
  char hdr[1024];
  size_t hlen = volua_npy_header(t, hdr, sizeof hdr);
  if (!hlen) return volua_io_fail(err, "save", path, "header does not fit"); /* 8 dims of int64 always fit */
  FILE *f = fopen(path, "wb");
  if (!f) return volua_io_fail(err, "save", path, "cannot open for writing: %s", strerror(errno));
  size_t bytes = (size_t)volua_tensor_numel(t) * volua_dtype_size(t->dtype);
  int bad = fwrite(hdr, 1, hlen, f) != hlen;
  if (!bad && bytes) bad = fwrite(volua_tensor_data(t), 1, bytes, f) != bytes;
  int e = errno;
  if (fclose(f) != 0 && !bad) { bad = 1; e = errno; }
  if (bad) {
    remove(path);
    return volua_io_fail(err, "save", path, "write failed: %s", strerror(e));
  }
  return 0;
}
