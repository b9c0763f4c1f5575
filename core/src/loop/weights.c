/* weights.c: snapshots and the weight store (see weights.h). */
#include "weights.h"

#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "loop/transport.h"

typedef struct snap_tensor {
    char *name;
    size_t bytes;
    size_t offset; /* into data */
} snap_tensor;

struct tern_snapshot {
    int64_t version;
    snap_tensor *t;
    size_t n;
    unsigned char *data;
    size_t bytes;
};

static int model_tensors(const tern_model_ops *ops, void *model, const tern_tensor **t, size_t *n)
{
    tern_error_clear();
    int rc = ops->tensors(model, t, n);
    if (rc != TERN_OK) {
        const char *m = tern_error_message();
        return tern_errorf(rc, "the model cannot list its tensors: %s",
                           *m ? m : "it gave no reason");
    }
    return TERN_OK;
}

void tern_snapshot_free(tern_snapshot *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->t[i].name);
    free(s->t);
    free(s->data);
    free(s);
}

tern_snapshot *tern_snapshot_take(const tern_model_ops *ops, void *model, int64_t version)
{
    const tern_tensor *t;
    size_t n;
    if (model_tensors(ops, model, &t, &n) != TERN_OK)
        return NULL;
    tern_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        goto oom;
    s->version = version;
    s->t = calloc(n ? n : 1, sizeof *s->t);
    if (!s->t)
        goto oom;
    for (size_t i = 0; i < n; i++)
        s->bytes += t[i].bytes;
    s->data = malloc(s->bytes ? s->bytes : 1);
    if (!s->data)
        goto oom;
    size_t off = 0;
    for (size_t i = 0; i < n; i++, s->n++) {
        s->t[i].name = strdup(t[i].name ? t[i].name : "");
        if (!s->t[i].name)
            goto oom;
        s->t[i].bytes = t[i].bytes;
        s->t[i].offset = off;
        memcpy(s->data + off, t[i].data, t[i].bytes);
        off += t[i].bytes;
    }
    return s;
oom:
    tern_snapshot_free(s);
    tern_errorf(TERN_ENOMEM, "out of memory copying the model's weights");
    return NULL;
}

int tern_snapshot_apply(const tern_snapshot *s, const tern_model_ops *ops, void *model)
{
    const tern_tensor *t;
    size_t n;
    int rc = model_tensors(ops, model, &t, &n);
    if (rc != TERN_OK)
        return rc;
    if (n != s->n)
        return tern_errorf(TERN_EINVAL, "weights of %zu tensors cannot be loaded into a model "
                           "of %zu tensors: both roles must use the same model settings", s->n, n);
    for (size_t i = 0; i < n; i++)
        if (t[i].bytes != s->t[i].bytes || strcmp(t[i].name ? t[i].name : "", s->t[i].name))
            return tern_errorf(TERN_EINVAL, "tensor %zu differs: '%s' (%zu bytes) published, "
                               "'%s' (%zu bytes) in the receiving model", i, s->t[i].name,
                               s->t[i].bytes, t[i].name ? t[i].name : "", t[i].bytes);
    for (size_t i = 0; i < n; i++)
        memcpy(t[i].data, s->data + s->t[i].offset, t[i].bytes);
    return TERN_OK;
}

int64_t tern_snapshot_version(const tern_snapshot *s) { return s->version; }

int tern_weights_copy(const tern_model_ops *ops, void *from, void *to)
{
    tern_snapshot *s = tern_snapshot_take(ops, from, 0);
    if (!s)
        return TERN_ENOMEM;
    int rc = tern_snapshot_apply(s, ops, to);
    tern_snapshot_free(s);
    return rc;
}


int tern_snapshot_refill(tern_snapshot *s, const tern_model_ops *ops, void *model,
                         int64_t version)
{
    const tern_tensor *t;
    size_t n;
    int rc = model_tensors(ops, model, &t, &n);
    if (rc != TERN_OK)
        return rc;
    if (n != s->n)
        return TERN_ENOTFOUND;
    for (size_t i = 0; i < n; i++)
        if (t[i].bytes != s->t[i].bytes || strcmp(t[i].name ? t[i].name : "", s->t[i].name))
            return TERN_ENOTFOUND;
    for (size_t i = 0; i < n; i++)
        memcpy(s->data + s->t[i].offset, t[i].data, t[i].bytes);
    s->version = version;
    return TERN_OK;
}

/* ---- the store: a front over one transport ----------------------------------- */

struct tern_weight_store {
    const tern_transport_ops *ops;
    void *impl;
};

tern_weight_store *tern_weights_open(const char *method, const char *dir)
{
    tern_weight_store *w = calloc(1, sizeof *w);
    if (!w) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    if (!method || strcmp(method, "memory") == 0) {
        w->ops = &tern_transport_memory;
        w->impl = tern_transport_memory_new();
    } else if (strcmp(method, "checkpoint") == 0) {
        w->ops = &tern_transport_checkpoint;
        w->impl = tern_transport_checkpoint_new(dir);
    } else {
        tern_errorf(TERN_EUNSUPPORTED, "weight transport \"%s\" is not built into this tern "
                    "(memory, checkpoint)", method);
    }
    if (!w->impl) {
        free(w);
        return NULL;
    }
    return w;
}

tern_weight_store *tern_weights_new(void) { return tern_weights_open("memory", NULL); }

void tern_weights_free(tern_weight_store *w)
{
    if (!w)
        return;
    w->ops->destroy(w->impl);
    free(w);
}

const char *tern_weights_method(const tern_weight_store *w) { return w->ops->method; }

int tern_weights_publish(tern_weight_store *w, const tern_model_ops *ops, void *model,
                         int64_t version)
{
    return w->ops->publish(w->impl, ops, model, version);
}

int tern_weights_load(tern_weight_store *w, const tern_model_ops *ops, void *model,
                      int64_t version, int64_t *loaded, uint64_t *waited_ns)
{
    return w->ops->load(w->impl, ops, model, version, loaded, waited_ns);
}

void tern_weights_forget_before(tern_weight_store *w, int64_t version)
{
    w->ops->forget_before(w->impl, version);
}

int64_t tern_weights_newest(tern_weight_store *w) { return w->ops->newest(w->impl); }

void tern_weights_close(tern_weight_store *w) { w->ops->close(w->impl); }
