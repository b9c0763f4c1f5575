/* ranks_master.c: the master rank's side of a run on MPI ranks (see
 * ranks.h): the SETUP message, and the pumps that connect the master's
 * queues to the other ranks:
 *   inbox      every role message the workers send, into run->inbox
 *   sft        the warm-up batches, from run->trainer_jobs to the trainer rank
 *   jobs       a batch from run->explorer_jobs for each JOB_WANTED an
 *              explorer rank sends (so any explorer takes the next, as in one
 *              process, and the master deals no further ahead than it would)
 *   buffer     the trainer rank's buffer asks, on the real buffer
 * Each pump waits on a queue or a mailbox, never inside MPI. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "channel/wire.h"
#include "config/config_diff.h"
#include "loop/master_state.h"
#include "loop/ranks.h"
#include "rundir/trace.h"

#ifdef TERN_HAVE_MPI

/* Push a failure report of a pump into the master's inbox. */
static void pump_failed(tern_run *run, const char *what)
{
    char msg[768];
    snprintf(msg, sizeof msg, "master rank: %s: %s", what, tern_error_message());
    tern_errorf(TERN_ERR, "%s", msg);
    tern_report_failure(run, "master", TERN_ERR);
}

static void *inbox_main(void *arg)
{
    tern_run *run = arg;
    tern_ranks *rk = run->ranks;
    for (;;) {
        void *buf = NULL, *msg = NULL;
        size_t len = 0;
        int from = -1;
        int rc = tern_link_recv(rk->link, TERN_TAG_INBOX, -1, &buf, &len, &from);
        if (rc == TERN_ECLOSED)
            break;
        if (rc != TERN_OK) {
            pump_failed(run, "receiving from the other ranks");
            break;
        }
        rc = tern_wire_decode(buf, len, &msg);
        free(buf);
        if (rc != TERN_OK) {
            char what[64];
            snprintf(what, sizeof what, "a message from rank %d", from);
            pump_failed(run, what);
            break;
        }
        if (tern_queue_push(&run->inbox, msg) != TERN_OK) {
            tern_msg_free(msg);
            break;
        }
    }
    return NULL;
}

/* Send one queued message (NULL: the queue closed, an empty message says
 * "no more") to rank `to`. */
