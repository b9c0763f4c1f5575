/*
 * fuzz_settings.c: libFuzzer target for the settings layer. The input's first
 * line is a `-o` override, the rest a config file. Everything a user's config
 * reaches is exercised: parsing, the override, the core schema, a spec with
 * every setting type (as plugins declare them), naming settings in messages,
 * and the typed getters plugins call. Nothing may crash, leak or hang.
 *
 *   build-fuzz/tests/fuzz/fuzz_settings -max_total_time=600 corpus tests/fuzz/corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/core_schema.h"
#include "config/diag.h"
#include "host/host_table.h"
#include "config/schema.h"

static const tern_setting_spec element_keys[] = {
    TERN_SETTING(.name = "name", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED),
    TERN_SETTING(.name = "weight", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = 0, .max = 9),
    TERN_SETTINGS_END,
};
static const tern_setting_spec nested_keys[] = {
    TERN_SETTING(.name = "depth", .type = TERN_SETTING_INT, .def = "2", .min = 1, .max = 8),
    TERN_SETTINGS_END,
};
static const tern_setting_spec plugin_keys[] = {
    TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING),
    TERN_SETTING(.name = "capacity", .type = TERN_SETTING_INT, .def = "64", .min = 1, .max = 1e9,
                 .aka = "size|cap"),
    TERN_SETTING(.name = "lr", .type = TERN_SETTING_FLOAT, .def = "0.001", .aka = "learning_rate"),
    TERN_SETTING(.name = "on", .type = TERN_SETTING_BOOL, .def = "true"),
    TERN_SETTING(.name = "mode", .type = TERN_SETTING_STRING, .def = "\"block\"",
                 .choices = "block|drop_oldest"),
    TERN_SETTING(.name = "inner", .type = TERN_SETTING_GROUP, .children = nested_keys),
    TERN_SETTING(.name = "cases", .type = TERN_SETTING_LIST, .children = element_keys),
    TERN_SETTING(.name = "tags", .type = TERN_SETTING_STRINGS),
    TERN_SETTINGS_END,
};

static void read_everything(tern_ctx *ctx)
{
    int64_t i;
    double f;
    int b;
    const char *s;
    size_t n;
    const tern_host *h = tern_host_table();
    h->get_int(ctx, "capacity", &i);
    h->get_float(ctx, "lr", &f);
    h->get_bool(ctx, "on", &b);
    h->get_string(ctx, "mode", &s);
    h->get_int(ctx, "inner.depth", &i);
    if (h->get_count(ctx, "cases", &n) == TERN_OK)
        for (size_t k = 0; k < n && k < 8; k++) {
            char key[64];
            snprintf(key, sizeof key, "cases.%zu.name", k);
            h->get_string(ctx, key, &s);
            snprintf(key, sizeof key, "cases.%zu.weight", k);
            h->get_float(ctx, key, &f);
        }
    h->get_count(ctx, "tags", &n);
    h->setting_error(ctx, "capacity", "fuzz %d", 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    /* @include reads other files: not what a fuzzer should wander into */
    if (strstr(text, "@include")) {
        free(text);
        return 0;
    }
    char *body = strchr(text, '\n');
    const char *override = text;
    if (body)
        *body++ = '\0';
    else
        body = text + size;

    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    if (tern_config_read_string(&c, body, "<fuzz>", &d) == TERN_OK) {
        if (*override)
            tern_config_override(&c, override, &d);
        config_setting_t *root = config_root_setting(&c.cfg);
        const tern_setting_spec *core = tern_core_schema;
        tern_schema_check(&c, root, &core, 1, 0, &d);
        for (size_t i = 0; i < tern_n_slots; i++) {
            config_setting_t *g = config_setting_get_member(root, tern_slots[i].section);
            if (!g || config_setting_type(g) != CONFIG_TYPE_GROUP)
                continue;
            const tern_setting_spec *specs[2] = {tern_slots[i].keys, plugin_keys};
            tern_schema_check(&c, g, specs, 2, 0, &d);
            tern_ctx *ctx = tern_ctx_new(tern_slots[i].section, &c, g, plugin_keys, 1, NULL, NULL);
            if (ctx)
                read_everything(ctx);
            tern_ctx_free(ctx);
        }
        char **dirs;
        size_t n;
        if (tern_config_plugin_dirs(&c, &dirs, &n) == TERN_OK)
            tern_config_free_dirs(dirs, n);
        if (*override) {
            char buf[300];
            config_setting_t *s = tern_config_lookup(root, override);
            if (s) {
                tern_config_where(&c, s, buf, sizeof buf);
                tern_config_path(s, buf, sizeof buf);
            }
        }
        tern_config_free(&c);
    }
    tern_diag_free(&d);
    free(text);
    return 0;
}
