/* messages.c: freeing the roles' messages (messages.h). */
#include "channel/messages.h"
#include "tern/environment.h"

#include <math.h>
#include <stdlib.h>

static void free_strings(char **s, uint32_t n)
{
    for (uint32_t i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

void tern_msg_free(void *msg)
{
    if (!msg)
        return;
    switch (*(tern_msg_kind *)msg) {
    case TERN_MSG_EXPLORE: {
        tern_explore_job *j = msg;
        free(j->task_index);
        free_strings(j->prompt, j->n);
        free_strings(j->system, j->n);
        free_strings(j->image, j->n);
        break;
    }
    case TERN_MSG_SFT_BATCH: {
        tern_sft_job *j = msg;
        free_strings(j->prompt, j->n);
        free_strings(j->answer, j->n);
        free_strings(j->system, j->n);
        free_strings(j->image, j->n);
        break;
    }
    case TERN_MSG_REWARD_ASK: {
        tern_reward_ask *a = msg;
        free_strings(a->task, a->n);
        free_strings(a->origin, a->n);
        free_strings(a->response, a->n);
        free(a->tokens);
        break;
    }
    case TERN_MSG_REWARD_ANSWER: {
        tern_reward_answer *a = msg;
        for (uint32_t i = 0; a->reply && i < a->n; i++) {
            free(a->reply[i].reason);
            for (uint32_t c = 0; c < a->reply[i].n_comp && c < TERN_REWARD_MAX_COMPONENTS; c++)
                free(a->reply[i].comp_name[c]);
        }
        free(a->reply);
        break;
    }
    case TERN_MSG_TRAIN: {
        tern_train_msg *t = msg;
        tern_msg_free(t->sft);
        for (uint32_t i = 0; t->group && i < t->n; i++)
            free(t->group[i]);
        free(t->group);
        free(t->group_len);
        break;
    }
    case TERN_MSG_ROLLOUT: {
        tern_rollout_msg *r = msg;
        for (uint32_t i = 0; r->prompt_tokens && i < r->n; i++)
            free(r->prompt_tokens[i]);
        for (size_t i = 0; r->resp && i < (size_t)r->n * r->group_size; i++) {
            free(r->resp[i].tokens);
            free(r->resp[i].logp);
            free(r->resp[i].text);
            free(r->resp[i].seg_len);
            free(r->resp[i].turn_reward);
            free(r->resp[i].env_reason);
            free(r->resp[i].restart);
        }
        free(r->prompt_tokens);
        free(r->prompt_len);
        free_strings(r->image, r->n);
        free(r->image_sha256);
        free(r->task_index);
        free(r->resp);
        break;
    }
    default: {
        tern_step_msg *s = msg;
        tern_snapshot_free(s->eval);
        free(s->consumed);
        json_decref(s->figures);
        json_decref(s->groups);
        free(s->saved);
        free(s->error);
        break;
    }
    }
    free(msg);
}

const char *tern_response_trajectory_problem(const tern_response *r)
{
    if (r->n_segments % 2 == 0 && r->n_segments != 0)
        return "an even segment count (a trajectory starts and ends with the model's turn)";
    if (r->n_segments && !r->seg_len)
        return "segments without their lengths";
    uint64_t sum = 0;
    for (uint32_t k = 0; k < r->n_segments; k++)
        sum += r->seg_len[k];
    if (r->n_segments && sum != r->len)
        return "its segments do not add up to its tokens";
    if (r->n_turns != 0 && r->n_turns != (r->n_segments + 1) / 2)
        return "turn rewards neither 0 nor one per model turn";
    if (r->n_turns && !r->turn_reward)
        return "turn rewards without their values";
    for (uint32_t k = 0; k < r->n_turns; k++)
        if (!isfinite(r->turn_reward[k]))
            return "a turn reward that is not finite";
    if (r->end > TERN_END_LAST || r->env_failure > TERN_ENV_START)
        return "an end or environment failure that names nothing";
    if (r->n_restarts && !r->restart)
        return "restarts without their segments";
    for (uint32_t k = 0; k < r->n_restarts; k++) {
        uint32_t s = r->restart[k];
        if (s % 2 == 0 || s >= r->n_segments || (k && s <= r->restart[k - 1]))
            return "a restart that is not a context segment after the last one";
        if (r->seg_len[s] == 0)
            return "a restart of no tokens (a sequence's prompt has at least one)";
    }
    return NULL;
}
