/* learn_check.h: a model plugin learns: 30 AdamW steps on one sentence at
 * least halve its mean NLL. Shared by the CPU bf16 and GPU model tests. */
#ifndef TERN_TEST_LEARN_CHECK_H
#define TERN_TEST_LEARN_CHECK_H

/* Open `plugin` with settings `cfg` (a fresh model), train, and assert. */
void expect_training_halves_nll(const char *plugin, const char *cfg);

#endif
