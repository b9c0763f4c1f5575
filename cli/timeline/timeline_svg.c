/* timeline_svg.c: the timeline picture (see timeline_svg.h).
 *
 * Top to bottom: the title and a line of counts, one lane per explorer, the
 * buffer lane, the trainer lane, the time axis, the legend. Every shape gets
 * a class naming what it is (rollout, train, sync-memory, ...) and a <title>
 * tooltip with its numbers, so the file is easy to check and to explore in a
 * browser. Text sizes are estimated (no font metrics): a label is left out
 * when its box is narrower than the estimate. */
#include "timeline/timeline_svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "svg_write.h"

/* Geometry, in pixels. */
#define MARGIN_L 104  /* lane labels live left of this */
#define MARGIN_R 24
#define LANE_H 38
#define LANE_GAP 6
#define BUF_ROW_H 17  /* one row of in-buffer bars */
#define BUF_ROWS_MAX 8
#define MIN_SYNC_W 3.0 /* syncs are often a few ms: keep them visible */
#define LABEL_FS 11.0

/* Colours of the paper's diagrams. */
#define C_ROLLOUT "#f6d55c"
#define C_ROLLOUT_EDGE "#c9a227"
#define C_TRAIN "#7cc47c"
#define C_TRAIN_EDGE "#3f8f3f"
#define C_SYNC "#8e6bbf"
#define C_SYNC_CKPT "#d9534f"
#define C_BUFFER "#cfe8f7"
#define C_BUFFER_INK "#2f7ab8"
#define C_LANE "#f5f5f5"
#define C_GRID "#dddddd"
#define C_TEXT "#222222"

typedef struct layout {
    double from, to, x0, x1;
    int width;
    double *lane_top, *lane_h; /* explorers by slot, then buffer, then trainer */
    size_t n_lanes;
} layout;

/* A batch's stay in the buffer: from its put to the train that takes it. */
typedef struct stay {
    double t_put, t_end;
    long long batch;
    int row;
    int crowded; /* shares its row: drawn without its label */
} stay;

static double x_of(const layout *L, double t)
{
    double x = L->x0 + (t - L->from) / (L->to - L->from) * (L->x1 - L->x0);
    return fmin(fmax(x, L->x0), L->x1);
}

static size_t lane_index(const tl_trace *t, const tl_event *e)
{
    if (e->row == TL_ROW_BUFFER)
        return t->n_explorers;
    if (e->row == TL_ROW_TRAINER)
        return t->n_explorers + 1;
    int slot = tl_explorer_slot(t, e->explorer);
    return slot < 0 ? 0 : (size_t)slot;
}

/* Rough width of `s` in a sans-serif face: digits are 0.56 em in Helvetica
 * and 0.64 em in DejaVu Sans (what Linux renderers fall back to); take the
 * wider, so a label never spills out of its box. */
static double text_w(const char *s, double fs) { return (double)strlen(s) * 0.64 * fs; }


static void tooltip(FILE *f, const char *tip)
{
    fputs("<title>", f);
    svg_put_text(f, tip);
    fputs("</title>", f);
}

/* A rounded box from xa to xb with its label centred when it fits. */
static void box(FILE *f, const char *cls, const char *fill, const char *edge, double xa,
                double xb, double y, double h, const char *label, const char *tip)
{
    double w = xb - xa;
    if (w > 3) { /* a hair apart, so boxes back to back stay two boxes */
        xa += 0.5;
        w -= 1;
    } else if (w < 1.5) {
        w = 1.5;
    }
    fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
            "rx=\"%.1f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"0.8\">", cls, xa, y, w, h,
            fmin(4.0, w / 3), fill, edge);
    tooltip(f, tip);
    fputs("</rect>\n", f);
    if (label && *label && text_w(label, LABEL_FS) + 4 <= w)
        fprintf(f, "<text class=\"label\" x=\"%.2f\" y=\"%.2f\" font-size=\"%.0f\" "
                "text-anchor=\"middle\" fill=\"%s\">%s</text>\n", xa + w / 2, y + h / 2 + 4,
                LABEL_FS, C_TEXT, label);
}

