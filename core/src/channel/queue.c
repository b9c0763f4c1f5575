/* queue.c: see queue.h. */
#include "channel/queue.h"

#include <stdlib.h>
#include <time.h>

#include "base/errmsg.h"

struct tern_queue_item {
    void *msg;
    tern_queue_item *next;
};

void tern_queue_init(tern_queue *q)
{
    pthread_mutex_init(&q->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* timed waits immune to clock changes */
    pthread_cond_init(&q->nonempty, &ca);
    pthread_condattr_destroy(&ca);
    q->head = q->tail = NULL;
    q->n = 0;
    q->closed = 0;
}

void tern_queue_destroy(tern_queue *q, void (*drop)(void *msg))
{
    for (tern_queue_item *it = q->head, *next; it; it = next) {
        next = it->next;
        if (drop)
            drop(it->msg);
        free(it);
    }
    q->head = q->tail = NULL;
    pthread_cond_destroy(&q->nonempty);
    pthread_mutex_destroy(&q->lock);
}

int tern_queue_push(tern_queue *q, void *msg)
{
    tern_queue_item *it = malloc(sizeof *it);
    if (!it)
        return tern_errorf(TERN_ENOMEM, "out of memory queueing a message");
    it->msg = msg;
    it->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->closed) {
        pthread_mutex_unlock(&q->lock);
        free(it);
        return TERN_ECLOSED;
    }
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->n++;
    pthread_cond_signal(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
    return TERN_OK;
}

/* Take the head, or NULL; the caller holds q->lock. */
static void *take(tern_queue *q)
{
    tern_queue_item *it = q->head;
    if (!it)
        return NULL;
    q->head = it->next;
    if (!q->head)
        q->tail = NULL;
    q->n--;
    void *msg = it->msg;
    free(it);
    return msg;
}

int tern_queue_pop_wait(tern_queue *q, int timeout_ms, void **msg)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int timed_out = 0;
    pthread_mutex_lock(&q->lock);
    while (!q->head && !q->closed && !timed_out)
        timed_out = pthread_cond_timedwait(&q->nonempty, &q->lock, &until) != 0;
    *msg = take(q);
    pthread_mutex_unlock(&q->lock);
    if (*msg)
        return TERN_OK;
    return timed_out ? TERN_ETIMEDOUT : TERN_ECLOSED;
}

void *tern_queue_pop(tern_queue *q)
{
    pthread_mutex_lock(&q->lock);
    while (!q->head && !q->closed)
        pthread_cond_wait(&q->nonempty, &q->lock);
    void *msg = take(q);
    pthread_mutex_unlock(&q->lock);
    return msg;
}

void tern_queue_close(tern_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}
