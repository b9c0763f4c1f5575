/* test_ranks_modes.c: every etc/modes/ config, launched on MPI ranks
 * (`mpirun -np 3`, 4 for multi_explorer's two explorers), obeys the rules of
 * its sync mode (tests/support/mode_rules.h), as test_modes checks them in
 * one process. Skipped, with the reason, in a build without MPI. */
#include <criterion/criterion.h>

#include "command.h"
#include "mode_rules.h"

static void need_mpi(void)
{
    if (!test_mpirun()[0])
        cr_skip_test("this tern was built without MPI (install libopenmpi-dev, openmpi-bin "
                     "and rebuild)");
}

Test(ranks_modes, synchronous) { need_mpi(); check_mode_on(&modes[0], 3); }
Test(ranks_modes, one_step_off) { need_mpi(); check_mode_on(&modes[1], 3); }
Test(ranks_modes, fully_async) { need_mpi(); check_mode_on(&modes[2], 3); }
Test(ranks_modes, multi_explorer) { need_mpi(); check_mode_on(&modes[3], 4); }
Test(ranks_modes, interval4_offset0) { need_mpi(); check_mode_on(&modes[4], 3); }
Test(ranks_modes, interval1_offset4) { need_mpi(); check_mode_on(&modes[5], 3); }

