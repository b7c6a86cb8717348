/**
 * What the panel's trace views read (docs/API.md): GET timeline (the regions and the rows
 * of a window), GET calltree, GET metrics and GET link. The run's own types are in
 * experimentTypes.ts.
 *
 * Every time is integer nanoseconds since the run's start.
 */
import type { RegionRole } from './experimentTypes';

export interface IRegionInfo {
  name: string;
  group: string;
  file?: string | null;
  line?: number | null;
  role?: RegionRole;
}

export interface ITimelineRow {
  depth: number;
  start: number[];
  end: number[];
  region: number[];
  count: number[];
}

export interface ITimelineLocation {
  id: number;
  name: string;
  max_depth: number;
  rows: ITimelineRow[];
}

export interface ITimeline {
  window: [number, number];
  width: number;
  /** The ns per pixel actually used to merge (coarser than asked for huge responses). */
  px_ns?: number;
  range: [number, number];
  regions: Record<string, IRegionInfo>;
  locations: ITimelineLocation[];
  /** with `rows` asked for and more locations than that: the summary instead of the rows
   * (then `locations` and `regions` are empty) */
  heatmap?: ITimelineHeatmap;
  /** with `ranks` asked for: the processes answered, `[lo, min(hi, processes)]` */
  ranks?: [number, number];
}

/** What of the locations GET timeline answers for (docs/API.md). */
export interface ITimelineShape {
  /** how many locations the client draws one per row: with more, the answer is a heat map */
  rows?: number;
  /** only processes (ranks) lo..hi-1, in rank order: the rows in view */
  ranks?: [number, number];
}

/** One row of the heat map: a bucket of consecutive locations. */
export interface IHeatmapRow {
  locations: number[];
  /** the rows' location groups (ranks) in order, each once */
  groups: string[];
}

/**
 * GET timeline's summary of many locations (docs/API.md): `rows x columns` bytes, row-major,
 * base64; per cell the share (0..255 for 0..100 %) of the bucket's locations' time inside a
 * top-level call (`active`) and inside MPI calls (`mpi`). Column j covers
 * `[window[0] + j * column_ns, window[0] + (j + 1) * column_ns)`.
 */
export interface ITimelineHeatmap {
  rows: IHeatmapRow[];
  columns: number;
  column_ns: number;
  encoding: 'base64-uint8';
  active: string;
  mpi: string;
}

export interface ICallNode {
  id: number;
  name: string;
  group?: string;
  file?: string | null;
  line?: number | null;
  incl_s: number;
  excl_s: number;
  visits: number;
  min_s: number;
  max_s: number;
  children: ICallNode[];
}

export interface ICallTree {
  source: 'cubex' | 'trace';
  location: number | null;
  total_s: number;
  locations: { id: number; name: string }[];
  root: ICallNode;
  truncated?: { nodes_dropped: number; max_nodes: number };
}

export interface IMetricSeries {
  key: string;
  label: string;
  unit: string;
  group: 'cpu' | 'memory' | 'io' | 'network' | 'gpu' | string;
  t: number[];
  /** per bucket; null where the bucket's samples had no value (JSON has no NaN) */
  mean: (number | null)[];
  min: (number | null)[];
  max: (number | null)[];
}

export interface IMetrics {
  window: [number, number];
  notes: string[];
  /** Sampling interval in seconds (absent for metrics read from the trace). */
  interval_s?: number | null;
  series: IMetricSeries[];
}

/** GET link: the other ends of a span's launch links. */
export interface ILink {
  correlation: number;
  location: number;
  start: number;
  end: number;
  kind: 'launch' | 'device';
}
