/* crc32c.h: CRC-32C (Castagnoli), the checksum of an encoded experience. */
#ifndef TERN_EXPERIENCE_CRC32C_H
#define TERN_EXPERIENCE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of `n` bytes at `p`, continuing from `crc` (0 to start). The same
 * function as iSCSI, ext4 and SQLite's WAL use: crc32c("123456789") = e3069283. */
uint32_t tern_crc32c(uint32_t crc, const void *p, size_t n);

#endif
