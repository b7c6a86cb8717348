/**
 * Level of detail: a `GET timeline` response (time coordinates) → what to draw on the canvas
 * (pixel coordinates) for the current view. The server already merged intervals shorter than
 * a pixel, so a response holds at most about `width` spans per row; projecting it again at
 * draw time lets the view pan and zoom smoothly while the next window is being fetched.
 */
import type { ITraceLocation } from '../../api/experimentTypes';
import type { IRegionInfo, ITimeline } from '../../api/traceTypes';

export interface IView {
  /** left edge, ns since the run's start */
  t0: number;
  /** right edge, ns since the run's start */
  t1: number;
}

export interface ILane {
  id: number;
  name: string;
  /** top of the lane's first row, px */
  y: number;
  /** rows in the lane: max_depth + 1 */
  rows: number;
  /**
   * draw every depth in the lane's one row, deeper calls over shallower ones (Vampir's
   * master timeline: what runs at each moment), for one row per MPI rank (rankLanes.ts)
   */
  flatten?: boolean;
}

export interface ILayout {
  lanes: ILane[];
  rowHeight: number;
  laneGap: number;
  height: number;
}

/** Stack one lane per location, one row per call depth. */
export function layoutLanes(
  locations: Pick<ITraceLocation, 'id' | 'name' | 'max_depth'>[],
  rowHeight = 18,
  laneGap = 16
): ILayout {
  const lanes: ILane[] = [];
  let y = 0;
  for (const loc of locations) {
    y += laneGap; // room for the lane's title
    const rows = Math.max(1, (loc.max_depth ?? 0) + 1);
    lanes.push({ id: loc.id, name: loc.name, y, rows });
    y += rows * rowHeight;
  }
  return { lanes, rowHeight, laneGap, height: y };
}

/** Rectangles to draw, in CSS pixels, as parallel arrays (cheap for 100k+ spans). */
export interface IDrawList {
  n: number;
  x: Float64Array;
  y: Float64Array;
  w: Float64Array;
  region: Int32Array;
  count: Int32Array;
  /** start/end in ns, for tooltips and labels */
  start: Float64Array;
  end: Float64Array;
}

export function emptyDrawList(capacity = 0): IDrawList {
  return {
    n: 0,
    x: new Float64Array(capacity),
    y: new Float64Array(capacity),
    w: new Float64Array(capacity),
    region: new Int32Array(capacity),
    count: new Int32Array(capacity),
    start: new Float64Array(capacity),
    end: new Float64Array(capacity)
  };
}

/** Convert a time to a pixel position in the view. */
export function timeToX(t: number, view: IView, width: number): number {
  return ((t - view.t0) / (view.t1 - view.t0)) * width;
}

/** Convert a pixel position to a time in the view. */
export function xToTime(x: number, view: IView, width: number): number {
  return view.t0 + (x / width) * (view.t1 - view.t0);
}

/**
 * Project a timeline response onto the view. Spans outside the view are dropped, spans are
 * clipped to the canvas and given at least `minWidth` px so a single short call stays visible.
 * Adjacent spans of the same region that fall into the same pixel are merged (they would be
 * drawn over each other anyway), which keeps a zoomed-out frame cheap.
 */
