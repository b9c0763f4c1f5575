/* flags.c: the flag parser of the `tern` program (flags.h). */
#include "flags.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tern/libtern.h"

int cli_usage_error(const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tern: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (usage)
        fprintf(stderr, "usage: %s\n", usage);
    else
        fprintf(stderr, "run `tern help` for the commands\n");
    return TERN_EXIT_USAGE;
}

/* The installed doc directory, or NULL (see cli_print_docs_text). */
static const char *installed_docs(void)
{
    static char dir[PATH_MAX];
    static int looked;
    if (looked)
        return dir[0] ? dir : NULL;
    looked = 1;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    char joined[2 * PATH_MAX];
    snprintf(joined, sizeof joined, "%s/%s", exe, TERN_DOCS_FROM_BIN);
    if (!realpath(joined, dir))
        dir[0] = '\0';
    return dir[0] ? dir : NULL;
}

void cli_print_docs_text(FILE *f, const char *text)
{
    const char *docs = installed_docs();
    const char *p = text, *hit;
    while (docs && (hit = strstr(p, "docs/")) != NULL) {
        fwrite(p, 1, (size_t)(hit - p), f);
        fprintf(f, "%s/", docs);
        p = hit + 5;
    }
    fputs(p, f);
}

int cli_print_help(const char *usage, const char *help)
{
    printf("usage: %s\n\n", usage);
    cli_print_docs_text(stdout, help);
    printf("\n");
    return TERN_EXIT_OK;
}

/* Whether `arg` is the spelling `s` of flag f: 1 with *value NULL ("NAME"),
 * 1 with *value set ("NAME=VALUE"), else 0. */
static int spelled(const tern_flag *f, const char *s, const char *arg, const char **value)
{
    size_t n = strlen(s);
    if (strncmp(arg, s, n) != 0)
        return 0;
    if (arg[n] == '\0') {
        *value = NULL;
        return 1;
    }
    if (arg[n] == '=' && f->kind != TERN_FLAG_BOOL && !(f->opts & TERN_FLAG_NO_EQUALS)) {
        *value = arg + n + 1;
        return 1;
    }
    return 0;
}

/* The flag `arg` is, with the spelling used and its value when the argument
 * holds it; NULL for an unknown option. */
static const tern_flag *find_flag(const tern_flag *flags, const char *arg, const char **as,
                                  const char **value)
{
    for (const tern_flag *f = flags; f->name; f++) {
        if (spelled(f, f->name, arg, value)) {
            *as = f->name;
            return f;
        }
        if (f->alias && spelled(f, f->alias, arg, value)) {
            *as = f->alias;
            return f;
        }
    }
    for (const tern_flag *f = flags; f->name; f++) {
        size_t n = strlen(f->name);
        if ((f->opts & TERN_FLAG_ATTACHED) && strncmp(arg, f->name, n) == 0 && arg[n]) {
            *as = f->name;
            *value = arg + n;
            return f;
        }
    }
    return NULL;
}

/* A whole number in [min, max] (decimal); else the message and -1. */
static int parse_int(const tern_flag *f, const char *usage, const char *s, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = s[0] == '-' || (s[0] >= '0' && s[0] <= '9') ? strtoll(s, &end, 10) : 0;
    if (!end || end == s || *end || errno || v < f->min || v > f->max) {
        if (f->max == LLONG_MAX)
            cli_usage_error(usage, "%s needs a whole number >= %lld (got '%s')", f->name, f->min,
                            s);
        else
            cli_usage_error(usage, "%s needs a whole number from %lld to %lld (got '%s')",
                            f->name, f->min, f->max, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Any whole number from 0 to 2^64 - 1; else the message and -1. */
static int parse_u64(const tern_flag *f, const char *usage, const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
    if (!end || *end || errno) {
        cli_usage_error(usage, "%s needs a whole number from 0 to %llu (got '%s')", f->name,
                        (unsigned long long)UINT64_MAX, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* A finite decimal number in the flag's range; else the message and -1. */
static int parse_double(const tern_flag *f, const char *usage, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    int ok = end != s && !*end && !errno && isfinite(v) && s[0] != ' ' && s[0] != '\t';
    if (!ok || v < f->lo || v > f->hi || ((f->opts & TERN_FLAG_ABOVE_LO) && v <= f->lo)) {
        cli_usage_error(usage, "%s needs %s (got '%s')", f->name, f->need, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Check `value` and store it where f says; else the message and -1. */
static int take(const tern_flag *f, const char *usage, const char *value)
{
    char *dest = (char *)f->dest + (f->count ? *f->count * f->dest_size : 0);
    switch (f->kind) {
    case TERN_FLAG_STRING:
        if ((f->opts & TERN_FLAG_NONEMPTY) && !*value) {
            cli_usage_error(usage, "%s needs %s", f->name, f->need);
            return -1;
        }
        memcpy(dest, &value, sizeof value);
        break;
    case TERN_FLAG_INT: {
        long long v = 0;
        if (parse_int(f, usage, value, &v) != 0)
            return -1;
        /* the range fits the destination, signed or not: its bits, modulo 2^32 or 2^64 */
        uint32_t w32 = (uint32_t)v;
        uint64_t w64 = (uint64_t)v;
        if (f->dest_size == sizeof w32)
            memcpy(dest, &w32, sizeof w32);
        else
            memcpy(dest, &w64, sizeof w64);
        break;
    }
    case TERN_FLAG_U64: {
        uint64_t v = 0;
        if (parse_u64(f, usage, value, &v) != 0)
            return -1;
        memcpy(dest, &v, sizeof v);
        break;
    }
    case TERN_FLAG_DOUBLE: {
        double v = 0;
        if (parse_double(f, usage, value, &v) != 0)
            return -1;
        memcpy(dest, &v, sizeof v);
        break;
    }
    case TERN_FLAG_BOOL: {
        int one = 1;
        memcpy(dest, &one, sizeof one);
        break;
    }
    }
    if (f->count)
        ++*f->count;
    if (f->given)
        *f->given = 1;
    return 0;
}

int cli_flags_parse(const tern_flag_cmd *cmd, int argc, char **argv)
{
    size_t n_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return cli_print_help(cmd->usage, cmd->help);
        if (a[0] != '-' || !a[1]) {
            if (n_pos == cmd->max_pos)
                return cli_usage_error(cmd->usage, "unexpected argument '%s'%s", a,
                                       cmd->extra_hint ? cmd->extra_hint : "");
            cmd->pos[n_pos++] = a;
            continue;
        }
        const char *as = NULL, *value = NULL;
        const tern_flag *f = find_flag(cmd->flags, a, &as, &value);
        if (!f)
            return cli_usage_error(cmd->usage, "unknown option '%s'", a);
        if (!value && f->kind != TERN_FLAG_BOOL) {
            if (i + 1 >= argc)
                return cli_usage_error(cmd->usage, "%s needs %s", as,
                                       f->missing ? f->missing : "a value");
            value = argv[++i];
        }
        if (take(f, cmd->usage, value) != 0)
            return TERN_EXIT_USAGE;
    }
    if (cmd->n_pos)
        *cmd->n_pos = n_pos;
    return TERN_FLAGS_GO_ON;
}
