/* fuzz_safetensors.c: libFuzzer target for the safetensors reader. Any input must parse or
 * fail with a "load_safetensors: <path>: ..." message; the file reader must agree with the
 * buffer parser; what parses must survive a write and a read back unchanged. */
#include "fuzz_common.h"
#include "../src/io.h"

static int same_str(const volua_str *a, const volua_str *b) {
  return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

/* Same tensors under the same names, same metadata (orders may differ). */
static void check_same(const volua_safetensors *a, const volua_safetensors *b) {
  FUZZ_CHECK(a->ntensors == b->ntensors);
  FUZZ_CHECK(a->has_metadata == b->has_metadata && a->nmeta == b->nmeta);
  for (int64_t i = 0; i < a->ntensors; i++) {
    int64_t j = 0;
    while (j < b->ntensors && !same_str(&a->names[i], &b->names[j])) j++;
    FUZZ_CHECK(j < b->ntensors);
    FUZZ_CHECK(a->names[i].s[a->names[i].len] == 0);
    FUZZ_CHECK(fuzz_same_tensor(&a->tensors[i], &b->tensors[j]));
  }
  for (int64_t i = 0; i < a->nmeta; i++) {
    int64_t j = 0;
    while (j < b->nmeta && !same_str(&a->meta[i].key, &b->meta[j].key)) j++;
    FUZZ_CHECK(j < b->nmeta);
    FUZZ_CHECK(same_str(&a->meta[i].value, &b->meta[j].value));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64], err[VOLUA_ERR_MAX], ferr[VOLUA_ERR_MAX], prefix[96];
  volua_safetensors st, fst;
  int fd = fuzz_memfile(data, size, path, sizeof path);
  if (fd < 0) return 0;
  snprintf(prefix, sizeof prefix, "load_safetensors: %s: ", path);

  int rc = volua_safetensors_parse(data, size, path, &st, err);
  int frc = volua_safetensors_load(path, &fst, ferr);
  close(fd);
  FUZZ_CHECK(rc == frc);
  if (rc) {
    fuzz_check_message(err, prefix);
    FUZZ_CHECK(strcmp(err, ferr) == 0);
    FUZZ_CHECK(st.ntensors == 0 && st.tensors == NULL && fst.ntensors == 0 && fst.tensors == NULL);
    return 0;
  }
  check_same(&st, &fst);
  volua_safetensors_free(&fst);

  /* write it back in memory and read that */
  volua_st_entry *entries = malloc((size_t)(st.ntensors + 1) * sizeof *entries);
  FUZZ_CHECK(entries != NULL);
  for (int64_t i = 0; i < st.ntensors; i++) {
    entries[i].name = st.names[i];
    entries[i].tensor = &st.tensors[i];
  }
  uint8_t *buf;
  size_t len;
  FUZZ_CHECK(volua_safetensors_serialize(entries, st.ntensors, st.has_metadata, st.meta,
                                         st.nmeta, &buf, &len, err) == 0);
  FUZZ_CHECK(len >= 8);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i];
  FUZZ_CHECK(hlen % 8 == 0);
  volua_safetensors again;
  if (volua_safetensors_parse(buf, len, "again", &again, err) != 0) {
    fprintf(stderr, "%s\n", err);
    abort();
  }
  check_same(&st, &again);
  free(buf);
  free(entries);
  volua_safetensors_free(&again);
  volua_safetensors_free(&st);
  return 0;
}
