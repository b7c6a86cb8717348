/**
 * User settings → the cell metadata the kernel reads (`cell.metadata.scorep`).
 * The kernel receives cell metadata with every execute_request, so whatever is written here
 * travels with the cell and is also saved in the .ipynb.
 */

export type BackendSetting = 'auto' | 'scorep' | 'builtin';
export type IsolationSetting = 'auto' | 'subprocess' | 'inprocess';

export interface IProfileSettings {
  backend: BackendSetting;
  isolation: IsolationSetting;
  /** seconds between system metric samples */
  metricInterval: number;
  /** parent directory for experiments; empty = the kernel's default */
  experimentDirectory: string;
  /** stop recording events after this many; 0 = no cap */
  eventCap: number;
}

export const DEFAULT_SETTINGS: IProfileSettings = {
  backend: 'auto',
  isolation: 'auto',
  metricInterval: 0.1,
  experimentDirectory: '',
  eventCap: 0
};

/** The `scorep` cell metadata (what the kernel reads). */
export interface IScorepMetadata {
  profile?: boolean;
  run?: string;
  last?: boolean;
  backend?: BackendSetting;
  isolation?: IsolationSetting;
  metric_interval?: number;
  experiment_dir?: string;
  event_cap?: number;
  [key: string]: unknown;
}

/** Read settings from a settings-registry composite, falling back to defaults per field. */
export function readSettings(
  composite: Record<string, unknown> | null | undefined
): IProfileSettings {
  const c = composite ?? {};
  const pick = <T>(key: string, ok: (v: unknown) => boolean, dflt: T): T =>
    ok(c[key]) ? (c[key] as T) : dflt;
  return {
    backend: pick(
      'backend',
      v => v === 'auto' || v === 'scorep' || v === 'builtin',
      DEFAULT_SETTINGS.backend
    ),
    isolation: pick(
      'isolation',
      v => v === 'auto' || v === 'subprocess' || v === 'inprocess',
      DEFAULT_SETTINGS.isolation
    ),
    metricInterval: pick(
      'metricInterval',
      v => typeof v === 'number' && v > 0,
      DEFAULT_SETTINGS.metricInterval
    ),
    experimentDirectory: pick(
      'experimentDirectory',
      v => typeof v === 'string',
      DEFAULT_SETTINGS.experimentDirectory
    ),
    eventCap: pick(
      'eventCap',
      v => typeof v === 'number' && v >= 0,
      DEFAULT_SETTINGS.eventCap
    )
  };
}

/** The settings as metadata fields. Defaults ("auto", empty, 0) are left out. */
export function settingsToMetadata(s: IProfileSettings): IScorepMetadata {
  const meta: IScorepMetadata = {};
  if (s.backend !== 'auto') {
    meta.backend = s.backend;
  }
  if (s.isolation !== 'auto') {
    meta.isolation = s.isolation;
  }
  meta.metric_interval = s.metricInterval;
  if (s.experimentDirectory.trim()) {
    meta.experiment_dir = s.experimentDirectory.trim();
  }
  if (s.eventCap > 0) {
    meta.event_cap = Math.floor(s.eventCap);
  }
  return meta;
}

const SETTING_KEYS = [
  'backend',
  'isolation',
  'metric_interval',
  'experiment_dir',
  'event_cap'
];

/** A copy of `meta` without the given keys. */
function withoutKeys(meta: IScorepMetadata, drop: string[]): IScorepMetadata {
  const kept: IScorepMetadata = {};
  for (const [k, v] of Object.entries(meta)) {
    if (!drop.includes(k)) {
      kept[k] = v;
    }
  }
  return kept;
}

/**
 * The metadata after toggling profiling on or off. On: the settings are (re)applied, other
 * keys kept. Off: `undefined`, i.e. remove the `scorep` key entirely so unprofiled
 * notebooks stay clean.
 */
export function toggledMetadata(
  current: IScorepMetadata | undefined,
  on: boolean,
  settings: IProfileSettings
): IScorepMetadata | undefined {
  if (!on) {
    return undefined;
  }
  const kept = withoutKeys(current ?? {}, [...SETTING_KEYS, 'run', 'last']);
  return { ...kept, profile: true, ...settingsToMetadata(settings) };
}

/** Refresh the settings in an already profiled cell's metadata before it runs. */
export function refreshedMetadata(
  current: IScorepMetadata,
  settings: IProfileSettings
): IScorepMetadata {
  return {
    ...withoutKeys(current, SETTING_KEYS),
    ...settingsToMetadata(settings)
  };
}

/**
 * Metadata for the code cells of one multi-cell run, in order: all share the run id, the
 * last one carries `last: true` so the kernel finishes the run after it.
 */
export function runMetadata(
  currents: (IScorepMetadata | undefined)[],
  runId: string,
  settings: IProfileSettings
): IScorepMetadata[] {
  return currents.map((current, i) => {
    const base = toggledMetadata(current, true, settings)!;
    const meta: IScorepMetadata = { ...base, run: runId };
    if (i === currents.length - 1) {
      meta.last = true;
    }
    return meta;
  });
}

export function isProfiled(meta: unknown): boolean {
  return (
    typeof meta === 'object' &&
    meta !== null &&
    (meta as IScorepMetadata).profile === true
  );
}
