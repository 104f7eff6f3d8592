/* bench-plot.c - tessera-bench --plot: a roofline chart in plain SVG.
 *
 * The x axis is N (the columns of the activations), the y axis the
 * operations per second, both logarithmic.  Each device, type and
 * weight shape m, k is a line of measured points in its colour; the
 * roofline of each type and shape is drawn dashed in the same colour
 * (the read roof times the operations per byte at each N, up to the
 * compute peak of the instructions the type's kernels use), and the
 * compute peaks as labelled horizontal lines.  The roofs are the host
 * CPU's: for another device's lines they are only a reference.  The
 * file is written by hand, with nothing but the C library.  */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* The chart's geometry, in SVG user units.  */
#define W 980
#define H 600
#define X0 80.0                 /* plot area */
#define X1 700.0
#define Y0 60.0
#define Y1 530.0
#define LEGEND_X 720.0

static const char *const colours[] = {
  "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
  "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"
};
#define N_COLOURS (sizeof colours / sizeof *colours)

/* A line: the points of one device, type and m, k.  */
struct series
{
  const struct bench_device *dev;
  const struct bench_case *c;  /* its first case: type, m, k */
  size_t first, n;             /* its points in the sorted index */
  int colour;                  /* the type and shape's */
};

static const struct bench_point *sort_pts;

static bool
same_series (const struct bench_point *a, const struct bench_point *b)
{
  return a->dev == b->dev && a->c.type == b->c.type && a->c.m == b->c.m
         && a->c.k == b->c.k;
}

static bool
same_shape (const struct bench_case *a, const struct bench_case *b)
{
  return a->type == b->type && a->m == b->m && a->k == b->k;
}

/* By series, in the order they first appear, then by N.  */
static int
compare_points (const void *pa, const void *pb)
{
  size_t a = *(const size_t *) pa, b = *(const size_t *) pb;
  const struct bench_point *x = &sort_pts[a], *y = &sort_pts[b];
  if (!same_series (x, y))
    {
      /* The series' first appearance decides.  */
      size_t fa = a, fb = b;
      for (size_t i = 0; i < a; i++)
        if (same_series (&sort_pts[i], x))
          {
            fa = i;
            break;
          }
      for (size_t i = 0; i < b; i++)
        if (same_series (&sort_pts[i], y))
          {
            fb = i;
            break;
          }
      return fa < fb ? -1 : fa > fb;
    }
  return x->c.n < y->c.n ? -1 : x->c.n > y->c.n ? 1 : a < b ? -1 : a > b;
}

static double
gflops_of (const struct bench_point *p)
{
  return p->r.cost.flops / p->r.us_median / 1e3;
}

/* Text for SVG: &, < and > escaped.  */
static void
text (FILE *f, const char *s)
{
  for (; *s; s++)
    if (*s == '&')
      fputs ("&amp;", f);
    else if (*s == '<')
      fputs ("&lt;", f);
    else if (*s == '>')
      fputs ("&gt;", f);
    else
      fputc (*s, f);
}

struct axes
{
  double lx0, lx1, ly0, ly1;   /* log2 N and log10 GFLOP/s at the edges */
};

static double
px (const struct axes *a, double n)
{
  return X0 + (log2 (n) - a->lx0) / (a->lx1 - a->lx0) * (X1 - X0);
}

static double
py (const struct axes *a, double g)
{
  return Y1 - (log10 (g) - a->ly0) / (a->ly1 - a->ly0) * (Y1 - Y0);
}

static bool
plotted (const struct bench_point *p)
{
  return p->r.status == BENCH_OK && p->c.kind->op == TSR_OP_MUL_MAT
         && p->c.kind->nodes == 1 && p->r.cost.flops > 0
         && p->r.us_median > 0;
}

/* The y value of a horizontal line of PEAK, or of the roofline of
   series S at N.  */
static double
roof_at (const struct bench_roofs *roofs, const struct series *s, double n)
{
  return bench_roof_gflops (roofs, s->c, n);
}

