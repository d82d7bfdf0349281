/* io_safetensors.c: safetensors files <-> CPU tensors, checked as the safetensors crate
 * checks them, with a strict JSON reader of our own (iterative: no depth to blow). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "volua's file formats are little-endian and are copied as they lie: port io_safetensors.c first"
#endif

#define ST_MAX_HEADER 100000000 /* the crate's MAX_HEADER_SIZE */
#define ST_MAX_DEPTH 64         /* nesting allowed inside values we skip */



/* -- dtypes ---- */

typedef struct st_dtype {
  const char *name;
  size_t size;
  int supported;
  volua_dtype dtype; /* what it loads as */
} st_dtype;

/* Every dtype the format names, so that a file of another one gets a precise message. */
static const st_dtype st_dtypes[] = {
    {"F32", 4, 1, VOLUA_FLOAT32}, {"F64", 8, 1, VOLUA_FLOAT32}, {"I64", 8, 1, VOLUA_INT64},
    {"I32", 4, 1, VOLUA_INT64},   {"BOOL", 1, 0, 0},            {"U8", 1, 0, 0},
    {"I8", 1, 0, 0},              {"F8_E5M2", 1, 0, 0},         {"F8_E4M3", 1, 0, 0},
    {"F8_E8M0", 1, 0, 0},         {"I16", 2, 0, 0},             {"U16", 2, 0, 0},
    {"F16", 2, 0, 0},             {"BF16", 2, 0, 0},            {"U32", 4, 0, 0},
    {"U64", 8, 0, 0},             {"C64", 8, 0, 0},             {"F4", 1, 0, 0},
    {"F6_E2M3", 1, 0, 0},         {"F6_E3M2", 1, 0, 0},
};
#define ST_NDTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

/* -- strict JSON ---- */

typedef struct cursor {
  const char *p, *end, *base;
  char *what; /* VOLUA_ERR_MAX bytes */
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int at(const cursor *c, char ch) { return c->p < c->end && *c->p == ch; }

static int bad(cursor *c, const char *expected) {
  char tok[80];
  size_t left = (size_t)(c->end - c->p);
  if (c->p >= c->end)
    snprintf(c->what, VOLUA_ERR_MAX, "invalid JSON header: expected %s at byte %td, found the end of the header",
             expected, c->p - c->base);
  else
    snprintf(c->what, VOLUA_ERR_MAX, "invalid JSON header: expected %s at byte %td, found '%s'", expected,
             c->p - c->base, volua_io_printable(c->p, left < 12 ? left : 12, tok, sizeof tok));
  return 1;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. Returns the byte
 * offset of the first bad sequence, or n. */
static size_t utf8_check(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char b = s[i];
    size_t k;
    uint32_t cp;
    if (b < 0x80) { i++; continue; }
    if (b >= 0xc2 && b <= 0xdf) { k = 1; cp = b & 0x1f; }
    else if (b >= 0xe0 && b <= 0xef) { k = 2; cp = b & 0x0f; }
    else if (b >= 0xf0 && b <= 0xf4) { k = 3; cp = b & 0x07; }
    else return i;
    if (n - i <= k) return i;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) return i;
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    if ((k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return i;
    i += k + 1;
  }
  return n;
}

static int hex4(const char *p, uint32_t *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char ch = p[i];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
          : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (d < 0) return 1;
    *v = *v << 4 | (uint32_t)d;
  }
  return 0;
}

/* A JSON string. With out != NULL, its decoded bytes go to a malloc'd, NUL-terminated
 * buffer (the header is known to be valid UTF-8 already). */
static int parse_string(cursor *c, volua_str *out) {
  if (!at(c, '"')) return bad(c, "a string");
  const char *start = ++c->p;
  char *buf = NULL;
  size_t o = 0;
  if (out) {
    const char *q = start; /* decoded length <= raw length */
    while (q < c->end && *q != '"') q += *q == '\\' && q + 1 < c->end ? 2 : 1;
    if (!(buf = malloc((size_t)(q - start) + 1))) {
      snprintf(c->what, VOLUA_ERR_MAX, "out of memory reading the header");
      return 1;
    }
  }
  for (;;) {
    if (c->p >= c->end) { free(buf); return bad(c, "'\"' closing a string"); }
    unsigned char ch = (unsigned char)*c->p;
    if (ch == '"') break;
    if (ch < 0x20) { free(buf); return bad(c, "no control character inside a string"); }
    if (ch != '\\') {
      if (buf) buf[o++] = (char)ch;
      c->p++;
      continue;
    }
    if (c->end - c->p < 2) { free(buf); return bad(c, "an escape sequence"); }
    char e = c->p[1];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      static const char decoded[] = "\"\\/\b\f\n\r\t";
      if (buf) buf[o++] = decoded[simple - "\"\\/bfnrt"];
      c->p += 2;
      continue;
    }
    uint32_t cp, lo;
    if (e != 'u' || c->end - c->p < 6 || hex4(c->p + 2, &cp)) { free(buf); return bad(c, "a valid escape sequence"); }
    if (cp >= 0xdc00 && cp <= 0xdfff) { free(buf); return bad(c, "no lone low surrogate"); }
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (c->end - c->p < 12 || c->p[6] != '\\' || c->p[7] != 'u' || hex4(c->p + 8, &lo) ||
          lo < 0xdc00 || lo > 0xdfff) {
        free(buf);
        return bad(c, "a low surrogate after a high one");
      }
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      c->p += 6;
    }
    c->p += 6;
    if (buf) { /* UTF-8 of cp is never longer than its escape */
      if (cp < 0x80) buf[o++] = (char)cp;
      else if (cp < 0x800) { buf[o++] = (char)(0xc0 | cp >> 6); buf[o++] = (char)(0x80 | (cp & 0x3f)); }
      else if (cp < 0x10000) {
        buf[o++] = (char)(0xe0 | cp >> 12); buf[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
        buf[o++] = (char)(0x80 | (cp & 0x3f));
      } else {
        buf[o++] = (char)(0xf0 | cp >> 18); buf[o++] = (char)(0x80 | (cp >> 12 & 0x3f));
        buf[o++] = (char)(0x80 | (cp >> 6 & 0x3f)); buf[o++] = (char)(0x80 | (cp & 0x3f));
      }
    }
  }
  c->p++;
  if (out) {
    buf[o] = 0;
    out->s = buf;
    out->len = o;
  }
  return 0;
}

