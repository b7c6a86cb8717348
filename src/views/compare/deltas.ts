/**
 * The Compare view's differences: Δ formatting, sorting the function rows and the merged
 * call tree's visible rows. Pure functions, tested without a browser.
 */
import type { IFunctionDelta, IPathDelta } from '../../api/analysisTypes';
import { formatDuration } from '../../util/timeaxis';

/** A time difference in seconds with its sign: "+120 ms", "−1.5 s", "±0". */
export function formatDelta(seconds: number): string {
  if (!Number.isFinite(seconds)) {
    return '–';
  }
  if (Math.abs(seconds) < 0.5e-9) {
    return '±0';
  }
  const text = formatDuration(Math.abs(seconds) * 1e9);
  return `${seconds > 0 ? '+' : '−'}${text}`;
}

/** A count difference with its sign: "+300", "−2", "±0". */
export function formatCountDelta(delta: number): string {
  if (delta === 0) {
    return '±0';
  }
  return `${delta > 0 ? '+' : '−'}${Math.abs(delta).toLocaleString()}`;
}

/** Δ% as text: "+31 %", "−4.2 %"; "new" where A had nothing (no % of nothing). */
export function formatPct(pct: number | null, status = 'both'): string {
  if (pct === null || !Number.isFinite(pct)) {
    return status === 'removed' ? 'gone' : status === 'added' ? 'new' : '–';
  }
  const abs = Math.abs(pct);
  const text = abs >= 10 ? abs.toFixed(0) : abs.toFixed(1);
  if (Number(text) === 0) {
    return '±0 %';
  }
  return `${pct > 0 ? '+' : '−'}${text} %`;
}

export type DeltaKey = 'excl' | 'incl' | 'visits';

function delta(f: IFunctionDelta, key: DeltaKey): number {
  return key === 'excl'
    ? f.excl_delta
    : key === 'incl'
      ? f.incl_delta
      : f.visits_delta;
}

/** Function rows by |Δ| of `key`, largest first (then by |Δ exclusive|, then name). */
export function sortByDelta(
  rows: IFunctionDelta[],
  key: DeltaKey
): IFunctionDelta[] {
  return [...rows].sort(
    (a, b) =>
      Math.abs(delta(b, key)) - Math.abs(delta(a, key)) ||
      Math.abs(b.excl_delta) - Math.abs(a.excl_delta) ||
      a.name.localeCompare(b.name)
  );
}

/** Whether a row moved: beyond noise, visits changed, or only in one run. */
export function changed(f: IFunctionDelta): boolean {
  return f.time_changed || f.visits_changed || f.status !== 'both';
}

export interface IDiffRow {
  key: string;
  node: IPathDelta;
  depth: number;
  hasChildren: boolean;
  expanded: boolean;
  delta: number;
}

/** Visible rows of the merged call tree: top-level paths, then the children of expanded
 * ones, siblings by |Δ inclusive| largest first. Keys are child-index paths ("1/0/2"). */
export function diffRows(
  roots: IPathDelta[],
  expanded: ReadonlySet<string>
): IDiffRow[] {
  const rows: IDiffRow[] = [];
  const order = (nodes: IPathDelta[]) =>
    nodes
      .map((n, i) => i)
      .sort(
        (i, j) =>
          Math.abs(nodes[j].incl_b - nodes[j].incl_a) -
            Math.abs(nodes[i].incl_b - nodes[i].incl_a) || i - j
      );
  const visit = (node: IPathDelta, key: string, depth: number) => {
    const open = expanded.has(key) && node.children.length > 0;
    rows.push({
      key,
      node,
      depth,
      hasChildren: node.children.length > 0,
      expanded: open,
      delta: node.incl_b - node.incl_a
    });
    if (open) {
      for (const i of order(node.children)) {
        visit(node.children[i], `${key}/${i}`, depth + 1);
      }
    }
  };
  for (const i of order(roots)) {
    visit(roots[i], String(i), 0);
  }
  return rows;
}

/** Keys to expand so that the most changed path (by |Δ inclusive|, followed from the
 * top) is open, down to where the change stops mattering (< `share` of its parent's). */
export function mostChangedPath(roots: IPathDelta[], share = 0.25): string[] {
  const keys: string[] = [];
  let nodes = roots;
  let key = '';
  let parentDelta = 0;
  while (nodes.length) {
    let best = 0;
    for (let i = 1; i < nodes.length; i++) {
      const d = Math.abs(nodes[i].incl_b - nodes[i].incl_a);
      if (d > Math.abs(nodes[best].incl_b - nodes[best].incl_a)) {
        best = i;
      }
    }
    const d = Math.abs(nodes[best].incl_b - nodes[best].incl_a);
    if (d === 0 || d < share * parentDelta) {
      break;
    }
    key = key ? `${key}/${best}` : String(best);
    keys.push(key);
    parentDelta = d;
    nodes = nodes[best].children;
  }
  return keys;
}
