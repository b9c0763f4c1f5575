/* transport_mpi.h: the `mpi` weight transport (docs/distributed.md
 * "Weights"): the trainer rank broadcasts each published version to the
 * explorer ranks over the link's weights group (tern_link_weights_group),
 * nonblocking with one publish in flight, and each explorer rank keeps the
 * versions it received in a local versioned store its explorers load from,
 * as in one process. Built with MPI (TERN_HAVE_MPI). */
#ifndef TERN_CHANNEL_TRANSPORT_MPI_H
#define TERN_CHANNEL_TRANSPORT_MPI_H

#include "channel/link.h"
#include "model/model.h"
#include "rundir/trace.h"
#include "weights/transport.h"
#include "weights/weights.h"

#ifdef TERN_HAVE_MPI
/* The trainer rank's store: publish copies the weights and returns; a writer
 * thread broadcasts them. Freeing it ends the stream for every receiver.
 * NULL with a message on failure. */
tern_weight_store *tern_transport_mpi_sender(tern_link *link, tern_trace *trace);
/* An explorer rank's store, receiving versions of a model laid out like
 * `like` (one of the rank's explorer models) until the trainer rank's store
 * is freed; freeing it waits for that end. NULL with a message on failure. */
tern_weight_store *tern_transport_mpi_receiver(tern_link *link, const tern_model *like,
                                               tern_trace *trace);
#endif

#endif
