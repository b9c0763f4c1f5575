/*
 * fail.h: the plugin's internal error reporting. Its functions return -1
 * with a message in a caller's buffer (err, errn); tf_fail writes it.
 */
#ifndef TERN_TF_FAIL_H
#define TERN_TF_FAIL_H

#include <stddef.h>

/* printf the message into err (errn bytes; nothing when err is NULL or errn
 * 0) and return -1, so that `return tf_fail(err, errn, "...")` reports. */
int tf_fail(char *err, size_t errn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
