/*
 * preprocessor.h: a LLaVA's preprocessor_config.json (the Hugging Face
 * image processor's settings), next to its config.json: the normalisation
 * (image_mean, image_std) and whether an image of another size is cropped
 * (do_center_crop). Read: a file tern cannot honour (another rescale factor,
 * no RGB conversion) is refused by key; an absent file means
 * CLIPImageProcessor's defaults. Written with every model that has a tower.
 */
#ifndef TERN_HF_PREPROCESSOR_H
#define TERN_HF_PREPROCESSOR_H

#include <stddef.h>

#include "decoder/llama.h"

/* OpenAI CLIP's normalisation, CLIPImageProcessor's default. */
extern const float preprocessor_clip_mean[3], preprocessor_clip_std[3];

/* Read the preprocessor_config.json in the folder of `config_path` (the
 * model's config.json) into v's mean, std and crop; defaults when there is
 * none. 0, or -1 with a message naming the file and key. */
int preprocessor_read(const char *config_path, llama_vision *v, char *err, size_t errn);
/* Write it next to `config_path` (atomically). 0, or -1 with a message. */
int preprocessor_write(const char *config_path, const llama_vision *v, char *err, size_t errn);

#endif
