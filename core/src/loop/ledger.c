/* ledger.c: the consumption ledger (see ledger.h). The window of batches
 * above the watermark is short -- the batches dealt but not yet consumed
 * whole, a few per explorer -- so a byte per group is plenty. */
#include "loop/ledger.h"

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

void tern_ledger_init(tern_ledger *l, uint32_t per_batch)
{
    memset(l, 0, sizeof *l);
    l->per_batch = per_batch ? per_batch : 1;
}

void tern_ledger_free(tern_ledger *l)
{
    free(l->seen);
    free(l->pending);
    free(l->held);
    memset(l, 0, sizeof *l);
}

/* Make the window reach batch b. */
static int reach(tern_ledger *l, int64_t b)
{
    size_t need = (size_t)(b - l->from) + 1;
    if (need <= l->window)
        return TERN_OK;
    size_t w = l->window ? l->window : 8;
    while (w < need)
        w *= 2;
    uint8_t *s = realloc(l->seen, w * l->per_batch);
    if (!s)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    memset(s + l->window * l->per_batch, 0, (w - l->window) * l->per_batch);
    l->seen = s;
    l->window = w;
    return TERN_OK;
}

/* Move the watermark past the batches consumed whole. */
static void advance(tern_ledger *l)
{
    size_t k = 0, P = l->per_batch;
    while (k < l->window) {
        size_t s = 0;
        while (s < P && l->seen[k * P + s])
            s++;
        if (s < P)
            break;
        k++;
    }
    if (!k)
        return;
    memmove(l->seen, l->seen + k * P, (l->window - k) * P);
    memset(l->seen + (l->window - k) * P, 0, k * P);
    l->from += (int64_t)k;
    l->above -= (uint64_t)k * P;
}

static int mark(tern_ledger *l, uint64_t id)
{
    int64_t b = (int64_t)(id / l->per_batch);
    if (b < l->from)
        return TERN_OK;
    int rc = reach(l, b);
    if (rc != TERN_OK)
        return rc;
    uint8_t *s = &l->seen[(size_t)(b - l->from) * l->per_batch + id % l->per_batch];
    if (!*s) {
        *s = 1;
        l->above++;
    }
    return TERN_OK;
}

int tern_ledger_consume(tern_ledger *l, const uint64_t *ids, size_t n)
{
    if (l->n_pending + n > l->cap_pending) {
        size_t c = l->cap_pending ? 2 * l->cap_pending : 64;
        while (c < l->n_pending + n)
            c *= 2;
        uint64_t *p = realloc(l->pending, c * sizeof *p);
        if (!p)
            return tern_errorf(TERN_ENOMEM, "out of memory");
        l->pending = p;
        l->cap_pending = c;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = mark(l, ids[i]);
        if (rc != TERN_OK)
            return rc;
        l->pending[l->n_pending++] = ids[i];
    }
    advance(l);
    return TERN_OK;
}

int tern_ledger_consumed(const tern_ledger *l, uint64_t id)
{
    int64_t b = (int64_t)(id / l->per_batch);
    if (b < l->from)
        return 1;
    if ((size_t)(b - l->from) >= l->window)
        return 0;
    return l->seen[(size_t)(b - l->from) * l->per_batch + id % l->per_batch];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int tern_ledger_held(const tern_ledger *l, uint64_t id)
{
    return l->n_held && bsearch(&id, l->held, l->n_held, sizeof id, cmp_u64) != NULL;
}

void tern_ledger_set_held(tern_ledger *l, uint64_t *ids, size_t n)
{
    free(l->held);
    if (n)
        qsort(ids, n, sizeof *ids, cmp_u64);
    l->held = ids;
    l->n_held = n;
}

static json_t *id_array(const uint64_t *ids, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_integer((json_int_t)ids[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *tern_ledger_to_json(const tern_ledger *l)
{
    json_t *above = json_array();
    for (size_t k = 0; above && k < l->window; k++)
        for (uint32_t s = 0; s < l->per_batch; s++)
            if (l->seen[k * l->per_batch + s] &&
                json_array_append_new(above, json_integer((json_int_t)tern_group_id(
                                                 l->from + (int64_t)k, s, l->per_batch))) != 0) {
                json_decref(above);
                return NULL;
            }
    json_t *pending = id_array(l->pending, l->n_pending);
    if (!above || !pending) {
        json_decref(above);
        json_decref(pending);
        return NULL;
    }
    return json_pack("{s:I,s:o,s:o}", "from", (json_int_t)l->from, "consumed", above,
                     "uncommitted", pending);
}

/* Read the array `key` of ids into a malloc'd array. */
static int read_ids(const json_t *j, const char *key, uint64_t **ids, size_t *n,
                    const char *ckpt)
{
    const json_t *a = json_object_get(j, key);
    *ids = NULL;
    *n = 0;
    if (!json_is_array(a))
        return tern_errorf(TERN_EINVAL, "%s/state.json: ledger.%s is not an array of group ids",
                           ckpt, key);
    size_t m = json_array_size(a);
    if (!m)
        return TERN_OK;
    uint64_t *v = malloc(m * sizeof *v);
    if (!v)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t i = 0; i < m; i++) {
        const json_t *x = json_array_get(a, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0) {
            free(v);
            return tern_errorf(TERN_EINVAL, "%s/state.json: ledger.%s[%zu] is not a group id",
                               ckpt, key, i);
        }
        v[i] = (uint64_t)json_integer_value(x);
    }
    *ids = v;
    *n = m;
    return TERN_OK;
}

int tern_ledger_from_json(tern_ledger *l, const json_t *j, int64_t step, const char *ckpt)
{
    uint32_t P = l->per_batch;
    tern_ledger_free(l);
    tern_ledger_init(l, P);
    if (!j) {
        l->from = step;
        return TERN_OK;
    }
    const json_t *from = json_object_get(j, "from");
    if (!json_is_object(j) || !json_is_integer(from) || json_integer_value(from) < 0)
        return tern_errorf(TERN_EINVAL, "%s/state.json: \"ledger\" is not a consumption ledger "
                           "(no \"from\" batch)", ckpt);
    l->from = json_integer_value(from);
    uint64_t *ids = NULL;
    size_t n = 0;
    int rc = read_ids(j, "consumed", &ids, &n, ckpt);
    for (size_t i = 0; rc == TERN_OK && i < n; i++)
        rc = mark(l, ids[i]);
    free(ids);
    if (rc == TERN_OK)
        rc = read_ids(j, "uncommitted", &ids, &n, ckpt);
    if (rc == TERN_OK) {
        l->pending = ids;
        l->n_pending = l->cap_pending = n;
        advance(l);
    }
    return rc;
}
