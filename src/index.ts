/**
 * jupyterlab-scorep: the cell toggle, its commands and cell marking. The panel under a
 * profiled cell is the MIME renderer in ./mime (package.json → jupyterlab.mimeExtension).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import type { Cell } from '@jupyterlab/cells';
import {
  INotebookTracker,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ICellHandle, setCellLocator } from './notebook/cellbridge';
import { CommandIDs, registerCommands } from './notebook/commands';
import { OPEN_TRACE_COMMAND, registerOpenTrace } from './notebook/openTrace';
import {
  IScorepMetadata,
  IUserSettings,
  readUserSettings
} from './notebook/cellSettings';
import { NoticeSender } from './notebook/profiledCellsNotice';
import {
  kernelIsScorep,
  markCell,
  METADATA_KEY,
  refreshBeforeRun
} from './notebook/toggle';

const PLUGIN_ID = 'jupyterlab-scorep:plugin';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Profile notebook cells with Score-P: a cell toolbar toggle, commands and settings',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    settingRegistry: ISettingRegistry | null,
    palette: ICommandPalette | null
  ) => {
    // Only what the user set (the registry's `user` values, not the composite with the
    // schema defaults) goes into a cell, so that `%scorep`, the environment and the kernel's
    // defaults still apply to what the user left alone. null until the settings are loaded.
    let settings: IUserSettings | null = null;
    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(s => {
          const update = () => {
            settings = readUserSettings(s.user as Record<string, unknown>);
          };
          update();
          s.changed.connect(update);
        })
        .catch(reason => {
          console.error('jupyterlab-scorep: cannot load settings.', reason);
        });
    }
    registerCommands(app, tracker, () => settings);
    registerOpenTrace(app);
    if (palette) {
      const category = 'Score-P';
      palette.addItem({ command: OPEN_TRACE_COMMAND, category });
      palette.addItem({ command: CommandIDs.toggle, category });
      palette.addItem({ command: CommandIDs.profileRun, category });
      palette.addItem({ command: CommandIDs.profileMpi, category });
    }

    const refreshToggle = () =>
      app.commands.notifyCommandChanged(CommandIDs.toggle);
    tracker.activeCellChanged.connect(refreshToggle);
    tracker.currentChanged.connect(refreshToggle);
    tracker.widgetAdded.connect((_, panel) =>
      watchNotebook(panel, refreshToggle, () => settings)
    );
    tracker.forEach(panel =>
      watchNotebook(panel, refreshToggle, () => settings)
    );

    // The kernel reads the JupyterLab settings from the cell metadata (`lab_settings`):
    // refresh them right before a run.
    NotebookActions.executionScheduled.connect((_, { cell }) => {
      refreshBeforeRun(cell.model, settings);
    });

    // The panel under a cell (a MIME renderer) writes that cell's metadata through this:
    // the Score-P tab's Apply sets scorep.filter_file.
    setCellLocator(node => {
      let found: ICellHandle | null = null;
      tracker.forEach(panel => {
        const cell = found
          ? undefined
          : panel.content.widgets.find(c => c.node.contains(node));
        if (cell) {
          found = {
            notebookPath: panel.context.path,
            getScorep: () =>
              cell.model.getMetadata('scorep') as IScorepMetadata | undefined,
            setScorep: meta => cell.model.setMetadata('scorep', meta)
          };
        }
      });
      return found;
    });
  }
};

/**
 * Keep the profiled mark of every cell of a notebook in sync with its metadata, and tell a
 * Score-P kernel which profiled cells the notebook holds (profiledCellsNotice): when the
 * kernel is ready and whenever a cell's metadata changes.
 */
function watchNotebook(
  panel: NotebookPanel,
  refreshToggle: () => void,
  settings: () => IUserSettings | null
): void {
  const notices = new NoticeSender(
    () => (kernelIsScorep(panel) ? panel.sessionContext.session?.kernel : null),
    () =>
      Array.from(panel.content.model?.cells ?? [])
        .filter(cell => cell.type === 'code')
        .map(cell => cell.getMetadata(METADATA_KEY)),
    settings
  );
  panel.sessionContext.statusChanged.connect((_, status) => {
    if (status === 'starting' || status === 'restarting') {
      notices.reset(); // a fresh kernel knows nothing yet
    } else if (status === 'idle') {
      void notices.update();
    }
  });
  const watched = new WeakSet<Cell>();
  const scan = () => {
    for (const cell of panel.content.widgets) {
      if (!watched.has(cell)) {
        watched.add(cell);
        cell.model.metadataChanged.connect(() => {
          markCell(cell);
          if (panel.content.activeCell === cell) {
            refreshToggle();
          }
          void notices.update();
        });
      }
      markCell(cell);
    }
  };
  void panel.revealed.then(scan);
  panel.content.model?.cells.changed.connect(() => requestAnimationFrame(scan));
  panel.content.modelChanged.connect(() => {
    panel.content.model?.cells.changed.connect(() =>
      requestAnimationFrame(scan)
    );
    requestAnimationFrame(scan);
  });
  panel.sessionContext.kernelChanged.connect(refreshToggle);
}

export default plugin;
