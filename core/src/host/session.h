/* session.h: a config made real: read and checked, overrides applied, every
 * plugin it names found, checked against its settings and (optionally)
 * started. `tern check` and `tern run` both open one. */
#ifndef TERN_SESSION_H
#define TERN_SESSION_H

#include "base/export.h"

#include <stdio.h>

#include "config/config.h"
#include "config/core_schema.h"
#include "config/diag.h"
#include "host/host_table.h"
#include "rundir/metrics.h"
#include "host/registry.h"
#include "rundir/trace.h"

/* One plugin instance named by the config. */
typedef struct tern_instance {
    const tern_slot_def *slot;
    char label[48];                    /* "buffer", "rewards[0]" */
    config_setting_t *group;
    const tern_registry_entry *entry;  /* the plugin, once resolved */
    tern_ctx *ctx;
    void *state;                       /* the plugin's, once created */
    int created;
    /* a TERN_SETTING_IN_RUN_DIR key is absent: not created until the run
     * directory is known (tern_session_start_in_run_dir) */
    int waits_for_run_dir;
} tern_instance;

typedef struct tern_session {
    tern_config config;
    int have_config;
    tern_registry registry;
    tern_metrics *metrics;
    tern_trace *trace;
    uint64_t seed;
    tern_instance *inst;
    size_t n_inst;
    /* warnings about the plugins in use (a refused newer copy shadowed by an
     * older one), each logged once on stderr when found; a run copies them
     * into log.txt */
    char **warnings;
    size_t n_warnings;
} tern_session;

/* Open a session for the config at `path` with `overrides`. Every problem
 * found is added to `d`; returns TERN_OK, TERN_ECONFIG (config or plugin
 * problems: exit 2), or another status for a runtime failure (exit 1).
 * With `start`, each plugin's create() runs. tern_session_close() is needed
 * whatever the result. */
int tern_session_open(tern_session *s, const char *path, const char *const *overrides,
                      size_t n_overrides, int start, tern_diag *d);
/* The same for a config given as `text` (libconfig syntax, no overrides);
 * `label` names it where a file name would stand in messages ("LABEL:LINE:
 * ..."), and a relative plugin_path is taken from the label's directory part
 * (the working directory for a label without '/'). */
TERN_INTERNAL int tern_session_open_text(tern_session *s, const char *text, const char *label, int start,
                           tern_diag *d);
/* Start the instances that wait for the run directory `dir`: each absent
 * TERN_SETTING_IN_RUN_DIR key becomes "DIR/<its default>" in the config
 * group (so config.cfg shows it), then create() runs. TERN_OK, or the
 * failing create()'s status with a message naming the instance and plugin
 * (a config problem is TERN_ECONFIG). */
int tern_session_start_in_run_dir(tern_session *s, const char *dir);
/* Destroy the started instances (last first) and free everything. */
TERN_INTERNAL void tern_session_close(tern_session *s);
/* Print the plugins and their resolved settings (`tern check` output); a key
 * that waits for the run directory is shown as out_dir/name/<file>. */
void tern_session_describe(tern_session *s, FILE *out);

#endif
