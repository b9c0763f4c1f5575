/* trace_read.c: trace.json -> the events of the timeline (see trace_read.h).
 * Lanes come from "thread_name" metadata ("explorer N", "buffer", "trainer";
 * on MPI ranks "trainer (rank 1)", "explorer 0 (rank 2)");
 * an event on another lane is placed by its name or its "explorer" argument,
 * or left out. Names the timeline does not draw are ignored. */
#include "timeline/trace_read.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errmsg.h"

#define MAX_EXPLORER 9999 /* higher "explorer N" numbers are not a tern lane */

/* What a thread id ("tid") is, from its thread_name metadata. */
typedef struct lane {
    long long tid;
    size_t order; /* its place in the file: the first of a tid's names wins */
    int kind;     /* -1 not drawn, else a tl_row */
    int explorer; /* TL_ROW_EXPLORER: its number */
} lane;

/* The reading's own state: the lanes (sorted by tid once read, for a binary
 * search per event), the capacities of the arrays grown as events come (by
 * doubling: a trace of many lanes or events is read in linear time), and
 * which explorer numbers have a lane already. */
typedef struct lanes {
    lane *v;
    size_t n, cap;
    size_t ev_cap, explorers_cap; /* of tl_trace's ev and explorers */
    unsigned char explorer_seen[MAX_EXPLORER + 1];
} lanes;

/* Room in *v (of *cap elements of `elem` bytes) for element n: doubling. */
static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return TERN_OK;
    size_t want = *cap ? 2 * *cap : 16;
    if (want > SIZE_MAX / elem)
        return TERN_ENOMEM;
    void *nv = realloc(*v, want * elem);
    if (!nv)
        return TERN_ENOMEM;
    *v = nv;
    *cap = want;
    return TERN_OK;
}

static int by_tid(const void *a, const void *b)
{
    const lane *x = a, *y = b;
    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->order > y->order) - (x->order < y->order);
}

/* An integral number (a JSON integer, or a real with no fraction). */
static int int_value(const json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = (long long)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && d == floor(d) && fabs(d) < 9e15) {
            *out = (long long)d;
            return 1;
        }
    }
    return 0;
}

static int get_int(const json_t *obj, const char *key, long long *out)
{
    return int_value(json_object_get(obj, key), out);
}

static int get_num(const json_t *obj, const char *key, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return 0;
    *out = json_number_value(v);
    return 1;
}

/* "explorer 3" (or "explorer" alone, or "explorer-3") -> 3; else -1. */
/* A lane of a run on MPI ranks carries its rank: "trainer (rank 1)". */
static int rank_suffix(const char *p) { return strncmp(p, " (rank ", 7) == 0; }

/* Lane `name` is `role`'s, in one process or on a rank. */
static int lane_is(const char *name, const char *role)
{
    size_t n = strlen(role);
    return strncmp(name, role, n) == 0 && (name[n] == '\0' || rank_suffix(name + n));
}

static int explorer_number(const char *name)
{
    if (strncmp(name, "explorer", 8) != 0)
        return -1;
    const char *p = name + 8;
    if (*p == '\0')
        return 0;
    if (*p == ' ' || *p == '-' || *p == '_')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    long n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        n = 10 * n + (*p - '0');
        if (n > MAX_EXPLORER)
            return -1;
    }
    return *p && !rank_suffix(p) ? -1 : (int)n;
}

static const lane *find_lane(const lanes *ls, long long tid)
{
    size_t lo = 0, hi = ls->n; /* the first lane whose tid is >= tid */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ls->v[mid].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ls->n && ls->v[lo].tid == tid ? &ls->v[lo] : NULL;
}

/* Remember explorer number `e` (a lane of its own, even with no events). */
static int add_explorer(tl_trace *t, lanes *ls, int e)
{
    if (ls->explorer_seen[e])
        return TERN_OK;
    if (grow((void **)&t->explorers, &ls->explorers_cap, t->n_explorers, sizeof *t->explorers))
        return TERN_ENOMEM;
    ls->explorer_seen[e] = 1;
    t->explorers[t->n_explorers++] = e;
    return TERN_OK;
}

/* The thread_name metadata, wherever it is in the array. */
static int read_lanes(const json_t *events, lanes *ls, tl_trace *t)
{
    size_t i;
    const json_t *e;
    json_array_foreach(events, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        long long tid;
        if (!ph || strcmp(ph, "M") != 0 || !name || strcmp(name, "thread_name") != 0 ||
            !get_int(e, "tid", &tid))
            continue;
        const char *lname = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (!lname)
            continue;
        lane l = {.tid = tid, .kind = -1, .explorer = explorer_number(lname)};
        if (l.explorer >= 0)
            l.kind = TL_ROW_EXPLORER;
        else if (strcmp(lname, "buffer") == 0)
            l.kind = TL_ROW_BUFFER;
        else if (lane_is(lname, "trainer"))
            l.kind = TL_ROW_TRAINER;
        l.order = ls->n;
        if (grow((void **)&ls->v, &ls->cap, ls->n, sizeof *ls->v) != TERN_OK)
            return TERN_ENOMEM;
        ls->v[ls->n++] = l;
        if (l.kind == TL_ROW_EXPLORER && add_explorer(t, ls, l.explorer) != TERN_OK)
            return TERN_ENOMEM;
    }
    return TERN_OK;
}

