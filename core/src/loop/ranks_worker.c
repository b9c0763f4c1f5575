/* ranks_worker.c: a worker rank of a run on MPI ranks (see ranks.h): the
 * trainer (rank 1) or an explorer rank. It makes the same checks as the
 * master, learns the run directory and resume point from the master's
 * SETUP, then runs its roles' threads, unchanged from one process, between
 * pumps that carry their queues over the link:
 *   out      the rank's inbox (role messages) to the master; an explorer
 *            rank asks for one more batch after each rollout it sends
 *   in       the master's warm-up batches (trainer) or batches (explorer)
 *            into the rank's job queue; an empty message closes it
 * The calling thread reads the master's CONTROL messages: "stop" (the
 * trainer finishes its step and checkpoints) and "end" (the run is over). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "channel/transport_mpi.h"
#include "channel/transport_plugin.h"
#include "channel/wire.h"
#include "config/config_diff.h"
#include "loop/data_parallel.h"
#include "loop/master_state.h"
#include "loop/ranks.h"
#include "loop/run_checks.h"
#include "rundir/trace.h"
#include "tern/support/text_buf.h"

#ifdef TERN_HAVE_MPI

typedef struct worker {
    tern_run *run;
    tern_ranks *rk;
    pthread_t out, in;
    int out_on, in_on;
    pthread_t *roles;
    size_t n_roles;
    tern_explorer_arg *args;
    int64_t clock_offset; /* the master's trace clock minus ours */
} worker;

static const char *role_name(const tern_ranks *rk) { return tern_rank_name(rk, rk->rank); }

/* A trainer rank other than the leading one (data-parallel trainers). */
static int follows(const tern_ranks *rk)
{
    return rk->role == TERN_RANK_TRAINER && rk->rank != TERN_RANK_TRAINER_AT;
}

static void *out_main(void *arg)
{
    worker *w = arg;
    tern_run *run = w->run;
    for (;;) {
        void *msg = tern_queue_pop(&run->inbox);
        if (!msg)
            break;
        tern_msg_kind kind = *(tern_msg_kind *)msg;
        unsigned char *buf = NULL;
        size_t len = 0;
        int rc = tern_wire_encode(msg, &buf, &len);
        tern_msg_free(msg);
        if (rc == TERN_OK)
            rc = tern_link_send(w->rk->link, 0, TERN_TAG_INBOX, buf, len);
        free(buf);
        if (rc == TERN_OK && kind == TERN_MSG_ROLLOUT)
            rc = tern_link_send(w->rk->link, 0, TERN_TAG_JOB_WANTED, NULL, 0);
        if (rc != TERN_OK) {
            /* the master cannot hear us: say so here, and stop the roles */
            tern_logf(TERN_LOG_ERROR, "run", "rank %d (%s): cannot send to the master: %s",
                      w->rk->rank, role_name(w->rk), tern_error_message());
            atomic_store(&run->failed, 1);
            break;
        }
    }
    return NULL;
}

static void *in_main(void *arg)
{
    worker *w = arg;
    tern_run *run = w->run;
    int trainer = w->rk->role == TERN_RANK_TRAINER;
    tern_link_tag tag = trainer ? TERN_TAG_SFT : TERN_TAG_EXPLORE;
    tern_queue *q = trainer ? &run->trainer_jobs : &run->explorer_jobs;
    for (;;) {
        void *buf = NULL, *msg = NULL;
        size_t len = 0;
        int rc = tern_link_recv(w->rk->link, tag, -1, &buf, &len, NULL);
        if (rc != TERN_OK || len == 0) {
            free(buf);
            break; /* no more batches */
        }
        unsigned char *p = buf;
        if (!trainer)
            atomic_store(&run->all_dealt, p[0]);
        if (len == 1) {
            free(buf);
            continue; /* the flag alone (tern_ranks_master_dealt) */
        }
        rc = tern_wire_decode(p + 1, len - 1, &msg);
        free(buf);
        if (rc != TERN_OK) {
            tern_report_failure(run, trainer ? "trainer" : "explorer", rc);
            break;
        }
        if (tern_queue_push(q, msg) != TERN_OK) {
            tern_msg_free(msg);
            break;
        }
    }
    tern_queue_close(q);
    return NULL;
}

