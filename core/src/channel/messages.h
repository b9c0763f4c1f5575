/* messages.h: the messages the roles of a run send each other (docs/architecture.md
 * §2, docs/distributed.md): on the queues of one process, or encoded
 * (wire.h) between MPI ranks. Every message starts with its kind. */
#ifndef TERN_CHANNEL_MESSAGES_H
#define TERN_CHANNEL_MESSAGES_H

#include <stdint.h>

#include <jansson.h>

#include "algo/policy_loss.h"
#include "tern/reward.h"
#include "weights/weights.h"

typedef enum tern_msg_kind {
    TERN_MSG_EXPLORE = 1,  /* master -> explorer: a batch to generate */
    TERN_MSG_SFT_BATCH,    /* master -> trainer: a warm-up batch */
    TERN_MSG_ROLLOUT,      /* explorer -> master: a generated batch */
    TERN_MSG_SFT_DONE,     /* trainer -> master: a warm-up step finished */
    TERN_MSG_RL_START,     /* trainer -> master: RL begins (weights of version 0 attached) */
    TERN_MSG_STEP_DONE,    /* trainer -> master: an RL step finished */
    TERN_MSG_STOPPED,      /* trainer -> master: stopped on request after a checkpoint */
    TERN_MSG_SKIPPED,      /* trainer -> master: `stale` groups dropped as too stale (deal more) */
    TERN_MSG_FAILED,       /* any role -> master: it failed and stopped */
    TERN_MSG_TRAIN,        /* leading trainer rank -> the other trainer ranks: what to do */
    TERN_MSG_REWARD_ASK,   /* master -> reward rank: responses for one reward route */
    TERN_MSG_REWARD_ANSWER /* reward rank -> master: the route's verdicts on them */
} tern_msg_kind;

/* master -> explorer */
typedef struct tern_explore_job {
    tern_msg_kind kind;
    int64_t batch;
    /* asynchronous modes (TERN_SYNC_USE_NEWEST): the explorer loads the
     * newest version, and at least this one (published already: it waits
     * only while the transport delivers it). The master holds batches back
     * by this bound so that none trains staler than max_staleness. */
    int64_t min_version;
    /* the batch index the sync plugin plans its weights by: `batch`, or
     * with algorithm.filter_groups the step the batch is dealt for (its
     * stand-ins feed the same step, so a fixed schedule gives them the same
     * weights: master.c, plan_index) */
    int64_t plan_batch;
    uint32_t n;             /* tasks */
    uint32_t *task_index;   /* [n] into the train set */
    char **prompt;          /* [n] prompt texts (copies) */
    char **system;          /* [n] system turns (copies), NULL entries for none */
    /* [n] each task's image file, resolved (image/task_image.h: copies), NULL
     * entries for a task without one; NULL: no task has one */
    char **image;
} tern_explore_job;

/* master -> trainer: warm-up pairs */
typedef struct tern_sft_job {
    tern_msg_kind kind;
    int64_t step;
    uint32_t n;
    char **prompt, **answer; /* [n] copies */
    char **system;           /* [n] system turns (copies), NULL entries for none */
    char **image;            /* [n] image files as tern_explore_job.image; NULL: none */
} tern_sft_job;

/* One response of a rollout: one answer, or a trajectory of turns (an
 * environment's, docs/agents.md). */
typedef struct tern_response {
    int32_t *tokens;         /* every token: the model's turns and the context between */
    float *logp;             /* behaviour log-probs; 0 for context tokens */
    uint32_t len;
    uint32_t finish;         /* a tern_finish (of the last turn) */
    char *text;              /* what the rewards read: the last turn's text */
    /* A trajectory: the tokens are n_segments runs, alternately the model's
     * and context, the model's first and last, run k seg_len[k] tokens long;
     * 0 and NULL: one answer, all the model's. */
    uint32_t n_segments;
    uint32_t *seg_len;
    uint32_t n_turns;        /* the model's turns ((n_segments + 1) / 2), or 0 */
    double *turn_reward;     /* [n_turns] the environment's reward for each */
    uint32_t end;            /* why it ended: a tern_traj_end (tern/environment.h) */
    uint32_t env_failure;    /* 0, or the tern_env_failure that ended it */
    char *env_reason;        /* the environment's reason (done or failed), or NULL */
    /* The context segments (odd k, increasing) that begin a sequence of
     * their own: a workflow's call that rewrote the history. What comes
     * before one is trained as a sequence, the segment is the next one's
     * prompt (docs/agents.md, "Workflows"). 0 and NULL: one sequence. */
    uint32_t n_restarts;
    uint32_t *restart;
} tern_response;

/* What is wrong with r's trajectory fields, or NULL when they hold: a
 * segment count that is neither 0 nor odd, segments that do not add up to
 * len (or none given), turn rewards neither 0 nor one per model turn (or
 * none given) or not finite, an end past TERN_END_LAST or an environment
 * failure past TERN_ENV_START (tern/environment.h), restarts that are not
 * increasing context segments of at least one token. A static string. */
const char *tern_response_trajectory_problem(const tern_response *r);

