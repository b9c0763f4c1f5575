/* commands.c: the commands of the embedding API (tern/libtern.h): check,
 * run, plugins. Each returns an exit code and prints problems to `err`. */
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/core_schema.h"
#include "base/errmsg.h"
#include "base/log.h"
#include "data/task_file.h"
#include "loop/master.h"
#include "data/task.h"
#include "loop/run_checks.h"
#include "config/run_settings.h"
#include "reward/rewarder.h"
#include "rundir/rundir.h"
#include "host/session.h"
#include "tern/libtern.h"

const char *tern_version_string(void) { return TERN_VERSION_STRING; }

static FILE *out_of(const tern_invocation *inv) { return inv->out ? inv->out : stdout; }
static FILE *err_of(const tern_invocation *inv) { return inv->err ? inv->err : stderr; }

static int exit_code(int status)
{
    if (status == TERN_OK)
        return TERN_EXIT_OK;
    if (status == TERN_EINTR)
        return TERN_EXIT_INTERRUPTED;
    return status == TERN_ECONFIG ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
}

/* A run stopped by signal sig exits 128 + sig, as a shell reports a process
 * that sig killed: schedulers tell a stop from a failure by it. */
static int stopped_code(int sig)
{
    return sig == SIGTERM ? TERN_EXIT_TERMINATED
           : sig == SIGHUP ? TERN_EXIT_HANGUP
           : sig == SIGUSR1 ? TERN_EXIT_USER1
                           : TERN_EXIT_INTERRUPTED;
}

static int bad_invocation(const tern_invocation *inv)
{
    /* a caller built before resume and plugins_only were appended has them
     * off (TERN_HAS) */
    return !inv || inv->size < offsetof(tern_invocation, resume) ||
           (inv->n_overrides && !inv->overrides);
}

/* Open a session and report its problems; returns the exit code. */
static int open_session(const tern_invocation *inv, tern_session *s, int start)
{
    tern_diag d;
    tern_diag_init(&d);
    tern_log_set_stream(err_of(inv));
    int rc = tern_session_open(s, inv->config_path, inv->overrides, inv->n_overrides, start, &d);
    /* the task files too, in the same pass as the config's own mistakes */
    if (s->have_config && tern_run_data_files_check(&s->config, &d) && rc == TERN_OK)
        rc = TERN_ECONFIG;
    if (d.n) {
        tern_diag_print(&d, err_of(inv));
        if (rc == TERN_OK)
            rc = TERN_ECONFIG;
    }
    tern_diag_free(&d);
    return exit_code(rc);
}

/* Print what a run's checks found, as `tern run` prints it; returns the exit
 * code. */
static int report(const tern_invocation *inv, int rc, tern_diag *d)
{
    if (d->n) {
        tern_diag_print(d, err_of(inv));
        if (rc == TERN_OK)
            rc = TERN_ECONFIG;
    } else if (rc != TERN_OK && rc != TERN_EINTR && tern_error_message()[0]) {
        /* (no message: a worker rank of a run on MPI ranks, whose failure the
         * master reports) */
        fprintf(err_of(inv), "%s\n", tern_error_message());
    }
    return exit_code(rc);
}

/* The checks `tern run` makes before it creates anything (loop/run_checks.h),
 * without making model copies or a run directory. */
