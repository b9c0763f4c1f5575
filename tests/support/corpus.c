/* corpus.c: see corpus.h. */
#include "corpus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "data/task.h"
#include "tern/reward.h"

int corpus_run(harness *h, const char *path, corpus_result *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(h->error, sizeof h->error, "%s: cannot open", path);
        return TERN_EIO;
    }
    const tern_reward_ops *ops = harness_ops(h);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = TERN_OK;
    for (size_t lineno = 1; rc == TERN_OK && (len = getline(&line, &cap, f)) >= 0; lineno++) {
        size_t k = strspn(line, " \t\r\n");
        if (line[k] == '\0')
            continue;
        char where[600];
        snprintf(where, sizeof where, "%s:%zu", path, lineno);
        tern_task *t = NULL;
        double expect = 0;
        if ((rc = tern_task_parse(line, (size_t)len, where, &t)) != TERN_OK) {
            snprintf(h->error, sizeof h->error, "%s", tern_error_message());
            break;
        }
        const char *response = tern_task_string(t, "response");
        if (!response || tern_task_number(t, "expect", &expect) != TERN_OK) {
            snprintf(h->error, sizeof h->error, "%s: a case needs \"response\" (string) and "
                     "\"expect\" (number)", where);
            tern_task_free(t);
            rc = TERN_EINVAL;
            break;
        }
        tern_reward_item item = {.size = sizeof item, .task = t, .response = response,
                                 .response_len = strlen(response)};
        tern_reward_result r;
        memset(&r, 0, sizeof r);
        r.size = sizeof r;
        tern_error_clear();
        if ((rc = ops->score(h->state, &item, &r, 1)) != TERN_OK) {
            snprintf(h->error, sizeof h->error, "%s: the plugin failed: %s", where,
                     tern_error_message());
            tern_task_free(t);
            break;
        }
        out->cases++;
        if (isfinite(r.reward) && fabs(r.reward - expect) <= 1e-6) {
            out->right++;
        } else {
            char miss[1024];
            const char *why = tern_task_string(t, "why");
            snprintf(miss, sizeof miss, "%s: reward %g (%.*s), expected %g%s%s", where,
                     r.reward, (int)sizeof r.reason, r.reason, expect, why ? ": " : "",
                     why ? why : "");
            fprintf(stderr, "%s\n", miss);
            if (!out->first_wrong[0])
                snprintf(out->first_wrong, sizeof out->first_wrong, "%s", miss);
        }
        tern_task_free(t);
    }
    free(line);
    fclose(f);
    return rc;
}
