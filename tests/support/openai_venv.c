/* openai_venv.c: the openai client's cached venv (see openai_venv.h). */
#include "openai_venv.h"

#include <stdio.h>
#include <stdlib.h>

#include "command.h"

int openai_venv_python(char *python, size_t n, char *why, size_t wn)
{
    char dir[1024];
    const char *env = getenv("TERN_TEST_VENV"), *home = getenv("HOME");
    if (env && *env)
        snprintf(dir, sizeof dir, "%s", env);
    else
        snprintf(dir, sizeof dir, "%s/.cache/tern/venv-openai", home ? home : "/tmp");
    snprintf(python, n, "%s/bin/python", dir);
    result r;
    run(&r, "%s -c 'import openai' 2>/dev/null || { mkdir -p \"$(dirname %s)\" && "
        "python3 -m venv %s && %s/bin/pip install -q --disable-pip-version-check %s; }",
        python, dir, dir, dir, OPENAI_PACKAGE);
    if (r.code == 0)
        return 0;
    snprintf(why, wn, "the openai client cannot be installed here (%s into %s): %.300s",
             OPENAI_PACKAGE, dir, r.err[0] ? r.err : r.out);
    return -1;
}
