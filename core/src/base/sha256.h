/* sha256.h: SHA-256 over bytes given in pieces. The task reader hashes a
 * tasks file as it reads it; a checkpoint records the digest so that a
 * resume can tell whether the file changed. An experience records the
 * digest of its task's image file for the same reason (image/task_image.h). */
#ifndef TERN_SHA256_H
#define TERN_SHA256_H

#include "base/export.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tern_sha256 {
    uint32_t h[8];
    uint64_t total;         /* bytes given so far */
    unsigned char buf[64];  /* a block not yet full */
    size_t n;               /* bytes in buf */
} tern_sha256;

TERN_INTERNAL void tern_sha256_init(tern_sha256 *s);
/* Add len bytes of data. */
TERN_INTERNAL void tern_sha256_update(tern_sha256 *s, const void *data, size_t len);
/* The digest of every byte given, as 64 lowercase hex digits and a NUL (what
 * sha256sum prints). Ends the hash: init again before more updates. */
TERN_INTERNAL void tern_sha256_hex(tern_sha256 *s, char hex[65]);
/* The same digest as 32 bytes. Ends the hash too. */
TERN_INTERNAL void tern_sha256_digest(tern_sha256 *s, unsigned char digest[32]);
/* 32 digest bytes as 64 lowercase hex digits and a NUL. */
TERN_INTERNAL void tern_sha256_to_hex(const unsigned char digest[32], char hex[65]);

#endif
