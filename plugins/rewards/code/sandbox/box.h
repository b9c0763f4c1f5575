/*
 * box.h: the filesystem a sandboxed program sees.
 *
 *   /            a small tmpfs, read-only once built
 *   /usr, ...    the request's binds: host paths, read-only, nosuid, nodev,
 *                each at its own path, nothing under it that is a separate
 *                mount (binds are not recursive)
 *   /bin, /lib.. the host's top-level symlinks into /usr (merged /usr), or
 *                read-only binds where they are real directories
 *   /dev         null, zero, full, random, urandom only
 *   /box         the working directory: the request's files; writable
 *   /tmp         writable; /box and /tmp share one tmpfs of tmpfs_bytes
 *
 * Nothing else of the host is there: no /home, /root, /proc, /sys, /run,
 * no run directory. Called by the sandbox's init, inside fresh user and
 * mount namespaces, as uid 0 of that user namespace.
 */
#ifndef TERN_SANDBOX_BOX_H
#define TERN_SANDBOX_BOX_H

#include <stddef.h>

#include "wire.h"

/* Builds the filesystem, pivots into it and changes to /box. 0, or -1 with
 * why (cap >= 200). The host's /tmp is the staging mount point, so binds
 * under /tmp are refused (the plugin checks its settings the same way). */
int sandbox_box_enter(const sandbox_request *req, char *why, size_t why_cap);

#endif /* TERN_SANDBOX_BOX_H */
