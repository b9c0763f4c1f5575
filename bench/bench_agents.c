/* bench_agents.c: how busy a slow environment leaves the model (issue 57
 * item 8, docs/agents.md "Many trajectories in flight"). Each run samples
 * multi-turn trajectories from an environment whose every step sleeps 50 ms
 * (--delay-ms), and reads from the run's trace.json how much of the
 * explorer's rollout time was spent inside generate():
 *
 *   busy = sum of "generate" spans / sum of "rollout" spans
 *
 * for each model, environment and explorer.waves:
 *   models        the small Qwen2 chat fixture (tests/fixtures/qwen2_chat:
 *                 decoding costs almost nothing, so this is the worst
 *                 case), and SmolLM2-135M-Instruct when its GGUF is in
 *                 ~/.cache/tern/models (scripts/fetch-smollm2.py)
 *   environments  script_env (C, thread-safe: the job threads step many
 *                 episodes at once) and a python environment (one Python
 *                 worker: its steps one at a time)
 *   waves         1 (the batch decodes, then steps) and 2 (one wave decodes
 *                 while the other steps)
 *
 *   bench_agents [--tern PATH] [--source DIR] [--plugins DIR] [--out DIR]
 *                [--delay-ms N] [--steps N]
 *
 * Figures only, no pass/fail. */
#define _DEFAULT_SOURCE /* realpath */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct figures {
    int ok;
    double rollout_s, generate_s;
    long rollouts, generates;
} figures;

static int read_trace(const char *path, figures *f)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        fprintf(stderr, "bench_agents: %s: %s\n", path, err.text);
        return -1;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!name || !ph || strcmp(ph, "X") != 0)
            continue;
        double dur = json_number_value(json_object_get(e, "dur")) * 1e-6;
        if (strcmp(name, "rollout") == 0)
            f->rollout_s += dur, f->rollouts++;
        else if (strcmp(name, "generate") == 0)
            f->generate_s += dur, f->generates++;
    }
    json_decref(root);
    f->ok = f->rollouts > 0;
    return f->ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *tern = "build/bin/tern", *src = ".", *plugins = "build/tests/test_plugins";
    const char *out = "build/bench/agents";
    int delay = 50, steps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--tern") == 0)
            tern = argv[i + 1];
        else if (strcmp(argv[i], "--source") == 0)
            src = argv[i + 1];
        else if (strcmp(argv[i], "--plugins") == 0)
            plugins = argv[i + 1];
        else if (strcmp(argv[i], "--out") == 0)
            out = argv[i + 1];
        else if (strcmp(argv[i], "--delay-ms") == 0)
            delay = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_agents: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    static char cmd[65536], path[8192], smol[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", out);
    if (system(cmd) != 0)
        return 1;
    /* a config's paths are taken from its folder: make them absolute */
    static char abs_src[4096], abs_plugins[4096], abs_out[4096];
    if (!realpath(src, abs_src) || !realpath(plugins, abs_plugins) || !realpath(out, abs_out)) {
        fprintf(stderr, "bench_agents: --source, --plugins or --out does not exist\n");
        return 2;
    }
    src = abs_src, plugins = abs_plugins, out = abs_out;
    /* the python environment: the same episodes, one worker */
    snprintf(path, sizeof path, "%s/slow_env.py", out);
    FILE *py = fopen(path, "w");
    if (!py)
        return 1;
    fprintf(py, "import time\n"
                "class Env:\n"
                "    def reset(self, task):\n"
                "        self.turn = 0\n"
                "        return None\n"
                "    def step(self, action):\n"
                "        time.sleep(%g)\n"
                "        self.turn += 1\n"
                "        return ('go on %%d' %% self.turn, self.turn / 8, self.turn >= 3)\n",
            delay / 1000.0);
    fclose(py);
    const char *home = getenv("HOME");
    snprintf(smol, sizeof smol, "%s/.cache/tern/models/SmolLM2-135M-Instruct.Q4_1.gguf",
             home ? home : "");
    struct {
        const char *name, *path;
        int tasks, group, tokens;
    } models[] = {{"qwen2 fixture (hidden 32)", NULL, 16, 8, 8},
                  {"SmolLM2-135M Q4_1", smol, 8, 4, 16}};
    char fixture[8192];
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/qwen2_chat", src);
    models[0].path = fixture;
    printf("environment steps sleep %d ms; 3 turns a trajectory; %d RL steps a run\n", delay,
           steps);
    printf("%-26s %-12s %5s %9s %10s %7s\n", "model", "environment", "waves", "rollout s",
           "generate s", "busy");
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        if (access(models[m].path, R_OK) != 0) {
            printf("%-26s (not found: %s; python3 scripts/fetch-smollm2.py)\n", models[m].name,
                   models[m].path);
            continue;
        }
        for (int env = 0; env < 2; env++)
            for (int waves = 1; waves <= 2; waves++) {
                char name[64], cfg[8192];
                snprintf(name, sizeof name, "m%zu-%s-w%d", m, env ? "py" : "c", waves);
                snprintf(cfg, sizeof cfg, "%s/%s.cfg", out, name);
                FILE *f = fopen(cfg, "w");
                if (!f)
                    return 1;
                fprintf(f,
                        "plugin_path = [\"%s\"];\n"
                        "run = { name = \"%s\"; out_dir = \"%s\"; };\n"
                        "model = { plugin = \"transformer\"; path = \"%s\"; threads = 2; };\n"
                        "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n"
                        "explorer = { batch_tasks = %d; group_size = %d; max_tokens = %d; "
                        "waves = %d; };\n"
                        "trainer = { steps = %d; save_every = 0; };\n"
                        "algorithm = { kl = { coef = 0.0; }; };\n"
                        "buffer = { plugin = \"fifo\"; capacity = 256; };\n"
                        "sync = { plugin = \"synchronous\"; };\n",
                        plugins, name, out, models[m].path, src, models[m].tasks,
                        models[m].group, models[m].tokens, waves, steps);
                if (env)
                    fprintf(f, "environment = { plugin = \"python\"; file = \"slow_env.py\"; "
                               "max_turns = 3; };\n");
                else
                    fprintf(f, "environment = { plugin = \"script_env\"; turns = 3; "
                               "delay_ms = %d; max_turns = 3; };\n", delay);
                fclose(f);
                snprintf(cmd, sizeof cmd,
                         "rm -rf '%s/%s' && '%s' run '%s' >/dev/null 2>'%s/%s.log'", out, name,
                         tern, cfg, out, name);
                figures fig = {0};
                snprintf(path, sizeof path, "%s/%s/trace.json", out, name);
                if (system(cmd) != 0 || read_trace(path, &fig) != 0) {
                    printf("%-26s %-12s %5d  failed (see %s/%s.log)\n", models[m].name,
                           env ? "python" : "script_env", waves, out, name);
                    continue;
                }
                printf("%-26s %-12s %5d %9.2f %10.2f %6.0f%%\n", models[m].name,
                       env ? "python" : "script_env", waves, fig.rollout_s, fig.generate_s,
                       100 * fig.generate_s / fig.rollout_s);
                fflush(stdout);
            }
    }
    return 0;
}
