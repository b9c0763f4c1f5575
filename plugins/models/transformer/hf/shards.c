/* shards.c: a model directory's single or sharded safetensors (shards.h). */
#include "hf/shards.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hf/hf_config.h"
#include "tern/support/regular_file.h"

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void weights_close(weight_files *w)
{
    for (size_t i = 0; i < w->n; i++) {
        st_close(&w->files[i]);
        free(w->paths[i]);
    }
    free(w->files);
    free(w->paths);
    json_decref(w->map);
    free(w->where);
    memset(w, 0, sizeof *w);
}

/* Open one file as w's next entry. */
static int add_file(weight_files *w, const char *path, char *err, size_t errn)
{
    if (st_open(path, &w->files[w->n], err, errn) != 0)
        return -1;
    if (!(w->paths[w->n] = strdup(path))) {
        st_close(&w->files[w->n]);
        snprintf(err, errn, "%s: out of memory", path);
        return -1;
    }
    w->n++;
    return 0;
}

/* The index's shards: check the weight_map, then open each distinct shard
 * once (their order: first mention in the map). */
static int open_index(const char *dir, const char *index, weight_files *w, char *err,
                      size_t errn)
{
    char *text, unread[TERN_REGULAR_WHY_MAX];
    size_t len;
    if (tern_regular_read(index, HF_JSON_MAX, &text, &len, unread, sizeof unread) != 0) {
        snprintf(err, errn, "%s: cannot read: %s", index, unread);
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root) {
        snprintf(err, errn, "%s: not a valid JSON file: %s (line %d)", index, jerr.text,
                 jerr.line);
        return -1;
    }
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(root) || !json_is_object(map) || json_object_size(map) == 0) {
        snprintf(err, errn, "%s: must be a JSON object with a non-empty object \"weight_map\" "
                 "(tensor name -> shard file)", index);
        json_decref(root);
        return -1;
    }
    w->map = json_incref(map);
    json_decref(root);
    size_t n = json_object_size(map);
    w->files = calloc(n, sizeof *w->files);
    w->paths = calloc(n, sizeof *w->paths);
    if (!w->files || !w->paths) {
        snprintf(err, errn, "%s: out of memory", index);
        return -1;
    }
    const char *name;
    json_t *v;
    json_object_foreach(map, name, v) {
        const char *shard = json_string_value(v);
        /* a plain file name in DIR: nothing that leaves the directory */
        if (!shard || !*shard || strchr(shard, '/') || strcmp(shard, "..") == 0) {
            snprintf(err, errn, "%s: weight_map[\"%.100s\"] must be the file name of a shard in "
                     "the same directory", index, name);
            return -1;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, shard);
        int seen = 0;
        for (size_t i = 0; i < w->n && !seen; i++)
            seen = strcmp(w->paths[i], path) == 0;
        if (seen)
            continue;
        char why[4600];
        if (add_file(w, path, why, sizeof why) != 0) {
            snprintf(err, errn, "%s: shard \"%.100s\" (of tensor '%.100s'): %s", index, shard,
                     name, why);
            return -1;
        }
    }
    return 0;
}

int weights_open(const char *dir, weight_files *w, char *err, size_t errn)
{
    memset(w, 0, sizeof *w);
    char single[4200], index[4200];
    snprintf(single, sizeof single, "%s/model.safetensors", dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    int rc;
    if (exists(single) || !exists(index)) {
        /* the single file; when neither exists, its "cannot open" is the message */
        w->files = calloc(1, sizeof *w->files);
        w->paths = calloc(1, sizeof *w->paths);
        w->where = strdup(single);
        if (!w->files || !w->paths || !w->where) {
            snprintf(err, errn, "%s: out of memory", single);
            rc = -1;
        } else {
            rc = add_file(w, single, err, errn);
            if (rc != 0 && !exists(single)) {
                snprintf(err, errn, "%s: no model.safetensors and no model.safetensors.index.json"
                         " (sharded weights) in this directory", dir);
            }
        }
    } else {
        w->where = strdup(index);
        rc = w->where ? open_index(dir, index, w, err, errn) : -1;
        if (!w->where)
            snprintf(err, errn, "%s: out of memory", index);
    }
    if (rc != 0)
        weights_close(w);
    return rc;
}

int weights_find(const weight_files *w, const char *name, const st_tensor **t,
                 const char **path, char *err, size_t errn)
{
    if (!w->map) {
        *t = st_find(&w->files[0], name);
        *path = w->paths[0];
        return *t ? 1 : 0;
    }
    const char *shard = json_string_value(json_object_get(w->map, name));
    if (!shard)
        return 0;
    char want[4200];
    const char *slash = strrchr(w->paths[0], '/');
    snprintf(want, sizeof want, "%.*s/%s", (int)(slash - w->paths[0]), w->paths[0], shard);
    for (size_t i = 0; i < w->n; i++) {
        if (strcmp(w->paths[i], want) != 0)
            continue;
        *path = w->paths[i];
        if ((*t = st_find(&w->files[i], name)))
            return 1;
        snprintf(err, errn, "%s: the weight_map puts tensor '%s' in %s, which does not hold it",
                 w->where, name, w->paths[i]);
        return -1;
    }
    snprintf(err, errn, "%s: shard %s of tensor '%s' is not open", w->where, shard, name);
    return -1; /* not reached: every shard of the map was opened */
}