static int is_digit(const cursor *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

/* Any JSON number (only skipped). */
static int skip_number(cursor *c) {
  if (at(c, '-')) c->p++;
  if (at(c, '0')) c->p++;
  else if (is_digit(c)) while (is_digit(c)) c->p++;
  else return bad(c, "a digit");
  if (at(c, '.')) {
    c->p++;
    if (!is_digit(c)) return bad(c, "a digit after '.'");
    while (is_digit(c)) c->p++;
  }
  if (at(c, 'e') || at(c, 'E')) {
    c->p++;
    if (at(c, '+') || at(c, '-')) c->p++;
    if (!is_digit(c)) return bad(c, "a digit in the exponent");
    while (is_digit(c)) c->p++;
  }
  return 0;
}

/* A size or offset: a JSON integer >= 0 that fits in int64 (the crate reads usize). */
static int parse_uint(cursor *c, const char *field, const volua_str *name, int64_t *v) {
  const char *start = c->p;
  if (!at(c, '-') && !is_digit(c)) return bad(c, "a non-negative integer");
  if (skip_number(c)) return 1;
  size_t n = (size_t)(c->p - start);
  char shown[160];
  volua_io_printable(name->s, name->len, shown, sizeof shown);
  int64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (start[i] < '0' || start[i] > '9') {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s': %s holds %.*s, which is not a non-negative integer",
               shown, field, (int)(n < 40 ? n : 40), start);
      return 1;
    }
    if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, start[i] - '0', &x)) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s': %s holds %.*s, which does not fit in int64", shown,
               field, (int)(n < 40 ? n : 40), start);
      return 1;
    }
  }
  *v = x;
  return 0;
}

static int skip_word(cursor *c, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return bad(c, "a JSON value");
  c->p += n;
  return 0;
}

/* Skips any JSON value without recursion; nesting deeper than ST_MAX_DEPTH is refused. */
static int skip_value(cursor *c) {
  char stack[ST_MAX_DEPTH];
  int depth = 0;
  for (;;) {
    skip_ws(c); /* a value is expected here */
    if (at(c, '{') || at(c, '[')) {
      char open = *c->p++;
      skip_ws(c);
      if (at(c, open == '{' ? '}' : ']')) c->p++;
      else {
        if (depth == ST_MAX_DEPTH) {
          snprintf(c->what, VOLUA_ERR_MAX, "invalid JSON header: nesting deeper than %d levels", ST_MAX_DEPTH);
          return 1;
        }
        stack[depth++] = open;
        if (open == '{') {
          if (parse_string(c, NULL)) return 1;
          skip_ws(c);
          if (!at(c, ':')) return bad(c, "':'");
          c->p++;
        }
        continue;
      }
    } else if (at(c, '"')) {
      if (parse_string(c, NULL)) return 1;
    } else if (at(c, 't')) {
      if (skip_word(c, "true")) return 1;
    } else if (at(c, 'f')) {
      if (skip_word(c, "false")) return 1;
    } else if (at(c, 'n')) {
      if (skip_word(c, "null")) return 1;
    } else if (at(c, '-') || is_digit(c)) {
      if (skip_number(c)) return 1;
    } else {
      return bad(c, "a JSON value");
    }
    /* after a value: close containers or move on to the next element */
    for (;;) {
      if (depth == 0) return 0;
      skip_ws(c);
      char top = stack[depth - 1];
      if (at(c, top == '{' ? '}' : ']')) { c->p++; depth--; continue; }
      if (!at(c, ',')) return bad(c, top == '{' ? "',' or '}'" : "',' or ']'");
      c->p++;
      if (top == '{') {
        skip_ws(c);
        if (parse_string(c, NULL)) return 1;
        skip_ws(c);
        if (!at(c, ':')) return bad(c, "':'");
        c->p++;
      }
      break;
    }
  }
}

/* Walks the members of an object: call with *first = 1; returns 1 with the key's start
 * in c when there is one more member, 0 at '}', -1 on error. */
