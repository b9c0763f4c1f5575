/* model_open.h: one model plugin opened for a command (model_open.c). */
#ifndef TERN_CLI_MODEL_OPEN_H
#define TERN_CLI_MODEL_OPEN_H

#include <stdint.h>

#include "commands.h"
#include "host/session.h"
#include "model/model.h"
#include "tern/libtern.h"

/* A model instance of a command, and the session that holds it. */
typedef struct cli_model {
    tern_session s;
    tern_model px; /* the instance, through the model proxy */
} cli_model;

/* Exit code for a failing status: settings, arguments and input the model
 * rejects are the user's to fix (2); the rest is a runtime failure (1). */
int cli_exit_code(int status);

/* Open the model saved in `dir`, or fresh from `preset` (dir NULL; seed < 0:
 * the preset's), with `plugin` (NULL or "": the default) and `threads` (0:
 * the plugin's). Returns an exit code, after reporting to inv's stream. *m
 * is always fit for cli_model_close, whatever the result. */
int cli_model_open(const tern_invocation *inv, const char *label, const char *plugin,
                   const char *dir, const char *preset, long long seed, uint32_t threads,
                   cli_model *m);
/* The same from a config's text holding a model slot (and plugin_path). */
int cli_model_open_text(const tern_invocation *inv, const char *label, const char *text,
                        cli_model *m);
void cli_model_close(cli_model *m);

/* A model directory or file must exist before the plugin is asked to read it. */
int cli_check_model_dir(const tern_invocation *inv, const char *label, const char *dir);

/* Weights loaded from `dir` with a NaN or infinity are refused, naming the
 * tensor. Returns an exit code. */
int cli_check_weights_finite(const tern_invocation *inv, const char *label, cli_model *m,
                             const char *dir);

#endif
