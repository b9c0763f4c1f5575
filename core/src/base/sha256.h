/* sha256.h: the SHA-256 of a file, which a checkpoint records of the run's
 * task files so that a resume can tell whether they changed. */
#ifndef TERN_SHA256_H
#define TERN_SHA256_H

#include "base/export.h"

/* The SHA-256 of the bytes of file `path` as 64 lowercase hex digits (what
 * sha256sum prints) into hex. TERN_EIO with a message naming the file. */
TERN_INTERNAL int tern_file_sha256(const char *path, char hex[65]);

#endif