static int next_member(cursor *c, int *first) {
  skip_ws(c);
  if (*first) {
    if (!at(c, '{')) { bad(c, "'{'"); return -1; }
    c->p++;
    skip_ws(c);
    if (at(c, '}')) { c->p++; return 0; }
    *first = 0;
    return 1;
  }
  if (at(c, '}')) { c->p++; return 0; }
  if (!at(c, ',')) { bad(c, "',' or '}'"); return -1; }
  c->p++;
  skip_ws(c);
  return 1;
}

static int colon(cursor *c) {
  skip_ws(c);
  if (!at(c, ':')) return bad(c, "':'");
  c->p++;
  skip_ws(c);
  return 0;
}

/* -- the header ---- */

typedef struct st_info {
  volua_str name;
  const st_dtype *dt;
  int ndim;
  int64_t shape[VOLUA_MAX_DIMS];
  int64_t numel;
  int64_t begin, end;
} st_info;

typedef struct st_header {
  int64_t n, cap;
  st_info *infos;
  int has_metadata;
  int64_t nmeta, metacap;
  volua_st_pair *meta;
} st_header;

static void header_free(st_header *h) {
  for (int64_t i = 0; i < h->n; i++) free((void *)h->infos[i].name.s);
  for (int64_t i = 0; i < h->nmeta; i++) {
    free((void *)h->meta[i].key.s);
    free((void *)h->meta[i].value.s);
  }
  free(h->infos);
  free(h->meta);
  memset(h, 0, sizeof *h);
}

/* Makes room for one more element of an array that doubles. */
static int grow(void **arr, int64_t *cap, int64_t n, size_t elsize, cursor *c) {
  if (n < *cap) return 0;
  int64_t ncap = *cap ? *cap * 2 : 16;
  void *p = realloc(*arr, (size_t)ncap * elsize);
  if (!p) {
    snprintf(c->what, VOLUA_ERR_MAX, "out of memory reading the header");
    return 1;
  }
  *arr = p;
  *cap = ncap;
  return 0;
}

static int parse_metadata(cursor *c, st_header *h) {
  if (at(c, 'n')) return skip_word(c, "null"); /* Option<HashMap>: null is none */
  if (!at(c, '{')) {
    snprintf(c->what, VOLUA_ERR_MAX, "__metadata__ is not an object of strings");
    return 1;
  }
  h->has_metadata = 1;
  int first = 1, more;
  while ((more = next_member(c, &first)) == 1) {
    if (grow((void **)&h->meta, &h->metacap, h->nmeta, sizeof *h->meta, c)) return 1;
    volua_st_pair *kv = &h->meta[h->nmeta];
    memset(kv, 0, sizeof *kv);
    if (parse_string(c, &kv->key)) return 1;
    h->nmeta++; /* owned from here on, so header_free releases it */
    if (colon(c)) return 1;
    if (!at(c, '"')) {
      char shown[160];
      snprintf(c->what, VOLUA_ERR_MAX, "__metadata__ value for key '%s' is not a string",
               volua_io_printable(kv->key.s, kv->key.len, shown, sizeof shown));
      return 1;
    }
    if (parse_string(c, &kv->value)) return 1;
  }
  return more < 0;
}

static int parse_shape(cursor *c, st_info *t) {
  char shown[160];
  if (!at(c, '[')) return bad(c, "'[' opening a shape");
  c->p++;
  skip_ws(c);
  t->ndim = 0;
  if (at(c, ']')) { c->p++; return 0; }
  for (;;) {
    skip_ws(c);
    if (t->ndim == VOLUA_MAX_DIMS) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' has more than %d dimensions, volua's limit",
               volua_io_printable(t->name.s, t->name.len, shown, sizeof shown), VOLUA_MAX_DIMS);
      return 1;
    }
    if (parse_uint(c, "shape", &t->name, &t->shape[t->ndim])) return 1;
    t->ndim++;
    skip_ws(c);
    if (at(c, ']')) { c->p++; return 0; }
    if (!at(c, ',')) return bad(c, "',' or ']' in a shape");
    c->p++;
  }
}

static int parse_offsets(cursor *c, st_info *t) {
  if (!at(c, '[')) return bad(c, "'[' opening data_offsets");
  c->p++;
  skip_ws(c);
  if (parse_uint(c, "data_offsets", &t->name, &t->begin)) return 1;
  skip_ws(c);
  if (!at(c, ',')) return bad(c, "',' in data_offsets (two offsets: [begin, end])");
  c->p++;
  skip_ws(c);
  if (parse_uint(c, "data_offsets", &t->name, &t->end)) return 1;
  skip_ws(c);
  if (!at(c, ']')) return bad(c, "']' closing data_offsets (two offsets: [begin, end])");
  c->p++;
  return 0;
}

