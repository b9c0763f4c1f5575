/* cmd_io.h: where a command of this layer (commands.h) writes. Every command
 * takes a tern_invocation and prints what the user asked for to its `out`
 * and each problem, one line (what, where, how to fix), to its `err`;
 * NULL streams mean stdout and stderr. libtern's own commands (run, check,
 * plugins) keep their two stream selectors in core/src/api/commands.c: the
 * library exports nothing for this layer. */
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

#endif /* TERN_CLI_CMD_IO_H */
