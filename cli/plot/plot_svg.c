/* plot_svg.c: the learning-curve picture (see plot_svg.h).
 *
 * Top to bottom: the title, a line saying what is drawn, the legend (a
 * coloured line and the name of each run), then the panels, up to three a
 * row. A panel is its title and key, a plot area with grid lines at round
 * numbers, tick labels on both axes, and one polyline per run (class
 * "curve", with a <title> tooltip naming run and key). Text widths are
 * estimated (no font metrics), wide enough for DejaVu Sans, the face Linux
 * renderers fall back to. */
#include "plot/plot_svg.h"

#include <math.h>
#include <string.h>

#include "base/errmsg.h"
#include "svg_write.h"

/* Geometry, in pixels. */
#define MARGIN 20
#define PANEL_W 350
#define PANEL_H 240
#define GAP_X 26
#define GAP_Y 20
#define MAX_COLS 3
#define TICK_FS 11.0
#define Y_LABELS_MAX 64.0 /* the room y tick labels get at most ("-1.5e-11" is 60) */
#define MARKERS_UP_TO 40 /* curves of so few points also get a dot per point */

#define C_TEXT "#222222"
#define C_MUTED "#666666"
#define C_GRID "#e4e4e4"
#define C_FRAME "#b0b0b0"

/* Tableau 10: told apart by most readers, colour-blind ones included. */
static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define N_COLOURS (sizeof palette / sizeof palette[0])

static const char *colour(size_t run) { return palette[run % N_COLOURS]; }

/* Past ten runs the colours come again, dashed. */
static const char *dashes(size_t run) { return run / N_COLOURS % 2 ? " stroke-dasharray=\"6 3\"" : ""; }

/* Rough width of `s` at font size fs: 0.62 em a character (DejaVu Sans
 * digits are 0.64 em, its lower-case letters a little less). */
static double text_w(const char *s, double fs) { return (double)strlen(s) * 0.62 * fs; }


/* ---- axes ------------------------------------------------------------- */

typedef struct axis {
    double lo, hi;   /* the values at the two ends */
    double step;     /* between ticks */
    int decimals;    /* of the tick labels; -1: %g */
} axis;

/* Tick label of value v on axis a. */
static void tick_text(const axis *a, double v, char *out, size_t n)
{
    if (fabs(v) < a->step * 1e-6)
        v = 0; /* no "-0" */
    if (a->decimals < 0)
        snprintf(out, n, "%.3g", v);
    else
        snprintf(out, n, "%.*f", a->decimals, v);
}

/* An axis over [lo, hi] with about `ticks` ticks on round numbers; the ends
 * are moved out to ticks when `to_ticks` (the y axes), else kept (x, where
 * the data should reach both edges). */
static axis make_axis(double lo, double hi, double ticks, int to_ticks)
{
    if (!(hi > lo) && lo == 0) { /* all zero (staleness of a synchronous run) */
        hi = 1;
    } else if (!(hi > lo)) { /* one value: room around it */
        double pad = fabs(lo) * 0.1;
        lo -= pad;
        hi += pad;
    }
    axis a = {.lo = lo, .hi = hi, .step = svg_nice_step((hi - lo) / fmax(ticks, 1))};
    if (to_ticks) {
        a.lo = floor(lo / a.step + 1e-9) * a.step;
        a.hi = ceil(hi / a.step - 1e-9) * a.step;
    }
    /* as many decimals as the step needs (2.5 -> 1, 0.25 -> 2); %g for the
     * very small and very large */
    double big = fmax(fabs(a.lo), fabs(a.hi));
    a.decimals = 0;
    while (a.decimals <= 4) {
        double r = a.step * pow(10, a.decimals);
        if (r >= 1 - 1e-9 && fabs(r - round(r)) < 1e-6 * r)
            break;
        a.decimals++;
    }
    if (a.decimals > 4 || big >= 1e6)
        a.decimals = -1;
    return a;
}

/* The widest tick label of a. */
static double widest_tick(const axis *a)
{
    double w = 0;
    char t[48];
    for (int k = 0; k < 200; k++) {
        double v = ceil(a->lo / a->step - 1e-9) * a->step + k * a->step;
        if (v > a->hi + a->step * 1e-6)
            break;
        tick_text(a, v, t, sizeof t);
        w = fmax(w, text_w(t, TICK_FS));
    }
    return w;
}

/* ---- one panel -------------------------------------------------------- */

typedef struct area {
    double x0, x1, y0, y1; /* y0 the top */
    axis ax, ay;
} area;

static double px_x(const area *A, double v)
{
    return A->x0 + (v - A->ax.lo) / (A->ax.hi - A->ax.lo) * (A->x1 - A->x0);
}

static double px_y(const area *A, double v)
{
    return A->y1 - (v - A->ay.lo) / (A->ay.hi - A->ay.lo) * (A->y1 - A->y0);
}

