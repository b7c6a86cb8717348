/**
 * What the server's analyses answer (docs/API.md): GET summary and its verdicts, GET device,
 * GET ranks, GET compare (run b against run a), GET score and POST filter. The run's own
 * types are in experimentTypes.ts.
 */
import type {
  Backend,
  ICellTime,
  IManifestCell,
  Isolation,
  RunStatus
} from './experimentTypes';

export interface IVerdict {
  kind: 'cpu' | 'memory' | 'io' | 'network' | 'gpu' | 'trace' | string;
  level: 'info' | 'warning';
  text: string;
  numbers?: Record<string, number>;
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

export interface IFunctionStat {
  /** the function's name; an anonymous one's with its place (`__main__:<listcomp> cell [3]:5`) */
  name: string;
  /** the region's name where `name` adds the place, for finding its calls in the trace */
  region?: string;
  /** the region's group as the timeline has it (what the views colour by) */
  group?: string;
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

/** The non-zero cells of the communication matrix (GET ranks?matrix=pairs). */
export interface IMatrixPairs {
  sender: number[];
  receiver: number[];
  bytes: number[];
  messages: number[];
}

export interface IRankMatrix {
  bytes: number[][];
  messages: number[][];
  /** the number of ranks (with `pairs`) */
  size?: number;
  pairs?: IMatrixPairs;
}

/** GET ranks: an MPI run's processes and who sent how much to whom. */
export interface IRanks {
  ranks: IRankRow[];
  load_balance: number | null;
  imbalance_pct: number | null;
  slowest_rank: number | null;
  communication_share: number | null;
  /** up to 5 ranks by compute_s, slowest first */
  slowest_ranks?: number[];
  /** row = sending rank, column = receiving rank; with `matrix=pairs` the dense arrays are
   * empty and `pairs` holds the non-zero cells, row-major */
  matrix: IRankMatrix;
  received: { bytes: number; messages: number }[];
  unmatched: number;
  mpi: Record<string, unknown> | null;
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
  /** what a_s / b_s are: the cells' time ('time'), the cells' time less what they were
   * queued for a CPU ('time_less_queued', where both runs carry the split), their running
   * time when CPU-bound ('running'), or that with run B's machine speed taken out
   * ('running_normalised': b_s = B's running time × speed) */
  basis?: 'time' | 'time_less_queued' | 'running' | 'running_normalised';
  /** run B's machine speed as a share of run A's (reference workload), with
   * 'running_normalised' */
  speed?: number | null;
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
