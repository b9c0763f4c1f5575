/*
 * tern/plugin.h: the entry point and the descriptor every plugin exports.
 *
 * A plugin is one shared object (one folder, one .so) that exports exactly one
 * symbol, `tern_plugin_entry`; build it with -fvisibility=hidden so nothing
 * else leaks. The core loads it with dlopen(RTLD_NOW | RTLD_LOCAL), calls the
 * entry point once with the host table, and checks the descriptor it returns:
 *
 *   #include <tern/plugin.h>
 *   #include <tern/buffer.h>
 *   static const tern_host *host;
 *   static const tern_buffer_ops ops = { .size = sizeof ops, .create = ..., ... };
 *   static const tern_plugin_descriptor desc = {
 *       .size = sizeof desc, .abi_major = TERN_ABI_MAJOR, .abi_minor = TERN_ABI_MINOR,
 *       .kind = TERN_KIND_BUFFER, .name = "fifo", .version = "1.0.0",
 *       .summary = "bounded blocking FIFO", .ops = &ops, .settings = settings };
 *   TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
 *   { host = h; return &desc; }
 *
 * The core refuses the file, with one line naming the file, the reason and the
 * fix, when: the entry symbol is missing; abi_major differs from the core's;
 * abi_minor is newer than the core's; descriptor or ops `size` is smaller than
 * ABI 1.0's; the kind is unknown or not the one the config slot asks for; a
 * required op is NULL; the name is empty or not [a-z0-9_]+; another file on the
 * search path already provides the name for the same kind (the first one
 * found wins; plugins of different kinds may share a name).
 */
#ifndef TERN_PLUGIN_H
#define TERN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"
#include "settings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a plugin provides; the ops table behind descriptor.ops is that kind's
 * (tern_model_ops, tern_reward_ops, tern_buffer_ops, tern_sync_ops,
 * tern_transport_ops, tern_environment_ops, tern_tool_ops). */
typedef enum tern_plugin_kind {
    TERN_KIND_MODEL = 1,
    TERN_KIND_REWARD = 2,
    TERN_KIND_BUFFER = 3,
    TERN_KIND_SYNC = 4,
    TERN_KIND_TRANSPORT = 5, /* ABI 1.8: a weight transport (tern/transport.h) */
    TERN_KIND_ENVIRONMENT = 6, /* ABI 1.13: what a trajectory talks to (tern/environment.h) */
    TERN_KIND_TOOL = 7         /* ABI 1.14: a function the policy may call (tern/tool.h) */
} tern_plugin_kind;

/* Capability flags (descriptor.caps). Unknown bits are ignored by the core. */
#define TERN_CAP_THREAD_SAFE 0x1ull /* ops may be called concurrently on one instance */
#define TERN_CAP_GPU 0x2ull         /* needs a CUDA device */
/* A buffer that may hand a record out more than once, in an order of its own
 * choosing (a replay buffer: `priority`). ABI minor 2. */
#define TERN_CAP_REPLAY 0x4ull

typedef struct tern_plugin_descriptor {
    size_t size;        /* sizeof(tern_plugin_descriptor) as built */
    uint32_t abi_major; /* TERN_ABI_MAJOR as built */
    uint32_t abi_minor; /* TERN_ABI_MINOR as built */
    uint32_t kind;      /* a tern_plugin_kind */
    const char *name;   /* the name configs use: [a-z0-9_]+, unique on the path among
                           the plugins of its kind */
    const char *version; /* the plugin's own version, e.g. "1.2.0" */
    const char *summary; /* one line for `tern plugins` */
    uint64_t caps;       /* TERN_CAP_* */
    const void *ops;     /* the kind's ops table; starts with its size */
    /* The keys of the plugin's config group, ended by TERN_SETTINGS_END; NULL
     * means the plugin takes no settings (any key in its group is an error). */
    const tern_setting_spec *settings;
} tern_plugin_descriptor;

/* The entry point's name and type. The descriptor (and everything it points
 * to) must stay valid while the library is loaded; static const data is the
 * normal way. The entry point may be called more than once and must return
 * the same descriptor; it must not fail for lack of a ctx (there is none yet),
 * and returns NULL only if the plugin cannot work with this host at all (after
 * host->log saying why). */
#define TERN_PLUGIN_ENTRY_SYMBOL "tern_plugin_entry"
typedef const tern_plugin_descriptor *(*tern_plugin_entry_fn)(const tern_host *host);

#if defined(__GNUC__)
#define TERN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define TERN_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
}
#endif
#endif /* TERN_PLUGIN_H */
