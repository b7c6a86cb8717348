/**
 * The server extension's REST API as TypeScript types: what each endpoint answers
 * (docs/API.md). The client that asks is apiClient.ts.
 *
 * Every time is integer nanoseconds since the run's start.
 */

export const MIME_TYPE = 'application/vnd.scorep.experiment+json';

// The experiment contract's words (kernel/scorep_kernel/experiment.py; docs/API.md).
// server_ext/tests/test_contract.py checks that these unions list exactly its values.
export type Backend = 'scorep' | 'builtin';
export type Isolation = 'subprocess' | 'inprocess';
export type RunStatus = 'running' | 'ok' | 'error' | 'interrupted' | 'crashed';
/** Whether the server may read the run's files yet ("unavailable": nothing was measured). */
export type FilesStatus = 'pending' | 'ready' | 'failed' | 'unavailable';
export type RegionRole =
  | 'function'
  | 'user'
  | 'import'
  | 'cell'
  | 'artificial'
  | 'operator'
  | 'runtime'
  | 'kernel'
  | 'memcpy'
  | 'memset';

/** One cell of a run: JupyterLab's cellId, the execution count, its source and hash. */
export interface IManifestCell {
  cell_id?: string | null;
  execution_count?: number;
  code?: string;
  source_sha256?: string;
}

export interface IManifest {
  format_version: number;
  id: string;
  backend: Backend;
  isolation?: Isolation;
  status: RunStatus;
  /** The notebook's path relative to the server root (when the kernel knew it). */
  notebook?: string | null;
  cells?: IManifestCell[];
  start_ns?: number;
  end_ns?: number | null;
  /** the cells' time: their regions on the threads that ran them (one definition) */
  wall_s?: number | null;
  /** the run's elapsed time in the kernel (run_s - wall_s: the measurement's own cost) */
  run_s?: number | null;
  /** the split of wall_s (builtin runs) */
  cell_time?: ICellTime | null;
  hostname?: string;
  python_version?: string;
  files?: Record<string, string>;
  measurement?: IMeasurement;
  files_status?: FilesStatus;
  errors?: (string | { message?: string })[];
  [key: string]: unknown;
}

/**
 * The manifest's `measurement`: the builtin tracer's notes (events, dropped, cap_reached,
 * messages ...) or, for a Score-P run, what measured it and how.
 */
export interface IMeasurement {
  /** what measured the run, with its version ("Score-P 8.4") */
  tool?: string;
  /** Score-P's effective configuration as it wrote it (scorep.cfg): SCOREP_* -> value */
  scorep_config?: Record<string, string>;
  /** Score-P's own lines among the worker's output ("[Score-P] ...") */
  scorep_messages?: string[];
  /** what Score-P said, in words (cause and fix) */
  notes?: string[];
  [key: string]: unknown;
}

export interface IVersion {
  version: string;
  scorep: {
    available: boolean;
    scorep_config: string | null;
    bindings: boolean;
    message?: string;
    /** Score-P's scorep-score, which GET score runs (null: not found) */
    scorep_score?: string | null;
  };
  tools: { vampir: string | null; cube: string | null };
}

export interface ITraceLocation {
  id: number;
  name: string;
  group?: string;
  kind?: string;
  max_depth: number;
}

export interface IExperiment {
  path: string;
  manifest: IManifest;
  available: { otf2: boolean; cubex: boolean; metrics: boolean };
  tools: { vampir: boolean; cube: boolean };
  trace: {
    range: [number, number];
    origin_epoch_ns: string;
    events: number;
    locations: ITraceLocation[];
    notes?: string[];
  } | null;
  /** Why `trace` is null although the trace exists (it cannot be read). */
  trace_error?: string;
}

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

export interface IVerdict {
  kind: 'cpu' | 'memory' | 'io' | 'network' | 'gpu' | 'trace' | string;
  level: 'info' | 'warning';
  text: string;
  numbers?: Record<string, number>;
}

/** The cells' time (their regions on the thread that ran them) and its split: running on a
 * CPU, queued for one (the machine's load), waiting (sleep, lock, I/O, device, MPI). The
 * split is null where the measurement did not read the threads' clocks (Score-P runs). */
export interface ICellTime {
  time_s: number;
  cpu_s: number | null;
  queue_s: number | null;
  wait_s: number | null;
}