/* The SETUP message: TERN_OK, or TERN_ECLOSED when the run does not start
 * (the master says why). */
static int take_setup(worker *w)
{
    tern_run *run = w->run;
    void *buf = NULL;
    size_t len = 0;
    int rc = tern_link_recv(w->rk->link, TERN_TAG_SETUP, -1, &buf, &len, NULL);
    if (rc != TERN_OK)
        return rc;
    rc = tern_ranks_setup_read(run, buf, len, &w->clock_offset);
    free(buf);
    return rc;
}

/* This rank's resolved config is the master's (TERN_TAG_CONFIG): one file
 * and the same -o options on every rank, or a rank would train, sample or
 * reward with settings config.cfg does not record. TERN_ECONFIG naming the
 * first setting that differs. */
static int check_same_config(worker *w)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = tern_link_recv(w->rk->link, TERN_TAG_CONFIG, -1, &buf, &len, NULL);
    if (rc != TERN_OK)
        return rc;
    char *text = malloc(len + 1);
    if (!text) {
        free(buf);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    memcpy(text, buf, len);
    text[len] = '\0';
    free(buf);
    config_t theirs;
    config_init(&theirs);
    if (config_read_string(&theirs, text) != CONFIG_TRUE) {
        rc = tern_errorf(TERN_ERR, "the master's config (sent at start) does not read: %s "
                         "(line %d)", config_error_text(&theirs), config_error_line(&theirs));
    } else {
        char path[256], mine[160], on_master[160];
        if (tern_config_first_difference(&w->run->session->config.cfg, &theirs, path,
                                         sizeof path, mine, on_master, sizeof mine))
            rc = tern_errorf(TERN_ECONFIG, "launched with another config than the master's: "
                             "%s is %s here and %s on the master (rank 0); give every rank "
                             "the same config file and the same -o options (docs/"
                             "distributed.md)", path, mine, on_master);
    }
    config_destroy(&theirs);
    free(text);
    return rc;
}

/* A trainer rank resumes from the checkpoint the master chose. */
static int load_checkpoint(tern_run *run)
{
    if (!run->resume.checkpoint[0])
        return TERN_OK;
    int rc = tern_run_load_policy(run, run->resume.checkpoint);
    return rc == TERN_OK ? tern_run_load_reference(run) : rc;
}

