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

/* Continuous batching changes nothing: twelve samples of six requests
 * (prompts of 2 to 13 tokens, 1 to 3 samples each, 3 to 24 new tokens, a
 * stop token ending some early) come out the same from one batch of all of
 * them (decode_rows = 0) and from 3 or 4 slots refilled as samples end
 * (decode_rows = 1, which the widest request raises to 3, and 4): the same
 * tokens and finish, log-probs within `tol`. The two instances load the same
 * weights from `cfg`. */
void expect_decode_rows_change_nothing(const char *plugin, const char *cfg, double tol);

/* tern_gen_request.on_token (ABI 1.15) through generate(): two requests of
 * 4 and 2 samples (24 new tokens, no stop token). A listener that goes on
 * hears each sample's tokens and log-probs exactly as the outputs hold
 * them, in order, on the caller's thread, one call a token, and changes
 * nothing; one that answers TERN_GEN_STOP at the first request's sample 1's
 * third token leaves that sample those 3 tokens and TERN_FINISH_STOPPED,
 * and every other sample the same tokens and finish (log-probs within
 * `tol`) as without a listener; a request built as a 1.14 caller's (its
 * size short of on_token) is never heard. */
void expect_on_token_hears_and_stops(const char *plugin, const char *cfg, double tol);

#endif