export interface ISummary {
  /** the cells' time: their regions on the thread that ran them (one definition) */
  wall_s: number;
  events: number;
  status: RunStatus;
  /** ranked by what the user can speed up (IFunctionStat.effective_s) */
  top_regions: {
    name: string;
    excl_s: number;
    incl_s: number;
    visits: number;
    pct: number;
    cpu_s?: number;
    wait_s?: number;
  }[];
  verdicts: IVerdict[];
  /** every function by exclusive time (at most 1,000; functions_total counts all) */
  functions?: IFunctionStat[];
  functions_total?: number;
  /** own time of the measurement's top-level region (Score-P's python3.11) */
  outside_s?: number;
  /** the accelerators' analysis (GET device), null without device streams */
  device?: IDeviceAnalysis | null;
  /** the split of the cells' time, null where not measured */
  cell_time?: ICellTime | null;
  /** the run's elapsed time in the kernel: run_s - wall_s is the measurement's own cost */
  run_s?: number | null;
}

/** GET device (docs/API.md): what the accelerators did during the cell. */
export interface IDeviceAnalysis {
  cell_s: number;
  busy_s: number;
  busy_pct: number;
  idle_s: number;
  idle_pct: number;
  idle_pct_of_span: number;
  idle_by_cause: Record<'input' | 'sync' | 'host' | 'other', number>;
  idle_by_cause_pct: Record<'input' | 'sync' | 'host' | 'other', number>;
  input_pipeline_s: number;
  input_pipeline_pct: number;
  host_sync_s: number;
  overlap_s: number;
  overlap_pct_of_busy: number | null;
  streams: {
    location: number;
    name: string;
    group: string;
    busy_s: number;
    activities: number;
  }[];
  kernels: number;
  linked: number;
  top_kernels: { name: string; device_s: number; count: number; pct: number }[];
  top_operators: {
    name: string;
    device_s: number;
    activities: number;
    pct: number;
  }[];
  memcpy: Record<
    string,
    { count: number; bytes: number; seconds: number; rate_gb_s: number | null }
  >;
  memset: { count: number; seconds: number };
  verdict: IVerdict;
}

/** GET link: the other ends of a span's launch links. */
export interface ILink {
  correlation: number;
  location: number;
  start: number;
  end: number;
  kind: 'launch' | 'device';
}

export interface IFunctionStat {
  name: string;
  module: string;
  excl_s: number;
  incl_s: number;
  visits: number;
  /** of excl_s: running on a CPU, queued for one, waiting; null without the split */
  cpu_s?: number | null;
  queue_s?: number | null;
  wait_s?: number | null;
  /** what the user can speed up: running on any thread plus waiting on the cell's
   * thread (without the split: its own time on the cell's thread); GET summary ranks by it */
  effective_s?: number;
}

/** The kernel's display_data payload for a profiled cell. */
export interface IExperimentBundle {
  id: string;
  path: string;
  backend: Backend;
  isolation?: Isolation;
  status: RunStatus;
  run?: string | null;
  cell_index_in_run?: number;
  /** what measured the run, with its version ("Score-P 8.4"), when the kernel knew it */
  tool?: string;
  summary?: {
    wall_s?: number;
    events?: number;
    top?: [string, number][];
    message?: string;
  };
  /** an MPI cell's run: its ranks and the hosts they ran on */
  mpi?: { ranks: number; hosts?: string[] };
  /**
   * tools the panel opens the run's files in once they are ready, once per experiment
   * (`%%enable_vampir_launch_on_scorep_instrumented`: `["vampir"]`)
   */
  open?: ToolKind[];
}

/** One rank of GET ranks (docs/API.md). */
export interface IRankRow {
  rank: number;
  name: string;
  locations: number[];
  cell_s: number;
  mpi_s: number;
  compute_s: number;
  bytes_sent: number;
  messages_sent: number;
  collective_calls: number;
  collective_bytes_sent: number;
  collective_bytes_received: number;
}

/** GET ranks: an MPI run's processes and who sent how much to whom. */
export interface IRanks {
  ranks: IRankRow[];
  load_balance: number | null;
  imbalance_pct: number | null;
  slowest_rank: number | null;
  communication_share: number | null;
  /** row = sending rank, column = receiving rank */
  matrix: { bytes: number[][]; messages: number[][] };
  received: { bytes: number; messages: number }[];
  unmatched: number;
  mpi: Record<string, unknown> | null;
}

/** One run of a cell (GET experiments?notebook=&cell=). */
export interface IRunEntry {
  path: string;
  manifest: IManifest;
  disk_bytes: number;
}

export interface IRuns {
  experiments: IRunEntry[];
  notebook: string | null;
  cell: string | null;
  disk: { notebook_bytes: number; notebook_runs: number };
}

/** The experiments GET experiments lists without notebook and cell. */
export interface IExperimentList {
  experiments: { path: string; manifest: IManifest }[];
}