static int parse_dtype(cursor *c, st_info *t) {
  volua_str s;
  char shown[160], nm[160];
  if (parse_string(c, &s)) return 1;
  t->dt = NULL;
  for (size_t i = 0; i < ST_NDTYPES; i++)
    if (s.len == strlen(st_dtypes[i].name) && memcmp(s.s, st_dtypes[i].name, s.len) == 0) t->dt = &st_dtypes[i];
  volua_io_printable(t->name.s, t->name.len, nm, sizeof nm);
  if (!t->dt)
    snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' has unknown dtype '%s'", nm, volua_io_printable(s.s, s.len, shown, sizeof shown));
  else if (!t->dt->supported)
    snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' has dtype %s, which volua does not read (it reads F32, F64, I32, I64)",
             nm, t->dt->name);
  free((void *)s.s);
  return !t->dt || !t->dt->supported;
}

/* {"dtype": ..., "shape": [...], "data_offsets": [b, e]}; other keys are skipped as the
 * crate (serde) skips unknown fields. */
static int parse_info(cursor *c, st_info *t) {
  char shown[160];
  int seen[3] = {0, 0, 0}, first = 1, more;
  static const char *const keys[3] = {"dtype", "shape", "data_offsets"};
  if (!at(c, '{')) {
    snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' is not an object {\"dtype\", \"shape\", \"data_offsets\"}",
             volua_io_printable(t->name.s, t->name.len, shown, sizeof shown));
    return 1;
  }
  while ((more = next_member(c, &first)) == 1) {
    volua_str key;
    if (parse_string(c, &key)) return 1;
    int k = 0;
    while (k < 3 && !(key.len == strlen(keys[k]) && memcmp(key.s, keys[k], key.len) == 0)) k++;
    free((void *)key.s);
    if (colon(c)) return 1;
    if (k == 3) {
      if (skip_value(c)) return 1;
      continue;
    }
    if (seen[k]++) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' has \"%s\" twice",
               volua_io_printable(t->name.s, t->name.len, shown, sizeof shown), keys[k]);
      return 1;
    }
    int rc = k == 0 ? parse_dtype(c, t) : k == 1 ? parse_shape(c, t) : parse_offsets(c, t);
    if (rc) return 1;
  }
  if (more < 0) return 1;
  for (int k = 0; k < 3; k++) {
    if (!seen[k]) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' has no \"%s\"",
               volua_io_printable(t->name.s, t->name.len, shown, sizeof shown), keys[k]);
      return 1;
    }
  }
  return 0;
}

/* qsort, which must not see a NULL array even when empty */
static void sort(void *base, int64_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, (size_t)n, size, cmp);
}

static int cmp_name(const volua_str *a, const volua_str *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int r = memcmp(a->s, b->s, n);
  return r ? r : (a->len > b->len) - (a->len < b->len);
}
static int cmp_info_name(const void *a, const void *b) {
  return cmp_name(&((const st_info *)a)->name, &((const st_info *)b)->name);
}
static int cmp_info_offsets(const void *a, const void *b) {
  const st_info *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}
static int cmp_pair_key(const void *a, const void *b) {
  return cmp_name(&((const volua_st_pair *)a)->key, &((const volua_st_pair *)b)->key);
}

/* Sizes, names and offsets: offsets must tile [0, data_len) in order, as the crate's
 * Metadata::validate demands; leaves the infos sorted by offset. */
static int validate(cursor *c, st_header *h, uint64_t data_len) {
  char shown[160], s[256];
  sort(h->infos, h->n, sizeof *h->infos, cmp_info_name);
  for (int64_t i = 1; i < h->n; i++) {
    if (cmp_name(&h->infos[i - 1].name, &h->infos[i].name) == 0) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor name '%s' appears twice",
               volua_io_printable(h->infos[i].name.s, h->infos[i].name.len, shown, sizeof shown));
      return 1;
    }
  }
  sort(h->meta, h->nmeta, sizeof *h->meta, cmp_pair_key);
  for (int64_t i = 1; i < h->nmeta; i++) {
    if (cmp_name(&h->meta[i - 1].key, &h->meta[i].key) == 0) {
      snprintf(c->what, VOLUA_ERR_MAX, "__metadata__ key '%s' appears twice",
               volua_io_printable(h->meta[i].key.s, h->meta[i].key.len, shown, sizeof shown));
      return 1;
    }
  }
  sort(h->infos, h->n, sizeof *h->infos, cmp_info_offsets);
  int64_t pos = 0;
  for (int64_t i = 0; i < h->n; i++) {
    st_info *t = &h->infos[i];
    volua_io_printable(t->name.s, t->name.len, shown, sizeof shown);
    if (t->end < t->begin) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' has data_offsets [%lld, %lld] that end before they begin",
               shown, (long long)t->begin, (long long)t->end);
      return 1;
    }
    if ((uint64_t)t->end > data_len) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' has data_offsets [%lld, %lld] past the end of the data (%llu bytes)",
               shown, (long long)t->begin, (long long)t->end, (unsigned long long)data_len);
      return 1;
    }
    if (t->begin != pos) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s' starts at byte %lld of the data but the previous tensor ends at %lld "
               "(data_offsets must tile the data with no holes or overlaps)", shown, (long long)t->begin, (long long)pos);
      return 1;
    }
    /* As the crate, the product of every size must fit (zero sizes included), and in
     * memory an element takes up to 8 bytes. */
    int64_t n = 1, bytes;
    int zero = 0;
    for (int d = 0; d < t->ndim; d++) {
      if (t->shape[d] == 0) zero = 1;
      else if (__builtin_mul_overflow(n, t->shape[d], &n)) goto overflow;
    }
    if (__builtin_mul_overflow(n, (int64_t)8, &bytes)) goto overflow;
    if (zero) n = 0;
    if (n * (int64_t)t->dt->size != t->end - t->begin) {
      snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s': shape %s of %s needs %lld bytes but data_offsets [%lld, %lld] hold %lld",
               shown, volua_shape_str(t->ndim, t->shape, s, sizeof s), t->dt->name, (long long)(n * (int64_t)t->dt->size),
               (long long)t->begin, (long long)t->end, (long long)(t->end - t->begin));
      return 1;
    }
    t->numel = n;
    pos = t->end;
    continue;
  overflow:
    snprintf(c->what, VOLUA_ERR_MAX, "tensor '%s': shape %s has more elements than int64 can count", shown,
             volua_shape_str(t->ndim, t->shape, s, sizeof s));
    return 1;
  }
  if ((uint64_t)pos != data_len) {
    snprintf(c->what, VOLUA_ERR_MAX, "the tensors' data ends at byte %lld but the file holds %llu bytes of data "
             "(data_offsets must cover the data exactly)", (long long)pos, (unsigned long long)data_len);
    return 1;
  }
  return 0;
}

