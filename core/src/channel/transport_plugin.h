/* transport_plugin.h: weight stores over a transport plugin (tern/transport.h,
 * ABI 1.8), such as `nccl`: the trainer rank publishes its model's device
 * tensors through the plugin, and each explorer rank's receiver thread takes
 * every version into the plugin's memory, where its explorers copy it into
 * their models' device tensors (docs/sync.md "Weight transports"). The group
 * is the link's weights group; the plugin bootstraps over it (tern_link_bcast).
 * Built with MPI (TERN_HAVE_MPI): a plugin transport is for runs on ranks. */
#ifndef TERN_CHANNEL_TRANSPORT_PLUGIN_H
#define TERN_CHANNEL_TRANSPORT_PLUGIN_H

#include "channel/link.h"
#include "model/model.h"
#include "rundir/trace.h"
#include "tern/transport.h"
#include "weights/weights.h"

/* The plugin instance: its ops, its state (owned by the session, which
 * destroys it) and its name, the run's `method`. */
typedef struct tern_transport_plugin {
    const tern_transport_ops *ops;
    void *state;
    const char *name;
} tern_transport_plugin;

#ifdef TERN_HAVE_MPI
/* The trainer rank's store: connects as the sender (a collective with the
 * explorer ranks' receivers), with `model` (the policy) naming the device.
 * Freeing it finishes the stream. NULL with a message on failure. */
tern_weight_store *tern_transport_plugin_sender(tern_link *link, const tern_transport_plugin *p,
                                                const tern_model *model, tern_trace *trace);
/* An explorer rank's store, for models like `like` (one of the rank's
 * explorer models, naming the device): connects as a receiver and starts
 * the receiver thread. Freeing it waits for the end of the stream (or for
 * close). NULL with a message on failure. */
tern_weight_store *tern_transport_plugin_receiver(tern_link *link, const tern_transport_plugin *p,
                                                  const tern_model *like, tern_trace *trace);
#endif

#endif