static void range_of(const double *v, size_t n, double *lo, double *hi)
{
    for (size_t i = 0; i < n; i++) {
        *lo = fmin(*lo, v[i]);
        *hi = fmax(*hi, v[i]);
    }
}

static void draw_ticks(FILE *f, const area *A)
{
    char t[48];
    const axis *ay = &A->ay, *ax = &A->ax;
    for (int k = 0; k < 200; k++) {
        double v = ay->lo + k * ay->step;
        if (v > ay->hi + ay->step * 1e-6)
            break;
        double y = px_y(A, v);
        tick_text(ay, v, t, sizeof t);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_GRID
                "\"/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"end\" "
                "fill=\"" C_TEXT "\">%s</text>\n", A->x0, y, A->x1, y, A->x0 - 5, y + 4,
                TICK_FS, t);
    }
    double first = ceil(ax->lo / ax->step - 1e-9) * ax->step;
    for (int k = 0; k < 200; k++) {
        double v = first + k * ax->step;
        if (v > ax->hi + ax->step * 1e-6)
            break;
        double x = px_x(A, v);
        tick_text(ax, v, t, sizeof t);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_GRID
                "\"/>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_FRAME
                "\"/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"middle\" "
                "fill=\"" C_TEXT "\">%s</text>\n", x, A->y0, x, A->y1, x, A->y1, x, A->y1 + 4,
                x, A->y1 + 16, TICK_FS, t);
    }
}

static void draw_points(FILE *f, const area *A, const double *x, const double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", px_x(A, x[i]), px_y(A, y[i]));
}

static void draw_curve(FILE *f, const area *A, const pl_curve *c, const char *label,
                       const char *key)
{
    const char *col = colour(c->run);
    if (c->raw_x && c->n_raw > 0) {
        fprintf(f, "<polyline class=\"raw\" fill=\"none\" stroke=\"%s\" stroke-width=\"1\" "
                "stroke-opacity=\"0.3\"%s points=\"", col, dashes(c->run));
        draw_points(f, A, c->raw_x, c->raw_y, c->n_raw);
        fputs("\"/>\n", f);
    }
    fprintf(f, "<polyline class=\"curve\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
            "stroke-linejoin=\"round\"%s points=\"", col, dashes(c->run));
    draw_points(f, A, c->x, c->y, c->n);
    fputs("\"><title>", f);
    svg_put_text(f, label);
    fputs(": ", f);
    svg_put_text(f, key);
    fputs("</title></polyline>\n", f);
    if (c->n > MARKERS_UP_TO)
        return;
    for (size_t i = 0; i < c->n; i++)
        fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"%s\"/>\n",
                px_x(A, c->x[i]), px_y(A, c->y[i]), col);
}

/* The x axis every panel shares: ticks about 48 px apart, further when
 * their labels would touch, on a plot area as narrow as a panel's can be. */
static axis x_axis(double x_lo, double x_hi)
{
    double width = PANEL_W - 10 - 9 - Y_LABELS_MAX;
    double want = (x_hi - x_lo) / fmax(2, width / 48);
    axis a = make_axis(x_lo, x_hi, (x_hi - x_lo) / want, 0);
    for (int tries = 0; tries < 20; tries++) {
        double gap_px = a.step / (a.hi - a.lo) * width;
        if (widest_tick(&a) + 10 <= gap_px)
            break;
        want = a.step * 1.01;
        a = make_axis(x_lo, x_hi, (x_hi - x_lo) / want, 0);
    }
    return a;
}