/* Parses and checks the JSON header hdr[0..n) of a file with data_len bytes after it. */
static int parse_header(const char *hdr, size_t n, uint64_t data_len, st_header *h, char *what) {
  cursor c = {hdr, hdr + n, hdr, what};
  memset(h, 0, sizeof *h);
  size_t badpos = utf8_check((const unsigned char *)hdr, n);
  if (badpos < n) {
    snprintf(what, VOLUA_ERR_MAX, "header is not valid UTF-8 (at byte %zu)", badpos);
    return 1;
  }
  if (n == 0 || hdr[0] != '{') {
    snprintf(what, VOLUA_ERR_MAX, "header does not start with '{' (not a safetensors file?)");
    return 1;
  }
  int first = 1, more, seen_meta = 0;
  while ((more = next_member(&c, &first)) == 1) {
    volua_str key;
    if (parse_string(&c, &key)) goto fail;
    if (key.len == 12 && memcmp(key.s, "__metadata__", 12) == 0) {
      free((void *)key.s);
      if (seen_meta++) {
        snprintf(what, VOLUA_ERR_MAX, "__metadata__ appears twice");
        goto fail;
      }
      if (colon(&c) || parse_metadata(&c, h)) goto fail;
      continue;
    }
    if (grow((void **)&h->infos, &h->cap, h->n, sizeof *h->infos, &c)) { free((void *)key.s); goto fail; }
    st_info *t = &h->infos[h->n++];
    memset(t, 0, sizeof *t);
    t->name = key;
    if (colon(&c) || parse_info(&c, t)) goto fail;
  }
  if (more < 0) goto fail;
  skip_ws(&c);
  if (c.p < c.end) {
    bad(&c, "only padding after the header object");
    goto fail;
  }
  if (validate(&c, h, data_len)) goto fail;
  return 0;
fail:
  header_free(h);
  return 1;
}

/* -- reading ---- */

static void convert(const st_dtype *dt, const uint8_t *src, int64_t count, void *dst) {
  if (strcmp(dt->name, "F32") == 0 || strcmp(dt->name, "I64") == 0) {
    memcpy(dst, src, (size_t)count * dt->size);
  } else if (strcmp(dt->name, "F64") == 0) {
    for (int64_t i = 0; i < count; i++) {
      double d;
      memcpy(&d, src + 8 * i, 8);
      ((float *)dst)[i] = (float)d;
    }
  } else { /* I32 */
    for (int64_t i = 0; i < count; i++) {
      int32_t v;
      memcpy(&v, src + 4 * i, 4);
      ((int64_t *)dst)[i] = v;
    }
  }
}

/* Moves the header's names and metadata into out and allocates its tensors (empty data). */
static int take_header(st_header *h, volua_safetensors *out, const char *path, char *err) {
  memset(out, 0, sizeof *out);
  out->names = calloc((size_t)h->n + 1, sizeof *out->names);
  out->tensors = calloc((size_t)h->n + 1, sizeof *out->tensors);
  if (!out->names || !out->tensors) {
    free(out->names);
    free(out->tensors);
    memset(out, 0, sizeof *out);
    header_free(h);
    return volua_io_fail(err, "load_safetensors", path, "out of memory");
  }
  out->ntensors = h->n;
  for (int64_t i = 0; i < h->n; i++) {
    out->names[i] = h->infos[i].name;
    h->infos[i].name.s = NULL;
  }
  out->has_metadata = h->has_metadata;
  out->nmeta = h->nmeta;
  out->meta = h->meta;
  h->meta = NULL;
  h->nmeta = 0;
  for (int64_t i = 0; i < h->n; i++) {
    char e[VOLUA_ERR_MAX];
    const st_info *t = &h->infos[i];
    if (volua_tensor_alloc(&out->tensors[i], t->ndim, t->shape, t->dt->dtype, VOLUA_DEVICE_CPU, e)) {
      volua_safetensors_free(out);
      header_free(h);
      return volua_io_fail(err, "load_safetensors", path, "%s", e);
    }
  }
  return 0;
}

