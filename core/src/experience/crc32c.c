/* crc32c.c: CRC-32C, table-driven, 8 bytes per step ("slicing by 8").
 * A 4 KB experience costs about a microsecond, against tens of microseconds
 * for the buffer's copy and lock, so no hardware instruction is needed. */
#include "experience/crc32c.h"

#include <pthread.h>

#define POLY 0x82f63b78u /* reversed Castagnoli polynomial */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    /* table[k][i]: the CRC of byte i followed by k zero bytes */
    for (uint32_t i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
}

uint32_t tern_crc32c(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&table_once, make_table);
    const unsigned char *b = p;
    crc = ~crc;
    for (; n >= 8; n -= 8, b += 8) {
        /* little-endian word order, written out so it holds on any host */
        uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                             (uint32_t)b[3] << 24);
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][b[4]] ^ table[2][b[5]] ^ table[1][b[6]] ^
              table[0][b[7]];
    }
    while (n--)
        crc = (crc >> 8) ^ table[0][(crc ^ *b++) & 0xff];
    return ~crc;
}