/* "7" or "7,8"; "7-10" when the list does not fit but is a run; "" else. */
static void train_label(const tl_event *e, double w, char *out, size_t n)
{
    out[0] = '\0';
    size_t len = 0;
    for (size_t i = 0; i < e->n_batches && len < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", i ? "," : "", e->batches[i]);
    if (len < n && text_w(out, LABEL_FS) + 4 <= w)
        return;
    int run = e->n_batches > 1;
    for (size_t i = 1; run && i < e->n_batches; i++)
        run = e->batches[i] == e->batches[i - 1] + 1;
    if (run)
        snprintf(out, n, "%lld-%lld", e->batches[0], e->batches[e->n_batches - 1]);
    else
        out[0] = '\0';
}

static const char *sync_class(tl_method m)
{
    switch (m) {
    case TL_SYNC_MEMORY: return "sync-memory";
    case TL_SYNC_NCCL: return "sync-nccl";
    case TL_SYNC_CHECKPOINT: return "sync-checkpoint";
    default: return "sync";
    }
}

static const char *method_name(tl_method m)
{
    switch (m) {
    case TL_SYNC_MEMORY: return "memory";
    case TL_SYNC_NCCL: return "NCCL";
    case TL_SYNC_CHECKPOINT: return "checkpoint";
    default: return "other";
    }
}

/* The train that takes `batch` put at t_put: the first to start after it. */
static double stay_end(const tl_trace *t, long long batch, double t_put)
{
    double end = INFINITY;
    for (size_t i = 0; i < t->n_ev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->t0 < t_put || e->t0 >= end)
            continue;
        if (e->kind == TL_SKIP && e->batch == batch)
            end = e->t0;
        for (size_t k = 0; e->kind == TL_TRAIN && k < e->n_batches; k++)
            if (e->batches[k] == batch)
                end = e->t0;
    }
    return isfinite(end) ? end : t->t_last; /* still there when the trace ends */
}

static int cmp_stay(const void *a, const void *b)
{
    const stay *x = a, *y = b;
    return (x->t_put > y->t_put) - (x->t_put < y->t_put);
}

/* The stays that show in the window, each given a row of the buffer lane so
 * that bars and their labels do not overlap; *n_rows the rows used (>= 1). */
static int buffer_stays(const tl_trace *t, const layout *L, stay **out, size_t *n_out,
                        int *n_rows)
{
    *out = NULL;
    *n_out = 0;
    *n_rows = 1;
    size_t n = 0;
    for (size_t i = 0; i < t->n_ev; i++)
        n += t->ev[i].kind == TL_PUT;
    if (n == 0)
        return TERN_OK;
    stay *s = calloc(n, sizeof *s);
    if (!s)
        return TERN_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < t->n_ev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->kind != TL_PUT)
            continue;
        stay st = {.t_put = e->t0, .t_end = stay_end(t, e->batch, e->t0), .batch = e->batch};
        if (st.t_end >= L->from && st.t_put <= L->to)
            s[m++] = st;
    }
    qsort(s, m, sizeof *s, cmp_stay);
    double row_end[BUF_ROWS_MAX];
    int rows = 0;
    for (size_t i = 0; i < m; i++) {
        char label[32];
        snprintf(label, sizeof label, "%lld", s[i].batch);
        double xa = x_of(L, s[i].t_put), xb = x_of(L, s[i].t_end);
        xb = fmax(xb, xa + fmax(14, text_w(label, 10) + 6));
        int r = 0;
        while (r < rows && row_end[r] + 2 > xa)
            r++;
        if (r == rows && rows < BUF_ROWS_MAX) {
            rows++;
        } else if (r == rows) { /* too crowded: share the row that frees first */
            r = 0;
            for (int k = 1; k < rows; k++)
                if (row_end[k] < row_end[r])
                    r = k;
            s[i].crowded = 1;
            xb = fmax(x_of(L, s[i].t_end), xa + 2);
        }
        row_end[r] = fmax(row_end[r], xb);
        s[i].row = r;
    }
    *out = s;
    *n_out = m;
    *n_rows = rows > 0 ? rows : 1;
    return TERN_OK;
}

