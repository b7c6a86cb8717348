/**
 * The sequential colour scales of the many-rank views, shared by the timeline's heat map
 * (ranks x time) and the Ranks tab's communication matrix: the ramps per theme (low values
 * recede into the background), a value's colour, the RGBA fill of a grid of values, the
 * drawing of such a grid onto a canvas (one cell per pixel, scaled without smoothing) and
 * the colour-scale bar the two views show above their canvas.
 */
import type { ThemeKind } from './colors';
import { el } from './dom';

/** Which ramp: time in MPI (orange), busy or traffic (blue). */
export type HeatMeasure = 'mpi' | 'active';

type RGB = [number, number, number];

/** The scale's stops, light and dark: low shares recede into the background. */
const RAMPS: Record<ThemeKind, Record<HeatMeasure, RGB[]>> = {
  light: {
    mpi: [
      [245, 245, 245],
      [253, 208, 162],
      [241, 105, 19],
      [127, 39, 4]
    ],
    active: [
      [245, 245, 245],
      [158, 202, 225],
      [33, 113, 181],
      [8, 48, 107]
    ]
  },
  dark: {
    mpi: [
      [35, 35, 35],
      [127, 39, 4],
      [241, 105, 19],
      [253, 208, 162]
    ],
    active: [
      [35, 35, 35],
      [8, 69, 148],
      [66, 146, 198],
      [198, 219, 239]
    ]
  }
};

/** The colour of `value` (0..255 for the scale's low to high end), linear between stops. */
export function heatColor(
  value: number,
  measure: HeatMeasure,
  theme: ThemeKind
): RGB {
  const stops = RAMPS[theme][measure];
  const t = Math.min(Math.max(value / 255, 0), 1) * (stops.length - 1);
  const i = Math.min(Math.floor(t), stops.length - 2);
  const f = t - i;
  const a = stops[i];
  const b = stops[i + 1];
  return [
    Math.round(a[0] + (b[0] - a[0]) * f),
    Math.round(a[1] + (b[1] - a[1]) * f),
    Math.round(a[2] + (b[2] - a[2]) * f)
  ];
}

/** CSS for a value (legend swatches, a plot's empty background). */
export function heatCss(
  value: number,
  measure: HeatMeasure,
  theme: ThemeKind
): string {
  const [r, g, b] = heatColor(value, measure, theme);
  return `rgb(${r}, ${g}, ${b})`;
}

/**
 * One RGBA pixel per value of `values` (the first `n`): value v (0..255) in the colour of v;
 * a negative value (or NaN) stays transparent, so a canvas's background shows through.
 */
export function heatRgba(
  values: ArrayLike<number>,
  n: number,
  measure: HeatMeasure,
  theme: ThemeKind
): Uint8ClampedArray {
  const lut = new Uint8ClampedArray(256 * 3);
  for (let v = 0; v < 256; v++) {
    lut.set(heatColor(v, measure, theme), 3 * v);
  }
  const out = new Uint8ClampedArray(n * 4);
  const m = Math.min(values.length, n);
  for (let i = 0; i < m; i++) {
    const v = values[i];
    if (!(v >= 0)) {
      continue;
    }
    const k = 3 * Math.min(Math.round(v), 255);
    out[4 * i] = lut[k];
    out[4 * i + 1] = lut[k + 1];
    out[4 * i + 2] = lut[k + 2];
    out[4 * i + 3] = 255;
  }
  return out;
}

/** Draw `rgba` (`columns` x `rows` pixels) scaled into the box of `ctx`, unsmoothed. */
export function drawRgba(
  ctx: CanvasRenderingContext2D,
  rgba: Uint8ClampedArray,
  columns: number,
  rows: number,
  box: { x: number; y: number; width: number; height: number }
): void {
  if (columns <= 0 || rows <= 0) {
    return;
  }
  const offscreen = document.createElement('canvas');
  offscreen.width = columns;
  offscreen.height = rows;
  offscreen
    .getContext('2d')
    ?.putImageData(new ImageData(rgba, columns, rows), 0, 0);
  ctx.save();
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(offscreen, box.x, box.y, box.width, box.height);
  ctx.restore();
}

/** The CSS gradient of the scale from value `from` (0..255) to the top, left to right. */
export function heatGradient(
  measure: HeatMeasure,
  theme: ThemeKind,
  from = 0
): string {
  const stops = [0, 0.25, 0.5, 0.75, 1].map(
    f =>
      `${heatCss(from + f * (255 - from), measure, theme)} ${Math.round(f * 100)}%`
  );
  return `linear-gradient(to right, ${stops.join(', ')})`;
}

/**
 * The colour-scale bar: `low` label, the ramp from value `from` (0..255) to the top, `high`
 * label; `label` is what a screen reader hears.
 */
export function heatLegend(s: {
  measure: HeatMeasure;
  theme: ThemeKind;
  from?: number;
  low: string;
  high: string;
  label: string;
}): HTMLElement {
  const legend = el('span', 'jp-scorep-heatbar-legend');
  legend.setAttribute('aria-label', s.label);
  legend.setAttribute('role', 'img');
  const ramp = el('span', 'jp-scorep-heatbar-ramp');
  ramp.style.background = heatGradient(s.measure, s.theme, s.from ?? 0);
  legend.append(el('span', '', s.low), ramp, el('span', '', s.high));
  return legend;
}
