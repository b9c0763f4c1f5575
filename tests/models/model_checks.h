/* model_checks.h: checks any model plugin must pass, shared by the model
 * tests of the CPU plugin (fp32 and bf16) and the GPU plugin. Each opens
 * `plugin` with the settings group `cfg` and asserts with Criterion. */
#ifndef TERN_TEST_MODEL_CHECKS_H
#define TERN_TEST_MODEL_CHECKS_H

/* 30 AdamW steps on one sentence (a fresh model) at least halve its mean
 * NLL, and every step reports a gradient norm above 0. */
void expect_training_halves_nll(const char *plugin, const char *cfg);

/* Four samples of 20 tokens from a 3-token prompt (byte vocabulary) at
 * `temperature`, no truncation: generate's log-probs equal score's at that
 * temperature within 1e-4. */
void expect_generate_matches_score(const char *plugin, const char *cfg, float temperature);

#endif
