/* model_open.c: one model plugin opened for a command (`tern generate`,
 * `tern score`, `tern model init|convert`, `tern serve`): the model slot a
 * config would hold ("model = { plugin = ...; path = ...; };" or "... init
 * = { preset = ...; };"), a session opened on that text (the same checks
 * and start as `tern check`), and the checks every command makes of a saved
 * model. Strings are escaped for libconfig, so any path or preset reaches
 * the plugin unchanged. */
#include "model/model_open.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "cmd_io.h"
#include "config/diag.h"
#include "flag_config.h"
#include "tern/support/text_buf.h"

#define DEFAULT_PLUGIN "transformer"

/* Exit code for a failing status: settings, arguments and input the model
 * rejects are the user's to fix (2); the rest is a runtime failure (1). */
int cli_exit_code(int status)
{
    if (status == TERN_OK)
        return TERN_EXIT_OK;
    if (status == TERN_EINTR)
        return TERN_EXIT_INTERRUPTED;
    if (status == TERN_ECONFIG || status == TERN_EINVAL || status == TERN_ENOTFOUND)
        return TERN_EXIT_USAGE;
    return TERN_EXIT_FAILURE;
}

/* ---- the config text ------------------------------------------------------ */

/* The model slot: loading `dir`, or fresh from `preset` (dir NULL). */
static char *model_config(const char *plugin, const char *dir, const char *preset, long long seed,
                          uint32_t threads)
{
    tern_text_buf b = {0};
    char num[32];
    tern_text_puts(&b, "model = {\n  plugin = ");
    tern_tb_quoted(&b, plugin);
    tern_text_puts(&b, ";\n");
    if (dir) {
        tern_text_puts(&b, "  path = ");
        tern_tb_quoted(&b, dir);
        tern_text_puts(&b, ";\n");
    } else {
        tern_text_puts(&b, "  init = {\n    preset = ");
        tern_tb_quoted(&b, preset);
        tern_text_puts(&b, ";\n");
        if (seed >= 0) {
            snprintf(num, sizeof num, "%lldL", seed);
            tern_text_puts(&b, "    seed = ");
            tern_text_puts(&b, num);
            tern_text_puts(&b, ";\n");
        }
        tern_text_puts(&b, "  };\n");
    }
    if (threads > 0) {
        snprintf(num, sizeof num, "%u", threads);
        tern_text_puts(&b, "  threads = ");
        tern_text_puts(&b, num);
        tern_text_puts(&b, ";\n");
    }
    tern_text_puts(&b, "};\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- the model instance --------------------------------------------------- */

/* Start the model the config text describes; returns an exit code. On
 * success m->px is the instance. cli_model_close() is needed
 * whatever the result. */
int cli_model_open_text(const tern_invocation *inv, const char *label, const char *text,
                        cli_model *m)
{
    memset(m, 0, sizeof *m);
    tern_diag d;
    tern_diag_init(&d);
    tern_log_set_stream(cmd_err(inv));
    int rc = tern_session_open_text(&m->s, text, label, 1, &d);
    if (d.n && rc == TERN_OK)
        rc = TERN_ECONFIG;
    tern_print_flag_problems(cmd_err(inv), label, &d);
    tern_diag_free(&d);
    if (rc != TERN_OK)
        return cli_exit_code(rc);
    for (size_t i = 0; i < m->s.n_inst; i++) {
        tern_instance *in = &m->s.inst[i];
        if (in->created && in->slot->kind == TERN_KIND_MODEL) {
            m->px = (tern_model){.ops = in->entry->plugin->desc->ops, .state = in->state};
            tern_model_name(&m->px, in->label, in->entry->name, in->entry->path,
                            in->entry->plugin->desc->abi_minor);
            return TERN_EXIT_OK;
        }
    }
    cmd_report(inv, label, "the model did not start (no model instance)");
    return TERN_EXIT_FAILURE;
}

void cli_model_close(cli_model *m)
{
    tern_session_close(&m->s);
    tern_log_set_stream(NULL);
}

/* Open the model of model_config(): saved in `dir`, or fresh from `preset`,
 * with `plugin` (NULL or "": the default). *m is always fit for model_close,
 * whatever the result. */
int cli_model_open(const tern_invocation *inv, const char *label, const char *plugin,
                      const char *dir, const char *preset, long long seed, uint32_t threads,
                      cli_model *m)
{
    memset(m, 0, sizeof *m);
    char *text = model_config(plugin && *plugin ? plugin : DEFAULT_PLUGIN, dir, preset, seed,
                              threads);
    if (!text) {
        cmd_report(inv, label, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    int code = cli_model_open_text(inv, label, text, m);
    free(text);
    return code;
}

/* A model directory must exist before the plugin is asked to read it. */
int cli_check_model_dir(const tern_invocation *inv, const char *label, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        int e = errno;
        cmd_report(inv, label,
                   "%s: %s; give the directory of a saved model (`tern model init` "
                   "writes a fresh one) or a GGUF file",
                   dir, e == ENOENT ? "no such file or directory" : strerror(e));
        return e == ENOENT || e == ENOTDIR ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
    }
    /* a regular file goes to the plugin, which reads model files of its own (GGUF) */
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        cmd_report(inv, label, "%s: neither a directory nor a file; give the directory of a "
                   "saved model or a model file (GGUF)", dir);
        return TERN_EXIT_USAGE;
    }
    return TERN_EXIT_OK;
}

/* Index of the first NaN or infinity among a tensor's elements, or -1. */
static long long first_nonfinite(const tern_tensor *t)
{
    size_t n = t->dtype == TERN_DTYPE_F32 ? t->bytes / 4 : t->bytes / 2;
    for (size_t i = 0; i < n; i++) {
        if (t->dtype == TERN_DTYPE_F32) {
            if (!isfinite(((const float *)t->data)[i]))
                return (long long)i;
        } else {
            /* bf16: 8 exponent bits under the sign; f16: 5. All ones: inf or NaN */
            uint16_t b = ((const uint16_t *)t->data)[i];
            uint16_t exp = t->dtype == TERN_DTYPE_BF16 ? 0x7f80 : 0x7c00;
            if ((b & exp) == exp)
                return (long long)i;
        }
    }
    return -1;
}

/* Weights loaded from `dir` with a NaN or infinity would print an empty
 * sample or a score of nan without a word: refuse them, naming the tensor.
 * Returns an exit code. */
int cli_check_weights_finite(const tern_invocation *inv, const char *label, cli_model *m,
                                const char *dir)
{
    const tern_tensor *t = NULL;
    size_t n = 0;
    if (tern_model_tensors(&m->px, "the model cannot list its weights", &t, &n) != TERN_OK) {
        cmd_report(inv, label, "%s", tern_error_message());
        return TERN_EXIT_FAILURE;
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i].dtype != TERN_DTYPE_F32 && t[i].dtype != TERN_DTYPE_BF16 &&
            t[i].dtype != TERN_DTYPE_F16)
            continue;
        long long at = first_nonfinite(&t[i]);
        if (at >= 0) {
            cmd_report(inv, label, "%s: weight %s holds a NaN or infinity (element %lld): the "
                       "model is damaged or its training diverged; use an earlier checkpoint",
                       dir, t[i].name ? t[i].name : "(unnamed)", at);
            return TERN_EXIT_USAGE;
        }
    }
    return TERN_EXIT_OK;
}

