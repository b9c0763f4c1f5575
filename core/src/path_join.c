/* path_join.c: tern_path_join (see path_join.h). */
#include "path_join.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tern_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    int slash = n > 0 && dir[n - 1] == '/';
    size_t len = n + 1 + strlen(name) + 1;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", name);
    return p;
}
