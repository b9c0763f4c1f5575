/* loader.c: dlopen one plugin and check its descriptor (see loader.h). */
#include "host/loader.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "config/core_schema.h"
#include "base/errmsg.h"
#include "config/schema.h"
#include "tern/buffer.h"
#include "tern/environment.h"
#include "tern/tool.h"
#include "tern/model.h"
#include "tern/reward.h"
#include "tern/sync.h"
#include "tern/transport.h"

/* ABI 1.0 sizes. When a member is appended to one of these structs, replace
 * its sizeof here by offsetof(the first appended member), so that plugins
 * built against 1.0 keep loading. */
#define DESCRIPTOR_MIN_HEAD (offsetof(tern_plugin_descriptor, kind))
#define DESCRIPTOR_MIN_SIZE (sizeof(tern_plugin_descriptor))

size_t tern_ops_min_size(uint32_t kind)
{
    switch (kind) {
    case TERN_KIND_MODEL: return offsetof(tern_model_ops, special_tokens); /* 1.1 appended it */
    case TERN_KIND_REWARD: return sizeof(tern_reward_ops);
    case TERN_KIND_BUFFER: return offsetof(tern_buffer_ops, advance); /* 1.2 appended it */
    case TERN_KIND_SYNC: return sizeof(tern_sync_ops);
    case TERN_KIND_TRANSPORT: return sizeof(tern_transport_ops);
    case TERN_KIND_ENVIRONMENT: return sizeof(tern_environment_ops);
    case TERN_KIND_TOOL: return sizeof(tern_tool_ops);
    default: return 0;
    }
}

typedef struct op_def {
    size_t offset;
    const char *name;
} op_def;

#define OP(type, member) {offsetof(type, member), #member}
static const op_def model_ops[] = {
    OP(tern_model_ops, create),   OP(tern_model_ops, destroy),    OP(tern_model_ops, free_buffer),
    OP(tern_model_ops, tokenize), OP(tern_model_ops, detokenize), OP(tern_model_ops, generate),
    OP(tern_model_ops, score),    OP(tern_model_ops, backward),   OP(tern_model_ops, step),
    OP(tern_model_ops, tensors),  OP(tern_model_ops, save),       OP(tern_model_ops, load),
    {0, NULL}};
static const op_def reward_ops[] = {OP(tern_reward_ops, create), OP(tern_reward_ops, destroy),
                                    OP(tern_reward_ops, score), {0, NULL}};
static const op_def buffer_ops[] = {
    OP(tern_buffer_ops, create),  OP(tern_buffer_ops, destroy), OP(tern_buffer_ops, put),
    OP(tern_buffer_ops, get),     OP(tern_buffer_ops, release), OP(tern_buffer_ops, close),
    OP(tern_buffer_ops, stats),   {0, NULL}};
static const op_def sync_ops[] = {
    OP(tern_sync_ops, create),        OP(tern_sync_ops, destroy),
    OP(tern_sync_ops, describe),      OP(tern_sync_ops, explorer_plan),
    OP(tern_sync_ops, trainer_publishes), OP(tern_sync_ops, accept), {0, NULL}};
static const op_def transport_ops[] = {
    OP(tern_transport_ops, create),   OP(tern_transport_ops, destroy),
    OP(tern_transport_ops, connect),  OP(tern_transport_ops, publish),
    OP(tern_transport_ops, finish),   OP(tern_transport_ops, receive),
    OP(tern_transport_ops, copy_out), OP(tern_transport_ops, release),
    OP(tern_transport_ops, cancel),   {0, NULL}};
static const op_def environment_ops[] = {
    OP(tern_environment_ops, create), OP(tern_environment_ops, destroy),
    OP(tern_environment_ops, reset),  OP(tern_environment_ops, step),
    OP(tern_environment_ops, close),  {0, NULL}};
static const op_def tool_ops[] = {OP(tern_tool_ops, create), OP(tern_tool_ops, destroy),
                                  OP(tern_tool_ops, describe), OP(tern_tool_ops, call),
                                  {0, NULL}};
#undef OP

