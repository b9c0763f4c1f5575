/* trace.c: Chrome trace event recorder (see trace.h). */
#include "rundir/trace.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/errmsg.h"
#include "tern/support/atomic_file.h"

typedef struct event {
    char name[48];
    char ph;          /* 'X' complete, 'i' instant */
    int lane;
    uint64_t start_ns, end_ns;
    json_t *args;     /* owned; NULL for none */
} event;

typedef struct lane_name {
    int lane;
    char name[64];
} lane_name;

struct tern_trace {
    pthread_mutex_t lock;
    uint64_t t0;
    event *ev;
    size_t n, cap;
    lane_name *lanes;
    size_t n_lanes;
};

static int next_lane = 1;
static _Thread_local int my_lane;

static int current_lane(void)
{
    if (!my_lane)
        my_lane = __atomic_fetch_add(&next_lane, 1, __ATOMIC_RELAXED);
    return my_lane;
}

tern_trace *tern_trace_new(void)
{
    tern_trace *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->lock, NULL);
    t->t0 = tern_mono_ns();
    return t;
}

void tern_trace_free(tern_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        json_decref(t->ev[i].args);
    free(t->ev);
    free(t->lanes);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void tern_trace_name_lane(tern_trace *t, const char *lane)
{
    if (!t)
        return;
    int id = current_lane();
    pthread_mutex_lock(&t->lock);
    size_t i = 0;
    while (i < t->n_lanes && t->lanes[i].lane != id)
        i++;
    if (i == t->n_lanes) {
        lane_name *nl = realloc(t->lanes, (t->n_lanes + 1) * sizeof *nl);
        if (!nl) {
            pthread_mutex_unlock(&t->lock);
            return;
        }
        t->lanes = nl;
        t->n_lanes++;
    }
    t->lanes[i].lane = id;
    snprintf(t->lanes[i].name, sizeof t->lanes[i].name, "%s", lane);
    pthread_mutex_unlock(&t->lock);
}

/* The id of the lane called `lane`, made (not tied to any thread) if none
 * has that name yet; 0 when out of memory. Called with t->lock held. */
static int named_lane(tern_trace *t, const char *lane)
{
    for (size_t i = 0; i < t->n_lanes; i++)
        if (strcmp(t->lanes[i].name, lane) == 0)
            return t->lanes[i].lane;
    lane_name *nl = realloc(t->lanes, (t->n_lanes + 1) * sizeof *nl);
    if (!nl)
        return 0;
    t->lanes = nl;
    int id = __atomic_fetch_add(&next_lane, 1, __ATOMIC_RELAXED);
    t->lanes[t->n_lanes].lane = id;
    snprintf(t->lanes[t->n_lanes].name, sizeof t->lanes[t->n_lanes].name, "%s", lane);
    t->n_lanes++;
    return id;
}

/* Append an event; lane 0 = the calling thread's, lane_of = a named one. */
static uint64_t record_at(tern_trace *t, const char *name, char ph, const char *lane_of,
                          uint64_t start_ns, uint64_t end_ns)
{
    if (!t)
        return 0;
    int lane = lane_of ? 0 : current_lane();
    pthread_mutex_lock(&t->lock);
    if (lane_of && !(lane = named_lane(t, lane_of))) {
        pthread_mutex_unlock(&t->lock);
        return 0;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        event *ne = realloc(t->ev, cap * sizeof *ne);
        if (!ne) {
            pthread_mutex_unlock(&t->lock);
            return 0;
        }
        t->ev = ne;
        t->cap = cap;
    }
    event *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name ? name : "?");
    e->ph = ph;
    e->lane = lane;
    /* before the trace began (a clock read just ahead of it) counts as its start */
    e->start_ns = start_ns < t->t0 ? t->t0 : start_ns;
    e->end_ns = end_ns < e->start_ns ? e->start_ns : end_ns;
    uint64_t token = t->n;
    pthread_mutex_unlock(&t->lock);
    return token;
}

static uint64_t record(tern_trace *t, const char *name, char ph)
{
    uint64_t now = tern_mono_ns();
    return record_at(t, name, ph, NULL, now, now);
}

