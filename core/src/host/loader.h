/* loader.h: opening one plugin file and checking what it declares
 * (docs/architecture.md §3). Each refusal is one line: the file, the reason, the fix. */
#ifndef TERN_LOADER_H
#define TERN_LOADER_H

#include "tern/plugin.h"

typedef struct tern_plugin {
    char *path;                          /* the file, as found on the search path */
    void *handle;                        /* dlopen handle */
    const tern_plugin_descriptor *desc;  /* checked descriptor */
} tern_plugin;

/* Load `path` and check its descriptor against this core. On success *out is
 * a new tern_plugin. On refusal returns a negative status with
 * tern_error_message() = "PATH: refused: REASON; FIX", and, when the
 * descriptor could be read, *name_out = a copy of the plugin's name and
 * *kind_out its kind (caller frees the name); else NULL and 0. */
int tern_plugin_open(const char *path, const tern_host *host, tern_plugin **out,
                     char **name_out, uint32_t *kind_out);
void tern_plugin_close(tern_plugin *p);

/* Smallest descriptor and ops-table sizes this core accepts (ABI 1.0's). */
size_t tern_ops_min_size(uint32_t kind);

#endif
