/* clock.c: the monotonic clock (see clock.h). */
#include "base/clock.h"

#include <time.h>

uint64_t tern_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
