/*
 * tern/support/safetensors_write.h: writing a safetensors file, the tensor
 * format of Hugging Face checkpoints. Header-only (every function static
 * inline) and without a JSON library, for the core, the command layer and
 * plugins, which link nothing of libtern. Reading stays with each reader
 * (what it accepts is its own policy).
 *
 * The file:
 *
 *   bytes 0..8      N, the header length, unsigned 64-bit little-endian
 *   bytes 8..8+N    JSON, compact: {"__metadata__":{"format":"pt",...},
 *                   "<name>":{"dtype":"F32","shape":[2,3],
 *                   "data_offsets":[begin,end]},...}, padded with spaces so
 *                   that N is a multiple of 8 (the data starts 8-byte
 *                   aligned, as the reference implementation writes it)
 *   bytes 8+N..     the tensors' bytes, in the order given; data_offsets
 *                   are relative to the start of this section
 *
 * __metadata__ comes first when there is one, then the tensors in the
 * order given. Strings are escaped as jansson's compact output escapes
 * them (\" \\ \b \f \n \r \t, other control bytes as \u00XX), so a file is
 * byte for byte what json_dumps(JSON_COMPACT) of the same object gives.
 *
 * Errors: 0, or -1 with errno set (EINVAL: something the format cannot
 * hold; EEXIST: a tensor name given twice; ENOMEM; or the failing write's
 * errno) and a message in the caller's err[errn] that begins with the
 * `path` given (nothing is written when err is NULL or errn is 0).
 * Thread-safe: no state.
 */
#ifndef TERN_SUPPORT_SAFETENSORS_WRITE_H
#define TERN_SUPPORT_SAFETENSORS_WRITE_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "text_buf.h"
#include "utf8.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TERN_SAFETENSORS_MAX_DIMS 8
#define TERN_SAFETENSORS_MAX_NAME 255

/* One tensor to write. Nothing is copied: the pointers must stay valid for
 * the call. */
typedef struct tern_safetensors_tensor {
    const char *name;     /* 1..255 bytes of UTF-8, not "__metadata__", unique */
    const char *dtype;    /* "F32", "BF16", "F16", "F64", "I64", "I32", "I16", "I8",
                             "U64", "U32", "U16", "U8", "BOOL", "F8_E5M2", "F8_E4M3" */
    int ndim;             /* 0 (a scalar) .. TERN_SAFETENSORS_MAX_DIMS */
    const int64_t *shape; /* ndim sizes, each >= 0 (NULL when ndim is 0) */
    const void *data;     /* the bytes as they go into the file: little-endian
                             values (NULL when bytes is 0) */
    size_t bytes;         /* product(shape) * the dtype's size */
} tern_safetensors_tensor;

/* One __metadata__ entry: a string for a string, both UTF-8. */
typedef struct tern_safetensors_meta {
    const char *key, *value;
} tern_safetensors_meta;

/* Bytes per element of a dtype name, 0 for one this writer does not know. */
static inline size_t tern_safetensors_dtype_size(const char *dtype)
{
    static const struct {
        const char *name;
        size_t size;
    } known[] = {{"F32", 4}, {"BF16", 2}, {"F16", 2},  {"F64", 8},     {"I64", 8},
                 {"I32", 4}, {"I16", 2},  {"I8", 1},   {"U64", 8},     {"U32", 4},
                 {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}};
    for (size_t i = 0; dtype && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(dtype, known[i].name) == 0)
            return known[i].size;
    return 0;
}

/* A JSON string, escaped as jansson does (s is valid UTF-8). */
static inline void tern_safetensors_put_json(tern_text_buf *b, const char *s)
{
    tern_text_put(b, "\"", 1);
    size_t run = 0; /* bytes that need no escape, not yet put */
    for (const char *c = s;; c++) {
        unsigned char u = (unsigned char)*c;
        if (u && u >= 0x20 && u != '"' && u != '\\') {
            run++;
            continue;
        }
        tern_text_put(b, c - run, run);
        run = 0;
        if (!u)
            break;
        char esc[8];
        switch (u) {
        case '"': tern_text_put(b, "\\\"", 2); break;
        case '\\': tern_text_put(b, "\\\\", 2); break;
        case '\b': tern_text_put(b, "\\b", 2); break;
        case '\f': tern_text_put(b, "\\f", 2); break;
        case '\n': tern_text_put(b, "\\n", 2); break;
        case '\r': tern_text_put(b, "\\r", 2); break;
        case '\t': tern_text_put(b, "\\t", 2); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", u);
            tern_text_put(b, esc, 6);
        }
    }
    tern_text_put(b, "\"", 1);
}

static inline void tern_safetensors_put_u64(tern_text_buf *b, uint64_t v)
{
    char num[24];
    int k = snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    tern_text_put(b, num, (size_t)k);
}

