/* data_parallel.c: data-parallel trainer ranks (see data_parallel.h). */
#include "loop/data_parallel.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "channel/transport_plugin.h"
#include "channel/wire.h"

struct tern_dp {
    tern_link *link;
    int index, size;
    int leader;          /* the leader's world rank; member i is leader + i */
    volatile int cancel; /* tern_dp_cancel */
    const tern_transport_plugin *tp; /* sums on the device when set */
};

int tern_dp_leads(const tern_dp *dp) { return !dp || dp->index == 0; }
int tern_dp_index(const tern_dp *dp) { return dp ? dp->index : 0; }
int tern_dp_size(const tern_dp *dp) { return dp ? dp->size : 1; }

void tern_dp_share(const tern_dp *dp, size_t n, size_t *lo, size_t *hi)
{
    tern_share_of(n, tern_dp_index(dp), tern_dp_size(dp), lo, hi);
}

tern_dp *tern_dp_open(tern_link *l, int index, int size, int leader)
{
    tern_dp *dp = calloc(1, sizeof *dp);
    if (!dp) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    *dp = (tern_dp){.link = l, .index = index, .size = size, .leader = leader};
    return dp;
}

void tern_dp_free(tern_dp *dp) { free(dp); }

void tern_dp_cancel(tern_dp *dp)
{
    if (dp)
        dp->cancel = 1;
}

#ifndef TERN_HAVE_MPI

/* A build without MPI never has more than one trainer (ranks.c refuses a
 * launch): dp is always NULL here. */
static int no_mpi(void) { return tern_errorf(TERN_ERR, "data-parallel trainers need MPI (a bug)"); }

int tern_dp_agree(tern_dp *dp, int rc) { return dp ? no_mpi() : rc; }
int tern_dp_gather(tern_dp *dp, float **arr, const tern_sequence *seq, size_t n, size_t per)
{
    (void)arr, (void)seq, (void)n, (void)per;
    return dp ? no_mpi() : TERN_OK;
}
int tern_dp_sum_gradients(tern_dp *dp, const tern_model *m)
{
    (void)m;
    return dp ? no_mpi() : TERN_OK;
}
int tern_dp_use_transport(tern_dp *dp, const struct tern_transport_plugin *p, const tern_model *m)
{
    (void)p, (void)m;
    return dp ? no_mpi() : TERN_OK;
}
int tern_dp_check_same(tern_dp *dp, const tern_model *m, int64_t step)
{
    (void)m, (void)step;
    return dp ? no_mpi() : TERN_OK;
}
int tern_dp_order(tern_dp *dp, tern_train_order order, int64_t step, const tern_sft_job *sft,
                  const tern_experience *groups, size_t n)
{
    (void)order, (void)step, (void)sft, (void)groups, (void)n;
    return dp ? no_mpi() : TERN_OK;
}
int tern_dp_next(tern_dp *dp, tern_train_msg **order)
{
    (void)dp;
    *order = NULL;
    return no_mpi();
}
void tern_dp_close(tern_dp *dp) { (void)dp; }

#else

int tern_dp_agree(tern_dp *dp, int rc)
{
    if (!dp)
        return rc;
    int who = -1;
    int agreed = tern_link_trainers_agree(dp->link, rc, &who, &dp->cancel);
    if (rc != TERN_OK || agreed == TERN_OK)
        return rc; /* our own failure (its message is set), or none */
    if (who < 0)
        return agreed; /* the agreement itself failed: its message */
    tern_error_clear(); /* trainer rank `who` reports why */
    return TERN_ECLOSED;
}