static int open_weights(worker *w)
{
    tern_run *run = w->run;
    tern_trace *tr = run->session->trace;
    if (strcmp(run->transport, "checkpoint") == 0) {
        /* files in the run directory, which every rank shares */
        char dir[PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s/weights", run->dir);
        run->weights = tern_weights_open("checkpoint", dir, tr);
    } else if (w->rk->role == TERN_RANK_TRAINER) {
        run->weights = run->transport_plugin.ops
                           ? tern_transport_plugin_sender(w->rk->link, &run->transport_plugin,
                                                          &run->policy, tr)
                           : tern_transport_mpi_sender(w->rk->link, tr);
    } else {
        const tern_model *like = NULL;
        for (uint32_t i = 0; i < run->n_explorers && !like; i++)
            if (run->explorers[i].ops)
                like = &run->explorers[i];
        if (!like)
            tern_errorf(TERN_ERR, "explorer rank %d hosts no explorer (a bug)", w->rk->rank);
        else if (run->transport_plugin.ops)
            run->weights = tern_transport_plugin_receiver(w->rk->link, &run->transport_plugin,
                                                          like, tr);
        else
            run->weights = tern_transport_mpi_receiver(w->rk->link, like, tr);
    }
    return run->weights ? TERN_OK : TERN_ERR;
}

static int start_roles(worker *w, int roles)
{
    tern_run *run = w->run;
    tern_ranks *rk = w->rk;
    if (pthread_create(&w->out, NULL, out_main, w) != 0)
        return tern_errorf(TERN_ERR, "cannot start the outgoing pump");
    w->out_on = 1;
    /* a following trainer rank hears only the leading trainer (TERN_TAG_TRAIN),
     * a reward rank only the master's asks */
    if (!follows(rk) && rk->role != TERN_RANK_REWARD) {
        if (pthread_create(&w->in, NULL, in_main, w) != 0)
            return tern_errorf(TERN_ERR, "cannot start the incoming pump");
        w->in_on = 1;
    }
    w->roles = calloc(run->n_explorers + 1, sizeof *w->roles);
    w->args = calloc(run->n_explorers, sizeof *w->args);
    if (!w->roles || !w->args)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    if (!roles)
        return TERN_OK; /* set-up failed: only its report goes out */
    if (rk->role == TERN_RANK_REWARD) {
        if (pthread_create(&w->roles[0], NULL, tern_ranks_reward_main, run) != 0)
            return tern_errorf(TERN_ERR, "cannot start the reward thread");
        w->n_roles = 1;
        return TERN_OK;
    }
    if (rk->role == TERN_RANK_TRAINER) {
        tern_trace_name_lane(run->session->trace, "trainer");
        if (pthread_create(&w->roles[0], NULL,
                           follows(rk) ? tern_trainer_follower_main : tern_trainer_main,
                           run) != 0)
            return tern_errorf(TERN_ERR, "cannot start the trainer thread");
        w->n_roles = 1;
        return TERN_OK;
    }
    for (uint32_t i = 0; i < run->n_explorers; i++) {
        if (!run->explorers[i].ops)
            continue;
        w->args[i] = (tern_explorer_arg){.run = run, .id = i};
        if (pthread_create(&w->roles[w->n_roles], NULL, tern_explorer_main, &w->args[i]) != 0)
            return tern_errorf(TERN_ERR, "cannot start explorer thread %u", i);
        w->n_roles++;
        /* two batches wanted per explorer, and one more for each rollout sent:
         * the next batch is here when the explorer finishes one (a round trip
         * to the master would otherwise idle it after every batch) */
        for (int k = 0; k < 2; k++) {
            int rc = tern_link_send(rk->link, 0, TERN_TAG_JOB_WANTED, NULL, 0);
            if (rc != TERN_OK)
                return rc;
        }
    }
    return TERN_OK;
}

/* The master's CONTROL messages until "end"; returns whether the run failed. */
static int follow_master(worker *w)
{
    for (;;) {
        void *buf = NULL;
        size_t len = 0;
        int rc = tern_link_recv(w->rk->link, TERN_TAG_CONTROL, -1, &buf, &len, NULL);
        if (rc != TERN_OK)
            return 1;
        json_error_t err;
        json_t *o = json_loadb(buf, len, 0, &err);
        free(buf);
        const char *what = json_string_value(json_object_get(o, "do"));
        int failed = json_is_true(json_object_get(o, "failed"));
        int end = what && strcmp(what, "end") == 0;
        if (what && strcmp(what, "stop") == 0)
            atomic_store(&w->run->stop, 1);
        json_decref(o);
        if (end)
            return failed;
    }
}

/* Wind down: the roles' waits end, the roles and pumps are joined, and the
 * trace goes to the master. */
static void wind_down(worker *w, int failed)
{
    tern_run *run = w->run;
    tern_ranks *rk = w->rk;
    if (failed) {
        atomic_store(&run->failed, 1);
        tern_dp_cancel(run->dp); /* a trainer rank's collectives give up */
    }
    if (follows(rk))
        tern_dp_close(run->dp); /* no more orders: its thread ends */
    if (rk->role == TERN_RANK_REWARD)
        tern_link_close_tag(rk->link, TERN_TAG_REWARD_ASK); /* no more asks: likewise */
    tern_queue_close(&run->explorer_jobs);
    tern_queue_close(&run->trainer_jobs);
    if (run->weights)
        tern_weights_close(run->weights);
    if (run->buffer_ops)
        run->buffer_ops->close(run->buffer);
    for (size_t i = 0; i < w->n_roles; i++)
        pthread_join(w->roles[i], NULL);
    /* the leading trainer is done: so are the others (whatever ended it) */
    if (run->dp && !follows(rk) && tern_dp_order(run->dp, TERN_TRAIN_END, 0, NULL, NULL, 0))
        tern_logf(TERN_LOG_ERROR, "run", "rank %d (%s): cannot tell the other trainer ranks "
                  "the run is over: %s", rk->rank, role_name(rk), tern_error_message());
    tern_queue_close(&run->inbox);
    if (w->out_on)
        pthread_join(w->out, NULL);
    tern_link_close_tag(rk->link, rk->role == TERN_RANK_TRAINER ? TERN_TAG_SFT
                                                                : TERN_TAG_EXPLORE);
    if (w->in_on)
        pthread_join(w->in, NULL);
    json_t *x = json_pack("{s:o?, s:I}", "trace", tern_trace_export(run->session->trace),
                          "offset_ns", (json_int_t)w->clock_offset);
    char *text = x ? json_dumps(x, JSON_COMPACT) : NULL;
    tern_link_send(rk->link, 0, TERN_TAG_TRACE, text, text ? strlen(text) : 0);
    free(text);
    json_decref(x);
}

/* Each log line this rank shows also goes to the master's log.txt
 * ("LEVEL\tWHO\tLINE"); a line that cannot be sent is only on stderr. */
static void forward_line(void *arg, tern_log_level level, const char *who, const char *line)
{
    tern_ranks *rk = arg;
    char buf[4400], keep[1024];
    int n = snprintf(buf, sizeof buf, "%d\t%s\t%s", (int)level, who, line);
    if (n < 0)
        return;
    /* the sender's error message stays what it was */
    snprintf(keep, sizeof keep, "%s", tern_error_message());
    if (tern_link_send(rk->link, 0, TERN_TAG_LOG, buf,
                       (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) != TERN_OK)
        tern_errorf(TERN_ERR, "%s", keep);
}

int tern_ranks_worker(tern_session *s, const tern_loop_options *o, tern_ranks *rk)
{
    tern_run *run = calloc(1, sizeof *run);
    worker *w = calloc(1, sizeof *w);
    if (!run || !w) {
        free(run);
        free(w);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    w->run = run;
    w->rk = rk;
    run->session = s;
    run->seed = s->seed;
    run->ranks = rk;
    /* every rank has mpirun's command line: the checks before the master's
     * SETUP (a durable buffer's groups are the run's own on --resume) know */
    run->resuming = o->resume;
    tern_queue_init(&run->inbox);
    tern_queue_init(&run->explorer_jobs);
    tern_queue_init(&run->trainer_jobs);
    /* the master coordinates the stop: mpirun sends every rank the signal */
    struct sigaction ign, old[4];
    const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    for (int i = 0; o->handle_signals && i < 4; i++)
        sigaction(sigs[i], &ign, &old[i]);

    tern_log_set_forward(forward_line, rk);
    tern_diag d;
    tern_diag_init(&d);
    int rc = check_same_config(w);
    if (rc == TERN_OK)
        rc = tern_run_check(run, &d);
    if (rc == TERN_OK)
        rc = tern_ranks_layout(run, rk);
    /* a reward rank scores with its own instances (and isolated workers) */
    if (rc == TERN_OK && rk->role == TERN_RANK_REWARD)
        rc = tern_rewarder_open(&run->rewards, run->session);
    if (rc == TERN_OK)
        rc = tern_run_make_models(run);
    int who = -1, agreed = tern_link_agree(rk->link, rc, &who);
    if (agreed != TERN_OK) {
        /* the first failing rank says why; the others say nothing more */
        if (who == rk->rank) {
            if (d.n) {
                tern_text_buf t = {0};
                for (size_t i = 0; i < d.n; i++) {
                    tern_text_puts(&t, i ? "\n" : "");
                    tern_text_puts(&t, d.msgs[i]);
                }
                tern_errorf(rc, "rank %d (%s): %s", rk->rank, role_name(rk), t.p ? t.p : "");
                free(t.p);
            } else {
                tern_errorf(rc, "rank %d (%s): %s", rk->rank, role_name(rk),
                            tern_error_message());
            }
        } else {
            tern_error_clear(); /* quiet: rank `who` reports */
        }
        rc = agreed;
        goto out;
    }
    rc = take_setup(w);
    if (rc != TERN_OK) {
        tern_error_clear(); /* the master reports why the run did not start */
        goto out;
    }
    if ((rc = tern_link_weights_group(rk->link, !follows(rk) && rk->role != TERN_RANK_REWARD,
                                      TERN_RANK_TRAINER_AT)) !=
            TERN_OK ||
        (rc = tern_link_trainers_group(rk->link, rk->role == TERN_RANK_TRAINER)) != TERN_OK)
        goto out;
    if (rk->role == TERN_RANK_TRAINER && rk->trainer_ranks > 1 &&
        !(run->dp = tern_dp_open(rk->link, rk->rank - TERN_RANK_TRAINER_AT,
                                 (int)rk->trainer_ranks, TERN_RANK_TRAINER_AT))) {
        rc = TERN_ENOMEM;
        goto out;
    }
    if (rk->role == TERN_RANK_TRAINER && !follows(rk)) {
        run->buffer_ops = &tern_buffer_forward_ops;
        run->buffer = tern_buffer_forward_new(rk->link);
        run->buffer_plugin = NULL; /* not a plugin: nothing to name in a crash */
        if (!run->buffer)
            rc = TERN_ENOMEM;
    }
    if (rc == TERN_OK && !follows(rk) && rk->role != TERN_RANK_REWARD)
        rc = open_weights(w);
    /* gradients summed on the device by the transport plugin (nccl), when
     * it can and the model keeps them there: the trainer ranks first agree
     * (the leader's weights connect may have failed), then join its group */
    const tern_transport_ops *tp = run->transport_plugin.ops;
    if (run->dp && tp && tp->join_trainers && tp->sum &&
        tern_model_has_device_gradients(&run->policy)) {
        rc = tern_dp_agree(run->dp, rc);
        if (rc == TERN_OK)
            rc = tern_dp_use_transport(run->dp, &run->transport_plugin, &run->policy);
    }
    if (rc == TERN_OK && rk->role == TERN_RANK_TRAINER)
        rc = load_checkpoint(run);
    /* from here on a failure is a message to the master, who ends the run */
    int rrc = start_roles(w, rc == TERN_OK);
    if (rc == TERN_OK)
        rc = rrc;
    if (rc != TERN_OK)
        tern_report_failure(run, rk->role == TERN_RANK_TRAINER ? "trainer"
                                 : rk->role == TERN_RANK_REWARD ? "reward"
                                                                : "explorer",
                            rc);
    int failed = follow_master(w);
    wind_down(w, failed || rc != TERN_OK);
    rc = TERN_OK; /* the master reports the run's outcome */
    tern_error_clear();
out:
    tern_log_set_forward(NULL, NULL);
    for (int i = 0; o->handle_signals && i < 4; i++)
        sigaction(sigs[i], &old[i], NULL);
    tern_diag_free(&d);
    tern_weights_free(run->weights);
    tern_dp_free(run->dp);
    if (run->buffer_ops == &tern_buffer_forward_ops)
        tern_buffer_forward_ops.destroy(run->buffer);
    tern_queue_destroy(&run->inbox, tern_msg_free);
    tern_queue_destroy(&run->explorer_jobs, tern_msg_free);
    tern_queue_destroy(&run->trainer_jobs, tern_msg_free);
    tern_run_drop_models(run);
    tern_run_check_free(run);
    free(w->roles);
    free(w->args);
    free(run);
    free(w);
    return rc;
}

#endif
