/* config_diff.h: the first setting in which two resolved configs differ
 * (a run on MPI ranks checks that every rank was launched with the
 * master's: loop/ranks_worker.c). */
#ifndef TERN_CONFIG_DIFF_H
#define TERN_CONFIG_DIFF_H

#include <libconfig.h>
#include <stddef.h>

/* The config as text (libconfig's own writing of it, as config.cfg holds
 * it): malloc'd, NULL without memory. */
char *tern_config_to_text(const config_t *c);

/* 1 when a and b differ, with the first differing setting's path
 * ("explorer.group_size", "rewards.[0].weight") in path[0..pn) and each
 * side's value as text in va, vb ("8", "(none)" where one side has no such
 * setting, "a group" and the like for another type); 0 when they are the
 * same (names, types and values, in any member order). */
int tern_config_first_difference(const config_t *a, const config_t *b, char *path, size_t pn,
                                 char *va, char *vb, size_t vn);

#endif
