/* main.c: the `tern` command. It parses argv and calls libtern; everything
 * else (and every message about a config or plugin) lives in libtern. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/libtern.h"

typedef struct command {
    const char *name;
    const char *usage;
    const char *help;
} command;

static const command commands[] = {
    {"run", "tern run CONFIG [-o section.key=value]...",
     "Check CONFIG, start every plugin it names, create the run directory\n"
     "(out_dir/name/: config.cfg with every value in force, log.txt, trace.json)\n"
     "and run. -o overrides a setting, typed as in the file (-o run.seed=2,\n"
     "-o run.name=\"try2\", -o buffer.capacity=128); repeat it as needed.\n"
     "Exit: 0 done, 1 runtime failure, 2 bad usage/config/plugin, 130 interrupted."},
    {"check", "tern check CONFIG [-o section.key=value]...",
     "Read and validate CONFIG, load and start every plugin it names, print\n"
     "what would run, and stop. Every problem is printed as FILE:LINE: message.\n"
     "Exit: 0 valid, 2 invalid (1 if a plugin failed for a runtime reason)."},
    {"plugins", "tern plugins [--config CONFIG]",
     "List every plugin on the search path (name, kind, version, ABI, file),\n"
     "then every file that was refused and why. The search path is: the\n"
     "config's plugin_path (with --config), $TERN_PLUGIN_PATH, the per-user\n"
     "directory ($XDG_DATA_HOME/tern/plugins/abi-1, default\n"
     "~/.local/share/tern/plugins/abi-1), then the build tree's or installed\n"
     "tern/abi-1 directory beside libtern."},
    {"new-plugin", "tern new-plugin KIND NAME [DIR]",
     "Write a ready-to-build plugin project to DIR (default ./NAME): NAME.c, a\n"
     "complete KIND plugin whose every op does something simple (replace the\n"
     "marked parts with your logic), CMakeLists.txt (find_package(Tern) and a\n"
     "test that runs `tern check test.cfg`), test.cfg and README.md. Then:\n"
     "cd DIR && cmake -S . -B build && cmake --build build && ctest --test-dir build\n"
     "KIND is model, reward, buffer or sync. NAME is the plugin's name: a\n"
     "lower-case letter, then lower-case letters, digits or '_' (at most 64).\n"
     "DIR must not exist or be empty: nothing is ever overwritten.\n"
     "Exit: 0 written, 1 a file could not be written, 2 bad usage."},
    {"version", "tern version", "Print the tern release and the plugin ABI version."},
    {"help", "tern help [COMMAND]", "Show the commands, or one command's help."},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_overview(FILE *f)
{
    fprintf(f, "tern %s: reinforcement fine-tuning for language models\n\nusage:\n",
            tern_version_string());
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "\n`tern help COMMAND` tells more. Docs: docs/config.md, docs/plugins.md.\n");
}

static int usage_error(const char *fmt, const char *arg, const char *cmd)
{
    fprintf(stderr, "tern: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    const command *c = cmd ? find_command(cmd) : NULL;
    if (c)
        fprintf(stderr, "usage: %s\n", c->usage);
    else
        fprintf(stderr, "run `tern help` for the commands\n");
    return TERN_EXIT_USAGE;
}

/* Parse "CONFIG [-o k=v]..." (and --config CONFIG for plugins) into inv. */
static int parse_args(int argc, char **argv, const char *cmd, int config_required,
                      tern_invocation *inv, const char **overrides)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--override") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs section.key=value", a, cmd);
            overrides[inv->n_overrides++] = argv[++i];
        } else if (strncmp(a, "-o", 2) == 0 && a[2]) {
            overrides[inv->n_overrides++] = a + 2;
        } else if (strcmp(a, "--config") == 0 && !config_required) {
            if (i + 1 >= argc)
                return usage_error("%s needs a file", a, cmd);
            inv->config_path = argv[++i];
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            const command *c = find_command(cmd);
            printf("usage: %s\n\n%s\n", c->usage, c->help);
            return -1;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a, cmd);
        } else if (config_required && !inv->config_path) {
            inv->config_path = a;
        } else {
            return usage_error("unexpected argument '%s'", a, cmd);
        }
    }
    if (config_required && !inv->config_path)
        return usage_error("%s needs a config file", cmd, cmd);
    return 0;
}

/* `tern new-plugin KIND NAME [DIR]`: positional arguments only. */
static int new_plugin(int argc, char **argv)
{
    const char *pos[3] = {NULL, NULL, NULL};
    int n = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            const command *c = find_command("new-plugin");
            printf("usage: %s\n\n%s\n", c->usage, c->help);
            return TERN_EXIT_OK;
        }
        if (a[0] == '-' && a[1])
            return usage_error("unknown option '%s'", a, "new-plugin");
        if (n == 3)
            return usage_error("unexpected argument '%s'", a, "new-plugin");
        pos[n++] = a;
    }
    if (n < 2)
        return usage_error("%s needs KIND and NAME", "new-plugin", "new-plugin");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_new_plugin(&inv, pos[0], pos[1], pos[2]);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return TERN_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        print_overview(stdout);
        return TERN_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        if (argc > 2)
            return usage_error("unexpected argument '%s'", argv[2], "version");
        printf("tern %s (plugin ABI %d.%d)\n", tern_version_string(), TERN_ABI_MAJOR,
               TERN_ABI_MINOR);
        return TERN_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc == 2) {
            print_overview(stdout);
            return TERN_EXIT_OK;
        }
        const command *c = find_command(argv[2]);
        if (!c || argc > 3)
            return usage_error("no command '%s'", argv[2], NULL);
        printf("usage: %s\n\n%s\n", c->usage, c->help);
        return TERN_EXIT_OK;
    }
    const command *c = find_command(cmd);
    if (!c)
        return usage_error("unknown command '%s'", cmd, NULL);
    if (strcmp(cmd, "new-plugin") == 0)
        return new_plugin(argc - 2, argv + 2);

    const char **overrides = calloc((size_t)argc, sizeof *overrides);
    if (!overrides) {
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    tern_invocation inv = {.size = sizeof inv, .overrides = overrides};
    int is_plugins = strcmp(cmd, "plugins") == 0;
    int rc = parse_args(argc - 2, argv + 2, cmd, !is_plugins, &inv, overrides);
    if (rc == 0) {
        if (strcmp(cmd, "run") == 0)
            rc = tern_cmd_run(&inv);
        else if (strcmp(cmd, "check") == 0)
            rc = tern_cmd_check(&inv);
        else
            rc = tern_cmd_plugins(&inv);
    } else if (rc < 0) {
        rc = TERN_EXIT_OK; /* --help */
    }
    free(overrides);
    return rc;
}
