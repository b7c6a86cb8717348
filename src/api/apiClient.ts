/**
 * Typed client for the server extension's REST API (docs/API.md; the answers' types are in
 * experimentTypes.ts, traceTypes.ts and analysisTypes.ts).
 *
 * Errors carry the server's `message`, which is written for a person (cause and fix), so
 * the UI shows it as is.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import type {
  DownloadKind,
  IExperiment,
  IExperimentList,
  IManifest,
  IRuns,
  IVersion,
  ToolKind
} from './experimentTypes';
import type {
  ICallTree,
  ILink,
  IMetrics,
  ITimeline,
  ITimelineShape
} from './traceTypes';
import type {
  IComparison,
  IFilterApplied,
  IRanks,
  IScore,
  ISummary
} from './analysisTypes';

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
    signal?: AbortSignal,
    shape: ITimelineShape = {}
  ): Promise<ITimeline> {
    const { rows, ranks } = shape;
    return this.windowed('timeline', path, t0, t1, width, signal, {
      ...(rows ? { rows: Math.max(1, Math.round(rows)) } : {}),
      ...(ranks ? { ranks: `${ranks[0]}:${ranks[1]}` } : {})
    });
  }

  /** GET ranks; `pairs`: the matrix as its non-zero cells (large runs). */
  ranks(path: string, matrix: 'dense' | 'pairs' = 'dense'): Promise<IRanks> {
    return this.request(
      'ranks',
      matrix === 'pairs' ? { path, matrix } : { path }
    );
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
    signal?: AbortSignal,
    extra: Record<string, string | number> = {}
  ): Promise<T> {
    return this.request(
      endpoint,
      {
        path,
        t0: Math.floor(t0),
        t1: Math.ceil(t1),
        width: Math.max(1, Math.round(width)),
        ...extra
      },
      { signal }
    );
  }

  summary(path: string): Promise<ISummary> {
    return this.request('summary', { path });
  }

  /** The other ends of a span's launch links (launch <-> kernel, copy, set). */
  link(
    path: string,
    location: number,
    start: number
  ): Promise<{ links: ILink[] }> {
    return this.request('link', { path, location, start });
  }

  /** A torch.profiler trace (relative to the server root) as an experiment. */
  importTrace(trace: string): Promise<{ path: string; manifest: IManifest }> {
    return this.request('import', { trace }, { method: 'POST' });
  }

  /** A cell's runs, newest first, and the disk the notebook's runs use. */
  runs(
    notebook: string | null,
    cell: string | null,
    dir?: string | null
  ): Promise<IRuns> {
    return this.request('experiments', { notebook, cell, dir });
  }

  /** Every experiment the server lists (to pick one to compare with). */
  experiments(dir?: string | null): Promise<IExperimentList> {
    return this.request('experiments', { dir });
  }

  /** Run `b` against run `a` (the baseline). */
  compare(a: string, b: string, signal?: AbortSignal): Promise<IComparison> {
    return this.request('compare', { a, b }, { signal });
  }

  /** Delete one experiment directory; `id` confirms which run is meant. */
  deleteExperiment(
    path: string,
    id: string
  ): Promise<{ deleted: string; id: string; freed_bytes: number }> {
    return this.request('experiment', { path, id }, { method: 'DELETE' });
  }

  /** Score-P's estimate of the run and its suggested filter (scorep-score). */
  score(path: string): Promise<IScore> {
    return this.request('score', { path });
  }

  /** Write the suggested filter beside the experiments, for the cell's next run. */
  applyFilter(path: string): Promise<IFilterApplied> {
    return this.request('filter', { path }, { method: 'POST' });
  }

  downloadUrl(path: string, what: DownloadKind): string {
    return this.url('download', { path, what });
  }

  open(path: string, tool: ToolKind): Promise<{ pid: number }> {
    return this.request('open', { path, tool }, { method: 'POST' });
  }

  /** Open the experiment in the tool unless it was opened so before (docs/API.md, once). */
  openOnce(
    path: string,
    tool: ToolKind
  ): Promise<{ pid: number | null; already: boolean }> {
    return this.request('open', { path, tool, once: 1 }, { method: 'POST' });
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
