/* arena.c: the template's memory (ast.h): chunks that are freed together. */
#include "jinja/ast.h"

#include <stdint.h>
#include <stdlib.h>

struct jinja_chunk {
    jinja_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

#define CHUNK_BYTES 16384

void *jinja_arena_alloc(jinja_arena *a, size_t n)
{
    size_t align = sizeof(max_align_t);
    if (n > SIZE_MAX / 2)
        return NULL;
    n = (n + align - 1) / align * align;
    if (n == 0)
        n = align;
    jinja_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    char *p = (char *)c->data + c->used;
    c->used += n;
    for (size_t i = 0; i < n; i++)
        p[i] = 0;
    return p;
}

json_t *jinja_arena_keep(jinja_arena *a, json_t *v)
{
    if (!v)
        return NULL;
    if (a->nlits == a->caplits) {
        size_t cap = a->caplits ? a->caplits * 2 : 64;
        json_t **p = realloc(a->lits, cap * sizeof *p);
        if (!p) {
            json_decref(v);
            return NULL;
        }
        a->lits = p;
        a->caplits = cap;
    }
    a->lits[a->nlits++] = v;
    return v;
}

void jinja_arena_free(jinja_arena *a)
{
    for (size_t i = 0; i < a->nlits; i++)
        json_decref(a->lits[i]);
    free(a->lits);
    jinja_chunk *c = a->head;
    while (c) {
        jinja_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->lits = NULL;
    a->nlits = a->caplits = 0;
}