/* A tick every 1, 2, 2.5 or 5 x 10^k seconds, about one per 80 pixels and
 * at least three. */
static double tick_step(double span, double px)
{
    return svg_nice_step(span / fmax(3, px / 80));
}

/* ---- the legend ------------------------------------------------------- */

enum { LEG_ROLLOUT, LEG_TRAIN, LEG_SYNC, LEG_SYNC_CKPT, LEG_WAIT, LEG_BUFFER, LEG_PUBLISH,
       LEG_SKIP, LEG_SURPLUS, LEG_N };
static const char *const legend_text[LEG_N] = {
    "Rollout", "Train", "Sync. weight (memory/MPI/NCCL)", "Sync. weight (checkpoint)", "Wait",
    "In buffer", "Publish", "Skipped (stale)", "Dropped (surplus of dynamic sampling)"};

/* A dropped surplus group's mark: a grey ring, not the stale skip's cross
 * (the group was not too old: its step was full). */
#define C_SURPLUS "#888888"

static void legend_swatch(FILE *f, int item, double x, double y)
{
    switch (item) {
    case LEG_ROLLOUT:
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"12\" "
                "rx=\"3\" fill=\"" C_ROLLOUT "\" stroke=\"" C_ROLLOUT_EDGE "\"/>\n", x, y);
        break;
    case LEG_TRAIN:
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"12\" "
                "rx=\"3\" fill=\"" C_TRAIN "\" stroke=\"" C_TRAIN_EDGE "\"/>\n", x, y);
        break;
    case LEG_SYNC:
    case LEG_SYNC_CKPT:
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"5\" height=\"14\" "
                "fill=\"%s\"/>\n", x + 8, y - 1, item == LEG_SYNC ? C_SYNC : C_SYNC_CKPT);
        break;
    case LEG_WAIT:
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"8\" "
                "fill=\"url(#hatch)\" stroke=\"#aaaaaa\" stroke-width=\"0.5\"/>\n", x, y + 2);
        break;
    case LEG_BUFFER:
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"4\" "
                "fill=\"" C_BUFFER_INK "\" fill-opacity=\"0.55\"/>\n", x, y + 4);
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"12\" "
                "rx=\"2\" fill=\"#ffffff\" stroke=\"" C_BUFFER_INK "\"/>\n", x, y);
        break;
    case LEG_PUBLISH:
        fprintf(f, "<path class=\"legend\" d=\"M%.1f %.1fh10l-5 8z\" fill=\"#444444\"/>\n",
                x + 6, y + 2);
        break;
    case LEG_SURPLUS:
        fprintf(f, "<circle class=\"legend\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"none\" "
                "stroke=\"" C_SURPLUS "\" stroke-width=\"2\"/>\n", x + 11, y + 6);
        break;
    default:
        fprintf(f, "<path class=\"legend\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"" C_SYNC_CKPT
                "\" stroke-width=\"2\"/>\n", x + 7, y + 2);
        break;
    }
}

/* Lay the legend out from y on, wrapping at the right margin; draws when
 * f is not NULL. Returns the y below it. */
