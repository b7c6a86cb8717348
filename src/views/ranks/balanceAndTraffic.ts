/**
 * What the Ranks tab shows of GET ranks, as pure functions: the headline, each rank's bar
 * (compute and MPI time against the longest rank), the communication matrix's shades and
 * its largest flows.
 */
import type { IRanks, IRankRow } from '../../api/analysisTypes';
import { formatBytes } from '../metrics/format';
import { formatSeconds } from '../../util/timeaxis';

/** A matrix of more ranks than this is listed as its largest flows instead of drawn. */
export const MATRIX_MAX_RANKS = 64;

export type MatrixMeasure = 'bytes' | 'messages';

/** "4 ranks · 36 % imbalance (rank 2 computes longest) · 55 % of the time in MPI" */
export function headline(r: IRanks): string {
  const n = r.ranks.length;
  const parts = [`${n} rank${n === 1 ? '' : 's'}`];
  if (r.imbalance_pct !== null && n > 1) {
    parts.push(
      `${Math.round(r.imbalance_pct)} % imbalance` +
        (r.slowest_rank !== null
          ? ` (rank ${r.slowest_rank} computes longest)`
          : '')
    );
  }
  if (r.communication_share !== null) {
    parts.push(
      `${Math.round(100 * r.communication_share)} % of the time in MPI`
    );
  }
  const sent = r.ranks.reduce((s, x) => s + x.bytes_sent, 0);
  if (sent > 0) {
    parts.push(`${formatBytes(sent)} sent point to point`);
  }
  return parts.join(' · ');
}

/** Widths (0..1 of the longest rank's cell time) of a rank's compute and MPI parts. */
export function barParts(
  row: IRankRow,
  longest: number
): { compute: number; mpi: number } {
  if (!(longest > 0)) {
    return { compute: 0, mpi: 0 };
  }
  return { compute: row.compute_s / longest, mpi: row.mpi_s / longest };
}

/** A rank's row of the table, as text. */
export function rowCells(row: IRankRow): string[] {
  const share =
    row.cell_s > 0 ? `${Math.round((100 * row.mpi_s) / row.cell_s)} %` : '–';
  return [
    `${row.rank}`,
    formatSeconds(row.cell_s),
    formatSeconds(row.compute_s),
    formatSeconds(row.mpi_s),
    share,
    formatBytes(row.bytes_sent),
    `${row.messages_sent}`
  ];
}

/** Shade 0..1 of a matrix value: logarithmic, so one large flow does not hide the rest. */
export function shade(value: number, max: number): number {
  if (!(value > 0) || !(max > 0)) {
    return 0;
  }
  return Math.log1p(value) / Math.log1p(max);
}

export function matrixMax(m: number[][]): number {
  let max = 0;
  for (const row of m) {
    for (const v of row) {
      max = Math.max(max, v);
    }
  }
  return max;
}

/** The `k` largest flows (sender, receiver, value), largest first. */
export function topFlows(
  m: number[][],
  k: number
): { from: number; to: number; value: number }[] {
  const flows: { from: number; to: number; value: number }[] = [];
  m.forEach((row, from) =>
    row.forEach((value, to) => {
      if (value > 0) {
        flows.push({ from, to, value });
      }
    })
  );
  flows.sort((a, b) => b.value - a.value || a.from - b.from || a.to - b.to);
  return flows.slice(0, k);
}

/** A matrix cell's words: "rank 0 → rank 1: 800 B in 1 message". */
export function flowText(r: IRanks, from: number, to: number): string {
  const bytes = r.matrix.bytes[from]?.[to] ?? 0;
  const msgs = r.matrix.messages[from]?.[to] ?? 0;
  return `rank ${from} → rank ${to}: ${formatBytes(bytes)} in ${msgs} message${msgs === 1 ? '' : 's'}`;
}

export function formatMeasure(value: number, measure: MatrixMeasure): string {
  return measure === 'bytes' ? formatBytes(value) : `${value}`;
}

/**
 * The load imbalance verdict naming the slowest ranks (GET ranks' `slowest_ranks`, up to 5):
 * "Slowest ranks: 1000, 1001, 1002, 1003, 1004 (compute 1.5 ms, 1.4× the mean 1.03 ms);
 * 24 ranks within 5 % of the slowest". Null for fewer than two ranks or nothing measured.
 */
export function slowestText(r: IRanks): string | null {
  const slowest = r.slowest_ranks ?? [];
  if (r.ranks.length < 2 || slowest.length === 0) {
    return null;
  }
  const byRank = new Map(r.ranks.map(x => [x.rank, x]));
  const top = byRank.get(slowest[0])?.compute_s ?? 0;
  if (!(top > 0)) {
    return null;
  }
  const mean = r.ranks.reduce((s, x) => s + x.compute_s, 0) / r.ranks.length;
  const near = r.ranks.filter(x => x.compute_s >= 0.95 * top).length;
  const names = slowest.join(', ');
  const ratio =
    mean > 0
      ? `, ${(top / mean).toFixed(2)}× the mean ${formatSeconds(mean)}`
      : '';
  return (
    `Slowest rank${slowest.length === 1 ? '' : 's'}: ${names} ` +
    `(compute ${formatSeconds(top)}${ratio}); ` +
    `${near} rank${near === 1 ? '' : 's'} within 5 % of the slowest`
  );
}
