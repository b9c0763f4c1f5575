/* ranks.c: a run launched on several MPI ranks (see ranks.h): the layout,
 * and which side of the run this rank takes. */
#include "loop/ranks.h"

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "loop/master_state.h"

int tern_ranks_layout(const tern_run *run, tern_ranks *r)
{
    int size = r->size;
    uint32_t t = run->set.rank_trainers ? run->set.rank_trainers : 1;
    uint32_t want = run->set.rank_explorers;
    uint32_t least = 1 + t + 1; /* the master, the trainers, one explorer rank */
    if ((uint32_t)size < least)
        return tern_errorf(TERN_ECONFIG, "a run on MPI ranks needs at least %u: the master "
                           "(rank 0), %u trainer rank%s and an explorer rank; %d launched: use "
                           "mpirun -np %u or more%s", least, t, t == 1 ? "" : "s", size, least,
                           t == 1 ? " (or run without mpirun: one process runs every role)"
                                  : ", or lower ranks.trainers");
    uint32_t avail = (uint32_t)size - 1 - t;
    if (want && 1 + t + want != (uint32_t)size)
        return tern_errorf(TERN_ECONFIG, "ranks.trainers = %u and ranks.explorers = %u ask for "
                           "%u ranks (the master, the trainers and the explorer ranks) but %d "
                           "were launched: launch mpirun -np %u, or set ranks.explorers = %u "
                           "(or 0: every rank after the trainers')", t, want, 1 + t + want,
                           size, 1 + t + want, avail);
    uint32_t e = want ? want : avail;
    if (e > run->n_explorers)
        return tern_errorf(TERN_ECONFIG, "%u explorer ranks but the sync plugin runs %u "
                           "explorer%s: a rank would have nothing to do; launch mpirun -np %u, "
                           "or raise the sync plugin's explorers", e, run->n_explorers,
                           run->n_explorers == 1 ? "" : "s", 1 + t + run->n_explorers);
    if (t > 1 && !tern_model_has_gradients(&run->policy))
        return tern_errorf(TERN_ECONFIG, "ranks.trainers = %u: data-parallel trainers sum their "
                           "gradients, but the model plugin does not expose them (the gradients "
                           "op of ABI 1.7; transformer_cuda keeps them on the GPU): set "
                           "ranks.trainers = 1, or use the transformer plugin", t);
    r->trainer_ranks = t;
    r->explorer_ranks = e;
    r->role = r->rank == 0 ? TERN_RANK_MASTER
              : r->rank <= (int)t ? TERN_RANK_TRAINER
                                  : TERN_RANK_EXPLORER;
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
