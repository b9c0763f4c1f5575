/* openai_venv.h: the real `openai` client (PyPI) for the tests that drive
 * tern with it, installed once into a cached venv
 * (~/.cache/tern/venv-openai, or TERN_TEST_VENV). */
#ifndef TERN_TEST_OPENAI_VENV_H
#define TERN_TEST_OPENAI_VENV_H

#include <stddef.h>

/* the client these tests were written against */
#define OPENAI_PACKAGE "openai==3.57.0"

/* The venv's python (with the client) into python[0..n): 0, or -1 with why
 * it cannot be installed here in why[0..wn) (the test then skips). */
int openai_venv_python(char *python, size_t n, char *why, size_t wn);

#endif
