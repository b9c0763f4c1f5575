/* nearest_name.h: "did you mean ...?" for the tern command's own names (its
 * commands and subcommands), by the same edit distance as the config's keys
 * (core/src/config/suggest.h). */
#ifndef TERN_CLI_NEAREST_NAME_H
#define TERN_CLI_NEAREST_NAME_H

#include <stddef.h>

/* The name of names[0..n) (or up to a NULL, whichever comes first) close
 * enough to `word` to be a likely typo of it, or NULL. */
const char *cli_nearest_name(const char *word, const char *const *names, size_t n);

#endif