uint64_t tern_trace_clock(void) { return tern_mono_ns(); }

static json_t *parse_args(const char *args_json)
{
    if (!args_json)
        return NULL;
    json_t *a = json_loads(args_json, JSON_REJECT_DUPLICATES, NULL);
    if (a && json_is_object(a))
        return a;
    json_decref(a);
    json_t *o = json_object();
    if (o)
        json_object_set_new(o, "invalid_args", json_string_nocheck(args_json));
    return o;
}

uint64_t tern_trace_begin(tern_trace *t, const char *name) { return record(t, name, 'X'); }

void tern_trace_end(tern_trace *t, uint64_t token, const char *args_json)
{
    if (!t || token == 0)
        return;
    json_t *args = parse_args(args_json);
    uint64_t now = tern_mono_ns();
    pthread_mutex_lock(&t->lock);
    if (token <= t->n) {
        event *e = &t->ev[token - 1];
        e->end_ns = now;
        json_decref(e->args);
        e->args = args;
        args = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    json_decref(args);
}

void tern_trace_instant(tern_trace *t, const char *name, const char *args_json)
{
    uint64_t token = record(t, name, 'i');
    if (token)
        tern_trace_end(t, token, args_json);
}

/* Attach args to an event recorded with explicit times (no end time set). */
static void set_args(tern_trace *t, uint64_t token, const char *args_json)
{
    if (!t || token == 0)
        return;
    json_t *args = parse_args(args_json);
    pthread_mutex_lock(&t->lock);
    if (token <= t->n) {
        json_decref(t->ev[token - 1].args);
        t->ev[token - 1].args = args;
        args = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    json_decref(args);
}

void tern_trace_span(tern_trace *t, const char *name, uint64_t start_ns, uint64_t end_ns,
                     const char *args_json)
{
    set_args(t, record_at(t, name, 'X', NULL, start_ns, end_ns), args_json);
}

void tern_trace_instant_on(tern_trace *t, const char *lane, const char *name, uint64_t at_ns,
                           const char *args_json)
{
    set_args(t, record_at(t, name, 'i', lane, at_ns, at_ns), args_json);
}

uint64_t tern_trace_count(tern_trace *t)
{
    pthread_mutex_lock(&t->lock);
    uint64_t n = t->n;
    pthread_mutex_unlock(&t->lock);
    return n;
}

json_t *tern_trace_export(tern_trace *t)
{
    json_t *lanes = json_array(), *events = json_array();
    json_t *x = json_pack("{s:o, s:o}", "lanes", lanes, "events", events);
    if (!x)
        return NULL;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n_lanes; i++)
        json_array_append_new(lanes, json_pack("[i, s]", t->lanes[i].lane, t->lanes[i].name));
    for (size_t i = 0; i < t->n; i++) {
        const event *e = &t->ev[i];
        char ph[2] = {e->ph, 0};
        json_array_append_new(events, json_pack("[s, s, i, I, I, O?]", e->name, ph, e->lane,
                                                (json_int_t)e->start_ns, (json_int_t)e->end_ns,
                                                e->args));
    }
    pthread_mutex_unlock(&t->lock);
    return x;
}

int tern_trace_import(tern_trace *t, const json_t *x, const char *suffix, int64_t offset_ns)
{
    const json_t *lanes = json_object_get(x, "lanes"), *events = json_object_get(x, "events");
    if (!json_is_array(lanes) || !json_is_array(events))
        return tern_errorf(TERN_EINVAL, "trace events from another rank: not an export");
    size_t nl = json_array_size(lanes);
    int *from = calloc(nl ? nl : 1, sizeof *from), *to = calloc(nl ? nl : 1, sizeof *to);
    if (!from || !to) {
        free(from);
        free(to);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < nl; i++) {
        json_int_t id = 0;
        const char *name = NULL;
        if (json_unpack(json_array_get(lanes, i), "[I, s]", &id, &name) != 0)
            continue;
        char full[64];
        snprintf(full, sizeof full, "%s (%s)", name, suffix);
        from[i] = (int)id;
        to[i] = named_lane(t, full);
    }
    pthread_mutex_unlock(&t->lock);
    for (size_t i = 0; i < json_array_size(events); i++) {
        const char *name = NULL, *ph = NULL;
        int lane = 0;
        json_int_t a = 0, b = 0;
        json_t *args = NULL;
        if (json_unpack(json_array_get(events, i), "[s, s, i, I, I, o]", &name, &ph, &lane, &a,
                        &b, &args) != 0 || (ph[0] != 'X' && ph[0] != 'i'))
            continue;
        int mine = 0;
        for (size_t k = 0; k < nl; k++)
            if (from[k] == lane)
                mine = to[k];
        if (!mine)
            continue; /* an unnamed lane: no thread of the other rank named it */
        pthread_mutex_lock(&t->lock);
        const char *found = NULL;
        for (size_t k = 0; k < t->n_lanes; k++)
            if (t->lanes[k].lane == mine)
                found = t->lanes[k].name;
        char copy[64];
        snprintf(copy, sizeof copy, "%s", found ? found : "?");
        pthread_mutex_unlock(&t->lock);
        int64_t s0 = (int64_t)a + offset_ns, s1 = (int64_t)b + offset_ns;
        uint64_t tok = record_at(t, name, ph[0], copy, s0 > 0 ? (uint64_t)s0 : 0,
                                 s1 > 0 ? (uint64_t)s1 : 0);
        if (tok && json_is_object(args)) {
            pthread_mutex_lock(&t->lock);
            t->ev[tok - 1].args = json_deep_copy(args);
            pthread_mutex_unlock(&t->lock);
        }
    }
    free(from);
    free(to);
    return TERN_OK;
}

int tern_trace_write(tern_trace *t, const char *path)
{
    json_t *root = json_object(), *events = json_array();
    if (!root || !events) {
        json_decref(root);
        json_decref(events);
        return tern_errorf(TERN_ENOMEM, "out of memory writing %s", path);
    }
    json_object_set_new(root, "traceEvents", events);
    json_object_set_new(root, "displayTimeUnit", json_string("ms"));
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n_lanes; i++) {
        json_t *m = json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
                              "pid", 1, "tid", t->lanes[i].lane, "args", "name",
                              t->lanes[i].name);
        if (m)
            json_array_append_new(events, m);
    }
    for (size_t i = 0; i < t->n; i++) {
        const event *e = &t->ev[i];
        char ph[2] = {e->ph, 0};
        json_t *o = json_pack("{s:s, s:s, s:f, s:i, s:i}", "name", e->name, "ph", ph, "ts",
                              (double)(e->start_ns - t->t0) / 1e3, "pid", 1, "tid", e->lane);
        if (!o)
            continue;
        if (e->ph == 'X')
            json_object_set_new(o, "dur", json_real((double)(e->end_ns - e->start_ns) / 1e3));
        else
            json_object_set_new(o, "s", json_string("t"));
        if (e->args)
            json_object_set(o, "args", e->args);
        json_array_append_new(events, o);
    }
    pthread_mutex_unlock(&t->lock);

    /* PATH.tmp, renamed over PATH */
    char err[2 * TERN_ATOMIC_FILE_PATH_MAX + 256];
    int rc = TERN_OK;
    tern_atomic_file a;
    FILE *f = NULL;
    if (tern_atomic_file_open(&a, path, err, sizeof err) != 0 ||
        !(f = tern_atomic_file_stream(&a, err, sizeof err)))
        rc = tern_errorf(TERN_EIO, "cannot write trace: %s", err);
    else if (json_dumpf(root, f, JSON_INDENT(0) | JSON_PRESERVE_ORDER) != 0)
        rc = tern_errorf(TERN_EIO, "%s: cannot write trace: %s", a.tmp, strerror(errno));
    else if (tern_atomic_file_commit(&a, err, sizeof err) != 0)
        rc = tern_errorf(TERN_EIO, "%s", err);
    tern_atomic_file_abort(&a);
    json_decref(root);
    return rc;
}
