/* weights_file.c: a model's tensors as one safetensors file (see
 * weights_file.h). */
#include "weights/weights_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/support/safetensors_write.h"

/* A header longer than this is refused before it is read (the reference
 * implementation's limit): a garbled length must not become a huge malloc. */
#define MAX_HEADER ((uint64_t)100 * 1000 * 1000)
#define MAX_FILE_DIMS 8

static const char *dtype_name(uint32_t dtype)
{
    switch (dtype) {
    case TERN_DTYPE_F32: return "F32";
    case TERN_DTYPE_BF16: return "BF16";
    case TERN_DTYPE_F16: return "F16";
    default: return NULL;
    }
}

static size_t dtype_size(uint32_t dtype) { return dtype == TERN_DTYPE_F32 ? 4 : 2; }

/* "[258, 64]" */
static void shape_text(char *buf, size_t cap, const int64_t *shape, size_t ndim)
{
    size_t len = 0;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < ndim && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

/* The model's own tensor must be one the format can describe: a known
 * dtype, at most 4 dims, and exactly as many bytes as its shape says. */
static int check_model_tensor(const tern_tensor *t, size_t i)
{
    const char *name = t->name ? t->name : "";
    if (!*name || !strcmp(name, "__metadata__"))
        return tern_errorf(TERN_EINVAL, "the model's tensor %zu has the name '%s', which a "
                           "safetensors file cannot hold", i, name);
    if (!dtype_name(t->dtype))
        return tern_errorf(TERN_EINVAL, "the model's tensor '%s' has dtype %u (known: 1 f32, "
                           "2 bf16, 3 f16)", name, t->dtype);
    if (t->ndim > 4)
        return tern_errorf(TERN_EINVAL, "the model's tensor '%s' has %u dims (at most 4)", name,
                           t->ndim);
    size_t numel = 1;
    for (uint32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0 || __builtin_mul_overflow(numel, (size_t)t->shape[d], &numel))
            return tern_errorf(TERN_EINVAL, "the model's tensor '%s' has a bad shape", name);
    size_t want;
    if (__builtin_mul_overflow(numel, dtype_size(t->dtype), &want) || want != t->bytes) {
        char s[160];
        shape_text(s, sizeof s, t->shape, t->ndim);
        return tern_errorf(TERN_EINVAL, "the model's tensor '%s' is %zu bytes, but shape %s of "
                           "%s needs %zu", name, t->bytes, s, dtype_name(t->dtype), numel *
                           dtype_size(t->dtype));
    }
    if (t->bytes && !t->data)
        return tern_errorf(TERN_EINVAL, "the model's tensor '%s' has no data", name);
    return TERN_OK;
}

/* 0, -1 with errno, or 1 when the file ends first. */
static int pread_all(int fd, void *p, size_t n, uint64_t off)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = pread(fd, c, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            return 1;
        c += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int tern_weights_file_write(int fd, const char *path, const tern_tensor *t, size_t n,
                            int64_t version)
{
    tern_safetensors_tensor *st = calloc(n ? n : 1, sizeof *st);
    if (!st)
        return tern_errorf(TERN_ENOMEM, "%s: out of memory building the header", path);
    int rc = TERN_OK;
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        rc = check_model_tensor(&t[i], i);
        st[i] = (tern_safetensors_tensor){.name = t[i].name, .dtype = dtype_name(t[i].dtype),
                                          .ndim = (int)t[i].ndim, .shape = t[i].shape,
                                          .data = t[i].data, .bytes = t[i].bytes};
    }
    char vtext[32], err[512];
    snprintf(vtext, sizeof vtext, "%" PRId64, version);
    const tern_safetensors_meta meta[] = {{"format", "pt"}, {"tern_weight_version", vtext}};
    if (rc == TERN_OK &&
        tern_safetensors_write_fd(fd, path, st, n, meta, 2, err, sizeof err) != 0)
        rc = errno == EEXIST ? tern_errorf(TERN_EINVAL, "the model has two tensors named the "
                                           "same: %s", err)
             : errno == ENOMEM ? tern_errorf(TERN_ENOMEM, "%s", err)
             : errno == EINVAL ? tern_errorf(TERN_EINVAL, "%s", err)
                               : tern_errorf(TERN_EIO, "%s", err);
    free(st);
    return rc;
}

/* A non-negative JSON integer into *out. */
static int get_size(const json_t *j, uint64_t *out)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(j);
    return 0;
}

