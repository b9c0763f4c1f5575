/* path_join.h: "DIR/NAME" for the commands that name files in a folder. */
#ifndef TERN_PATH_JOIN_H
#define TERN_PATH_JOIN_H

/* "DIR/NAME" with one '/' between them (none added when DIR ends with one);
 * malloc'd, NULL when out of memory. */
char *tern_path_join(const char *dir, const char *name);

#endif
