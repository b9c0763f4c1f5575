/* shards.h: the weight files of a model directory, as Hugging Face writes
 * them: DIR/model.safetensors, or, when that is absent, the shards listed in
 * DIR/model.safetensors.index.json:
 *
 *   {"metadata": {...}, "weight_map": {"<tensor name>": "<shard file>", ...}}
 *
 * Every shard is opened (mapped) once, up front, so a missing or corrupt
 * shard is reported before any tensor is read. */
#ifndef TERN_SHARDS_H
#define TERN_SHARDS_H

#include <stddef.h>

#include "hf/safetensors.h"

typedef struct weight_files {
    st_file *files;    /* [n] the opened files */
    char **paths;      /* [n] their paths, for messages */
    size_t n;
    void *map;         /* the weight_map (a jansson object), or NULL for one file */
    char *where;       /* what messages name: model.safetensors or the index's path */
} weight_files;

/* Open DIR's weights. 0, or -1 with a message naming the file (a missing
 * shard, a malformed index, neither file present). */
int weights_open(const char *dir, weight_files *w, char *err, size_t errn);
/* Tensor `name`: 1 found (*t, and *path its file), 0 absent (not in the file,
 * or not in the weight_map), -1 the weight_map names a shard that lacks it
 * (message in err). */
int weights_find(const weight_files *w, const char *name, const st_tensor **t,
                 const char **path, char *err, size_t errn);
void weights_close(weight_files *w);

#endif
