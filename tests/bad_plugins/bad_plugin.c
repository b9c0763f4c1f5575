/*
 * bad_plugin.c: a buffer plugin that is broken in exactly one way per build,
 * chosen by the BAD_* definitions in CMakeLists.txt, so that each refusal of
 * the loader (docs/architecture.md §3) has a purpose-built file to be tested against.
 * Built without any BAD_* definition it is a valid (if useless) plugin.
 */
#include <stdlib.h>

#include "tern/buffer.h"
#include "tern/plugin.h"

#ifndef BAD_NAME
#define BAD_NAME "bad"
#endif
#ifndef BAD_ABI_MAJOR
#define BAD_ABI_MAJOR TERN_ABI_MAJOR
#endif
#ifndef BAD_ABI_MINOR
#define BAD_ABI_MINOR TERN_ABI_MINOR
#endif
#ifndef BAD_DESC_SIZE
#define BAD_DESC_SIZE sizeof(tern_plugin_descriptor)
#endif
#ifndef BAD_OPS_SIZE
#define BAD_OPS_SIZE sizeof(tern_buffer_ops)
#endif
#ifndef BAD_KIND
#define BAD_KIND TERN_KIND_BUFFER
#endif

#ifdef BAD_UNRESOLVED
/* Defined nowhere: dlopen(RTLD_NOW) must fail to resolve it. */
extern int tern_test_symbol_nobody_defines(void);
#endif
#ifdef BAD_MISSING_DEP
/* Defined in libtern_test_gone.so, which is not on the library path at run time. */
extern int tern_test_gone_value(void);
#endif

static int b_create(tern_ctx *ctx, void **state)
{
    (void)ctx;
#if defined(BAD_UNRESOLVED)
    *state = (void *)(size_t)tern_test_symbol_nobody_defines();
#elif defined(BAD_MISSING_DEP)
    *state = (void *)(size_t)tern_test_gone_value();
#else
    *state = NULL;
#endif
    return TERN_OK;
}
static void b_destroy(void *state) { (void)state; }
static int b_put(void *s, const void *d, size_t n, const tern_record_meta *m, int64_t t)
{
    (void)s, (void)d, (void)n, (void)m, (void)t;
#ifdef BAD_CRASH_PUT
    abort(); /* a buffer that crashes, for the crash report (base/op_watch.h) */
#endif
    return TERN_EUNSUPPORTED;
}
#ifndef BAD_MISSING_OP
static int b_get(void *s, tern_record *o, size_t w, size_t *got, int64_t t)
{
    (void)s, (void)o, (void)w, (void)t;
    *got = 0;
    return TERN_ETIMEDOUT;
}
#endif
static void b_release(void *s, tern_record *r, size_t n) { (void)s, (void)r, (void)n; }
static void b_close(void *s) { (void)s; }
static int b_stats(void *s, tern_buffer_stats *o)
{
    (void)s, (void)o;
    return TERN_OK;
}

static const tern_buffer_ops ops = {
    .size = BAD_OPS_SIZE,
    .create = b_create,
    .destroy = b_destroy,
    .put = b_put,
#ifndef BAD_MISSING_OP
    .get = b_get,
#endif
    .release = b_release,
    .close = b_close,
    .stats = b_stats,
};

#ifdef BAD_RUN_DIR_SETTING
/* a run-directory file on a plugin that is not a buffer (ABI 1.5) */
static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "file", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_IN_RUN_DIR,
                 .def = "\"state.db\""),
    TERN_SETTINGS_END,
};
#endif

static const tern_plugin_descriptor descriptor = {
    .size = BAD_DESC_SIZE,
    .abi_major = BAD_ABI_MAJOR,
    .abi_minor = BAD_ABI_MINOR,
    .kind = BAD_KIND,
    .name = BAD_NAME,
    .version = "0.0.1",
    .summary = "a deliberately broken plugin for the loader tests",
    .ops = &ops,
#ifdef BAD_RUN_DIR_SETTING
    .settings = settings,
#endif
};

#ifndef BAD_NO_ENTRY
TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    (void)h;
    return &descriptor;
}
#else
/* Exports something, but not the entry point. */
TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry_misspelt(const tern_host *h)
{
    (void)h;
    return &descriptor;
}
#endif
