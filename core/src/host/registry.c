/* registry.c: plugin search path and scan (see registry.h). */
#include "host/registry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/core_schema.h"
#include "base/errmsg.h"
#include "base/log.h"
#include "config/suggest.h"

#ifndef TERN_PLUGIN_INSTALL_DIR
#define TERN_PLUGIN_INSTALL_DIR "/usr/local/lib/tern/" TERN_PLUGIN_SUBDIR
#endif

static int add_dir(tern_registry *r, const char *dir)
{
    if (!dir || !*dir)
        return TERN_OK;
    /* the same directory twice (e.g. build tree == install dir) is searched once */
    char real[PATH_MAX];
    const char *key = realpath(dir, real) ? real : dir;
    for (size_t i = 0; i < r->n_dirs; i++) {
        char other[PATH_MAX];
        const char *ok = realpath(r->dirs[i], other) ? other : r->dirs[i];
        if (strcmp(ok, key) == 0)
            return TERN_OK;
    }
    char **d = realloc(r->dirs, (r->n_dirs + 1) * sizeof *d);
    if (!d)
        return tern_errorf(TERN_ENOMEM, "out of memory building the plugin search path");
    r->dirs = d;
    if (!(r->dirs[r->n_dirs] = strdup(dir)))
        return tern_errorf(TERN_ENOMEM, "out of memory building the plugin search path");
    r->n_dirs++;
    return TERN_OK;
}

const char *tern_registry_builtin_dir(char *buf, size_t n)
{
    Dl_info info;
    if (!dladdr((void *)&tern_registry_builtin_dir, &info) || !info.dli_fname)
        return NULL;
    /* canonical, so `tern plugins` shows /usr/lib/... rather than bin/../lib/... */
    char lib[PATH_MAX];
    const char *file = realpath(info.dli_fname, lib) ? lib : info.dli_fname;
    const char *slash = strrchr(file, '/');
    if (!slash)
        return NULL;
    int w = snprintf(buf, n, "%.*s/tern/%s", (int)(slash - file), file, TERN_PLUGIN_SUBDIR);
    return (w > 0 && (size_t)w < n) ? buf : NULL;
}

const char *tern_registry_user_dir(char *buf, size_t n)
{
    /* XDG base directories: $XDG_DATA_HOME, else ~/.local/share; only an
     * absolute XDG_DATA_HOME counts (the spec says to ignore a relative one) */
    const char *data = secure_getenv("XDG_DATA_HOME");
    const char *home = secure_getenv("HOME");
    int w;
    if (data && data[0] == '/')
        w = snprintf(buf, n, "%s/tern/plugins/%s", data, TERN_PLUGIN_SUBDIR);
    else if (home && home[0] == '/')
        w = snprintf(buf, n, "%s/.local/share/tern/plugins/%s", home, TERN_PLUGIN_SUBDIR);
    else
        return NULL;
    return (w > 0 && (size_t)w < n) ? buf : NULL;
}

int tern_registry_init(tern_registry *r, const char *const *first, size_t n_first)
{
    memset(r, 0, sizeof *r);
    int rc = TERN_OK;
    for (size_t i = 0; i < n_first && rc == TERN_OK; i++)
        rc = add_dir(r, first[i]);
    const char *env = secure_getenv("TERN_PLUGIN_PATH");
    if (env && rc == TERN_OK) {
        char *copy = strdup(env);
        if (!copy)
            return tern_errorf(TERN_ENOMEM, "out of memory reading TERN_PLUGIN_PATH");
        char *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d && rc == TERN_OK;
             d = strtok_r(NULL, ":", &save))
            rc = add_dir(r, d);
        free(copy);
    }
    char buf[PATH_MAX];
    if (rc == TERN_OK)
        rc = add_dir(r, tern_registry_user_dir(buf, sizeof buf));
    if (rc == TERN_OK)
        rc = add_dir(r, tern_registry_builtin_dir(buf, sizeof buf));
    if (rc == TERN_OK)
        rc = add_dir(r, TERN_PLUGIN_INSTALL_DIR);
    return rc;
}

static int add_entry(tern_registry *r, tern_registry_entry *e)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        tern_registry_entry *ne = realloc(r->entries, cap * sizeof *ne);
        if (!ne)
            return tern_errorf(TERN_ENOMEM, "out of memory scanning plugins");
        r->entries = ne;
        r->cap = cap;
    }
    r->entries[r->n++] = *e;
    return TERN_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The accepted plugin of this name and kind (0: of any kind). A name is
 * unique within its kind: the `python` reward and the `python` environment
 * are two plugins. */
static const tern_registry_entry *find_accepted(const tern_registry *r, const char *name,
                                                uint32_t kind)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->entries[i].plugin && strcmp(r->entries[i].name, name) == 0 &&
            (!kind || r->entries[i].kind == kind))
            return &r->entries[i];
    return NULL;
}

