/* image_file.c: PNG (libpng) and netpbm decoding into 8-bit RGB (see
 * image_file.h).
 *
 * Both decoders read from a `source`, a file stream or a block of memory, so
 * the file path streams and the fuzzer feeds memory through the same code.
 * libpng reports errors by longjmp from its error callback: the only frame
 * that calls setjmp is png_run(), which keeps everything it allocates in the
 * png_job it is handed, so png_decode() frees it on every path. */
#include "image_file.h"

#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Sources ----------------------------------------------------------- */

typedef struct source {
    const uint8_t *mem; /* memory source, or NULL */
    size_t len, pos;
    FILE *f;            /* file source, or NULL */
} source;

static size_t src_read(source *s, uint8_t *dst, size_t n)
{
    if (s->f)
        return fread(dst, 1, n, s->f);
    size_t k = s->len - s->pos < n ? s->len - s->pos : n;
    if (k)
        memcpy(dst, s->mem + s->pos, k);
    s->pos += k;
    return k;
}

/* The next byte, or -1 at the end. */
static int src_getc(source *s)
{
    if (s->f)
        return getc_unlocked(s->f);
    return s->pos < s->len ? s->mem[s->pos++] : -1;
}

static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t cap, const char *fmt, ...)
{
    if (!why || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

/* The size check shared by both formats, before any pixel is allocated. */
static image_file_status check_size(uint64_t w, uint64_t h, uint64_t max_pixels, char *why,
                                    size_t cap)
{
    if (w == 0 || h == 0) {
        say(why, cap, "the image is %llux%llu: it has no pixels", (unsigned long long)w,
            (unsigned long long)h);
        return IMAGE_FILE_EMPTY;
    }
    /* w, h < 2^32 each: the product fits */
    if (w * h > max_pixels) {
        say(why, cap, "%llux%llu is over the limit of %llu pixels",
            (unsigned long long)w, (unsigned long long)h, (unsigned long long)max_pixels);
        return IMAGE_FILE_TOO_BIG;
    }
    return IMAGE_FILE_OK;
}

/* ---- PNG ----------------------------------------------------------------- */

typedef struct png_job {
    source *src;
    uint64_t max_pixels;
    int what;
    image_file_status status; /* set before a deliberate png_error */
    uint32_t w, h;
    uint8_t *pixels;         /* RGBA while reading, owned by the job */
    char msg[96];            /* libpng's message */
} png_job;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_job *job = png_get_error_ptr(png);
    if (job && !job->msg[0])
        snprintf(job->msg, sizeof job->msg, "%s", msg ? msg : "error");
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* libpng recovers from what it warns about; say nothing */
}

static void png_on_read(png_structp png, png_bytep data, size_t n)
{
    png_job *job = png_get_io_ptr(png);
    if (src_read(job->src, data, n) != n)
        png_error(png, "the file is cut short");
}

/* Everything that can longjmp. 0, or -1 after an error (job->status, msg). */
static int png_run(png_structp png, png_infop info, png_job *job)
{
    if (setjmp(png_jmpbuf(png)))
        return -1;
    png_set_read_fn(png, job, png_on_read);
    png_set_sig_bytes(png, 8);
    /* our own pixel limit decides, not libpng's default of 10^6 per side */
    png_set_user_limits(png, 0x7fffffffu, 0x7fffffffu);
    png_set_chunk_malloc_max(png, 8u << 20);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    char why[sizeof job->msg];
    job->status = check_size(w, h, job->max_pixels, why, sizeof why);
    if (job->status != IMAGE_FILE_OK) {
        memcpy(job->msg, why, sizeof why);
        png_error(png, why);
    }
    job->w = w;
    job->h = h;
    if (job->what == IMAGE_FILE_HEADER)
        return 0;
    /* any colour type and depth -> 8-bit RGBA */
    png_set_expand(png);
#ifdef PNG_READ_SCALE_16_TO_8_SUPPORTED
    png_set_scale_16(png);
#else
    png_set_strip_16(png);
#endif
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * 4) {
        job->status = IMAGE_FILE_CORRUPT;
        png_error(png, "unexpected row layout");
    }
    job->pixels = malloc((size_t)w * h * 4);
    if (!job->pixels) {
        job->status = IMAGE_FILE_NO_MEMORY;
        png_error(png, "out of memory");
    }
    /* Rows are read straight into the image: with interlacing, each pass
     * adds its pixels to the row read before ("sparkle" order). */
    if (passes > 1)
        memset(job->pixels, 0, (size_t)w * h * 4);
    for (int p = 0; p < passes; p++)
        for (png_uint_32 y = 0; y < h; y++)
            png_read_row(png, job->pixels + (size_t)y * w * 4, NULL);
    return 0;
}

