/* judge.h: the verdict on one response to one school exam question (private
 * to the k12 plugin; the fuzz target calls it directly).
 *
 * The verdict depends only on its arguments: no host, no globals, so any
 * number of threads may judge at once. */
#ifndef K12_JUDGE_H
#define K12_JUDGE_H

#include <stddef.h>
#include <tern/reward.h>

#include "choice.h"

typedef enum k12_kind {
    K12_KIND_INFER = 0, /* from the gold answer */
    K12_KIND_CHOICE = 1,
    K12_KIND_TRUE_FALSE = 2,
    K12_KIND_BLANK = 3,
    K12_KIND_NUMERIC = 4
} k12_kind;

/* The instance's settings, as the verdict needs them. */
typedef struct k12_rules {
    k12_partial partial;
    double rel_tol, abs_tol;
    int require_unit;
    int last_line; /* judge the last line when there is no box or statement */
} k12_rules;

typedef struct k12_question {
    k12_kind kind;
    const char *gold;     /* a string gold, or the JSON text of another type (gold_json) */
    size_t gold_len;
    int gold_json;
    const char *options;  /* JSON text of the options, or NULL */
    size_t options_len;
    const char *answer_field; /* named in reasons */
} k12_question;

typedef struct k12_verdict {
    double reward;
    int accuracy; /* 1 only when fully right */
    int format;   /* 1 when the answer came from \boxed{} or an answer statement */
    char reason[TERN_REWARD_REASON_MAX];
} k12_verdict;

#define K12_OK 0
#define K12_ENOMEM (-1)

/* Judge response[0..len) (NULL is an empty response). Returns K12_OK with
 * *v written, or K12_ENOMEM. */
int k12_judge(const k12_rules *rules, const k12_question *q, const char *response, size_t len,
              k12_verdict *v);

/* The kind a task's type field names: 1 and *out, 0 when unknown. */
int k12_kind_parse(const char *name, k12_kind *out);
/* "choice", "true_false", "blank", "numeric". */
const char *k12_kind_label(k12_kind kind);
/* "none", "half_for_subset", "fraction": 1 and *out, 0 when unknown. */
int k12_partial_parse(const char *name, k12_partial *out);

#endif
