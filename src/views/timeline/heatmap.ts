/**
 * The timeline's summary of many ranks (GET timeline with `rows`, docs/API.md): when the
 * ranks do not fit the plot's height, a heat map of ranks x time (Vampir's master timeline
 * in summary mode), each cell coloured by the share of its ranks' time inside MPI calls or
 * busy (inside a top-level call). Pure parts: whether the ranks fit, how many rows to ask
 * for, decoding, the colour scale, hit testing and the hover readout; and the painting.
 */
import type { ITimelineHeatmap } from '../../api/traceTypes';
import type { ThemeKind } from '../../util/colors';
import type { IThemeColors } from './draw';
import { formatDuration } from '../../util/timeaxis';
import type { IView } from './projection';

/** What a heat cell's colour says. */
export type HeatMeasure = 'mpi' | 'active';

/** The least height of a heat row in CSS px (the server's columns are 2 px wide). */
export const HEAT_ROW_PX = 2;

/** Vertical zoom steps: the plot's height times this is the height the ranks get. */
export const VZOOM_MAX = 64;

/**
 * How to draw `ranks` ranks in `plotHeight` px at vertical zoom `vzoom`, where one rank per
 * row takes `rankRowPx` px: one row per rank when they fit, else a heat map of as many rows
 * as `HEAT_ROW_PX` allows (never more than the ranks), `height` px tall.
 */
export function rankRows(
  ranks: number,
  plotHeight: number,
  rankRowPx: number,
  vzoom = 1
): { mode: 'rows' | 'heatmap'; rows: number; height: number } {
  const height = Math.max(1, Math.floor(plotHeight * vzoom));
  if (ranks <= 0 || ranks * rankRowPx <= height) {
    return { mode: 'rows', rows: ranks, height: ranks * rankRowPx };
  }
  const rows = Math.max(
    1,
    Math.min(ranks - 1, Math.floor(height / HEAT_ROW_PX))
  );
  return { mode: 'heatmap', rows, height };
}

/** The heat map's bytes (base64 of `rows x columns` uint8). */
export function decodeHeat(text: string): Uint8Array {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) {
    out[i] = bin.charCodeAt(i);
  }
  return out;
}

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

/** The colour of a share `value` (0..255 for 0..100 %), linear between the ramp's stops. */
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

/** CSS for a share (legend swatches). */
export function heatCss(
  value: number,
  measure: HeatMeasure,
  theme: ThemeKind
): string {
  const [r, g, b] = heatColor(value, measure, theme);
  return `rgb(${r}, ${g}, ${b})`;
}

/** The heat map as RGBA pixels, one per cell (`columns` wide, `rows` high). */
export function heatPixels(
  values: Uint8Array,
  rows: number,
  columns: number,
  measure: HeatMeasure,
  theme: ThemeKind
): Uint8ClampedArray {
  const lut = new Uint8ClampedArray(256 * 3);
  for (let v = 0; v < 256; v++) {
    lut.set(heatColor(v, measure, theme), 3 * v);
  }
  const out = new Uint8ClampedArray(rows * columns * 4);
  const n = Math.min(values.length, rows * columns);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    out[4 * i] = lut[3 * v];
    out[4 * i + 1] = lut[3 * v + 1];
    out[4 * i + 2] = lut[3 * v + 2];
    out[4 * i + 3] = 255;
  }
  return out;
}

/** A decoded heat map answer, as the view keeps it. */
export interface IHeat {
  map: ITimelineHeatmap;
  window: [number, number];
  active: Uint8Array;
  mpi: Uint8Array;
  /** the ranks (location groups' names) of each row, resolved once */
  ranks: number[][];
}

/** "MPI Rank 12" -> 12; another group's name: its position among all rows' groups. */
export function heatOf(map: ITimelineHeatmap, window: [number, number]): IHeat {
  let order = 0;
  const ranks = map.rows.map(row =>
    row.groups.map(g => {
      const m = /rank\s*(\d+)\s*$/i.exec(g);
      const r = m ? Number(m[1]) : order;
      order++;
      return r;
    })
  );
  return {
    map,
    window,
    active: decodeHeat(map.active),
    mpi: decodeHeat(map.mpi),
    ranks
  };
}

