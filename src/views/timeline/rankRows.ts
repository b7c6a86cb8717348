/**
 * How a many-rank timeline draws its ranks (an MPI run past COLLAPSE_RANKS, one row per
 * rank, rankLanes.ts): at vertical zoom `vzoom` the ranks get `vzoom` times the plot's
 * height; while one row per rank does not fit that, a heat map of ranks x time (heatmap.ts),
 * and once it does, one row per rank. Either is taller than the plot past zoom 1: the plot
 * is a window onto it, scrolled (the scroller's scrollbar), and only what is in that window
 * is drawn; in rows, only the ranks in view (and as many again above and below) are asked
 * of the server (GET timeline's `ranks=lo:hi`), so 1,024 ranks of 34 px (34,816 px, past
 * the canvas's 32,767 px) need a canvas of the plot's height and an answer of ~30 rows.
 */
import type { ITimelineShape } from '../../api/traceTypes';
import type { HeatMeasure } from '../../util/heatScale';
import type { ILayout } from './projection';
import { rankOf } from './rankLanes';

/** The least height of a heat row in CSS px (the server's columns are 2 px wide). */
export const HEAT_ROW_PX = 2;

export interface IRankMode {
  mode: 'rows' | 'heatmap';
  /** one row per rank: the ranks; a heat map: the rows to ask for */
  rows: number;
  /** the height the ranks take, px (taller than the plot when zoomed) */
  height: number;
}

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
): IRankMode {
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

/** The least zoom (a power of 2) at which every rank has its own row: the zoom's top. */
export function maxVerticalZoom(
  ranks: number,
  plotHeight: number,
  rankRowPx: number
): number {
  let z = 1;
  while (rankRows(ranks, plotHeight, rankRowPx, z).mode === 'heatmap') {
    z *= 2;
  }
  return z;
}

/** The lanes [first, end) of `layout` that show between `top` and `top + height` px. */
export function lanesInView(
  layout: ILayout,
  top: number,
  height: number
): [number, number] {
  const lanes = layout.lanes;
  const bottom = top + height;
  // lanes are stacked in order: the first whose rows end below `top`, up to the first
  // whose title starts below `bottom`
  let lo = 0;
  let hi = lanes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const l = lanes[mid];
    if (l.y + l.rows * layout.rowHeight <= top) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  let end = lo;
  while (end < lanes.length && lanes[end].y - layout.laneGap < bottom) {
    end++;
  }
  return [lo, end];
}

/** The lanes [first, end) of `layout`, moved up by `top` px: what the plot draws. */
export function scrolledLayout(
  layout: ILayout,
  range: [number, number],
  top: number
): ILayout {
  return {
    ...layout,
    lanes: layout.lanes
      .slice(range[0], range[1])
      .map(l => ({ ...l, y: l.y - top }))
  };
}

/**
 * The ranks to ask for with `inView` in view of `count`: the ranks asked last while they
 * still hold the view (scrolling within them asks nothing), else the view and as many
 * ranks again above and below it.
 */
export function ranksToAsk(
  inView: [number, number],
  count: number,
  asked: [number, number] | null
): [number, number] {
  if (asked && asked[0] <= inView[0] && inView[1] <= asked[1]) {
    return asked;
  }
  const n = Math.max(1, inView[1] - inView[0]);
  return [Math.max(0, inView[0] - n), Math.min(count, inView[1] + n)];
}

/** The scroll offset that keeps what was at the plot's middle there when the content's
 * height changes from `before` to `after` px. */
export function keepCentre(
  top: number,
  plot: number,
  before: number,
  after: number
): number {
  const centre = before > 0 ? (top + plot / 2) / before : 0;
  return clampTop(centre * after - plot / 2, plot, after);
}

function clampTop(top: number, plot: number, content: number): number {
  return Math.max(0, Math.min(top, content - plot));
}

/** "ranks 96–126 in view" from the lanes' titles ("Rank 96"); rows when they name none. */
export function inViewText(layout: ILayout, range: [number, number]): string {
  const [a, b] = range;
  if (b <= a) {
    return '';
  }
  const first = rankOf(layout.lanes[a].name);
  const last = rankOf(layout.lanes[b - 1].name);
  return first !== null && last !== null
    ? `ranks ${first}–${last} in view`
    : `rows ${a + 1}–${b} in view`;
}

/**
 * A many-rank timeline's ranks: the vertical zoom, the scroll offset and the heat map's
 * measure, and from them (for a plot `plot` px high) the mode, the lanes drawn and what to
 * ask the server for. `layout` is the rows' layout: one lane per rank.
 */
export class RankRows {
  constructor(
    readonly ranks: number,
    readonly layout: ILayout
  ) {}

  /** What the heat map's colour shows. */
  measure: HeatMeasure = 'mpi';

  get vzoom(): number {
    return this.zoom;
  }

  /** The scroll offset, px from the top of the ranks. */
  get top(): number {
    return this.scroll;
  }

  mode(plot: number): IRankMode {
    return rankRows(
      this.ranks,
      plot,
      this.layout.rowHeight + this.layout.laneGap,
      this.zoom
    );
  }

  maxZoom(plot: number): number {
    return maxVerticalZoom(
      this.ranks,
      plot,
      this.layout.rowHeight + this.layout.laneGap
    );
  }

  /** The height of what the plot scrolls through: the heat map's or the rows'. */
  contentHeight(plot: number): number {
    const mode = this.mode(plot);
    return mode.mode === 'heatmap' ? mode.height : this.layout.height;
  }

  /** Zoom to `vzoom` (1 .. maxZoom), keeping the ranks at the plot's middle there;
   * whether it changed. */
  setZoom(vzoom: number, plot: number): boolean {
    const next = Math.min(Math.max(1, vzoom), this.maxZoom(plot));
    if (next === this.zoom) {
      return false;
    }
    const before = this.contentHeight(plot);
    this.zoom = next;
    this.scroll = keepCentre(
      this.scroll,
      plot,
      before,
      this.contentHeight(plot)
    );
    return true;
  }

  scrollTo(top: number, plot: number): void {
    this.scroll = clampTop(top, plot, this.contentHeight(plot));
  }

  /** The lanes in view, one row per rank (none in a heat map). */
  inView(plot: number): [number, number] {
    if (this.mode(plot).mode === 'heatmap') {
      return [0, 0];
    }
    return lanesInView(this.layout, this.scroll, plot);
  }

  /** What to ask the server for: a heat map's rows, or the ranks about the view. */
  request(plot: number, locations: number): ITimelineShape {
    const mode = this.mode(plot);
    if (mode.mode === 'heatmap') {
      this.asked = null;
      return { rows: Math.min(mode.rows, locations - 1) };
    }
    const view = this.inView(plot);
    if (view[0] === 0 && view[1] === this.ranks) {
      this.asked = null;
      return {};
    }
    this.asked = ranksToAsk(view, this.ranks, this.asked);
    return { ranks: this.asked };
  }

  /** Whether the ranks in view left those asked for last (then ask again). */
  needsRequest(plot: number): boolean {
    if (this.mode(plot).mode === 'heatmap') {
      return false;
    }
    const view = this.inView(plot);
    const asked = this.asked ?? [0, this.ranks];
    return view[0] < asked[0] || view[1] > asked[1];
  }

  private zoom = 1;
  private scroll = 0;
  private asked: [number, number] | null = null;
}
