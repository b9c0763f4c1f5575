/* task_file.c: loading a tasks JSON Lines file (see task_file.h). */
#include "data/task_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/sha256.h"
#include "base/log.h"
#include "tern/support/regular_file.h"

/* Malformed lines logged one by one under skip_bad; the rest are counted. */
#define SHOWN_SKIPS 5

/* ---- the ids seen so far: an open-addressing set of id texts ------------- */

typedef struct id_slot {
    char *id;    /* owned; NULL: free slot */
    size_t line; /* where it was first seen */
} id_slot;

typedef struct id_set {
    id_slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t n;
} id_set;

static uint64_t hash_text(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

static id_slot *id_find(const id_set *set, const char *id)
{
    size_t mask = set->cap - 1;
    for (size_t i = (size_t)hash_text(id) & mask;; i = (i + 1) & mask)
        if (!set->slots[i].id || strcmp(set->slots[i].id, id) == 0)
            return &set->slots[i];
}

static int id_grow(id_set *set)
{
    size_t cap = set->cap ? set->cap * 2 : 64;
    id_slot *old = set->slots;
    size_t old_cap = set->cap;
    set->slots = calloc(cap, sizeof *set->slots);
    if (!set->slots) {
        set->slots = old;
        return TERN_ENOMEM;
    }
    set->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].id)
            *id_find(set, old[i].id) = old[i];
    free(old);
    return TERN_OK;
}

/* Add `id` first seen on `line`: TERN_OK, TERN_EINVAL with *first set when
 * it was there already, TERN_ENOMEM. */
static int id_add(id_set *set, const char *id, size_t line, size_t *first)
{
    if ((set->n + 1) * 2 > set->cap && id_grow(set) != TERN_OK)
        return TERN_ENOMEM;
    id_slot *slot = id_find(set, id);
    if (slot->id) {
        *first = slot->line;
        return TERN_EINVAL;
    }
    slot->id = strdup(id);
    if (!slot->id)
        return TERN_ENOMEM;
    slot->line = line;
    set->n++;
    return TERN_OK;
}

static void id_free(id_set *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slots[i].id);
    free(set->slots);
    memset(set, 0, sizeof *set);
}

/* ---- one task -------------------------------------------------------------- */

const char *tern_task_id_text(const tern_task *t, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    buf[0] = '\0';
    long long v;
    const char *s = tern_task_string(t, "id");
    if (s)
        snprintf(buf, n, "%s", s);
    else if (tern_task_integer(t, "id", &v) == TERN_OK)
        snprintf(buf, n, "%lld", v);
    return buf;
}

/* "a string", "an integer", "null": the type word of tern_task_type() with
 * its article, for "X is ..." messages. */
static const char *with_article(const char *type, char *buf, size_t n)
{
    if (strcmp(type, "null") == 0)
        return type;
    snprintf(buf, n, "%s %s", strchr("aeiou", type[0]) ? "an" : "a", type);
    return buf;
}

