/**
 * Commands: toggle profiling for the active/selected code cells, and profile the selected
 * cells as one multi-cell run.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import {
  INotebookTracker,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import type { ICellModel } from '@jupyterlab/cells';
import { UUID } from '@lumino/coreutils';
import { askMpi } from './mpi/dialog';
import { readMpi, withMpi } from './mpi/metadata';
import { IUserSettings, runMetadata } from './cellSettings';
import {
  getScorepMetadata,
  isCellProfiled,
  kernelIsScorep,
  METADATA_KEY,
  offerKernelSwitch,
  SCOREP_KERNEL_DISPLAY,
  setCellProfiled
} from './toggle';

export const CommandIDs = {
  toggle: 'scorep:toggle-profile',
  profileRun: 'scorep:profile-selected-as-run',
  profileMpi: 'scorep:profile-as-mpi'
};

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
<g class="jp-icon3" fill="#616161">
<path d="M15 1H9v2h6V1zm-4 13h2V8h-2v6zm8.03-6.61 1.42-1.42c-.43-.51-.9-.99-1.41-1.41l-1.42 1.42C16.07 4.74 14.12 4 12 4c-4.97 0-9 4.03-9 9s4.02 9 9 9 9-4.03 9-9c0-2.12-.74-4.07-1.97-5.61zM12 20c-3.87 0-7-3.13-7-7s3.13-7 7-7 7 3.13 7 7-3.13 7-7 7z"/>
</g></svg>`;

export const scorepIcon = new LabIcon({
  name: 'jupyterlab-scorep:profile',
  svgstr: ICON_SVG
});

/** Selected code cells of a notebook (the active one when nothing else is selected). */
export function selectedCodeCells(panel: NotebookPanel): ICellModel[] {
  const notebook = panel.content;
  const models: ICellModel[] = [];
  notebook.widgets.forEach(cell => {
    if (notebook.isSelectedOrActive(cell) && cell.model.type === 'code') {
      models.push(cell.model);
    }
  });
  return models;
}

export function registerCommands(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  /** the JupyterLab settings the user set (null while not loaded) */
  getSettings: () => IUserSettings | null
): void {
  const { commands } = app;
  const activeCell = () => tracker.activeCell?.model ?? null;

  commands.addCommand(CommandIDs.toggle, {
    label: 'Profile with Score-P',
    caption: () =>
      kernelIsScorep(tracker.currentWidget)
        ? isCellProfiled(activeCell())
          ? 'Profiled with Score-P: click to run this cell without profiling'
          : 'Profile this cell with Score-P'
        : `Profile with Score-P — needs the "${SCOREP_KERNEL_DISPLAY}" kernel; this notebook runs "${tracker.currentWidget?.sessionContext.kernelDisplayName ?? 'no kernel'}" (toggling offers to switch)`,
    icon: scorepIcon,
    isToggleable: true,
    isToggled: () => isCellProfiled(activeCell()),
    // hidden on markdown/raw cells' toolbars; listed (disabled) in the palette without a notebook
    isVisible: () => {
      const cell = activeCell();
      return cell === null || cell.type === 'code';
    },
    isEnabled: () => {
      const cell = activeCell();
      return cell === null || cell.type === 'code';
    },
    execute: async () => {
      const panel = tracker.currentWidget;
      const active = activeCell();
      if (!panel || !active || active.type !== 'code') {
        Notification.info(
          'Profile with Score-P works on a code cell: open a notebook and select one.',
          { autoClose: 5000 }
        );
        return;
      }
      const on = !isCellProfiled(active);
      const settings = getSettings();
      for (const model of selectedCodeCells(panel)) {
        setCellProfiled(model, on, settings);
      }
      commands.notifyCommandChanged(CommandIDs.toggle);
      if (on && !kernelIsScorep(panel)) {
        await offerKernelSwitch(panel);
        commands.notifyCommandChanged(CommandIDs.toggle);
      }
      // Give focus back to the notebook: left on the toolbar button, the next
      // Shift+Enter would press the button again instead of running the cell.
      requestAnimationFrame(() => {
        const notebook = panel.content;
        const cell = notebook.activeCell;
        const focused = document.activeElement;
        if (
          !cell ||
          cell.model !== active ||
          !focused?.closest('.jp-cell-toolbar')
        ) {
          return;
        }
        if (notebook.mode === 'edit') {
          cell.editor?.focus();
        } else {
          cell.node.focus({ preventScroll: true });
        }
      });
    }
  });

  // The toggle's options for MPI: how many ranks and which launcher (mpi/metadata.ts).
  commands.addCommand(CommandIDs.profileMpi, {
    label: 'Profile as MPI ranks…',
    caption:
      'Profile the selected code cells with Score-P as N MPI ranks, started by your MPI launcher',
    icon: scorepIcon,
    isEnabled: () => {
      const cell = activeCell();
      return tracker.currentWidget !== null && cell?.type === 'code';
    },
    execute: async () => {
      const panel = tracker.currentWidget;
      const active = activeCell();
      if (!panel || !active || active.type !== 'code') {
        return;
      }
      const choice = await askMpi(readMpi(getScorepMetadata(active)));
      if (choice === undefined) {
        return;
      }
      const settings = getSettings();
      for (const model of selectedCodeCells(panel)) {
        model.setMetadata(
          METADATA_KEY,
          withMpi(getScorepMetadata(model), choice, settings)
        );
      }
      commands.notifyCommandChanged(CommandIDs.toggle);
      if (!kernelIsScorep(panel)) {
        await offerKernelSwitch(panel);
      }
    }
  });

  commands.addCommand(CommandIDs.profileRun, {
    label: 'Profile selected cells as one run',
    caption:
      'Profile the selected code cells with Score-P as one measurement (one trace spanning all of them) and run them',
    icon: scorepIcon,
    isEnabled: () => tracker.currentWidget !== null,
    execute: async () => {
      const panel = tracker.currentWidget;
      if (!panel) {
        return;
      }
      const models = selectedCodeCells(panel);
      if (models.length === 0) {
        return;
      }
      if (!kernelIsScorep(panel)) {
        const switched = await offerKernelSwitch(panel);
        if (!switched) {
          return;
        }
      }
      const metas = runMetadata(
        models.map(getScorepMetadata),
        UUID.uuid4(),
        getSettings()
      );
      models.forEach((model, i) => model.setMetadata(METADATA_KEY, metas[i]));
      commands.notifyCommandChanged(CommandIDs.toggle);
      await NotebookActions.run(panel.content, panel.sessionContext);
    }
  });
}