/* The 8-byte length and where the header and data lie in a file of `total` bytes. */
static int preamble(const uint8_t *buf, uint64_t total, uint64_t *n, char *what) {
  if (total < 8) {
    snprintf(what, VOLUA_ERR_MAX, "file is %llu bytes, too short for the 8-byte header length",
             (unsigned long long)total);
    return 1;
  }
  *n = 0;
  for (int i = 7; i >= 0; i--) *n = *n << 8 | buf[i];
  if (*n > ST_MAX_HEADER) {
    snprintf(what, VOLUA_ERR_MAX, "header length %llu is over the limit of %d bytes",
             (unsigned long long)*n, ST_MAX_HEADER);
    return 1;
  }
  if (*n > total - 8) {
    snprintf(what, VOLUA_ERR_MAX, "header length %llu runs past the end of the file (%llu bytes after the length)",
             (unsigned long long)*n, (unsigned long long)(total - 8));
    return 1;
  }
  return 0;
}

int volua_safetensors_parse(const uint8_t *buf, size_t len, const char *path,
                            volua_safetensors *out, char *err) {
  char what[VOLUA_ERR_MAX];
  uint64_t n;
  st_header h;
  memset(out, 0, sizeof *out);
  if (preamble(buf, len, &n, what)) return volua_io_fail(err, "load_safetensors", path, "%s", what);
  if (parse_header((const char *)buf + 8, (size_t)n, len - 8 - n, &h, what))
    return volua_io_fail(err, "load_safetensors", path, "%s", what);
  if (take_header(&h, out, path, err)) return 1;
  const uint8_t *data = buf + 8 + n;
  for (int64_t i = 0; i < h.n; i++)
    convert(h.infos[i].dt, data + h.infos[i].begin, h.infos[i].numel, volua_tensor_data(&out->tensors[i]));
  header_free(&h);
  return 0;
}

int volua_safetensors_load(const char *path, volua_safetensors *out, char *err) {
  char what[VOLUA_ERR_MAX];
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return volua_io_fail(err, "load_safetensors", path, "cannot open: %s", strerror(errno));
  struct stat st;
  char *hdr = NULL;
  uint8_t *bounce = NULL;
  st_header h = {0};
  int rc = 1;
  uint8_t pre[8];
  uint64_t n, total;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    volua_io_fail(err, "load_safetensors", path, "not a regular file");
    goto done;
  }
  total = (uint64_t)st.st_size;
  if (fread(pre, 1, total < 8 ? (size_t)total : 8, f) != (total < 8 ? (size_t)total : 8)) {
    volua_io_fail(err, "load_safetensors", path, "read failed");
    goto done;
  }
  if (preamble(pre, total, &n, what)) { volua_io_fail(err, "load_safetensors", path, "%s", what); goto done; }
  if (!(hdr = malloc((size_t)n + 1))) { volua_io_fail(err, "load_safetensors", path, "out of memory"); goto done; }
  if (fread(hdr, 1, (size_t)n, f) != (size_t)n) {
    volua_io_fail(err, "load_safetensors", path, "read failed (the file shrank?)");
    goto done;
  }
  if (parse_header(hdr, (size_t)n, total - 8 - n, &h, what)) {
    volua_io_fail(err, "load_safetensors", path, "%s", what);
    goto done;
  }
  if (take_header(&h, out, path, err)) goto done;
  /* The tensors tile the data in file order: read them one after the other. */
  enum { CHUNK = 1 << 16 };
  for (int64_t i = 0; i < h.n; i++) {
    const st_info *t = &h.infos[i];
    uint8_t *dst = volua_tensor_data(&out->tensors[i]);
    size_t dsize = volua_dtype_size(out->tensors[i].dtype);
    if (t->dt->size != dsize && !bounce && !(bounce = malloc(CHUNK * 8))) {
      volua_io_fail(err, "load_safetensors", path, "out of memory");
      volua_safetensors_free(out);
      goto done;
    }
    for (int64_t k = 0; k < t->numel;) {
      int64_t m = t->numel - k;
      if (t->dt->size != dsize && m > CHUNK) m = CHUNK;
      uint8_t *src = t->dt->size == dsize ? dst + k * (int64_t)dsize : bounce;
      if (fread(src, t->dt->size, (size_t)m, f) != (size_t)m) {
        volua_io_fail(err, "load_safetensors", path, "read failed (the file shrank?)");
        volua_safetensors_free(out);
        goto done;
      }
      if (t->dt->size != dsize) convert(t->dt, src, m, dst + k * (int64_t)dsize);
      k += m;
    }
  }
  rc = 0;
done:
  header_free(&h);
  free(bounce);
  free(hdr);
  fclose(f);
  return rc;
}