static double legend(FILE *f, double y, int width)
{
    double x = MARGIN_L;
    for (int i = 0; i < LEG_N; i++) {
        double w = 22 + 6 + 0.9 * text_w(legend_text[i], 12) + 16; /* mostly letters */
        if (x > MARGIN_L && x + w > width - MARGIN_R) {
            x = MARGIN_L;
            y += 20;
        }
        if (f) {
            legend_swatch(f, i, x, y);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"" C_TEXT "\">%s"
                    "</text>\n", x + 28, y + 10.5, legend_text[i]);
        }
        x += w;
    }
    return y + 20;
}

/* ---- the picture ------------------------------------------------------ */

static void lane_label(const tl_trace *t, size_t lane, char *out, size_t n)
{
    if (lane == t->n_explorers)
        snprintf(out, n, "Buffer");
    else if (lane == t->n_explorers + 1)
        snprintf(out, n, "Trainer");
    else if (t->n_explorers == 1)
        snprintf(out, n, "Explorer");
    else /* numbered from 1, as the paper's diagrams do */
        snprintf(out, n, "Explorer %d", t->explorers[lane] + 1);
}

/* The lines under the title: what is drawn and the window, wrapped to the
 * width. Returns the y below them. */
static double draw_counts(FILE *f, const tl_trace *t, const layout *L)
{
    size_t n[TL_SKIP + 1] = {0};
    int methods[TL_SYNC_CHECKPOINT + 1] = {0};
    for (size_t i = 0; i < t->n_ev; i++) {
        const tl_event *e = &t->ev[i];
        if (!tl_event_visible(e, L->from, L->to))
            continue;
        n[e->kind]++;
        if (e->kind == TL_SYNC)
            methods[e->method] = 1;
    }
    char how[64] = "", part[6][96];
    size_t len = 0;
    for (int m = TL_SYNC_MEMORY; m <= TL_SYNC_CHECKPOINT; m++)
        if (methods[m])
            len += (size_t)snprintf(how + len, sizeof how - len, "%s%s", len ? "/" : " by ",
                                    method_name((tl_method)m));
    snprintf(part[0], sizeof part[0], "%zu explorer%s", t->n_explorers,
             t->n_explorers == 1 ? "" : "s");
    snprintf(part[1], sizeof part[1], "%zu rollouts", n[TL_ROLLOUT]);
    snprintf(part[2], sizeof part[2], "%zu train steps", n[TL_TRAIN]);
    snprintf(part[3], sizeof part[3], "%zu weight syncs%s;", n[TL_SYNC], how);
    snprintf(part[4], sizeof part[4], "%.2f s to %.2f s shown", L->from, L->to);
    snprintf(part[5], sizeof part[5], "(the trace: %.2f s to %.2f s)", t->t_first, t->t_last);
    /* as many parts per line as fit */
    static const char *const sep[6] = {"", ", ", ", ", ", ", " ", " "};
    double y = 44, x = 0, room = L->width - 24;
    for (int i = 0; i < 6; i++) {
        double w = 0.9 * text_w(part[i], 12);
        if (x > 0 && x + w > room) {
            if (f)
                fputs("</text>\n", f);
            y += 16;
            x = 0;
        }
        if (f && x == 0)
            fprintf(f, "<text x=\"12\" y=\"%.0f\" font-size=\"12\" fill=\"#555555\">", y);
        if (f)
            fprintf(f, "%s%s", x > 0 ? sep[i] : "", part[i]);
        x += w + 0.9 * text_w(", ", 12);
    }
    if (f)
        fputs("</text>\n", f);
    return y + 16;
}

