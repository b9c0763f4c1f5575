/* safetensors.c: validating reader of the safetensors format, and the
 * atomic F32 writer over tern/support/safetensors_write.h (see
 * safetensors.h). */
#include "hf/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fail.h"
#include "hf/hf_config.h"
#include "tern/support/regular_file.h"
#include "tern/support/safetensors_write.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ST_LITTLE_ENDIAN 1
#else
#define ST_LITTLE_ENDIAN 0
#endif

/* Every dtype of the safetensors format, with its size in bits, so that a
 * file holding extras we do not compute in (position ids as I64, ...) still
 * opens and has its byte counts checked. */
static const struct {
    const char *name;
    int bits;
    int dtype;
} dtypes[] = {
    {"F32", 32, ST_F32},      {"BF16", 16, ST_BF16},    {"F16", 16, ST_F16},
    {"F64", 64, ST_OTHER},    {"C64", 64, ST_OTHER},    {"I64", 64, ST_OTHER},
    {"U64", 64, ST_OTHER},    {"I32", 32, ST_OTHER},    {"U32", 32, ST_OTHER},
    {"I16", 16, ST_OTHER},    {"U16", 16, ST_OTHER},    {"I8", 8, ST_OTHER},
    {"U8", 8, ST_OTHER},      {"BOOL", 8, ST_OTHER},    {"F8_E5M2", 8, ST_OTHER},
    {"F8_E4M3", 8, ST_OTHER}, {"F8_E8M0", 8, ST_OTHER}, {"F6_E2M3", 6, ST_OTHER},
    {"F6_E3M2", 6, ST_OTHER}, {"F4", 4, ST_OTHER},
};

/* "[2, 3]" */
static const char *shape_text(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t at = 0;
    buf[0] = '\0';
    at += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (at < n)
        snprintf(buf + at, n - at, "]");
    return buf;
}

/* ---- reading ------------------------------------------------------------ */

static int read_metadata(const char *name, json_t *meta, st_file *f, char *err, size_t errn)
{
    if (!json_is_object(meta))
        return tf_fail(err, errn, "%s: \"__metadata__\" must be an object of strings, found %s", name,
                    hf_json_kind(meta));
    size_t n = json_object_size(meta);
    f->meta_keys = calloc(n ? n : 1, sizeof *f->meta_keys);
    f->meta_values = calloc(n ? n : 1, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values)
        return tf_fail(err, errn, "%s: out of memory reading __metadata__", name);
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        if (!json_is_string(v))
            return tf_fail(err, errn,
                        "%s: \"__metadata__\" value of \"%.100s\" must be a string, found %s", name,
                        key, hf_json_kind(v));
        f->meta_keys[f->n_meta] = strdup(key);
        f->meta_values[f->n_meta] = strdup(json_string_value(v));
        f->n_meta++;
        if (!f->meta_keys[f->n_meta - 1] || !f->meta_values[f->n_meta - 1])
            return tf_fail(err, errn, "%s: out of memory reading __metadata__", name);
    }
    return 0;
}

/* An entry's integer array: shape or data_offsets. */
static int int_array(const char *name, const char *tname, const char *key, json_t *entry,
                     json_t **out, char *err, size_t errn)
{
    json_t *a = json_object_get(entry, key);
    if (!a)
        return tf_fail(err, errn, "%s: tensor %s: missing \"%s\"", name, tname, key);
    if (!json_is_array(a))
        return tf_fail(err, errn, "%s: tensor %s: \"%s\" must be an array of integers, found %s",
                    name, tname, key, hf_json_kind(a));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return tf_fail(err, errn, "%s: tensor %s: %s[%zu] must be an integer >= 0, found %s",
                        name, tname, key, i,
                        json_is_integer(x) ? "a negative integer" : hf_json_kind(x));
    }
    *out = a;
    return 0;
}

/* Fill t from one header entry and check its size and place in the data
 * section (data_size bytes starting at base). */