void volua_safetensors_free(volua_safetensors *st) {
  for (int64_t i = 0; i < st->ntensors; i++) {
    if (st->names) free((void *)st->names[i].s);
    if (st->tensors) volua_tensor_free(&st->tensors[i]);
  }
  for (int64_t i = 0; i < st->nmeta; i++) {
    free((void *)st->meta[i].key.s);
    free((void *)st->meta[i].value.s);
  }
  free(st->names);
  free(st->tensors);
  free(st->meta);
  memset(st, 0, sizeof *st);
}

/* -- writing ---- */

typedef struct sbuf {
  char *p;
  size_t n, cap;
  int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A JSON string as serde_json writes it. */
static void put_json_string(sbuf *b, const volua_str *s) {
  put(b, "\"", 1);
  for (size_t i = 0; i < s->len; i++) {
    unsigned char ch = (unsigned char)s->s[i];
    char esc[8];
    if (ch == '"') put(b, "\\\"", 2);
    else if (ch == '\\') put(b, "\\\\", 2);
    else if (ch == '\b') put(b, "\\b", 2);
    else if (ch == '\f') put(b, "\\f", 2);
    else if (ch == '\n') put(b, "\\n", 2);
    else if (ch == '\r') put(b, "\\r", 2);
    else if (ch == '\t') put(b, "\\t", 2);
    else if (ch < 0x20) put(b, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", ch));
    else put(b, (const char *)&ch, 1);
  }
  put(b, "\"", 1);
}

/* The sorts below order arrays of pointers to entries and pairs. */
static const volua_st_entry *entry_at(const void *p) { return *(const volua_st_entry *const *)p; }

static int cmp_entry_name(const void *a, const void *b) {
  return cmp_name(&entry_at(a)->name, &entry_at(b)->name);
}
static int cmp_pair_ptr_key(const void *a, const void *b) {
  return cmp_name(&(*(const volua_st_pair *const *)a)->key, &(*(const volua_st_pair *const *)b)->key);
}

/* The crate's order: dtypes in descending order of its Dtype enum (I64 before F32), then by name. */
static int cmp_entry(const void *a, const void *b) {
  const volua_st_entry *x = entry_at(a), *y = entry_at(b);
  if (x->tensor->dtype != y->tensor->dtype) return x->tensor->dtype == VOLUA_INT64 ? -1 : 1;
  return cmp_name(&x->name, &y->name);
}

static int check_utf8(const volua_str *s, const char *what_is_it, const char *op, const char *path, char *err) {
  char shown[160];
  if (utf8_check((const unsigned char *)s->s, s->len) == s->len) return 0;
  return volua_io_fail(err, op, path, "%s '%s' is not valid UTF-8", what_is_it, volua_io_printable(s->s, s->len, shown, sizeof shown));
}

/* Checks the entries and builds the padded header; *order gets them in file order. */
static int build_header(const volua_st_entry *entries, int64_t n, int has_metadata, const volua_st_pair *meta,
                        int64_t nmeta, const char *path, sbuf *hdr, const volua_st_entry ***order,
                        uint64_t *data_len, char *err) {
  const char *op = "save_safetensors";
  char shown[160];
  if (n < 0 || nmeta < 0 || (nmeta > 0 && !has_metadata)) return volua_io_fail(err, op, path, "bad entry counts");
  for (int64_t i = 0; i < n; i++) {
    const volua_st_entry *e = &entries[i];
    volua_io_printable(e->name.s, e->name.len, shown, sizeof shown);
    if (!e->tensor || !e->tensor->storage) return volua_io_fail(err, op, path, "tensor '%s' has been freed", shown);
    if (e->tensor->device != VOLUA_DEVICE_CPU)
      return volua_io_fail(err, op, path, "tensor '%s' is on %s; copy it to the cpu first", shown,
                  volua_device_name(e->tensor->device));
    if (check_utf8(&e->name, "tensor name", op, path, err)) return 1;
    if (e->name.len == 12 && memcmp(e->name.s, "__metadata__", 12) == 0)
      return volua_io_fail(err, op, path, "'__metadata__' is reserved and cannot name a tensor");
  }
  for (int64_t i = 0; i < nmeta; i++) {
    if (check_utf8(&meta[i].key, "metadata key", op, path, err)) return 1;
    if (check_utf8(&meta[i].value, "metadata value", op, path, err)) return 1;
  }
  const volua_st_entry **ord = malloc((size_t)(n + 1) * sizeof *ord);
  const volua_st_pair **mord = malloc((size_t)(nmeta + 1) * sizeof *mord);
  if (!ord || !mord) {
    free(ord);
    free(mord);
    return volua_io_fail(err, op, path, "out of memory");
  }
  for (int64_t i = 0; i < n; i++) ord[i] = &entries[i];
  sort(ord, n, sizeof *ord, cmp_entry_name);
  for (int64_t i = 1; i < n; i++) {
    if (cmp_name(&ord[i - 1]->name, &ord[i]->name) == 0) {
      const volua_st_entry *dup = ord[i]; /* read before freeing ord */
      free(ord);
      free(mord);
      return volua_io_fail(err, op, path, "tensor name '%s' appears twice",
                  volua_io_printable(dup->name.s, dup->name.len, shown, sizeof shown));
    }
  }
  sort(ord, n, sizeof *ord, cmp_entry);
  /* __metadata__ keys in byte order (the crate keeps them in a HashMap: any order reads back) */
  for (int64_t i = 0; i < nmeta; i++) mord[i] = &meta[i];
  sort(mord, nmeta, sizeof *mord, cmp_pair_ptr_key);
  for (int64_t i = 1; i < nmeta; i++) {
    if (cmp_name(&mord[i - 1]->key, &mord[i]->key) == 0) {
      const volua_st_pair *dup = mord[i]; /* read before freeing mord */
      free(ord);
      free(mord);
      return volua_io_fail(err, op, path, "metadata key '%s' appears twice",
                  volua_io_printable(dup->key.s, dup->key.len, shown, sizeof shown));
    }
  }
  put(hdr, "{", 1);
  if (has_metadata) {
    puts_(hdr, "\"__metadata__\":{");
    for (int64_t i = 0; i < nmeta; i++) {
      if (i) put(hdr, ",", 1);
      put_json_string(hdr, &mord[i]->key);
      put(hdr, ":", 1);
      put_json_string(hdr, &mord[i]->value);
    }
    put(hdr, "}", 1);
  }
  uint64_t off = 0;
  for (int64_t i = 0; i < n; i++) {
    const volua_tensor *t = ord[i]->tensor;
    char num[96];
    uint64_t bytes = (uint64_t)volua_tensor_numel(t) * volua_dtype_size(t->dtype);
    if (i || has_metadata) put(hdr, ",", 1);
    put_json_string(hdr, &ord[i]->name);
    puts_(hdr, t->dtype == VOLUA_INT64 ? ":{\"dtype\":\"I64\",\"shape\":[" : ":{\"dtype\":\"F32\",\"shape\":[");
    for (int d = 0; d < t->ndim; d++)
      put(hdr, num, (size_t)snprintf(num, sizeof num, d ? ",%lld" : "%lld", (long long)t->shape[d]));
    put(hdr, num, (size_t)snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}",
                                   (unsigned long long)off, (unsigned long long)(off + bytes)));
    off += bytes;
  }
  put(hdr, "}", 1);
  while (hdr->n % 8) put(hdr, " ", 1); /* the data starts 8-aligned */
  free(mord);
  if (hdr->oom) {
    free(ord);
    free(hdr->p);
    hdr->p = NULL;
    return volua_io_fail(err, op, path, "out of memory");
  }
  *order = ord;
  *data_len = off;
  return 0;
}