static int send_msg(tern_ranks *rk, int to, tern_link_tag tag, const void *msg,
                    unsigned char flag)
{
    if (!msg)
        return tern_link_send(rk->link, to, tag, NULL, 0);
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = tern_wire_encode(msg, &buf, &len);
    if (rc != TERN_OK)
        return rc;
    /* the first byte: a flag for the receiving pump (explorers: all dealt) */
    unsigned char *out = malloc(len + 1);
    if (!out) {
        free(buf);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    out[0] = flag;
    memcpy(out + 1, buf, len);
    free(buf);
    rc = tern_link_send(rk->link, to, tag, out, len + 1);
    free(out);
    return rc;
}

/* The worker ranks' log lines ("LEVEL\tWHO\tLINE", tern_ranks_worker) into
 * log.txt, as "[rank N: WHO]" (their own stderr showed them already). */
static void *log_main(void *arg)
{
    tern_run *run = arg;
    for (;;) {
        void *buf = NULL;
        size_t len = 0;
        int from = -1;
        if (tern_link_recv(run->ranks->link, TERN_TAG_LOG, -1, &buf, &len, &from) != TERN_OK)
            break;
        char *text = realloc(buf, len + 1);
        if (!text) {
            free(buf);
            continue;
        }
        text[len] = 0;
        char *who = strchr(text, '\t'), *line = who ? strchr(who + 1, '\t') : NULL;
        if (line) {
            *who++ = 0;
            *line++ = 0;
            char name[96];
            snprintf(name, sizeof name, "rank %d: %s", from, who);
            tern_log_file_only((tern_log_level)atoi(text), name, line);
        }
        free(text);
    }
    return NULL;
}

static void *sft_main(void *arg)
{
    tern_run *run = arg;
    for (;;) {
        void *job = tern_queue_pop(&run->trainer_jobs);
        int rc = send_msg(run->ranks, TERN_RANK_TRAINER_AT, TERN_TAG_SFT, job, 0);
        tern_msg_free(job);
        if (rc != TERN_OK && !run->ranks->ending)
            pump_failed(run, "sending a warm-up batch to the trainer rank");
        if (!job || rc != TERN_OK)
            break;
    }
    return NULL;
}

static void *jobs_main(void *arg)
{
    tern_run *run = arg;
    tern_ranks *rk = run->ranks;
    for (;;) {
        void *buf = NULL;
        size_t len = 0;
        int from = -1;
        int rc = tern_link_recv(rk->link, TERN_TAG_JOB_WANTED, -1, &buf, &len, &from);
        free(buf);
        if (rc != TERN_OK)
            break; /* closed: the run is ending */
        void *job = tern_queue_pop(&run->explorer_jobs);
        if (!job)
            break; /* the end: master_end tells every explorer rank */
        rc = send_msg(rk, from, TERN_TAG_EXPLORE, job, (unsigned char)atomic_load(&run->all_dealt));
        tern_msg_free(job);
        if (rc != TERN_OK) {
            if (!rk->ending)
                pump_failed(run, "sending a batch to an explorer rank");
            break;
        }
    }
    return NULL;
}

static void *buffer_main(void *arg)
{
    tern_run *run = arg;
    tern_ranks *rk = run->ranks;
    for (;;) {
        void *buf = NULL;
        size_t len = 0;
        int rc = tern_link_recv(rk->link, TERN_TAG_BUFFER_ASK, -1, &buf, &len, NULL);
        if (rc != TERN_OK)
            break;
        rc = tern_ranks_serve_buffer(run, buf, len);
        free(buf);
        if (rc != TERN_OK) {
            if (!rk->ending)
                pump_failed(run, "serving the trainer rank's buffer");
            break;
        }
    }
    return NULL;
}

static int start_pump(tern_run *run, void *(*body)(void *), const char *name)
{
    tern_ranks *rk = run->ranks;
    pthread_t *t = realloc(rk->threads, (rk->n_threads + 1) * sizeof *t);
    if (!t)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    rk->threads = t;
    if (pthread_create(&t[rk->n_threads], NULL, body, run) != 0)
        return tern_errorf(TERN_ERR, "cannot start the %s pump thread", name);
    rk->n_threads++;
    return TERN_OK;
}

int tern_ranks_master_send_config(tern_run *run)
{
    tern_ranks *rk = run->ranks;
    char *text = tern_config_to_text(&run->session->config.cfg);
    if (!text)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    int rc = TERN_OK;
    for (int i = 1; i < rk->size && rc == TERN_OK; i++)
        rc = tern_link_send(rk->link, i, TERN_TAG_CONFIG, text, strlen(text));
    free(text);
    return rc;
}

int tern_ranks_master_agree(tern_run *run, int rc)
{
    tern_ranks *rk = run->ranks;
    int who = -1;
    int agreed = tern_link_agree(rk->link, rc, &who);
    if (rc != TERN_OK || agreed == TERN_OK)
        return rc; /* our own failure (reported by the caller), or none */
    if (who < 0)
        return agreed; /* the agreement itself failed: its message */
    return tern_errorf(agreed, "rank %d (%s) failed its checks: its message is above", who,
                       tern_rank_name(rk, who));
}

int tern_ranks_master_setup(tern_run *run, int rc)
{
    tern_ranks *rk = run->ranks;
    char *text = tern_ranks_setup_text(run, rc == TERN_OK);
    int src = text ? TERN_OK : tern_errorf(TERN_ENOMEM, "out of memory");
    for (int i = 1; i < rk->size; i++) {
        /* an empty SETUP (out of memory here) also says: the run does not start */
        int s1 = tern_link_send(rk->link, i, TERN_TAG_SETUP, text, text ? strlen(text) : 0);
        if (src == TERN_OK)
            src = s1;
    }
    free(text);
    if (rc != TERN_OK || src != TERN_OK)
        return src;
    int grc = tern_link_weights_group(rk->link, 0, TERN_RANK_TRAINER_AT);
    return grc != TERN_OK ? grc : tern_link_trainers_group(rk->link, 0);
}

int tern_ranks_master_start(tern_run *run, master *ms)
{
    tern_ranks *rk = run->ranks;
    (void)ms;
    int rc = start_pump(run, inbox_main, "inbox");
    if (rc == TERN_OK)
        rc = start_pump(run, sft_main, "warm-up");
    if (rc == TERN_OK)
        rc = start_pump(run, buffer_main, "buffer");
    if (rc == TERN_OK)
        rc = start_pump(run, log_main, "log");
    /* the responses are scored on the reward ranks, if any */
    if (rc == TERN_OK)
        rc = tern_ranks_rewards_remote(run);
    (void)rk;
    return rc;
}

int tern_ranks_master_start_explorers(tern_run *run)
{
    if (run->ranks->explorers_started)
        return TERN_OK;
    run->ranks->explorers_started = 1;
    return start_pump(run, jobs_main, "batches");
}

static void control(tern_ranks *rk, int to, const char *what, int failed)
{
    json_t *o = json_pack("{s:s, s:b}", "do", what, "failed", failed);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text)
        tern_link_send(rk->link, to, TERN_TAG_CONTROL, text, strlen(text));
    free(text);
    json_decref(o);
}