static int read_tensor(const char *name, const char *tname, json_t *entry, const uint8_t *data,
                       size_t data_size, st_tensor *t, char *err, size_t errn)
{
    if (strlen(tname) >= sizeof t->name)
        return tf_fail(err, errn, "%s: tensor name \"%.60s...\" is %zu bytes long; tern accepts up "
                    "to %zu", name, tname, strlen(tname), sizeof t->name - 1);
    snprintf(t->name, sizeof t->name, "%s", tname);
    if (!json_is_object(entry))
        return tf_fail(err, errn, "%s: tensor %s: the entry must be an object with dtype, shape and "
                    "data_offsets, found %s", name, tname, hf_json_kind(entry));

    json_t *dt = json_object_get(entry, "dtype");
    if (!dt)
        return tf_fail(err, errn, "%s: tensor %s: missing \"dtype\"", name, tname);
    if (!json_is_string(dt))
        return tf_fail(err, errn, "%s: tensor %s: \"dtype\" must be a string, found %s", name, tname,
                    hf_json_kind(dt));
    const char *dname = json_string_value(dt);
    int bits = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dname, dtypes[i].name) == 0) {
            bits = dtypes[i].bits;
            t->dtype = dtypes[i].dtype;
        }
    if (!bits)
        return tf_fail(err, errn, "%s: tensor %s: unknown dtype \"%.40s\"; tern reads F32, BF16 and "
                    "F16 (and skips the other safetensors dtypes: F64, I64, U8, BOOL, ...)",
                    name, tname, dname);
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dname);

    json_t *shape, *offs;
    if (int_array(name, tname, "shape", entry, &shape, err, errn) != 0 ||
        int_array(name, tname, "data_offsets", entry, &offs, err, errn) != 0)
        return -1;
    if (json_array_size(shape) > ST_MAX_DIMS)
        return tf_fail(err, errn, "%s: tensor %s: shape has %zu dimensions; tern accepts up to %d",
                    name, tname, json_array_size(shape), ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    size_t numel = 1;
    int overflow = 0;
    for (int i = 0; i < t->ndim; i++) {
        t->shape[i] = json_integer_value(json_array_get(shape, (size_t)i));
        if ((uint64_t)t->shape[i] > SIZE_MAX ||
            __builtin_mul_overflow(numel, (size_t)t->shape[i], &numel))
            overflow = 1;
    }
    char sbuf[200];
    size_t bitcount;
    if (overflow || __builtin_mul_overflow(numel, (size_t)bits, &bitcount))
        return tf_fail(err, errn, "%s: tensor %s: shape %s has more elements than can exist", name,
                    tname, shape_text(sbuf, sizeof sbuf, t->shape, t->ndim));
    if (bitcount % 8)
        return tf_fail(err, errn, "%s: tensor %s: %zu elements of %s (%d bits) are not a whole "
                    "number of bytes", name, tname, numel, dname, bits);
    t->numel = numel;
    t->nbytes = bitcount / 8;

    if (json_array_size(offs) != 2)
        return tf_fail(err, errn, "%s: tensor %s: \"data_offsets\" must be [begin, end], found %zu "
                    "numbers", name, tname, json_array_size(offs));
    uint64_t begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
    uint64_t end = (uint64_t)json_integer_value(json_array_get(offs, 1));
    if (end < begin)
        return tf_fail(err, errn, "%s: tensor %s: data_offsets [%llu, %llu] end before they begin",
                    name, tname, (unsigned long long)begin, (unsigned long long)end);
    if (end > data_size)
        return tf_fail(err, errn, "%s: tensor %s: data ends at byte %llu but the file has only %zu "
                    "data bytes (truncated file?)", name, tname, (unsigned long long)end,
                    data_size);
    if (end - begin != t->nbytes)
        return tf_fail(err, errn, "%s: tensor %s: data_offsets [%llu, %llu] hold %llu bytes but "
                    "dtype %s with shape %s needs %zu", name, tname, (unsigned long long)begin,
                    (unsigned long long)end, (unsigned long long)(end - begin), dname,
                    shape_text(sbuf, sizeof sbuf, t->shape, t->ndim), t->nbytes);
    t->data = data + begin;
    return 0;
}

typedef struct span {
    size_t begin, end, index;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Two tensors sharing bytes would alias each other's data: refuse. Holes
 * between tensors are harmless and allowed. */
static int check_overlaps(const char *name, const st_file *f, char *err, size_t errn)
{
    span *s = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *s);
    if (!s)
        return tf_fail(err, errn, "%s: out of memory checking tensor offsets", name);
    const uint8_t *data = (const uint8_t *)f->base + f->data_start;
    size_t n = 0;
    for (size_t i = 0; i < f->n_tensors; i++) {
        const st_tensor *t = &f->tensors[i];
        if (!t->nbytes)
            continue; /* an empty tensor occupies no bytes */
        size_t b = (size_t)((const uint8_t *)t->data - data);
        s[n++] = (span){b, b + t->nbytes, i};
    }
    qsort(s, n, sizeof *s, span_cmp);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (s[i].begin < s[i - 1].end)
            rc = tf_fail(err, errn, "%s: tensors %s (data bytes %zu..%zu) and %s (data bytes "
                      "%zu..%zu) overlap", name, f->tensors[s[i - 1].index].name,
                      s[i - 1].begin, s[i - 1].end, f->tensors[s[i].index].name, s[i].begin,
                      s[i].end);
    free(s);
    return rc;
}

