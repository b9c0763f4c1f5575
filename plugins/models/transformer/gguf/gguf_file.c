/* gguf_file.c: the GGUF container, validated (see gguf_file.h). */
#include "gguf/gguf_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fail.h"
#include "gguf/gguf_dequant.h"
#include "tern/support/regular_file.h"

static const char magic[4] = {'G', 'G', 'U', 'F'};

int gguf_is_gguf(const void *head, size_t n) { return n >= 4 && memcmp(head, magic, 4) == 0; }

static const char *const type_names[GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64"};

const char *gguf_type_name(gguf_type t)
{
    return (unsigned)t < GGUF_TYPE_COUNT ? type_names[t] : "unknown";
}

/* Bytes of one scalar of type t (0 for string and array). */
static size_t scalar_size(gguf_type t)
{
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static uint64_t le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A cursor over the image; every read checks the bytes left. */
typedef struct cursor {
    const uint8_t *base;
    size_t size, at;
    const char *name; /* the file, for messages */
    char *err;
    size_t errn;
} cursor;

static int need(cursor *c, size_t n, const char *what)
{
    if (n > c->size - c->at)
        return tf_fail(c->err, c->errn, "%s: truncated at byte %zu: %s needs %zu bytes, %zu are "
                       "left (a partial download?)", c->name, c->at, what, n, c->size - c->at);
    return 0;
}

static int read_u32(cursor *c, uint32_t *v, const char *what)
{
    if (need(c, 4, what) != 0)
        return -1;
    *v = (uint32_t)le(c->base + c->at, 4);
    c->at += 4;
    return 0;
}

static int read_u64(cursor *c, uint64_t *v, const char *what)
{
    if (need(c, 8, what) != 0)
        return -1;
    *v = le(c->base + c->at, 8);
    c->at += 8;
    return 0;
}

static int read_str(cursor *c, gguf_str *s, const char *what)
{
    uint64_t n;
    if (read_u64(c, &n, what) != 0)
        return -1;
    if (n > c->size - c->at)
        return tf_fail(c->err, c->errn, "%s: %s at byte %zu claims %llu bytes, only %zu are left "
                       "(truncated or corrupt)", c->name, what, c->at - 8, (unsigned long long)n,
                       c->size - c->at);
    s->s = (const char *)c->base + c->at;
    s->len = (size_t)n;
    c->at += (size_t)n;
    return 0;
}

/* A key or tensor name: printable, at most GGUF_NAME_MAX - 1 bytes, copied with a NUL. */
static int read_name(cursor *c, char *out, const char *what)
{
    gguf_str s = {NULL, 0};
    size_t at = c->at;
    if (read_str(c, &s, what) != 0)
        return -1;
    if (s.len == 0 || s.len >= GGUF_NAME_MAX)
        return tf_fail(c->err, c->errn, "%s: %s at byte %zu is %zu bytes long; names are 1 to %d "
                       "bytes", c->name, what, at, s.len, GGUF_NAME_MAX - 1);
    for (size_t i = 0; i < s.len; i++)
        if ((unsigned char)s.s[i] < 0x20 || s.s[i] == 0x7f)
            return tf_fail(c->err, c->errn, "%s: %s at byte %zu holds control byte 0x%02x",
                           c->name, what, at, (unsigned char)s.s[i]);
    memcpy(out, s.s, s.len);
    out[s.len] = 0;
    return 0;
}

/* Skip one value of type t (not an array), checking it is inside the file. */
static int skip_value(cursor *c, gguf_type t, const char *key)
{
    if (t == GGUF_TYPE_STRING) {
        gguf_str s = {NULL, 0};
        return read_str(c, &s, key);
    }
    size_t n = scalar_size(t);
    if (need(c, n, key) != 0)
        return -1;
    c->at += n;
    return 0;
}

static int read_kv(cursor *c, gguf_kv *kv)
{
    uint32_t t;
    if (read_name(c, kv->key, "a metadata key") != 0 || read_u32(c, &t, kv->key) != 0)
        return -1;
    if (t >= GGUF_TYPE_COUNT)
        return tf_fail(c->err, c->errn, "%s: key %s has value type %u; GGUF's types are 0..%d",
                       c->name, kv->key, t, GGUF_TYPE_COUNT - 1);
    kv->type = (gguf_type)t;
    kv->n = 1;
    if (kv->type != GGUF_TYPE_ARRAY) {
        kv->offset = c->at;
        kv->value = c->base + c->at;
        return skip_value(c, kv->type, kv->key);
    }
    uint32_t et;
    uint64_t n;
    if (read_u32(c, &et, kv->key) != 0 || read_u64(c, &n, kv->key) != 0)
        return -1;
    if (et >= GGUF_TYPE_COUNT || et == GGUF_TYPE_ARRAY)
        return tf_fail(c->err, c->errn, "%s: key %s is an array of %s (type %u); tern reads "
                       "arrays of scalars and strings", c->name, kv->key,
                       gguf_type_name((gguf_type)et), et);
    kv->elem_type = (gguf_type)et;
    kv->n = n;
    kv->offset = c->at;
    kv->value = c->base + c->at;
    if (et != GGUF_TYPE_STRING) {
        size_t sz = scalar_size(kv->elem_type);
        if (n > (c->size - c->at) / sz)
            return tf_fail(c->err, c->errn, "%s: key %s: an array of %llu %s at byte %zu runs "
                           "past the end of the file", c->name, kv->key, (unsigned long long)n,
                           gguf_type_name(kv->elem_type), c->at);
        c->at += (size_t)n * sz;
        return 0;
    }
    /* each string takes at least its 8-byte length */
    if (n > (c->size - c->at) / 8)
        return tf_fail(c->err, c->errn, "%s: key %s: an array of %llu strings at byte %zu runs "
                       "past the end of the file", c->name, kv->key, (unsigned long long)n, c->at);
    for (uint64_t i = 0; i < n; i++)
        if (skip_value(c, GGUF_TYPE_STRING, kv->key) != 0)
            return -1;
    return 0;
}

static int read_tensor_info(cursor *c, gguf_tensor *t, size_t index)
{
    char what[48];
    snprintf(what, sizeof what, "the name of tensor %zu", index);
    if (read_name(c, t->name, what) != 0 || read_u32(c, &t->n_dims, t->name) != 0)
        return -1;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return tf_fail(c->err, c->errn, "%s: tensor %s has %u dimensions; GGUF allows 1 to %d",
                       c->name, t->name, t->n_dims, GGUF_MAX_DIMS);
    size_t numel = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        uint64_t ne = 1;
        if ((uint32_t)d < t->n_dims && read_u64(c, &ne, t->name) != 0)
            return -1;
        /* a dimension above 2^40, or a product above 2^50, is no real model's */
        if (ne == 0 || ne > (1ull << 40) || numel > (SIZE_MAX >> 20) / ne)
            return tf_fail(c->err, c->errn, "%s: tensor %s: dimension %d is %llu; each must be "
                           "1 to 2^40, their product at most 2^44", c->name, t->name, d,
                           (unsigned long long)ne);
        numel *= (size_t)ne;
        t->ne[d] = (int64_t)ne;
    }
    if (numel > (1ull << 44))
        return tf_fail(c->err, c->errn, "%s: tensor %s has %zu elements; tern reads at most 2^44",
                       c->name, t->name, numel);
    t->numel = numel;
    return read_u32(c, &t->type, t->name) != 0 || read_u64(c, &t->offset, t->name) != 0 ? -1 : 0;
}

/* Place tensor t in the data section [start, size): aligned, inside, sized by its type. */
static int place_tensor(cursor *c, gguf_file *f, gguf_tensor *t)
{
    if (t->offset % f->alignment != 0)
        return tf_fail(c->err, c->errn, "%s: tensor %s: offset %llu is not a multiple of the "
                       "alignment %zu", c->name, t->name, (unsigned long long)t->offset,
                       f->alignment);
    ggml_type_info ti;
    ggml_type_describe(t->type, &ti);
    if (!ti.block_bytes)
        return 0; /* unknown type: refused if it is ever converted */
    if (t->ne[0] % (int64_t)ti.block_elems != 0)
        return tf_fail(c->err, c->errn, "%s: tensor %s: type %s packs %zu weights per block, but "
                       "its rows hold %lld", c->name, t->name, ti.name, ti.block_elems,
                       (long long)t->ne[0]);
    size_t nbytes = t->numel / ti.block_elems * ti.block_bytes;
    size_t room = f->size - f->data_start;
    if (t->offset > room || nbytes > room - t->offset)
        return tf_fail(c->err, c->errn, "%s: tensor %s (%s, %zu bytes at data offset %llu) runs "
                       "past the end of the file (%zu bytes of data; truncated?)", c->name,
                       t->name, ti.name, nbytes, (unsigned long long)t->offset, room);
    t->nbytes = nbytes;
    t->data = f->base + f->data_start + t->offset;
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* No two tensors' bytes overlap: a tensor that shares another's bytes is a
 * corrupt or hand-made file, whose weights would alias. */
static int no_overlap(cursor *c, const gguf_file *f)
{
    if (f->n_tensors < 2)
        return 0;
    const gguf_tensor **t = malloc(f->n_tensors * sizeof *t);
    if (!t)
        return tf_fail(c->err, c->errn, "%s: out of memory", c->name);
    size_t n = 0;
    for (size_t i = 0; i < f->n_tensors; i++)
        if (f->tensors[i].nbytes)
            t[n++] = &f->tensors[i];
    qsort(t, n, sizeof *t, by_offset);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i + 1 < n; i++)
        if (t[i]->offset + t[i]->nbytes > t[i + 1]->offset)
            rc = tf_fail(c->err, c->errn, "%s: tensors %s (bytes %llu to %llu of the data) and "
                         "%s (from byte %llu) overlap (corrupt?)", c->name, t[i]->name,
                         (unsigned long long)t[i]->offset,
                         (unsigned long long)(t[i]->offset + t[i]->nbytes), t[i + 1]->name,
                         (unsigned long long)t[i + 1]->offset);
    free(t);
    return rc;
}

static int parse(cursor *c, gguf_file *f)
{
    if (c->size < 4 || !gguf_is_gguf(c->base, c->size))
        return tf_fail(c->err, c->errn, "%s: not a GGUF file (it does not start with \"GGUF\")",
                       c->name);
    c->at = 4;
    uint64_t n_tensors, n_kv;
    if (read_u32(c, &f->version, "the version") != 0)
        return -1;
    if (f->version == 1)
        return tf_fail(c->err, c->errn, "%s: GGUF version 1 (2023's first format) is not read; "
                       "convert it again with a current llama.cpp", c->name);
    if (f->version != 2 && f->version != 3)
        return tf_fail(c->err, c->errn, "%s: GGUF version %u%s; tern reads versions 2 and 3",
                       c->name, f->version,
                       (f->version & 0xffff) == 0 ? " (a big-endian file?)" : "");
    if (read_u64(c, &n_tensors, "the tensor count") != 0 || read_u64(c, &n_kv, "the key count"))
        return -1;
    /* a pair takes at least 8 + 1 + 4 + 1 bytes, a tensor info 8 + 1 + 4 + 8 + 4 + 8 */
    if (n_kv > (c->size - c->at) / 14 || n_tensors > (c->size - c->at) / 33)
        return tf_fail(c->err, c->errn, "%s: the header claims %llu keys and %llu tensors, more "
                       "than %zu bytes can hold (corrupt?)", c->name, (unsigned long long)n_kv,
                       (unsigned long long)n_tensors, c->size);
    f->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *f->kv);
    f->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors)
        return tf_fail(c->err, c->errn, "%s: out of memory", c->name);
    for (size_t i = 0; i < n_kv; i++) {
        if (read_kv(c, &f->kv[i]) != 0)
            return -1;
        if (gguf_find_kv(f, f->kv[i].key))
            return tf_fail(c->err, c->errn, "%s: key %s appears twice", c->name, f->kv[i].key);
        f->n_kv = i + 1;
    }
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *al = gguf_find_kv(f, "general.alignment");
    if (al) {
        int64_t a;
        if (al->type != GGUF_TYPE_UINT32 || gguf_kv_int(al, &a) != 0 || a <= 0 || (a & (a - 1)))
            return tf_fail(c->err, c->errn, "%s: general.alignment must be a uint32 power of two",
                           c->name);
        f->alignment = (size_t)a;
    }
    for (size_t i = 0; i < n_tensors; i++) {
        if (read_tensor_info(c, &f->tensors[i], i) != 0)
            return -1;
        if (gguf_find_tensor(f, f->tensors[i].name))
            return tf_fail(c->err, c->errn, "%s: tensor %s appears twice", c->name,
                           f->tensors[i].name);
        f->n_tensors = i + 1;
    }
    size_t start = c->at + (f->alignment - c->at % f->alignment) % f->alignment;
    if (start > c->size && n_tensors > 0)
        return tf_fail(c->err, c->errn, "%s: the file ends at byte %zu, before its data section "
                       "(truncated?)", c->name, c->size);
    f->data_start = start > c->size ? c->size : start;
    for (size_t i = 0; i < f->n_tensors; i++)
        if (place_tensor(c, f, &f->tensors[i]) != 0)
            return -1;
    return no_overlap(c, f);
}