/* Check the file's entry for model tensor t: dtype, shape, offsets inside
 * the data section of data_size bytes. *begin: where its bytes start. */
static int check_entry(const char *path, const json_t *e, const tern_tensor *t,
                       uint64_t data_size, uint64_t *begin)
{
    const char *name = t->name;
    if (!json_is_object(e))
        return tern_errorf(TERN_EINVAL, "%s: the header entry of tensor '%s' is not an object",
                           path, name);
    const char *dt = json_string_value(json_object_get(e, "dtype"));
    if (!dt)
        return tern_errorf(TERN_EINVAL, "%s: tensor '%s' has no \"dtype\" string", path, name);
    if (strcmp(dt, dtype_name(t->dtype)))
        return tern_errorf(TERN_EINVAL, "%s: tensor '%s' is %s, the model has %s", path, name,
                           dt, dtype_name(t->dtype));
    const json_t *js = json_object_get(e, "shape");
    if (!json_is_array(js) || json_array_size(js) > MAX_FILE_DIMS)
        return tern_errorf(TERN_EINVAL, "%s: tensor '%s' has no \"shape\" array (of at most %d "
                           "sizes)", path, name, MAX_FILE_DIMS);
    int64_t shape[MAX_FILE_DIMS];
    size_t ndim = json_array_size(js);
    for (size_t d = 0; d < ndim; d++) {
        uint64_t s;
        if (get_size(json_array_get(js, d), &s) || s > INT64_MAX)
            return tern_errorf(TERN_EINVAL, "%s: tensor '%s' has a shape entry that is not a "
                               "size", path, name);
        shape[d] = (int64_t)s;
    }
    int same = ndim == t->ndim;
    for (size_t d = 0; same && d < ndim; d++)
        same = shape[d] == t->shape[d];
    if (!same) {
        char fs[200], ms[200];
        shape_text(fs, sizeof fs, shape, ndim);
        shape_text(ms, sizeof ms, t->shape, t->ndim);
        return tern_errorf(TERN_EINVAL, "%s: tensor '%s' has shape %s, the model has %s", path,
                           name, fs, ms);
    }
    const json_t *jo = json_object_get(e, "data_offsets");
    uint64_t b, end;
    if (!json_is_array(jo) || json_array_size(jo) != 2 || get_size(json_array_get(jo, 0), &b) ||
        get_size(json_array_get(jo, 1), &end) || b > end)
        return tern_errorf(TERN_EINVAL, "%s: tensor '%s' has no valid \"data_offsets\" "
                           "[begin, end]", path, name);
    if (end > data_size)
        return tern_errorf(TERN_EINVAL, "%s: tensor '%s' ends at data byte %" PRIu64 ", past the "
                           "end of the file's %" PRIu64 " data bytes (truncated?)", path, name,
                           end, data_size);
    if (end - b != t->bytes)
        return tern_errorf(TERN_EINVAL, "%s: tensor '%s' has %" PRIu64 " bytes of data, its "
                           "shape needs %zu", path, name, end - b, t->bytes);
    *begin = b;
    return TERN_OK;
}

static int model_has(const tern_tensor *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name))
            return 1;
    return 0;
}

/* Check the header (root) against the model; begins[i]: where tensor i's
 * bytes start in the data section. */
