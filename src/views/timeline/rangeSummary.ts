/**
 * What the Perfetto and DevTools timelines offer beside the drawing: searching the regions
 * by name, and a selected time range summarised (the functions in it, by their time there).
 */
import type { IRegionInfo } from '../../api/traceTypes';
import { formatDuration } from '../../util/timeaxis';
import type { IDrawList } from './projection';

/** The ids of the regions whose name contains `query` (case-insensitive); empty: none. */
export function regionIdsMatching(
  regions: Record<string, IRegionInfo>,
  query: string
): Set<number> {
  const q = query.trim().toLowerCase();
  const ids = new Set<number>();
  if (!q) {
    return ids;
  }
  for (const [id, info] of Object.entries(regions)) {
    if (info.name.toLowerCase().includes(q)) {
      ids.add(Number(id));
    }
  }
  return ids;
}

export interface IRangeEntry {
  name: string;
  /** the region's time inside the range, summed over its spans (inclusive) */
  ns: number;
  /** calls (spans, merged ones counted by their calls) that overlap the range */
  calls: number;
}

/**
 * The regions of the spans drawn that overlap [t0, t1], by their time inside it (each span
 * clipped to the range; nested calls count for each of their regions, as inclusive time).
 * A span merging several calls counts as its whole clipped extent.
 */
export function summariseRange(
  list: IDrawList,
  regions: Record<string, IRegionInfo>,
  t0: number,
  t1: number
): IRangeEntry[] {
  const by = new Map<number, IRangeEntry>();
  for (let k = 0; k < list.n; k++) {
    const a = Math.max(t0, list.start[k]);
    const b = Math.min(t1, list.end[k]);
    if (b <= a && !(list.start[k] >= t0 && list.end[k] <= t1)) {
      continue;
    }
    const id = list.region[k];
    let e = by.get(id);
    if (!e) {
      e = {
        name: regions[String(id)]?.name ?? `region ${id}`,
        ns: 0,
        calls: 0
      };
      by.set(id, e);
    }
    e.ns += Math.max(0, b - a);
    e.calls += Math.max(1, list.count[k]);
  }
  return [...by.values()].sort(
    (x, y) => y.ns - x.ns || x.name.localeCompare(y.name)
  );
}

/** One line: "Measured 120 ms (40 ms – 160 ms): grow 98 ms (1×) · …" (the top `n`). */
export function rangeText(
  entries: IRangeEntry[],
  t0: number,
  t1: number,
  n = 6
): string {
  const head = `Measured ${formatDuration(t1 - t0)} (${formatDuration(t0)} – ${formatDuration(t1)})`;
  if (!entries.length) {
    return `${head}: no calls in it.`;
  }
  const top = entries
    .slice(0, n)
    .map(
      e => `${e.name} ${formatDuration(e.ns)} (${e.calls.toLocaleString()}×)`
    )
    .join(' · ');
  const more = entries.length > n ? ` · +${entries.length - n} more` : '';
  return `${head}: ${top}${more}`;
}
