/* clock.h: the monotonic clock the engine times waits and spans with. */
#ifndef TERN_CLOCK_H
#define TERN_CLOCK_H

#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC: only differences mean anything. */
uint64_t tern_mono_ns(void);

#endif
