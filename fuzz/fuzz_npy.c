/* fuzz_npy.c: libFuzzer target for the .npy reader. Any input must parse or fail with a
 * "load: <path>: ..." message; the file reader must agree with the buffer parser; what
 * parses must survive a write and a read back unchanged. */
#include "fuzz_common.h"
#include "../src/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64], err[VOLUA_ERR_MAX], ferr[VOLUA_ERR_MAX], prefix[96];
  volua_tensor t = {0}, ft = {0};
  int fd = fuzz_memfile(data, size, path, sizeof path);
  if (fd < 0) return 0;
  snprintf(prefix, sizeof prefix, "load: %s: ", path);

  int rc = volua_npy_parse(data, size, path, &t, err);
  int frc = volua_npy_load(path, &ft, ferr);
  close(fd);
  FUZZ_CHECK(rc == frc);
  if (rc) {
    fuzz_check_message(err, prefix);
    FUZZ_CHECK(strcmp(err, ferr) == 0);
    FUZZ_CHECK(t.storage == NULL && ft.storage == NULL);
    return 0;
  }
  FUZZ_CHECK(fuzz_same_tensor(&t, &ft));
  volua_tensor_free(&ft);

  /* write it back (in memory, as volua_npy_save writes it) and read that */
  char hdr[1024];
  size_t hlen = volua_npy_header(&t, hdr, sizeof hdr);
  FUZZ_CHECK(hlen > 0 && hlen % 64 == 0 && hdr[hlen - 1] == '\n');
  size_t bytes = (size_t)volua_tensor_numel(&t) * volua_dtype_size(t.dtype);
  uint8_t *buf = malloc(hlen + bytes);
  FUZZ_CHECK(buf != NULL);
  memcpy(buf, hdr, hlen);
  if (bytes) memcpy(buf + hlen, volua_tensor_data(&t), bytes);
  volua_tensor u = {0};
  FUZZ_CHECK(volua_npy_parse(buf, hlen + bytes, "again", &u, err) == 0);
  FUZZ_CHECK(fuzz_same_tensor(&t, &u));
  free(buf);
  volua_tensor_free(&u);
  volua_tensor_free(&t);
  return 0;
}
