/* registry.h: the plugin search path and every plugin file found on it.
 *
 * Search order (docs/architecture.md §3): the config's plugin_path (relative entries are
 * relative to the config file's directory), then TERN_PLUGIN_PATH
 * (colon-separated, read with secure_getenv), then the per-user directory
 * ($XDG_DATA_HOME/tern/plugins/abi-N, default ~/.local/share/...), then
 * tern/abi-N beside the libtern in use (the build tree's lib/ when run from a
 * build tree), then the installed plugin directory. Every *.so in each directory is loaded and
 * checked, in name order; the first plugin of a name wins and later ones are
 * refused as duplicates. */
#ifndef TERN_REGISTRY_H
#define TERN_REGISTRY_H

#include "base/export.h"

#include <stddef.h>

#include "host/loader.h"

typedef struct tern_registry_entry {
    char *path;
    char *name;          /* NULL when refused before the descriptor was read */
    uint32_t kind;       /* 0 when unknown */
    tern_plugin *plugin; /* NULL when refused */
    char *refusal;       /* one line, or NULL when accepted */
} tern_registry_entry;

typedef struct tern_registry {
    char **dirs; /* the search path, in order, as searched */
    size_t n_dirs;
    tern_registry_entry *entries;
    size_t n, cap;
} tern_registry;

/* Build the search path: `first` (n_first dirs, e.g. a config's plugin_path,
 * already absolute or relative to the working directory) before the standard
 * places. TERN_OK or TERN_ENOMEM. */
int tern_registry_init(tern_registry *r, const char *const *first, size_t n_first);
/* Load and check every *.so on the search path. Refusals are recorded in the
 * entries, not returned; fails only for lack of memory. */
int tern_registry_scan(tern_registry *r, const tern_host *host);
void tern_registry_free(tern_registry *r);

/* The accepted plugin `name` of `kind` for the config slot `slot` ("buffer").
 * On failure returns TERN_ENOTFOUND / TERN_EINVAL with the message: not found
 * (with the nearest name), refused (with the refusal), or of another kind. */
int tern_registry_resolve(const tern_registry *r, const char *name, uint32_t kind,
                          const char *slot, const tern_registry_entry **out);

/* The next refused entry after `prev` (NULL: the first) that comes before
 * `e` on the search path and is the same plugin: the same name, or, for a
 * file refused before its name could be read (no entry point, a missing
 * library), the same file name. Such a copy is most likely the one the user
 * meant (a fresh build in --plugin-dir) and lost to `e`, an older copy later
 * on the path: the caller says so whenever it uses `e`. NULL when none is left. */
const tern_registry_entry *tern_registry_next_shadow(const tern_registry *r,
                                                     const tern_registry_entry *e,
                                                     const tern_registry_entry *prev);

/* The per-user plugin directory, or NULL when neither XDG_DATA_HOME nor HOME
 * is an absolute path. */
const char *tern_registry_user_dir(char *buf, size_t n);
/* The directory beside the libtern in use ("<libdir>/tern/abi-N"), or NULL. */
TERN_INTERNAL const char *tern_registry_builtin_dir(char *buf, size_t n);

#endif
