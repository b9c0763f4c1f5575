/*
 * output.h: what the model reads of one run of its code, made from the
 * sandbox's result of that run: the status, and the text
 *
 *     <stdout><stderr><the end>
 *
 * stdout as printed, then stderr (a traceback), on a line of its own when
 * stdout did not end one, then, when the run did not simply exit, a line
 * saying how it ended: "time limit of N ms exceeded", "CPU time limit of N
 * ms exceeded", "memory limit of N MiB exceeded", "output limit of N bytes
 * exceeded", "killed by SIGSEGV", or "exit status N" when a failing exit
 * printed nothing on stderr. A run that exited 0 and printed nothing reads
 * "(no output)".
 *
 * Status: TERN_TOOL_OK when the code exited 0, else TERN_TOOL_FAILED.
 *
 * The text is valid UTF-8 without NUL bytes (an invalid byte or a NUL
 * becomes U+FFFD). When it does not fit the core's buffer, the program's
 * output is cut at a character boundary, the last line (how it ended) kept
 * whole, and `truncated` is set. stderr holds at most what the sandbox keeps
 * of it (its first 1 KiB and last 3 KiB, the bytes between counted).
 */
#ifndef TERN_PYTHON_TOOL_OUTPUT_H
#define TERN_PYTHON_TOOL_OUTPUT_H

#include <tern/tool.h>

#include "sandbox/wire.h"

/* Fills out (status, output, output_len, truncated) from step result r, run
 * under limits l. r's outcome is one of SANDBOX_EXITED, _SIGNALED,
 * _WALL_LIMIT, _CPU_LIMIT or _OUTPUT_LIMIT (the others are the sandbox's
 * failures, not the code's: the caller's to report). */
void python_output_write(const sandbox_limits *l, const sandbox_step_result *r,
                         tern_tool_result *out);

#endif /* TERN_PYTHON_TOOL_OUTPUT_H */
