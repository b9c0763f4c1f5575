/* rope_scaling.c: Llama 3's RoPE frequencies, as Hugging Face's
 * _compute_llama3_parameters computes them. With inv_freq_i = θ^(−2i/HD) and
 * its wavelength λ_i = 2π / inv_freq_i, for the original context C:
 *
 *   λ_i < C / high_freq_factor        keep inv_freq_i        (high frequencies)
 *   λ_i > C / low_freq_factor         inv_freq_i / factor    (low frequencies)
 *   otherwise, s = (C / λ_i − low) / (high − low):
 *                                     (1 − s) inv_freq_i / factor + s inv_freq_i
 *
 * The attention scale is unchanged (HF's attention_factor is 1 for llama3).
 */
#include <math.h>

#include "layers/layers.h"

void rope_llama3_inv_freq(double *inv_freq, int hd, double theta, double factor, double low,
                          double high, double orig_max_pos)
{
    const double low_wavelen = orig_max_pos / low, high_wavelen = orig_max_pos / high;
    for (int i = 0; i < hd / 2; i++) {
        double f = pow(theta, -2.0 * i / hd);
        double wavelen = 2 * 3.14159265358979323846 / f; /* 2π */
        if (wavelen < high_wavelen) {
            inv_freq[i] = f;
        } else if (wavelen > low_wavelen) {
            inv_freq[i] = f / factor;
        } else {
            double s = (orig_max_pos / wavelen - low) / (high - low);
            inv_freq[i] = (1 - s) * f / factor + s * f;
        }
    }
}
