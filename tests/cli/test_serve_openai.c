/* test_serve_openai.c: the real `openai` client (PyPI) against `tern serve`:
 * chat, n > 1, logprobs, streaming, completions, tools (call, result sent
 * back, streamed), and every error case, each raised as the client's own
 * exception (tests/cli/openai_client_check.py). The client is installed into
 * a cached venv (~/.cache/tern/venv-openai, or TERN_TEST_VENV); where it
 * cannot be, the test reports itself skipped. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "http_client.h"
#include "pypi_venv.h"

#define SRC TERN_TEST_SOURCE_DIR
#define FIXTURE SRC "/tests/fixtures/qwen2_chat"
/* The venv's python with the client, or a skip naming why not. */
static void venv_python(char *python, size_t n)
{
    char why[600];
    if (openai_venv_python(python, n, why, sizeof why) != 0)
        cr_skip_test("%s", why);
}

Test(serve_openai, the_openai_client_passes, .timeout = 600)
{
    char python[1100];
    venv_python(python, sizeof python);
    /* the scripted model on the fixture with room for the tool block (test_serve.c) */
    result sh;
    run(&sh, "rm -rf wide && cp -r %s wide && sed -i 's/\"max_position_embeddings\": 256/"
        "\"max_position_embeddings\": 2048/' wide/config.json", FIXTURE);
    cr_assert_eq(sh.code, 0, "%s", sh.err);
    char cfg[1024], path[1100];
    snprintf(cfg, sizeof cfg,
             "plugin_path = [\"%s\"];\n"
             "model = { plugin = \"scripted_model\"; path = \"wide\"; threads = 1;\n"
             "  script = [\"<tool_call>\\n{\\\"name\\\": \\\"add\\\", \\\"arguments\\\": "
             "{\\\"a\\\": 2, \\\"b\\\": 3}}\\n</tool_call>\"]; };\n", TERN_TEST_PLUGINS_DIR);
    snprintf(path, sizeof path, "%s/scripted.cfg", test_work_dir());
    write_file(path, cfg);
    served a, b;
    cr_assert_eq(serve_start(&a, "TERN_API_KEY=test-key-123", FIXTURE " --threads 1"), 0);
    cr_assert_eq(serve_start(&b, "-u TERN_API_KEY", "scripted.cfg"), 0);
    result r;
    run(&r, "%s %s/tests/cli/openai_client_check.py http://127.0.0.1:%d/v1 test-key-123 "
        "qwen2_chat http://127.0.0.1:%d/v1 wide", python, SRC, a.port, b.port);
    cr_expect_eq(r.code, 0, "the openai client:\n%s\n%s", r.out, r.err);
    cr_expect(strstr(r.out, "all checks passed"), "%s", r.out);
    cr_expect_eq(serve_stop(&a), 143);
    cr_expect_eq(serve_stop(&b), 143);
}
