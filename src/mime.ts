/**
 * The MIME renderer for `application/vnd.scorep.experiment+json`: the kernel's display_data
 * for a profiled cell becomes an {@link ExperimentPanel}.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Message, MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { IExperimentBundle, IRunEntry, MIME_TYPE } from './api/experimentTypes';
import { ScorepAPI } from './api/apiClient';
import { bundleOf, formatWhen } from './views/history/runs';
import { ExperimentPanel } from './panel/panel';

export class ExperimentRenderer
  extends Widget
  implements IRenderMime.IRenderer
{
  constructor(private readonly api: ScorepAPI) {
    super();
    this.addClass('jp-scorep-renderer');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[MIME_TYPE] as unknown as
      IExperimentBundle | undefined;
    if (!data || typeof data.path !== 'string') {
      this.node.textContent =
        'This Score-P output has no experiment path; rerun the cell to profile it again.';
      return;
    }
    if (
      this.panel &&
      this.output &&
      this.output.path === data.path &&
      this.output.status === data.status
    ) {
      return;
    }
    this.output = data;
    this.showRun(data, null);
  }

  /**
   * Show a run: the cell's own output (`earlier` null), or one of its earlier runs in
   * place of it, with a way back.
   */
  private showRun(bundle: IExperimentBundle, earlier: IRunEntry | null): void {
    this.panel?.dispose();
    this.node.textContent = '';
    const output = this.output!;
    this.panel = new ExperimentPanel(bundle, this.api, {
      openRun: entry =>
        this.showRun(
          entry.path === output.path ? output : bundleOf(entry),
          entry.path === output.path ? null : entry
        ),
      back: earlier
        ? {
            note: `Showing an earlier run of this cell, of ${formatWhen(
              earlier.manifest.start_ns ?? null
            )}.`,
            go: () => this.showRun(output, null)
          }
        : undefined
    });
    if (this.isAttached) {
      Widget.attach(this.panel, this.node);
    } else {
      this.pendingAttach = true;
    }
  }

  /*
   * The panel is attached into this renderer's node (Widget.attach), not through a layout,
   * so Lumino passes the renderer's attach and detach messages on to it only through these:
   * without them a re-run (the output area removes the renderer, then disposes it) left the
   * panel marked attached in a detached node, and its dispose threw "Widget is not
   * attached." in the console on every re-run.
   */
  protected onAfterAttach(msg: Message): void {
    if (this.pendingAttach && this.panel) {
      this.pendingAttach = false;
      Widget.attach(this.panel, this.node);
    } else if (
      this.panel &&
      !this.panel.isAttached &&
      this.panel.node.isConnected
    ) {
      MessageLoop.sendMessage(this.panel, msg);
    }
  }

  protected onBeforeDetach(msg: Message): void {
    if (this.panel?.isAttached) {
      MessageLoop.sendMessage(this.panel, msg);
    }
  }

  protected onAfterDetach(msg: Message): void {
    if (this.panel?.isAttached) {
      MessageLoop.sendMessage(this.panel, msg);
    }
  }

  dispose(): void {
    this.panel?.dispose();
    super.dispose();
  }

  private panel: ExperimentPanel | null = null;
  /** the bundle of the cell's output (the panel may show an earlier run instead) */
  private output: IExperimentBundle | null = null;
  private pendingAttach = false;
}

let sharedApi: ScorepAPI | null = null;

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 10,
  createRenderer: () => {
    sharedApi = sharedApi ?? new ScorepAPI();
    return new ExperimentRenderer(sharedApi);
  }
};

const extension: IRenderMime.IExtension = {
  id: 'jupyterlab-scorep:mime',
  description:
    'Shows a profiled cell’s Score-P experiment (timeline, call tree, metrics).',
  rendererFactory,
  rank: 10,
  dataType: 'json'
};

export default extension;
