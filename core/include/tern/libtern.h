/*
 * tern/libtern.h: the embedding API of libtern, for programs that drive tern
 * (the `tern` command, test harnesses). Plugins never include this header and
 * never link libtern: they see only the host table (host.h).
 *
 * The commands that are tools rather than the engine (model, data, reward
 * score, timeline, new-plugin) live above libtern, in cli/ (cli/commands.h).
 *
 * Each command function takes a tern_invocation, prints what the user asked
 * for to `out` and every problem to `err` (one line each: what, where, how to
 * fix), and returns the process exit code (docs/architecture.md §5):
 *   TERN_EXIT_OK (0) done, TERN_EXIT_FAILURE (1) runtime failure,
 *   TERN_EXIT_USAGE (2) bad usage, config or plugin; a run stopped by a signal
 *   exits 128 + the signal, as a shell reports a process it killed:
 *   TERN_EXIT_HANGUP (129), TERN_EXIT_INTERRUPTED (130), TERN_EXIT_TERMINATED (143).
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
#define TERN_EXIT_HANGUP 129      /* run: stopped by SIGHUP, after the checkpoint */
#define TERN_EXIT_INTERRUPTED 130 /* run: stopped by SIGINT (^C), after the checkpoint */
#define TERN_EXIT_TERMINATED 143  /* run: stopped by SIGTERM, after the checkpoint */
#define TERN_EXIT_USER1 138       /* run: stopped by SIGUSR1 (mpirun passes it on to every rank
                                     without a SIGKILL after it), after the checkpoint */

typedef struct tern_invocation {
    size_t size;                  /* sizeof(tern_invocation) as built by the caller */
    const char *config_path;      /* the config file (NULL allowed for plugins) */
    const char *const *overrides; /* "section.key=value" texts, applied in order */
    size_t n_overrides;
    FILE *out;                    /* the command's output (NULL: stdout) */
    FILE *err;                    /* problems and log lines (NULL: stderr) */
    int resume;                   /* run: continue out_dir/name from its newest checkpoint */
    int plugins_only;             /* check: the plugins alone, not a run (a plugin's test
                                     config); appended after resume (TERN_HAS) */
    const char *plugin_dir;       /* plugins: a directory searched before the config's
                                     plugin_path and the default path (NULL: none);
                                     appended after plugins_only (TERN_HAS) */
} tern_invocation;

/* `tern check`: every check `tern run` makes before it creates anything (one
 * function serves both, so what check calls valid, run accepts): read and
 * validate the config, load and start every plugin it names, read the loop's
 * sections and the task files, check the rules that join several keys and
 * what a run asks of its plugins; print what would run, stop them. It makes
 * no model copy and no run directory; a file a plugin keeps in the run
 * directory (the `sqlite` buffer's default) is only named. A config that is
 * not a run (no data.train) is refused as run refuses it; with
 * inv->plugins_only only the plugins it names are checked. 0 when all is
 * well, else 2 (or 1 for a runtime failure such as an I/O error while
 * starting a plugin). */
TERN_API int tern_cmd_check(const tern_invocation *inv);

/* `tern run`: as check, then create the run directory (out_dir/name, or
 * name-2, name-3, ... when that exists, so nothing written before is lost)
 * with config.cfg (the resolved config: overrides applied, defaults filled)
 * and log.txt, and run the learning loop the config describes (optional
 * supervised warm-up, then RL; metrics.jsonl, rollouts.jsonl, checkpoints/,
 * summary.json, trace.json; docs/run.md). With inv->resume, continue the run
 * directory out_dir/name from its newest checkpoint instead; a directory
 * another run holds (its `lock`) is refused with 2. For the run's duration
 * SIGINT, SIGTERM and SIGHUP are caught: the first finishes the current
 * step, writes a checkpoint, summary.json and trace.json and returns 130,
 * 143 or 129; a second writes summary.json and trace.json and ends the
 * process by that signal. The caller should ignore SIGPIPE (the `tern`
 * command does), so that a closed stdout or stderr does not end the run. */
TERN_API int tern_cmd_run(const tern_invocation *inv);

/* `tern plugins`: every plugin on the search path (config_path, when given,
 * adds its plugin_path first): name, kind, version, ABI, file; then every
 * refused file with the reason. 0, or 2 if the config cannot be read. */
TERN_API int tern_cmd_plugins(const tern_invocation *inv);

/* The tern release, e.g. "0.1.0". */
TERN_API const char *tern_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* TERN_LIBTERN_H */