static inline int tern_safetensors_utf8_ok(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = tern_utf8_len((const unsigned char *)s + i, n - i)))
            return 0;
    return 1;
}

/* The first i with t[i].name equal to an earlier t[j].name, or n when the
 * names are unique; SIZE_MAX when out of memory. A hash set of indices. */
static inline size_t tern_safetensors_find_twice(const tern_safetensors_tensor *t, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n && cap <= SIZE_MAX / 4)
        cap *= 2;
    size_t *slot = (size_t *)malloc(cap * sizeof *slot);
    if (!slot)
        return SIZE_MAX;
    for (size_t i = 0; i < cap; i++)
        slot[i] = SIZE_MAX;
    size_t found = n;
    for (size_t i = 0; i < n && found == n; i++) {
        uint64_t h = 1469598103934665603ull; /* FNV-1a */
        for (const unsigned char *c = (const unsigned char *)t[i].name; *c; c++)
            h = (h ^ *c) * 1099511628211ull;
        for (size_t k = (size_t)h & (cap - 1);; k = (k + 1) & (cap - 1)) {
            if (slot[k] == SIZE_MAX) {
                slot[k] = i;
                break;
            }
            if (strcmp(t[slot[k]].name, t[i].name) == 0) {
                found = i;
                break;
            }
        }
    }
    free(slot);
    return found;
}

/* printf into err (when there is one), set errno to e, return -1. */
#if defined(__GNUC__)
static inline int tern_safetensors_fail(char *err, size_t errn, int e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#endif
static inline int tern_safetensors_fail(char *err, size_t errn, int e, const char *fmt, ...)
{
    if (err && errn) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errn, fmt, ap);
        va_end(ap);
    }
    errno = e;
    return -1;
}

/* Check the n tensors (and the metadata: meta NULL for none, else n_meta
 * entries; 0 of them gives "__metadata__":{}) and build the file's first
 * part: the 8 length bytes, the JSON and its padding. *out (malloc'd, the
 * caller frees it) and *out_len, which is a multiple of 8. `path` only
 * names the file in messages. */
static inline int tern_safetensors_header(const char *path, const tern_safetensors_tensor *t,
                                          size_t n, const tern_safetensors_meta *meta,
                                          size_t n_meta, char **out, size_t *out_len,
                                          char *err, size_t errn)
{
    *out = NULL;
    *out_len = 0;
    for (size_t i = 0; meta && i < n_meta; i++)
        if (!meta[i].key || !meta[i].value || !tern_safetensors_utf8_ok(meta[i].key) ||
            !tern_safetensors_utf8_ok(meta[i].value))
            return tern_safetensors_fail(err, errn, EINVAL, "%s: metadata entry %zu is not a "
                                         "pair of UTF-8 strings", path, i);
    for (size_t i = 0; i < n; i++) {
        const tern_safetensors_tensor *x = &t[i];
        if (!x->name || !*x->name || strlen(x->name) > TERN_SAFETENSORS_MAX_NAME ||
            strcmp(x->name, "__metadata__") == 0)
            return tern_safetensors_fail(err, errn, EINVAL, "%s: tensor %zu: name \"%.60s\" "
                                         "must be 1 to %d bytes and not __metadata__", path, i,
                                         x->name ? x->name : "(null)",
                                         TERN_SAFETENSORS_MAX_NAME);
        if (!tern_safetensors_utf8_ok(x->name))
            return tern_safetensors_fail(err, errn, EINVAL, "%s: tensor %zu: the name is not "
                                         "valid UTF-8", path, i);
    }
    size_t twice = tern_safetensors_find_twice(t, n);
    if (twice == SIZE_MAX)
        return tern_safetensors_fail(err, errn, ENOMEM, "%s: out of memory building the header",
                                     path);
    tern_text_buf b = {0};
    tern_text_put(&b, "\0\0\0\0\0\0\0\0{", 9);
    if (meta) {
        tern_text_puts(&b, "\"__metadata__\":{");
        for (size_t i = 0; i < n_meta; i++) {
            if (i)
                tern_text_put(&b, ",", 1);
            tern_safetensors_put_json(&b, meta[i].key);
            tern_text_put(&b, ":", 1);
            tern_safetensors_put_json(&b, meta[i].value);
        }
        tern_text_put(&b, "}", 1);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const tern_safetensors_tensor *x = &t[i];
        const char *bad = NULL;
        char why[160];
        if (i == twice)
            bad = "the name appears twice";
        else if (x->ndim < 0 || x->ndim > TERN_SAFETENSORS_MAX_DIMS || (x->ndim && !x->shape)) {
            snprintf(why, sizeof why, "ndim %d is not in 0..%d (or shape is missing)", x->ndim,
                     TERN_SAFETENSORS_MAX_DIMS);
            bad = why;
        }
        uint64_t numel = 1, need = 0;
        for (int d = 0; !bad && d < x->ndim; d++)
            if (x->shape[d] < 0 || __builtin_mul_overflow(numel, (uint64_t)x->shape[d], &numel)) {
                snprintf(why, sizeof why, "shape[%d] = %lld is negative or too large", d,
                         (long long)x->shape[d]);
                bad = why;
            }
        size_t size = tern_safetensors_dtype_size(x->dtype);
        if (!bad && !size) {
            snprintf(why, sizeof why, "dtype \"%.20s\" is not one this writer knows",
                     x->dtype ? x->dtype : "(null)");
            bad = why;
        }
        if (!bad && (__builtin_mul_overflow(numel, (uint64_t)size, &need) ||
                     __builtin_add_overflow(offset, need, &need) || (x->bytes && !x->data)))
            bad = "too large, or no data given";
        else if (!bad && need - offset != x->bytes) {
            snprintf(why, sizeof why, "%zu bytes of data, but its shape of %s needs %llu",
                     x->bytes, x->dtype, (unsigned long long)(need - offset));
            bad = why;
        }
        if (bad) {
            free(b.p);
            return tern_safetensors_fail(err, errn, i == twice ? EEXIST : EINVAL,
                                         "%s: tensor %s: %s", path, x->name, bad);
        }
        if (i || meta)
            tern_text_put(&b, ",", 1);
        tern_safetensors_put_json(&b, x->name);
        tern_text_puts(&b, ":{\"dtype\":");
        tern_safetensors_put_json(&b, x->dtype);
        tern_text_puts(&b, ",\"shape\":[");
        for (int d = 0; d < x->ndim; d++) {
            if (d)
                tern_text_put(&b, ",", 1);
            tern_safetensors_put_u64(&b, (uint64_t)x->shape[d]);
        }
        tern_text_puts(&b, "],\"data_offsets\":[");
        tern_safetensors_put_u64(&b, offset);
        tern_text_put(&b, ",", 1);
        tern_safetensors_put_u64(&b, need);
        tern_text_puts(&b, "]}");
        offset = need;
    }
    tern_text_put(&b, "}", 1);
    while (!b.oom && b.n % 8)
        tern_text_put(&b, " ", 1);
    if (b.oom) {
        free(b.p);
        return tern_safetensors_fail(err, errn, ENOMEM, "%s: out of memory building the header",
                                     path);
    }
    uint64_t json_len = b.n - 8;
    for (int i = 0; i < 8; i++)
        b.p[i] = (char)(json_len >> (8 * i));
    *out = b.p;
    *out_len = b.n;
    return 0;
}

