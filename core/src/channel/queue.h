/* queue.h: a blocking queue of messages between the roles of a run (the
 * master's inbox, the explorers' job queues). Unbounded: producers never
 * block, so no two roles can deadlock on each other's queues; the sync plugin
 * and the buffer are what bound how far a role runs ahead. */
#ifndef TERN_CHANNEL_QUEUE_H
#define TERN_CHANNEL_QUEUE_H

#include <pthread.h>
#include <stddef.h>

typedef struct tern_queue_item tern_queue_item;

typedef struct tern_queue {
    pthread_mutex_t lock;
    pthread_cond_t nonempty;
    tern_queue_item *head, *tail;
    size_t n;
    int closed;
} tern_queue;

void tern_queue_init(tern_queue *q);
/* Free what is still queued with `drop` (may be NULL), then the queue. */
void tern_queue_destroy(tern_queue *q, void (*drop)(void *msg));
/* Append msg (not NULL). TERN_OK, TERN_ECLOSED after close, TERN_ENOMEM. */
int tern_queue_push(tern_queue *q, void *msg);
/* Take the oldest message, waiting for one. NULL once the queue is closed
 * and empty. */
void *tern_queue_pop(tern_queue *q);
/* As tern_queue_pop, waiting at most timeout_ms: TERN_OK with *msg set,
 * TERN_ETIMEDOUT, or TERN_ECLOSED once the queue is closed and empty (*msg
 * NULL). Lets a waiter look at flags between waits (the master: signals). */
int tern_queue_pop_wait(tern_queue *q, int timeout_ms, void **msg);
/* Refuse further pushes and wake every waiter; queued messages stay poppable. */
void tern_queue_close(tern_queue *q);

#endif