/* explorer -> master */
typedef struct tern_rollout_msg {
    tern_msg_kind kind;
    int64_t batch, version;
    uint32_t explorer;       /* which explorer made it (0-based) */
    uint32_t n, group_size;
    uint32_t *task_index;    /* [n] */
    int32_t **prompt_tokens; /* [n] */
    uint32_t *prompt_len;    /* [n] */
    /* [n] the image file each prompt was generated with (the job's, copies;
     * NULL entries for none, NULL: no image at all), and the SHA-256 of the
     * bytes the explorer decoded, 32 bytes per prompt ([n * 32]; NULL when
     * image is) */
    char **image;
    unsigned char *image_sha256;
    tern_response *resp;     /* [n * group_size] */
    double gen_seconds, wait_seconds;
    uint64_t gen_tokens;
    uint64_t done_unix_ns;   /* wall clock when generation ended (ns since 1970) */
    /* the tools' calls in these trajectories, and those answered "invalid
     * tool call" or "tool error" (docs/agents.md, "Tools") */
    uint64_t tool_calls, tool_invalid, tool_failed;
    /* a workflow's (docs/agents.md, "Workflows"): its programs' calls, and the
     * trajectories whose history a call rewrote (a sequence of its own from there) */
    uint64_t wf_calls, wf_rewrites;
} tern_rollout_msg;

/* trainer -> master */
typedef struct tern_step_msg {
    tern_msg_kind kind;
    int64_t step;            /* steps done after this one (1-based); SFT: warm-up steps done */
    int64_t version;         /* weights version after the step */
    int64_t batch;           /* the oldest batch among the groups trained on */
    int64_t rollout_version; /* the oldest weight version among them */
    /* [n_consumed] ids (tern_record_meta.id) of the groups this step took
     * from the buffer: trained, or dropped as too stale. Committed to a
     * durable buffer with the checkpoint that includes the step. */
    uint64_t *consumed;
    size_t n_consumed;
    json_t *figures;         /* the step's figures from its groups (reward, accuracy, ...) */
    json_t *groups;          /* rollouts.jsonl lines of the groups trained, "step" set */
    int published;
    int in_rl;               /* TERN_MSG_STOPPED: 1 in the RL stage, 0 in the warm-up */
    int rl_fresh;            /* TERN_MSG_RL_START: RL begins now (not a resume within RL) */
    int64_t sft_step;        /* TERN_MSG_STOPPED in the warm-up: its steps done */
    tern_loss_stats loss;
    double grad_norm, lr;
    double reward_mean;      /* after the KL-in-reward and length terms */
    double staleness;        /* mean trainer version - group version, over groups taken */
    uint64_t stale;          /* groups dropped as too stale (TERN_MSG_SKIPPED: this many) */
    uint64_t train_tokens;
    double train_seconds, wait_seconds;
    tern_snapshot *eval;     /* weights to evaluate, or NULL */
    char *saved;             /* checkpoint directory written (temporary name), or NULL */
    int status;              /* TERN_MSG_FAILED: the status */
    char *error;             /* TERN_MSG_FAILED: what went wrong */
    const char *role;        /* TERN_MSG_FAILED: "explorer", "trainer" */
} tern_step_msg;

/* What the leading trainer rank tells the others (tern_train_msg.order). */
typedef enum tern_train_order {
    TERN_TRAIN_SFT = 1,      /* a warm-up step on `sft` */
    TERN_TRAIN_RL_START = 2, /* RL begins: the reference becomes a copy of the policy */
    TERN_TRAIN_STEP = 3,     /* RL step `step` on the `n` groups */
    TERN_TRAIN_END = 4       /* no more: the trainer stopped, finished or failed */
} tern_train_order;

/* leading trainer rank -> the other trainer ranks (loop/data_parallel.h) */
typedef struct tern_train_msg {
    tern_msg_kind kind;      /* TERN_MSG_TRAIN */
    uint32_t order;          /* a tern_train_order */
    int64_t step;            /* TERN_TRAIN_STEP: the RL step (0-based) */
    tern_sft_job *sft;       /* TERN_TRAIN_SFT: the warm-up batch; else NULL */
    uint32_t n;              /* TERN_TRAIN_STEP: the groups, in the order the buffer gave them */
    unsigned char **group;   /* [n] each group's experience encoding (experience.h) */
    size_t *group_len;       /* [n] its bytes */
} tern_train_msg;

/* master -> reward-worker rank: the responses one reward route scores, as
 * the isolated reward worker is sent them (reward/worker.h): each task as
 * its JSON object and origin, the response's text and token count. */
typedef struct tern_reward_ask {
    tern_msg_kind kind;      /* TERN_MSG_REWARD_ASK */
    uint32_t route;          /* which of the config's `rewards` entries (0-based) */
    uint32_t n;
    char **task;             /* [n] the task's JSON object */
    char **origin;           /* [n] where it was read ("file:line"), NULL entries for none */
    char **response;         /* [n] the response text */
    uint32_t *tokens;        /* [n] its token count */
} tern_reward_ask;

/* One verdict of a route, as the isolated worker replies it. */
typedef struct tern_reward_reply {
    uint32_t failure;        /* a tern_reward_failure: 0 scored */
    double reward;
    char *reason;            /* never NULL once decoded */
    uint32_t n_comp;         /* at most TERN_REWARD_MAX_COMPONENTS */
    char *comp_name[TERN_REWARD_MAX_COMPONENTS];
    double comp_value[TERN_REWARD_MAX_COMPONENTS];
} tern_reward_reply;

/* reward-worker rank -> master */
typedef struct tern_reward_answer {
    tern_msg_kind kind;      /* TERN_MSG_REWARD_ANSWER */
    uint32_t n;
    tern_reward_reply *reply; /* [n], in the ask's order */
} tern_reward_answer;

/* Free any message above (NULL is fine). */
void tern_msg_free(void *msg);

#endif
