/* new_plugin.c: `tern new-plugin KIND NAME [DIR]` (tern/libtern.h): write a
 * ready-to-build out-of-tree plugin project from the embedded templates
 * (new_plugin.h). It never overwrites anything: DIR must be absent or empty,
 * every file is created with O_EXCL, and on a failure everything this call
 * created is removed again. */
#include "new_plugin/new_plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/registry.h"
#include "cmd_io.h"
#include "commands.h"
#include "tern/libtern.h"
#include "tern/support/paths.h"

#define NAME_MAX_LEN 64

static const char *const kinds[] = {"model", "reward", "buffer", "sync", "environment",
                                     "tool"};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

/* What a project holds: template (under <kind>/) -> file (NULL: NAME.c), and
 * the line printed for it. */
static const struct project_file {
    const char *tpl;
    const char *out;
    const char *what;
} project_files[] = {
    {"plugin.c.in", NULL, "the plugin: every op works; replace the marked parts with your logic"},
    {"CMakeLists.txt.in", "CMakeLists.txt", "builds the plugin (find_package(Tern)) and tests it"},
    {"test.cfg.in", "test.cfg", "a config naming the plugin, which the test checks"},
    {"README.md.in", "README.md", "how to build, test, install and extend it"},
};
#define N_FILES (sizeof project_files / sizeof project_files[0])

/* Target names CMake keeps for itself: a project cannot add a library so named. */
static const char *const cmake_reserved[] = {
    "all",     "clean",          "depend",    "edit_cache", "help",
    "install", "install_local",  "install_strip", "list_install_components",
    "package", "package_source", "preinstall", "rebuild_cache", "test",
};

const tern_template_file *tern_template_find(const char *path)
{
    for (size_t i = 0; i < tern_n_template_files; i++)
        if (strcmp(tern_template_files[i].path, path) == 0)
            return &tern_template_files[i];
    return NULL;
}

char *tern_template_expand(const tern_template_file *t, const char *kind, const char *name,
                           size_t *len)
{
    const struct {
        const char *key, *value;
    } subst[] = {{"@NAME@", name}, {"@KIND@", kind}, {"@PLUGIN_SUBDIR@", TERN_PLUGIN_SUBDIR}};
    const size_t n_subst = sizeof subst / sizeof subst[0];
    const char *src = (const char *)t->data;
    /* Two passes: measure, then copy. */
    char *dst = NULL;
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        n = 0;
        for (size_t i = 0; i < t->len;) {
            size_t k = 0;
            if (src[i] == '@')
                for (; k < n_subst; k++)
                    if (strncmp(src + i, subst[k].key, strlen(subst[k].key)) == 0)
                        break;
            if (src[i] == '@' && k < n_subst) {
                size_t vl = strlen(subst[k].value);
                if (dst)
                    memcpy(dst + n, subst[k].value, vl);
                n += vl;
                i += strlen(subst[k].key);
            } else {
                if (dst)
                    dst[n] = src[i];
                n++;
                i++;
            }
        }
        if (!dst && !(dst = malloc(n + 1)))
            return NULL;
    }
    dst[n] = '\0';
    *len = n;
    return dst;
}

int tern_new_plugin_name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len < 1 || len > NAME_MAX_LEN || !(name[0] >= 'a' && name[0] <= 'z'))
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    for (size_t i = 0; i < sizeof cmake_reserved / sizeof cmake_reserved[0]; i++)
        if (strcmp(name, cmake_reserved[i]) == 0)
            return 0;
    return 1;
}

/* ---- what this call created, to undo on failure -------------------------- */

typedef struct created {
    char **paths; /* files and directories, in creation order */
    int *is_dir;
    size_t n, cap;
} created;

static int remember(created *c, const char *path, int is_dir)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        char **np = realloc(c->paths, cap * sizeof *np);
        if (np)
            c->paths = np;
        int *nd = np ? realloc(c->is_dir, cap * sizeof *nd) : NULL;
        if (!nd)
            return -1;
        c->is_dir = nd;
        c->cap = cap;
    }
    char *copy = strdup(path);
    if (!copy)
        return -1;
    c->paths[c->n] = copy;
    c->is_dir[c->n++] = is_dir;
    return 0;
}

/* Remove everything remembered, newest first (files before their directories). */
static void undo(created *c)
{
    for (size_t i = c->n; i-- > 0;) {
        if (c->is_dir[i])
            rmdir(c->paths[i]);
        else
            unlink(c->paths[i]);
    }
}

/* Free the record (what it names stays). */
static void forget(created *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->paths[i]);
    free(c->paths);
    free(c->is_dir);
    memset(c, 0, sizeof *c);
}

/* ---- the steps ------------------------------------------------------------ */

/* mkdir -p `path`, remembering each directory made. Exit code. (The caller
 * has seen that `path` is absent or a directory.) */
