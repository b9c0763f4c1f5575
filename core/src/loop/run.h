/* run.h: one run of the learning loop (docs/architecture.md §2): the master (the
 * calling thread), one thread per explorer and a trainer thread.
 *
 * The roles share nothing but the buffer plugin, the weight store and the
 * queues below, so that they can later become processes. Everything else in
 * tern_run is either read-only once the roles start (settings, special
 * tokens, data position) or owned by exactly one role (its model instance,
 * marked in the comments). */
#ifndef TERN_LOOP_RUN_H
#define TERN_LOOP_RUN_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "channel/messages.h"
#include "data/task_file.h"
#include "channel/queue.h"
#include "channel/transport_plugin.h"
#include "config/run_settings.h"
#include "weights/weights.h"
#include "reward/rewarder.h"
#include "loop/reward_failures.h"
#include "host/session.h"
#include "base/op_watch.h"
#include "model/model.h"
#include "tern/buffer.h"
#include "agent/toolbox.h"
#include "tern/environment.h"
#include "tern/model.h"
#include "tern/reward.h"
#include "tern/sync.h"

/* Where a resumed run starts. */
typedef struct tern_resume_point {
    int64_t sft_step;       /* warm-up steps done */
    int64_t step;           /* RL steps done */
    int rl_started;         /* the RL stage had begun (reference saved, eval before done) */
    double accuracy_before; /* -1 if unknown */
    double wall_seconds;    /* spent by the earlier part(s) of the run */
    double rollout_tokens, train_tokens, rollout_seconds, train_seconds;
    char checkpoint[PATH_MAX]; /* the checkpoint resumed from; "" for none */
} tern_resume_point;

typedef struct tern_run {
    tern_session *session; /* config, plugins' instances, metrics, trace */
    tern_run_settings set;
    uint64_t seed;
    char dir[PATH_MAX];    /* the run directory */
    FILE *out;             /* where the command prints (progress goes to stderr) */

    tern_model policy;    /* trainer's */
    tern_model reference; /* trainer's; ops NULL when no reference is used */
    int reference_is_copy;       /* same_as = "model": a frozen copy of the RL-start policy */
    tern_model *explorers; /* [n_explorers], one per explorer thread */
    uint32_t n_explorers;        /* the sync plugin's describe().explorers */
    tern_model evaluator; /* master's; NULL ops without an eval split */
    tern_special_tokens special;
    /* the policy reads images (its image_spec op, ABI 1.12), and how: the
     * placeholder a task's prompt gets, the encoder's size; set on every
     * rank by tern_run_check. image_op: the plugin has the op at all (for
     * the wording of the refusal when it does not read images) */
    int reads_images, image_op;
    tern_image_spec image_spec;

    const tern_buffer_ops *buffer_ops;
    void *buffer;
    /* the buffer and sync plugins' names and files, for the crash report
     * (base/op_watch.h: TERN_IN_OP); buffer_plugin is NULL for a trainer
     * rank's forwarding stand-in (loop/buffer_forward.c) */
    const char *buffer_plugin, *buffer_path, *sync_plugin, *sync_path;
    const tern_sync_ops *sync_ops;
    void *sync;
    char transport[32];      /* the sync plugin's weight transport ("memory", ...) */
    tern_transport_plugin transport_plugin; /* its plugin (transport section), else ops NULL */
    int64_t max_staleness;   /* the sync plugin's bound, -1 unbounded */
    int async;               /* the explorers never wait for weights (USE_NEWEST plans) */
    tern_rewarder rewards;
    tern_failure_log failures; /* master's: reward_failures.jsonl, once the run dir exists */
    /* the environment section's plugin (docs/agents.md), else env_ops NULL:
     * the explorers' episodes; its ops one call at a time (env_lock) unless
     * it is thread-safe */
    const tern_environment_ops *env_ops;
    void *env;
    const char *env_plugin;
    int env_thread_safe;
    pthread_mutex_t env_lock;
    /* the workflow section's command as one line, for messages */
    char workflow_name[256];
    /* the tools section's (docs/agents.md, "Tools"): n 0 without one */
    tern_toolbox tools;

    /* the indices of the training tasks that have an answer, in file order:
     * what the warm-up learns from (tern_run_check finds them, once) */
    uint32_t *answered;
    size_t n_answered;
    tern_task_set train, eval; /* read-only once the roles start; their sha256 is
                                  kept in checkpoints to check on resume */

    tern_queue inbox;          /* everything the master hears */
    tern_queue explorer_jobs;  /* batches to generate; any explorer takes the next */
    tern_queue trainer_jobs;   /* warm-up batches */
    tern_weight_store *weights;

    struct tern_ranks *ranks;  /* a run on MPI ranks (loop/ranks.h); NULL in one process */
    struct tern_dp *dp;        /* a trainer rank among several (loop/data_parallel.h); NULL
                                  in one process and with one trainer rank */

    int resuming;              /* --resume: a durable buffer's groups are this run's */
    tern_resume_point resume;
    atomic_int stop;           /* set on SIGINT: finish the step, checkpoint, stop */
    atomic_int failed;         /* set by a role that failed: everyone winds down */
    atomic_int all_dealt;      /* every batch the run needs is dealt: an explorer without
                                  a job is done (idle), not waiting */
} tern_run;