/* An id for a message: at most 60 bytes, control bytes as '?'. */
static const char *shown_id(const char *id, char *buf, size_t n)
{
    size_t len = strlen(id), max = n - 4 < 60 ? n - 4 : 60, i;
    for (i = 0; i < len && i < max; i++)
        buf[i] = (unsigned char)id[i] < 0x20 || id[i] == 0x7f ? '?' : id[i];
    if (len > max) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

/* The fields every task is checked for, in order, and the advice of each
 * message: "WHERE: missing \"F\"; ...", "WHERE: \"F\" is a T; ...",
 * "WHERE: \"F\" is empty; ..." (NULL: never missing, or may be empty). */
static const struct field_rule {
    const char *name;
    const char *types[3]; /* the tern_task_type() words it may have */
    const char *if_missing, *if_wrong, *if_empty;
} field_rules[] = {
    {"id", {"string", "integer"},
     "give every task its own \"id\", a string or an integer (\"id\": \"q-17\" or \"id\": 17)",
     "give a string or an integer (\"id\": \"q-17\" or \"id\": 17)",
     "give a non-empty string or an integer"},
    {"domain", {"string"},
     "give the task's domain, e.g. \"domain\": \"math\" (the rewards of that domain judge it)",
     "give a string such as \"math\"", "give the task's domain, e.g. \"math\""},
    {"prompt", {"string"}, "give the text the model is given, e.g. \"prompt\": \"2+2=\"",
     "give a string", NULL},
    /* optional: the system turn of a chat-templated prompt (docs/data.md) */
    {"system", {"string"}, NULL, "give a string (the system turn before the prompt) or leave it out",
     NULL},
    {"answer", {"string", "integer", "real number"},
     "give the gold answer, a string or a number (\"answer\": \"4\"; \"\" when the task has "
     "none, as a code task judged by its tests)",
     "give a string or a number (\"answer\": \"4\" or \"answer\": 4)", NULL},
};

/* The required fields of a parsed task; TERN_EINVAL "WHERE: ..." if wrong. */
static int check_fields(const tern_task *t, const char *where)
{
    for (size_t i = 0; i < sizeof field_rules / sizeof field_rules[0]; i++) {
        const struct field_rule *r = &field_rules[i];
        const char *type = tern_task_type(t, r->name);
        if (!type) {
            if (!r->if_missing)
                continue;
            return tern_errorf(TERN_EINVAL, "%s: missing \"%s\"; %s", where, r->name,
                               r->if_missing);
        }
        int fits = 0;
        for (size_t k = 0; k < 3 && r->types[k]; k++)
            fits = fits || strcmp(type, r->types[k]) == 0;
        if (!fits) {
            char art[32];
            return tern_errorf(TERN_EINVAL, "%s: \"%s\" is %s; %s", where, r->name,
                               with_article(type, art, sizeof art), r->if_wrong);
        }
        const char *s = tern_task_string(t, r->name);
        if (r->if_empty && s && !*s)
            return tern_errorf(TERN_EINVAL, "%s: \"%s\" is empty; %s", where, r->name,
                               r->if_empty);
    }
    return TERN_OK;
}

/* ---- the file -------------------------------------------------------------- */

typedef struct loader {
    tern_task_set *s;
    size_t cap; /* of s->tasks */
    id_set ids;
    char *where; /* "PATH:LINE" */
    size_t where_cap;
} loader;

/* Parse, check and keep one line's task. TERN_EINVAL with the message for a
 * malformed line; TERN_ENOMEM. */
static int load_line(loader *ld, const char *text, size_t len, size_t line)
{
    snprintf(ld->where, ld->where_cap, "%s:%zu", ld->s->path, line);
    tern_task *t = NULL;
    int rc = tern_task_parse(text, len, ld->where, &t);
    if (rc != TERN_OK)
        return rc;
    tern_task_set_origin(t, ld->s->path);
    tern_task_set_line(t, line);
    rc = check_fields(t, ld->where);
    if (rc == TERN_OK) {
        char id[4096], shown[64];
        size_t first = 0;
        tern_task_id_text(t, id, sizeof id);
        if (strlen(id) == sizeof id - 1) {
            rc = tern_errorf(TERN_EINVAL, "%s: \"id\" is longer than %zu bytes; give a shorter "
                             "id", ld->where, sizeof id - 2);
        } else {
            rc = id_add(&ld->ids, id, line, &first);
            if (rc == TERN_EINVAL)
                tern_errorf(rc, "%s: id \"%s\" was already used on line %zu; give every task "
                            "its own id", ld->where, shown_id(id, shown, sizeof shown), first);
            else if (rc == TERN_ENOMEM)
                tern_errorf(rc, "%s: out of memory", ld->where);
        }
    }
    if (rc == TERN_OK && ld->s->n == ld->cap) {
        size_t cap = ld->cap ? ld->cap * 2 : 256;
        tern_task **tasks = realloc(ld->s->tasks, cap * sizeof *tasks);
        if (!tasks) {
            rc = tern_errorf(TERN_ENOMEM, "%s: out of memory", ld->where);
        } else {
            ld->s->tasks = tasks;
            ld->cap = cap;
        }
    }
    if (rc != TERN_OK) {
        tern_task_free(t);
        return rc;
    }
    ld->s->tasks[ld->s->n++] = t;
    return TERN_OK;
}

/* The next line of f into *buf (grown as needed, a NUL after it), as
 * getline (NUL bytes included), but reading no more than max + 1 bytes of
 * one line: its length, -1 at the end of the file or on a read error, -2
 * out of memory, -3 a line longer than max. */
static ssize_t read_line(FILE *f, char **buf, size_t *cap, size_t max)
{
    size_t len = 0;
    int c;
    while ((c = getc_unlocked(f)) != EOF) {
        if (len + 2 > *cap) {
            size_t want = *cap ? *cap * 2 : 4096;
            char *b = realloc(*buf, want);
            if (!b)
                return -2;
            *buf = b, *cap = want;
        }
        (*buf)[len++] = (char)c;
        if (len > max)
            return -3;
        if (c == '\n')
            break;
    }
    if (len == 0)
        return -1;
    (*buf)[len] = '\0';
    return (ssize_t)len;
}

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return 0;
    return 1;
}

