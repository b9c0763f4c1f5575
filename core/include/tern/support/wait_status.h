/*
 * tern/support/wait_status.h: how a child process ended, as a few words for
 * a message ("exited with status 3", "was killed by SIGSEGV"), from the
 * status waitpid() gave. Header-only (static inline), for the core (the
 * isolated reward worker) and plugins (the exec reward's command), which
 * link nothing of libtern.
 */
#ifndef TERN_SUPPORT_WAIT_STATUS_H
#define TERN_SUPPORT_WAIT_STATUS_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

/* The words for wait status `st` into buf[n] (always terminated). */
static inline void tern_wait_status_text(int st, char *buf, size_t n)
{
    if (WIFSIGNALED(st)) {
        const char *abbrev = sigabbrev_np(WTERMSIG(st));
        if (abbrev)
            snprintf(buf, n, "was killed by SIG%s", abbrev);
        else
            snprintf(buf, n, "was killed by signal %d", WTERMSIG(st));
    } else if (WIFEXITED(st)) {
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(st));
    } else {
        snprintf(buf, n, "stopped (wait status %d)", st);
    }
}

#endif