/** A run's facts in GET compare. */
export interface ICompareRun {
  path: string;
  id: string;
  backend: Backend;
  isolation?: Isolation;
  status: RunStatus;
  start_ns?: number | null;
  wall_s?: number | null;
  notebook?: string | null;
  cells: IManifestCell[];
  source: 'cubex' | 'trace';
  /** the trace's range, ns since the run's start; null without a trace */
  range: [number, number] | null;
  /** the cells' first enter and last leave in the trace (where the timelines align) */
  cell_span: [number, number] | null;
  metrics: boolean;
}

export type ChangeStatus = 'both' | 'added' | 'removed';
export type VerdictKind = 'slower' | 'faster' | 'within_noise';

export interface IFunctionDelta {
  name: string;
  key: string;
  module: string;
  status: ChangeStatus;
  excl_a: number;
  excl_b: number;
  excl_delta: number;
  excl_pct: number | null;
  incl_a: number;
  incl_b: number;
  incl_delta: number;
  incl_pct: number | null;
  visits_a: number;
  visits_b: number;
  visits_delta: number;
  visits_pct: number | null;
  time_changed: boolean;
  visits_changed: boolean;
  /** IFunctionStat.effective_s in A and B; the verdict names by its Δ */
  effective_a?: number;
  effective_b?: number;
  effective_delta?: number;
  /** running and waiting time in A and B; null where either run lacks the split */
  cpu_a?: number | null;
  cpu_b?: number | null;
  wait_a?: number | null;
  wait_b?: number | null;
}

export interface IPathDelta {
  name: string;
  key: string;
  status: ChangeStatus;
  incl_a: number;
  incl_b: number;
  excl_a: number;
  excl_b: number;
  visits_a: number;
  visits_b: number;
  children: IPathDelta[];
}

export interface INoise {
  rel: number;
  floor_s: number;
  function_floor_s: number;
  basis: string;
  runs: number;
}

export interface IRunVerdict {
  kind: VerdictKind;
  sentence: string;
  a_s: number;
  b_s: number;
  delta_s: number;
  delta_pct: number | null;
  threshold_s: number;
  noise: INoise;
  function: string | null;
  /** what a_s / b_s are: the cells' time ('time') or the cells' time less what they were
   * queued for a CPU ('time_less_queued', where both runs carry the split) */
  basis?: 'time' | 'time_less_queued';
  /** the cells' time in A and B, whatever the basis */
  cells_a_s?: number;
  cells_b_s?: number;
}

/** GET compare?a=&b=: run b against run a (the baseline); Δ = b − a, in seconds. */
export interface IComparison {
  a: ICompareRun;
  b: ICompareRun;
  same_source: boolean;
  total: {
    a_s: number;
    b_s: number;
    delta_s: number;
    delta_pct: number | null;
  };
  outside: { a_s: number; b_s: number };
  verdict: IRunVerdict;
  functions: IFunctionDelta[];
  tree: IPathDelta[];
  truncated?: {
    functions_dropped: number;
    paths_dropped: number;
    max_functions: number;
    max_paths: number;
  };
}

/** One row of scorep-score's tables: a region type (ALL, USR, COM, SCOREP ...) or a region. */
export interface IScoreRow {
  type: string;
  /** the region's name (region rows only) */
  name?: string;
  max_buf_bytes: number;
  visits: number;
  time_s: number;
  time_pct: number;
  time_per_visit_us: number;
  /** with a filter: "+" filtered, "-" not, "*" in part */
  flt?: '+' | '-' | '*';
}

/** scorep-score's estimate: sizes as it printed them, and in bytes. */
export interface IScoreEstimate {
  trace?: string;
  trace_bytes?: number | null;
  max_buf?: string;
  max_buf_bytes?: number | null;
  total_memory?: string;
  total_memory_bytes?: number | null;
  hint?: string;
}

/** GET score: Score-P's own view of a run (docs/API.md). */
export interface IScore {
  tool: string | null;
  /** what the suggested filter leaves out (scorep-score -g's KEY=VALUE list) */
  heuristics?: string;
  estimate: IScoreEstimate;
  types: IScoreRow[];
  regions: IScoreRow[];
  regions_total: number;
  filter: {
    heuristics: string;
    regions: IScoreRow[];
    estimate: IScoreEstimate;
    types: IScoreRow[];
    text: string;
  } | null;
  configured: {
    SCOREP_TOTAL_MEMORY?: string | null;
    SCOREP_FILTERING_FILE?: string | null;
  };
  /** the filter POST filter wrote for this run, when it exists */
  applied: string | null;
}

/** POST filter's answer: where the filter file went. */
export interface IFilterApplied {
  path: string;
  /** relative to the server root, null outside it */
  root_path: string | null;
  regions: string[];
  /** the filter the run used, whose rules the new file keeps */
  merged: string | null;
}

export type DownloadKind = 'otf2' | 'cubex' | 'perfetto';
export type ToolKind = 'vampir' | 'cube';
