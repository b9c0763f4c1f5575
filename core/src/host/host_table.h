/* host_table.h: the host table given to plugins, and the per-instance context
 * (tern_ctx) its services act on. */
#ifndef TERN_HOST_IMPL_H
#define TERN_HOST_IMPL_H

#include <libconfig.h>

#include "config/config.h"
#include "rundir/metrics.h"
#include "rundir/trace.h"
#include "tern/host.h"
#include "tern/settings.h"

/* The process-wide host table (static, valid forever). */
const tern_host *tern_host_table(void);
/* Switch this process's host services to an isolated reward worker's
 * (reward/worker.c): log lines go straight to stderr with write(2), metrics
 * and trace spans are dropped. Called once in the forked child, which must
 * not take locks another thread of the parent may have held at fork. */
void tern_host_enter_worker(void);

/* A new context for one plugin instance. `label` names it in logs, metrics
 * and messages ("buffer", "rewards[0]"); `group` is its config group and
 * `spec` its declared settings; metrics and trace may be NULL. The context
 * borrows config, group, spec, metrics and trace; copies label. */
tern_ctx *tern_ctx_new(const char *label, tern_config *config, config_setting_t *group,
                       const tern_setting_spec *spec, uint64_t run_seed, tern_metrics *metrics,
                       tern_trace *trace);
void tern_ctx_free(tern_ctx *ctx);
const char *tern_ctx_label(const tern_ctx *ctx);

#endif
