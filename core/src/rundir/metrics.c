/* metrics.c: per-step metric accumulators (see metrics.h). */
#include "rundir/metrics.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

typedef struct metric {
    char name[128];
    double sum;
    uint64_t count;
} metric;

struct tern_metrics {
    pthread_mutex_t lock;
    metric *m;
    size_t n, cap;
    json_t *notes; /* {who: {key: value}}, made at the first note */
};

tern_metrics *tern_metrics_new(void)
{
    tern_metrics *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

void tern_metrics_free(tern_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    json_decref(m->notes);
    free(m->m);
    free(m);
}

void tern_metrics_note(tern_metrics *m, const char *who, const char *key, const char *value)
{
    if (!m || !who || !key || !value)
        return;
    pthread_mutex_lock(&m->lock);
    if (!m->notes)
        m->notes = json_object();
    json_t *of = m->notes ? json_object_get(m->notes, who) : NULL;
    if (m->notes && !of && json_object_set_new(m->notes, who, json_object()) == 0)
        of = json_object_get(m->notes, who);
    /* a note lost for lack of memory is not worth failing a run */
    if (of)
        json_object_set_new(of, key, json_string(value));
    pthread_mutex_unlock(&m->lock);
}

json_t *tern_metrics_notes(tern_metrics *m)
{
    if (!m)
        return json_object();
    pthread_mutex_lock(&m->lock);
    json_t *copy = m->notes ? json_deep_copy(m->notes) : json_object();
    pthread_mutex_unlock(&m->lock);
    return copy;
}

void tern_metrics_observe(tern_metrics *m, const char *name, double value)
{
    if (!m || !name)
        return;
    pthread_mutex_lock(&m->lock);
    size_t i = 0;
    /* a handful of metrics per run: a linear search is the simple choice */
    while (i < m->n && strncmp(m->m[i].name, name, sizeof m->m[i].name - 1) != 0)
        i++;
    if (i == m->n) {
        if (m->n == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 16;
            metric *nm = realloc(m->m, cap * sizeof *nm);
            if (!nm) {
                pthread_mutex_unlock(&m->lock);
                return; /* a metric lost for lack of memory is not worth failing a step */
            }
            m->m = nm;
            m->cap = cap;
        }
        memset(&m->m[i], 0, sizeof m->m[i]);
        snprintf(m->m[i].name, sizeof m->m[i].name, "%s", name);
        m->n++;
    }
    m->m[i].sum += value;
    m->m[i].count++;
    pthread_mutex_unlock(&m->lock);
}

void tern_metrics_drain_json(tern_metrics *m, json_t *o)
{
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->n; i++) {
        metric *x = &m->m[i];
        if (!x->count)
            continue;
        char cname[160];
        snprintf(cname, sizeof cname, "%s.count", x->name);
        json_object_set_new(o, x->name, json_real(x->sum / (double)x->count));
        json_object_set_new(o, cname, json_integer((json_int_t)x->count));
        x->sum = 0;
        x->count = 0;
    }
    pthread_mutex_unlock(&m->lock);
}

int tern_metrics_write_step(tern_metrics *m, FILE *f, int64_t step)
{
    json_t *o = json_object();
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory writing metrics");
    json_object_set_new(o, "step", json_integer(step));
    tern_metrics_drain_json(m, o);
    int rc = TERN_OK;
    if (json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF ||
        fflush(f) != 0)
        rc = tern_errorf(TERN_EIO, "cannot write metrics: %s", strerror(errno));
    json_decref(o);
    return rc;
}