static void draw_axis(FILE *f, const layout *L, double y_top, double y_axis)
{
    double step = tick_step(L->to - L->from, L->x1 - L->x0);
    int decimals = 0; /* as many as the step needs: 2.5 -> 1, 0.25 -> 2 */
    while (decimals < 6 && fabs(step * pow(10, decimals) - round(step * pow(10, decimals))) > 1e-6)
        decimals++;
    double first = ceil(L->from / step - 1e-9) * step;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\"/>\n",
            L->x0, y_axis, L->x1, y_axis);
    for (int k = 0; k < 500; k++) {
        double tk = first + k * step;
        if (tk > L->to + step * 1e-6)
            break;
        if (fabs(tk) < step * 1e-6)
            tk = 0; /* no "-0" */
        double x = x_of(L, tk);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"" C_GRID
                "\" stroke-width=\"0.7\"/>\n", x, y_top, x, y_axis);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#444444\"/>"
                "\n", x, y_axis, x, y_axis + 5);
        fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" "
                "fill=\"" C_TEXT "\">%.*f</text>\n", x, y_axis + 17, decimals, tk);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
            "fill=\"" C_TEXT "\">time (s)</text>\n", (L->x0 + L->x1) / 2, y_axis + 33);
}

/* Pass 0 the waits, 1 the syncs, 2 rollouts and trains on top: a box is
 * never hidden by a sync widened to stay visible. */
static void draw_spans(FILE *f, const tl_trace *t, const layout *L, int pass)
{
    for (size_t i = 0; i < t->n_ev; i++) {
        const tl_event *e = &t->ev[i];
        int want = e->kind == TL_WAIT ? 0 : e->kind == TL_SYNC ? 1
                 : e->kind == TL_ROLLOUT || e->kind == TL_TRAIN ? 2 : -1;
        if (want != pass || !tl_event_visible(e, L->from, L->to))
            continue;
        size_t lane = lane_index(t, e);
        double y = L->lane_top[lane], h = L->lane_h[lane];
        double xa = x_of(L, e->t0), xb = x_of(L, e->t1);
        char tip[256], label[64] = "";
        if (e->kind == TL_WAIT) {
            snprintf(tip, sizeof tip, "wait%s%s: %.3f s to %.3f s (%.3f s)", *e->what ? " for "
                     : "", e->what, e->t0, e->t1, e->t1 - e->t0);
            fprintf(f, "<rect class=\"wait\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\""
                    " fill=\"url(#hatch)\" stroke=\"#aaaaaa\" stroke-width=\"0.5\">", xa,
                    y + h / 2 - 5, fmax(xb - xa, 1), 10.0);
            tooltip(f, tip);
            fputs("</rect>\n", f);
        } else if (e->kind == TL_SYNC) {
            snprintf(tip, sizeof tip, "sync (%s) of version %lld: %.3f s to %.3f s (%.1f ms)",
                     method_name(e->method), e->version, e->t0, e->t1, (e->t1 - e->t0) * 1e3);
            /* widened away from its box: an explorer loads weights before
             * a rollout, the trainer publishes them after a train */
            double w = fmax(xb - xa, MIN_SYNC_W);
            if (e->row == TL_ROW_EXPLORER)
                xa = xb - w;
            xa = fmin(fmax(xa, L->x0), L->x1 - w);
            fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                    "fill=\"%s\">", sync_class(e->method), xa, y + 2, w, h - 4,
                    e->method == TL_SYNC_CHECKPOINT ? C_SYNC_CKPT : C_SYNC);
            tooltip(f, tip);
            fputs("</rect>\n", f);
        } else if (e->kind == TL_ROLLOUT) {
            if (e->batch >= 0)
                snprintf(label, sizeof label, "%lld", e->batch);
            int n = snprintf(tip, sizeof tip, "rollout of batch %lld with version %lld: %.3f s "
                             "to %.3f s (%.3f s)", e->batch, e->version, e->t0, e->t1,
                             e->t1 - e->t0);
            if (e->turns > 0 && n > 0 && (size_t)n < sizeof tip) /* trajectories */
                snprintf(tip + n, sizeof tip - (size_t)n, ", %.2f turns a trajectory (at "
                         "most %lld)", e->turns, e->max_turn);
            box(f, "rollout", C_ROLLOUT, C_ROLLOUT_EDGE, xa, xb, y + 5, h - 10, label, tip);
        } else {
            train_label(e, xb - xa - 1, label, sizeof label);
            char list[96] = "";
            size_t len = 0;
            for (size_t k = 0; k < e->n_batches && len < sizeof list; k++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", k ? "," : "",
                                        e->batches[k]);
            snprintf(tip, sizeof tip, "train step %lld on batch %s: %.3f s to %.3f s (%.3f s)",
                     e->step, list, e->t0, e->t1, e->t1 - e->t0);
            box(f, "train", C_TRAIN, C_TRAIN_EDGE, xa, xb, y + 5, h - 10, label, tip);
        }
    }
}

