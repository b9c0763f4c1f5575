/* rewarder.c: reward routing by domain (see rewarder.h). */
#include "loop/rewarder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "log.h"
#include "task.h"

int tern_rewards_route(tern_run *run)
{
    tern_session *s = run->session;
    size_t n = 0;
    for (size_t i = 0; i < s->n_inst; i++)
        n += s->inst[i].slot->kind == TERN_KIND_REWARD && s->inst[i].created;
    run->routes = calloc(n ? n : 1, sizeof *run->routes);
    if (!run->routes)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n_inst; i++) {
        tern_instance *in = &s->inst[i];
        if (in->slot->kind != TERN_KIND_REWARD || !in->created)
            continue;
        tern_reward_route *r = &run->routes[run->n_routes++];
        config_setting_t *d = config_setting_get_member(in->group, "domain");
        config_setting_t *w = config_setting_get_member(in->group, "weight");
        r->domain = d ? config_setting_get_string(d) : "";
        r->weight = w ? (config_setting_type(w) == CONFIG_TYPE_FLOAT
                             ? config_setting_get_float(w)
                             : (double)config_setting_get_int64(w))
                      : 1.0;
        r->label = in->label;
        r->ops = in->entry->plugin->desc->ops;
        r->state = in->state;
    }
    return TERN_OK;
}

static int has_route(const tern_run *run, const char *domain)
{
    for (size_t i = 0; i < run->n_routes; i++)
        if (strcmp(run->routes[i].domain, domain) == 0)
            return 1;
    return 0;
}

int tern_rewards_check_domains(const tern_run *run, const tern_task_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        const char *dom = tern_task_string(set->tasks[i], "domain");
        if (!dom || has_route(run, dom))
            continue;
        size_t count = 0;
        for (size_t j = 0; j < set->n; j++) {
            const char *o = tern_task_string(set->tasks[j], "domain");
            count += o && strcmp(o, dom) == 0;
        }
        return tern_errorf(TERN_ECONFIG, "%s: %zu task%s of domain \"%s\" but no reward plugin "
                           "scores that domain: add { domain = \"%s\"; plugin = \"...\"; } to "
                           "rewards (`tern plugins` lists the reward plugins)",
                           set->path, count, count == 1 ? " is" : "s are", dom, dom);
    }
    return TERN_OK;
}

int tern_rewards_score(tern_run *run, const tern_task *const *tasks, const char *const *texts,
                       const uint32_t *ntok, size_t n, tern_verdict *out, uint64_t *failures,
                       tern_metrics *observe)
{
    tern_reward_item *items = calloc(n ? n : 1, sizeof *items);
    tern_reward_result *res = calloc(n ? n : 1, sizeof *res);
    size_t *which = calloc(n ? n : 1, sizeof *which);
    int *have_acc = calloc(n ? n : 1, sizeof *have_acc);
    if (!items || !res || !which || !have_acc) {
        free(items), free(res), free(which), free(have_acc);
        return tern_errorf(TERN_ENOMEM, "out of memory scoring rewards");
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (tern_verdict){0};
    for (size_t r = 0; r < run->n_routes; r++) {
        tern_reward_route *rt = &run->routes[r];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            const char *dom = tern_task_string(tasks[i], "domain");
            if (!dom || strcmp(dom, rt->domain) != 0)
                continue;
            items[m] = (tern_reward_item){.size = sizeof items[m], .task = tasks[i],
                                          .response = texts[i], .response_len = strlen(texts[i]),
                                          .response_tokens = ntok[i]};
            memset(&res[m], 0, sizeof res[m]);
            res[m].size = sizeof res[m];
            which[m++] = i;
        }
        if (!m)
            continue;
        tern_error_clear();
        int rc = rt->ops->score(rt->state, items, res, m);
        if (rc != TERN_OK) {
            const char *msg = tern_error_message();
            tern_logf(TERN_LOG_WARN, rt->label, "the reward plugin failed on %zu responses, "
                      "scored 0: %s", m, *msg ? msg : "it gave no reason");
        }
        for (size_t k = 0; k < m; k++) {
            tern_verdict *v = &out[which[k]];
            if (rc != TERN_OK || !isfinite(res[k].reward)) {
                v->failed = 1;
                (*failures)++;
                continue;
            }
            v->reward += rt->weight * res[k].reward;
            for (uint32_t c = 0; c < res[k].n_components && c < TERN_REWARD_MAX_COMPONENTS;
                 c++) {
                const tern_reward_component *rc_ = &res[k].components[c];
                if (!rc_->name || !isfinite(rc_->value))
                    continue;
                if (observe) {
                    char name[96];
                    snprintf(name, sizeof name, "reward/%s", rc_->name);
                    tern_metrics_observe(observe, name, rc_->value);
                }
                size_t nl = strlen(rc_->name);
                if (v->n_parts < TERN_EXPERIENCE_MAX_PARTS && nl > 0 &&
                    nl <= TERN_EXPERIENCE_NAME_MAX) {
                    memcpy(v->part_name[v->n_parts], rc_->name, nl + 1);
                    v->part_value[v->n_parts++] = rc_->value;
                }
            }
            for (uint32_t c = 0; !have_acc[which[k]] && c < res[k].n_components &&
                                 c < TERN_REWARD_MAX_COMPONENTS;
                 c++)
                if (res[k].components[c].name &&
                    strcmp(res[k].components[c].name, "accuracy") == 0) {
                    v->accuracy = res[k].components[c].value >= 0.5;
                    have_acc[which[k]] = 1;
                }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!have_acc[i])
            out[i].accuracy = !out[i].failed && out[i].reward > 0;
    free(items), free(res), free(which), free(have_acc);
    return TERN_OK;
}