static int check_header(const char *path, const json_t *root, const tern_tensor *t, size_t n,
                        int64_t version, uint64_t data_size, uint64_t *begins)
{
    if (!json_is_object(root))
        return tern_errorf(TERN_EINVAL, "%s: the header is not a JSON object", path);
    const json_t *meta = json_object_get(root, "__metadata__");
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = check_model_tensor(&t[i], i);
        if (rc != TERN_OK)
            return rc;
        const json_t *e = json_object_get(root, t[i].name);
        if (!e)
            return tern_errorf(TERN_EINVAL, "%s: has no tensor '%s', which the model has", path,
                               t[i].name);
        if ((rc = check_entry(path, e, &t[i], data_size, &begins[i])) != TERN_OK)
            return rc;
        total += t[i].bytes;
    }
    size_t in_file = json_object_size(root) - (meta ? 1 : 0);
    if (in_file != n) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)root, key, v)
            if (strcmp(key, "__metadata__") && !model_has(t, n, key))
                return tern_errorf(TERN_EINVAL, "%s: has tensor '%s', which the model does not "
                                   "have", path, key);
        return tern_errorf(TERN_EINVAL, "%s: has %zu tensors, the model %zu", path, in_file, n);
    }
    if (total != data_size)
        return tern_errorf(TERN_EINVAL, "%s: has %" PRIu64 " data bytes, its header describes "
                           "%" PRIu64 " (truncated or padded?)", path, data_size, total);
    /* last, so that a damaged file is called damaged: a whole file renamed
     * or copied under another version's name */
    if (meta && version >= 0) {
        const char *v = json_string_value(json_object_get(meta, "tern_weight_version"));
        char want[32];
        snprintf(want, sizeof want, "%" PRId64, version);
        if (v && strcmp(v, want))
            return tern_errorf(TERN_EINVAL, "%s: holds weight version %s, not %s", path, v,
                               want);
    }
    return TERN_OK;
}

int tern_weights_file_read(const char *path, const tern_tensor *t, size_t n, int64_t version)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tern_errorf(errno == ENOENT ? TERN_ENOTFOUND : TERN_EIO, "%s: cannot open: %s",
                           path, strerror(errno));
    int rc;
    char *header = NULL;
    json_t *root = NULL;
    uint64_t *begins = calloc(n ? n : 1, sizeof *begins);
    struct stat st;
    if (!begins) {
        rc = tern_errorf(TERN_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        rc = tern_errorf(TERN_EIO, "%s: cannot stat: %s", path, strerror(errno));
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    unsigned char lenb[8];
    int r = size < 8 ? 1 : pread_all(fd, lenb, 8, 0);
    if (r != 0) {
        rc = r < 0 ? tern_errorf(TERN_EIO, "%s: cannot read: %s", path, strerror(errno))
                   : tern_errorf(TERN_EINVAL, "%s: is %" PRIu64 " bytes, too short for the "
                                 "8-byte header length of a safetensors file", path, size);
        goto out;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | lenb[i];
    if (hlen > MAX_HEADER || hlen > size - 8) {
        rc = tern_errorf(TERN_EINVAL, "%s: bytes 0..8 give a header length of %" PRIu64 " bytes, "
                         "but the file is %" PRIu64 " bytes (at most %" PRIu64 " allowed): not a "
                         "safetensors file, or truncated", path, hlen, size, MAX_HEADER);
        goto out;
    }
    header = malloc(hlen ? hlen : 1);
    if (!header) {
        rc = tern_errorf(TERN_ENOMEM, "%s: out of memory reading the header", path);
        goto out;
    }
    if ((r = pread_all(fd, header, hlen, 8)) != 0) {
        rc = tern_errorf(TERN_EIO, "%s: cannot read the header: %s", path,
                         r < 0 ? strerror(errno) : "the file ended (changed while read?)");
        goto out;
    }
    json_error_t jerr;
    root = json_loadb(header, hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        rc = tern_errorf(TERN_EINVAL, "%s: the header (bytes 8..%" PRIu64 ") is not valid JSON: "
                         "%s", path, 8 + hlen, jerr.text);
        goto out;
    }
    rc = check_header(path, root, t, n, version, size - 8 - hlen, begins);
    if (rc != TERN_OK)
        goto out;
    /* only now, with everything checked, into the model */
    for (size_t i = 0; i < n; i++)
        if ((r = pread_all(fd, t[i].data, t[i].bytes, 8 + hlen + begins[i])) != 0) {
            rc = tern_errorf(TERN_EIO, "%s: cannot read tensor '%s': %s", path, t[i].name,
                             r < 0 ? strerror(errno) : "the file ended (changed while read?)");
            goto out;
        }
out:
    json_decref(root);
    free(header);
    free(begins);
    close(fd);
    return rc;
}
