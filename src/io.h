/* io.h: .npy and safetensors files <-> CPU tensors; readers that survive hostile files. No Lua.
 *
 * Every reader parses from a memory buffer (the fuzz targets call those directly); the file
 * functions check the header against the file's length before allocating anything and then
 * read the data straight into the tensors. Messages read "load: <path>: <what>"
 * ("load_safetensors: ...", "save: ...", "save_safetensors: ..."). */
#ifndef VOLUA_IO_H
#define VOLUA_IO_H

#include <stddef.h>
#include <stdint.h>
#include "tensor.h"

/* -- shared by both formats (io_common.c) ---- */

/* Writes "<op>: <path>: <what>" into err; returns 1. */
int volua_io_fail(char *err, const char *op, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Bytes from a hostile file, made printable (\xNN escapes) and cut at 48 bytes, into buf. */
const char *volua_io_printable(const void *s, size_t n, char *buf, size_t cap);

/* -- .npy ---- */

/* Parses a whole .npy file held in buf[0..len) into out (empty; a CPU tensor on success).
 * `path` only names the file in messages. */
int volua_npy_parse(const uint8_t *buf, size_t len, const char *path, volua_tensor *out,
                    char *err);
int volua_npy_load(const char *path, volua_tensor *out, char *err);

/* The v1.0 header numpy's np.save writes for t (float32 as '<f4', int64 as '<i8'), padded
 * so that the data starts at a multiple of 64. Returns its length, or 0 if cap is too small. */
size_t volua_npy_header(const volua_tensor *t, char *hdr, size_t cap);
/* Writes t (a CPU tensor) to path. */
int volua_npy_save(const char *path, const volua_tensor *t, char *err);

/* -- safetensors ---- */

/* A byte string that may hold NULs (tensor names and metadata are JSON strings). */
typedef struct volua_str {
  const char *s;
  size_t len;
} volua_str;

typedef struct volua_st_pair {
  volua_str key, value;
} volua_st_pair;

/* A loaded file; everything in it is owned and released by volua_safetensors_free.
 * Tensors come in file order (by data offset); strings are NUL-terminated as well. */
typedef struct volua_safetensors {
  int64_t ntensors;
  volua_str *names;
  volua_tensor *tensors;
  int has_metadata; /* the header had a "__metadata__" object */
  int64_t nmeta;
  volua_st_pair *meta;
} volua_safetensors;

int volua_safetensors_parse(const uint8_t *buf, size_t len, const char *path,
                            volua_safetensors *out, char *err);
int volua_safetensors_load(const char *path, volua_safetensors *out, char *err);
void volua_safetensors_free(volua_safetensors *st);

/* One tensor to write: a name and a CPU tensor (float32 -> F32, int64 -> I64). */
typedef struct volua_st_entry {
  volua_str name;
  const volua_tensor *tensor;
} volua_st_entry;

/* Writes the entries as safetensors.torch.save_file does: data ordered by dtype (I64 before
 * F32) then by name, compact JSON header with "__metadata__" first, padded with spaces to a
 * multiple of 8. With has_metadata, a "__metadata__" object holds the nmeta pairs (keys in
 * byte order). Names and metadata keys must be unique, and everything valid UTF-8. */
int volua_safetensors_save(const char *path, const volua_st_entry *entries, int64_t n,
                           int has_metadata, const volua_st_pair *meta, int64_t nmeta, char *err);
/* The same file built in memory (*buf is malloc'd, the caller frees it). */
int volua_safetensors_serialize(const volua_st_entry *entries, int64_t n, int has_metadata,
                                const volua_st_pair *meta, int64_t nmeta, uint8_t **buf,
                                size_t *len, char *err);

#endif
