/* master.c: the master role (see master.h): deals tasks to the explorers and
 * the warm-up to the trainer, rewards rollouts into the buffer, writes a
 * metrics line per step, evaluates, completes checkpoints, handles the stop
 * signals (SIGINT, SIGTERM, SIGHUP, SIGUSR1). */
#include "loop/kept_responses.h"
#include "loop/master.h"
#include "loop/master_state.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/watchdog.h"
#include "base/errmsg.h"
#include "rundir/jsonl_append.h"
#include "host/host_table.h"
#include "base/log.h"
#include "loop/evaluate.h"
#include "experience/experience.h"
#include "image/task_image.h"
#include "reward/rewarder.h"
#include "loop/run.h"
#include "loop/trajectories.h"
#include "loop/run_checks.h"
#include "loop/ranks.h"
#include "loop/run_state.h"
#include "rundir/rundir.h"
#include "data/task.h"
#include "tern/rng.h"
#include "rundir/trace.h"
#include "tern/support/utf8.h"

/* ---- stop signals: SIGINT, SIGTERM, SIGHUP, SIGUSR1 --------------------------- */

/* The first asks the run to stop cleanly (run->stop: the trainer finishes
 * its step and saves a checkpoint); a second asks it to stop at once, after
 * the summary and trace; a third ends the process. The handler only stores
 * lock-free atomics and calls sigaction and raise, all async-signal-safe; the
 * master looks at them at least every STOP_POLL_MS while it waits. One run
 * at a time installs the handler, so process-wide state is enough. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler needs lock-free atomics");

enum { STOP_POLL_MS = 50 };
/* SIGUSR1 too: mpirun passes it on to every rank as it is, where its SIGTERM
 * comes with a SIGKILL 1 s later (docs/distributed.md) */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
#define N_STOP_SIGNALS (sizeof stop_signals / sizeof stop_signals[0])

static atomic_int *volatile stop_flag;
static atomic_int signals_seen, first_signal, second_signal;

static void on_stop_signal(int sig)
{
    int n = atomic_fetch_add(&signals_seen, 1);
    if (n == 0) {
        atomic_store(&first_signal, sig);
        atomic_int *f = stop_flag;
        if (f)
            atomic_store(f, 1);
        tern_watchdog_signal(sig, 1);
    } else if (n == 1) {
        atomic_store(&second_signal, sig);
        tern_watchdog_signal(sig, 2);
    } else {
        /* a third: the summary and trace are taking too long (a hung disk);
         * sig's default action, once this handler returns and unblocks it */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        raise(sig);
    }
}

static const char *signal_name(int sig)
{
    return sig == SIGINT    ? "SIGINT"
           : sig == SIGTERM ? "SIGTERM"
           : sig == SIGHUP  ? "SIGHUP"
           : sig == SIGUSR1 ? "SIGUSR1"
                            : "a signal";
}

/* Catch the stop signals; have[i] says which old[i] to restore. */
static void install_stop_handlers(atomic_int *stop, struct sigaction *old, int *have)
{
    atomic_store(&signals_seen, 0);
    atomic_store(&first_signal, 0);
    atomic_store(&second_signal, 0);
    stop_flag = stop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART; /* the roles' and plugins' reads and writes go on */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_STOP_SIGNALS; i++)
        sigaddset(&sa.sa_mask, stop_signals[i]);
    for (size_t i = 0; i < N_STOP_SIGNALS; i++)
        have[i] = sigaction(stop_signals[i], &sa, &old[i]) == 0;
}

static void restore_stop_handlers(const struct sigaction *old, const int *have)
{
    for (size_t i = 0; i < N_STOP_SIGNALS; i++)
        if (have[i])
            sigaction(stop_signals[i], &old[i], NULL);
    stop_flag = NULL;
    atomic_store(&signals_seen, 0);
    atomic_store(&first_signal, 0);
    atomic_store(&second_signal, 0);
}

/* Log, once, that a stop signal was seen and what comes next. On MPI ranks
 * a SIGTERM is also how mpirun ends the job after a rank died, and then
 * kills every rank seconds later: the step in progress cannot finish, so
 * the note says where a resume would start instead of promising a
 * checkpoint. */
static void note_stop(const tern_run *run, const master *ms, int *noted)
{
    int sig = atomic_load(&first_signal);
    if (*noted || !sig)
        return;
    *noted = 1;
    if (run->ranks && sig == SIGTERM)
        tern_logf(TERN_LOG_WARN, "run", "SIGTERM: stopping after the step in progress, with a "
                  "checkpoint, if every rank is alive; if mpirun sent it because a rank died, "
                  "mpirun ends every rank in seconds, no checkpoint follows, and `tern run "
                  "CONFIG --resume` continues from %s",
                  ms->last_checkpoint[0] ? ms->last_checkpoint : "the start");
    else
        tern_logf(TERN_LOG_WARN, "run", "%s: stopping after the step in progress, with a "
                  "checkpoint, summary.json and trace.json; a second signal stops at once",
                  signal_name(sig));
}

/* A second stop signal: the roles may be mid-step and are not waited for,
 * so tern_loop_run cannot return (it would free what they use). Write what
 * was done -- summary.json and trace.json; the checkpoints written stay --
 * and end the process by that signal, as its default action would have. */
static _Noreturn void stop_at_once(tern_run *run, master *ms, int interrupted)
{
    /* the master, or the watchdog when the master is stuck in a plugin op:
     * whichever comes second waits for the first to end the process */
    static atomic_int stopping;
    if (atomic_exchange(&stopping, 1))
        for (;;)
            pause();
    int sig = atomic_load(&second_signal);
    tern_log_progress_end();
    if (run->dir[0] && ms->metrics) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/trace.json", run->dir);
        if (tern_run_write_summary(run, ms, interrupted) != TERN_OK ||
            tern_trace_write(run->session->trace, path) != TERN_OK)
            tern_logf(TERN_LOG_ERROR, "run", "%s", tern_error_message());
        int first = atomic_load(&first_signal);
        tern_logf(TERN_LOG_WARN, "run", "%s %s%s: stopped at once after %lld steps, without "
                  "the step in progress; `tern run CONFIG --resume` continues from %s",
                  signal_name(sig), sig == first ? "again" : "after ",
                  sig == first ? "" : signal_name(first), (long long)ms->steps_done,
                  ms->last_checkpoint[0] ? ms->last_checkpoint : "the newest checkpoint");
    }
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig); /* not reached: sig's default action ends the process */
}

/* The watchdog's call after a second stop signal that the master has not
 * acted on for a second: it is stuck in a plugin op (base/watchdog.h). */
typedef struct stuck_stop_arg {
    tern_run *run;
    master *ms;
} stuck_stop_arg;

static void stop_while_stuck(void *arg)
{
    stuck_stop_arg *a = arg;
    stop_at_once(a->run, a->ms, 1);
}

/* Join t, unless a second stop signal comes first (watch): 1 joined, 0 not. */
static int join_role(pthread_t t, int watch)
{
    if (!watch) {
        pthread_join(t, NULL);
        return 1;
    }
    const struct timespec pause = {0, 10 * 1000000L};
    while (pthread_tryjoin_np(t, NULL) == EBUSY) {
        if (atomic_load(&second_signal))
            return 0;
        nanosleep(&pause, NULL);
    }
    return 1;
}

/* ---- the order tasks are visited in ------------------------------------------ */

static uint32_t deal(const tern_run *run, dealer *d, int64_t pos)
{
    int64_t e = pos / (int64_t)d->n;
    if (e != d->epoch) {
        for (size_t i = 0; i < d->n; i++)
            d->perm[i] = d->items ? d->items[i] : (uint32_t)i;
        if (d->shuffle) {
            tern_rng r;
            tern_rng_seed(&r, tern_run_seed(run, d->stream, (uint64_t)e, 0));
            for (size_t i = d->n - 1; i > 0; i--) { /* Fisher-Yates */
                size_t j = (size_t)(tern_rng_u64(&r) % (i + 1));
                uint32_t t = d->perm[i];
                d->perm[i] = d->perm[j];
                d->perm[j] = t;
            }
        }
        d->epoch = e;
    }
    return d->perm[pos % (int64_t)d->n];
}