int tern_dp_gather(tern_dp *dp, float **arr, const tern_sequence *seq, size_t n, size_t per)
{
    if (!dp || dp->size == 1)
        return TERN_OK;
    int *counts = calloc((size_t)dp->size, sizeof *counts);
    int *displs = calloc((size_t)dp->size, sizeof *displs);
    float *buf = NULL;
    int rc = counts && displs ? TERN_OK : tern_errorf(TERN_ENOMEM, "out of memory");
    size_t units = per ? n / per : 0, total = 0;
    for (int r = 0; r < dp->size && rc == TERN_OK; r++) {
        size_t lo, hi, c = 0;
        tern_share_of(units, r, dp->size, &lo, &hi);
        for (size_t i = lo * per; i < hi * per; i++)
            c += seq[i].len;
        if (total + c > INT_MAX) /* MPI counts are int */
            rc = tern_errorf(TERN_EINVAL, "trainer: a batch of over %d scores cannot be "
                             "gathered across trainer ranks: lower trainer.batch_tasks",
                             INT_MAX);
        displs[r] = (int)total;
        counts[r] = (int)c;
        total += c;
    }
    if (rc == TERN_OK && !(buf = malloc((total ? total : 1) * sizeof *buf)))
        rc = tern_errorf(TERN_ENOMEM, "out of memory for %zu gathered scores", total);
    size_t lo, hi;
    tern_share_of(units, dp->index, dp->size, &lo, &hi);
    if (rc == TERN_OK) {
        float *p = buf + displs[dp->index];
        for (size_t i = lo * per; i < hi * per; i++) {
            memcpy(p, arr[i], seq[i].len * sizeof *p);
            p += seq[i].len;
        }
        rc = tern_link_trainers_gather(dp->link, buf, counts, displs, &dp->cancel);
    }
    if (rc == TERN_OK) {
        const float *p = buf;
        for (size_t i = 0; i < units * per; i++) {
            if (i < lo * per || i >= hi * per)
                memcpy(arr[i], p, seq[i].len * sizeof *p);
            p += seq[i].len;
        }
    }
    free(buf);
    free(counts);
    free(displs);
    return rc;
}

static int trainers_bootstrap(void *user, void *buf, size_t bytes)
{
    return tern_link_trainers_bcast(user, buf, bytes);
}

int tern_dp_use_transport(tern_dp *dp, const tern_transport_plugin *p, const tern_model *m)
{
    if (!dp)
        return TERN_OK;
    const tern_tensor *g;
    size_t n;
    int32_t device = 0;
    int rc = tern_model_device_gradients(m, "trainer: the model's gradients on its device", &g,
                                         &n, &device);
    int index = 0, size = 0;
    if (rc == TERN_OK)
        rc = tern_link_trainers_place(dp->link, &index, &size);
    if (rc != TERN_OK)
        return rc;
    tern_transport_group grp = {.size = sizeof grp,
                                .role = index == 0 ? TERN_TRANSPORT_SENDER
                                                   : TERN_TRANSPORT_RECEIVER,
                                .rank = index, .n_ranks = size, .device = device,
                                .bootstrap_bcast = trainers_bootstrap, .user = dp->link};
    tern_error_clear();
    rc = p->ops->join_trainers(p->state, &grp);
    if (rc != TERN_OK)
        return tern_errorf(rc, "transport '%s': joining the trainer ranks (%d of %d): %s",
                           p->name, index, size,
                           *tern_error_message() ? tern_error_message() : "no reason given");
    dp->tp = p;
    return TERN_OK;
}

int tern_dp_sum_gradients(tern_dp *dp, const tern_model *m)
{
    if (!dp || dp->size == 1)
        return TERN_OK;
    const tern_tensor *g;
    size_t n;
    if (dp->tp) {
        /* on the device: the plugin's allreduce (nccl) */
        int32_t device;
        int rc = tern_model_device_gradients(m, "trainer: summing gradients", &g, &n, &device);
        if (rc != TERN_OK)
            return rc;
        tern_error_clear();
        rc = dp->tp->ops->sum(dp->tp->state, g, n);
        if (rc != TERN_OK)
            return tern_errorf(rc, "transport '%s': summing the trainer ranks' gradients: %s",
                               dp->tp->name,
                               *tern_error_message() ? tern_error_message() : "no reason given");
        return TERN_OK;
    }
    int rc = tern_model_gradients(m, "trainer: summing gradients", &g, &n);
    /* one sum over each run of tensors that lie end to end in memory (the
     * transformer plugin's are one block) */
    for (size_t i = 0; i < n && rc == TERN_OK;) {
        if (g[i].dtype != TERN_DTYPE_F32)
            return tern_errorf(TERN_EINVAL, "trainer: the model's gradient %s is not float32 "
                               "(dtype %u): a bug in the model plugin", g[i].name, g[i].dtype);
        char *start = g[i].data;
        size_t bytes = g[i].bytes, j = i + 1;
        while (j < n && g[j].dtype == TERN_DTYPE_F32 && (char *)g[j].data == start + bytes)
            bytes += g[j++].bytes;
        rc = tern_link_trainers_sum(dp->link, (float *)(void *)start, bytes / sizeof(float),
                                    &dp->cancel);
        i = j;
    }
    return rc;
}