int volua_safetensors_serialize(const volua_st_entry *entries, int64_t n, int has_metadata,
                                const volua_st_pair *meta, int64_t nmeta, uint8_t **buf,
                                size_t *len, char *err) {
  sbuf hdr = {0};
  const volua_st_entry **ord;
  uint64_t data_len;
  *buf = NULL;
  *len = 0;
  if (build_header(entries, n, has_metadata, meta, nmeta, "<memory>", &hdr, &ord, &data_len, err)) return 1;
  size_t total = 8 + hdr.n + (size_t)data_len;
  uint8_t *out = malloc(total);
  if (!out) {
    free(ord);
    free(hdr.p);
    return volua_io_fail(err, "save_safetensors", "<memory>", "out of memory");
  }
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)hdr.n >> (8 * i));
  memcpy(out + 8, hdr.p, hdr.n);
  size_t o = 8 + hdr.n;
  for (int64_t i = 0; i < n; i++) {
    const volua_tensor *t = ord[i]->tensor;
    size_t bytes = (size_t)volua_tensor_numel(t) * volua_dtype_size(t->dtype);
    if (bytes) memcpy(out + o, volua_tensor_data(t), bytes);
    o += bytes;
  }
  free(ord);
  free(hdr.p);
  *buf = out;
  *len = total;
  return 0;
}

int volua_safetensors_save(const char *path, const volua_st_entry *entries, int64_t n,
                           int has_metadata, const volua_st_pair *meta, int64_t nmeta, char *err) {
  sbuf hdr = {0};
  const volua_st_entry **ord;
  uint64_t data_len;
  if (build_header(entries, n, has_metadata, meta, nmeta, path, &hdr, &ord, &data_len, err)) return 1;
  FILE *f = fopen(path, "wb");
  if (!f) {
    int e = errno;
    free(ord);
    free(hdr.p);
    return volua_io_fail(err, "save_safetensors", path, "cannot open for writing: %s", strerror(e));
  }
  uint8_t len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hdr.n >> (8 * i));
  int bad_write = fwrite(len8, 1, 8, f) != 8 || fwrite(hdr.p, 1, hdr.n, f) != hdr.n;
  for (int64_t i = 0; i < n && !bad_write; i++) {
    const volua_tensor *t = ord[i]->tensor;
    size_t bytes = (size_t)volua_tensor_numel(t) * volua_dtype_size(t->dtype);
    if (bytes) bad_write = fwrite(volua_tensor_data(t), 1, bytes, f) != bytes;
  }
  int e = errno;
  if (fclose(f) != 0 && !bad_write) { bad_write = 1; e = errno; }
  free(ord);
  free(hdr.p);
  if (bad_write) {
    remove(path);
    return volua_io_fail(err, "save_safetensors", path, "write failed: %s", strerror(e));
  }
  return 0;
}
