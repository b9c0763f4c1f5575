/* made_dirs.h: `mkdir -p` that remembers which directories it created, so a
 * command that fails afterwards can remove exactly those (nothing that was
 * there before). `tern model init` and `tern data arith` use it. */
#ifndef TERN_MADE_DIRS_H
#define TERN_MADE_DIRS_H

#include <stddef.h>

/* Directories created, outermost first. Start with {0}. */
typedef struct tern_made_dirs {
    char *paths[64];
    size_t n;
} tern_made_dirs;

/* mkdir -p `dir`, adding what it created to *made. 0, or -1 with errno set. */
int tern_make_dirs(const char *dir, tern_made_dirs *made);
/* rmdir the created directories, innermost first (each only if empty). */
void tern_made_dirs_remove(const tern_made_dirs *made);
/* Forget them (free the paths). */
void tern_made_dirs_free(tern_made_dirs *made);

#endif
