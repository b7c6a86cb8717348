/**
 * User settings → the cell metadata the kernel reads (`cell.metadata.scorep`).
 * The kernel receives cell metadata with every execute_request, so whatever is written here
 * travels with the cell and is also saved in the .ipynb.
 *
 * Precedence (README, "Settings precedence"; one rule everywhere): what the user set
 * on the cell > the JupyterLab settings > `%scorep` (kernel-wide) > environment variables > defaults.
 * So the frontend writes into a cell only what the user chose, and keeps the two sources
 * apart:
 *
 * - top-level keys of `scorep` (`backend`, `isolation`, `metric_interval`, ...) are the
 *   cell's own, set by hand; the frontend never writes or removes them (it owns only
 *   `profile`, set by the toggle, and `run` / `last`, set by the multi-cell command);
 * - `scorep.lab_settings` holds the JupyterLab settings the user explicitly set (the
 *   registry's `user` values, never the schema defaults), rewritten before every profiled
 *   run and removed when the user set none. The kernel applies a top-level key over
 *   `lab_settings`, and `lab_settings` over `%scorep`, the environment and its defaults.
 */

export type BackendSetting = 'auto' | 'scorep' | 'builtin';
export type IsolationSetting = 'auto' | 'subprocess' | 'inprocess';

/** The plugin's settings (schema/plugin.json), by their settings names. */
export interface IProfileSettings {
  backend: BackendSetting;
  isolation: IsolationSetting;
  /** seconds between system metric samples; 0 = the kernel's (or `%scorep`'s) interval */
  metricInterval: number;
  /** parent directory for experiments; empty = the kernel's default */
  experimentDirectory: string;
  /** stop recording events after this many; 0 = no cap */
  eventCap: number;
}

/** The settings the user chose: only those present in the registry's `user` values. */
export type IUserSettings = Partial<IProfileSettings>;

/** The JupyterLab settings as the kernel reads them, under `scorep.lab_settings`. */
export interface ILabSettingsMetadata {
  backend?: 'scorep' | 'builtin';
  isolation?: 'subprocess' | 'inprocess';
  metric_interval?: number;
  experiment_dir?: string;
  event_cap?: number;
}

export const LAB_SETTINGS_KEY = 'lab_settings';

/** The `scorep` cell metadata (what the kernel reads). */
export interface IScorepMetadata {
  profile?: boolean;
  run?: string;
  last?: boolean;
  /** the cell's own choices, set by hand; never written by the frontend */
  backend?: BackendSetting;
  isolation?: IsolationSetting;
  metric_interval?: number;
  experiment_dir?: string;
  event_cap?: number;
  /** a Score-P filter file for the cell's runs: set by hand, or by the panel's Apply */
  filter_file?: string;
  /** the JupyterLab settings the user set, written by the frontend */
  lab_settings?: ILabSettingsMetadata;
  [key: string]: unknown;
}

const VALID: { [K in keyof IProfileSettings]: (v: unknown) => boolean } = {
  backend: v => v === 'auto' || v === 'scorep' || v === 'builtin',
  isolation: v => v === 'auto' || v === 'subprocess' || v === 'inprocess',
  metricInterval: v => typeof v === 'number' && Number.isFinite(v) && v >= 0,
  experimentDirectory: v => typeof v === 'string',
  eventCap: v => typeof v === 'number' && Number.isFinite(v) && v >= 0
};

/**
 * The settings the user set, read from the settings registry's `user` values (not its
 * `composite`, which fills in the schema defaults). Keys that are absent or invalid are left
 * out: they are no choice of the user's.
 */
export function readUserSettings(
  user: Record<string, unknown> | null | undefined
): IUserSettings {
  const chosen: Record<string, unknown> = {};
  for (const [key, ok] of Object.entries(VALID)) {
    const value = user?.[key];
    if (value !== undefined && ok(value)) {
      chosen[key] = value;
    }
  }
  return chosen as IUserSettings;
}

