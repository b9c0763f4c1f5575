/*
 * safetensors.h: reading and writing the safetensors format, the way
 * Hugging Face checkpoints are stored:
 *
 *   bytes 0..8      N, the header length, unsigned 64-bit little-endian
 *   bytes 8..8+N    UTF-8 JSON object: {"<name>": {"dtype": "F32",
 *                   "shape": [2, 3], "data_offsets": [begin, end]}, ...,
 *                   optionally "__metadata__": {"<key>": "<value>", ...}}
 *   bytes 8+N..     the data section; data_offsets are relative to its start
 *
 * Everything in a file is validated before any of it is used (a checkpoint
 * may be truncated or come from anywhere); each refusal says what is wrong
 * and where. Tensors of dtypes tern does not compute in (I64, U8, ...) are
 * listed as ST_OTHER and refused only when converted, since Hugging Face
 * files sometimes carry such extras.
 */
#ifndef TERN_SAFETENSORS_H
#define TERN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

enum { ST_F32 = 0, ST_BF16 = 1, ST_F16 = 2, ST_OTHER = 3 };

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000) /* bytes of JSON header */

typedef struct st_tensor {
    char name[256];
    int dtype;            /* ST_F32, ST_BF16, ST_F16 or ST_OTHER */
    char dtype_name[16];  /* as in the file: "F32", "I64", ... */
    int ndim;             /* 0 (a scalar) .. ST_MAX_DIMS */
    int64_t shape[ST_MAX_DIMS];
    size_t numel;         /* product of shape (1 for a scalar) */
    const void *data;     /* inside the mapping; may be unaligned */
    size_t nbytes;
} st_tensor;

typedef struct st_file {
    st_tensor *tensors;   /* in header order */
    size_t n_tensors;
    char **meta_keys;     /* the __metadata__ pairs, in header order */
    char **meta_values;
    size_t n_meta;
    const void *base;     /* the whole file image */
    size_t size;
    size_t data_start;    /* 8 + N: where the data section begins */
    int mapped;           /* 1: base is our mmap, unmapped by st_close */
} st_file;

/* Open and map `path` read-only and validate it. 0, or -1 with a message in
 * err (f is then closed: st_close is harmless but not needed). */
int st_open(const char *path, st_file *f, char *err, size_t errn);
/* Validate an in-memory image of a file; `name` is used in messages. The
 * tensors point into `data`, which must outlive f. */
int st_open_buffer(const void *data, size_t size, const char *name, st_file *f, char *err,
                   size_t errn);
/* The tensor called `name`, or NULL. */
const st_tensor *st_find(const st_file *f, const char *name);
/* The __metadata__ value of `key`, or NULL. */
const char *st_metadata_get(const st_file *f, const char *key);
/* Convert t's data (F32, BF16 or F16) to numel floats in dst; numel must be
 * t->numel. 0, or -1 with a message. */
int st_to_f32(const st_tensor *t, float *dst, size_t numel, char *err, size_t errn);
/* IEEE 754 binary16 to binary32, exactly (every half is a float): the
 * safetensors F16 dtype's and, shared, the GGUF reader's. */
float st_half_to_float(uint16_t h);
/* Unmap and free; f is zeroed. Safe on a zeroed or already closed st_file. */
void st_close(st_file *f);

typedef struct st_write_item {
    const char *name;
    int ndim;              /* 0 .. ST_MAX_DIMS */
    const int64_t *shape;  /* ndim sizes */
    const float *data;     /* product(shape) floats */
} st_write_item;

/* Write n F32 tensors, in the given order, to `path` atomically (PATH.tmp,
 * fsync, rename, fsync of the directory; the temp file is removed on any
 * failure). metadata_json: the text of a JSON object of strings stored as
 * __metadata__ (e.g. "{\"format\": \"pt\"}"), or NULL. 0, or -1 with a
 * message. */
int st_write_f32(const char *path, const st_write_item *items, size_t n,
                 const char *metadata_json, char *err, size_t errn);

#endif
