/**
 * The per-cell "Profile with Score-P" state: read and write `cell.metadata.scorep`, mark
 * profiled cells (CSS class + badge in the prompt), and know whether the notebook runs the
 * Score-P kernel.
 */
import type { Cell, ICellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import {
  IScorepMetadata,
  IUserSettings,
  isProfiled,
  refreshedMetadata,
  toggledMetadata
} from './cellSettings';

export const METADATA_KEY = 'scorep';
export const SCOREP_KERNEL_NAME = 'scorep-python';
export const SCOREP_KERNEL_DISPLAY = 'Python 3 (Score-P)';
export const PROFILED_CLASS = 'jp-scorep-profiled';

export function getScorepMetadata(
  model: ICellModel
): IScorepMetadata | undefined {
  const value = model.getMetadata(METADATA_KEY);
  return value && typeof value === 'object'
    ? (value as IScorepMetadata)
    : undefined;
}

export function isCellProfiled(model: ICellModel | null | undefined): boolean {
  return (
    !!model &&
    model.type === 'code' &&
    isProfiled(model.getMetadata(METADATA_KEY))
  );
}

/**
 * Turn profiling on (with the user's JupyterLab settings in `lab_settings`) or off (removing
 * the key) for one code cell. `settings`: what the user set; null while not known.
 */
export function setCellProfiled(
  model: ICellModel,
  on: boolean,
  settings: IUserSettings | null
): void {
  if (model.type !== 'code') {
    return;
  }
  const next = toggledMetadata(getScorepMetadata(model), on, settings);
  if (next === undefined) {
    model.deleteMetadata(METADATA_KEY);
  } else {
    model.setMetadata(METADATA_KEY, next);
  }
}

/**
 * Write the user's current JupyterLab settings into a profiled cell's `lab_settings` just
 * before it is executed; the cell's own keys are left alone.
 */
export function refreshBeforeRun(
  model: ICellModel,
  settings: IUserSettings | null
): void {
  const meta = getScorepMetadata(model);
  if (model.type === 'code' && meta && isProfiled(meta)) {
    const next = refreshedMetadata(meta, settings);
    if (JSON.stringify(next) !== JSON.stringify(meta)) {
      model.setMetadata(METADATA_KEY, next);
    }
  }
}

/** Reflect the profiled state on the cell widget (class, tooltip for the prompt badge). */
export function markCell(cell: Cell): void {
  const on = isCellProfiled(cell.model);
  cell.toggleClass(PROFILED_CLASS, on);
  const prompt = cell.node.querySelector('.jp-InputPrompt');
  if (prompt) {
    if (on) {
      prompt.setAttribute('title', 'This cell is profiled with Score-P');
      prompt.setAttribute('aria-label', 'Profiled with Score-P');
    } else if (
      prompt.getAttribute('title') === 'This cell is profiled with Score-P'
    ) {
      prompt.removeAttribute('title');
      prompt.removeAttribute('aria-label');
    }
  }
}

export function kernelIsScorep(
  panel: NotebookPanel | null | undefined
): boolean {
  const session = panel?.sessionContext;
  if (!session) {
    return false;
  }
  const name = session.session?.kernel?.name ?? session.kernelPreference?.name;
  return (
    name === SCOREP_KERNEL_NAME ||
    session.kernelDisplayName === SCOREP_KERNEL_DISPLAY
  );
}

/** Offer to switch the notebook to the Score-P kernel; resolves true when switched. */
export async function offerKernelSwitch(
  panel: NotebookPanel
): Promise<boolean> {
  const current = panel.sessionContext.kernelDisplayName || 'no kernel';
  const result = await showDialog({
    title: 'Switch to the Score-P kernel?',
    body:
      `Profiling needs the "${SCOREP_KERNEL_DISPLAY}" kernel; this notebook runs "${current}". ` +
      'The cell stays marked and will be profiled once the notebook runs the Score-P kernel. ' +
      'Switching starts a new kernel: variables defined so far are lost.',
    buttons: [
      Dialog.cancelButton({ label: 'Keep kernel' }),
      Dialog.okButton({ label: 'Switch kernel' })
    ]
  });
  if (!result.button.accept) {
    return false;
  }
  await panel.sessionContext.changeKernel({ name: SCOREP_KERNEL_NAME });
  return true;
}