static void draw_instants(FILE *f, const tl_trace *t, const layout *L)
{
    size_t tr = t->n_explorers + 1;
    for (size_t i = 0; i < t->n_ev; i++) {
        const tl_event *e = &t->ev[i];
        if ((e->kind != TL_PUBLISH && e->kind != TL_SKIP) ||
            !tl_event_visible(e, L->from, L->to))
            continue;
        double x = x_of(L, e->t0), y = L->lane_top[tr], h = L->lane_h[tr];
        char tip[128];
        if (e->kind == TL_PUBLISH) {
            snprintf(tip, sizeof tip, "publish version %lld at %.3f s", e->version, e->t0);
            fprintf(f, "<path class=\"publish\" d=\"M%.2f %.2fh8l-4 6z\" fill=\"#444444\">",
                    x - 4, y);
        } else if (e->surplus) {
            snprintf(tip, sizeof tip, "drop a surplus group of batch %lld (version %lld): its "
                     "step was full, at %.3f s", e->batch, e->version, e->t0);
            fprintf(f, "<circle class=\"surplus\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" "
                    "fill=\"none\" stroke=\"" C_SURPLUS "\" stroke-width=\"2\">", x,
                    y + h - 7);
        } else {
            snprintf(tip, sizeof tip, "skip batch %lld (version %lld, too stale) at %.3f s",
                     e->batch, e->version, e->t0);
            fprintf(f, "<path class=\"skip\" d=\"M%.2f %.2fl8 8m0 -8l-8 8\" stroke=\""
                    C_SYNC_CKPT "\" stroke-width=\"2\">", x - 4, y + h - 11);
        }
        tooltip(f, tip);
        fputs(e->kind == TL_SKIP && e->surplus ? "</circle>\n" : "</path>\n", f);
    }
}

static void draw_buffer(FILE *f, const layout *L, size_t lane, const stay *s, size_t n,
                        int rows)
{
    double top = L->lane_top[lane] + (L->lane_h[lane] - rows * BUF_ROW_H) / 2 + 2;
    for (size_t i = 0; i < n; i++) {
        double y = top + s[i].row * BUF_ROW_H;
        double xa = x_of(L, s[i].t_put), xb = x_of(L, s[i].t_end);
        char label[32], tip[160];
        snprintf(label, sizeof label, "%lld", s[i].batch);
        snprintf(tip, sizeof tip, "batch %lld in the buffer: put at %.3f s, taken at %.3f s "
                 "(%.3f s)", s[i].batch, s[i].t_put, s[i].t_end, s[i].t_end - s[i].t_put);
        fprintf(f, "<rect class=\"in-buffer\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                "height=\"4\" fill=\"" C_BUFFER_INK "\" fill-opacity=\"0.55\">", xa, y + 5,
                fmax(xb - xa, 1));
        tooltip(f, tip);
        fputs("</rect>\n", f);
        if (s[i].t_put < L->from)
            continue; /* put before the window: the bar alone */
        if (s[i].crowded) { /* a tick, no room for a label */
            fprintf(f, "<rect class=\"put\" x=\"%.2f\" y=\"%.2f\" width=\"2\" height=\"13\" "
                    "fill=\"" C_BUFFER_INK "\">", xa, y);
            tooltip(f, tip);
            fputs("</rect>\n", f);
            continue;
        }
        double w = fmax(14, text_w(label, 10) + 6);
        xa = fmin(xa, L->x1 - w); /* a put at the very end stays inside */
        fprintf(f, "<rect class=\"put\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"13\" "
                "rx=\"2.5\" fill=\"#ffffff\" stroke=\"" C_BUFFER_INK "\" stroke-width=\"0.9\">",
                xa, y, w);
        tooltip(f, tip);
        fprintf(f, "</rect>\n<text class=\"label\" x=\"%.2f\" y=\"%.2f\" font-size=\"10\" "
                "text-anchor=\"middle\" fill=\"#1d4f7a\">%s</text>\n", xa + w / 2, y + 10,
                label);
    }
}