/* The fix a crash report gives for a buffer or sync plugin (base/op_watch.h). */
#define TERN_RUN_PLUGIN_FIX "a bug in the plugin: report this line to its author; `tern run " \
                            "CONFIG --resume` continues from the newest checkpoint"
/* `call` inside the buffer plugin's op `op` (or the sync plugin's),
 * named if it crashes and by the stop watchdog. */
#define TERN_BUFFER_OP(run, op, call) \
    TERN_IN_OP("buffer", (run)->buffer_plugin, (run)->buffer_path, op, TERN_RUN_PLUGIN_FIX, call)
#define TERN_SYNC_OP(run, op, call) \
    TERN_IN_OP("sync", (run)->sync_plugin, (run)->sync_path, op, TERN_RUN_PLUGIN_FIX, call)

/* Push a failure report of `role` (the calling thread's error message) and
 * set run->failed. */
void tern_report_failure(tern_run *run, const char *role, int status);

/* The thread bodies. An explorer gets its own tern_explorer_arg; the
 * trainer the tern_run. */
typedef struct tern_explorer_arg {
    tern_run *run;
    uint32_t id;
} tern_explorer_arg;
void *tern_explorer_main(void *arg);
void *tern_trainer_main(void *arg);
/* A trainer rank other than the leading one: the leader's orders (warm-up
 * steps, RL start, RL steps) until it says no more. */
void *tern_trainer_follower_main(void *arg);

/* Waits shorter than this are not traced (a lock or a queue hand-off, not a
 * role idling); nanoseconds. */
#define TERN_TRACE_MIN_WAIT_NS 200000ull

/* Seconds on the monotonic clock (durations in metrics and waits). */
double tern_run_now(void);
/* Wall clock (CLOCK_REALTIME) in ns since the Unix epoch, for timestamps
 * that outlive the process (experiences). */
uint64_t tern_run_unix_ns(void);

/* Wrap the message a plugin op left (or say it left none) as
 * "ROLE: WHAT: message" and return rc (TERN_ERR if rc is not a failure). */
int tern_role_failed(int rc, const char *role, const char *what);

/* The model's tokens for a task's prompt: through the model's chat template
 * (encode_chat, ABI 1.4) as a user turn after `system` (may be NULL), else
 * tokenized with BOS. Our own array (n + 1 entries); a system turn for a
 * model without encode_chat is refused with a message. `placeholder`: NULL
 * for a task without an image (or a text-only policy), else the model's
 * image placeholder (tern_run_placeholder), put with a newline before a
 * prompt when neither it nor the system turn holds one (docs/data.md,
 * "Images"); the model's tokenizer turns it into its image tokens. */
int tern_run_prompt(const tern_model *m, const char *role, const char *system,
                    const char *prompt, const char *placeholder, int32_t **ids, size_t *n);
/* The placeholder tern_run_prompt takes for a task: the policy's
 * (run->image_spec) when the task has an image and the policy reads images,
 * else NULL. */
const char *tern_run_placeholder(const tern_run *run, int has_image);
/* The system turn for task t: its "system" string field, else
 * data.system_prompt, else NULL. Not a copy. */
const char *tern_task_system(const tern_run *run, const tern_task *t);

/* Seed of a named stream with numbers mixed in (batch, slot, epoch ...). */
uint64_t tern_run_seed(const tern_run *run, const char *stream, uint64_t a, uint64_t b);

/* Checkpoint paths: DIR/checkpoints/step-N (final) and DIR/checkpoints/reference. */
void tern_checkpoint_dir(const tern_run *run, int64_t sft_step, int64_t step, int temporary,
                         char *buf, size_t n);

#endif
