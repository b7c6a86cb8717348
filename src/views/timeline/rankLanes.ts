/**
 * The timeline's lanes for a run of several processes (an MPI cell: one OTF2 location group
 * per rank): lanes grouped and ordered by rank, titled "Rank 2 · Master thread". With more
 * than COLLAPSE_RANKS ranks the timeline shows one row per rank instead: each rank's first
 * thread, every call depth drawn into that one row, deeper calls on top (Vampir's master
 * timeline: what each rank runs at each moment), since 64 ranks of 10 rows at 18 px would
 * be 11,000 px tall. A trace of one process keeps one lane per location, as before.
 */
import type { ITraceLocation } from '../../api/experimentTypes';
import { ILayout, layoutLanes } from './projection';

/** More ranks than this: one row per rank (8 ranks of ~10 rows fill a screen already). */
export const COLLAPSE_RANKS = 8;

type Loc = Pick<ITraceLocation, 'id' | 'name' | 'max_depth' | 'group' | 'kind'>;

/** The rank of a location group named as Score-P names them ("MPI Rank 3"), or null. */
export function rankOf(group: string | undefined): number | null {
  const m = /rank\s*(\d+)\s*$/i.exec(group ?? '');
  return m ? Number(m[1]) : null;
}

/** The processes of a trace in rank order, each with its locations in trace order. */
export function processes(
  locations: Loc[]
): { group: string; locations: Loc[] }[] {
  const byGroup = new Map<string, Loc[]>();
  for (const loc of locations) {
    const key = loc.group ?? '';
    if (!byGroup.has(key)) {
      byGroup.set(key, []);
    }
    byGroup.get(key)!.push(loc);
  }
  const groups = [...byGroup.entries()].map(([group, locs], order) => ({
    group,
    locations: locs,
    order,
    rank: rankOf(group)
  }));
  // by rank when every group names one (the server's order for ranks=lo:hi, processes.py),
  // else as they first appear
  if (groups.every(g => g.rank !== null)) {
    groups.sort((a, b) => a.rank! - b.rank! || a.order - b.order);
  }
  return groups.map(({ group, locations }) => ({ group, locations }));
}

function processTitle(group: string, order: number): string {
  const rank = rankOf(group);
  return rank !== null ? `Rank ${rank}` : group || `Process ${order}`;
}

/**
 * The lanes of `locations`: as `layoutLanes` for one process; grouped by rank for several;
 * one flattened row per rank above `collapse` ranks (unless `expand`).
 */
export function layoutTimeline(
  locations: Loc[],
  options: { collapse?: number; expand?: boolean } = {}
): ILayout & { collapsed: boolean } {
  const procs = processes(locations);
  if (procs.length < 2) {
    return { ...layoutLanes(locations), collapsed: false };
  }
  const collapse = options.collapse ?? COLLAPSE_RANKS;
  if (procs.length > collapse && !options.expand) {
    const firsts = procs.map((p, i) => ({
      ...p.locations[0],
      name: processTitle(p.group, i)
    }));
    const layout = layoutLanes(
      firsts.map(l => ({ ...l, max_depth: 0 })),
      18,
      16
    );
    layout.lanes.forEach(lane => (lane.flatten = true));
    return { ...layout, collapsed: true };
  }
  const ordered = procs.flatMap((p, i) =>
    p.locations.map(l => ({
      ...l,
      name: `${processTitle(p.group, i)} · ${l.name}`
    }))
  );
  return { ...layoutLanes(ordered), collapsed: false };
}