static int make_dirs(const tern_invocation *inv, const char *path, created *c)
{
    tern_made_dirs made = {.n = 0};
    char why[PATH_MAX + 64];
    int code = TERN_EXIT_OK;
    if (tern_make_dirs(path, &made, why, sizeof why) != 0) {
        if (errno == ENOMEM)
            fprintf(cmd_err(inv), "tern new-plugin: out of memory\n");
        else
            fprintf(cmd_err(inv), "%s\n", why);
        code = TERN_EXIT_FAILURE;
    }
    for (size_t i = 0; code == TERN_EXIT_OK && i < made.n; i++)
        if (remember(c, made.paths[i], 1) != 0) {
            fprintf(cmd_err(inv), "tern new-plugin: out of memory\n");
            code = TERN_EXIT_FAILURE;
        }
    if (code != TERN_EXIT_OK)
        tern_made_dirs_remove(&made);
    tern_made_dirs_free(&made);
    return code;
}

/* Write `len` bytes to a new file `path` (never an existing one). 0, or -1
 * with errno set and no file left behind. */
static int write_new_file(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int err = w < 0 ? errno : EIO;
            close(fd);
            unlink(path);
            errno = err;
            return -1;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0) {
        int err = errno;
        unlink(path);
        errno = err;
        return -1;
    }
    return 0;
}

/* `s` quoted for a POSIX shell when it needs it (into buf). */
static const char *shell_word(const char *s, char *buf, size_t n)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                        "_-./+,:=@%") == strlen(s))
        return s;
    size_t o = 0;
    if (o + 1 < n)
        buf[o++] = '\'';
    for (; *s && o + 5 < n; s++) {
        if (*s == '\'') {
            memcpy(buf + o, "'\\''", 4);
            o += 4;
        } else {
            buf[o++] = *s;
        }
    }
    if (o + 1 < n)
        buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

/* Where CMake finds the Tern package of the libtern in use, for the hint
 * printed after the next commands: the directory holding TernConfig.cmake
 * beside this libtern (an installed tern), or NULL (a build tree, or a
 * prefix CMake searches anyway). */
static const char *tern_cmake_dir(char *buf, size_t n)
{
    char plugins[PATH_MAX];
    const char *dir = tern_registry_builtin_dir(plugins, sizeof plugins);
    const char *tail = "/tern/" TERN_PLUGIN_SUBDIR;
    size_t dl = dir ? strlen(dir) : 0, tl = strlen(tail);
    if (!dir || dl <= tl || strcmp(dir + dl - tl, tail) != 0)
        return NULL;
    int w = snprintf(buf, n, "%.*s/cmake/Tern", (int)(dl - tl), dir);
    if (w < 0 || (size_t)w >= n || strncmp(buf, "/usr/lib", 8) == 0 ||
        strncmp(buf, "/usr/local/lib", 14) == 0)
        return NULL;
    char config[PATH_MAX + 32];
    snprintf(config, sizeof config, "%s/TernConfig.cmake", buf);
    return access(config, R_OK) == 0 ? buf : NULL;
}

static void print_done(const tern_invocation *inv, const char *kind, const char *name,
                       const char *dir)
{
    FILE *out = cmd_out(inv);
    fprintf(out, "created the %s plugin '%s' in %s/:\n", kind, name, dir);
    char file[NAME_MAX_LEN + 8];
    snprintf(file, sizeof file, "%s.c", name);
    int width = (int)strlen(file) > 14 ? (int)strlen(file) : 14; /* "CMakeLists.txt" */
    for (size_t i = 0; i < N_FILES; i++)
        fprintf(out, "  %s/%-*s  %s\n", dir, width,
                project_files[i].out ? project_files[i].out : file, project_files[i].what);
    char quoted[2 * PATH_MAX];
    fprintf(out, "\nnext:\n  cd %s\n", shell_word(dir, quoted, sizeof quoted));
    fprintf(out, "  cmake -S . -B build && cmake --build build && ctest --test-dir build\n");
    char cmake_dir[PATH_MAX];
    if (tern_cmake_dir(cmake_dir, sizeof cmake_dir))
        fprintf(out, "(if CMake cannot find the Tern package, add -DTern_DIR=%s to the first "
                "cmake)\n", shell_word(cmake_dir, quoted, sizeof quoted));
    else
        fprintf(out, "(if CMake cannot find the Tern package, add -DCMAKE_PREFIX_PATH=<where "
                "tern is installed> to the first cmake)\n");
}

/* Check the arguments; exit code. `dir` is trimmed of trailing slashes into
 * dirbuf. */
