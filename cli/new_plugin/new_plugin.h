/* new_plugin.h: `tern new-plugin` (tern_cmd_new_plugin() in commands.h)
 * and the project templates it writes. The templates are the files under
 * new_plugin/templates/<kind>/, embedded into the tern program at build time by
 * new_plugin/embed_templates.cmake (the generated templates.c defines the table). */
#ifndef TERN_NEW_PLUGIN_H
#define TERN_NEW_PLUGIN_H

#include <stddef.h>

/* One embedded template file. */
typedef struct tern_template_file {
    const char *path;          /* "<kind>/<file>.in", e.g. "sync/plugin.c.in" */
    const unsigned char *data; /* its bytes, followed by a NUL */
    size_t len;                /* bytes, without the NUL */
} tern_template_file;

extern const tern_template_file tern_template_files[];
extern const size_t tern_n_template_files;

/* The embedded template `path` ("sync/plugin.c.in"), or NULL. */
const tern_template_file *tern_template_find(const char *path);

/* The template's text with the placeholders @NAME@, @KIND@ and
 * @PLUGIN_SUBDIR@ ("abi-1") replaced; any other '@' is copied as it is.
 * Returns a malloc'd NUL-terminated string (its length in *len), or NULL when
 * out of memory. */
char *tern_template_expand(const tern_template_file *t, const char *kind, const char *name,
                           size_t *len);

/* 1 if `name` can name a generated plugin: [a-z][a-z0-9_]*, 1-64 characters,
 * and not a target name CMake reserves ("test", "install", ...). */
int tern_new_plugin_name_ok(const char *name);

#endif
