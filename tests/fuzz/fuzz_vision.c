/*
 * fuzz_vision.c: libFuzzer target for the `vision` reward's parsers and
 * decoders (plugins/rewards/vision): the box and detection parsers, the
 * count, option, yes/no and colour extractors, ANLS, the reason cleaner,
 * and the PNG (libpng) and PPM/PGM decoders reading from memory (the
 * core's core/src/image/image_file.c, which libtern decodes a task's image
 * with too), with
 * region counting over what they decode. Nothing may crash, leak or read out
 * of bounds, and the results must keep their invariants (IoU in [0, 1],
 * counts within their text, a decoded image of the size its header gives).
 * PNG inputs are decoded twice: as they are, and "resealed" (every chunk's
 * CRC made right), so that the fuzzer reaches libpng past the checksums.
 *
 *   build-fuzz/tests/fuzz/fuzz_vision -max_len=4096 -timeout=10 corpus tests/fuzz/corpus_vision
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boxes.h"
#include "image_file.h"
#include "palette.h"
#include "regions.h"
#include "text.h"

/* Pixels a decoded input may have: keeps each run small. */
#define MAX_PIXELS (1u << 16)

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* Make every whole chunk's CRC right, in place. */
static void reseal_png(uint8_t *p, size_t n)
{
    size_t i = 8;
    while (i + 12 <= n) {
        uint32_t len = (uint32_t)p[i] << 24 | (uint32_t)p[i + 1] << 16 | (uint32_t)p[i + 2] << 8 |
                       p[i + 3];
        if (len > n - i - 12)
            break;
        uint32_t crc = crc32_of(p + i + 4, (size_t)len + 4);
        uint8_t *c = p + i + 8 + len;
        c[0] = (uint8_t)(crc >> 24);
        c[1] = (uint8_t)(crc >> 16);
        c[2] = (uint8_t)(crc >> 8);
        c[3] = (uint8_t)crc;
        i += 12 + (size_t)len;
    }
}

static void check_image(const uint8_t *data, size_t size)
{
    image_rgb head, img;
    char why[128];
    image_file_status a = image_file_decode(data, size, MAX_PIXELS, IMAGE_FILE_HEADER, &head, why,
                                            sizeof why);
    if (strnlen(why, sizeof why) == sizeof why)
        abort();
    image_file_status b = image_file_decode(data, size, MAX_PIXELS, IMAGE_FILE_PIXELS, &img, why,
                                            sizeof why);
    if (b == IMAGE_FILE_OK) {
        /* whatever decodes in full had a readable header of the same size */
        if (a != IMAGE_FILE_OK || head.w != img.w || head.h != img.h || !img.rgb)
            abort();
        if ((uint64_t)img.w * img.h > MAX_PIXELS || img.w == 0 || img.h == 0)
            abort();
        uint64_t n4 = 0, n8 = 0;
        if (vis_count_regions(&img, img.rgb, 0, 4, 1, &n4) == 0 &&
            vis_count_regions(&img, img.rgb, 0, 8, 1, &n8) == 0) {
            /* the first pixel's colour has a region; 8-connectivity joins, never splits */
            if (n4 < 1 || n8 < 1 || n8 > n4)
                abort();
        }
        (void)vis_palette_nearest(img.rgb + 3 * ((size_t)img.w * img.h - 1));
        image_rgb_free(&img);
    } else if (img.rgb || img.w || img.h) {
        abort();
    }
}

static void check_text(const char *s, size_t n)
{
    vis_box b;
    if (vis_parse_box(s, n, &b)) {
        if (b.at >= n || b.len > n - b.at)
            abort();
        double iou = vis_iou(&b, &b), area = (b.x2 - b.x1) * (b.y2 - b.y1);
        /* a box overlaps itself fully, unless its area is 0 or past the doubles */
        if (!(iou >= 0 && iou <= 1) ||
            (vis_box_valid(&b) && area > 0 && isfinite(2 * area) && iou != 1))
            abort();
    }
    vis_box out[8];
    size_t total = 0, order[8];
    unsigned char taken[8];
    int empty = 0;
    vis_parse_detections(s, n, out, 8, &total, &empty);
    size_t kept = total < 8 ? total : 8;
    for (size_t i = 0; i < kept; i++)
        if (out[i].at > n || out[i].len > n - out[i].at || !memchr(out[i].label, 0, VIS_LABEL_MAX))
            abort();
    if (empty && total)
        abort();
    vis_match m;
    vis_match_boxes(out, kept, out, kept, 0.5, 1, order, taken, &m);
    if (m.matched > kept || !(m.sum_iou >= 0 && m.sum_iou <= (double)kept + 1e-9))
        abort();

    const char *region;
    size_t rn;
    vis_answer_region(s, n, &region, &rn);
    if (region < s || rn > n || (size_t)(region - s) > n - rn)
        abort();
    vis_count c;
    if (vis_extract_count(s, n, &c)) {
        if (c.at >= n || c.len > n - c.at || c.n_digits == 0)
            abort();
        (void)vis_count_equal(&c, &c);
    }
    vis_choice ch;
    if (vis_extract_letter(s, n, 'E', &ch) && (ch.letter < 'A' || ch.letter > 'Z' || ch.at >= n))
        abort();
    if (vis_extract_yesno(s, n, &ch) && (ch.letter != 'Y' && ch.letter != 'N'))
        abort();
    char letter;
    int yn;
    (void)vis_gold_choice(s, n, &letter, &yn);
    size_t at, len;
    int k = vis_palette_find_last(s, n, &at, &len);
    if (k >= VIS_PALETTE_SIZE || (k >= 0 && (at >= n || len > n - at)))
        abort();
    /* ANLS on at most 2 x 64 bytes: the DP is quadratic up to its cap of
     * VIS_ANLS_MAX_CHARS (tested in test_vision_reward), which would make
     * every run slow */
    double sim;
    size_t half = n / 2 < 64 ? n / 2 : 64;
    double anls = vis_anls(s, half, s + n / 2, n - n / 2 < 64 ? n - n / 2 : 64, &sim);
    if (anls != -1 && !(anls >= 0 && anls <= 1 && sim >= 0 && sim <= 1))
        abort();
    char reason[160];
    reward_excerpt(reason, sizeof reason, s, n, 100);
    size_t rl = strlen(reason);
    memcpy(reason + rl, s, n < sizeof reason - rl ? n : sizeof reason - rl);
    reason[sizeof reason - 1] = '\0';
    vis_clean_reason(reason, sizeof reason);
    for (size_t i = 0; reason[i];) {
        size_t u = tern_utf8_len((const unsigned char *)reason + i, strlen(reason + i));
        if (!u || (u == 1 && ((unsigned char)reason[i] < 0x20 || reason[i] == 0x7f)))
            abort();
        i += u;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy: a read past the end is caught */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    check_text((const char *)copy, size);
    check_image(copy, size);
    if (size >= 8 && memcmp(copy, "\x89PNG\r\n\x1a\n", 8) == 0) {
        reseal_png(copy, size);
        check_image(copy, size);
    }
    free(copy);
    return 0;
}
