/*
 * filter.h: the seccomp filter every sandboxed program runs under.
 *
 * A deny list over the system calls a test program never needs and an
 * escape would: debugging other processes (ptrace, process_vm_*),
 * namespaces and mounts, kernel keyrings, BPF, perf, io_uring (it bypasses
 * seccomp for the operations it queues), modules, kexec, reboot, swap and
 * the like. They fail with EPERM, so a program sees an ordinary error.
 * Sockets are allowed for AF_UNIX only: the network namespace has no
 * network anyway, and this keeps netlink and raw sockets out. Calls of
 * another architecture (32-bit int 0x80, x32) kill the process.
 *
 * The filter is compiled once, in the helper, with libseccomp, and loaded
 * with prctl() in each program's process before exec, after
 * PR_SET_NO_NEW_PRIVS (docs/sandbox.md lists the calls).
 */
#ifndef TERN_SANDBOX_FILTER_H
#define TERN_SANDBOX_FILTER_H

#include <stddef.h>

#include <linux/filter.h>

/* Compiles the filter into *prog (its instructions malloc'd; free with
 * sandbox_filter_free). 0, or -1 with why (cap >= 120). */
int sandbox_filter_build(struct sock_fprog *prog, char *why, size_t why_cap);

void sandbox_filter_free(struct sock_fprog *prog);

/* Loads prog into the calling thread (and what it executes): 0, or -1 with
 * errno. Needs PR_SET_NO_NEW_PRIVS first. Async-signal-safe. */
int sandbox_filter_load(const struct sock_fprog *prog);

#endif /* TERN_SANDBOX_FILTER_H */
