/*
 * tern/abi.h: version numbers, status codes and the growth rules of the plugin ABI.
 *
 * Every struct and ops table that crosses the plugin boundary starts with
 * `size_t size` (its sizeof as the *builder* compiled it) and only ever grows at
 * the end. A reader must check TERN_HAS() before touching a member that was added
 * after the first release of that struct. Nothing is ever removed or reordered
 * within one ABI major version; see docs/plugins.md "Versioning".
 */
#ifndef TERN_ABI_H
#define TERN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI major: plugins built for another major are refused. */
#define TERN_ABI_MAJOR 1
/* ABI minor: grows when members are appended; a plugin built against a newer
 * minor than the core's is refused (it may use members this core lacks). */
#define TERN_ABI_MINOR 16

/* The tern release (the command and libtern), independent of the ABI numbers. */
#define TERN_VERSION_STRING "0.1.0"

/* Directory name, under the plugin root, for this ABI major ("abi-1"). Two
 * majors can thus be installed side by side. */
#define TERN_PLUGIN_SUBDIR "abi-1"

/*
 * TERN_HAS(ptr, member): true when the struct at `ptr`, whose first member is
 * `size_t size`, was built large enough to contain `member`. Use it before
 * reading any member that is not in the first release of the struct.
 */
#define TERN_HAS(ptr, member)                                                  \
    ((ptr)->size >= offsetof(__typeof__(*(ptr)), member) + sizeof((ptr)->member))

/*
 * Status codes. Every fallible function of the SDK returns one of these
 * (TERN_OK is 0, failures are negative). A failing plugin op also leaves a
 * message through tern_host.fail(); the code says what kind of failure, the
 * message says what, where, and how to fix it.
 */
typedef enum tern_status {
    TERN_OK = 0,
    TERN_ERR = -1,          /* failure not covered below; the message tells */
    TERN_EINVAL = -2,       /* a bad argument or malformed input data */
    TERN_ENOMEM = -3,       /* an allocation failed */
    TERN_EIO = -4,          /* a file or device operation failed */
    TERN_ETIMEDOUT = -5,    /* a timeout given by the caller expired */
    TERN_ECLOSED = -6,      /* the object was closed (e.g. a buffer at shutdown) */
    TERN_ENOTFOUND = -7,    /* a named thing (setting, tensor, file) is absent */
    TERN_EUNSUPPORTED = -8, /* valid request this implementation cannot serve */
    TERN_ECONFIG = -9,      /* a setting is wrong; the message names file:line */
    TERN_EINTR = -10        /* interrupted (SIGINT, SIGTERM, SIGHUP); the caller winds down */
} tern_status;

#ifdef __cplusplus
}
#endif
#endif /* TERN_ABI_H */