/* A task field as text: strings as they are, numbers as JSON writes them. */
static char *field_text(const tern_task *t, const char *key)
{
    const char *s = tern_task_string(t, key);
    if (s)
        return strdup(s);
    char *j = tern_task_json(t, key);
    return j ? j : strdup("");
}

/* A copy of task t's system turn (NULL for none); *ok cleared when out of memory. */
static char *system_text(const tern_run *run, const tern_task *t, int *ok)
{
    const char *s = tern_task_system(run, t);
    char *c = s ? strdup(s) : NULL;
    if (s && !c)
        *ok = 0;
    return c;
}

/* Task t's image file, resolved (image/task_image.h), into *image: NULL for
 * a task without one, and for every task of a policy that reads no images
 * (the run was refused at start if a task had one). The start checks read
 * every image: a failure here is memory. */
static int image_path(const tern_run *run, const tern_task *t, char **image)
{
    *image = NULL;
    return run->reads_images ? tern_task_image_path(t, image) : TERN_OK;
}

/* ---- jobs -------------------------------------------------------------------- */

static int push_sft_job(tern_run *run, master *ms)
{
    if (ms->sft_pushed >= run->set.sft_steps)
        return TERN_OK;
    uint32_t n = run->set.sft_batch_tasks;
    tern_sft_job *j = calloc(1, sizeof *j);
    if (!j)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    j->kind = TERN_MSG_SFT_BATCH;
    j->step = ms->sft_pushed;
    j->n = n;
    j->prompt = calloc(n, sizeof *j->prompt);
    j->answer = calloc(n, sizeof *j->answer);
    j->system = calloc(n, sizeof *j->system);
    j->image = calloc(n, sizeof *j->image);
    int ok = j->prompt && j->answer && j->system && j->image;
    for (uint32_t i = 0; ok && i < n; i++) {
        const tern_task *t = run->train.tasks[deal(run, &ms->sft_deal, j->step * n + i)];
        j->prompt[i] = field_text(t, "prompt");
        j->answer[i] = field_text(t, "answer");
        j->system[i] = system_text(run, t, &ok);
        ok = ok && j->prompt[i] && j->answer[i] && image_path(run, t, &j->image[i]) == TERN_OK;
    }
    if (!ok || tern_queue_push(&run->trainer_jobs, j) != TERN_OK) {
        tern_msg_free(j);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    ms->sft_pushed++;
    return TERN_OK;
}

/* The batch index dealing stops at: enough groups for the steps left,
 * counting from the ledger's watermark at the start, the groups above it
 * already consumed then, and a stand-in for each group the trainer dropped
 * as too stale, the buffer discarded, or the filter dropped. In a fixed
 * schedule that is batch `steps`. */
static int64_t deal_limit(const tern_run *run, const master *ms)
{
    uint64_t per = run->set.batch_tasks;
    uint64_t groups = (uint64_t)(run->set.steps - run->resume.step) * per + ms->deal_above +
                      ms->groups_stale + ms->groups_discarded + ms->groups_filtered;
    return ms->deal_from + (int64_t)((groups + per - 1) / per);
}

/* Groups dealt by this part and not yet trained or dropped: they fill the
 * trainer's next steps, in order. */
static uint64_t groups_ahead(const master *ms)
{
    uint64_t gone = ms->groups_trained + ms->groups_stale + ms->groups_discarded +
                    ms->groups_filtered;
    return ms->groups_dealt > gone ? ms->groups_dealt - gone : 0;
}

/* The RL step (0-based) the group at place `pos` among those ahead (0: the
 * next one the trainer takes) trains in, as they fill the steps in order. */
static int64_t step_of_place(const tern_run *run, const master *ms, uint64_t pos)
{
    return ms->steps_done + (int64_t)(pos / run->set.batch_tasks);
}

/* Holding explorers back (AReaL's rule; docs/sync.md): in an asynchronous
 * mode with max_staleness S, batch k is dealt only if its last group would
 * train no more than S versions after the weights it is generated with.
 * The groups dealt before it and not yet trained or dropped (`ahead`) fill
 * the trainer's steps first, in order, so its last group trains in step
 *
 *   t = steps_done + floor((ahead + per - 1) / per)      (0-based)
 *
 * and it is generated with the newest weights when it starts, at least
 * version_ready (job->min_version): staleness <= t - version_ready. A
 * batch the trainer needs for its next step (ahead < per) is dealt
 * whatever that bound says, or both would wait for the other: then the
 * sync plugin's accept() drops what is too stale, the last resort, and the
 * metrics count it (stale_groups). */
static int hold_back(const tern_run *run, const master *ms)
{
    if (run->max_staleness < 0 || ms->fixed_schedule)
        return 0; /* a fixed schedule paces itself */
    uint64_t per = run->set.batch_tasks, ahead = groups_ahead(ms);
    if (ahead < per)
        return 0;
    int64_t t = step_of_place(run, ms, ahead + per - 1); /* the batch's last group */
    return t - ms->version_ready > run->max_staleness;
}

/* 1 when no group of batch k is wanted: each is consumed, or held by a
 * durable buffer since before the resume (it is trained from there). */
static int batch_done(const tern_run *run, const master *ms, int64_t k)
{
    for (uint32_t s = 0; s < run->set.batch_tasks; s++) {
        uint64_t id = tern_group_id(k, s, run->set.batch_tasks);
        if (!tern_ledger_consumed(&ms->ledger, id) && !tern_ledger_held(&ms->ledger, id))
            return 0;
    }
    return 1;
}

/* The groups of batch k trained before a resume (the ledger's consumed):
 * dealt again with their batch, never put, so never ahead of the trainer. */
static uint32_t batch_consumed(const tern_run *run, const master *ms, int64_t k)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < run->set.batch_tasks; s++)
        n += tern_ledger_consumed(&ms->ledger, tern_group_id(k, s, run->set.batch_tasks)) != 0;
    return n;
}

/* The batch index the sync plugin plans the next batch's weights by. It is
 * the batch's own index, but with algorithm.filter_groups the step the
 * batch is dealt for: the stand-ins for filtered groups feed the step their
 * batch fed, so a fixed schedule must give them that step's weights, not
 * those of a later batch index (which would wait for a step that waits for
 * them). The groups dealt and not yet trained or dropped fill the steps in
 * order, so the batch's first group trains in step
 * steps_done + floor(ahead / per); without drops that is the batch index.
 * A fixed schedule then deals one batch at a time (deal_more), so that a
 * batch planned for a later step never sits before a stand-in the current
 * step needs. */
static int64_t plan_index(const tern_run *run, const master *ms)
{
    if (!run->set.filter_groups)
        return ms->batches_pushed;
    return step_of_place(run, ms, groups_ahead(ms));
}

/* Deal the next batch: TERN_OK, 1 when it is held back (hold_back), or a
 * failure. */