/** The cell under (x, y) of a plot `width` x `height` px showing `view`. */
export interface IHeatCell {
  row: number;
  column: number;
  /** first and last rank of the row */
  ranks: [number, number];
  /** the column's time range, ns */
  t: [number, number];
  /** shares 0..1 */
  mpi: number;
  active: number;
}

export function heatCellAt(
  heat: IHeat,
  view: IView,
  width: number,
  height: number,
  x: number,
  y: number
): IHeatCell | null {
  const { map } = heat;
  const nrows = map.rows.length;
  if (nrows === 0 || width <= 0 || height <= 0 || y < 0 || y >= height) {
    return null;
  }
  const t = view.t0 + (x / width) * (view.t1 - view.t0);
  const column = Math.floor((t - heat.window[0]) / map.column_ns);
  const row = Math.floor((y / height) * nrows);
  if (column < 0 || column >= map.columns || row < 0 || row >= nrows) {
    return null;
  }
  const ranks = heat.ranks[row];
  const i = row * map.columns + column;
  const c0 = heat.window[0] + column * map.column_ns;
  return {
    row,
    column,
    ranks: [Math.min(...ranks), Math.max(...ranks)],
    t: [c0, c0 + map.column_ns],
    mpi: (heat.mpi[i] ?? 0) / 255,
    active: (heat.active[i] ?? 0) / 255
  };
}

/** The hover readout of a heat cell. */
export function heatText(cell: IHeatCell): { title: string; lines: string[] } {
  const [a, b] = cell.ranks;
  const pct = (v: number): string => `${Math.round(100 * v)} %`;
  return {
    title: a === b ? `Rank ${a}` : `Ranks ${a}–${b} (${b - a + 1} ranks)`,
    lines: [
      `${formatDuration(cell.t[0])} – ${formatDuration(cell.t[1])}`,
      `in MPI: ${pct(cell.mpi)} of the time`,
      `busy (in a call): ${pct(cell.active)} of the time`
    ]
  };
}

/** Rank labels down the heat map's left edge: the first rank of rows at least `gap` px
 * apart, the first row always. */
export function heatRankTicks(
  heat: IHeat,
  height: number,
  gap = 40
): { y: number; label: string }[] {
  const rows = heat.ranks.length;
  if (rows === 0) {
    return [];
  }
  const rowPx = height / rows;
  const every = Math.max(1, Math.ceil(gap / rowPx));
  const out: { y: number; label: string }[] = [];
  for (let r = 0; r < rows; r += every) {
    out.push({ y: r * rowPx, label: `Rank ${Math.min(...heat.ranks[r])}` });
  }
  return out;
}

/** Paint the heat map into the plot area (0, top) .. (width, top + height) of `ctx`. */
export function paintHeat(
  ctx: CanvasRenderingContext2D,
  heat: IHeat,
  view: IView,
  box: { top: number; width: number; height: number },
  measure: HeatMeasure,
  theme: ThemeKind,
  colors: IThemeColors
): void {
  const { map } = heat;
  const rows = map.rows.length;
  if (rows === 0 || map.columns === 0) {
    return;
  }
  const pixels = heatPixels(
    measure === 'mpi' ? heat.mpi : heat.active,
    rows,
    map.columns,
    measure,
    theme
  );
  const image = new ImageData(pixels, map.columns, rows);
  const offscreen = document.createElement('canvas');
  offscreen.width = map.columns;
  offscreen.height = rows;
  offscreen.getContext('2d')?.putImageData(image, 0, 0);
  // the answer's window may differ from the view while the next answer is on its way
  const span = view.t1 - view.t0;
  const x0 = ((heat.window[0] - view.t0) / span) * box.width;
  const w = ((map.columns * map.column_ns) / span) * box.width;
  ctx.save();
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(offscreen, x0, box.top, w, box.height);
  // which ranks are where: labels on a backing so they read over any colour
  ctx.font = `11px ${colors.font}`;
  ctx.textBaseline = 'top';
  for (const tick of heatRankTicks(heat, box.height)) {
    const y = box.top + tick.y;
    const tw = ctx.measureText(tick.label).width;
    ctx.globalAlpha = 0.8;
    ctx.fillStyle = colors.background;
    ctx.fillRect(0, y, tw + 6, 14);
    ctx.globalAlpha = 1;
    ctx.fillStyle = colors.text;
    ctx.fillText(tick.label, 3, y + 1);
    ctx.fillRect(0, y, 3, 1);
  }
  ctx.restore();
}
