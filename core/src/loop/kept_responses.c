/* kept_responses.c: see kept_responses.h. */
#include "loop/kept_responses.h"

#include <sys/stat.h>

#include "base/errmsg.h"
#include "rundir/jsonl_append.h"
#include "base/log.h"
#include "loop/run_state.h"

int tern_kept_full(FILE *f, uint64_t cap, int *said, const char *name, const char *what)
{
    struct stat st;
    if (cap == 0)
        return 1; /* run.keep_mb = 0: nothing kept, as asked */
    if (fflush(f) != 0 || fstat(fileno(f), &st) != 0 || (uint64_t)st.st_size < cap)
        return 0;
    if (!*said)
        tern_logf(TERN_LOG_WARN, "run", "%s has reached run.keep_mb (%llu MiB): it keeps no "
                  "more %s from here on", name, (unsigned long long)(cap >> 20), what);
    *said = 1;
    return 1;
}

void tern_kept_lean(json_t *line)
{
    json_object_del(line, "prompt");
    json_object_del(line, "answer");
    json_object_del(line, "responses");
}

int tern_kept_eval_lines(FILE *f, const tern_eval_result *e, int64_t step, int64_t version)
{
    size_t i;
    json_t *r;
    json_array_foreach(e->responses, i, r) {
        json_t *line = json_pack("{s:s, s:I, s:I}", "stage", "rl", "step", (json_int_t)step,
                                 "version", (json_int_t)version);
        if (!line || json_object_update(line, r) != 0) {
            json_decref(line);
            return tern_errorf(TERN_ENOMEM, "out of memory");
        }
        int rc = tern_jsonl_append(f, line, "eval_responses.jsonl");
        json_decref(line);
        if (rc != TERN_OK)
            return rc;
    }
    return TERN_OK;
}
