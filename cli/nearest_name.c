/* nearest_name.c: see nearest_name.h. */
#include "nearest_name.h"

#include "config/suggest.h"

const char *cli_nearest_name(const char *word, const char *const *names, size_t n)
{
    tern_suggest s;
    tern_suggest_init(&s, word);
    for (size_t i = 0; i < n && names[i]; i++)
        tern_suggest_offer(&s, names[i], names[i]);
    return tern_suggest_best(&s);
}