static int push_explore_job(tern_run *run, master *ms)
{
    if (ms->batches_pushed >= deal_limit(run, ms))
        return TERN_OK;
    if (hold_back(run, ms))
        return 1; /* not yet */
    if (batch_done(run, ms, ms->batches_pushed)) {
        /* nothing to make: as if dealt and back */
        ms->batches_pushed++;
        ms->batches_received++;
        return TERN_OK;
    }
    uint32_t n = run->set.batch_tasks;
    tern_explore_job *j = calloc(1, sizeof *j);
    if (!j)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    j->kind = TERN_MSG_EXPLORE;
    j->batch = ms->batches_pushed;
    j->min_version = ms->version_ready;
    j->plan_batch = plan_index(run, ms);
    j->n = n;
    j->task_index = calloc(n, sizeof *j->task_index);
    j->prompt = calloc(n, sizeof *j->prompt);
    j->system = calloc(n, sizeof *j->system);
    j->image = calloc(n, sizeof *j->image);
    int ok = j->task_index && j->prompt && j->system && j->image;
    for (uint32_t i = 0; ok && i < n; i++) {
        j->task_index[i] = deal(run, &ms->train_deal, j->batch * n + i);
        const tern_task *t = run->train.tasks[j->task_index[i]];
        j->prompt[i] = field_text(t, "prompt");
        j->system[i] = system_text(run, t, &ok);
        ok = ok && j->prompt[i] != NULL && image_path(run, t, &j->image[i]) == TERN_OK;
    }
    if (!ok || tern_queue_push(&run->explorer_jobs, j) != TERN_OK) {
        tern_msg_free(j);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    ms->batches_pushed++;
    /* a group trained before a resume is not put again: counted as ahead,
     * it would plan the next batch for a step too late, whose weights wait
     * for groups that wait for them (issue 47 item 1) */
    ms->groups_dealt += n - (run->resuming ? batch_consumed(run, ms, ms->batches_pushed - 1) : 0);
    return TERN_OK;
}

static int deal_more(tern_run *run, master *ms);

/* Groups the buffer discarded without handing them out (a full `fifo`
 * with when_full = "drop_oldest", a full `priority` evicting, its own
 * max_staleness): each needs a stand-in, or the last steps would wait for
 * groups that never come. */
static int note_discarded(tern_run *run, master *ms)
{
    tern_buffer_stats bst = {.size = sizeof bst};
    if (!run->buffer_ops || run->buffer_ops->stats(run->buffer, &bst) != TERN_OK ||
        bst.dropped + bst.skipped <= ms->groups_discarded)
        return TERN_OK;
    ms->groups_discarded = bst.dropped + bst.skipped;
    return deal_more(run, ms);
}

/* Keep every explorer fed: two batches in hand per explorer (the one it
 * generates, the next), dealt as rollouts come back. The master deals only
 * after a rollout is in the buffer, so a full buffer holds the explorers
 * back (backpressure) instead of piling rollouts up in memory. */
static int deal_more(tern_run *run, master *ms)
{
    int rc = TERN_OK;
    int64_t in_hand = 2 * (int64_t)run->n_explorers;
    if (run->set.filter_groups && ms->fixed_schedule)
        in_hand = 1; /* see plan_index */
    while (rc == TERN_OK && ms->batches_pushed < deal_limit(run, ms) &&
           ms->batches_pushed - ms->batches_received < in_hand)
        rc = push_explore_job(run, ms);
    if (rc == 1)
        rc = TERN_OK; /* held back until the trainer catches up: its steps deal again */
    int dealt = ms->batches_pushed >= deal_limit(run, ms);
    int was = atomic_exchange(&run->all_dealt, dealt);
#ifdef TERN_HAVE_MPI
    /* explorer ranks keep a copy of the flag (an idle explorer is not waiting) */
    if (run->ranks && was != dealt)
        tern_ranks_master_dealt(run, dealt);
#endif
    (void)was;
    return rc;
}

/* ---- rollouts: reward, record, buffer ---------------------------------------- */

/* Add k to the count of step `step` (>= c->base). TERN_ENOMEM. */
static int step_counts_add(step_counts *c, int64_t step, uint64_t k)
{
    if (step < c->base)
        step = c->base; /* its line is written: the next one counts it */
    size_t i = (size_t)(step - c->base);
    if (i >= c->w) {
        size_t w = i + 16;
        uint64_t *n = realloc(c->n, w * sizeof *n);
        if (!n)
            return tern_errorf(TERN_ENOMEM, "out of memory");
        memset(n + c->w, 0, (w - c->w) * sizeof *n);
        c->n = n;
        c->w = w;
    }
    c->n[i] += k;
    return TERN_OK;
}

/* The counts of the steps up to `step`, taken out: the next line starts at
 * step + 1. */
static uint64_t step_counts_take(step_counts *c, int64_t step)
{
    uint64_t sum = 0;
    size_t k = 0;
    while (k < c->w && c->base + (int64_t)k <= step)
        sum += c->n[k++];
    if (k) {
        memmove(c->n, c->n + k, (c->w - k) * sizeof *c->n);
        memset(c->n + c->w - k, 0, k * sizeof *c->n);
    }
    if (step + 1 > c->base)
        c->base = step + 1;
    return sum;
}

/* The RL step (0-based) group g of rollout r trains in, if kept: the groups
 * before it (dealt and not yet trained or dropped, less g and the groups
 * after it in r) fill the steps in order. Exact in a fixed schedule, an
 * estimate in the asynchronous modes. */
static int64_t step_of_group(const tern_run *run, const master *ms, const tern_rollout_msg *r,
                             uint32_t g)
{
    uint64_t ahead = groups_ahead(ms), rest = r->n - g;
    return step_of_place(run, ms, ahead > rest ? ahead - rest : 0);
}

/* A fixed schedule with algorithm.filter_groups: the groups of a stand-in
 * batch beyond what its step needs would train in a later step, too stale
 * for the schedule; the trainer would take them and drop them. The master
 * drops them before the buffer instead (DAPO's loop throws away the surplus
 * of its last generation batch too), counted as stale. TERN_OK to keep
 * group g of rollout r, 1 when dropped, or a failure. */
static int surplus_group(tern_run *run, master *ms, const tern_rollout_msg *r, uint32_t g,
                         uint64_t id)
{
    int64_t step = step_of_group(run, ms, r, g);
    tern_error_clear();
    int ok;
    TERN_SYNC_OP(run, "accept", ok = run->sync_ops->accept(run->sync, r->version, step));
    if (ok < 0)
        return tern_errorf(ok, "master: the sync plugin's accept failed: %s",
                           tern_error_message());
    if (ok)
        return TERN_OK;
    char args[160];
    snprintf(args, sizeof args, "{\"batch\":%lld,\"group\":%u,\"version\":%lld,"
             "\"step\":%lld,\"surplus\":true}", (long long)r->batch, g, (long long)r->version,
             (long long)step);
    tern_trace_instant(run->session->trace, "skip", args);
    ms->groups_stale++;
    int rc = step_counts_add(&ms->surplus_at, step, 1);
    if (rc == TERN_OK)
        rc = tern_ledger_consume(&ms->ledger, &id, 1);
    return rc == TERN_OK ? 1 : rc;
}

/* algorithm.filter_groups (algo/group_filter.h): TERN_OK to keep group g
 * of rollout r, 1 when it is dropped (consumed for good: a resume does not
 * deal it again; the next deal_more deals a stand-in), or a failure. */
static int filter_group(tern_run *run, master *ms, const tern_rollout_msg *r, uint32_t g,
                        const tern_verdict *v, uint64_t id)
{
    uint32_t G = r->group_size;
    double *rewards = malloc((G ? G : 1) * sizeof *rewards);
    if (!rewards)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (uint32_t s = 0; s < G; s++)
        rewards[s] = v[(size_t)g * G + s].reward;
    int64_t step = step_of_group(run, ms, r, g); /* before the counts change */
    if (step >= run->set.steps) { /* past the last step (a stand-in's surplus): not judged */
        free(rewards);
        return TERN_OK;
    }
    int over = 0, keep = tern_group_filter_judge(&ms->filter, rewards, G, &over);
    double first = rewards[0];
    free(rewards);
    if (keep) {
        if (over && ms->filter.kept_equal == 1)
            tern_logf(TERN_LOG_WARN, "run", "algorithm.filter_groups: a step examined %u "
                      "batches of groups (filter_max_batches) without finding %u whose rewards "
                      "differ; it keeps groups with equal rewards (no signal) until it is "
                      "full: the tasks may be all too easy or all too hard for the model "
                      "(this is said once; summary.json counts them)",
                      ms->filter.max_batches, run->set.batch_tasks);
        return TERN_OK;
    }
    char args[96];
    snprintf(args, sizeof args, "{\"batch\":%lld,\"group\":%u,\"reward\":%g}",
             (long long)r->batch, g, first);
    tern_trace_instant(run->session->trace, "filter", args);
    ms->groups_filtered++;
    int rc = step_counts_add(&ms->filtered_at, step, 1);
    if (rc == TERN_OK)
        rc = tern_ledger_consume(&ms->ledger, &id, 1);
    return rc == TERN_OK ? 1 : rc;
}

/* Put one record; *attempt_ns gets the clock just before the attempt that
 * succeeded (the record entered the buffer after it: the `put` event's time,
 * so a train step never appears to start before its batch is in). */
static int put_record(tern_run *run, master *ms, const tern_experience *e, uint64_t *attempt_ns)
{
    size_t len = tern_experience_bytes(e);
    if (!len) /* over a limit of the encoding: the message says which */
        return tern_errorf(TERN_EINVAL, "master: batch %lld: %s", (long long)e->batch,
                           tern_error_message());
    void *buf = malloc(len);
    if (!buf)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    tern_experience_encode(e, buf);
    /* the id is the group's place in the dealing: the same in every part
     * of a resumed run, so a durable buffer's ids name groups for good */
    tern_record_meta meta = {.size = sizeof meta,
                             .id = tern_group_id(e->batch, e->group, run->set.batch_tasks),
                             .version = e->version, .batch = e->batch};
    int rc;
    double t0 = tern_run_now();
    uint64_t w0 = tern_trace_clock();
    for (;;) {
        tern_error_clear();
        *attempt_ns = tern_trace_clock();
        TERN_BUFFER_OP(run, "put", rc = run->buffer_ops->put(run->buffer, buf, len, &meta, 20));
        if (rc != TERN_ETIMEDOUT)
            break;
        if (atomic_load(&run->stop) || atomic_load(&run->failed)) {
            rc = TERN_ECLOSED; /* the trainer will not read it: winding down */
            break;
        }
    }
    ms->master_wait += tern_run_now() - t0;
    uint64_t w1 = tern_trace_clock();
    if (w1 - w0 >= TERN_TRACE_MIN_WAIT_NS) {
        char args[96];
        snprintf(args, sizeof args, "{\"for\":\"buffer space\",\"batch\":%lld}",
                 (long long)e->batch);
        tern_trace_span(run->session->trace, "wait", w0, w1, args);
    }
    free(buf);
    if (rc != TERN_OK && rc != TERN_ECLOSED) {
        const char *m = tern_error_message();
        return tern_errorf(rc, "buffer: put failed: %s", *m ? m : "the plugin gave no reason");
    }
    return rc; /* TERN_ECLOSED: winding down, the caller puts no more */
}

/* Build group g of rollout r as a record (its responses' tokens and
 * log-probs are borrowed from r) and put it. A trajectory's runs become
 * segments, alternately the model's and context (or a restart's prompt), at
 * the rollout's version. */
static int put_group(tern_run *run, master *ms, const tern_rollout_msg *r, uint32_t g,
                     const tern_verdict *v, const tern_task *t, uint64_t rewarded_ns,
                     tern_exp_response *resp, uint64_t *put_ns)
{
    uint32_t G = r->group_size;
    size_t n_seg = 0;
    for (uint32_t s = 0; s < G; s++)
        n_seg += r->resp[(size_t)g * G + s].n_segments;
    tern_exp_segment *seg = n_seg ? malloc(n_seg * sizeof *seg) : NULL;
    if (n_seg && !seg)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    tern_exp_segment *next = seg;
    for (uint32_t s = 0; s < G; s++) {
        const tern_response *x = &r->resp[(size_t)g * G + s];
        const tern_verdict *vs = &v[(size_t)g * G + s];
        resp[s] = (tern_exp_response){.version = r->version, .finish = x->finish,
                                      .failure = vs->failure_code, .reward = vs->reward,
                                      .accuracy = vs->accuracy, .n_parts = vs->n_parts,
                                      .len = x->len, .tokens = x->tokens, .logp = x->logp,
                                      .n_turns = x->n_turns, .turn_reward = x->turn_reward,
                                      .end = x->end, .env_failure = x->env_failure};
        for (uint32_t c = 0; c < vs->n_parts; c++)
            resp[s].parts[c] = (tern_reward_part){vs->part_name[c], vs->part_value[c]};
        if (x->n_segments) {
            resp[s].segments = next;
            resp[s].n_segments = x->n_segments;
            for (uint32_t k = 0, q = 0; k < x->n_segments; k++) {
                uint32_t kind = k % 2 ? TERN_SEGMENT_CONTEXT : TERN_SEGMENT_MODEL;
                if (q < x->n_restarts && x->restart[q] == k)
                    kind = TERN_SEGMENT_PROMPT, q++;
                *next++ = (tern_exp_segment){x->seg_len[k], kind, r->version};
            }
        }
    }
    const char *dom = tern_task_string(t, "domain");
    char id[128];
    tern_experience e = {.batch = r->batch, .version = r->version,
                         .task_index = r->task_index[g], .group = g,
                         .generated_ns = r->done_unix_ns, .rewarded_ns = rewarded_ns,
                         .domain = dom ? dom : "", .task_id = tern_task_id_text(t, id, sizeof id),
                         .prompt_len = r->prompt_len[g], .prompt = r->prompt_tokens[g],
                         .n = G, .resp = resp};
    /* the image the explorer generated from, and its bytes' digest: the
     * trainer gives the policy the same pixels, or refuses */
    if (r->image && r->image[g] && r->image_sha256) {
        e.image = r->image[g];
        memcpy(e.image_sha256, r->image_sha256 + 32 * (size_t)g, sizeof e.image_sha256);
    }
    tern_experience_finish_stats(&e);
    int rc = put_record(run, ms, &e, put_ns);
    free(seg);
    return rc;
}

static int on_rollout(tern_run *run, master *ms, tern_rollout_msg *r)
{
    uint32_t G = r->group_size;
    size_t total = (size_t)r->n * G;
    const tern_task **tasks = calloc(total, sizeof *tasks);
    const char **texts = calloc(total, sizeof *texts);
    uint32_t *ntok = calloc(total, sizeof *ntok);
    tern_verdict *v = calloc(total, sizeof *v);
    tern_exp_response *resp = calloc(G, sizeof *resp);
    int rc = TERN_OK;
    if (!tasks || !texts || !ntok || !v || !resp) {
        rc = tern_errorf(TERN_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < total; i++) {
        tasks[i] = run->train.tasks[r->task_index[i / G]];
        texts[i] = r->resp[i].text;
        ntok[i] = r->resp[i].len;
    }
    uint64_t put_ns = 0, failures = 0;
    /* the reward plugins' own figures go to the session's store, drained
     * into the next metrics line; the step's reward figures come from the
     * groups it trains (loop/step_figures.c) */
    uint64_t span = tern_trace_begin(run->session->trace, "reward");
    rc = tern_rewarder_score(&run->rewards, tasks, texts, ntok, total, v, &failures, NULL);
    char args[96];
    snprintf(args, sizeof args, "{\"batch\":%lld}", (long long)r->batch);
    tern_trace_end(run->session->trace, span, args);
    if (rc != TERN_OK)
        goto done;
    if (failures)
        tern_failure_log_keep(&run->failures, &run->rewards, tasks, texts, ntok, v, total, "rl",
                              r->batch);
    if (TERN_RUN_TRAJECTORIES(run))
        tern_trajectory_returns(run, r, tasks, v, total, 0, "rl", r->batch);
    uint64_t rewarded_ns = tern_run_unix_ns();
    int put_any = 0;
    for (uint32_t g = 0; g < r->n; g++) {
        /* after a resume: a group trained already, or waiting in a durable
         * buffer since before the resume, is not put again */
        uint64_t id = tern_group_id(r->batch, g, run->set.batch_tasks);
        if (tern_ledger_consumed(&ms->ledger, id) || tern_ledger_held(&ms->ledger, id))
            continue;
        if (run->set.filter_groups && (rc = filter_group(run, ms, r, g, v, id)) != TERN_OK) {
            if (rc != 1)
                goto done;
            rc = TERN_OK;
            continue; /* dropped: a stand-in is dealt below */
        }
        if (run->set.filter_groups && ms->fixed_schedule &&
            (rc = surplus_group(run, ms, r, g, id)) != TERN_OK) {
            if (rc != 1)
                goto done;
            rc = TERN_OK;
            continue;
        }
        rc = put_group(run, ms, r, g, v, tasks[(size_t)g * G], rewarded_ns, resp, &put_ns);
        if (rc == TERN_ECLOSED) { /* a stop: the batch will not be trained */
            rc = TERN_OK;
            goto done;
        }
        if (rc != TERN_OK)
            goto done;
        put_any = 1;
    }
    ms->line_tool_calls += r->tool_calls;
    ms->line_tool_invalid += r->tool_invalid;
    ms->line_tool_failed += r->tool_failed;
    ms->line_wf_calls += r->wf_calls;
    ms->line_wf_rewrites += r->wf_rewrites;
    ms->line_trajectories += (uint64_t)r->n * r->group_size;
    ms->line_gen_tokens += (double)r->gen_tokens;
    ms->line_gen_seconds += r->gen_seconds;
    ms->line_explorer_wait += r->wait_seconds;
    if (put_any)
        tern_trace_instant_on(run->session->trace, "buffer", "put", put_ns, args);
    ms->batches_received++;
    rc = deal_more(run, ms);
    if (rc == TERN_OK)
        rc = note_discarded(run, ms);
done:
    free(tasks);
    free(texts);
    free(ntok);
    free(v);
    free(resp);
    return rc;
}

/* ---- writing ----------------------------------------------------------------- */

static int write_line(FILE *f, json_t *o, const char *what)
{
    return tern_jsonl_append(f, o, what); /* whole lines only, even on a full disk */
}

static void put_eval(json_t *o, const tern_eval_result *e)
{
    if (e->accuracy >= 0)
        json_object_set_new(o, "eval/accuracy", json_real(e->accuracy));
    json_object_set_new(o, "eval/reward_mean", json_real(e->reward_mean));
    const char *dom;
    json_t *v;
    json_object_foreach(e->per_domain, dom, v) {
        char key[160];
        snprintf(key, sizeof key, "eval/accuracy/%s", dom);
        json_object_set(o, key, v);
    }
    json_object_set_new(o, "eval/response_length", json_real(e->mean_length));
    json_object_set_new(o, "eval/seconds", json_real(e->seconds));
}

static int evaluate(tern_run *run, master *ms, tern_snapshot *w, json_t *line, int before)
{
    tern_eval_result e;
    int rc = tern_evaluate(run, w, &e);
    if (rc == TERN_OK &&
        !tern_kept_full(ms->eval_responses, run->set.keep_bytes, &ms->eval_responses_said,
                        "eval_responses.jsonl", "evaluation responses"))
        rc = tern_kept_eval_lines(ms->eval_responses, &e,
                                  json_integer_value(json_object_get(line, "step")),
                                  tern_snapshot_version(w));
    json_decref(e.responses);
    if (rc != TERN_OK) {
        json_decref(e.per_domain);
        return rc;
    }
    put_eval(line, &e);
    if (e.accuracy < 0)
        tern_logf(TERN_LOG_INFO, "eval", "version %lld: greedy mean reward %.3f on %zu eval "
                  "tasks, no accuracy: no reward gives an \"accuracy\" component (%.1f s)",
                  (long long)tern_snapshot_version(w), e.reward_mean, e.tasks, e.seconds);
    else if (e.judged_tasks < e.tasks)
        tern_logf(TERN_LOG_INFO, "eval", "version %lld: greedy accuracy %.3f on the %zu of %zu "
                  "eval tasks whose rewards give an \"accuracy\", mean reward %.3f on all "
                  "(%.1f s)", (long long)tern_snapshot_version(w), e.accuracy, e.judged_tasks,
                  e.tasks, e.reward_mean, e.seconds);
    else
        tern_logf(TERN_LOG_INFO, "eval", "version %lld: greedy accuracy %.3f on %zu eval tasks "
                  "(%.1f s)", (long long)tern_snapshot_version(w), e.accuracy, e.tasks, e.seconds);
    if (before) {
        ms->eval_reward_before = e.reward_mean;
        ms->accuracy_before = e.accuracy;
        json_decref(ms->eval_before);
        ms->eval_before = e.per_domain;
    } else {
        ms->eval_reward_after = e.reward_mean;
        ms->accuracy_after = e.accuracy;
        json_decref(ms->eval_after);
        ms->eval_after = e.per_domain;
    }
    return TERN_OK;
}

static void format_eta(double s, char *buf, size_t n)
{
    if (s < 0 || !isfinite(s))
        snprintf(buf, n, "?");
    else if (s >= 3600)
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}


/* Write the checkpoint the trainer saved (state.json with the ledger, then
 * its final name), then let a durable buffer forget the groups it includes:
 * their consumption and the checkpoint commit together (docs/run.md). */
static int complete_checkpoint(tern_run *run, master *ms, const char *saved, int64_t sft_step,
                               int64_t step, int rl_started)
{
    int rc = tern_run_complete_checkpoint(run, ms, saved, sft_step, step, rl_started);
    if (rc != TERN_OK || !ms->ledger.n_pending)
        return rc;
    if (TERN_HAS(run->buffer_ops, commit) && run->buffer_ops->commit) {
        uint64_t span = tern_trace_begin(run->session->trace, "commit");
        tern_error_clear();
        TERN_BUFFER_OP(run, "commit",
                       rc = run->buffer_ops->commit(run->buffer, ms->ledger.pending,
                                                    ms->ledger.n_pending));
        char args[64];
        snprintf(args, sizeof args, "{\"groups\":%zu}", ms->ledger.n_pending);
        tern_trace_end(run->session->trace, span, args);
        if (rc != TERN_OK) {
            const char *msg = tern_error_message();
            return tern_errorf(rc, "buffer: committing the %zu groups of checkpoint %s: %s "
                               "(nothing is lost: a resume commits them again)",
                               ms->ledger.n_pending, ms->last_checkpoint,
                               *msg ? msg : "the plugin gave no reason");
        }
    }
    tern_ledger_committed(&ms->ledger);
    return TERN_OK;
}

/* Seconds since the run started, its earlier parts included (a resumed
 * run goes on from the checkpoint's figure): the x axis of `tern plot`. */
static double run_wall_seconds(const tern_run *run, const master *ms)
{
    return run->resume.wall_seconds + tern_run_now() - ms->t_start;
}

static int on_step(tern_run *run, master *ms, tern_step_msg *m)
{
    int rc = tern_ledger_consume(&ms->ledger, m->consumed, m->n_consumed);
    if (rc != TERN_OK)
        return rc;
    json_t *o = json_object();
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    json_object_set_new(o, "stage", json_string("rl"));
    json_object_set_new(o, "step", json_integer(m->step));
    json_object_set_new(o, "version", json_integer(m->version));
    json_object_set_new(o, "batch", json_integer(m->batch));
    json_object_set_new(o, "rollout_version", json_integer(m->rollout_version));
    json_object_set_new(o, "wall_seconds", json_real(run_wall_seconds(run, ms)));
    if (m->figures)
        json_object_update(o, m->figures);
    json_object_set_new(o, "train_reward_mean", json_real(m->reward_mean));
    json_object_set_new(o, "loss", json_real(m->loss.loss));
    json_object_set_new(o, "pg_loss", json_real(m->loss.pg_loss));
    json_object_set_new(o, "kl", json_real(m->loss.kl));
    json_object_set_new(o, "entropy", json_real(m->loss.entropy));
    json_object_set_new(o, "clip_frac", json_real(m->loss.clip_frac));
    json_object_set_new(o, "ratio_mean", json_real(m->loss.ratio_mean));
    json_object_set_new(o, "mismatch_kl", json_real(m->loss.mismatch_kl));
    json_object_set_new(o, "is_weight_mean", json_real(m->loss.is_weight_mean));
    json_object_set_new(o, "grad_norm", json_real(m->grad_norm));
    json_object_set_new(o, "lr", json_real(m->lr));
    /* the explorers' side: the rollouts that came back since the last line */
    json_object_set_new(o, "rollout_tokens_per_s",
                        json_real(ms->line_gen_seconds > 0
                                      ? ms->line_gen_tokens / ms->line_gen_seconds : 0));
    json_object_set_new(o, "train_tokens_per_s",
                        json_real(m->train_seconds > 0 ? (double)m->train_tokens / m->train_seconds
                                                       : 0));
    json_object_set_new(o, "staleness", json_real(m->staleness));
    /* the trainer's, and the surplus the master dropped before the buffer */
    uint64_t surplus = step_counts_take(&ms->surplus_at, m->step - 1);
    json_object_set_new(o, "stale_groups", json_integer((json_int_t)(m->stale + surplus)));
    json_object_set_new(o, "wait_s/explorer", json_real(ms->line_explorer_wait));
    json_object_set_new(o, "wait_s/trainer", json_real(m->wait_seconds));
    json_object_set_new(o, "wait_s/master", json_real(ms->master_wait));
    if (run->set.filter_groups) {
        uint64_t filtered = step_counts_take(&ms->filtered_at, m->step - 1);
        json_object_set_new(o, "filtered_groups", json_integer((json_int_t)filtered));
    }
    if (run->tools.n) {
        /* the explorers' tool calls since the last line (docs/agents.md, "Tools") */
        uint64_t c = ms->line_tool_calls;
        json_object_set_new(o, "tools/calls", json_real(ms->line_trajectories
                                                            ? (double)c / ms->line_trajectories
                                                            : 0));
        json_object_set_new(o, "tools/invalid", json_real(c ? (double)ms->line_tool_invalid / c
                                                            : 0));
        json_object_set_new(o, "tools/failed", json_real(c ? (double)ms->line_tool_failed / c
                                                           : 0));
    }
    if (run->set.has_workflow) {
        /* its programs' calls per trajectory, and the fraction of trajectories
         * whose history a call rewrote (docs/agents.md, "Workflows") */
        double t = ms->line_trajectories ? (double)ms->line_trajectories : 1;
        json_object_set_new(o, "workflow/calls", json_real((double)ms->line_wf_calls / t));
        json_object_set_new(o, "workflow/rewrites", json_real((double)ms->line_wf_rewrites / t));
    }
    ms->line_wf_calls = ms->line_wf_rewrites = 0;
    ms->line_tool_calls = ms->line_tool_invalid = ms->line_tool_failed = 0;
    ms->line_trajectories = 0;
    ms->rollout_tokens += ms->line_gen_tokens;
    ms->rollout_seconds += ms->line_gen_seconds;
    ms->master_wait = ms->line_gen_tokens = ms->line_gen_seconds = ms->line_explorer_wait = 0;
    tern_buffer_stats bst = {.size = sizeof bst};
    if (run->buffer_ops->stats(run->buffer, &bst) == TERN_OK)
        json_object_set_new(o, "buffer_size", json_integer((json_int_t)bst.held));
    tern_metrics_drain_json(run->session->metrics, o); /* the plugins' own figures */
    ms->train_tokens += (double)m->train_tokens;
    ms->train_seconds += m->train_seconds;
    double mean = json_number_value(json_object_get(o, "reward_mean"));
    char tacc[32] = ""; /* no "accuracy" figure: no reward of the step judges */
    if (json_object_get(o, "accuracy"))
        snprintf(tacc, sizeof tacc, " | train acc %.3f",
                 json_number_value(json_object_get(o, "accuracy")));
    if (!ms->have_reward_first) {
        ms->reward_first = mean;
        ms->have_reward_first = 1;
    }
    ms->reward_last = mean;
    ms->steps_done = m->step;
    ms->groups_trained += m->n_consumed > m->stale ? m->n_consumed - m->stale : 0;
    if (m->published && m->version > ms->version_ready)
        ms->version_ready = m->version;

    if (m->eval)
        rc = evaluate(run, ms, m->eval, o, 0);
    if (rc == TERN_OK)
        rc = write_line(ms->metrics, o, "metrics.jsonl");
    size_t i;
    json_t *g;
    json_array_foreach(m->groups, i, g) {
        /* a whole group (run.keep_groups) while rollouts.jsonl is under run.keep_mb */
        if (json_object_get(g, "responses") &&
            tern_kept_full(ms->rollouts, run->set.keep_bytes, &ms->rollouts_said,
                           "rollouts.jsonl", "whole groups (every response and the prompt)"))
            tern_kept_lean(g);
        if (rc == TERN_OK)
            rc = write_line(ms->rollouts, g, "rollouts.jsonl");
    }
    json_decref(o);
    if (rc == TERN_OK && m->saved)
        rc = complete_checkpoint(run, ms, m->saved, ms->sft_done, m->step, 1);
    if (rc != TERN_OK)
        return rc;

    double elapsed = tern_run_now() - ms->t_start;
    int64_t this_part = m->step - run->resume.step;
    char eta[32], acc[48] = "";
    format_eta(elapsed / (double)this_part * (double)(run->set.steps - m->step), eta, sizeof eta);
    if (m->eval && ms->accuracy_after >= 0)
        snprintf(acc, sizeof acc, " | eval acc %.3f", ms->accuracy_after);
    else if (m->eval)
        snprintf(acc, sizeof acc, " | eval reward %.3f", ms->eval_reward_after);
    char line[256];
    snprintf(line, sizeof line, "step %lld/%lld | ETA %s | reward %.3f%s%s", (long long)m->step,
             (long long)run->set.steps, eta, mean, tacc, acc);
    tern_log_progress(line);
    return deal_more(run, ms); /* a batch held back may go now */
}
static int on_sft_done(tern_run *run, master *ms, tern_step_msg *m)
{
    ms->sft_done = m->step;
    json_t *o = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f}", "stage", "sft", "step",
                          (json_int_t)m->step, "loss", m->loss.loss, "grad_norm", m->grad_norm,
                          "lr", m->lr, "train_tokens_per_s",
                          m->train_seconds > 0 ? (double)m->train_tokens / m->train_seconds : 0.0);
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    json_object_set_new(o, "wall_seconds", json_real(run_wall_seconds(run, ms)));
    tern_metrics_drain_json(run->session->metrics, o);
    int rc = write_line(ms->metrics, o, "metrics.jsonl");
    json_decref(o);
    char line[160];
    snprintf(line, sizeof line, "warm-up %lld/%lld | loss %.4f", (long long)m->step,
             (long long)run->set.sft_steps, m->loss.loss);
    tern_log_progress(line);
    return rc == TERN_OK ? push_sft_job(run, ms) : rc;
}

