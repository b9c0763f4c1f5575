/* harness.c: plugin instances for unit tests (see harness.h). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/core_schema.h"
#include "config/diag.h"
#include "base/errmsg.h"
#include "config/schema.h"

/* Each ops table starts with size, create, destroy. */
typedef struct ops_head {
    size_t size;
    int (*create)(tern_ctx *ctx, void **state);
    void (*destroy)(void *state);
} ops_head;

int harness_open(harness *h, const char *name, uint32_t kind, const char *group_text)
{
    memset(h, 0, sizeof *h);
    h->metrics = tern_metrics_new();
    char *text = NULL;
    if (asprintf(&text, "slot = { plugin = \"%s\"; %s };", name, group_text) < 0)
        return TERN_ENOMEM;
    tern_diag d;
    tern_diag_init(&d);
    int rc = tern_config_read_string(&h->cfg, text, "<test>", &d);
    free(text);
    h->have_cfg = rc == TERN_OK;
    const char *dir = TERN_TEST_PLUGIN_DIR;
    if (rc == TERN_OK)
        rc = tern_registry_init(&h->reg, &dir, 1);
    if (rc == TERN_OK)
        rc = tern_registry_scan(&h->reg, tern_host_table());
    if (rc == TERN_OK)
        rc = tern_registry_resolve(&h->reg, name, kind, "slot", &h->entry);
    if (rc != TERN_OK && !d.n)
        tern_diag_addf(&d, "%s", tern_error_message());
    config_setting_t *group = NULL;
    if (rc == TERN_OK) {
        group = config_lookup(&h->cfg.cfg, "slot");
        static const tern_setting_spec plugin_key[] = {
            TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING), TERN_SETTINGS_END};
        const tern_setting_spec *specs[2] = {plugin_key, h->entry->plugin->desc->settings};
        if (tern_schema_check(&h->cfg, group, specs, specs[1] ? 2 : 1, 0, &d) > 0)
            rc = TERN_ECONFIG;
    }
    if (rc == TERN_OK) {
        h->ctx = tern_ctx_new("slot", &h->cfg, group, h->entry->plugin->desc->settings, 1,
                              h->metrics, NULL);
        tern_error_clear();
        const ops_head *ops = h->entry->plugin->desc->ops;
        rc = h->ctx ? ops->create(h->ctx, &h->state) : TERN_ENOMEM;
        if (rc != TERN_OK) {
            h->state = NULL;
            tern_diag_addf(&d, "%s", tern_error_message());
        }
    }
    if (d.n)
        snprintf(h->error, sizeof h->error, "%s", d.msgs[0]);
    tern_diag_free(&d);
    return rc;
}

const void *harness_ops(const harness *h) { return h->entry->plugin->desc->ops; }

void harness_close(harness *h)
{
    if (h->state) {
        const ops_head *ops = h->entry->plugin->desc->ops;
        ops->destroy(h->state);
    }
    tern_ctx_free(h->ctx);
    tern_registry_free(&h->reg);
    if (h->have_cfg)
        tern_config_free(&h->cfg);
    tern_metrics_free(h->metrics);
    memset(h, 0, sizeof *h);
}
