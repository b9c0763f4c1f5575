/*
 * vlm.h: the images of one call to a LLaVA (llama_config.vision): each
 * tern_image through the processor (resized, normalised: pixels[3, S, S])
 * and the tower and projector (clip.h) into feature rows features[Nv, D],
 * which the decoder takes at the prompt's image tokens
 * (llama_batch.row_input); and back, the gradient at those rows into the
 * projector's (and a trained tower's) gradients.
 *
 * The processor, as Hugging Face's CLIPImageProcessor with tern's
 * resampling: an image of another size than S x S is resized bilinearly
 * (pixel centres aligned, no antialiasing) so that its short side is S and
 * centre-cropped (llama_vision.crop), or resized to S x S; then each
 * channel is (pixel / 255 - mean) / std.
 */
#ifndef TERN_VLM_H
#define TERN_VLM_H

#include <stddef.h>

#include "decoder/model.h"
#include "tern/model.h"

typedef struct vlm_images {
    int n, cap;
    const tern_image **src; /* [cap]: the call's images, in the order given to vlm_images_add */
    float *pixels;          /* [cap, 3 S S] */
    float *features;        /* [cap, Nv, D]: image i's rows start at i Nv D */
    float *dfeatures;       /* [cap, Nv, D]: backward's scratch */
} vlm_images;

/* out[3, S, S] from img as the processor of v makes it. 0, or -1 with a
 * message (an image without pixels). */
int vlm_pixels(const llama_vision *v, const tern_image *img, float *out, char *err, size_t errn);

/* Forget the previous call's images (keeping the memory). */
void vlm_images_clear(vlm_images *s);
/* Append img (kept by the caller until the call ends) and compute its
 * pixels; its index in s. -1 with a message (out of memory, no pixels). */
int vlm_images_add(vlm_images *s, const llama_config *c, const tern_image *img, char *err,
                   size_t errn);
/* The feature rows of every image added, on m's threads. 0, or -1. */
int vlm_images_encode(vlm_images *s, llama_model *m, char *err, size_t errn);
/* After the decoder's backward over a batch whose row r took row_input[r]
 * (NULL, or a row of s->features) and whose input gradient is dx[N, D]:
 * accumulate into m->grads the projector's gradients, and the tower's when
 * `tower`. 0, or -1 with a message (out of memory). */
int vlm_images_backward(vlm_images *s, llama_model *m, int N, const float *const *row_input,
                        const float *dx, int tower, char *err, size_t errn);
void vlm_images_free(vlm_images *s);

#endif