static int parse(const void *image, size_t size, const char *name, st_file *f, char *err,
                 size_t errn)
{
    const uint8_t *b = image;
    if (size < 8)
        return tf_fail(err, errn, "%s: the file is %zu bytes; a safetensors file starts with an "
                    "8-byte header length (empty or not a safetensors file?)", name, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | b[i];
    if (hlen > ST_MAX_HEADER)
        return tf_fail(err, errn, "%s: bytes 0..8 give a header length of %llu bytes, more than the "
                    "%llu tern accepts (not a safetensors file?)", name, (unsigned long long)hlen,
                    (unsigned long long)ST_MAX_HEADER);
    if (hlen > size - 8)
        return tf_fail(err, errn, "%s: bytes 0..8 give a header length of %llu bytes but the file "
                    "has only %zu bytes after them (truncated or not a safetensors file?)", name,
                    (unsigned long long)hlen, size - 8);
    f->base = image;
    f->size = size;
    f->data_start = 8 + (size_t)hlen;

    json_error_t jerr;
    json_t *root = json_loadb((const char *)b + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return tf_fail(err, errn, "%s: the header (bytes 8..%zu) is not valid JSON: %s at file byte "
                    "%lld", name, f->data_start, jerr.text, 8 + (long long)jerr.position);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = tf_fail(err, errn, "%s: the header (bytes 8..%zu) must be a JSON object, found %s",
                  name, f->data_start, hf_json_kind(root));
        goto out;
    }
    json_t *meta = json_object_get(root, "__metadata__");
    size_t count = json_object_size(root) - (meta ? 1 : 0);
    if (meta && (rc = read_metadata(name, meta, f, err, errn)) != 0)
        goto out;
    f->tensors = calloc(count ? count : 1, sizeof *f->tensors);
    if (!f->tensors) {
        rc = tf_fail(err, errn, "%s: out of memory for %zu tensors", name, count);
        goto out;
    }
    const char *key;
    json_t *entry;
    json_object_foreach(root, key, entry) {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        rc = read_tensor(name, key, entry, b + f->data_start, size - f->data_start,
                         &f->tensors[f->n_tensors], err, errn);
        if (rc != 0)
            goto out;
        f->n_tensors++;
    }
    rc = check_overlaps(name, f, err, errn);
out:
    json_decref(root);
    return rc;
}

int st_open_buffer(const void *data, size_t size, const char *name, st_file *f, char *err,
                   size_t errn)
{
    memset(f, 0, sizeof *f);
    if (parse(data, size, name ? name : "<buffer>", f, err, errn) != 0) {
        st_close(f);
        return -1;
    }
    return 0;
}

int st_open(const char *path, st_file *f, char *err, size_t errn)
{
    memset(f, 0, sizeof *f);
    /* a FIFO put where the weights belong must not block the open */
    struct stat st;
    char why[TERN_REGULAR_WHY_MAX];
    int fd = tern_regular_open(path, 0, &st, why, sizeof why);
    if (fd < 0)
        return tf_fail(err, errn, "%s: cannot open: %s%s", path, why,
                       errno == EISDIR || errno == EINVAL ? "; give a safetensors file" : "");
    size_t size = (size_t)st.st_size;
    if (size < 8) {
        close(fd);
        return tf_fail(err, errn, "%s: the file is %zu bytes; a safetensors file starts with an "
                    "8-byte header length (empty or not a safetensors file?)", path, size);
    }
    /* The mapping is private and read-only; a file truncated by someone else
     * while mapped would fault, which no reader of a mapped file can avoid. */
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED)
        return tf_fail(err, errn, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
    if (st_open_buffer(map, size, path, f, err, errn) != 0) {
        munmap(map, size);
        return -1;
    }
    f->mapped = 1;
    return 0;
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

const char *st_metadata_get(const st_file *f, const char *key)
{
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0)
            return f->meta_values[i];
    return NULL;
}

void st_close(st_file *f)
{
    if (f->mapped && f->base)
        munmap((void *)(uintptr_t)f->base, f->size);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->meta_keys);
    free(f->meta_values);
    free(f->tensors);
    memset(f, 0, sizeof *f);
}

/* ---- conversion --------------------------------------------------------- */

static float bits_to_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

float st_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in float */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31) /* inf, or nan keeping its payload */
        return bits_to_float(sign | 0x7f800000u | mant << 13);
    return bits_to_float(sign | (exp + 112) << 23 | mant << 13);
}

