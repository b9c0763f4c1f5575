/* cmd_serve.c: `tern serve MODEL_OR_CONFIG` (commands.h, docs/serve.md):
 * open the model as `tern generate` does (a saved directory, a GGUF file, or
 * the model slot of a config), then serve it over OpenAI's API until a
 * signal (core/src/serve/serve.h). */
#include <errno.h>
#include <libconfig.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errmsg.h"
#include "cmd_io.h"
#include "commands.h"
#include "model/model_open.h"
#include "serve/serve.h"

static volatile sig_atomic_t stop_requested, stop_signal;

static void on_signal(int sig)
{
    if (stop_requested) {
        signal(sig, SIG_DFL); /* a second one: at once */
        raise(sig);
        return;
    }
    stop_signal = sig;
    stop_requested = 1;
}

/* The model slot of config file `path` as a config text of its own (with
 * plugin_path, so a plugin beside the config is found), and its path, for
 * the checks and the model's default name. A config whose model starts
 * fresh (init) has nothing to serve. Returns an exit code; *text and *dir
 * malloc'd. */
static int model_of_config(const tern_invocation *inv, const char *label, const char *path,
                           char **text, char **dir)
{
    config_t cfg;
    config_init(&cfg);
    if (config_read_file(&cfg, path) != CONFIG_TRUE) {
        cmd_report(inv, label, "%s:%d: %s: give a model directory, a GGUF file or a config "
                   "whose model has a path", config_error_file(&cfg) ? config_error_file(&cfg)
                                                                    : path,
                   config_error_line(&cfg), config_error_text(&cfg));
        config_destroy(&cfg);
        return TERN_EXIT_USAGE;
    }
    int code = TERN_EXIT_OK;
    const char *d = NULL;
    config_setting_t *model = config_lookup(&cfg, "model");
    if (!model || !config_setting_is_group(model) ||
        config_setting_lookup_string(model, "path", &d) != CONFIG_TRUE) {
        cmd_report(inv, label, "%s: its model has no path (model.path): serve a saved model "
                   "(a run's checkpoint directory, or `tern model init`'s) or a GGUF file",
                   path);
        code = TERN_EXIT_USAGE;
    }
    if (code == TERN_EXIT_OK && !(*dir = strdup(d)))
        code = TERN_EXIT_FAILURE;
    /* everything but the model and where plugins are */
    config_setting_t *root = config_root_setting(&cfg);
    for (int i = config_setting_length(root) - 1; code == TERN_EXIT_OK && i >= 0; i--) {
        const char *name = config_setting_name(config_setting_get_elem(root, (unsigned)i));
        if (strcmp(name, "model") != 0 && strcmp(name, "plugin_path") != 0)
            config_setting_remove_elem(root, (unsigned)i);
    }
    size_t len = 0;
    FILE *f = code == TERN_EXIT_OK ? open_memstream(text, &len) : NULL;
    if (code == TERN_EXIT_OK && !f)
        code = TERN_EXIT_FAILURE;
    if (f) {
        config_write(&cfg, f);
        if (fclose(f) != 0)
            code = TERN_EXIT_FAILURE;
    }
    if (code == TERN_EXIT_FAILURE)
        cmd_report(inv, label, "out of memory");
    config_destroy(&cfg);
    return code;
}

static int is_config(const char *path)
{
    struct stat st;
    size_t n = strlen(path);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && n > 4 &&
           strcmp(path + n - 4, ".cfg") == 0;
}

/* The id clients name the model by: the path's last part, without .gguf. */
static char *default_name(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t a = n;
    while (a > 0 && dir[a - 1] != '/')
        a--;
    if (n - a > 5 && strncmp(dir + n - 5, ".gguf", 5) == 0)
        n -= 5;
    return strndup(dir + a, n - a);
}