int tern_task_set_load(tern_task_set *s, const char *path, int skip_bad)
{
    memset(s, 0, sizeof *s);
    char why[TERN_REGULAR_WHY_MAX];
    FILE *f = tern_regular_fopen(path, TERN_TASK_FILE_MAX, why, sizeof why);
    if (!f) {
        int e = errno;
        return tern_errorf(e == ENOMEM ? TERN_ENOMEM : TERN_EIO, "%s: cannot open: %s%s", path,
                           why, e == EISDIR || e == EINVAL ? "; give a tasks file (JSON Lines)"
                                : e == EFBIG ? "; give a smaller part of the task set"
                                             : "");
    }
    loader ld = {.s = s};
    s->path = strdup(path);
    ld.where_cap = strlen(path) + 32;
    ld.where = malloc(ld.where_cap);
    if (!s->path || !ld.where) {
        free(ld.where);
        fclose(f);
        tern_task_set_free(s);
        return tern_errorf(TERN_ENOMEM, "%s: out of memory", path);
    }

    int rc = TERN_OK;
    char *line = NULL;
    size_t line_cap = 0, line_no = 0, content_lines = 0;
    unsigned long long bytes = 0;
    ssize_t got;
    /* hashed as read: the digest is of the very bytes the tasks came from */
    tern_sha256 sha;
    tern_sha256_init(&sha);
    errno = 0;
    while ((got = read_line(f, &line, &line_cap, TERN_TASK_LINE_MAX)) != -1) {
        line_no++;
        if (got == -2) {
            rc = tern_errorf(TERN_ENOMEM, "%s:%zu: out of memory reading the line", path,
                             line_no);
            break;
        }
        if (got == -3) {
            char lim[32];
            rc = tern_errorf(TERN_EINVAL, "%s:%zu: the line is longer than %llu bytes (%s), "
                             "the most one task may take; is this a tasks file (JSON Lines, "
                             "one task a line)? If so, shorten the task", path, line_no,
                             TERN_TASK_LINE_MAX,
                             tern_regular_size_text(TERN_TASK_LINE_MAX, lim, sizeof lim));
            break;
        }
        bytes += (unsigned long long)got;
        tern_sha256_update(&sha, line, (size_t)got);
        if (bytes > TERN_TASK_FILE_MAX) { /* it grew past the limit while read */
            char lim[32];
            rc = tern_errorf(TERN_EIO, "%s: cannot read: too big: over the limit of %llu bytes "
                             "(%s); give a smaller part of the task set", path,
                             TERN_TASK_FILE_MAX,
                             tern_regular_size_text(TERN_TASK_FILE_MAX, lim, sizeof lim));
            break;
        }
        char *p = line;
        size_t n = (size_t)got;
        if (line_no == 1 && n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
            p += 3; /* a UTF-8 byte order mark */
            n -= 3;
        }
        if (n > 0 && p[n - 1] == '\n')
            n--;
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (is_blank(p, n))
            continue;
        content_lines++;
        rc = load_line(&ld, p, n, line_no);
        if (rc == TERN_EINVAL && skip_bad) {
            if (++s->skipped <= SHOWN_SKIPS)
                tern_logf(TERN_LOG_WARN, "data", "%s (line skipped: data.skip_bad is on)",
                          tern_error_message());
            rc = TERN_OK;
        }
        if (rc != TERN_OK)
            break;
        errno = 0;
    }
    if (rc == TERN_OK && ferror(f))
        rc = tern_errorf(TERN_EIO, "%s: cannot read: %s", path,
                         strerror(errno ? errno : EIO));
    if (rc == TERN_OK)
        tern_sha256_hex(&sha, s->sha256);
    free(line);
    fclose(f);
    id_free(&ld.ids);
    free(ld.where);

    if (rc == TERN_OK && s->n == 0) {
        if (content_lines == 0)
            rc = tern_errorf(TERN_EINVAL, "%s: no tasks: the file is empty or holds only blank "
                             "lines; give one JSON object per line, e.g. {\"id\": 1, \"domain\": "
                             "\"math\", \"prompt\": \"2+2=\", \"answer\": \"4\"}", path);
        else
            rc = tern_errorf(TERN_EINVAL, "%s: no tasks: all %zu lines are malformed (skipped "
                             "as data.skip_bad is on); fix them: the warnings name the first "
                             "ones", path, content_lines);
    }
    if (rc != TERN_OK) {
        tern_task_set_free(s);
        return rc;
    }
    if (s->skipped > SHOWN_SKIPS)
        tern_logf(TERN_LOG_WARN, "data", "%s: %zu malformed lines skipped (the first %d are "
                  "shown above), %zu task%s loaded", path, s->skipped, SHOWN_SKIPS, s->n,
                  s->n == 1 ? "" : "s");
    else if (s->skipped > 0)
        tern_logf(TERN_LOG_WARN, "data", "%s: %zu malformed line%s skipped, %zu task%s loaded",
                  path, s->skipped, s->skipped == 1 ? "" : "s", s->n, s->n == 1 ? "" : "s");
    tern_error_clear();
    return TERN_OK;
}

void tern_task_set_free(tern_task_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        tern_task_free(s->tasks[i]);
    free(s->tasks);
    free(s->path);
    memset(s, 0, sizeof *s);
}