static int scan_file(tern_registry *r, const char *path, const tern_host *host)
{
    tern_registry_entry e = {0};
    char *name = NULL;
    uint32_t kind = 0;
    tern_plugin *p = NULL;
    int rc = tern_plugin_open(path, host, &p, &name, &kind);
    e.path = strdup(path);
    if (rc == TERN_OK) {
        const tern_registry_entry *first = find_accepted(r, p->desc->name, p->desc->kind);
        e.name = strdup(p->desc->name);
        e.kind = p->desc->kind;
        if (first) {
            tern_errorf(TERN_EINVAL,
                        "%s: refused: duplicate %s plugin name '%s', already provided by %s "
                        "(earlier on the search path, which wins); remove one or reorder "
                        "plugin_path", path, tern_kind_name(e.kind), e.name ? e.name : "?",
                        first->path);
            tern_plugin_close(p);
            p = NULL;
            e.refusal = strdup(tern_error_message());
        } else {
            e.plugin = p;
        }
    } else {
        if (rc == TERN_ENOMEM && !name) {
            free(e.path);
            return rc;
        }
        e.name = name;
        e.kind = kind;
        e.refusal = strdup(tern_error_message());
        name = NULL;
    }
    free(name);
    if (!e.path || (!e.plugin && !e.refusal) || (e.plugin && !e.name)) {
        tern_plugin_close(e.plugin);
        free(e.path);
        free(e.name);
        free(e.refusal);
        return tern_errorf(TERN_ENOMEM, "out of memory scanning plugins");
    }
    if (e.refusal)
        tern_logf(TERN_LOG_DEBUG, "plugins", "%s", e.refusal);
    rc = add_entry(r, &e);
    if (rc != TERN_OK) {
        tern_plugin_close(e.plugin);
        free(e.path);
        free(e.name);
        free(e.refusal);
    }
    return rc;
}

static int scan_dir(tern_registry *r, const char *dir, const tern_host *host)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return TERN_OK; /* absent directories on the path are normal */
    char **files = NULL;
    size_t n = 0, cap = 0;
    int rc = TERN_OK;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".so") != 0)
            continue;
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
            rc = tern_errorf(TERN_ENOMEM, "out of memory scanning %s", dir);
            break;
        }
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nf = realloc(files, cap * sizeof *nf);
            if (!nf) {
                free(path);
                rc = tern_errorf(TERN_ENOMEM, "out of memory scanning %s", dir);
                break;
            }
            files = nf;
        }
        files[n++] = path;
    }
    closedir(dp);
    if (n)
        qsort(files, n, sizeof *files, by_name);
    for (size_t i = 0; i < n; i++) {
        if (rc == TERN_OK)
            rc = scan_file(r, files[i], host);
        free(files[i]);
    }
    free(files);
    return rc;
}

int tern_registry_scan(tern_registry *r, const tern_host *host)
{
    for (size_t i = 0; i < r->n_dirs; i++) {
        int rc = scan_dir(r, r->dirs[i], host);
        if (rc != TERN_OK)
            return rc;
    }
    return TERN_OK;
}

void tern_registry_free(tern_registry *r)
{
    for (size_t i = 0; i < r->n; i++) {
        tern_plugin_close(r->entries[i].plugin);
        free(r->entries[i].path);
        free(r->entries[i].name);
        free(r->entries[i].refusal);
    }
    free(r->entries);
    for (size_t i = 0; i < r->n_dirs; i++)
        free(r->dirs[i]);
    free(r->dirs);
    memset(r, 0, sizeof *r);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const tern_registry_entry *tern_registry_next_shadow(const tern_registry *r,
                                                     const tern_registry_entry *e,
                                                     const tern_registry_entry *prev)
{
    /* entries are in search-path order: only those before e shadow it */
    for (const tern_registry_entry *c = prev ? prev + 1 : r->entries; c < e; c++) {
        if (!c->refusal)
            continue;
        if (c->name ? strcmp(c->name, e->name) == 0
                    : strcmp(base_name(c->path), base_name(e->path)) == 0)
            return c;
    }
    return NULL;
}

int tern_registry_resolve(const tern_registry *r, const char *name, uint32_t kind,
                          const char *slot, const tern_registry_entry **out)
{
    *out = NULL;
    const tern_registry_entry *hit = find_accepted(r, name, kind);
    if (!hit)
        hit = find_accepted(r, name, 0);
    if (hit) {
        if (hit->kind != kind) {
            char others[512];
            size_t off = 0;
            others[0] = '\0';
            for (size_t i = 0; i < r->n; i++) {
                const tern_registry_entry *e = &r->entries[i];
                if (e->plugin && e->kind == kind) {
                    int w = snprintf(others + off, sizeof others - off, "%s%s", off ? ", " : "",
                                     e->name);
                    if (w < 0 || (size_t)w >= sizeof others - off)
                        break;
                    off += (size_t)w;
                }
            }
            return tern_errorf(TERN_EINVAL,
                               "%s: refused for %s: '%s' is a %s plugin, but %s needs a %s "
                               "plugin (%s plugins found: %s)",
                               hit->path, slot, name, tern_kind_name(hit->kind), slot,
                               tern_kind_name(kind), tern_kind_name(kind), off ? others : "none");
        }
        *out = hit;
        return TERN_OK;
    }
    for (size_t i = 0; i < r->n; i++)
        if (r->entries[i].name && strcmp(r->entries[i].name, name) == 0 &&
            (!r->entries[i].kind || r->entries[i].kind == kind))
            return tern_errorf(TERN_EINVAL, "%s", r->entries[i].refusal);

    tern_suggest sg;
    tern_suggest_init(&sg, name);
    for (size_t i = 0; i < r->n; i++)
        if (r->entries[i].plugin && r->entries[i].kind == kind)
            tern_suggest_offer(&sg, r->entries[i].name, r->entries[i].name);
    const char *best = tern_suggest_best(&sg);
    size_t refused = 0;
    for (size_t i = 0; i < r->n; i++)
        refused += r->entries[i].refusal != NULL;
    char hint[160] = "";
    if (best)
        snprintf(hint, sizeof hint, " (did you mean '%s'?)", best);
    else if (refused)
        snprintf(hint, sizeof hint, " (%zu plugin file%s refused: `tern plugins` with the same "
                 "--config or --plugin-dir says why)", refused, refused == 1 ? " was" : "s were");
    return tern_errorf(TERN_ENOTFOUND,
                       "no %s plugin named '%s' on the plugin search path%s; `tern plugins` lists "
                       "the plugins found",
                       tern_kind_name(kind), name, hint);
}