int gguf_open_buffer(const void *data, size_t size, const char *name, gguf_file *f, char *err,
                     size_t errn)
{
    memset(f, 0, sizeof *f);
    f->base = data;
    f->size = size;
    cursor c = {data, size, 0, name, err, errn};
    if (parse(&c, f) != 0) {
        gguf_close(f);
        return -1;
    }
    return 0;
}

int gguf_open(const char *path, gguf_file *f, char *err, size_t errn)
{
    memset(f, 0, sizeof *f);
    struct stat st;
    char why[TERN_REGULAR_WHY_MAX];
    int fd = tern_regular_open(path, 0, &st, why, sizeof why);
    if (fd < 0)
        return tf_fail(err, errn, "%s: cannot open: %s", path, why);
    size_t size = (size_t)st.st_size;
    if (size < 24) {
        close(fd);
        return tf_fail(err, errn, "%s: the file is %zu bytes, shorter than a GGUF header "
                       "(empty or truncated?)", path, size);
    }
    /* private and read-only; a file truncated by someone else while mapped
     * would fault, which no reader of a mapped file can avoid */
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED)
        return tf_fail(err, errn, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
    if (gguf_open_buffer(map, size, path, f, err, errn) != 0) {
        munmap(map, size);
        return -1;
    }
    f->mapped = 1;
    return 0;
}