/* RGBA -> RGB over a white background, in place. */
static uint8_t *flatten(uint8_t *rgba, size_t pixels)
{
    for (size_t i = 0; i < pixels; i++) {
        const uint8_t *s = rgba + 4 * i;
        unsigned a = s[3];
        uint8_t r = (uint8_t)((s[0] * a + 255u * (255u - a) + 127u) / 255u);
        uint8_t g = (uint8_t)((s[1] * a + 255u * (255u - a) + 127u) / 255u);
        uint8_t b = (uint8_t)((s[2] * a + 255u * (255u - a) + 127u) / 255u);
        rgba[3 * i] = r;
        rgba[3 * i + 1] = g;
        rgba[3 * i + 2] = b;
    }
    uint8_t *smaller = realloc(rgba, pixels * 3);
    return smaller ? smaller : rgba;
}

/* The 8 signature bytes were read and checked by the caller. */
static image_file_status png_decode(source *src, uint64_t max_pixels, int what, image_rgb *out,
                                    char *why, size_t cap)
{
    png_job job = {.src = src, .max_pixels = max_pixels, .what = what};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, png_on_error,
                                             png_on_warning);
    if (!png) {
        say(why, cap, "out of memory");
        return IMAGE_FILE_NO_MEMORY;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        say(why, cap, "out of memory");
        return IMAGE_FILE_NO_MEMORY;
    }
    int failed = png_run(png, info, &job);
    png_destroy_read_struct(&png, &info, NULL);
    if (failed) {
        free(job.pixels);
        image_file_status st = job.status != IMAGE_FILE_OK ? job.status : IMAGE_FILE_CORRUPT;
        if (st == IMAGE_FILE_CORRUPT)
            say(why, cap, "corrupt PNG: %s", job.msg);
        else
            say(why, cap, "%s", job.msg);
        return st;
    }
    out->w = job.w;
    out->h = job.h;
    out->rgb = job.pixels ? flatten(job.pixels, (size_t)job.w * job.h) : NULL;
    return IMAGE_FILE_OK;
}

/* ---- netpbm (P2, P3, P5, P6) ------------------------------------------- */

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Skip whitespace and '#' comments; the first other byte, or -1. */
static int skip_blank(source *s)
{
    int c = src_getc(s);
    for (;;) {
        if (c == '#') {
            while (c != -1 && c != '\n' && c != '\r')
                c = src_getc(s);
        } else if (is_space(c)) {
            c = src_getc(s);
        } else {
            return c;
        }
    }
}

/* A decimal number of at most 10 digits, after blanks. On success *end is
 * the byte after it (-1 at the end of the input); a '#' right after the
 * number starts a comment, which is skipped, and *end is then '\n'. 0, or -1. */
static int read_uint(source *s, uint64_t *out, int *end)
{
    int c = skip_blank(s);
    if (c < '0' || c > '9')
        return -1;
    uint64_t v = 0;
    int digits = 0;
    while (c >= '0' && c <= '9') {
        if (++digits > 10)
            return -1;
        v = v * 10 + (uint64_t)(c - '0');
        c = src_getc(s);
    }
    if (c == '#') {
        while (c != -1 && c != '\n' && c != '\r')
            c = src_getc(s);
        c = '\n';
    }
    *out = v;
    *end = c;
    return 0;
}

/* `kind` is the digit after 'P': 2, 3, 5 or 6. */
static image_file_status pnm_decode(source *src, int kind, uint64_t max_pixels, int what,
                                    image_rgb *out, char *why, size_t cap)
{
    const char *name = kind == 2 || kind == 5 ? "PGM" : "PPM";
    uint64_t w = 0, h = 0, maxval = 0;
    int end = 0;
    if (read_uint(src, &w, &end) != 0 || !is_space(end) ||
        read_uint(src, &h, &end) != 0 || !is_space(end) ||
        read_uint(src, &maxval, &end) != 0 || !is_space(end)) {
        say(why, cap, "corrupt %s: the header (width, height, maxval) is malformed", name);
        return IMAGE_FILE_CORRUPT;
    }
    if (maxval < 1 || maxval > 65535) {
        say(why, cap, "corrupt %s: maxval %llu is not in 1..65535", name,
            (unsigned long long)maxval);
        return IMAGE_FILE_CORRUPT;
    }
    if (w > UINT32_MAX || h > UINT32_MAX) {
        say(why, cap, "%llux%llu is over the limit of %llu pixels",
            (unsigned long long)w, (unsigned long long)h, (unsigned long long)max_pixels);
        return IMAGE_FILE_TOO_BIG;
    }
    image_file_status st = check_size(w, h, max_pixels, why, cap);
    if (st != IMAGE_FILE_OK)
        return st;
    if (what == IMAGE_FILE_HEADER) {
        out->w = (uint32_t)w;
        out->h = (uint32_t)h;
        return IMAGE_FILE_OK;
    }
    int channels = kind == 3 || kind == 6 ? 3 : 1;
    int wide = maxval > 255;
    size_t pixels = (size_t)w * (size_t)h;
    uint8_t *rgb = malloc(pixels * 3);
    if (!rgb) {
        say(why, cap, "out of memory for %llux%llu pixels", (unsigned long long)w,
            (unsigned long long)h);
        return IMAGE_FILE_NO_MEMORY;
    }
    size_t row_bytes = (size_t)w * (size_t)channels * (wide ? 2u : 1u);
    uint8_t *row = kind >= 5 ? malloc(row_bytes) : NULL;
    if (kind >= 5 && !row) {
        free(rgb);
        say(why, cap, "out of memory");
        return IMAGE_FILE_NO_MEMORY;
    }
    const char *bad = NULL;
    for (size_t y = 0; y < h && !bad; y++) {
        if (row && src_read(src, row, row_bytes) != row_bytes) {
            bad = "the pixel data is cut short";
            break;
        }
        for (size_t x = 0; x < w && !bad; x++) {
            unsigned v[3] = {0, 0, 0};
            for (int c = 0; c < channels; c++) {
                size_t k = x * (size_t)channels + (size_t)c;
                if (row) {
                    v[c] = wide ? (unsigned)row[2 * k] << 8 | row[2 * k + 1] : row[k];
                } else {
                    uint64_t sample = 0;
                    int after = 0;
                    if (read_uint(src, &sample, &after) != 0) {
                        bad = "the pixel data is cut short or not numbers";
                        break;
                    }
                    if (!(is_space(after) || after == -1)) {
                        bad = "the pixel data is not numbers";
                        break;
                    }
                    v[c] = sample > 65535 ? 65536u : (unsigned)sample;
                }
                if (v[c] > maxval) {
                    bad = "a sample is above maxval";
                    break;
                }
            }
            if (channels == 1)
                v[1] = v[2] = v[0];
            uint8_t *d = rgb + 3 * (y * w + x);
            for (int c = 0; c < 3; c++)
                d[c] = (uint8_t)(((uint64_t)v[c] * 255u + maxval / 2) / maxval);
        }
    }
    free(row);
    if (bad) {
        free(rgb);
        say(why, cap, "corrupt %s: %s", name, bad);
        return IMAGE_FILE_CORRUPT;
    }
    out->w = (uint32_t)w;
    out->h = (uint32_t)h;
    out->rgb = rgb;
    return IMAGE_FILE_OK;
}