static int check_args(const tern_invocation *inv, const char *kind, const char *name,
                      const char **dir, char *dirbuf, size_t n)
{
    FILE *err = cmd_err(inv);
    int kind_ok = 0;
    for (size_t i = 0; kind && i < N_KINDS; i++)
        kind_ok |= strcmp(kind, kinds[i]) == 0;
    if (!kind_ok) {
        fprintf(err, "tern new-plugin: unknown kind '%s'; KIND is one of: model, reward, buffer, "
                "sync, environment, tool\n", kind ? kind : "");
        return TERN_EXIT_USAGE;
    }
    if (!name || !tern_new_plugin_name_ok(name)) {
        int reserved = 0;
        for (size_t i = 0; name && i < sizeof cmake_reserved / sizeof cmake_reserved[0]; i++)
            reserved |= strcmp(name, cmake_reserved[i]) == 0;
        if (reserved)
            fprintf(err, "tern new-plugin: '%s' is a target name CMake reserves; choose another "
                    "NAME (e.g. my_%s)\n", name, name);
        else
            fprintf(err, "tern new-plugin: '%s' is not a valid plugin name; NAME is a lower-case "
                    "letter, then lower-case letters, digits or '_', at most %d characters "
                    "(e.g. my_%s)\n", name ? name : "", NAME_MAX_LEN, kind);
        return TERN_EXIT_USAGE;
    }
    const char *d = *dir ? *dir : name;
    size_t len = strlen(d);
    if (len == 0) {
        fprintf(err, "tern new-plugin: DIR is empty; give a directory, or leave it out for "
                "./%s\n", name);
        return TERN_EXIT_USAGE;
    }
    /* the longest path written is DIR/NAME.c or DIR/CMakeLists.txt */
    if (len + NAME_MAX_LEN + 20 >= n) {
        fprintf(err, "%s: path too long; choose a shorter DIR\n", d);
        return TERN_EXIT_USAGE;
    }
    memcpy(dirbuf, d, len + 1);
    while (len > 1 && dirbuf[len - 1] == '/')
        dirbuf[--len] = '\0';
    *dir = dirbuf;
    return TERN_EXIT_OK;
}

int tern_cmd_new_plugin(const tern_invocation *inv, const char *kind, const char *name,
                        const char *dir)
{
    if (!inv || inv->size < sizeof(tern_invocation))
        return TERN_EXIT_USAGE;
    FILE *err = cmd_err(inv);
    char dirbuf[PATH_MAX];
    int code = check_args(inv, kind, name, &dir, dirbuf, sizeof dirbuf);
    if (code != TERN_EXIT_OK)
        return code;

    /* DIR must not exist, or be an empty directory. */
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            fprintf(err, "%s: exists and is not a directory; tern new-plugin never overwrites "
                    "anything: choose another DIR\n", dir);
            return TERN_EXIT_USAGE;
        }
        int empty = cmd_dir_is_empty(dir);
        if (empty < 0) {
            fprintf(err, "%s: cannot read: %s\n", dir, strerror(errno));
            return TERN_EXIT_FAILURE;
        }
        if (!empty) {
            fprintf(err, "%s: exists and is not empty; tern new-plugin never overwrites "
                    "anything: choose another DIR, or remove this one\n", dir);
            return TERN_EXIT_USAGE;
        }
    }

    /* Expand every template before touching the disk. */
    char *texts[N_FILES] = {0};
    size_t lens[N_FILES] = {0};
    for (size_t i = 0; i < N_FILES; i++) {
        char tpl[64];
        snprintf(tpl, sizeof tpl, "%s/%s", kind, project_files[i].tpl);
        const tern_template_file *t = tern_template_find(tpl);
        if (!t) {
            fprintf(err, "tern new-plugin: template %s is missing from this libtern (a build "
                    "problem); rebuild tern\n", tpl);
            code = TERN_EXIT_FAILURE;
        } else if (!(texts[i] = tern_template_expand(t, kind, name, &lens[i]))) {
            fprintf(err, "tern new-plugin: out of memory\n");
            code = TERN_EXIT_FAILURE;
        }
        if (code != TERN_EXIT_OK)
            break;
    }

    created c = {0};
    if (code == TERN_EXIT_OK)
        code = make_dirs(inv, dir, &c);
    for (size_t i = 0; code == TERN_EXIT_OK && i < N_FILES; i++) {
        char path[PATH_MAX];
        if (project_files[i].out)
            snprintf(path, sizeof path, "%s/%s", dir, project_files[i].out);
        else
            snprintf(path, sizeof path, "%s/%s.c", dir, name);
        if (write_new_file(path, texts[i], lens[i]) != 0) {
            fprintf(err, "%s: cannot write: %s\n", path, strerror(errno));
            code = TERN_EXIT_FAILURE;
        } else if (remember(&c, path, 0) != 0) {
            unlink(path);
            fprintf(err, "tern new-plugin: out of memory\n");
            code = TERN_EXIT_FAILURE;
        }
    }
    if (code != TERN_EXIT_OK)
        undo(&c);
    forget(&c);
    if (code == TERN_EXIT_OK)
        print_done(inv, kind, name, dir);
    for (size_t i = 0; i < N_FILES; i++)
        free(texts[i]);
    return code;
}