/* The explorers start once RL has weights to generate with. */
static int start_explorers(tern_run *run, master *ms)
{
#ifdef TERN_HAVE_MPI
    if (run->ranks)
        return tern_ranks_master_start_explorers(run);
#endif
    uint32_t n = run->n_explorers;
    ms->explorer_threads = calloc(n, sizeof *ms->explorer_threads);
    ms->explorer_args = calloc(n, sizeof *ms->explorer_args);
    if (!ms->explorer_threads || !ms->explorer_args)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        ms->explorer_args[i] = (tern_explorer_arg){.run = run, .id = i};
        if (pthread_create(&ms->explorer_threads[i], NULL, tern_explorer_main,
                           &ms->explorer_args[i]) != 0)
            return tern_errorf(TERN_ERR, "cannot start explorer thread %u", i);
        ms->explorers_started++;
    }
    return TERN_OK;
}

static int on_rl_start(tern_run *run, master *ms, tern_step_msg *m)
{
    int rc = TERN_OK;
    if (run->set.steps > ms->steps_done && (rc = start_explorers(run, ms)) != TERN_OK)
        return rc;
    if (run->set.steps == 0) {
        ms->finished = 1; /* a warm-up-only run ends with its evaluation */
        if (m->saved)
            rc = complete_checkpoint(run, ms, m->saved, ms->sft_done, 0, 1);
    }
    if (!m->eval || rc != TERN_OK)
        return rc;
    json_t *o = json_pack("{s:s,s:i,s:i,s:f}", "stage", "rl", "step", 0, "version", 0,
                          "wall_seconds", run_wall_seconds(run, ms));
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    rc = evaluate(run, ms, m->eval, o, 1);
    if (rc == TERN_OK)
        rc = write_line(ms->metrics, o, "metrics.jsonl");
    json_decref(o);
    return rc;
}

