/* ranks.c: a run launched on several MPI ranks (see ranks.h): the layout,
 * and which side of the run this rank takes. */
#include "loop/ranks.h"

#include <jansson.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "loop/master_state.h"
#include "rundir/trace.h"

int tern_ranks_layout(const tern_run *run, tern_ranks *r)
{
    int size = r->size;
    uint32_t t = run->set.rank_trainers ? run->set.rank_trainers : 1;
    uint32_t want = run->set.rank_explorers, rw = run->set.rank_rewards;
    /* the master, the trainers, one explorer rank, the reward ranks */
    uint32_t least = 1 + t + 1 + rw;
    if ((uint32_t)size < least)
        return tern_errorf(TERN_ECONFIG, "a run on MPI ranks needs at least %u: the master "
                           "(rank 0), %u trainer rank%s, an explorer rank%s; %d launched: use "
                           "mpirun -np %u or more%s", least, t, t == 1 ? "" : "s",
                           rw ? " and the reward ranks" : "", size, least,
                           t == 1 && !rw ? " (or run without mpirun: one process runs every "
                                           "role)"
                                         : ", or lower ranks.trainers or ranks.rewards");
    uint32_t avail = (uint32_t)size - 1 - t - rw;
    if (want && 1 + t + want + rw != (uint32_t)size)
        return tern_errorf(TERN_ECONFIG, "ranks.trainers = %u, ranks.explorers = %u and "
                           "ranks.rewards = %u ask for %u ranks (the master and those) but %d "
                           "were launched: launch mpirun -np %u, or set ranks.explorers = %u "
                           "(or 0: every rank left)", t, want, rw, 1 + t + want + rw, size,
                           1 + t + want + rw, avail);
    uint32_t e = want ? want : avail;
    if (e > run->n_explorers)
        return tern_errorf(TERN_ECONFIG, "%u explorer ranks but the sync plugin runs %u "
                           "explorer%s: a rank would have nothing to do; launch mpirun -np %u, "
                           "or raise the sync plugin's explorers", e, run->n_explorers,
                           run->n_explorers == 1 ? "" : "s", 1 + t + run->n_explorers + rw);
    const tern_transport_ops *tp = run->transport_plugin.ops;
    int device_sum = tp && TERN_HAS(tp, sum) && tp->join_trainers && tp->sum &&
                     tern_model_has_device_gradients(&run->policy);
    if (t > 1 && !device_sum && !tern_model_has_gradients(&run->policy))
        return tern_errorf(TERN_ECONFIG, "ranks.trainers = %u: data-parallel trainers sum their "
                           "gradients, but the model plugin does not hand them out on the host "
                           "(the gradients op of ABI 1.7), and no transport plugin sums them on "
                           "its device: for transformer_cuda use method = \"nccl\" with "
                           "transport = { plugin = \"nccl\"; }, else set ranks.trainers = 1",
                           t);
    r->trainer_ranks = t;
    r->explorer_ranks = e;
    r->reward_ranks = rw;
    r->role = r->rank == 0                                  ? TERN_RANK_MASTER
              : r->rank <= (int)t                           ? TERN_RANK_TRAINER
              : r->rank < tern_rank_rewards_at(r)           ? TERN_RANK_EXPLORER
                                                            : TERN_RANK_REWARD;
    return TERN_OK;
}

/* The SETUP message's one format, for both sides. */
#define SETUP_FORMAT "{s:b, s:s, s:b, s:{s:I, s:I, s:b, s:s}, s:I, s:s}"

char *tern_ranks_setup_text(const tern_run *run, int ok)
{
    const tern_resume_point *r = &run->resume;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_t *o = json_pack(SETUP_FORMAT, "ok", ok, "dir", run->dir, "resuming", run->resuming,
                          "resume", "sft_step", (json_int_t)r->sft_step, "step",
                          (json_int_t)r->step, "rl_started", r->rl_started, "checkpoint",
                          r->checkpoint, "clock_ns", (json_int_t)tern_trace_clock(), "host", host);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

int tern_ranks_setup_read(tern_run *run, const void *text, size_t len, int64_t *clock_offset)
{
    int64_t now = (int64_t)tern_trace_clock();
    json_error_t err;
    json_t *o = len ? json_loadb(text, len, 0, &err) : NULL;
    int ok = 0, resuming = 0, rl_started = 0;
    const char *dir = NULL, *ckpt = NULL, *host_name = NULL;
    json_int_t sft_step = 0, step = 0, clock = 0;
    if (!o || json_unpack(o, SETUP_FORMAT, "ok", &ok, "dir", &dir, "resuming", &resuming,
                          "resume", "sft_step", &sft_step, "step", &step, "rl_started",
                          &rl_started, "checkpoint", &ckpt, "clock_ns", &clock, "host",
                          &host_name) != 0 ||
        !ok) {
        json_decref(o);
        return TERN_ECLOSED;
    }
    snprintf(run->dir, sizeof run->dir, "%s", dir);
    run->resuming = resuming;
    run->resume.sft_step = sft_step;
    run->resume.step = step;
    run->resume.rl_started = rl_started;
    snprintf(run->resume.checkpoint, sizeof run->resume.checkpoint, "%s", ckpt);
    /* one clock on one machine (CLOCK_MONOTONIC is the kernel's); across
     * machines the master's at sending, less ours at receiving (the message's
     * time in flight, at most a few ms, is the error) */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    *clock_offset = host_name && strcmp(host, host_name) == 0 ? 0 : (int64_t)clock - now;
    json_decref(o);
    return TERN_OK;
}

const char *tern_rank_name(const tern_ranks *r, int rank)
{
    if (rank == 0)
        return "the master";
    if (!r->trainer_ranks)
        return "a worker rank"; /* the layout is not known */
    if (rank == TERN_RANK_TRAINER_AT)
        return r->trainer_ranks > 1 ? "the leading trainer" : "the trainer";
    if (rank <= (int)r->trainer_ranks)
        return "a trainer rank";
    if (rank >= tern_rank_rewards_at(r))
        return "a reward rank";
    return "an explorer rank";
}

#ifndef TERN_HAVE_MPI

int tern_ranks_run(tern_session *s, const tern_loop_options *o, tern_diag *d)
{
    (void)s, (void)o, (void)d;
    int rank = 0, size = tern_link_launched(&rank);
    return tern_errorf(TERN_ECONFIG, "launched on %d ranks (rank %d), but this tern was built "
                       "without MPI: install Open MPI (Debian: apt-get install openmpi-bin "
                       "libopenmpi-dev) and rebuild (CMake finds it), or run without mpirun: one "
                       "process runs every role", size, rank);
}

#else

int tern_ranks_run(tern_session *s, const tern_loop_options *o, tern_diag *d)
{
    tern_ranks *rk = calloc(1, sizeof *rk);
    if (!rk)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    rk->link = tern_link_open();
    if (!rk->link) {
        free(rk);
        return TERN_ERR;
    }
    rk->rank = tern_link_rank(rk->link);
    rk->size = tern_link_size(rk->link);
    /* until the layout is read from the config (tern_ranks_layout) */
    rk->role = rk->rank == 0 ? TERN_RANK_MASTER : TERN_RANK_UNSET;
    int rc = rk->role == TERN_RANK_MASTER ? tern_master_run(s, o, d, rk)
                                          : tern_ranks_worker(s, o, rk);
    tern_link_close(rk->link);
    free(rk);
    return rc;
}

#endif