static int name_kind(const char *name)
{
    static const struct {
        const char *name;
        tl_kind kind;
    } names[] = {{"rollout", TL_ROLLOUT}, {"train", TL_TRAIN},     {"sync", TL_SYNC},
                 {"wait", TL_WAIT},       {"put", TL_PUT},         {"publish", TL_PUBLISH},
                 {"skip", TL_SKIP}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].name, name) == 0)
            return (int)names[i].kind;
    return -1;
}

/* Place `ev` on a lane: the lane of its tid when drawn, else by its
 * "explorer" argument, else by its name. 0 when it has no lane to go on. */
static int place(tl_event *ev, const lane *l, const json_t *args)
{
    long long ex;
    int has_ex = get_int(args, "explorer", &ex) && ex >= 0 && ex <= MAX_EXPLORER;
    /* the buffer, the trainer's events and a rollout have one lane each,
     * whichever thread recorded them */
    if (ev->kind == TL_PUT) {
        ev->row = TL_ROW_BUFFER;
        return 1;
    }
    if (ev->kind == TL_TRAIN || ev->kind == TL_PUBLISH || ev->kind == TL_SKIP) {
        ev->row = TL_ROW_TRAINER;
        return 1;
    }
    if (l && l->kind >= 0) {
        ev->row = (tl_row)l->kind;
        ev->explorer = l->explorer;
        return 1;
    }
    if (has_ex || ev->kind == TL_ROLLOUT) {
        ev->row = TL_ROW_EXPLORER;
        ev->explorer = has_ex ? (int)ex : 0;
        return 1;
    }
    return 0; /* a sync or wait of a lane that is not drawn (the master's) */
}

static int read_batches(tl_event *ev, const json_t *args)
{
    const json_t *arr = json_object_get(args, "batches");
    long long b;
    if (!json_is_array(arr)) {
        if (!get_int(args, "batch", &b))
            return TERN_OK;
        ev->batches = malloc(sizeof *ev->batches);
        if (!ev->batches)
            return TERN_ENOMEM;
        ev->batches[0] = b;
        ev->n_batches = 1;
        return TERN_OK;
    }
    size_t n = json_array_size(arr);
    if (n == 0)
        return TERN_OK;
    ev->batches = malloc(n * sizeof *ev->batches);
    if (!ev->batches)
        return TERN_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (int_value(json_array_get(arr, i), &b))
            ev->batches[ev->n_batches++] = b;
    return TERN_OK;
}

static tl_method method_of(const char *m)
{
    if (!m)
        return TL_SYNC_OTHER;
    if (strcmp(m, "memory") == 0 || strcmp(m, "mpi") == 0)
        return TL_SYNC_MEMORY; /* drawn alike: the diagrams' purple, no file */
    if (strcmp(m, "nccl") == 0)
        return TL_SYNC_NCCL;
    if (strcmp(m, "checkpoint") == 0)
        return TL_SYNC_CHECKPOINT;
    return TL_SYNC_OTHER;
}