static int check_run(const tern_invocation *inv, tern_session *s)
{
    tern_run *run = calloc(1, sizeof *run);
    if (!run) {
        fprintf(err_of(inv), "out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    run->session = s;
    run->seed = s->seed;
    tern_diag d;
    tern_diag_init(&d);
    tern_error_clear();
    int code = report(inv, tern_run_check(run, &d), &d);
    tern_diag_free(&d);
    if (code == TERN_EXIT_OK) {
        size_t answered = run->n_answered;
        fprintf(out_of(inv), "data        %zu training tasks (%s), %zu eval tasks\n", run->train.n,
                run->set.train_path, run->eval.n);
        if (run->set.sft_steps > 0 && answered < run->train.n)
            fprintf(out_of(inv), "           the warm-up learns from the %zu that have an "
                    "answer; RL draws from all %zu\n", answered, run->train.n);
    }
    else if (!config_lookup(&s->config.cfg, "data.train") && s->n_inst)
        fprintf(err_of(inv), "%s: this config is not a run (it names no data.train); to check "
                "only the plugins it names, as for a plugin's test config: tern check "
                "--plugins-only %s\n", s->config.path, s->config.path);
    tern_run_check_free(run);
    free(run);
    return code;
}

/* The plugins alone (`--plugins-only`): each started, the rewards as a run
 * routes them (isolated ones start their workers). */
static int check_plugins_only(const tern_invocation *inv, tern_session *s)
{
    tern_rewarder rw;
    tern_error_clear();
    int rc = tern_rewarder_open(&rw, s);
    if (rc != TERN_OK)
        fprintf(err_of(inv), "%s\n", tern_error_message());
    tern_rewarder_close(&rw);
    return exit_code(rc);
}

int tern_cmd_check(const tern_invocation *inv)
{
    if (bad_invocation(inv) || !inv->config_path)
        return TERN_EXIT_USAGE;
    int plugins_only = TERN_HAS(inv, plugins_only) && inv->plugins_only;
    tern_session s;
    int code = open_session(inv, &s, 1);
    if (code == TERN_EXIT_OK)
        code = plugins_only ? check_plugins_only(inv, &s) : check_run(inv, &s);
    if (code == TERN_EXIT_OK) {
        tern_session_describe(&s, out_of(inv));
        if (plugins_only)
            fprintf(out_of(inv), "ok: %s: its plugins are valid (checked for its plugins only, "
                    "not as a run)\n", inv->config_path);
        else
            fprintf(out_of(inv), "ok: %s is valid\n", inv->config_path);
    }
    tern_session_close(&s);
    tern_log_set_stream(NULL);
    return code;
}

int tern_cmd_run(const tern_invocation *inv)
{
    if (bad_invocation(inv) || !inv->config_path)
        return TERN_EXIT_USAGE;
    tern_session s;
    int code = open_session(inv, &s, 1);
    int lock = -1; /* the run directory's, held until log.txt is closed */
    if (code == TERN_EXIT_OK) {
        tern_diag d;
        tern_diag_init(&d);
        int sig = 0;
        tern_loop_options o = {.resume = TERN_HAS(inv, resume) && inv->resume,
                               .out = out_of(inv), .handle_signals = 1, .stop_signal = &sig,
                               .dir_lock = &lock};
        tern_error_clear();
        int rc = tern_loop_run(&s, &o, &d);
        code = report(inv, rc, &d);
        if (rc == TERN_EINTR)
            code = stopped_code(sig);
        tern_diag_free(&d);
    }
    tern_session_close(&s);
    tern_log_close_file();
    tern_rundir_unlock(lock);
    tern_log_set_stream(NULL);
    return code;
}

int tern_cmd_plugins(const tern_invocation *inv)
{
    if (bad_invocation(inv))
        return TERN_EXIT_USAGE;
    FILE *out = out_of(inv);
    tern_registry r;
    int rc;
    tern_config cfg;
    char **dirs = NULL;
    size_t ndirs = 0;
    if (inv->config_path) {
        /* Only plugin_path matters here; a full check is `tern check`. */
        tern_diag d;
        tern_diag_init(&d);
        rc = tern_config_read_file(&cfg, inv->config_path, &d);
        for (size_t i = 0; rc == TERN_OK && i < inv->n_overrides; i++)
            rc = tern_config_override(&cfg, inv->overrides[i], &d);
        tern_diag_print(&d, err_of(inv));
        tern_diag_free(&d);
        if (rc != TERN_OK) {
            if (cfg.live)
                tern_config_free(&cfg);
            return exit_code(rc == TERN_ENOMEM ? rc : TERN_ECONFIG);
        }
        rc = tern_config_plugin_dirs(&cfg, &dirs, &ndirs);
        tern_config_free(&cfg);
        if (rc != TERN_OK) {
            fprintf(err_of(inv), "%s\n", tern_error_message());
            return exit_code(rc);
        }
    }
    const char *extra = TERN_HAS(inv, plugin_dir) ? inv->plugin_dir : NULL;
    if (extra) {
        /* --plugin-dir first, as `tern reward score --plugin-dir` searches */
        char **all = realloc(dirs, (ndirs + 1) * sizeof *all);
        char *copy = strdup(extra);
        if (!all || !copy) {
            free(copy);
            tern_config_free_dirs(all ? all : dirs, ndirs);
            fprintf(err_of(inv), "out of memory\n");
            return TERN_EXIT_FAILURE;
        }
        memmove(all + 1, all, ndirs * sizeof *all);
        all[0] = copy;
        dirs = all;
        ndirs++;
    }
    rc = tern_registry_init(&r, (const char *const *)dirs, ndirs);
    tern_config_free_dirs(dirs, ndirs);
    if (rc == TERN_OK)
        rc = tern_registry_scan(&r, tern_host_table());
    if (rc != TERN_OK) {
        fprintf(err_of(inv), "%s\n", tern_error_message());
        tern_registry_free(&r);
        return exit_code(rc);
    }
    fprintf(out, "search path:\n");
    for (size_t i = 0; i < r.n_dirs; i++)
        fprintf(out, "  %s\n", r.dirs[i]);
    size_t accepted = 0, refused = 0;
    for (size_t i = 0; i < r.n; i++)
        accepted += r.entries[i].plugin != NULL;
    fprintf(out, "\n%-16s %-11s %-9s %-5s %s\n", "NAME", "KIND", "VERSION", "ABI", "FILE");
    for (size_t i = 0; i < r.n; i++) {
        const tern_registry_entry *e = &r.entries[i];
        if (!e->plugin)
            continue;
        const tern_plugin_descriptor *dsc = e->plugin->desc;
        fprintf(out, "%-16s %-11s %-9s %u.%-3u %s\n", dsc->name, tern_kind_name(dsc->kind),
                dsc->version ? dsc->version : "-", dsc->abi_major, dsc->abi_minor, e->path);
        if (dsc->summary && *dsc->summary)
            fprintf(out, "%-16s %s\n", "", dsc->summary);
    }
    if (!accepted)
        fprintf(out, "(no plugins found)\n");
    for (size_t i = 0; i < r.n; i++) {
        if (!r.entries[i].refusal)
            continue;
        if (!refused++)
            fprintf(out, "\nrefused:\n");
        fprintf(out, "  %s\n", r.entries[i].refusal);
    }
    tern_registry_free(&r);
    return TERN_EXIT_OK;
}