int st_to_f32(const st_tensor *t, float *dst, size_t numel, char *err, size_t errn)
{
    if (t->dtype == ST_OTHER)
        return tf_fail(err, errn, "tensor %s has dtype %s; tern reads F32, BF16 and F16", t->name,
                    t->dtype_name);
    if (numel != t->numel) {
        char sbuf[200];
        return tf_fail(err, errn, "tensor %s has %zu elements (shape %s) but %zu were asked for",
                    t->name, t->numel, shape_text(sbuf, sizeof sbuf, t->shape, t->ndim), numel);
    }
    if (numel == 0)
        return 0;
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case ST_F32:
        if (ST_LITTLE_ENDIAN) {
            memcpy(dst, p, numel * 4); /* memcpy: the data may be unaligned */
        } else {
            for (size_t i = 0; i < numel; i++, p += 4)
                dst[i] = bits_to_float((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                                       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        }
        break;
    case ST_BF16:
        for (size_t i = 0; i < numel; i++, p += 2)
            dst[i] = bits_to_float(((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16);
        break;
    default: /* ST_F16 */
        for (size_t i = 0; i < numel; i++, p += 2)
            dst[i] = st_half_to_float((uint16_t)(p[0] | p[1] << 8));
        break;
    }
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

/* metadata_json, a JSON object of strings, as the writer's pairs: *pairs
 * (malloc'd; the caller frees it) point into *meta (the caller decrefs it). */
static int parse_metadata(const char *metadata_json, json_t **meta,
                          tern_safetensors_meta **pairs, size_t *n, char *err, size_t errn)
{
    json_error_t jerr;
    *meta = json_loads(metadata_json, JSON_REJECT_DUPLICATES, &jerr);
    if (!*meta)
        return tf_fail(err, errn, "metadata is not valid JSON: %s at byte %d", jerr.text,
                       jerr.position);
    if (!json_is_object(*meta))
        return tf_fail(err, errn, "metadata must be a JSON object of strings, found %s",
                       hf_json_kind(*meta));
    *n = json_object_size(*meta);
    *pairs = calloc(*n ? *n : 1, sizeof **pairs);
    if (!*pairs)
        return tf_fail(err, errn, "out of memory building the header");
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach(*meta, key, v) {
        if (!json_is_string(v))
            return tf_fail(err, errn, "metadata value of \"%.100s\" must be a string, found %s",
                           key, hf_json_kind(v));
        (*pairs)[i++] = (tern_safetensors_meta){key, json_string_value(v)};
    }
    return 0;
}

int st_write_f32(const char *path, const st_write_item *items, size_t n,
                 const char *metadata_json, char *err, size_t errn)
{
    char msg[512];
    json_t *meta = NULL;
    tern_safetensors_meta *pairs = NULL;
    size_t n_meta = 0;
    if (metadata_json && parse_metadata(metadata_json, &meta, &pairs, &n_meta, msg,
                                        sizeof msg) != 0) {
        json_decref(meta);
        free(pairs);
        return tf_fail(err, errn, "%s: %s", path, msg);
    }
    /* the writer checks names and shapes; bytes is left 0 where the shape
     * is one it refuses */
    tern_safetensors_tensor *t = calloc(n ? n : 1, sizeof *t);
    int rc = t ? 0 : tf_fail(err, errn, "%s: out of memory writing the header", path);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const st_write_item *it = &items[i];
        size_t numel = 1, bytes = 0;
        int ok = it->ndim >= 0 && it->ndim <= ST_MAX_DIMS && (it->ndim == 0 || it->shape);
        for (int d = 0; ok && d < it->ndim; d++)
            ok = it->shape[d] >= 0 && (uint64_t)it->shape[d] <= SIZE_MAX &&
                 !__builtin_mul_overflow(numel, (size_t)it->shape[d], &numel);
        if (ok && __builtin_mul_overflow(numel, sizeof(float), &bytes))
            bytes = SIZE_MAX; /* "too large" */
        t[i] = (tern_safetensors_tensor){.name = it->name, .dtype = "F32", .ndim = it->ndim,
                                         .shape = it->shape, .data = it->data,
                                         .bytes = ok ? bytes : 0};
        if (!ST_LITTLE_ENDIAN && ok && bytes != SIZE_MAX && it->data) {
            /* the format is little-endian: write a byte-swapped copy */
            uint8_t *le = malloc(bytes ? bytes : 1);
            if (!le) {
                rc = tf_fail(err, errn, "%s: out of memory writing tensor %s", path, it->name);
                break;
            }
            for (size_t k = 0; k < numel; k++) {
                uint32_t u;
                memcpy(&u, &it->data[k], 4);
                for (int j = 0; j < 4; j++)
                    le[4 * k + (size_t)j] = (uint8_t)(u >> (8 * j));
            }
            t[i].data = le;
        }
    }
    if (rc == 0)
        rc = tern_safetensors_write(path, t, n, metadata_json ? pairs : NULL, n_meta, err, errn);
    for (size_t i = 0; t && !ST_LITTLE_ENDIAN && i < n; i++)
        if (t[i].data != (const void *)items[i].data)
            free((void *)t[i].data);
    free(t);
    free(pairs);
    json_decref(meta);
    return rc;
}
