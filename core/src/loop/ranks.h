/* ranks.h: one run across the ranks of an MPI job (docs/distributed.md).
 *
 * Rank 0 is the master: the config's checks, the run directory, dealing,
 * rewards, the buffer, metrics, evaluation and checkpoints, as in one
 * process. Ranks 1 .. T are the trainer ranks (T = ranks.trainers): rank 1
 * leads (it reads the buffer, publishes, saves and reports) and shares each
 * step's groups with the others (data_parallel.h); ranks T+1 .. T+E the
 * explorer ranks, which host the sync plugin's explorers round-robin
 * (explorer i on rank T + 1 + i mod E); the last R ranks (ranks.rewards)
 * score the responses the master sends them (ranks_reward.c). The roles run the same code as in one process: each rank's
 * queues are filled and drained by pump threads that carry the messages
 * (channel/wire.h) over the link (channel/link.h); the trainer reaches the
 * master's buffer through a forwarding buffer (buffer_forward.c) and sends
 * weights to the explorer ranks by broadcast (channel/transport_mpi.h). */
#ifndef TERN_LOOP_RANKS_H
#define TERN_LOOP_RANKS_H

#include <pthread.h>

#include "channel/link.h"
#include "config/diag.h"
#include "host/session.h"
#include "loop/master.h"
#include "loop/run.h"

typedef enum tern_rank_role {
    TERN_RANK_UNSET = 0, /* a worker rank before the layout is read */
    TERN_RANK_MASTER = 1,
    TERN_RANK_TRAINER = 2,
    TERN_RANK_EXPLORER = 3,
    TERN_RANK_REWARD = 4
} tern_rank_role;

/* The leading trainer rank (the only one the master talks to). */
enum { TERN_RANK_TRAINER_AT = 1 };

typedef struct tern_ranks {
    tern_link *link;
    int rank, size;
    tern_rank_role role;
    uint32_t trainer_ranks;     /* T */
    uint32_t explorer_ranks;    /* E */
    uint32_t reward_ranks;      /* R: the last ranks */
    /* the master's pumps (ranks_master.c) */
    pthread_t *threads;
    size_t n_threads;
    int explorers_started;      /* the job pumps run (RL began) */
    volatile int ending;        /* the pumps stop */
} tern_ranks;

/* The first explorer rank. */
static inline int tern_rank_explorers_at(const tern_ranks *r)
{
    return TERN_RANK_TRAINER_AT + (int)r->trainer_ranks;
}

/* What rank r is, for messages: "the master", "the trainer", "trainer rank
 * 2", "an explorer rank". */
const char *tern_rank_name(const tern_ranks *r, int rank);

/* The first reward-worker rank (== size when there are none). */
static inline int tern_rank_rewards_at(const tern_ranks *r)
{
    return tern_rank_explorers_at(r) + (int)r->explorer_ranks;
}

/* The rank that hosts explorer i. */
static inline int tern_rank_of_explorer(const tern_ranks *r, uint32_t i)
{
    return tern_rank_explorers_at(r) + (int)(i % r->explorer_ranks);
}

/* The SETUP message (master -> workers) as JSON text: whether the run
 * starts (`ok`), its directory, resume point and checkpoint, the master's
 * trace clock and host. A new string (NULL out of memory). */
char *tern_ranks_setup_text(const tern_run *run, int ok);
/* Read one into run (dir, resuming, resume) and *clock_offset (the
 * master's trace clock less ours, 0 on the same host, where every process
 * shares the kernel's monotonic clock). TERN_OK; TERN_ECLOSED when the run
 * does not start (not ok, or not a SETUP). */
int tern_ranks_setup_read(tern_run *run, const void *text, size_t len, int64_t *clock_offset);

/* `tern run` launched on several ranks (tern_link_launched > 1): this rank's
 * part of the run. Returns as tern_loop_run does; only rank 0 reports the
 * run's problems (the others' statuses say the run failed). */
int tern_ranks_run(tern_session *s, const tern_loop_options *o, tern_diag *d);

/* The rank layout for `size` ranks and the run's settings, sync plugin
 * (run->n_explorers) and policy model (the gradients op when T > 1) into
 * r->trainer_ranks and r->explorer_ranks, and this rank's role: TERN_ECONFIG
 * with a message when they do not fit. */
int tern_ranks_layout(const tern_run *run, tern_ranks *r);

/* A worker rank's part (ranks_worker.c): the trainer or explorer roles of
 * this rank, fed by the master until it says the run is over. */
int tern_ranks_worker(tern_session *s, const tern_loop_options *o, tern_ranks *rk);

/* ---- the master's side (ranks_master.c) ---------------------------------------- */

/* Send every worker the master's resolved config, which each compares with
 * its own before its checks (a rank launched with other -o options or
 * another file refuses to start, naming the first setting that differs). */
int tern_ranks_master_send_config(tern_run *run);
/* Every rank's checks agree (tern_link_agree on `rc`, this rank's): rc, or
 * TERN_ERR naming the worker rank that failed (it printed why). */
int tern_ranks_master_agree(tern_run *run, int rc);
/* Send each worker the run directory and resume point, or (rc failed) that
 * the run does not start; then the weights group. */
int tern_ranks_master_setup(tern_run *run, int rc);
/* Tell the workers where the run is (after the run directory is open) and
 * start the pumps: the inbox, the warm-up batches and the buffer server. */
struct master;
int tern_ranks_master_start(tern_run *run, struct master *ms);
/* RL began: start handing batches to the explorer ranks. */
int tern_ranks_master_start_explorers(tern_run *run);
/* Every batch the run needs is dealt (`dealt` 1), or more are needed again:
 * tell the explorer ranks. */
void tern_ranks_master_dealt(tern_run *run, int dealt);
/* Ask the trainer rank to stop after its step (a stop signal). */
void tern_ranks_master_stop(tern_run *run);
/* The run is over (status rc): tell every worker, stop the pumps, take in
 * the workers' trace events. */
void tern_ranks_master_end(tern_run *run, int rc);

/* ---- reward-worker ranks (ranks_reward.c) ----------------------------------------- */

/* The master: score the reward routes on the reward ranks from now on (the
 * rewarder's remote hook). TERN_ENOMEM only. */
int tern_ranks_rewards_remote(tern_run *run);
/* Undo it and free what it kept (after the run). */
void tern_ranks_rewards_local(tern_run *run);
/* A reward rank's thread: the master's asks until the link closes them. */
void *tern_ranks_reward_main(void *arg);

/* ---- the trainer rank's buffer (buffer_forward.c) -------------------------------- */

/* Buffer ops that ask the master's buffer over the link (get, release,
 * advance); the master side serves them with tern_ranks_serve_buffer. */
extern const tern_buffer_ops tern_buffer_forward_ops;
void *tern_buffer_forward_new(tern_link *link);
/* Serve one request from the trainer rank (bytes it sent) on the real
 * buffer; TERN_OK or the failure to report. */
int tern_ranks_serve_buffer(tern_run *run, const void *ask, size_t len);

#endif
