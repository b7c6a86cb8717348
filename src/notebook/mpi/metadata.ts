/**
 * The `mpi` key of a cell's `scorep` metadata, as the *Profile as MPI ranks…* dialog writes
 * it: `{"ranks": N, "launcher": "...", "args": "..."}` (the kernel's
 * scorep_kernel/mpi/config.py checks it). The user chooses it for this cell, so it is a
 * key of the cell's own (like `backend` set by hand); keys the dialog does not show
 * (`gather`, `timeout`) are kept.
 */
import {
  IScorepMetadata,
  IUserSettings,
  toggledMetadata
} from '../cellSettings';

export const MPI_KEY = 'mpi';
export const MAX_RANKS = 4096;
/** The dialog's launcher choices; '' is the kernel's default (srun in Slurm, else mpirun). */
export const LAUNCHERS = ['', 'mpirun', 'mpiexec', 'srun'];

export interface IMpiChoice {
  ranks: number;
  /** '' or absent: the kernel's default */
  launcher?: string;
  /** extra launcher arguments, as one string */
  args?: string;
}

/** The cell's current choice (for the dialog), or null when it is no MPI cell. */
export function readMpi(meta: IScorepMetadata | undefined): IMpiChoice | null {
  const mpi = meta?.[MPI_KEY];
  if (!mpi || typeof mpi !== 'object') {
    return null;
  }
  const m = mpi as Record<string, unknown>;
  const ranks = Number(m.ranks);
  return {
    ranks: Number.isInteger(ranks) && ranks >= 1 ? ranks : 2,
    launcher: typeof m.launcher === 'string' ? m.launcher : '',
    args: Array.isArray(m.args)
      ? (m.args as unknown[]).map(String).join(' ')
      : typeof m.args === 'string'
        ? m.args
        : ''
  };
}

/** A whole number of ranks from the dialog's field, or null when it is not one. */
export function parseRanks(text: string): number | null {
  const t = text.trim();
  if (!/^\d+$/.test(t)) {
    return null;
  }
  const n = Number(t);
  return n >= 1 && n <= MAX_RANKS ? n : null;
}

/**
 * The cell's metadata after the dialog: profiled (with the JupyterLab settings, as the
 * toggle writes them) as `choice.ranks` ranks; `null` turns MPI off again and keeps the
 * cell profiled.
 */
export function withMpi(
  current: IScorepMetadata | undefined,
  choice: IMpiChoice | null,
  settings: IUserSettings | null
): IScorepMetadata {
  const base = toggledMetadata(current, true, settings)!;
  const next: IScorepMetadata = { ...base };
  if (choice === null) {
    delete next[MPI_KEY];
    return next;
  }
  const previous = (
    current?.[MPI_KEY] && typeof current[MPI_KEY] === 'object'
      ? current[MPI_KEY]
      : {}
  ) as Record<string, unknown>;
  const mpi: Record<string, unknown> = { ...previous, ranks: choice.ranks };
  const launcher = choice.launcher?.trim();
  if (launcher) {
    mpi.launcher = launcher;
  } else {
    delete mpi.launcher;
  }
  const args = choice.args?.trim();
  if (args) {
    mpi.args = args;
  } else {
    delete mpi.args;
  }
  next[MPI_KEY] = mpi;
  return next;
}
