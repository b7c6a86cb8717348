/**
 * The server extension's REST API as TypeScript types (docs/API.md), the run's side: the
 * experiment contract's words, the manifest, GET experiment and experiments, the kernel's
 * display bundle and the export kinds. What the trace's views read is in traceTypes.ts,
 * the analyses in analysisTypes.ts; the client that asks is apiClient.ts.
 *
 * Every time is integer nanoseconds since the run's start.
 */

export const MIME_TYPE = 'application/vnd.scorep.experiment+json';

// The experiment contract's words (kernel/scorep_kernel/manifest.py, region_words.py;
// docs/API.md).
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
  /** when the cell's region began (epoch ns), once it ran */
  start_ns?: number;
}

/** A process that will say how the run ended (the kernel, a worker). */
export interface IManifestWriter {
  pid?: number;
  host?: string;
  boot_id?: string;
  /** the process's start, clock ticks since boot */
  start?: number | null;
}

/** An MPI run's ranks and how they were launched. */
export interface IManifestMpi {
  ranks?: number;
  launcher?: string | null;
  launcher_kind?: string | null;
  launcher_args?: string[];
  library?: string;
  kept?: boolean;
  cells_on_ranks?: number;
  /** hostname -> its ranks */
  hosts?: Record<string, number[]>;
  gather?: string[];
  timeout?: number | null;
  /** rank -> its clock onto the kernel's (slope, offset_ns, rtt_ns, probes) */
  clocks?: Record<string, Record<string, number>>;
}

/** An imported trace's origin (POST import). */
export interface IManifestSource {
  kind?: string;
  trace?: string;
}

export interface IManifestError {
  message?: string;
}

/**
 * manifest.json (kernel/scorep_kernel/manifest.py's Manifest; server_ext/tests/
 * test_contract.py checks that the fields, their optionality and types agree).
 */
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
  python_executable?: string;
  scorep_env?: Record<string, string>;
  binding_args?: string[];
  /** Score-P's binding arguments the builtin tracer does not apply */
  binding_args_not_applicable?: string[];
  files?: Record<string, string>;
  measurement?: IMeasurement;
  files_status?: FilesStatus;
  errors?: (string | IManifestError)[];
  writers?: IManifestWriter[];
  /** phase -> seconds: where the cells' time in the kernel went */
  timings?: Record<string, number>;
  /** Score-P's thread location -> the Python thread's name */
  thread_names?: Record<string, string>;
  /** an MPI run under Score-P: per location group ("MPI Rank r"), Score-P's thread
   * location -> the Python thread's name (names repeat across ranks) */
  group_thread_names?: Record<string, Record<string, string>>;
  /** the multi-cell run this experiment belongs to (the cell metadata's "run") */
  run?: string;
  mpi?: IManifestMpi;
  /** `python -m scorep_kernel.script`: the script that ran */
  script?: string;
  source?: IManifestSource;
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
  /** torch.profiler with a builtin run */
  accelerator?: IAcceleratorNotes;
  [key: string]: unknown;
}

/** The measurement's `accelerator` (manifest.py's AcceleratorNotes). */
export interface IAcceleratorNotes {
  /** "torch.profiler" */
  profiler?: string;
  /** torch's version */
  torch?: string;
  /** "cpu", "cuda" */
  activities?: string[];
  /** the trace in the experiment directory (torch.pt.trace.json) */
  file?: string;
  /** why the profiler did not start, stop or merge (the rest was measured) */
  error?: string;
  /** the profiler's own cost: start, stop_export, parse */
  seconds?: Record<string, number>;
  operators?: number;
  runtime_calls?: number;
  device_activities?: number;
  /** the device streams' locations, CUDA[device:stream] */
  streams?: string[];
  /** host events that crossed a Python call */
  left_out_not_nested?: number;
  /** device activities started before the stream's previous end */
  device_starts_moved?: number;
  /** trace events without the numbers they need */
  skipped_events?: number;
  /** ns added to Kineto's times so its operators nest in their Python callers */
  clock_shift_ns?: number;
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

/** The cells' time (their regions on the thread that ran them) and its split: running on a
 * CPU, queued for one (the machine's load), waiting (sleep, lock, I/O, device, MPI). The
 * split is null where the measurement did not read the threads' clocks (Score-P runs). */
export interface ICellTime {
  time_s: number;
  cpu_s: number | null;
  queue_s: number | null;
  wait_s: number | null;
  /** the CPU seconds of a fixed reference workload around the run: the machine's speed
   * (measure/machine_speed.py); null or absent where not measured */
  ref_cpu_s?: number | null;
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

export type DownloadKind = 'otf2' | 'cubex' | 'perfetto';

export type ToolKind = 'vampir' | 'cube';