void gguf_close(gguf_file *f)
{
    if (f->mapped && f->base)
        munmap((void *)f->base, f->size);
    free(f->kv);
    free(f->tensors);
    memset(f, 0, sizeof *f);
}

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key)
{
    for (size_t i = 0; i < f->n_kv; i++)
        if (strcmp(f->kv[i].key, key) == 0)
            return &f->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

/* One integer of type t at p, as int64; -1 when it does not fit (uint64 above INT64_MAX). */
static int int_at(gguf_type t, const uint8_t *p, int64_t *out)
{
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_BOOL: *out = p[0]; return 0;
    case GGUF_TYPE_INT8: *out = (int8_t)p[0]; return 0;
    case GGUF_TYPE_UINT16: *out = (uint16_t)le(p, 2); return 0;
    case GGUF_TYPE_INT16: *out = (int16_t)le(p, 2); return 0;
    case GGUF_TYPE_UINT32: *out = (uint32_t)le(p, 4); return 0;
    case GGUF_TYPE_INT32: *out = (int32_t)le(p, 4); return 0;
    case GGUF_TYPE_INT64: *out = (int64_t)le(p, 8); return 0;
    case GGUF_TYPE_UINT64: {
        uint64_t v = le(p, 8);
        if (v > INT64_MAX)
            return -1;
        *out = (int64_t)v;
        return 0;
    }
    default: return -1;
    }
}