static const op_def *required_ops(uint32_t kind)
{
    switch (kind) {
    case TERN_KIND_MODEL: return model_ops;
    case TERN_KIND_REWARD: return reward_ops;
    case TERN_KIND_BUFFER: return buffer_ops;
    case TERN_KIND_SYNC: return sync_ops;
    case TERN_KIND_TRANSPORT: return transport_ops;
    case TERN_KIND_ENVIRONMENT: return environment_ops;
    case TERN_KIND_TOOL: return tool_ops;
    default: return NULL;
    }
}

/* Turn dlerror()'s text into a reason and a fix. */
static int refuse_dlopen(const char *path, const char *err)
{
    if (!err)
        err = "unknown dlopen error";
    const char *colon = strstr(err, ": cannot open shared object file");
    if (colon) {
        /* dlerror names the missing file first; if that is the plugin
         * itself it vanished, else a library it needs is missing. */
        size_t len = (size_t)(colon - err);
        if (len == strlen(path) && strncmp(err, path, len) == 0)
            return tern_errorf(TERN_EIO, "%s: refused: cannot open it (%s); check the file exists "
                               "and is readable", path, err);
        return tern_errorf(TERN_EIO,
                           "%s: refused: a library it depends on is missing (%.*s not found); "
                           "install that library or add its directory to LD_LIBRARY_PATH",
                           path, (int)len, err);
    }
    if (strstr(err, "undefined symbol"))
        return tern_errorf(TERN_EINVAL,
                           "%s: refused: unresolved dependency (%s); link the plugin against the "
                           "library that defines it, or rebuild it for this system",
                           path, err);
    if (strstr(err, "invalid ELF header") || strstr(err, "file too short") ||
        strstr(err, "ELF load command") || strstr(err, "only ET_DYN") ||
        strstr(err, "not an ELF") || strstr(err, "wrong ELF class"))
        return tern_errorf(TERN_EINVAL,
                           "%s: refused: not a loadable shared object for this machine (%s); "
                           "remove it from the plugin path or rebuild it as a plugin", path, err);
    return tern_errorf(TERN_EINVAL, "%s: refused: cannot load it (%s); rebuild the plugin or "
                       "remove it from the plugin path", path, err);
}

