/**
 * What the panel says while an experiment's files are being written, and why an experiment
 * has no readable trace.
 */
import type { IExperiment } from '../api/experimentTypes';

export function progressText(experiment: IExperiment, elapsed: number): string {
  const files = experiment.manifest.files ?? {};
  const have = Object.keys(files);
  const total = 3;
  const done = ['otf2', 'cubex', 'metrics'].filter(k =>
    have.includes(k)
  ).length;
  const what =
    experiment.manifest.status === 'running'
      ? 'Measuring'
      : 'Writing the trace and profile';
  return `processing… ${what}: ${done} of ${total} files ready (${elapsed.toFixed(0)} s)`;
}

export function failureText(experiment: IExperiment): string {
  const errors = (experiment.manifest.errors ?? []).map(e =>
    typeof e === 'string' ? e : (e.message ?? JSON.stringify(e))
  );
  if (errors.length) {
    return errors.join(' ');
  }
  const note = experiment.manifest.measurement?.['note'];
  if (typeof note === 'string' && note) {
    return note;
  }
  return experiment.manifest.files_status === 'failed'
    ? 'Writing the experiment files failed; the manifest names no cause.'
    : 'This experiment has no readable trace.';
}
