/* checks.c: argument checks shared by the ops. */
#include <stdio.h>

#include "../ops.h"

int volua_check_f32(const char *fname, const char *pname, const volua_tensor *t, volua_device dev,
                    char *err) {
  if (!t->storage) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %s is a freed tensor", fname, pname);
    return 1;
  }
  if (t->dtype != VOLUA_FLOAT32) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %s dtype %s is not supported (float32 needed)", fname, pname,
             volua_dtype_name(t->dtype));
    return 1;
  }
  if (t->device != dev) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %s is on %s but the input is on %s", fname, pname,
             volua_device_name(t->device), volua_device_name(dev));
    return 1;
  }
  return 0;
}
