/*
 * gguf_file.h: reading the GGUF container (llama.cpp's model file), versions
 * 2 and 3, little-endian:
 *
 *   "GGUF"  u32 version  u64 n_tensors  u64 n_kv
 *   n_kv    key-value pairs: string key, u32 value type, value
 *   n_tensors tensor infos: string name, u32 n_dims, u64 ne[n_dims],
 *           u32 ggml type, u64 offset (from the data section's start)
 *   padding to general.alignment (default 32), then the data section
 *
 * A string is a u64 byte count and the bytes (no NUL). A value is one of
 * GGUF_TYPE_*; an array is a u32 element type, a u64 count and the elements
 * (arrays of arrays are refused, as llama.cpp refuses them). ne[0] is the
 * fastest-varying dimension: a matrix of ne = {cols, rows} is stored row by
 * row, so it is the [rows, cols] tensor of PyTorch's naming.
 *
 * Everything is validated before any of it is used (a model file may be
 * truncated or come from anywhere): counts against the bytes left, each
 * string and array inside the file, keys and tensor names unique, tensor
 * offsets aligned and every tensor of a known type inside the data section.
 * Each refusal says what is wrong and where (the key or tensor, and the byte
 * offset).
 */
#ifndef TERN_GGUF_FILE_H
#define TERN_GGUF_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Value types of the metadata. */
typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_NAME_MAX 256 /* longest tensor name or key read (bytes, with the NUL) */

/* One metadata pair. The value stays in the file image. */
typedef struct gguf_kv {
    char key[GGUF_NAME_MAX];
    gguf_type type;
    gguf_type elem_type;  /* arrays: the elements' type */
    uint64_t n;           /* arrays: the element count; 1 otherwise */
    const uint8_t *value; /* the value's bytes in the image (for an array: its first element) */
    size_t offset;        /* where the value starts in the file, for messages */
} gguf_kv;

/* A borrowed string: bytes in the file image, not NUL-terminated. */
typedef struct gguf_str {
    const char *s;
    size_t len;
} gguf_str;

/* One tensor of the table. */
typedef struct gguf_tensor {
    char name[GGUF_NAME_MAX];
    uint32_t n_dims;          /* 1 .. GGUF_MAX_DIMS */
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0] fastest; 1 past n_dims */
    uint32_t type;            /* ggml type (gguf_dequant.h) */
    size_t numel;             /* product of ne */
    size_t nbytes;            /* bytes of data: 0 for a type this reader does not know */
    const uint8_t *data;      /* in the image: NULL for a type this reader does not know */
    uint64_t offset;          /* from the start of the data section */
} gguf_tensor;

typedef struct gguf_file {
    uint32_t version;         /* 2 or 3 */
    gguf_kv *kv;
    size_t n_kv;
    gguf_tensor *tensors;     /* in table order */
    size_t n_tensors;
    size_t alignment;         /* general.alignment, or 32 */
    size_t data_start;        /* the data section's offset in the file */
    const uint8_t *base;      /* the whole file image */
    size_t size;
    int mapped;               /* 1: base is our mmap, unmapped by gguf_close */
} gguf_file;

/* Whether the first bytes of a file (n of them) are GGUF's magic. */
int gguf_is_gguf(const void *head, size_t n);

/* Open and map `path` read-only and validate it. 0, or -1 with a message in
 * err naming the file (f is then closed). */
int gguf_open(const char *path, gguf_file *f, char *err, size_t errn);
/* Validate an in-memory image; `name` is used in messages. The kv values and
 * tensors point into `data`, which must outlive f. */
int gguf_open_buffer(const void *data, size_t size, const char *name, gguf_file *f, char *err,
                     size_t errn);
/* Unmap and free; f is zeroed. Safe on a zeroed or closed gguf_file. */
void gguf_close(gguf_file *f);

/* The pair of `key`, or NULL. */
const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);
/* The tensor called `name`, or NULL. */
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);
/* The name of a value type ("uint32", "array", ...). */
const char *gguf_type_name(gguf_type t);

/* Scalar reads. Each returns 0, or -1 when the value's type does not fit:
 * gguf_kv_int accepts any integer type (and bool) whose value fits int64;
 * gguf_kv_real any integer or float type; gguf_kv_string a string;
 * gguf_kv_bool a bool. */
int gguf_kv_int(const gguf_kv *kv, int64_t *out);
int gguf_kv_real(const gguf_kv *kv, double *out);
int gguf_kv_bool(const gguf_kv *kv, int *out);
int gguf_kv_string(const gguf_kv *kv, gguf_str *out);

/* Array reads: the n elements of an array pair into out[0..n). Strings
 * (elem_type STRING) are borrowed from the image; integers of any integer
 * element type as int64. 0, or -1 when the pair is not such an array. */
int gguf_kv_strings(const gguf_kv *kv, gguf_str *out);
int gguf_kv_ints(const gguf_kv *kv, int64_t *out);

#endif