int tl_event_visible(const tl_event *e, double from, double to)
{
    return e->t1 >= from && e->t0 <= to;
}

int tl_svg_write(FILE *f, const tl_trace *t, const tl_view *v)
{
    layout L = {.from = v->from, .to = v->to, .x0 = MARGIN_L, .x1 = v->width - MARGIN_R,
                .width = v->width, .n_lanes = t->n_explorers + 2};
    stay *stays = NULL;
    size_t n_stays = 0;
    int rows = 1;
    L.lane_top = calloc(L.n_lanes, sizeof *L.lane_top);
    L.lane_h = calloc(L.n_lanes, sizeof *L.lane_h);
    if (!L.lane_top || !L.lane_h || buffer_stays(t, &L, &stays, &n_stays, &rows) != TERN_OK) {
        free(L.lane_top);
        free(L.lane_h);
        return tern_errorf(TERN_ENOMEM, "out of memory drawing the timeline");
    }
    double top = draw_counts(NULL, t, &L), y = top;
    for (size_t i = 0; i < L.n_lanes; i++) {
        L.lane_top[i] = y;
        L.lane_h[i] = i == t->n_explorers ? fmax(LANE_H, rows * BUF_ROW_H + 8) : LANE_H;
        y += L.lane_h[i] + LANE_GAP;
    }
    double lanes_end = y - LANE_GAP, y_axis = lanes_end + 6;
    double legend_y = y_axis + 50;
    int height = (int)ceil(legend(NULL, legend_y, v->width) + 8);

    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            v->width, height, v->width, height);
    fputs("<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
          "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#999999\" stroke-width=\"2\"/>"
          "</pattern></defs>\n", f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", v->width, height);
    fputs("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"" C_TEXT "\">",
          f);
    svg_put_text(f, v->title ? v->title : "tern timeline");
    fputs("</text>\n", f);
    draw_counts(f, t, &L);

    for (size_t i = 0; i < L.n_lanes; i++) {
        char name[32];
        lane_label(t, i, name, sizeof name);
        fprintf(f, "<rect class=\"lane\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"%s\"/>\n", L.x0, L.lane_top[i], L.x1 - L.x0, L.lane_h[i],
                i == t->n_explorers ? C_BUFFER : C_LANE);
        fprintf(f, "<text class=\"lane-name\" x=\"%d\" y=\"%.1f\" font-size=\"13\" "
                "text-anchor=\"end\" fill=\"" C_TEXT "\">%s</text>\n", MARGIN_L - 10,
                L.lane_top[i] + L.lane_h[i] / 2 + 4.5, name);
    }
    draw_axis(f, &L, top, y_axis);
    for (int pass = 0; pass < 3; pass++) {
        draw_spans(f, t, &L, pass);
        if (pass == 0)
            draw_buffer(f, &L, t->n_explorers, stays, n_stays, rows);
    }
    draw_instants(f, t, &L);
    legend(f, legend_y, v->width);
    fputs("</svg>\n", f);

    free(stays);
    free(L.lane_top);
    free(L.lane_h);
    if (ferror(f))
        return tern_errorf(TERN_EIO, "cannot write the picture");
    return TERN_OK;
}