int gguf_kv_int(const gguf_kv *kv, int64_t *out)
{
    return kv->type == GGUF_TYPE_ARRAY ? -1 : int_at(kv->type, kv->value, out);
}

int gguf_kv_real(const gguf_kv *kv, double *out)
{
    int64_t i;
    if (kv->type == GGUF_TYPE_FLOAT32) {
        uint32_t u = (uint32_t)le(kv->value, 4);
        float x;
        memcpy(&x, &u, sizeof x);
        *out = x;
    } else if (kv->type == GGUF_TYPE_FLOAT64) {
        uint64_t u = le(kv->value, 8);
        memcpy(out, &u, sizeof *out);
    } else if (kv->type != GGUF_TYPE_BOOL && gguf_kv_int(kv, &i) == 0) {
        *out = (double)i;
    } else {
        return -1;
    }
    return 0;
}

int gguf_kv_bool(const gguf_kv *kv, int *out)
{
    if (kv->type != GGUF_TYPE_BOOL)
        return -1;
    *out = kv->value[0] != 0;
    return 0;
}

int gguf_kv_string(const gguf_kv *kv, gguf_str *out)
{
    if (kv->type != GGUF_TYPE_STRING)
        return -1;
    out->len = (size_t)le(kv->value, 8); /* validated when the file was opened */
    out->s = (const char *)kv->value + 8;
    return 0;
}

int gguf_kv_strings(const gguf_kv *kv, gguf_str *out)
{
    if (kv->type != GGUF_TYPE_ARRAY || kv->elem_type != GGUF_TYPE_STRING)
        return -1;
    const uint8_t *p = kv->value;
    for (uint64_t i = 0; i < kv->n; i++) {
        out[i].len = (size_t)le(p, 8);
        out[i].s = (const char *)p + 8;
        p += 8 + out[i].len;
    }
    return 0;
}

int gguf_kv_ints(const gguf_kv *kv, int64_t *out)
{
    if (kv->type != GGUF_TYPE_ARRAY)
        return -1;
    size_t sz = scalar_size(kv->elem_type);
    if (!sz || kv->elem_type == GGUF_TYPE_FLOAT32 || kv->elem_type == GGUF_TYPE_FLOAT64)
        return -1;
    for (uint64_t i = 0; i < kv->n; i++)
        if (int_at(kv->elem_type, kv->value + i * sz, &out[i]) != 0)
            return -1;
    return 0;
}
