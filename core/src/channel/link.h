/* link.h: this process's place among the ranks of an MPI job, and the
 * messages between ranks (docs/distributed.md "Messages").
 *
 * One thread per rank, the post office, receives every message sent to the
 * rank and files it in the mailbox of its tag; the roles wait on a mailbox's
 * condition variable, never inside MPI. MPI is only ever polled (MPI_Improbe,
 * MPI_Test) with a 1 ms sleep between looks: a blocking MPI call spins, and on
 * a machine with fewer cores than ranks spinning roles starve each other.
 *
 * Built when CMake finds MPI (TERN_HAVE_MPI); tern_link_launched works in
 * every build, so a build without MPI can say so when mpirun starts it. */
#ifndef TERN_CHANNEL_LINK_H
#define TERN_CHANNEL_LINK_H

#include <stddef.h>
#include <stdint.h>

/* How many ranks the launcher (mpirun, srun, any PMI/PMIx launcher) started
 * and which one this process is, from the launcher's environment; 1 and 0
 * when no launcher started it. */
int tern_link_launched(int *rank);

/* 1 when this build has MPI rank support. */
int tern_link_built(void);

/* What a message between ranks is for: each tag has its own mailbox. */
typedef enum tern_link_tag {
    TERN_TAG_SETUP = 1,   /* master -> workers: the run directory and resume point (JSON) */
    TERN_TAG_READY,       /* worker -> master: set up, or the failure that stopped it (JSON) */
    TERN_TAG_INBOX,       /* any role -> master: a role message (wire.h) */
    TERN_TAG_JOB_WANTED,  /* explorer rank -> master: send one more batch (empty) */
    TERN_TAG_EXPLORE,     /* master -> explorer rank: a batch (wire.h), empty: no more */
    TERN_TAG_SFT,         /* master -> trainer rank: a warm-up batch (wire.h), empty: no more */
    TERN_TAG_BUFFER_ASK,  /* trainer rank -> master: a buffer op (buffer_forward.c) */
    TERN_TAG_BUFFER_ANSWER, /* master -> trainer rank: its answer */
    TERN_TAG_CONTROL,     /* master -> workers: stop, end (JSON) */
    TERN_TAG_TRACE,       /* worker -> master at the end: its trace events (JSON) */
    TERN_TAG_LOG,         /* worker -> master: a log line for log.txt (text) */
    TERN_TAG_TRAIN,       /* leading trainer -> trainer ranks: an order (wire.h) */
    TERN_TAG_REWARD_ASK,  /* master -> reward rank: responses to score (wire.h) */
    TERN_TAG_REWARD_ANSWER, /* reward rank -> master: the verdicts (wire.h) */
    TERN_TAG_CONFIG,      /* master -> workers at start: its resolved config (text) */
    TERN_TAG_COUNT
} tern_link_tag;

typedef struct tern_link tern_link;

/* Start MPI (MPI_Init_thread, MPI_THREAD_MULTIPLE) and the post office.
 * NULL with a message on failure (no MPI in this build, or no thread
 * support in the MPI library). */
tern_link *tern_link_open(void);
int tern_link_rank(const tern_link *l);
int tern_link_size(const tern_link *l);

/* Send `len` bytes to rank `to` under `tag`. Returns once the bytes may be
 * reused. TERN_ECLOSED after tern_link_close started, TERN_EINVAL for a
 * message over 2 GiB. */
int tern_link_send(tern_link *l, int to, tern_link_tag tag, const void *buf, size_t len);

/* The oldest message under `tag`, waiting up to timeout_ms (-1: no limit).
 * *buf is malloc'd (NULL for an empty message), *from the sender. TERN_OK,
 * TERN_ETIMEDOUT, TERN_ECLOSED once the link is shut and the mailbox empty. */
int tern_link_recv(tern_link *l, tern_link_tag tag, int timeout_ms, void **buf, size_t *len,
                   int *from);

/* Wake every waiter of `tag` with TERN_ECLOSED once its mailbox is empty
 * (a role that will not read it any more). */
void tern_link_close_tag(tern_link *l, tern_link_tag tag);

/* Every rank agrees on a status: the first failure in rank order, or TERN_OK.
 * A collective: each rank calls it once at the same point. *rank gets the
 * rank whose status is returned (-1 when all are TERN_OK). */
int tern_link_agree(tern_link *l, int status, int *rank);

/* Weight broadcasts among the trainer (root) and the explorer ranks: a
 * communicator made at the same point on every rank (a collective; `member`
 * says whether this rank takes part, `root` is the world rank of the root). */
int tern_link_weights_group(tern_link *l, int member, int root);
/* This rank's index in the weights group (the root is 0) and the group's
 * size; TERN_EINVAL when this rank is not a member. */
int tern_link_weights_place(tern_link *l, int *index, int *size);
/* Broadcast len bytes from the group's root (in chunks of at most 1 GiB),
 * polling: every member calls it in the same order. `cancel` (may be NULL)
 * is read between polls: once set the wait gives up with TERN_ECLOSED (the
 * job is ending; MPI cannot take a started broadcast back). */
int tern_link_bcast(tern_link *l, void *buf, size_t len, const volatile int *cancel);

/* ---- the data-parallel trainer ranks (loop/data_parallel.h) ---------------------

 * The trainer ranks' group: made at the same point on every rank (a
 * collective; `member` says whether this rank is a trainer rank). Members
 * keep world order, so the leading trainer (the lowest rank) is 0. */
int tern_link_trainers_group(tern_link *l, int member);
/* Collectives among the trainer ranks, polling (every member calls them in
 * the same order). `cancel` (may be NULL) is read between polls: once set
 * the wait gives up with TERN_ECLOSED (the run is ending). */
/* Every member learns the first failing member: TERN_OK when every status
 * is, else (*who its index in the group) that member's status. */
int tern_link_trainers_agree(tern_link *l, int status, int *who, const volatile int *cancel);
/* In place: buf holds counts[i] floats of member i from displs[i]; each
 * member fills its own part and gets the others'. */
int tern_link_trainers_gather(tern_link *l, float *buf, const int *counts, const int *displs,
                              const volatile int *cancel);
/* In place: buf[0..n) becomes the sum over the members, the same bits on
 * every member. Blocking (MPI_Allreduce), not polled: call it right after
 * tern_link_trainers_agree, when every member is there; `cancel` is not
 * read. */
int tern_link_trainers_sum(tern_link *l, float *buf, size_t n, const volatile int *cancel);
/* Whether every member holds the same `value` (*same 1) or not (0). */
int tern_link_trainers_same(tern_link *l, uint64_t value, int *same,
                            const volatile int *cancel);
/* Broadcast len bytes from the leading trainer (member 0), blocking: a
 * transport plugin's bootstrap (join_trainers). */
int tern_link_trainers_bcast(tern_link *l, void *buf, size_t len);
/* This rank's index among the trainer ranks and their number. */
int tern_link_trainers_place(tern_link *l, int *index, int *size);

/* Wait until every rank calls this (a barrier, polling), stop the post
 * office and finalize MPI. */
void tern_link_close(tern_link *l);

/* End every rank of the job now with `code` (MPI_Abort): for a rank that
 * cannot reach the others any more. */
_Noreturn void tern_link_abort(tern_link *l, int code);

#endif