static int valid_name(const char *n)
{
    if (!n || !*n || strlen(n) > 64)
        return 0;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

/* Check the descriptor; TERN_OK or a refusal message (without the path). */
static int check_descriptor(const tern_plugin_descriptor *d)
{
    if (d->size < DESCRIPTOR_MIN_HEAD)
        return tern_errorf(TERN_EINVAL,
                           "descriptor size %zu is too small to hold even the ABI version; "
                           "set .size = sizeof(tern_plugin_descriptor)", d->size);
    if (d->abi_major != TERN_ABI_MAJOR)
        return tern_errorf(TERN_EINVAL,
                           "built for ABI major %u, this tern %s speaks ABI %d; rebuild the plugin "
                           "against the tern %d SDK headers", d->abi_major, TERN_VERSION_STRING,
                           TERN_ABI_MAJOR, TERN_ABI_MAJOR);
    if (d->abi_minor > TERN_ABI_MINOR)
        return tern_errorf(TERN_EINVAL,
                           "built for ABI %u.%u, newer than this tern's %d.%d; upgrade tern or "
                           "rebuild the plugin against these headers", d->abi_major, d->abi_minor,
                           TERN_ABI_MAJOR, TERN_ABI_MINOR);
    if (d->size < DESCRIPTOR_MIN_SIZE)
        return tern_errorf(TERN_EINVAL,
                           "descriptor size %zu is smaller than ABI %d.0's %zu; set .size = "
                           "sizeof(tern_plugin_descriptor) and rebuild",
                           d->size, TERN_ABI_MAJOR, (size_t)DESCRIPTOR_MIN_SIZE);
    if (!valid_name(d->name))
        return tern_errorf(TERN_EINVAL, "plugin name '%s' is not 1-64 characters of [a-z0-9_]; "
                           "fix .name in the descriptor", d->name ? d->name : "(null)");
    const op_def *req = required_ops(d->kind);
    if (!req)
        return tern_errorf(TERN_EINVAL, "plugin '%s' has unknown kind %u; use TERN_KIND_MODEL, "
                           "_REWARD, _BUFFER, _SYNC or _TRANSPORT", d->name, d->kind);
    const char *kind = tern_kind_name(d->kind);
    if (!d->ops)
        return tern_errorf(TERN_EINVAL, "plugin '%s' has no ops table; point .ops at its "
                           "tern_%s_ops", d->name, kind);
    size_t ops_size = *(const size_t *)d->ops;
    if (ops_size < tern_ops_min_size(d->kind))
        return tern_errorf(TERN_EINVAL,
                           "plugin '%s': ops table size %zu is smaller than ABI %d.0's %zu; set "
                           ".size = sizeof(tern_%s_ops) and rebuild", d->name, ops_size,
                           TERN_ABI_MAJOR, tern_ops_min_size(d->kind), kind);
    for (const op_def *op = req; op->name; op++) {
        void *fn;
        memcpy(&fn, (const char *)d->ops + op->offset, sizeof fn);
        if (!fn)
            return tern_errorf(TERN_EINVAL,
                               "plugin '%s' lacks the required op '%s' of tern_%s_ops; implement "
                               "it (see tern/%s.h)", d->name, op->name, kind, kind);
    }
    if (tern_spec_validate(d->settings) != TERN_OK) {
        tern_error_prefix("plugin '%s' declares invalid settings: ", d->name);
        return TERN_EINVAL;
    }
    /* a run checks the other kinds' instances before its directory exists */
    for (const tern_setting_spec *s = d->settings; s && s->name; s = tern_spec_next(s))
        if ((s->flags & TERN_SETTING_IN_RUN_DIR) && d->kind != TERN_KIND_BUFFER)
            return tern_errorf(TERN_EINVAL, "plugin '%s' declares setting '%s' "
                               "TERN_SETTING_IN_RUN_DIR, which only buffer plugins may use; give "
                               "it a default of its own instead", d->name, s->name);
    return TERN_OK;
}

int tern_plugin_open(const char *path, const tern_host *host, tern_plugin **out, char **name_out,
                     uint32_t *kind_out)
{
    *out = NULL;
    *name_out = NULL;
    *kind_out = 0;
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return refuse_dlopen(path, dlerror());

    /* dlsym returns void*; POSIX guarantees it converts to a function pointer */
    void *sym = dlsym(h, TERN_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        dlclose(h);
        return tern_errorf(TERN_EINVAL,
                           "%s: refused: no '%s' symbol, so it is not a tern plugin; export the "
                           "entry point with TERN_PLUGIN_EXPORT (see tern/plugin.h)", path,
                           TERN_PLUGIN_ENTRY_SYMBOL);
    }
    tern_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const tern_plugin_descriptor *d = entry(host);
    if (!d) {
        dlclose(h);
        return tern_errorf(TERN_EINVAL, "%s: refused: its entry point returned no descriptor "
                           "(the plugin's log lines above say why)", path);
    }
    int rc = check_descriptor(d);
    if (rc != TERN_OK) {
        if (d->size >= DESCRIPTOR_MIN_SIZE && d->abi_major == TERN_ABI_MAJOR &&
            valid_name(d->name)) {
            *name_out = strdup(d->name);
            *kind_out = d->kind;
        }
        tern_error_prefix("%s: refused: ", path);
        dlclose(h);
        return rc;
    }
    tern_plugin *p = calloc(1, sizeof *p);
    char *pathcopy = strdup(path);
    if (!p || !pathcopy) {
        free(p);
        free(pathcopy);
        dlclose(h);
        return tern_errorf(TERN_ENOMEM, "%s: out of memory", path);
    }
    p->path = pathcopy;
    p->handle = h;
    p->desc = d;
    *out = p;
    return TERN_OK;
}

/* ThreadSanitizer's atexit interceptor runs handlers that a plugin
 * registered (its libraries' destructors) after tern unloaded it, and
 * crashes: a TSan build keeps plugins loaded until the process ends. */
#if defined(__SANITIZE_THREAD__)
#define KEEP_PLUGINS_LOADED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KEEP_PLUGINS_LOADED 1
#endif
#endif

void tern_plugin_close(tern_plugin *p)
{
    if (!p)
        return;
#ifndef KEEP_PLUGINS_LOADED
    dlclose(p->handle);
#endif
    free(p->path);
    free(p);
}
