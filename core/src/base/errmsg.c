/* errmsg.c: the per-thread error message slot (see errmsg.h). */
#include "base/errmsg.h"

#include <stdio.h>
#include <string.h>

#define ERRMSG_MAX 2048

static _Thread_local char errbuf[ERRMSG_MAX];

int tern_verrorf(int status, const char *fmt, va_list ap)
{
    /* format aside first: an argument may be tern_error_message() itself
     * ("...: %s" wrapping the message a plugin left) */
    char text[ERRMSG_MAX];
    vsnprintf(text, sizeof text, fmt, ap);
    memcpy(errbuf, text, sizeof errbuf);
    return status;
}

int tern_errorf(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tern_verrorf(status, fmt, ap);
    va_end(ap);
    return status;
}

void tern_error_prefix(const char *fmt, ...)
{
    char prefix[512];
    char old[ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, errbuf, sizeof old);
    /* prefix + old message, cut to the buffer */
    size_t plen = strlen(prefix), olen = strnlen(old, sizeof old - 1);
    if (plen + olen >= sizeof errbuf)
        olen = sizeof errbuf - 1 - plen;
    memcpy(errbuf, prefix, plen);
    memcpy(errbuf + plen, old, olen);
    errbuf[plen + olen] = '\0';
}

const char *tern_error_message(void) { return errbuf; }

void tern_error_clear(void) { errbuf[0] = '\0'; }

const char *tern_status_name(int status)
{
    switch (status) {
    case TERN_OK: return "TERN_OK";
    case TERN_ERR: return "TERN_ERR";
    case TERN_EINVAL: return "TERN_EINVAL";
    case TERN_ENOMEM: return "TERN_ENOMEM";
    case TERN_EIO: return "TERN_EIO";
    case TERN_ETIMEDOUT: return "TERN_ETIMEDOUT";
    case TERN_ECLOSED: return "TERN_ECLOSED";
    case TERN_ENOTFOUND: return "TERN_ENOTFOUND";
    case TERN_EUNSUPPORTED: return "TERN_EUNSUPPORTED";
    case TERN_ECONFIG: return "TERN_ECONFIG";
    case TERN_EINTR: return "TERN_EINTR";
    default: return "unknown status";
    }
}
