/*
 * heap.h: an indexed binary heap of pointers for the `priority` buffer.
 *
 * Each element stores its own index in the heap (a size_t member at `pos_off`
 * in the element), so an element anywhere in the heap can be removed in
 * O(log n) without a search. With `above` set the array is a binary heap whose
 * top is the element for which above() holds against every other; with `above`
 * NULL it is an unordered bag (push appends, remove moves the last element into
 * the hole), which gives O(1) insertion, removal and uniform random access.
 *
 * Not thread-safe: the buffer's mutex guards every call. Push never allocates:
 * the caller reserves room first, so that only the put path can run out of
 * memory and requeueing a released record cannot fail.
 */
#ifndef TERN_PRIORITY_HEAP_H
#define TERN_PRIORITY_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* An element's position when it is in no heap. */
#define HEAP_NONE SIZE_MAX

/* Nonzero when `x` belongs nearer the top than `y` (a strict order). */
typedef int (*heap_above_fn)(const void *x, const void *y);

typedef struct heap {
    void **a;            /* a[0..n): the elements; a[0] is the top when ordered */
    size_t n, cap;       /* elements held, room allocated */
    size_t pos_off;      /* offset of the element's size_t position member */
    heap_above_fn above; /* the order, or NULL for an unordered bag */
} heap;

void heap_init(heap *h, size_t pos_off, heap_above_fn above);
/* Free the array (not the elements). */
void heap_free(heap *h);
/* Make room for `n` elements in all. Returns 0, or -1 when out of memory
 * (the heap is then unchanged). */
int heap_reserve(heap *h, size_t n);
/* Add `x` (room reserved, x in no other position of this heap). */
void heap_push(heap *h, void *x);
/* Remove `x`, which is in the heap; its position becomes HEAP_NONE. */
void heap_remove(heap *h, void *x);
/* The top element (ordered heaps) or element i (0 <= i < n); n must be > 0. */
static inline void *heap_at(const heap *h, size_t i) { return h->a[i]; }

#endif /* TERN_PRIORITY_HEAP_H */
