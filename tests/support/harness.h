/* harness.h: start one plugin instance from a config snippet, the way a run
 * does (search path, descriptor checks, settings checked against the
 * plugin's spec with defaults filled, create()), for plugin unit tests. */
#ifndef TERN_TEST_HARNESS_H
#define TERN_TEST_HARNESS_H

#include <stddef.h>

#include "config/config.h"
#include "host/host_table.h"
#include "rundir/metrics.h"
#include "host/registry.h"
#include "tern/plugin.h"

typedef struct harness {
    tern_config cfg;
    int have_cfg;
    tern_registry reg;
    const tern_registry_entry *entry;
    tern_metrics *metrics;
    tern_ctx *ctx;
    void *state; /* the plugin instance, once created */
    char error[2048];
} harness;

/* Start plugin `name` of `kind` with `group_text` as the body of its config
 * group (e.g. "capacity = 4; when_full = \"block\";"; the `plugin` key is
 * added). Plugins are searched in the build tree only. Returns TERN_OK, or a
 * status with h->error holding the first message. Always harness_close(). */
int harness_open(harness *h, const char *name, uint32_t kind, const char *group_text);
void harness_close(harness *h);
/* The plugin's ops table (cast to the kind's tern_*_ops). */
const void *harness_ops(const harness *h);

#endif