static void draw_panel(FILE *f, const pl_figure *fig, const pl_panel *p, double px, double py,
                       const axis *ax)
{
    double y_lo = INFINITY, y_hi = -INFINITY;
    for (size_t c = 0; c < p->n_curves; c++) {
        range_of(p->curves[c].y, p->curves[c].n, &y_lo, &y_hi);
        if (p->curves[c].raw_x)
            range_of(p->curves[c].raw_y, p->curves[c].n_raw, &y_lo, &y_hi);
    }
    area A = {.y0 = py + 28, .y1 = py + PANEL_H - 36};
    A.ay = make_axis(y_lo, y_hi, (A.y1 - A.y0) / 36, 1);
    A.x0 = px + fmin(widest_tick(&A.ay), Y_LABELS_MAX) + 9;
    A.x1 = px + PANEL_W - 10;
    A.ax = *ax;

    /* the title, its key in grey, and which runs lack the key */
    fprintf(f, "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" "
            "font-weight=\"bold\" fill=\"" C_TEXT "\">", px, py + 15);
    svg_put_text(f, p->title);
    double title_w = text_w(p->title, 14) * 1.08; /* bold */
    if (p->key && strcmp(p->key, p->title) != 0) {
        fputs("<tspan dx=\"6\" font-size=\"11\" font-weight=\"normal\" fill=\"" C_MUTED "\">", f);
        svg_put_text(f, p->key);
        fputs("</tspan>", f);
        title_w += text_w(p->key, 11) + 5;
    }
    fputs("</text>\n", f);
    if (p->missing && title_w + 12 + text_w(p->missing, 10) <= PANEL_W) {
        fprintf(f, "<text class=\"missing\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                "font-style=\"italic\" text-anchor=\"end\" fill=\"" C_MUTED "\">", px + PANEL_W,
                py + 15);
        svg_put_text(f, p->missing);
        fputs("</text>\n", f);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\"/>\n",
            A.x0, A.y0, A.x1 - A.x0, A.y1 - A.y0);
    draw_ticks(f, &A);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"" C_FRAME "\"/>\n", A.x0, A.y0, A.x1 - A.x0, A.y1 - A.y0);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\""
            C_MUTED "\">", (A.x0 + A.x1) / 2, A.y1 + 31);
    svg_put_text(f, fig->x_label);
    fputs("</text>\n", f);
    for (size_t c = 0; c < p->n_curves; c++) {
        const pl_curve *cv = &p->curves[c];
        draw_curve(f, &A, cv, cv->run < fig->n_runs ? fig->labels[cv->run] : "?",
                   p->key ? p->key : p->title);
    }
    fputs("</g>\n", f);
}

/* ---- the legend ------------------------------------------------------- */

/* Lay the legend out from y on, wrapping at the width; draws when f is not
 * NULL. Returns the y below it. */
static double legend(FILE *f, const pl_figure *fig, double y, int width)
{
    double x = MARGIN;
    for (size_t r = 0; r < fig->n_runs; r++) {
        double w = 24 + 6 + text_w(fig->labels[r], 13) + 22;
        if (x > MARGIN && x + w > width - MARGIN) {
            x = MARGIN;
            y += 20;
        }
        if (f) {
            fprintf(f, "<g class=\"legend\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                    "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"%s/><text x=\"%.1f\" "
                    "y=\"%.1f\" font-size=\"13\" fill=\"" C_TEXT "\">", x, y - 4, x + 24, y - 4,
                    colour(r), dashes(r), x + 30, y);
            svg_put_text(f, fig->labels[r]);
            fputs("</text></g>\n", f);
        }
        x += w;
    }
    return y + 12;
}

/* ---- the picture ------------------------------------------------------ */

int pl_svg_write(FILE *f, const pl_figure *fig)
{
    size_t cols = fig->n_panels < MAX_COLS ? fig->n_panels : MAX_COLS;
    size_t rows = (fig->n_panels + cols - 1) / cols;
    int width = (int)(2 * MARGIN + cols * PANEL_W + (cols - 1) * GAP_X);
    /* a narrow picture (one panel) still holds its title and subtitle */
    double text_need = fmax(text_w(fig->title, 18) * 1.08,
                            fig->subtitle ? text_w(fig->subtitle, 12) : 0);
    width = (int)fmax(width, 2 * MARGIN + fmin(text_need, 1000));
    double legend_top = 76;
    double panels_top = legend(NULL, fig, legend_top, width) + 14;
    int height = (int)ceil(panels_top + rows * PANEL_H + (rows - 1) * GAP_Y + MARGIN);

    /* one x range for every panel, so the runs line up across them */
    double x_lo = INFINITY, x_hi = -INFINITY;
    for (size_t i = 0; i < fig->n_panels; i++)
        for (size_t c = 0; c < fig->panels[i].n_curves; c++) {
            const pl_curve *cv = &fig->panels[i].curves[c];
            range_of(cv->x, cv->n, &x_lo, &x_hi);
            if (cv->raw_x)
                range_of(cv->raw_x, cv->n_raw, &x_lo, &x_hi);
        }

    axis ax = x_axis(x_lo, x_hi);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
            "sans-serif\">\n", width, height, width, height);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
    fprintf(f, "<text x=\"%d\" y=\"32\" font-size=\"18\" font-weight=\"bold\" fill=\"" C_TEXT
            "\">", MARGIN);
    svg_put_text(f, fig->title);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"53\" font-size=\"12\" fill=\"" C_MUTED "\">",
            MARGIN);
    svg_put_text(f, fig->subtitle ? fig->subtitle : "");
    fputs("</text>\n", f);
    legend(f, fig, legend_top, width);
    for (size_t i = 0; i < fig->n_panels; i++) {
        double px = MARGIN + (double)(i % cols) * (PANEL_W + GAP_X);
        double py = panels_top + (double)(i / cols) * (PANEL_H + GAP_Y);
        draw_panel(f, fig, &fig->panels[i], px, py, &ax);
    }
    fputs("</svg>\n", f);
    if (ferror(f))
        return tern_errorf(TERN_EIO, "cannot write the picture");
    return TERN_OK;
}
