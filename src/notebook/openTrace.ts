/**
 * _Open a torch.profiler trace…_: a trace a training script wrote outside the notebook
 * (`prof.export_chrome_trace(...)`, `tensorboard_trace_handler`'s `*.pt.trace.json`) in the
 * same panel as a profiled cell, in a main-area tab. The server turns it into an
 * experiment beside it (POST import); the panel then reads it like any other.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import {
  InputDialog,
  MainAreaWidget,
  Notification
} from '@jupyterlab/apputils';
import { ScorepAPI } from '../api/apiClient';
import { bundleOf } from '../views/history/runs';
import { ExperimentPanel } from '../panel/panel';
import { scorepIcon } from './commands';

export const OPEN_TRACE_COMMAND = 'scorep:open-torch-trace';

/** Import `trace` (relative to the server root) and show it; the new tab, or null. */
export async function openTrace(
  app: JupyterFrontEnd,
  api: ScorepAPI,
  trace: string
): Promise<MainAreaWidget<ExperimentPanel> | null> {
  try {
    const { path, manifest } = await api.importTrace(trace);
    const panel = new ExperimentPanel(
      bundleOf({ path, manifest, disk_bytes: 0 }),
      api
    );
    const widget = new MainAreaWidget({ content: panel });
    widget.id = `scorep-trace-${manifest.id}`;
    widget.title.label = trace.split('/').pop() ?? trace;
    widget.title.caption = `torch.profiler trace ${trace}`;
    widget.title.icon = scorepIcon;
    widget.title.closable = true;
    app.shell.add(widget, 'main');
    return widget;
  } catch (error) {
    Notification.error(
      `Cannot open ${trace}: ${error instanceof Error ? error.message : String(error)}`,
      { autoClose: false }
    );
    return null;
  }
}

export function registerOpenTrace(
  app: JupyterFrontEnd,
  api = new ScorepAPI()
): void {
  app.commands.addCommand(OPEN_TRACE_COMMAND, {
    label: args =>
      args.path
        ? `Open ${String(args.path)} in the Score-P panel`
        : 'Open a torch.profiler trace…',
    caption:
      'Show a torch.profiler trace (export_chrome_trace, *.pt.trace.json) in the Score-P panel',
    icon: scorepIcon,
    execute: async args => {
      let trace = typeof args.path === 'string' ? args.path : '';
      if (!trace) {
        const answer = await InputDialog.getText({
          title: 'Open a torch.profiler trace',
          label:
            'The trace file (export_chrome_trace or *.pt.trace.json), relative to the server root:',
          placeholder: 'runs/train.pt.trace.json'
        });
        if (!answer.button.accept || !answer.value) {
          return null;
        }
        trace = answer.value.trim();
      }
      return openTrace(app, api, trace);
    }
  });
}