static void
draw (FILE *f, const struct bench_point *pts, const size_t *idx,
      size_t n_idx, const struct series *ser, size_t n_ser,
      const struct bench_roofs *roofs)
{
  /* Ranges: every point, and the roofs over the points' N.  */
  double nmin = INFINITY, nmax = 0, gmin = INFINITY, gmax = 0;
  for (size_t i = 0; i < n_idx; i++)
    {
      const struct bench_point *p = &pts[idx[i]];
      double g = gflops_of (p);
      nmin = fmin (nmin, (double) p->c.n);
      nmax = fmax (nmax, (double) p->c.n);
      gmin = fmin (gmin, g);
      gmax = fmax (gmax, g);
    }
  if (nmax <= nmin)
    nmin /= 2, nmax *= 2;
  for (size_t s = 0; roofs && s < n_ser; s++)
    for (int e = 0; e < 2; e++)
      {
        double g = roof_at (roofs, &ser[s], e ? nmax : nmin);
        if (g > 0)
          gmin = fmin (gmin, g), gmax = fmax (gmax, g);
      }
  if (roofs && roofs->peaks.fma > 0)
    gmax = fmax (gmax, roofs->peaks.fma);
  if (roofs && roofs->peaks.dot8 > 0)
    gmax = fmax (gmax, roofs->peaks.dot8);
  struct axes a = {
    log2 (nmin) - 0.15, log2 (nmax) + 0.15,
    floor (log10 (gmin / 1.3)), ceil (log10 (gmax * 1.3))
  };
  if (a.ly1 <= a.ly0)
    a.ly1 = a.ly0 + 1;

  fprintf (f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
           "fill=\"none\" stroke=\"#444\"/>\n", X0, Y0, X1 - X0, Y1 - Y0);
  /* y grid: 1, 2 and 5 of each decade, labelled.  */
  for (double d = a.ly0; d < a.ly1 + 0.5; d++)
    for (int m = 1; m <= 5; m += m == 1 ? 1 : 3)
      {
        double g = m * pow (10, d), y = py (&a, g);
        if (y < Y0 - 0.5 || y > Y1 + 0.5)
          continue;
        fprintf (f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                 "stroke=\"#ddd\"/>\n", X0, y, X1, y);
        fprintf (f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                 "font-size=\"11\">%g</text>\n", X0 - 6, y + 4, g);
      }
  /* x ticks: the N of the points (up to 16 of them), else powers of
     two.  */
  int64_t ns[16];
  size_t n_ns = 0;
  bool too_many = false;
  for (size_t i = 0; i < n_idx && !too_many; i++)
    {
      int64_t n = pts[idx[i]].c.n;
      size_t j = 0;
      while (j < n_ns && ns[j] != n)
        j++;
      if (j == n_ns)
        {
          if (n_ns == 16)
            too_many = true;
          else
            ns[n_ns++] = n;
        }
    }
  if (too_many)
    for (n_ns = 0; n_ns < 16 && ldexp (1, (int) n_ns) <= nmax; n_ns++)
      ns[n_ns] = INT64_C (1) << n_ns;
  for (size_t j = 0; j < n_ns; j++)
    {
      double x = px (&a, (double) ns[j]);
      if (x < X0 - 0.5 || x > X1 + 0.5)
        continue;
      fprintf (f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
               "stroke=\"#ddd\"/>\n", x, Y0, x, Y1);
      fprintf (f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
               "font-size=\"11\">%" PRId64 "</text>\n", x, Y1 + 16, ns[j]);
    }
  fprintf (f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
           "font-size=\"13\">N (columns of the activations)</text>\n",
           (X0 + X1) / 2, Y1 + 36);
  fprintf (f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" "
           "text-anchor=\"middle\" font-size=\"13\">GFLOP/s (8-bit: "
           "GOP/s)</text>\n", X0 - 58, (Y0 + Y1) / 2);

  /* Compute peaks.  */
  for (int k = 0; roofs && k < 2; k++)
    {
      double g = k ? roofs->peaks.dot8 : roofs->peaks.fma;
      const char *unit = k ? roofs->peaks.dot8_unit : roofs->peaks.fma_unit;
      if (g <= 0)
        continue;
      double y = py (&a, g);
      fprintf (f, "<line class=\"peak\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
               "y2=\"%.1f\" stroke=\"#000\" stroke-width=\"1.5\"/>\n",
               X0, y, X1, y);
      fprintf (f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s peak "
               "%.0f %s (", X0 + 6, y - 5, k ? "8-bit dot-product" : "f32 FMA",
               g, k ? "GOP/s" : "GFLOP/s");
      text (f, unit);
      fprintf (f, ")</text>\n");
    }

  /* Rooflines: one per type and shape (the first series of each).  */
  for (size_t s = 0; roofs && s < n_ser; s++)
    {
      bool first = true;
      for (size_t t = 0; t < s && first; t++)
        first = !same_shape (ser[t].c, ser[s].c);
      if (!first)
        continue;
      fprintf (f, "<polyline class=\"roof\" fill=\"none\" stroke=\"%s\" "
               "stroke-width=\"1.2\" stroke-dasharray=\"6 4\" points=\"",
               colours[ser[s].colour]);
      for (int i = 0; i <= 64; i++)
        {
          double n = fmax (1, exp2 (a.lx0 + (a.lx1 - a.lx0) * i / 64));
          double g = roof_at (roofs, &ser[s], n);
          if (g > 0)
            fprintf (f, "%s%.1f,%.1f", i ? " " : "", px (&a, n),
                     fmax (Y0, fmin (Y1, py (&a, g))));
        }
      fprintf (f, "\"/>\n");
    }

  /* The measured lines, and the legend.  */
  for (size_t s = 0; s < n_ser; s++)
    {
      const char *col = colours[ser[s].colour];
      /* Another device than the first one's: dotted.  */
      const char *dash = ser[s].dev == ser[0].dev ? ""
                         : " stroke-dasharray=\"2 3\"";
      fprintf (f, "<polyline class=\"measured\" fill=\"none\" stroke=\"%s\" "
               "stroke-width=\"2\"%s points=\"", col, dash);
      for (size_t i = 0; i < ser[s].n; i++)
        {
          const struct bench_point *p = &pts[idx[ser[s].first + i]];
          fprintf (f, "%s%.1f,%.1f", i ? " " : "", px (&a, (double) p->c.n),
                   py (&a, gflops_of (p)));
        }
      fprintf (f, "\"/>\n");
      for (size_t i = 0; i < ser[s].n; i++)
        {
          const struct bench_point *p = &pts[idx[ser[s].first + i]];
          fprintf (f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
                   "<title>", px (&a, (double) p->c.n),
                   py (&a, gflops_of (p)), col);
          text (f, tsr_device_name (p->dev->dev));
          fprintf (f, " %s %" PRId64 "x%" PRId64 " N=%" PRId64 ": %.1f "
                   "GFLOP/s", tsr_type_name (p->c.type), p->c.m, p->c.k,
                   p->c.n, gflops_of (p));
          const char *bound;
          double e = bench_efficiency (roofs, p->dev, &p->c, &p->r, &bound);
          if (e > 0)
            fprintf (f, ", %.1f%% of the %s roof", 100 * e, bound);
          fprintf (f, "</title></circle>\n");
        }
      double y = Y0 + 10 + 20.0 * (double) s;
      fprintf (f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
               "stroke=\"%s\" stroke-width=\"2\"%s/>\n", LEGEND_X, y,
               LEGEND_X + 24, y, col, dash);
      fprintf (f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
               LEGEND_X + 30, y + 4);
      text (f, tsr_device_name (ser[s].dev->dev));
      fprintf (f, " %s %" PRId64 "x%" PRId64 "</text>\n",
               tsr_type_name (ser[s].c->type), ser[s].c->m, ser[s].c->k);
    }
  if (roofs)
    {
      double y = Y0 + 10 + 20.0 * (double) n_ser + 10;
      fprintf (f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
               "stroke=\"#444\" stroke-dasharray=\"6 4\"/>\n", LEGEND_X, y,
               LEGEND_X + 24, y);
      fprintf (f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">roofline "
               "(read roof %.1f GB/s)</text>\n", LEGEND_X + 30, y + 4,
               roofs->read);
    }
}