/**
 * The user's settings under their metadata names. Values that mean "no choice" ("auto",
 * an empty directory, an interval or event cap of 0) are left out, so the kernel's own rule
 * decides. Every schema default is such a value: JupyterLab's settings editor saves the whole
 * form (defaults included) as the user's settings once one field is changed, and those
 * defaults must not override `%scorep` or the environment.
 */
export function settingsToMetadata(s: IUserSettings): ILabSettingsMetadata {
  const meta: ILabSettingsMetadata = {};
  if (s.backend === 'scorep' || s.backend === 'builtin') {
    meta.backend = s.backend;
  }
  if (s.isolation === 'subprocess' || s.isolation === 'inprocess') {
    meta.isolation = s.isolation;
  }
  if (s.metricInterval !== undefined && s.metricInterval > 0) {
    meta.metric_interval = s.metricInterval;
  }
  const dir = s.experimentDirectory?.trim();
  if (dir) {
    meta.experiment_dir = dir;
  }
  if (s.eventCap !== undefined && s.eventCap >= 1) {
    meta.event_cap = Math.floor(s.eventCap);
  }
  return meta;
}

/**
 * A profiled cell's metadata refreshed before it runs: `lab_settings` replaced by the user's
 * JupyterLab settings (removed when the user set none); every other key, the cell's own, kept
 * as it is. `settings === null` means the settings are not known (not loaded yet, or no
 * settings registry): `lab_settings` is then left as it is rather than emptied by mistake.
 */
export function refreshedMetadata(
  current: IScorepMetadata,
  settings: IUserSettings | null
): IScorepMetadata {
  const next: IScorepMetadata = { ...current };
  if (settings === null) {
    return next;
  }
  delete next[LAB_SETTINGS_KEY];
  const lab = settingsToMetadata(settings);
  if (Object.keys(lab).length > 0) {
    next[LAB_SETTINGS_KEY] = lab;
  }
  return next;
}

/**
 * The metadata after toggling profiling on or off. On: `profile: true` and the user's
 * JupyterLab settings in `lab_settings`; the cell's own keys are kept, a previous multi-cell
 * membership (`run`, `last`) is dropped. Off: `undefined`, i.e. remove the `scorep` key
 * entirely so unprofiled notebooks stay clean.
 */
export function toggledMetadata(
  current: IScorepMetadata | undefined,
  on: boolean,
  settings: IUserSettings | null
): IScorepMetadata | undefined {
  if (!on) {
    return undefined;
  }
  const kept: IScorepMetadata = { ...(current ?? {}) };
  delete kept.run;
  delete kept.last;
  return refreshedMetadata({ ...kept, profile: true }, settings);
}

/**
 * Metadata for the code cells of one multi-cell run, in order: all share the run id, the
 * last one carries `last: true` so the kernel finishes the run after it.
 */
export function runMetadata(
  currents: (IScorepMetadata | undefined)[],
  runId: string,
  settings: IUserSettings | null
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

/**
 * The metadata after the user applied a filter file from the panel (the Score-P tab's
 * Apply): `filter_file` set to `path`, every other key kept as it is. The user asked for
 * it by clicking, so it replaces a filter_file set before (the server's file keeps that
 * filter's rules).
 */
export function withFilterFile(
  current: IScorepMetadata | undefined,
  path: string
): IScorepMetadata {
  return { ...(current ?? {}), filter_file: path };
}

/**
 * The path to write into the cell for a filter file the server wrote: relative to the
 * notebook's folder when the file lies inside it (the kernel runs there, and the notebook
 * and its filters then move together), else absolute. `rootPath` is the file's path
 * relative to the server root (null outside it), `notebookPath` the notebook's.
 */
export function filterFileFor(
  rootPath: string | null,
  absolutePath: string,
  notebookPath: string
): string {
  if (rootPath === null) {
    return absolutePath;
  }
  const slash = notebookPath.lastIndexOf('/');
  const dir = slash < 0 ? '' : notebookPath.slice(0, slash);
  if (!dir) {
    return rootPath;
  }
  return rootPath.startsWith(dir + '/')
    ? rootPath.slice(dir.length + 1)
    : absolutePath;
}
