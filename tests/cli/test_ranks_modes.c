/* test_ranks_modes.c: every etc/modes/ config, launched on MPI ranks
 * (`mpirun -np 3`, 4 for multi_explorer's two explorers), obeys the rules of
 * its sync mode (tests/support/mode_rules.h), as test_modes checks them in
 * one process. Skipped, with the reason, in a build without MPI. */
#include <criterion/criterion.h>

#include "command.h"
#include "mode_rules.h"

Test(ranks_modes, synchronous) { test_need_mpi(); check_mode_on(&modes[0], 3); }
Test(ranks_modes, one_step_off) { test_need_mpi(); check_mode_on(&modes[1], 3); }
Test(ranks_modes, fully_async) { test_need_mpi(); check_mode_on(&modes[2], 3); }
Test(ranks_modes, multi_explorer) { test_need_mpi(); check_mode_on(&modes[3], 4); }
Test(ranks_modes, interval4_offset0) { test_need_mpi(); check_mode_on(&modes[4], 3); }
Test(ranks_modes, interval1_offset4) { test_need_mpi(); check_mode_on(&modes[5], 3); }

