/* rope.c: rotary position embedding, Hugging Face's rotate_half layout: in a
 * head of size HD the pair (x_i, x_{i+HD/2}) turns by angle pos · θ^(−2i/HD):
 *
 *   y_i        = x_i cos − x_{i+HD/2} sin
 *   y_{i+HD/2} = x_{i+HD/2} cos + x_i sin
 *
 * A rotation's Jacobian is its transpose, so backward turns by −angle.
 */
#include <math.h>

#include "layers/layers.h"

void rope_tables_from(float *cos_t, float *sin_t, int max_pos, int hd, const double *inv_freq)
{
    int half = hd / 2;
    for (int p = 0; p < max_pos; p++)
        for (int i = 0; i < half; i++) {
            /* double for the angle: p · inv_freq reaches hundreds of radians */
            double a = p * inv_freq[i];
            cos_t[(size_t)p * half + i] = (float)cos(a);
            sin_t[(size_t)p * half + i] = (float)sin(a);
        }
}

void rope_tables(float *cos_t, float *sin_t, int max_pos, int hd, float theta)
{
    int half = hd / 2;
    for (int p = 0; p < max_pos; p++)
        for (int i = 0; i < half; i++) {
            /* double for the angle: p · θ^(−2i/HD) reaches hundreds of radians */
            double inv_freq = pow((double)theta, -2.0 * i / hd);
            double a = p * inv_freq;
            cos_t[(size_t)p * half + i] = (float)cos(a);
            sin_t[(size_t)p * half + i] = (float)sin(a);
        }
}

/* sign = +1 forward, −1 backward */
static void rotate(float *x, const int32_t *pos, const float *cos_t, const float *sin_t, int n,
                   int nh, int hd, float sign)
{
    int half = hd / 2;
    for (int r = 0; r < n; r++) {
        const float *c = cos_t + (size_t)pos[r] * half, *s = sin_t + (size_t)pos[r] * half;
        for (int h = 0; h < nh; h++) {
            float *v = x + ((size_t)r * nh + h) * hd;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half], sn = sign * s[i];
                v[i] = a * c[i] - b * sn;
                v[i + half] = b * c[i] + a * sn;
            }
        }
    }
}

void rope_forward(float *x, const int32_t *pos, const float *cos_t, const float *sin_t, int n,
                  int nh, int hd)
{
    rotate(x, pos, cos_t, sin_t, n, nh, hd, 1.0f);
}

void rope_backward(float *dx, const int32_t *pos, const float *cos_t, const float *sin_t, int n,
                   int nh, int hd)
{
    rotate(dx, pos, cos_t, sin_t, n, nh, hd, -1.0f);
}