/* The weight store over the sync plugin's transport. Checkpoint files live
 * in RUN_DIR/weights/: versions in flight, not checkpoints, so a resumed run
 * starts that folder afresh (its versions restart at the resumed step). */
static int open_weights(tern_run *run)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/weights", run->dir);
    if (strcmp(run->transport, "checkpoint") == 0 && tern_remove_tree(dir) != 0 &&
        errno != ENOENT)
        tern_logf(TERN_LOG_WARN, "run", "cannot remove %s: %s", dir, strerror(errno));
    if (run->ranks && strcmp(run->transport, "checkpoint") != 0)
        return TERN_OK; /* the trainer rank sends weights to the explorer ranks */
    run->weights = tern_weights_open(run->transport, dir, run->session->trace);
    return run->weights ? TERN_OK : TERN_ERR;
}

/* The roles' messages until the run ends. TERN_OK when every step is done,
 * TERN_EINTR after a stop with its checkpoint or a second stop signal, else
 * the failure. */
static int master_loop(tern_run *run, master *ms)
{
    int rc = TERN_OK;
    for (int i = 0; i < 2 && rc == TERN_OK; i++)
        rc = push_sft_job(run, ms);
    ms->version_ready = run->resume.step; /* the trainer publishes it as RL starts */
    tern_sync_plan plan = {.size = sizeof plan};
    ms->fixed_schedule = run->sync_ops->explorer_plan(run->sync, 0, 0, &plan) == TERN_OK &&
                         plan.mode == TERN_SYNC_WAIT_FOR_VERSION;
    tern_group_filter_init(&ms->filter, run->set.batch_tasks, run->set.filter_max_batches);
    ms->filtered_at.base = ms->surplus_at.base = run->resume.step;
    if (rc == TERN_OK)
        rc = deal_more(run, ms);
    if (rc != TERN_OK)
        return rc;
    if (run->resume.step >= run->set.steps && run->resume.rl_started)
        return TERN_OK; /* nothing left to do */
    int noted = 0, stop_sent = 0;
    (void)stop_sent;
    for (;;) {
        double t0 = tern_run_now();
        void *msg = NULL;
        /* waits in slices, to act on a second stop signal while the roles work */
        while (tern_queue_pop_wait(&run->inbox, STOP_POLL_MS, &msg) == TERN_ETIMEDOUT &&
               !atomic_load(&second_signal)) {
            note_stop(run, ms, &noted);
#ifdef TERN_HAVE_MPI
            /* the trainer rank has a stop flag of its own */
            if (run->ranks && atomic_load(&run->stop) && !stop_sent) {
                stop_sent = 1;
                tern_ranks_master_stop(run);
            }
#endif
            if (ms->explorers_started && (rc = note_discarded(run, ms)) != TERN_OK)
                return rc;
        }
        ms->master_wait += tern_run_now() - t0;
        note_stop(run, ms, &noted);
#ifdef TERN_HAVE_MPI
        if (run->ranks && atomic_load(&run->stop) && !stop_sent) {
            stop_sent = 1;
            tern_ranks_master_stop(run);
        }
#endif
        if (atomic_load(&second_signal)) {
            tern_msg_free(msg);
            return TERN_EINTR;
        }
        if (!msg)
            return tern_errorf(TERN_ERR, "the roles stopped without a word (a bug)");
        tern_msg_kind kind = *(tern_msg_kind *)msg;
        switch (kind) {
        case TERN_MSG_ROLLOUT:
            rc = on_rollout(run, ms, msg);
            break;
        case TERN_MSG_SFT_DONE:
            rc = on_sft_done(run, ms, msg);
            break;
        case TERN_MSG_RL_START:
            rc = on_rl_start(run, ms, msg);
            break;
        case TERN_MSG_STEP_DONE:
            rc = on_step(run, ms, msg);
            if (rc == TERN_OK && ((tern_step_msg *)msg)->step >= run->set.steps)
                ms->finished = 1;
            break;
        case TERN_MSG_STOPPED: {
            tern_step_msg *m = msg;
            if (m->step > ms->steps_done && m->step > 0)
                rc = on_step(run, ms, m); /* the step that finished before the stop */
            else if (m->saved)
                rc = m->in_rl ? complete_checkpoint(run, ms, m->saved, ms->sft_done, m->step, 1)
                              : complete_checkpoint(run, ms, m->saved, m->sft_step, 0, 0);
            ms->stopped = 1;
            break;
        }
        case TERN_MSG_SKIPPED: {
            /* the trainer dropped groups as too stale: it needs stand-ins */
            tern_step_msg *m = msg;
            ms->groups_stale += m->stale;
            rc = deal_more(run, ms);
            break;
        }
        case TERN_MSG_FAILED: {
            tern_step_msg *m = msg;
            rc = tern_errorf(m->status < 0 ? m->status : TERN_ERR, "%s", m->error);
            break;
        }
        default:
            rc = tern_errorf(TERN_ERR, "master: unexpected message %d (a bug)", (int)kind);
        }
        tern_msg_free(msg);
        if (rc != TERN_OK)
            return rc;
        if (ms->finished)
            return TERN_OK;
        if (ms->stopped)
            return TERN_EINTR;
    }
}

