/**
 * Typed client for the server extension's REST API (docs/API.md).
 *
 * Every time is integer nanoseconds since the run's start. Errors carry the server's
 * `message`, which is written for a person (cause and fix), so the UI shows it as is.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export const MIME_TYPE = 'application/vnd.scorep.experiment+json';

// The experiment contract's words (kernel/scorep_kernel/experiment.py; docs/API.md).
// server_ext/tests/test_contract.py checks that these unions list exactly its values.
export type Backend = 'scorep' | 'builtin';
export type Isolation = 'subprocess' | 'inprocess';
export type RunStatus = 'running' | 'ok' | 'error' | 'interrupted' | 'crashed';
/** Whether the server may read the run's files yet ("unavailable": nothing was measured). */
export type FilesStatus = 'pending' | 'ready' | 'failed' | 'unavailable';
export type RegionRole = 'function' | 'user' | 'import' | 'cell' | 'artificial';

export interface IManifest {
  format_version: number;
  id: string;
  backend: Backend;
  isolation?: Isolation;
  status: RunStatus;
  cells?: { cell_id?: string; execution_count?: number; code?: string }[];
  start_ns?: number;
  end_ns?: number | null;
  wall_s?: number | null;
  hostname?: string;
  python_version?: string;
  files?: Record<string, string>;
  measurement?: Record<string, unknown>;
  files_status?: FilesStatus;
  errors?: (string | { message?: string })[];
  [key: string]: unknown;
}

export interface IVersion {
  version: string;
  scorep: {
    available: boolean;
    scorep_config: string | null;
    bindings: boolean;
    message?: string;
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
  mean: number[];
  min: number[];
  max: number[];
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

export interface ISummary {
  wall_s: number;
  events: number;
  status: RunStatus;
  top_regions: {
    name: string;
    excl_s: number;
    incl_s: number;
    visits: number;
    pct: number;
  }[];
  verdicts: IVerdict[];
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
  summary?: {
    wall_s?: number;
    events?: number;
    top?: [string, number][];
    message?: string;
  };
}

export type DownloadKind = 'otf2' | 'cubex' | 'perfetto';
export type ToolKind = 'vampir' | 'cube';

/** An error answer from the server: `status` plus the server's `message` for a person. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Build a query string, leaving out undefined and null values. */
export function query(params: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) {
      continue;
    }
    parts.push(
      `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`
    );
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

export class ScorepAPI {
  constructor(
    readonly serverSettings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  /** Absolute URL of an endpoint (used for plain links such as downloads). */
  url(endpoint: string, params: Record<string, unknown> = {}): string {
    return (
      URLExt.join(this.serverSettings.baseUrl, 'scorep', 'api', endpoint) +
      query(params)
    );
  }

  version(): Promise<IVersion> {
    return this.request('version');
  }

  experiment(path: string, signal?: AbortSignal): Promise<IExperiment> {
    return this.request('experiment', { path }, { signal });
  }

  timeline(
    path: string,
    t0: number,
    t1: number,
    width: number,
    signal?: AbortSignal
  ): Promise<ITimeline> {
    return this.windowed('timeline', path, t0, t1, width, signal);
  }

  calltree(path: string, location?: number | null): Promise<ICallTree> {
    return this.request('calltree', { path, location });
  }

  metrics(
    path: string,
    t0: number,
    t1: number,
    width: number,
    signal?: AbortSignal
  ): Promise<IMetrics> {
    return this.windowed('metrics', path, t0, t1, width, signal);
  }

  /** A windowed endpoint: the time window widened to whole ns, width at least one pixel. */
  private windowed<T>(
    endpoint: 'timeline' | 'metrics',
    path: string,
    t0: number,
    t1: number,
    width: number,
    signal?: AbortSignal
  ): Promise<T> {
    return this.request(
      endpoint,
      {
        path,
        t0: Math.floor(t0),
        t1: Math.ceil(t1),
        width: Math.max(1, Math.round(width))
      },
      { signal }
    );
  }

  summary(path: string): Promise<ISummary> {
    return this.request('summary', { path });
  }

  downloadUrl(path: string, what: DownloadKind): string {
    return this.url('download', { path, what });
  }

  open(path: string, tool: ToolKind): Promise<{ pid: number }> {
    return this.request('open', { path, tool }, { method: 'POST' });
  }

  private async request<T>(
    endpoint: string,
    params: Record<string, unknown> = {},
    init: RequestInit = {}
  ): Promise<T> {
    const url = this.url(endpoint, params);
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(
        url,
        init,
        this.serverSettings
      );
    } catch (error) {
      if ((error as Error)?.name === 'AbortError') {
        throw error;
      }
      throw new ApiError(
        `Cannot reach the Jupyter server (${(error as Error)?.message ?? error}).`,
        0
      );
    }
    const text = await response.text();
    let data: any = null;
    if (text.length > 0) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!response.ok) {
      const message =
        (data && (data.message || data.reason)) ||
        (response.status === 404
          ? `The Score-P server extension did not answer ${endpoint} (404). Is jupyterlab_scorep enabled? Run: jupyter server extension list`
          : `${endpoint} failed with HTTP ${response.status}`);
      throw new ApiError(String(message), response.status);
    }
    if (data === null) {
      throw new ApiError(`${endpoint} did not answer JSON.`, response.status);
    }
    return data as T;
  }
}
