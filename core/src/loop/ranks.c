/* ranks.c: a run launched on several MPI ranks (see ranks.h): the layout,
 * and which side of the run this rank takes. */
#include "loop/ranks.h"

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "loop/master_state.h"

int tern_ranks_layout(const tern_run *run, int size, uint32_t *explorer_ranks)
{
    uint32_t want = run->set.rank_explorers;
    if (size < 3)
        return tern_errorf(TERN_ECONFIG, "a run on MPI ranks needs at least 3: the master (rank "
                           "0), the trainer (rank 1) and an explorer rank; %d launched: use "
                           "mpirun -np 3 or more (or run without mpirun: one process runs "
                           "every role)", size);
    uint32_t avail = (uint32_t)size - TERN_RANK_EXPLORERS_AT;
    if (want && want + TERN_RANK_EXPLORERS_AT != (uint32_t)size)
        return tern_errorf(TERN_ECONFIG, "ranks.explorers = %u asks for %u ranks (master, "
                           "trainer and %u explorer ranks) but %d were launched: launch "
                           "mpirun -np %u, or set ranks.explorers = %u (or 0: every rank after "
                           "the trainer's)", want, want + TERN_RANK_EXPLORERS_AT, want, size,
                           want + TERN_RANK_EXPLORERS_AT, avail);
    uint32_t e = want ? want : avail;
    if (e > run->n_explorers)
        return tern_errorf(TERN_ECONFIG, "%u explorer ranks but the sync plugin runs %u "
                           "explorer%s: a rank would have nothing to do; launch mpirun -np %u, "
                           "or raise the sync plugin's explorers", e, run->n_explorers,
                           run->n_explorers == 1 ? "" : "s",
                           run->n_explorers + TERN_RANK_EXPLORERS_AT);
    *explorer_ranks = e;
    return TERN_OK;
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
    rk->role = rk->rank == 0                      ? TERN_RANK_MASTER
               : rk->rank == TERN_RANK_TRAINER_AT ? TERN_RANK_TRAINER
                                                  : TERN_RANK_EXPLORER;
    int rc = rk->role == TERN_RANK_MASTER ? tern_master_run(s, o, d, rk)
                                          : tern_ranks_worker(s, o, rk);
    tern_link_close(rk->link);
    free(rk);
    return rc;
}

#endif