/* ---- Dispatch -------------------------------------------------------------- */

static const uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static image_file_status decode(source *src, uint64_t max_pixels, int what, image_rgb *out,
                                char *why, size_t cap)
{
    uint8_t head[8];
    size_t got = src_read(src, head, 2);
    if (got == 0) {
        say(why, cap, "the file is empty");
        return IMAGE_FILE_UNKNOWN;
    }
    if (got == 2 && head[0] == 'P' && (head[1] == '2' || head[1] == '3' || head[1] == '5' ||
                                       head[1] == '6'))
        return pnm_decode(src, head[1] - '0', max_pixels, what, out, why, cap);
    if (got == 2 && head[0] == png_signature[0] && head[1] == png_signature[1]) {
        got += src_read(src, head + 2, 6);
        if (got == 8 && memcmp(head, png_signature, 8) == 0)
            return png_decode(src, max_pixels, what, out, why, cap);
        if (got < 8) {
            say(why, cap, "corrupt PNG: the file is cut short");
            return IMAGE_FILE_CORRUPT;
        }
    }
    say(why, cap, "not a PNG or PPM/PGM image");
    return IMAGE_FILE_UNKNOWN;
}

image_file_status image_file_decode(const uint8_t *data, size_t len, uint64_t max_pixels, int what,
                                    image_rgb *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (why && cap)
        why[0] = '\0';
    source src = {.mem = data ? data : (const uint8_t *)"", .len = data ? len : 0};
    image_file_status st = decode(&src, max_pixels, what, out, why, cap);
    if (st != IMAGE_FILE_OK)
        memset(out, 0, sizeof *out);
    return st;
}

image_file_status image_file_load(const char *path, uint64_t max_pixels, int what, image_rgb *out,
                                  char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (why && cap)
        why[0] = '\0';
    /* O_NONBLOCK: a FIFO must not block the open; only regular files are read */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) {
            say(why, cap, "not found");
            return IMAGE_FILE_NOT_FOUND;
        }
        say(why, cap, "cannot open: %s", strerror(e));
        return IMAGE_FILE_UNREADABLE;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        say(why, cap, "not a regular file");
        return IMAGE_FILE_UNREADABLE;
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        say(why, cap, "cannot open: %s", strerror(e));
        return e == ENOMEM ? IMAGE_FILE_NO_MEMORY : IMAGE_FILE_UNREADABLE;
    }
    source src = {.f = f};
    image_file_status s = decode(&src, max_pixels, what, out, why, cap);
    if (s != IMAGE_FILE_OK && ferror(f)) {
        say(why, cap, "cannot read: %s", strerror(errno ? errno : EIO));
        s = IMAGE_FILE_UNREADABLE;
    }
    fclose(f);
    if (s != IMAGE_FILE_OK) {
        image_rgb_free(out);
        memset(out, 0, sizeof *out);
    }
    return s;
}

void image_rgb_free(image_rgb *img)
{
    if (!img)
        return;
    free(img->rgb);
    img->rgb = NULL;
}
