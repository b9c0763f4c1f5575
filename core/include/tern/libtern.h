/*
 * tern/libtern.h: the embedding API of libtern, for programs that drive tern
 * (the `tern` command, test harnesses). Plugins never include this header and
 * never link libtern: they see only the host table (host.h).
 *
 * Each command function takes a tern_invocation, prints what the user asked
 * for to `out` and every problem to `err` (one line each: what, where, how to
 * fix), and returns the process exit code (DESIGN.md §5):
 *   TERN_EXIT_OK (0) done, TERN_EXIT_FAILURE (1) runtime failure,
 *   TERN_EXIT_USAGE (2) bad usage, config or plugin, TERN_EXIT_INTERRUPTED (130).
 * The caller decides to exit; libtern never calls exit().
 */
#ifndef TERN_LIBTERN_H
#define TERN_LIBTERN_H

#include <stddef.h>
#include <stdio.h>

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TERN_API __attribute__((visibility("default")))
#else
#define TERN_API
#endif

#define TERN_EXIT_OK 0
#define TERN_EXIT_FAILURE 1
#define TERN_EXIT_USAGE 2
#define TERN_EXIT_INTERRUPTED 130

typedef struct tern_invocation {
    size_t size;                  /* sizeof(tern_invocation) as built by the caller */
    const char *config_path;      /* the config file (NULL allowed for plugins) */
    const char *const *overrides; /* "section.key=value" texts, applied in order */
    size_t n_overrides;
    FILE *out;                    /* the command's output (NULL: stdout) */
    FILE *err;                    /* problems and log lines (NULL: stderr) */
} tern_invocation;

/* `tern check`: read and validate the config, load and start every plugin it
 * names, print what would run, stop them. 0 when all is well, else 2 (or 1
 * for a runtime failure such as an I/O error while starting a plugin). */
TERN_API int tern_cmd_check(const tern_invocation *inv);

/* `tern run`: as check, then create the run directory (out_dir/name, or
 * name-2, name-3, ... when that exists, so nothing written before is lost)
 * with config.cfg (the resolved config: overrides applied, defaults filled)
 * and log.txt, and run what the config describes. */
TERN_API int tern_cmd_run(const tern_invocation *inv);

/* `tern plugins`: every plugin on the search path (config_path, when given,
 * adds its plugin_path first): name, kind, version, ABI, file; then every
 * refused file with the reason. 0, or 2 if the config cannot be read. */
TERN_API int tern_cmd_plugins(const tern_invocation *inv);

/* The tern release, e.g. "0.1.0". */
TERN_API const char *tern_version_string(void);

/* `tern new-plugin KIND NAME [DIR]`: write a ready-to-build out-of-tree
 * plugin project to DIR (NULL: ./NAME): NAME.c, a complete plugin of KIND
 * ("model", "reward", "buffer" or "sync") whose every op does something
 * simple, CMakeLists.txt (find_package(Tern), tern_add_plugin() and a test
 * that runs `tern check test.cfg`), test.cfg and README.md. NAME is
 * [a-z][a-z0-9_]*, at most 64 characters. Nothing is ever overwritten: DIR
 * must be absent (it is created, parents too) or an empty directory.
 * Prints the files and the next commands to `out`. config_path and the
 * overrides of `inv` are not used. 0 when written; 2 for a bad KIND, NAME or
 * DIR (nothing is touched); 1 when a file cannot be written ("PATH: cannot
 * write: <reason>"), after removing whatever this call had created. */
TERN_API int tern_cmd_new_plugin(const tern_invocation *inv, const char *kind, const char *name,
                                 const char *dir);

#ifdef __cplusplus
}
#endif
#endif /* TERN_LIBTERN_H */