/* Event `i` of the array, if it is one the timeline draws. */
static int read_event(const char *path, size_t i, const json_t *e, lanes *ls,
                      tl_trace *t)
{
    const char *name = json_string_value(json_object_get(e, "name"));
    const char *ph = json_string_value(json_object_get(e, "ph"));
    int kind = name ? name_kind(name) : -1;
    if (kind < 0 || !ph || strcmp(ph, "M") == 0)
        return TERN_OK;
    double ts = 0, dur = 0;
    if (!get_num(e, "ts", &ts))
        return tern_errorf(TERN_EINVAL,
                           "%s: event %zu (\"%s\") has no numeric \"ts\"; the trace is damaged: "
                           "run `tern run` again for a new one", path, i, name);
    if (strcmp(ph, "X") == 0 && json_object_get(e, "dur") && !get_num(e, "dur", &dur))
        return tern_errorf(TERN_EINVAL,
                           "%s: event %zu (\"%s\") has a \"dur\" that is not a number; the trace "
                           "is damaged: run `tern run` again for a new one", path, i, name);
    if (dur < 0)
        dur = 0;
    const json_t *args = json_object_get(e, "args");
    long long tid = 0;
    const lane *l = get_int(e, "tid", &tid) ? find_lane(ls, tid) : NULL;

    tl_event ev = {.kind = (tl_kind)kind, .explorer = -1, .t0 = ts / 1e6, .t1 = (ts + dur) / 1e6,
                   .batch = -1, .version = -1, .step = -1};
    if (!place(&ev, l, args))
        return TERN_OK;
    get_int(args, "batch", &ev.batch);
    get_int(args, "version", &ev.version);
    get_int(args, "step", &ev.step);
    if (ev.kind == TL_ROLLOUT) {
        json_t *tn = json_object_get(args, "turns");
        ev.turns = json_is_number(tn) ? json_number_value(tn) : 0;
        get_int(args, "max_turn", &ev.max_turn);
    }
    ev.surplus = ev.kind == TL_SKIP && json_is_true(json_object_get(args, "surplus"));
    if (ev.kind == TL_SYNC)
        ev.method = method_of(json_string_value(json_object_get(args, "method")));
    if (ev.kind == TL_WAIT) {
        const char *w = json_string_value(json_object_get(args, "for"));
        snprintf(ev.what, sizeof ev.what, "%s", w ? w : "");
    }
    if (ev.row == TL_ROW_EXPLORER && add_explorer(t, ls, ev.explorer) != TERN_OK)
        return TERN_ENOMEM;
    if (ev.kind == TL_TRAIN && read_batches(&ev, args) != TERN_OK)
        return TERN_ENOMEM;
    if (grow((void **)&t->ev, &ls->ev_cap, t->n_ev, sizeof *t->ev) != TERN_OK) {
        free(ev.batches);
        return TERN_ENOMEM;
    }
    t->ev[t->n_ev++] = ev;
    return TERN_OK;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Parse the file's text; the message tells what is wrong and where. */
static int read_json(const char *path, json_t **root)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return tern_errorf(TERN_EINVAL, "%s: cannot read the trace: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return tern_errorf(TERN_EINVAL, "%s: not a file; give a run directory or its trace.json",
                           path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return tern_errorf(TERN_EINVAL, "%s: cannot read the trace: %s", path, strerror(errno));
    json_error_t jerr;
    *root = json_loadf(f, 0, &jerr);
    fclose(f);
    if (!*root)
        return tern_errorf(TERN_EINVAL,
                           "%s:%d:%d: not valid JSON (%s); the trace is damaged or cut short: "
                           "run `tern run` again for a new one", path, jerr.line, jerr.column,
                           jerr.text);
    return TERN_OK;
}

int tl_trace_load(const char *path, tl_trace *t)
{
    memset(t, 0, sizeof *t);
    json_t *root = NULL;
    int rc = read_json(path, &root);
    if (rc != TERN_OK)
        return rc;
    const json_t *events = json_object_get(root, "traceEvents");
    if (!json_is_array(events)) {
        json_decref(root);
        return tern_errorf(TERN_EINVAL,
                           "%s: no \"traceEvents\" array; this is not a trace as `tern run` "
                           "writes it (an object {\"traceEvents\": [...]})", path);
    }
    lanes *ls = calloc(1, sizeof *ls); /* its explorer_seen is 10 KB */
    rc = ls ? read_lanes(events, ls, t) : TERN_ENOMEM;
    if (rc == TERN_OK && ls->n > 1)
        qsort(ls->v, ls->n, sizeof *ls->v, by_tid);
    size_t i;
    const json_t *e;
    json_array_foreach(events, i, e) {
        if (rc != TERN_OK)
            break;
        if (!json_is_object(e))
            rc = tern_errorf(TERN_EINVAL,
                             "%s: event %zu is not an object; the trace is damaged: run "
                             "`tern run` again for a new one", path, i);
        else
            rc = read_event(path, i, e, ls, t);
    }
    if (ls)
        free(ls->v);
    free(ls);
    json_decref(root);
    if (rc == TERN_OK && t->n_ev == 0)
        rc = tern_errorf(TERN_EINVAL,
                         "%s: nothing to draw: no rollout, train, sync, wait, put, publish or "
                         "skip event on an explorer, buffer or trainer lane; give the trace "
                         "of an RL run (a warm-up alone draws nothing)", path);
    if (rc == TERN_ENOMEM)
        tern_errorf(rc, "%s: out of memory reading the trace", path);
    if (rc != TERN_OK) {
        tl_trace_free(t);
        return rc;
    }
    if (t->n_explorers > 1)
        qsort(t->explorers, t->n_explorers, sizeof *t->explorers, cmp_int);
    t->t_first = t->ev[0].t0;
    t->t_last = t->ev[0].t1;
    for (size_t k = 1; k < t->n_ev; k++) {
        t->t_first = fmin(t->t_first, t->ev[k].t0);
        t->t_last = fmax(t->t_last, t->ev[k].t1);
    }
    return TERN_OK;
}

void tl_trace_free(tl_trace *t)
{
    for (size_t i = 0; i < t->n_ev; i++)
        free(t->ev[i].batches);
    free(t->ev);
    free(t->explorers);
    memset(t, 0, sizeof *t);
}

int tl_explorer_slot(const tl_trace *t, int explorer)
{
    for (size_t i = 0; i < t->n_explorers; i++)
        if (t->explorers[i] == explorer)
            return (int)i;
    return -1;
}
