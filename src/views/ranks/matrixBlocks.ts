/**
 * The communication matrix of a large MPI run, drawn on a canvas: GET ranks' matrix (dense,
 * or its non-zero cells with `matrix=pairs`) summed into square blocks of consecutive ranks
 * when the ranks outnumber the pixels (1,024 ranks in 512 px: blocks of 2 x 2), each block
 * shaded on a log scale of the measure; hit testing names the block's senders, receivers,
 * bytes and messages. Pure functions, and the painting.
 */
import type { IRanks } from '../../api/analysisTypes';
import type { ThemeKind } from '../../util/colors';
import { formatBytes } from '../metrics/format';
import { drawRgba, heatRgba } from '../../util/heatScale';
import { MatrixMeasure, shade } from './balanceAndTraffic';

/** The matrix's non-zero cells, whichever way the server sent them. */
export interface IMatrixCells {
  size: number;
  sender: readonly number[];
  receiver: readonly number[];
  bytes: readonly number[];
  messages: readonly number[];
}

export function matrixCells(r: IRanks): IMatrixCells {
  const m = r.matrix;
  if (m.pairs) {
    return { size: m.size ?? r.ranks.length, ...m.pairs };
  }
  const cells = {
    size: Math.max(r.ranks.length, m.bytes.length),
    sender: [] as number[],
    receiver: [] as number[],
    bytes: [] as number[],
    messages: [] as number[]
  };
  m.bytes.forEach((row, from) =>
    row.forEach((b, to) => {
      const msgs = m.messages[from]?.[to] ?? 0;
      if (b > 0 || msgs > 0) {
        cells.sender.push(from);
        cells.receiver.push(to);
        cells.bytes.push(b);
        cells.messages.push(msgs);
      }
    })
  );
  return cells;
}

/** The dense matrices of `cells` (for the small runs' table). */
export function denseOf(cells: IMatrixCells): {
  bytes: number[][];
  messages: number[][];
} {
  const n = cells.size;
  const bytes = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  const messages = Array.from({ length: n }, () =>
    new Array<number>(n).fill(0)
  );
  for (let k = 0; k < cells.sender.length; k++) {
    bytes[cells.sender[k]][cells.receiver[k]] += cells.bytes[k];
    messages[cells.sender[k]][cells.receiver[k]] += cells.messages[k];
  }
  return { bytes, messages };
}

/** The matrix in blocks of `block` x `block` ranks, `side` blocks a side, row-major. */
export interface IBlockGrid {
  size: number;
  block: number;
  side: number;
  bytes: Float64Array;
  messages: Float64Array;
  max: { bytes: number; messages: number };
}

/** Blocks so that the matrix fits `px` pixels a side (one rank per block when it does). */
export function blockGrid(cells: IMatrixCells, px: number): IBlockGrid {
  const size = Math.max(cells.size, 1);
  const block = Math.max(1, Math.ceil(size / Math.max(1, Math.floor(px))));
  const side = Math.ceil(size / block);
  const bytes = new Float64Array(side * side);
  const messages = new Float64Array(side * side);
  for (let k = 0; k < cells.sender.length; k++) {
    const i =
      Math.floor(cells.sender[k] / block) * side +
      Math.floor(cells.receiver[k] / block);
    bytes[i] += cells.bytes[k];
    messages[i] += cells.messages[k];
  }
  let maxBytes = 0;
  let maxMessages = 0;
  for (let i = 0; i < bytes.length; i++) {
    maxBytes = Math.max(maxBytes, bytes[i]);
    maxMessages = Math.max(maxMessages, messages[i]);
  }
  return {
    size,
    block,
    side,
    bytes,
    messages,
    max: { bytes: maxBytes, messages: maxMessages }
  };
}

/** The block under (x, y) of a matrix drawn `px` pixels a side. */
export interface IBlockHit {
  senders: [number, number];
  receivers: [number, number];
  bytes: number;
  messages: number;
}

export function blockAt(
  grid: IBlockGrid,
  px: number,
  x: number,
  y: number
): IBlockHit | null {
  if (x < 0 || y < 0 || x >= px || y >= px) {
    return null;
  }
  const row = Math.floor((y / px) * grid.side);
  const col = Math.floor((x / px) * grid.side);
  const range = (b: number): [number, number] => [
    b * grid.block,
    Math.min(grid.size, (b + 1) * grid.block) - 1
  ];
  const i = row * grid.side + col;
  return {
    senders: range(row),
    receivers: range(col),
    bytes: grid.bytes[i],
    messages: grid.messages[i]
  };
}

function ranksText(range: [number, number]): string {
  return range[0] === range[1]
    ? `rank ${range[0]}`
    : `ranks ${range[0]}–${range[1]}`;
}

/** "ranks 0–1 → ranks 2–3: 8 KiB in 2 messages" */
export function blockText(hit: IBlockHit): string {
  const msgs = hit.messages;
  return (
    `${ranksText(hit.senders)} → ${ranksText(hit.receivers)}: ` +
    `${formatBytes(hit.bytes)} in ${msgs.toLocaleString('en-US')} message${msgs === 1 ? '' : 's'}`
  );
}

/** Rank ticks along an axis `px` long: multiples of a round step at least `gap` px apart. */
export function rankTicks(
  size: number,
  px: number,
  gap = 48
): { at: number; rank: number }[] {
  if (size <= 0 || px <= 0) {
    return [];
  }
  const perPx = size / px;
  const raw = gap * perPx;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  const step =
    [1, 2, 4, 5, 8, 10].map(m => m * pow).find(s => s >= raw) ?? 10 * pow;
  const out: { at: number; rank: number }[] = [];
  for (let r = 0; r < size; r += Math.max(1, Math.round(step))) {
    out.push({ at: r / perPx, rank: r });
  }
  return out;
}

/** The grid's values as scale values (0..255), a non-zero block never lighter than a step
 * above the background (the log scale starts at 0.15), an empty one -1 (left blank). */
export function blockShades(
  grid: IBlockGrid,
  measure: MatrixMeasure
): Float64Array {
  const values = measure === 'bytes' ? grid.bytes : grid.messages;
  const max = grid.max[measure];
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    out[i] =
      v > 0
        ? (MATRIX_SCALE_FROM + (1 - MATRIX_SCALE_FROM) * shade(v, max)) * 255
        : -1;
  }
  return out;
}

/** Where the matrix's scale starts (of 0..1): a step above the empty background. */
export const MATRIX_SCALE_FROM = 0.15;

/** Paint the grid into a `px` x `px` square at (x0, y0) of `ctx`; empty blocks stay blank. */
export function paintBlocks(
  ctx: CanvasRenderingContext2D,
  grid: IBlockGrid,
  measure: MatrixMeasure,
  theme: ThemeKind,
  at: { x: number; y: number; px: number }
): void {
  const n = grid.side * grid.side;
  const rgba = heatRgba(blockShades(grid, measure), n, 'active', theme);
  drawRgba(ctx, rgba, grid.side, grid.side, {
    x: at.x,
    y: at.y,
    width: at.px,
    height: at.px
  });
}
