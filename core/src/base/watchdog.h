/* watchdog.h: a thread that looks at the plugin ops in flight
 * (base/op_watch.h) four times a second, so that an in-process op that takes
 * too long, or holds up a stop signal, is named in the log while it runs.
 *
 * - An op past its mark's limit_ns is named once, as a warning, with its
 *   fix (an in-process call cannot be stopped; isolation can).
 * - After a stop signal (tern_watchdog_signal, from the handler), the ops in
 *   flight for over a second are named: what the step in progress waits for.
 * - After a second stop signal, while the thread that started the watchdog
 *   (the run's master, which acts on that signal) has been in a plugin op
 *   for over a second, the callback given to tern_watchdog_start runs on
 *   the watchdog's thread: the master cannot act, stuck in the plugin. A
 *   master that is not in a plugin op acts itself, and the watchdog never
 *   does. */
#ifndef TERN_WATCHDOG_H
#define TERN_WATCHDOG_H

#include "base/export.h"

/* Start the thread (one per process: a second start while it runs is
 * refused with TERN_EINVAL). `on_stuck_stop` may be NULL. TERN_OK or
 * TERN_ERR with a message. */
TERN_INTERNAL int tern_watchdog_start(void (*on_stuck_stop)(void *arg), void *arg);
/* Stop and join it; fine when not started. */
TERN_INTERNAL void tern_watchdog_stop(void);
/* From a signal handler (atomic stores only): the nth (1, 2) stop signal
 * `sig` arrived. */
void tern_watchdog_signal(int sig, int nth);

#endif
