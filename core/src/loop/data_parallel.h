/* data_parallel.h: the trainer ranks of a run on MPI ranks training as one
 * trainer (docs/distributed.md, "Data-parallel trainers").
 *
 * With T trainer ranks (ranks.trainers), rank 1 leads: it alone reads the
 * buffer, reports to the master, publishes weights and saves checkpoints.
 * It sends every other trainer rank each warm-up batch and each RL step's
 * groups (a TERN_MSG_TRAIN order, wire.h), and all T then run the same step:
 *
 *   share    the step's groups split by whole groups (warm-up: pairs),
 *            member i taking [n i / T, n (i+1) / T)
 *   score    each member scores its share (policy, reference), and the
 *            members gather every share's log-probs and entropies, so each
 *            holds the whole batch's
 *   loss     each computes the advantages and the loss over the whole batch
 *            (the same numbers everywhere: the loss is normalised by the
 *            global token count because it sees every token)
 *   backward each runs backward on its share only
 *   sum      the gradients are summed (MPI_Allreduce, through the model's
 *            gradients op, ABI 1.7), the same bits on every member
 *   step     each applies the same optimiser step to the same weights, so
 *            the weights stay identical; checked at every checkpoint
 *
 * Before each collective the members agree on their statuses, so a member
 * whose op failed does not leave the others waiting: every member then
 * gives up the step, and the one that failed reports why.
 *
 * Every function takes dp NULL (one process, or one trainer rank) and then
 * does what a lone trainer needs: the whole batch is its share, nothing is
 * sent or gathered. */
#ifndef TERN_LOOP_DATA_PARALLEL_H
#define TERN_LOOP_DATA_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "channel/link.h"
#include "channel/messages.h"
#include "experience/experience.h"
#include "model/model.h"

typedef struct tern_dp tern_dp;

/* Member `index` of `size` trainer ranks (the trainer ranks' group of `l`
 * made: tern_link_trainers_group); the leader is 0, at world rank `leader`.
 * NULL with a message when out of memory. */
tern_dp *tern_dp_open(tern_link *l, int index, int size, int leader);
void tern_dp_free(tern_dp *dp);
/* Sum the gradients on the device with a transport plugin (its optional
 * join_trainers and sum: nccl) instead of MPI on the host: joins the
 * plugin's trainer group (a collective of the trainer ranks), on the device
 * of `m`'s gradients. The plugin instance outlives dp. */
struct tern_transport_plugin;
int tern_dp_use_transport(tern_dp *dp, const struct tern_transport_plugin *p, const tern_model *m);
/* The run is ending after a failure: a pending collective gives up
 * (TERN_ECLOSED) instead of waiting for a member that will not come. */
void tern_dp_cancel(tern_dp *dp);

/* 1 on the leading trainer rank (and for dp NULL). */
int tern_dp_leads(const tern_dp *dp);
/* This member's index and the number of trainer ranks (0 and 1 for NULL). */
int tern_dp_index(const tern_dp *dp);
int tern_dp_size(const tern_dp *dp);

/* Member i's share [*lo, *hi) of n units split among `parts` members in
 * order, contiguous and as even as can be: [n i / parts, n (i+1) / parts).
 * How trainer ranks split a step's groups and how the master splits a
 * route's responses among the reward ranks (ranks_reward.c). */
static inline void tern_share_of(size_t n, int i, int parts, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)i / (size_t)parts;
    *hi = n * (size_t)(i + 1) / (size_t)parts;
}

/* This member's share [*lo, *hi) of n units (groups, or warm-up pairs). */
void tern_dp_share(const tern_dp *dp, size_t n, size_t *lo, size_t *hi);

/* Every member's status `rc` compared: TERN_OK when all are. When this
 * member failed, rc itself (its message is the caller's to report); when
 * another did, TERN_ECLOSED and no message (that member reports). */
int tern_dp_agree(tern_dp *dp, int rc);

/* Per-sequence arrays arr[i] (seq[i].len floats, i < n; the sequences of
 * unit u are [u per, (u+1) per)): each member filled its share's, and gets
 * every other share's. */
int tern_dp_gather(tern_dp *dp, float **arr, const tern_sequence *seq, size_t n, size_t per);

/* The gradients of model m (its gradients op) summed over the members, in
 * place, before the optimiser step. */
int tern_dp_sum_gradients(tern_dp *dp, const tern_model *m);

/* Every member holds the same weights after RL step `step` (a hash of every
 * tensor compared): TERN_OK, or TERN_ERR with a message. */
int tern_dp_check_same(tern_dp *dp, const tern_model *m, int64_t step);

/* The leader: tell every other member what to do next (order, the RL step,
 * the warm-up job or the step's n groups; NULL and 0 where the order takes
 * none). */
int tern_dp_order(tern_dp *dp, tern_train_order order, int64_t step, const tern_sft_job *sft,
                  const tern_experience *groups, size_t n);
/* A member other than the leader: its next order (free with tern_msg_free).
 * TERN_ECLOSED once its mailbox is closed (the rank winds down). */
int tern_dp_next(tern_dp *dp, tern_train_msg **order);
/* Wake a member waiting in tern_dp_next with TERN_ECLOSED (wind-down). */
void tern_dp_close(tern_dp *dp);

#endif
