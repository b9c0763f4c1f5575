/* flags.h: the flag parser of the `tern` program (main.c). A command is one
 * table of flags, ended by an entry whose name is NULL:
 *
 *   tern_flag flags[] = {
 *       {"--seed", .kind = TERN_FLAG_U64, TERN_FLAG_TO(a.seed)},
 *       {"--n", .kind = TERN_FLAG_INT, TERN_FLAG_TO(a.n_images), .min = 1, .max = 100000},
 *       {"-o", "--output", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(a.out_path),
 *        .opts = TERN_FLAG_NONEMPTY, .need = "a file name (or - for stdout)"},
 *       TERN_FLAGS_END,
 *   };
 *
 * cli_flags_parse() walks argv once, left to right: -h or --help prints the
 * command's help; a flag takes its value as "NAME VALUE" or "NAME=VALUE"
 * (and "-oVALUE" with TERN_FLAG_ATTACHED), checks it and stores it; any other
 * word starting with '-' (but "-" alone) is an unknown option; the rest are
 * the positional arguments. The first problem is printed to stderr as one
 * line, "tern: <what is wrong and what to give>", then the usage line:
 *   NAME needs a value                       (a value is missing)
 *   NAME needs a whole number from A to B (got 'V')
 *   NAME needs a whole number >= A (got 'V') (TERN_FLAG_INT with max LLONG_MAX)
 *   NAME needs <need> (got 'V')              (TERN_FLAG_DOUBLE)
 *   NAME needs <need>                        (an empty TERN_FLAG_NONEMPTY string)
 *   unknown option 'ARG'
 *   unexpected argument 'ARG'<extra_hint>    (more positional arguments than allowed)
 * Values are checked when read, so a later flag is not looked at after a bad
 * one. The strings stored are argv's own. */
#ifndef TERN_CLI_FLAGS_H
#define TERN_CLI_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#include "tern/host.h" /* TERN_PRINTF */

/* What cli_flags_parse() returns when every argument was taken: go on. */
#define TERN_FLAGS_GO_ON (-1)

typedef enum tern_flag_kind {
    TERN_FLAG_STRING, /* a text (const char *) */
    TERN_FLAG_INT,    /* a decimal whole number in [min, max], into an integer of 4 or 8
                         bytes that holds that range */
    TERN_FLAG_U64,    /* a decimal whole number from 0 to 2^64 - 1 (a seed), into 8 bytes */
    TERN_FLAG_DOUBLE, /* a finite decimal number in [lo, hi] (or (lo, hi]), into a double */
    TERN_FLAG_BOOL,   /* no value; sets an int to 1. Only "NAME" itself */
} tern_flag_kind;

/* tern_flag.opts */
#define TERN_FLAG_NONEMPTY 1u  /* STRING: "" is refused with "NAME needs <need>" */
#define TERN_FLAG_ATTACHED 2u  /* "-oVALUE" is "-o VALUE" too (for name, not alias) */
#define TERN_FLAG_NO_EQUALS 4u /* "NAME=VALUE" is not this flag */
#define TERN_FLAG_ABOVE_LO 8u  /* DOUBLE: lo itself is refused: (lo, hi] */

typedef struct tern_flag {
    const char *name;    /* "--seed"; NULL ends a table */
    const char *alias;   /* another spelling ("--output" of "-o"), or NULL */
    tern_flag_kind kind;
    void *dest;          /* where the value goes: TERN_FLAG_TO / TERN_FLAG_EACH */
    size_t dest_size;    /* sizeof the destination (of one element for EACH) */
    size_t *count;       /* repeated flag: values stored so far in the array dest;
                            NULL: a single value, a later one wins */
    long long min, max;  /* TERN_FLAG_INT: the range */
    double lo, hi;       /* TERN_FLAG_DOUBLE: the range */
    unsigned opts;       /* TERN_FLAG_NONEMPTY | ... */
    const char *need;    /* what a bad DOUBLE or empty NONEMPTY value needs to be:
                            "a number >= 0, 0 for greedy" */
    const char *missing; /* "NAME needs <missing>" for a missing value; NULL: "a value" */
    int *given;          /* set to 1 when the flag comes; NULL: not kept */
} tern_flag;

/* The entry that ends a table. */
#define TERN_FLAGS_END {.name = NULL}

/* The destination of a single value: a variable or member of the right kind. */
#define TERN_FLAG_TO(var) .dest = &(var), .dest_size = sizeof(var)
/* A repeated flag: each value goes to array[n++]; the array holds one per argument. */
#define TERN_FLAG_EACH(array, n) .dest = (array), .dest_size = sizeof *(array), .count = &(n)

/* A command as cli_flags_parse() sees it. */
typedef struct tern_flag_cmd {
    const char *usage;      /* the usage line, printed after a problem and for help */
    const char *help;       /* printed after the usage line for -h / --help */
    const tern_flag *flags; /* the table */
    const char **pos;       /* where the positional arguments go, in order */
    size_t max_pos;         /* how many are allowed */
    size_t *n_pos;          /* how many came; NULL: not kept */
    const char *extra_hint; /* appended to "unexpected argument 'X'"; NULL: nothing */
} tern_flag_cmd;

/* Parse argv[0..argc) of a command (the words after its name). Returns
 * TERN_FLAGS_GO_ON when all was taken; else the exit code: TERN_EXIT_OK after
 * printing the help (stdout), TERN_EXIT_USAGE after printing the problem and
 * the usage line (stderr). */
int cli_flags_parse(const tern_flag_cmd *cmd, int argc, char **argv);

/* Print "tern: <message>" and then "usage: USAGE" (NULL: a pointer to `tern
 * help`) to stderr; returns TERN_EXIT_USAGE. */
int cli_usage_error(const char *usage, const char *fmt, ...) TERN_PRINTF(2, 3);

/* Print "usage: USAGE", a blank line and HELP to stdout; returns TERN_EXIT_OK.
 * HELP's "docs/x.md" are printed as cli_print_docs_text prints them. */
int cli_print_help(const char *usage, const char *help);
/* Print `text` to f with each "docs/" (the source tree's docs) replaced by
 * the installed doc directory when tern runs installed: found from the
 * executable (BINDIR/TERN_DOCS_FROM_BIN), so a moved prefix still finds
 * it. A build tree has none there and keeps "docs/". */
void cli_print_docs_text(FILE *f, const char *text);

#endif /* TERN_CLI_FLAGS_H */
