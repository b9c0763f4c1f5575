/* task_file.h: a tasks file, JSON Lines, read whole into memory (docs/data.md).
 *
 * Each non-blank line is one task, a JSON object with
 *   "id"      a string or an integer, unique in the file, kept as given
 *   "domain"  a non-empty string: the reward plugin of that domain judges it
 *   "prompt"  a string: what the model is given
 *   "answer"  a string or a number: the gold answer (a code task may give "")
 * and any other fields ("tests", "choices", "image", "meta", ...), which are
 * kept untouched for the plugins (host->task_string/_number/_json). Blank
 * lines (only spaces, tabs, CR) are skipped; CRLF line ends, a UTF-8 byte
 * order mark at the start and a last line without newline are all fine. */
#ifndef TERN_DATA_TASK_FILE_H
#define TERN_DATA_TASK_FILE_H

#include <stddef.h>

#include "data/task.h"

/* The largest tasks file read (2 GiB): far more than a task set that fits
 * in memory once parsed wants, and a guard against a wrong path. */
#define TERN_TASK_FILE_MAX (2ull << 30)
/* The longest line of a tasks file (64 MiB): a task with a book-length
 * prompt is a few MB; a longer line is refused as it is read, before it
 * costs its size several times over in memory. */
#define TERN_TASK_LINE_MAX (64ull << 20)

typedef struct tern_task_set {
    tern_task **tasks; /* [n], in file order */
    size_t n;
    size_t skipped;    /* malformed lines skipped (skip_bad) */
    char *path;        /* copy of the path */
    char sha256[65];   /* SHA-256 of the file's bytes as read, hex ("" until loaded) */
} tern_task_set;

/* Load every task of `path` into *s (whatever *s held is not freed).
 *
 * A malformed line (bad JSON, not an object, a missing or mistyped required
 * field, an id seen before) is TERN_EINVAL "PATH:LINE: what is wrong; how to
 * fix", LINE counting from 1 -- or, with skip_bad (the config's
 * data.skip_bad = true), it is skipped and counted in s->skipped, and the
 * first 5 are logged as warnings (tern_logf, "data"), then one line telling
 * how many were skipped in all. An integer id and a string id with the same
 * text (17 and "17") are the same id.
 *
 * A file that cannot be opened or read: TERN_EIO "PATH: cannot open: <why>"
 * (or "cannot read"); so is anything but a regular file (a FIFO is never
 * waited on) and a file over TERN_TASK_FILE_MAX; a line over
 * TERN_TASK_LINE_MAX: TERN_EINVAL "PATH:LINE: ..." (never skipped: nothing
 * after it is read); a file with no task: TERN_EINVAL "PATH: no tasks ...";
 * out of memory: TERN_ENOMEM. On failure *s is left empty (nothing to free,
 * but tern_task_set_free is harmless). */
int tern_task_set_load(tern_task_set *s, const char *path, int skip_bad);
/* Free the tasks and the path; *s is left empty. NULL is fine. */
void tern_task_set_free(tern_task_set *s);

/* The task's id as text ("17" for an integer id, the string itself for a
 * string id, "" if the task has neither) into buf (size n >= 1, cut to fit);
 * returns buf. */
const char *tern_task_id_text(const tern_task *t, char *buf, size_t n);

#endif