export function toDrawList(
  data: ITimeline,
  layout: ILayout,
  view: IView,
  width: number,
  minWidth = 1
): IDrawList {
  let total = 0;
  for (const loc of data.locations) {
    for (const row of loc.rows) {
      total += row.start.length;
    }
  }
  const out = emptyDrawList(total);
  const laneById = new Map(layout.lanes.map(l => [l.id, l]));
  const span = view.t1 - view.t0;
  if (!(span > 0) || !(width > 0)) {
    return out;
  }
  const scale = width / span;
  for (const loc of data.locations) {
    const lane = laneById.get(loc.id);
    if (!lane) {
      continue;
    }
    // flattened: shallow first, so the deeper calls are drawn (and hit) on top
    const rows = lane.flatten
      ? [...loc.rows].sort((a, b) => a.depth - b.depth)
      : loc.rows;
    for (const row of rows) {
      if (row.depth >= lane.rows && !lane.flatten) {
        continue;
      }
      const y = lane.flatten ? lane.y : lane.y + row.depth * layout.rowHeight;
      let lastRight = -Infinity;
      let lastIndex = -1;
      for (let i = 0; i < row.start.length; i++) {
        const s = row.start[i];
        const e = row.end[i];
        if (e < view.t0 || s > view.t1) {
          continue;
        }
        let x0 = (s - view.t0) * scale;
        let x1 = (e - view.t0) * scale;
        x0 = Math.max(x0, -1);
        x1 = Math.min(x1, width + 1);
        if (x1 - x0 < minWidth) {
          x1 = x0 + minWidth;
        }
        const region = row.region[i];
        if (
          lastIndex >= 0 &&
          out.region[lastIndex] === region &&
          x0 - lastRight < 0.5 &&
          x1 - out.x[lastIndex] < 2 * minWidth + 1
        ) {
          // same region, same pixel: widen the previous rectangle
          out.w[lastIndex] = Math.max(out.w[lastIndex], x1 - out.x[lastIndex]);
          out.count[lastIndex] += row.count[i] ?? 1;
          out.end[lastIndex] = Math.max(out.end[lastIndex], e);
          lastRight = out.x[lastIndex] + out.w[lastIndex];
          continue;
        }
        const k = out.n++;
        out.x[k] = x0;
        out.y[k] = y;
        out.w[k] = x1 - x0;
        out.region[k] = region;
        out.count[k] = row.count[i] ?? 1;
        out.start[k] = s;
        out.end[k] = e;
        lastRight = x1;
        lastIndex = k;
      }
    }
  }
  return out;
}

/** Index of the rectangle under (x, y), or -1. Later rectangles win (drawn on top). */
export function hitTest(
  list: IDrawList,
  rowHeight: number,
  x: number,
  y: number
): number {
  for (let k = list.n - 1; k >= 0; k--) {
    if (
      y >= list.y[k] &&
      y < list.y[k] + rowHeight &&
      x >= list.x[k] &&
      x <= list.x[k] + Math.max(list.w[k], 1)
    ) {
      return k;
    }
  }
  return -1;
}

/** Region ids of a response whose name equals `name` (a call-tree node's region). */
export function regionIdsNamed(
  regions: Record<string, IRegionInfo>,
  name: string
): Set<number> {
  const ids = new Set<number>();
  for (const [id, info] of Object.entries(regions)) {
    if (info.name === name) {
      ids.add(Number(id));
    }
  }
  return ids;
}

/** Clamp a view to the trace range, keeping its span (or the whole range if larger). */
export function clampView(
  view: IView,
  range: [number, number],
  minSpan = 1000
): IView {
  const full = range[1] - range[0];
  let span = Math.max(
    Math.min(view.t1 - view.t0, full),
    Math.min(minSpan, full)
  );
  if (!(span > 0)) {
    span = 1;
  }
  let t0 = view.t0;
  if (t0 < range[0]) {
    t0 = range[0];
  }
  if (t0 + span > range[1]) {
    t0 = Math.max(range[0], range[1] - span);
  }
  return { t0, t1: t0 + span };
}

/** Zoom by `factor` (<1 zooms in) keeping the time under `anchorX` px fixed. */
export function zoomAround(
  view: IView,
  width: number,
  anchorX: number,
  factor: number
): IView {
  const anchor = xToTime(anchorX, view, width);
  const t0 = anchor - (anchor - view.t0) * factor;
  const t1 = anchor + (view.t1 - anchor) * factor;
  return { t0, t1 };
}

/** Pan by `dx` px (positive moves the content right, i.e. earlier times come into view). */
export function panBy(view: IView, width: number, dx: number): IView {
  const dt = (dx / width) * (view.t1 - view.t0);
  return { t0: view.t0 - dt, t1: view.t1 - dt };
}

/** Does the fetched window cover the view well enough at the current resolution? */
export function windowCovers(
  fetched: { window: [number, number]; width: number } | null,
  view: IView,
  width: number
): boolean {
  if (!fetched) {
    return false;
  }
  const [f0, f1] = fetched.window;
  if (view.t0 < f0 || view.t1 > f1) {
    return false;
  }
  // resolution: ns per px of the fetched data vs. the view's
  const fetchedNsPerPx = (f1 - f0) / Math.max(1, fetched.width);
  const viewNsPerPx = (view.t1 - view.t0) / Math.max(1, width);
  return fetchedNsPerPx <= viewNsPerPx * 1.5;
}
