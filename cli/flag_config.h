/* flag_config.h: config text that commands write from their flags (`tern
 * score --plugin`, `tern reward score -o key=value`) to open a session on,
 * and the session's problems printed without that text's line numbers. */
#ifndef TERN_FLAG_CONFIG_H
#define TERN_FLAG_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "config/diag.h"
#include "tern/support/text_buf.h"

/* `s` as a libconfig string literal: quote and backslash escaped, control
 * bytes as \xNN (libconfig reads them back to the same bytes). */
void tern_tb_quoted(tern_text_buf *b, const char *s);

/* Print the session's problems to `err`, one line each, as "LABEL: message":
 * the "LABEL:LINE: " that names a place in the generated text means nothing
 * to the user, who gave flags, not a file. */
void tern_print_flag_problems(FILE *err, const char *label, const tern_diag *d);

#endif