int
bench_plot_svg (const char *path, const char *program,
                const struct bench_point *pts, size_t n,
                const struct bench_roofs *roofs)
{
  size_t *idx = malloc ((n ? n : 1) * sizeof *idx), n_idx = 0;
  struct series *ser = malloc ((n ? n : 1) * sizeof *ser);
  size_t n_ser = 0;
  int colours_used = 0;
  if (!idx || !ser)
    {
      fprintf (stderr, "%s: --plot: out of memory\n", program);
      free (idx);
      free (ser);
      return -1;
    }
  for (size_t i = 0; i < n; i++)
    if (plotted (&pts[i]))
      idx[n_idx++] = i;
  if (n_idx == 0)
    {
      fprintf (stderr, "%s: --plot: no mul_mat result to draw in %s\n",
               program, path);
      free (idx);
      free (ser);
      return -1;
    }
  sort_pts = pts;
  qsort (idx, n_idx, sizeof *idx, compare_points);
  for (size_t i = 0; i < n_idx; i++)
    {
      const struct bench_point *p = &pts[idx[i]];
      if (n_ser > 0 && same_series (&pts[idx[ser[n_ser - 1].first]], p))
        {
          ser[n_ser - 1].n++;
          continue;
        }
      struct series *s = &ser[n_ser];
      *s = (struct series) { p->dev, &p->c, i, 1, -1 };
      for (size_t t = 0; t < n_ser && s->colour < 0; t++)
        if (same_shape (ser[t].c, s->c))
          s->colour = ser[t].colour;
      if (s->colour < 0)
        s->colour = colours_used++ % (int) N_COLOURS;
      n_ser++;
    }

  FILE *f = fopen (path, "w");
  if (!f)
    {
      fprintf (stderr, "%s: --plot: cannot write %s: %s\n", program, path,
               strerror (errno));
      free (idx);
      free (ser);
      return -1;
    }
  fprintf (f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
           "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">"
           "\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
           W, H, W, H);
  fprintf (f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" "
           "font-size=\"15\">mul_mat roofline: tessera-bench %s", (X0 + X1)
           / 2, tsr_version ());
  if (roofs)
    fprintf (f, ", %d threads, ISA level %s", roofs->threads,
             roofs->peaks.level);
  fprintf (f, "</text>\n");
  draw (f, pts, idx, n_idx, ser, n_ser, roofs);
  fprintf (f, "</svg>\n");
  int bad = ferror (f);
  if (fclose (f) != 0 || bad)
    {
      fprintf (stderr, "%s: --plot: error writing %s\n", program, path);
      free (idx);
      free (ser);
      return -1;
    }
  free (idx);
  free (ser);
  return 0;
}