void tern_ranks_master_dealt(tern_run *run, int dealt)
{
    tern_ranks *rk = run->ranks;
    unsigned char flag = (unsigned char)dealt;
    /* a flag alone (one byte, no batch) */
    for (uint32_t i = 0; i < rk->explorer_ranks; i++)
        tern_link_send(rk->link, tern_rank_explorers_at(rk) + (int)i, TERN_TAG_EXPLORE, &flag,
                       1);
}

void tern_ranks_master_stop(tern_run *run)
{
    control(run->ranks, TERN_RANK_TRAINER_AT, "stop", 0);
}

/* Each worker's trace events, onto the master's trace (a worker that does
 * not send them in time is named in log.txt). */
static void take_traces(tern_run *run)
{
    tern_ranks *rk = run->ranks;
    for (int left = rk->size - 1; left > 0; left--) {
        void *buf = NULL;
        size_t len = 0;
        int from = -1;
        int rc = tern_link_recv(rk->link, TERN_TAG_TRACE, 60000, &buf, &len, &from);
        if (rc != TERN_OK) {
            tern_logf(TERN_LOG_WARN, "run", "%d rank(s) sent no trace events within 60 s of "
                      "the end: trace.json lacks their lanes", left);
            break;
        }
        json_error_t err;
        json_t *x = json_loadb(buf, len, 0, &err);
        free(buf);
        json_t *events = json_object_get(x, "trace");
        json_int_t offset = json_integer_value(json_object_get(x, "offset_ns"));
        char suffix[32];
        snprintf(suffix, sizeof suffix, "rank %d", from);
        if (!events || tern_trace_import(run->session->trace, events, suffix, offset) != TERN_OK)
            tern_logf(TERN_LOG_WARN, "run", "rank %d sent trace events that do not read: "
                      "trace.json lacks its lanes", from);
        json_decref(x);
    }
}

void tern_ranks_master_end(tern_run *run, int rc)
{
    tern_ranks *rk = run->ranks;
    rk->ending = 1;
    int failed = rc != TERN_OK && rc != TERN_EINTR;
    for (int r = 1; r < rk->size; r++)
        control(rk, r, "end", failed);
    /* the pumps: queues closed, mailboxes closed */
    tern_queue_close(&run->explorer_jobs);
    tern_queue_close(&run->trainer_jobs);
    if (run->buffer_ops)
        run->buffer_ops->close(run->buffer);
    tern_link_close_tag(rk->link, TERN_TAG_JOB_WANTED);
    take_traces(run);
    /* a worker's lines came before its trace (one sender's messages keep
     * their order): every line is in */
    tern_link_close_tag(rk->link, TERN_TAG_LOG);
    tern_link_close_tag(rk->link, TERN_TAG_INBOX);
    tern_link_close_tag(rk->link, TERN_TAG_REWARD_ANSWER);
    tern_link_close_tag(rk->link, TERN_TAG_BUFFER_ASK);
    for (size_t i = 0; i < rk->n_threads; i++)
        pthread_join(rk->threads[i], NULL);
    free(rk->threads);
    rk->threads = NULL;
    rk->n_threads = 0;
    tern_ranks_rewards_local(run);
}

#endif