/* Write the whole file (header, then each tensor's bytes) to the open file
 * `fd` from its current position; `path` names it in messages. The caller
 * owns fd (and makes the file atomic, or not). */
static inline int tern_safetensors_write_fd(int fd, const char *path,
                                            const tern_safetensors_tensor *t, size_t n,
                                            const tern_safetensors_meta *meta, size_t n_meta,
                                            char *err, size_t errn)
{
    char *header;
    size_t len;
    if (tern_safetensors_header(path, t, n, meta, n_meta, &header, &len, err, errn) != 0)
        return -1;
    int rc = tern_write_all(fd, header, len);
    free(header);
    if (rc != 0)
        return tern_safetensors_fail(err, errn, errno, "%s: cannot write: %s", path,
                                     strerror(errno));
    for (size_t i = 0; i < n; i++)
        if (tern_write_all(fd, t[i].data, t[i].bytes) != 0)
            return tern_safetensors_fail(err, errn, errno, "%s: cannot write tensor '%s': %s",
                                         path, t[i].name, strerror(errno));
    return 0;
}

/* Write the whole file to `path` atomically (tern_atomic_file_open:
 * PATH.tmp, fsync, rename, fsync of the directory; no temporary file is
 * left after a failure). */
static inline int tern_safetensors_write(const char *path, const tern_safetensors_tensor *t,
                                         size_t n, const tern_safetensors_meta *meta,
                                         size_t n_meta, char *err, size_t errn)
{
    char *header;
    size_t len;
    if (tern_safetensors_header(path, t, n, meta, n_meta, &header, &len, err, errn) != 0)
        return -1;
    tern_atomic_file a;
    int rc = tern_atomic_file_open(&a, path, err, errn);
    if (rc == 0)
        rc = tern_atomic_file_write(&a, header, len, err, errn);
    free(header);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = tern_atomic_file_write(&a, t[i].data, t[i].bytes, err, errn);
    return rc == 0 ? tern_atomic_file_commit(&a, err, errn) : -1;
}

#ifdef __cplusplus
}
#endif
#endif /* TERN_SUPPORT_SAFETENSORS_WRITE_H */
