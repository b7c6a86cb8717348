/**
 * The timeline's summary of many ranks (GET timeline with `rows`, docs/API.md): when the
 * ranks do not fit the plot's height, a heat map of ranks x time (Vampir's master timeline
 * in summary mode), each cell coloured by the share of its ranks' time inside MPI calls or
 * busy (inside a top-level call). Pure parts: decoding, hit testing and the hover readout;
 * and the painting (the colours: util/heatScale.ts; whether the ranks fit: rankRows.ts).
 */
import type { ITimelineHeatmap } from '../../api/traceTypes';
import type { ThemeKind } from '../../util/colors';
import { drawRgba, HeatMeasure, heatRgba } from '../../util/heatScale';
import type { IThemeColors } from './draw';
import { formatDuration } from '../../util/timeaxis';
import type { IView } from './projection';

/** The heat map's bytes (base64 of `rows x columns` uint8). */
export function decodeHeat(text: string): Uint8Array {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) {
    out[i] = bin.charCodeAt(i);
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
  // the answer's window may differ from the view while the next answer is on its way
  const span = view.t1 - view.t0;
  const x0 = ((heat.window[0] - view.t0) / span) * box.width;
  const w = ((map.columns * map.column_ns) / span) * box.width;
  const values = measure === 'mpi' ? heat.mpi : heat.active;
  const rgba = heatRgba(values, rows * map.columns, measure, theme);
  drawRgba(ctx, rgba, map.columns, rows, {
    x: x0,
    y: box.top,
    width: w,
    height: box.height
  });
  ctx.save();
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
