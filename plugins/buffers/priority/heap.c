/* heap.c: the indexed binary heap of the `priority` buffer (see heap.h). */
#include "heap.h"

#include <stdlib.h>

static size_t *pos_of(const heap *h, void *x) { return (size_t *)((char *)x + h->pos_off); }

/* Put x at index i and tell it so. */
static void place(heap *h, size_t i, void *x)
{
    h->a[i] = x;
    *pos_of(h, x) = i;
}

static void sift_up(heap *h, size_t i)
{
    void *x = h->a[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!h->above(x, h->a[parent]))
            break;
        place(h, i, h->a[parent]);
        i = parent;
    }
    place(h, i, x);
}

static void sift_down(heap *h, size_t i)
{
    void *x = h->a[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->above(h->a[c + 1], h->a[c]))
            c++;
        if (!h->above(h->a[c], x))
            break;
        place(h, i, h->a[c]);
        i = c;
    }
    place(h, i, x);
}

void heap_init(heap *h, size_t pos_off, heap_above_fn above)
{
    h->a = NULL;
    h->n = h->cap = 0;
    h->pos_off = pos_off;
    h->above = above;
}

void heap_free(heap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

int heap_reserve(heap *h, size_t n)
{
    if (n <= h->cap)
        return 0;
    /* grow geometrically so a run of puts reallocates O(log capacity) times */
    size_t cap = h->cap ? h->cap : 64;
    while (cap < n)
        cap = cap > SIZE_MAX / 2 ? n : cap * 2;
    if (cap > SIZE_MAX / sizeof *h->a)
        return -1;
    void **a = realloc(h->a, cap * sizeof *a);
    if (!a)
        return -1;
    h->a = a;
    h->cap = cap;
    return 0;
}

void heap_push(heap *h, void *x)
{
    place(h, h->n++, x);
    if (h->above)
        sift_up(h, h->n - 1);
}

void heap_remove(heap *h, void *x)
{
    size_t i = *pos_of(h, x);
    void *last = h->a[--h->n];
    *pos_of(h, x) = HEAP_NONE;
    if (i == h->n)
        return; /* x was the last element */
    place(h, i, last);
    if (h->above) {
        /* the moved element may belong above or below the hole */
        sift_up(h, i);
        sift_down(h, *pos_of(h, last));
    }
}
