/* ops_check.h: the --ops flag of the task generators (`tern data arith`,
 * `tern data countdown`): some of the allowed operations, each once. */
#ifndef TERN_DATA_OPS_CHECK_H
#define TERN_DATA_OPS_CHECK_H

/* TERN_OK when ops is a non-empty string of characters of `allowed` ("+-*"),
 * none twice; else TERN_EINVAL with a message (libtern's error message) that
 * names the wrong character, or byte, and lists the allowed ones. */
int tern_data_check_ops(const char *ops, const char *allowed);

#endif
