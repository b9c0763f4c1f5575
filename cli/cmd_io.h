/* cmd_io.h: where a command of this layer (commands.h) writes. Every command
 * takes a tern_invocation and prints what the user asked for to its `out`
 * and each problem, one line (what, where, how to fix), to its `err`;
 * NULL streams mean stdout and stderr. libtern's own commands (run, check,
 * plugins) keep their two stream selectors in core/src/api/commands.c: the
 * library exports nothing for this layer. Also the checks every command
 * starts with: the caller's structs, and an output directory that must be
 * new or empty. */
#ifndef TERN_CLI_CMD_IO_H
#define TERN_CLI_CMD_IO_H

#include <stdio.h>

#include "tern/host.h" /* TERN_PRINTF */
#include "tern/libtern.h"

/* inv->out, or stdout when NULL. */
FILE *cmd_out(const tern_invocation *inv);

/* inv->err, or stderr when NULL. */
FILE *cmd_err(const tern_invocation *inv);

/* Print "LABEL: <message>" and a newline to cmd_err(inv). */
void cmd_report(const tern_invocation *inv, const char *label, const char *fmt, ...)
    TERN_PRINTF(3, 4);

/* cmd_report(), then return `code` (an exit code): return cmd_fail(...). */
int cmd_fail(const tern_invocation *inv, const char *label, int code, const char *fmt, ...)
    TERN_PRINTF(4, 5);

/* 1 if the directory at `path` holds nothing, 0 if it holds something, -1
 * (errno set) if it cannot be read: for commands that write only into a new
 * or empty directory. */
int cmd_dir_is_empty(const char *path);

/* Whether the caller's structs are older than this libtern: the invocation
 * (NULL, or its size short) or the command's arguments (`args_size` is their
 * `size` field, 0 when none were given; `args_need` the size this build
 * knows). If so, says "LABEL: the caller's argument structs are too old for
 * this libtern" to cmd_err(inv), or stderr when inv itself is unusable. */
int cmd_structs_too_old(const tern_invocation *inv, const char *label, size_t args_size,
                        size_t args_need);

#endif /* TERN_CLI_CMD_IO_H */
