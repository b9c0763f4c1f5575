/* pypi_venv.c: cached venvs with a PyPI package each (see pypi_venv.h). */
#include "pypi_venv.h"

#include <stdio.h>
#include <stdlib.h>

#include "command.h"

static int venv_in(const char *dir, const char *module, const char *package, char *python,
                   size_t n, char *why, size_t wn)
{
    snprintf(python, n, "%s/bin/python", dir);
    result r;
    run(&r, "%s -c 'import %s' 2>/dev/null || { mkdir -p \"$(dirname %s)\" && "
        "python3 -m venv %s && %s/bin/pip install -q --disable-pip-version-check %s; }",
        python, module, dir, dir, dir, package);
    if (r.code == 0)
        return 0;
    snprintf(why, wn, "%s cannot be installed here (into %s): %.300s", package, dir,
             r.err[0] ? r.err : r.out);
    return -1;
}

int pypi_venv_python(const char *name, const char *module, const char *package, char *python,
                     size_t n, char *why, size_t wn)
{
    char dir[1024];
    const char *home = getenv("HOME");
    snprintf(dir, sizeof dir, "%s/.cache/tern/venv-%s", home ? home : "/tmp", name);
    return venv_in(dir, module, package, python, n, why, wn);
}

int openai_venv_python(char *python, size_t n, char *why, size_t wn)
{
    const char *env = getenv("TERN_TEST_VENV");
    if (env && *env)
        return venv_in(env, "openai", OPENAI_PACKAGE, python, n, why, wn);
    return pypi_venv_python("openai", "openai", OPENAI_PACKAGE, python, n, why, wn);
}