/* The API key: TERN_API_KEY, or the first line of --api-key-file. */
static int api_key(const tern_invocation *inv, const char *label, const char *file, char **key)
{
    *key = NULL;
    const char *env = getenv("TERN_API_KEY");
    if (!file) {
        if (env && *env && !(*key = strdup(env))) {
            cmd_report(inv, label, "out of memory");
            return TERN_EXIT_FAILURE;
        }
        return TERN_EXIT_OK;
    }
    FILE *f = fopen(file, "r");
    char line[512];
    if (!f || !fgets(line, sizeof line, f)) {
        cmd_report(inv, label, "--api-key-file %s: %s", file,
                   f ? "the file is empty" : strerror(errno));
        if (f)
            fclose(f);
        return TERN_EXIT_USAGE;
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (strlen(line) < 8) {
        cmd_report(inv, label, "--api-key-file %s: the key is shorter than 8 characters", file);
        return TERN_EXIT_USAGE;
    }
    if (!(*key = strdup(line))) {
        cmd_report(inv, label, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    return TERN_EXIT_OK;
}

int tern_cmd_serve(const tern_invocation *inv, const tern_serve_args *a)
{
    const char *label = "tern serve";
    if (!inv || inv->size < sizeof *inv || !a || a->size < sizeof *a || !a->target)
        return TERN_EXIT_USAGE;
    const char *address = a->listen ? a->listen : a->host ? a->host : "127.0.0.1";
    if (a->host && a->listen) {
        cmd_report(inv, label, "give --host or --listen, not both");
        return TERN_EXIT_USAGE;
    }
    if (a->host && !tern_serve_is_loopback(a->host)) {
        cmd_report(inv, label, "--host %s is not a loopback address: --host takes 127.0.0.1, "
                   "::1 or localhost; to be reached from other machines use --listen %s "
                   "with an API key (TERN_API_KEY or --api-key-file FILE)", a->host, a->host);
        return TERN_EXIT_USAGE;
    }
    char *key = NULL, *text = NULL, *dir = NULL, *name = NULL;
    int code = api_key(inv, label, a->api_key_file, &key);
    if (code == TERN_EXIT_OK && !key && !tern_serve_is_loopback(address)) {
        cmd_report(inv, label, "--listen %s needs an API key, since anyone who can reach the "
                   "address could use the model: set TERN_API_KEY or give --api-key-file FILE",
                   address);
        code = TERN_EXIT_USAGE;
    }
    const int config = code == TERN_EXIT_OK && is_config(a->target);
    if (config && (a->plugin || a->threads)) {
        cmd_report(inv, label, "%s is a config: its model section names the plugin and its "
                   "threads (leave out --plugin and --threads)", a->target);
        code = TERN_EXIT_USAGE;
    }
    if (code == TERN_EXIT_OK && config)
        code = model_of_config(inv, label, a->target, &text, &dir);
    else if (code == TERN_EXIT_OK && !(dir = strdup(a->target))) {
        cmd_report(inv, label, "out of memory");
        code = TERN_EXIT_FAILURE;
    }
    if (code == TERN_EXIT_OK)
        code = cli_check_model_dir(inv, label, dir);
    cli_model m;
    memset(&m, 0, sizeof m);
    int opened = 0;
    if (code == TERN_EXIT_OK) {
        opened = 1;
        code = text ? cli_model_open_text(inv, label, text, &m)
                    : cli_model_open(inv, label, a->plugin, dir, NULL, -1, a->threads, &m);
    }
    if (code == TERN_EXIT_OK)
        code = cli_check_weights_finite(inv, label, &m, dir);
    if (code == TERN_EXIT_OK && !(name = a->name ? strdup(a->name) : default_name(dir))) {
        cmd_report(inv, label, "out of memory");
        code = TERN_EXIT_FAILURE;
    }
    if (code == TERN_EXIT_OK) {
        tern_serve_limits lim = tern_serve_default_limits();
        if (a->max_tokens)
            lim.max_tokens = a->max_tokens;
        tern_serve_options o = {.size = sizeof o,
                                .address = address,
                                .port = (uint16_t)a->port,
                                .api_key = key,
                                .model_name = name,
                                .max_connections = TERN_SERVE_MAX_CONNECTIONS,
                                .batch_samples = a->batch ? a->batch : TERN_SERVE_BATCH_SAMPLES,
                                .seed = a->seed,
                                .limits = lim,
                                .log = cmd_err(inv)};
        struct sigaction sa, old[3];
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
        stop_requested = stop_signal = 0;
        for (int i = 0; i < 3; i++)
            sigaction(sigs[i], &sa, &old[i]);
        int rc = tern_serve(&m.px, &o, &stop_requested);
        for (int i = 0; i < 3; i++)
            sigaction(sigs[i], &old[i], NULL);
        if (rc != TERN_OK) {
            cmd_report(inv, label, "%s", tern_error_message());
            code = cli_exit_code(rc);
        } else {
            code = stop_signal ? 128 + stop_signal : TERN_EXIT_OK;
            fprintf(cmd_err(inv), "tern serve: stopped (signal %d)\n", (int)stop_signal);
        }
    }
    if (opened)
        cli_model_close(&m);
    free(key), free(text), free(dir), free(name);
    return code;
}
