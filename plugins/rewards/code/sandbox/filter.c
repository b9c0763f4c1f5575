/* filter.c: the seccomp deny list (filter.h), compiled with libseccomp. */
#include "filter.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Fail with EPERM. By name, resolved at run time, so a call this libseccomp
 * does not know is skipped rather than breaking the build. */
static const char *const denied[] = {
    /* other processes' memory and state */
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "process_madvise",
    /* namespaces, mounts, the root */
    "unshare", "setns", "mount", "umount", "umount2", "pivot_root", "chroot",
    "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    /* the kernel's attack surface a test program has no use for */
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "fanotify_init",
    "lookup_dcookie", "quotactl", "quotactl_fd", "personality", "uselib", "vhangup",
    "ioperm", "iopl", "modify_ldt", "syslog",
    /* the machine */
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "sethostname", "setdomainname", "nfsservctl",
};

/* clone() flags that make namespaces: refused, so a program cannot build
 * a user namespace of its own inside ours. */
static const unsigned long clone_ns_flags[] = {
    CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
    CLONE_NEWUTS, CLONE_NEWCGROUP,
};

static int fail(char *why, size_t cap, const char *what, int rc)
{
    snprintf(why, cap, "seccomp filter: %s: %s", what, strerror(rc < 0 ? -rc : rc));
    return -1;
}

int sandbox_filter_build(struct sock_fprog *prog, char *why, size_t why_cap)
{
    *prog = (struct sock_fprog){0};
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return fail(why, why_cap, "seccomp_init", ENOMEM);
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
    for (size_t i = 0; rc == 0 && i < sizeof denied / sizeof *denied; i++) {
        int nr = seccomp_syscall_resolve_name(denied[i]);
        if (nr != __NR_SCMP_ERROR)
            rc = seccomp_rule_add(ctx, eperm, nr, 0);
    }
    for (size_t i = 0; rc == 0 && i < sizeof clone_ns_flags / sizeof *clone_ns_flags; i++)
        rc = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]));
    /* clone3 passes its flags in memory, out of the filter's sight: ENOSYS
     * makes the C library fall back to clone(), which is checked above. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    /* pushing characters into a terminal's input */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
    if (rc != 0) {
        seccomp_release(ctx);
        return fail(why, why_cap, "adding a rule", rc);
    }

    /* libseccomp 2.5 exports only to a descriptor: a memfd, read back */
    int fd = memfd_create("tern-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        seccomp_release(ctx);
        return fail(why, why_cap, "memfd_create", errno);
    }
    rc = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    if (rc != 0) {
        close(fd);
        return fail(why, why_cap, "seccomp_export_bpf", rc);
    }
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
        size / (off_t)sizeof(struct sock_filter) > 0xffff) {
        close(fd);
        return fail(why, why_cap, "an exported filter of an odd size", EINVAL);
    }
    struct sock_filter *code = malloc((size_t)size);
    ssize_t got = code ? pread(fd, code, (size_t)size, 0) : -1;
    close(fd);
    if (got != size) {
        free(code);
        return fail(why, why_cap, "reading the exported filter", code ? EIO : ENOMEM);
    }
    prog->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    prog->filter = code;
    return 0;
}

void sandbox_filter_free(struct sock_fprog *prog)
{
    free(prog->filter);
    *prog = (struct sock_fprog){0};
}

int sandbox_filter_load(const struct sock_fprog *prog)
{
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0);
}
