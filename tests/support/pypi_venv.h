/* pypi_venv.h: a PyPI package for the tests that drive tern with it (the
 * openai client, reasoning-gym, textarena), installed once into a cached
 * venv of its own (~/.cache/tern/venv-NAME, or TERN_TEST_VENV for the
 * openai client's). */
#ifndef TERN_TEST_PYPI_VENV_H
#define TERN_TEST_PYPI_VENV_H

#include <stddef.h>

/* the packages these tests were written against */
#define OPENAI_PACKAGE "openai==3.57.0"
#define REASONING_GYM_PACKAGE "reasoning-gym==0.1.25"
#define TEXTARENA_PACKAGE "textarena==0.7.4"

/* The python of venv `name` where `module` imports, installing `package`
 * into it when it does not, into python[0..n): 0, or -1 with why it cannot
 * be installed here in why[0..wn) (the test then skips). */
int pypi_venv_python(const char *name, const char *module, const char *package, char *python,
                     size_t n, char *why, size_t wn);

/* The openai client's: pypi_venv_python("openai", ...), or TERN_TEST_VENV. */
int openai_venv_python(char *python, size_t n, char *why, size_t wn);

#endif
