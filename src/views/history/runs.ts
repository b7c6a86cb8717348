/**
 * A cell's runs over time (GET experiments?notebook=&cell=): which run is the previous one,
 * what the Runs list says about each run, and how a run is named. Pure functions, so the
 * header control stays about wiring and the rules are tested without a browser.
 */
import type {
  IExperimentBundle,
  IManifest,
  IManifestCell,
  IRunEntry
} from '../../api/experimentTypes';

/** The cell a panel stands for: the run's cell shown in this output (for a multi-cell
 * run the panel sits under its last cell). */
export function panelCell(
  manifest: IManifest,
  bundle?: Pick<IExperimentBundle, 'cell_index_in_run'>
): IManifestCell | null {
  const cells = manifest.cells ?? [];
  if (!cells.length) {
    return null;
  }
  const i = bundle?.cell_index_in_run;
  return typeof i === 'number' && i >= 0 && i < cells.length
    ? cells[i]
    : cells[cells.length - 1];
}

/** The folder an experiment lies in (its runs' siblings are looked for there). */
export function parentDir(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  const i = trimmed.lastIndexOf('/');
  return i > 0 ? trimmed.slice(0, i) : '/';
}

/** Which run started earlier: start time, then the sortable id. */
function startedBefore(a: IManifest, b: IManifest): boolean {
  const sa = a.start_ns ?? 0;
  const sb = b.start_ns ?? 0;
  return sa !== sb ? sa < sb : a.id < b.id;
}

/** Whether a run's files can be compared: it ended and they were written. */
export function comparable(manifest: IManifest): boolean {
  return (
    manifest.status !== 'running' &&
    (manifest.files_status === undefined || manifest.files_status === 'ready')
  );
}

/** The cell's run before `current`: the newest one that started before it and can be
 * compared. */
export function previousRun(
  runs: IRunEntry[],
  current: IManifest
): IRunEntry | null {
  let best: IRunEntry | null = null;
  for (const run of runs) {
    const m = run.manifest;
    if (m.id === current.id || !comparable(m) || !startedBefore(m, current)) {
      continue;
    }
    if (!best || startedBefore(best.manifest, m)) {
      best = run;
    }
  }
  return best;
}

export interface IRunRow {
  entry: IRunEntry;
  id: string;
  /** ns since the epoch, or null */
  startNs: number | null;
  wallS: number | null;
  status: IManifest['status'];
  backend: IManifest['backend'];
  isolation: string;
  executionCount: number | null;
  /** the cell's source differs from the run shown in the panel; null: unknown */
  sourceChanged: boolean | null;
  /** the run shown in the panel */
  current: boolean;
}

/** The Runs list's rows, newest first, described against the run shown (`current`). */
export function runRows(
  runs: IRunEntry[],
  current: IManifest,
  cellId: string | null
): IRunRow[] {
  const mine = cellId
    ? (current.cells ?? []).find(c => c.cell_id === cellId)
    : undefined;
  const rows = runs.map(entry => {
    const m = entry.manifest;
    const cell = cellId
      ? (m.cells ?? []).find(c => c.cell_id === cellId)
      : undefined;
    const a = cell?.source_sha256;
    const b = mine?.source_sha256;
    return {
      entry,
      id: m.id,
      startNs: typeof m.start_ns === 'number' ? m.start_ns : null,
      wallS: typeof m.wall_s === 'number' ? m.wall_s : null,
      status: m.status,
      backend: m.backend,
      isolation: m.isolation ?? '',
      executionCount:
        typeof cell?.execution_count === 'number' ? cell.execution_count : null,
      sourceChanged: a && b ? a !== b : null,
      current: m.id === current.id
    };
  });
  return rows.sort((x, y) =>
    startedBefore(x.entry.manifest, y.entry.manifest) ? 1 : -1
  );
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** When a run started, in local time: the time of day for today's runs, else the date
 * too. */
export function formatWhen(startNs: number | null, now = new Date()): string {
  if (startNs === null) {
    return 'unknown time';
  }
  const d = new Date(startNs / 1e6);
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const sameDay =
    d.getFullYear() === now.getFullYear() &&
    d.getMonth() === now.getMonth() &&
    d.getDate() === now.getDate();
  return sameDay
    ? time
    : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

/** The backend in words, as the header says it. */
export function backendName(backend: string): string {
  return backend === 'scorep' ? 'Score-P' : 'builtin';
}

/** A bundle for a run found on disk, so that a panel can show it in place. */
export function bundleOf(entry: IRunEntry): IExperimentBundle {
  const m = entry.manifest;
  return {
    id: m.id,
    path: entry.path,
    backend: m.backend,
    isolation: m.isolation,
    status: m.status,
    summary: typeof m.wall_s === 'number' ? { wall_s: m.wall_s } : undefined
  };
}

/**
 * A warning when two runs were measured differently (backend or isolation): their times
 * hold different measurement costs, so their difference is not only the code's. Null when
 * they were measured alike.
 */
export function measuredDifferently(
  a: { backend: string; isolation?: string | null },
  b: { backend: string; isolation?: string | null }
): string | null {
  if (a.backend !== b.backend) {
    return (
      `A was measured with ${measuredBy(a.backend)}, B with ${measuredBy(b.backend)}: ` +
      'their costs differ, so the difference is not only the code’s.'
    );
  }
  if (a.isolation && b.isolation && a.isolation !== b.isolation) {
    return (
      `A ran ${a.isolation === 'subprocess' ? 'in a subprocess' : 'in the kernel'}, ` +
      `B ${b.isolation === 'subprocess' ? 'in a subprocess' : 'in the kernel'}: ` +
      'the difference is not only the code’s.'
    );
  }
  return null;
}

function measuredBy(backend: string): string {
  return backend === 'scorep' ? 'Score-P' : 'the builtin tracer';
}