/* FNV-1a over 8-byte words, then the tail's bytes. */
static uint64_t hash_bytes(uint64_t h, const unsigned char *p, size_t n)
{
    const uint64_t prime = 0x100000001b3ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * prime;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * prime;
    return h;
}

int tern_dp_check_same(tern_dp *dp, const tern_model *m, int64_t step)
{
    if (!dp || dp->size == 1)
        return TERN_OK;
    const tern_tensor *t;
    size_t n;
    int rc = tern_model_tensors(m, "trainer: comparing the trainer ranks' weights", &t, &n);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n && rc == TERN_OK; i++)
        h = hash_bytes(h, t[i].data, t[i].bytes);
    if ((rc = tern_dp_agree(dp, rc)) != TERN_OK)
        return rc;
    int same = 0;
    if ((rc = tern_link_trainers_same(dp->link, h, &same, &dp->cancel)) != TERN_OK)
        return rc;
    if (!same)
        return tern_errorf(TERN_ERR, "trainer: after step %lld the %d trainer ranks hold "
                           "different weights, though each applied the same summed gradients: "
                           "the ranks do not compute alike (different tern builds or CPU "
                           "code paths?); run them on one kind of machine with one tern",
                           (long long)step, dp->size);
    return TERN_OK;
}

/* Encode and send the order to every other member. */
int tern_dp_order(tern_dp *dp, tern_train_order order, int64_t step, const tern_sft_job *sft,
                  const tern_experience *groups, size_t n)
{
    if (!dp || dp->size == 1)
        return TERN_OK;
    tern_train_msg m = {.kind = TERN_MSG_TRAIN, .order = (uint32_t)order, .step = step,
                        .sft = (tern_sft_job *)sft, .n = (uint32_t)n};
    int rc = TERN_OK;
    if (n) {
        m.group = calloc(n, sizeof *m.group);
        m.group_len = calloc(n, sizeof *m.group_len);
        if (!m.group || !m.group_len)
            rc = tern_errorf(TERN_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        m.group_len[i] = tern_experience_bytes(&groups[i]);
        if (!(m.group[i] = malloc(m.group_len[i])))
            rc = tern_errorf(TERN_ENOMEM, "out of memory");
        else
            tern_experience_encode(&groups[i], m.group[i]);
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    if (rc == TERN_OK)
        rc = tern_wire_encode(&m, &buf, &len);
    for (int r = 1; r < dp->size && rc == TERN_OK; r++)
        rc = tern_link_send(dp->link, dp->leader + r, TERN_TAG_TRAIN, buf, len);
    free(buf);
    for (size_t i = 0; m.group && i < n; i++)
        free(m.group[i]);
    free(m.group);
    free(m.group_len);
    return rc;
}

int tern_dp_next(tern_dp *dp, tern_train_msg **order)
{
    *order = NULL;
    void *buf = NULL, *msg = NULL;
    size_t len = 0;
    int rc = tern_link_recv(dp->link, TERN_TAG_TRAIN, -1, &buf, &len, NULL);
    if (rc != TERN_OK)
        return rc;
    rc = tern_wire_decode(buf, len, &msg);
    free(buf);
    if (rc != TERN_OK)
        return tern_errorf(rc, "trainer rank %d: an order from the leading trainer: %s",
                           dp->leader + dp->index, tern_error_message());
    int kind = (int)*(tern_msg_kind *)msg;
    if (kind != TERN_MSG_TRAIN) {
        tern_msg_free(msg);
        return tern_errorf(TERN_EINVAL, "trainer rank %d: the leading trainer sent a message of "
                           "kind %d where an order belongs (a bug)", dp->leader + dp->index,
                           kind);
    }
    *order = msg;
    return TERN_OK;
}

void tern_dp_close(tern_dp *dp)
{
    if (dp)
        tern_link_close_tag(dp->link, TERN_TAG_TRAIN);
}

#endif