int tern_loop_run(tern_session *s, const tern_loop_options *o, tern_diag *d)
{
    if (tern_link_launched(NULL) > 1)
        return tern_ranks_run(s, o, d);
    return tern_master_run(s, o, d, NULL);
}

int tern_master_run(tern_session *s, const tern_loop_options *o, tern_diag *d,
                    struct tern_ranks *rk)
{
    tern_run *run = calloc(1, sizeof *run);
    master *ms = calloc(1, sizeof *ms);
    if (!run || !ms) {
        free(run);
        free(ms);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    run->session = s;
    run->seed = s->seed;
    run->out = o->out;
    run->ranks = rk;
    ms->run = run;
    ms->lock_fd = -1;
    run->resuming = o->resume;
    ms->accuracy_before = ms->accuracy_after = -1;
    ms->eval_reward_before = ms->eval_reward_after = NAN;
    ms->t_start = tern_run_now();
    tern_queue_init(&run->inbox);
    tern_queue_init(&run->explorer_jobs);
    tern_queue_init(&run->trainer_jobs);
    pthread_t trainer;
    int have_trainer = 0, workers_live = 0;
    (void)workers_live;
    struct sigaction old_handlers[N_STOP_SIGNALS];
    int have_handler[N_STOP_SIGNALS] = {0}, handling = 0, watching = 0;
    stuck_stop_arg stuck = {run, ms};

    int rc = TERN_OK;
#ifdef TERN_HAVE_MPI
    /* every rank checks that it was launched with the master's config */
    if (rk)
        rc = tern_ranks_master_send_config(run);
#endif
    /* the same checks as `tern check`, then what only a run makes */
    if (rc == TERN_OK)
        rc = tern_run_check(run, d);
#ifdef TERN_HAVE_MPI
    if (rc == TERN_OK && rk)
        rc = tern_ranks_layout(run, rk);
#endif
    if (rc == TERN_OK)
        rc = tern_run_make_models(run);
    if (rc == TERN_OK) {
        tern_ledger_init(&ms->ledger, run->set.batch_tasks);
        ms->train_deal = (dealer){.stream = "data", .n = run->train.n, .epoch = -1,
                                  .shuffle = run->set.shuffle};
        /* the warm-up learns from the training tasks that have an answer (all
         * of them, usually; tern_run_check listed them and refused a warm-up
         * with none) */
        size_t n_sft = run->n_answered;
        ms->sft_deal = (dealer){.stream = "sft-data", .items = run->answered, .n = n_sft,
                                .epoch = -1, .shuffle = run->set.shuffle};
        ms->train_deal.perm = calloc(run->train.n, sizeof(uint32_t));
        ms->sft_deal.perm = calloc(n_sft ? n_sft : 1, sizeof(uint32_t));
        if (!ms->train_deal.perm || !ms->sft_deal.perm)
            rc = tern_errorf(TERN_ENOMEM, "out of memory");
        else if (run->set.sft_steps > 0 && n_sft < run->train.n)
            tern_logf(TERN_LOG_INFO, "run", "the warm-up learns from the %zu of %zu training "
                      "tasks that have an answer; RL draws from all of them", n_sft,
                      run->train.n);
    }
#ifdef TERN_HAVE_MPI
    /* every rank made the same checks: a worker's failure stops the run here */
    if (rk && (rc = tern_ranks_master_agree(run, rc)) != TERN_OK)
        goto done;
#endif
    if (rc == TERN_OK)
        rc = tern_run_open_dir(run, ms, o);
    if (rc == TERN_OK)
        rc = open_weights(run);
#ifdef TERN_HAVE_MPI
    /* the workers learn where the run is, or that it does not start */
    if (rk) {
        int src = tern_ranks_master_setup(run, rc);
        workers_live = rc == TERN_OK && src == TERN_OK;
        if (rc == TERN_OK)
            rc = src;
    }
#endif
    if (rc != TERN_OK)
        goto done;
    ms->sft_pushed = run->resume.rl_started ? run->set.sft_steps : run->resume.sft_step;
    /* dealing starts at the ledger's watermark: the lowest batch with a
     * group neither consumed by the checkpoint's steps nor (see
     * tern_run_open_dir) held by a durable buffer */
    ms->deal_from = ms->ledger.from;
    ms->deal_above = tern_ledger_above(&ms->ledger);
    ms->batches_pushed = ms->batches_received = ms->deal_from;
    tern_logf(TERN_LOG_INFO, "run", "run directory %s: %zu training tasks, %zu eval tasks, "
              "%lld warm-up + %lld RL steps of %u tasks x %u responses", run->dir, run->train.n,
              run->eval.n, (long long)run->set.sft_steps, (long long)run->set.steps,
              run->set.batch_tasks, run->set.group_size);

    if (o->handle_signals) {
        install_stop_handlers(&run->stop, old_handlers, have_handler);
        handling = 1;
        /* names a plugin op that runs too long or holds up a stop; a crash
         * inside one is named by the report session.c installed */
        watching = tern_watchdog_start(stop_while_stuck, &stuck) == TERN_OK;
        if (!watching)
            tern_logf(TERN_LOG_WARN, "run", "%s; a stuck plugin will not be named",
                      tern_error_message());
    }
    tern_trace_name_lane(s->trace, "master");
#ifdef TERN_HAVE_MPI
    if (rk) {
        if ((rc = tern_ranks_master_start(run, ms)) != TERN_OK)
            goto done;
    } else
#endif
    if (pthread_create(&trainer, NULL, tern_trainer_main, run) != 0) {
        rc = tern_errorf(TERN_ERR, "cannot start the trainer thread");
        goto done;
    } else {
        have_trainer = 1;
    }
    rc = master_loop(run, ms);

done:
    /* wind down: every role's waits end, then join them, unless a second
     * stop signal says not to wait */
    if (rc != TERN_OK && rc != TERN_EINTR)
        atomic_store(&run->failed, 1);
    int joined = !atomic_load(&second_signal);
#ifdef TERN_HAVE_MPI
    if (workers_live && joined)
        tern_ranks_master_end(run, rc);
#endif
    if (joined) {
        tern_queue_close(&run->explorer_jobs);
        tern_queue_close(&run->trainer_jobs);
        if (run->weights)
            tern_weights_close(run->weights);
        if (run->buffer_ops) /* set once the buffer started */
            run->buffer_ops->close(run->buffer);
    }
    for (uint32_t i = 0; joined && i < ms->explorers_started; i++)
        joined = join_role(ms->explorer_threads[i], handling);
    if (joined && have_trainer)
        joined = join_role(trainer, handling);
    if (!joined)
        stop_at_once(run, ms, rc != TERN_OK);
    if (watching)
        tern_watchdog_stop();
    tern_log_progress_end();
    int stopped_by = rc == TERN_EINTR ? atomic_load(&first_signal) : 0;
    /* the error text lives on this thread: keep it across the writes below */
    char *err = rc != TERN_OK && rc != TERN_EINTR ? strdup(tern_error_message()) : NULL;
    if (run->dir[0] && ms->metrics) {
        /* a failed save or write leaves no partial checkpoint or file behind */
        if (rc != TERN_OK && rc != TERN_EINTR)
            tern_run_remove_leftovers(run->dir);
        int wrc = tern_run_write_summary(run, ms, rc != TERN_OK);
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/trace.json", run->dir);
        if (wrc == TERN_OK)
            wrc = tern_trace_write(s->trace, path);
        if (wrc != TERN_OK && (rc == TERN_OK || rc == TERN_EINTR))
            rc = wrc;
        else if (rc == TERN_EINTR)
            tern_logf(TERN_LOG_WARN, "run", "interrupted by %s after %lld steps; `tern run "
                      "CONFIG --resume` continues from %s", signal_name(stopped_by),
                      (long long)ms->steps_done,
                      ms->last_checkpoint[0] ? ms->last_checkpoint : "the start");
    }
    if (err) {
        tern_errorf(rc, "%s", err);
        free(err);
    }
    if (run->dir[0] && (rc == TERN_OK || rc == TERN_EINTR) && o->out)
        fprintf(o->out, "%s\n", run->dir);
    if (handling)
        restore_stop_handlers(old_handlers, have_handler);
    if (o->stop_signal)
        *o->stop_signal = stopped_by;
    if (o->dir_lock)
        *o->dir_lock = ms->lock_fd; /* the caller still writes log.txt */
    else
        tern_rundir_unlock(ms->lock_fd);
    if (ms->metrics)
        fclose(ms->metrics);
    if (ms->rollouts)
        fclose(ms->rollouts);
    if (ms->eval_responses)
        fclose(ms->eval_responses);
    tern_queue_destroy(&run->inbox, tern_msg_free);
    tern_queue_destroy(&run->explorer_jobs, tern_msg_free);
    tern_queue_destroy(&run->trainer_jobs, tern_msg_free);
    tern_weights_free(run->weights);
    tern_ledger_free(&ms->ledger);
    free(ms->filtered_at.n);
    free(ms->surplus_at.n);
    free(ms->explorer_threads);
    free(ms->explorer_args);
    free(ms->train_deal.perm);
    free(ms->sft_deal.perm);
    json_decref(ms->eval_before);
    json_decref(ms->eval_after);
    tern_run_drop_models(run);
    tern_run_check_free(run);
    free(run);
    free(ms);
    return rc;
}
