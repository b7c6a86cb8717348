/**
 * The panel shown under a profiled cell: a header (backend, isolation, wall time, status,
 * events, the summary's verdicts, this cell's runs and the verdict against the previous
 * run), then tabs for the function summary, the timeline with metrics, the call tree, the
 * comparison with another run and exports. It is built from the kernel's MIME bundle
 * alone, so a notebook reopened from disk reloads everything from the experiment path.
 */
import { firstLocation } from '../views/calltree/treeRoot';
import { Message, MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import type {
  IExperiment,
  IExperimentBundle,
  IRunEntry,
  IVersion
} from '../api/experimentTypes';
import type { IComparison, ISummary } from '../api/analysisTypes';
import type { ScorepAPI } from '../api/apiClient';
import { el, errorText } from '../util/dom';
import { openRequested } from './openTools';
import { renderFacts, renderVerdicts } from './header';
import {
  comparable,
  panelCell,
  parentDir,
  previousRun
} from '../views/history/runs';
import { IRunsActions, RunsControl } from '../views/history/runsControl';
import { renderRunVerdict } from '../views/history/runVerdict';
import { failureText, progressText } from './loadStatus';
import { PanelPages, TabId } from './panelPages';
import { TabStrip } from '../util/tabStrip';

const POLL_MS = 1000;
const POLL_LIMIT_MS = 30 * 60 * 1000;

export interface IPanelOptions {
  /** show another run of the cell in place of this panel (the Runs list's Open) */
  openRun?: (entry: IRunEntry) => void;
  /** set when the panel shows an earlier run in place of the cell's output: goes back */
  back?: { note: string; go: () => void };
  /** replaces the delete confirmation dialog (tests) */
  confirm?: IRunsActions['confirm'];
}

export class ExperimentPanel extends Widget {
  constructor(
    readonly bundle: IExperimentBundle,
    private readonly api: ScorepAPI,
    private readonly options: IPanelOptions = {}
  ) {
    super();
    this.addClass('jp-scorep-panel');
    this.node.setAttribute('role', 'region');
    this.node.setAttribute(
      'aria-label',
      `${bundle.backend === 'scorep' ? 'Score-P' : 'Builtin tracer'} experiment ${bundle.id}`
    );
    this.node.dataset.path = bundle.path;

    this.header = el('div', 'jp-scorep-header');
    this.facts = el('div', 'jp-scorep-facts');
    this.message = el('div', 'jp-scorep-message');
    this.message.setAttribute('aria-live', 'polite');
    this.verdicts = el('ul', 'jp-scorep-verdicts');
    this.verdicts.setAttribute('aria-label', 'Findings');
    this.history = el('div', 'jp-scorep-history');
    this.runVerdict = el('div', 'jp-scorep-run-verdict');
    this.runVerdict.setAttribute('role', 'status');
    this.runVerdict.hidden = true;
    this.runs = new RunsControl(api, {
      open: entry => this.openRun(entry),
      compare: entry => {
        this.showTab('compare');
        void this.pages.compareView().compareWith(entry.path);
      },
      deleted: () => void this.loadHistory(),
      message: (text, isError) => this.setMessage(text, isError),
      confirm: options.confirm
    });
    this.history.append(this.runs.node, this.runVerdict);
    if (options.back) {
      const banner = el('div', 'jp-scorep-earlier');
      const back = el('button', 'jp-scorep-link', "Back to this cell's output");
      back.addEventListener('click', () => options.back!.go());
      banner.append(el('span', '', `${options.back.note} `), back);
      this.header.appendChild(banner);
      this.addClass('jp-scorep-panel-earlier');
    }
    this.header.append(this.facts, this.history, this.message, this.verdicts);

    this.tabs = new TabStrip<TabId>({
      tabs: [
        ['summary', 'Summary'],
        ['timeline', 'Timeline'],
        ['calltree', 'Call tree'],
        // an MPI cell's ranks side by side and their communication (GET ranks)
        ...(bundle.mpi ? [['ranks', 'Ranks']] : []),
        ['compare', 'Compare'],
        // Score-P's own view of a Score-P run (scorep-score), with its suggested filter
        ...(bundle.backend === 'scorep' ? [['scorep', 'Score-P']] : []),
        ['export', 'Export']
      ] as [TabId, string][],
      barClass: 'jp-scorep-tabs',
      pagesClass: 'jp-scorep-body',
      pageClass: id => `jp-scorep-page jp-scorep-page-${id}`,
      elementId: id => `jp-scorep-tab-${id}-${Private.nextId()}`,
      dataKey: 'tab',
      onPick: id => this.showTab(id)
    });
    this.node.append(this.header, this.tabs.bar, this.tabs.pages);
    this.pages = new PanelPages({
      api,
      path: bundle.path,
      page: id => this.tabs.page(id),
      reveal: id => this.reveal(id),
      message: (text, isError) => this.setMessage(text, isError),
      runs: () => this.runs.runs,
      previous: () => this.previous
    });
    this.renderFacts();
    this.setMessage(bundle.summary?.message ?? '', false);
    this.showTab('summary');
  }

  protected onAfterAttach(msg: Message): void {
    if (!this.started) {
      this.started = true;
      void this.load();
    }
    // back after a detach (a notebook scrolls outputs out of its window, or moves them):
    // the views attached into the pages are attached again with it
    this.forward(msg, view => !view.isAttached && view.node.isConnected);
  }

  protected onBeforeDetach(msg: Message): void {
    this.forward(msg, view => view.isAttached);
  }

  protected onAfterDetach(msg: Message): void {
    this.forward(msg, view => view.isAttached);
  }

  /**
   * The views live in the panel's pages (Widget.attach), not in a layout, so Lumino does not
   * pass the panel's attach and detach messages on to them: without this, a panel detached
   * with its notebook left them marked attached, and disposing them threw "Widget is not
   * attached." when the notebook was closed.
   */
  private forward(msg: Message, when: (view: Widget) => boolean): void {
    for (const view of this.pages.all()) {
      if (!view.isDisposed && when(view)) {
        MessageLoop.sendMessage(view, msg);
      }
    }
  }

  dispose(): void {
    this.disposedFlag = true;
    if (this.pollTimer) {
      clearTimeout(this.pollTimer);
    }
    this.stopTicker();
    for (const view of this.pages.all()) {
      view.dispose();
    }
    super.dispose();
  }

  /** Load the experiment; while its files are pending, poll and show progress. */
  async load(): Promise<void> {
    const started = Date.now();
    let experiment: IExperiment;
    for (;;) {
      try {
        experiment = await this.api.experiment(this.bundle.path);
      } catch (error) {
        this.setState('error');
        this.setMessage(errorText(error), true);
        return;
      }
      if (this.disposedFlag) {
        return;
      }
      this.experiment = experiment;
      this.renderFacts();
      const pending =
        experiment.manifest.files_status === 'pending' ||
        experiment.manifest.status === 'running';
      if (!pending && experiment.trace) {
        break;
      }
      if (!pending && !experiment.trace) {
        this.setState('error');
        this.setMessage(failureText(experiment), true);
        void this.loadHistory();
        await this.loadSecondary(experiment);
        return;
      }
      const elapsed = (Date.now() - started) / 1000;
      if (elapsed * 1000 > POLL_LIMIT_MS) {
        this.setState('error');
        this.setMessage(
          'The experiment is still being written after 30 minutes; rerun the cell output later (reopen the notebook) to look again.',
          true
        );
        return;
      }
      this.setState('processing');
      this.setMessage(progressText(experiment, elapsed), false);
      // the seconds count on while a poll waits for the server's answer
      this.startTicker(() =>
        progressText(experiment, (Date.now() - started) / 1000)
      );
      await new Promise<void>(resolve => {
        this.pollTimer = setTimeout(resolve, POLL_MS);
      });
      if (this.disposedFlag) {
        return;
      }
    }
    this.setState('ready');
    this.setMessage(this.bundle.summary?.message ?? '', false);
    this.pages.buildTimeline(experiment);
    void openRequested(this.api, this.bundle, experiment, (text, isError) =>
      this.setMessage(text, isError)
    );
    void this.loadHistory();
    await this.loadSecondary(experiment);
  }

  /**
   * This cell's runs (the Runs control), and the verdict against the previous run: shown
   * in the header when it is more than the run-to-run noise (the server decides, see
   * GET compare), and the Compare tab's first comparison.
   */
  async loadHistory(): Promise<void> {
    const manifest = this.experiment?.manifest;
    const cell = manifest ? panelCell(manifest, this.bundle) : null;
    if (!manifest || !cell?.cell_id) {
      return;
    }
    let runs;
    try {
      runs = await this.api.runs(
        manifest.notebook ?? null,
        cell.cell_id,
        parentDir(this.bundle.path)
      );
    } catch (error) {
      console.warn('jupyterlab-scorep: cannot list the cell’s runs.', error);
      return;
    }
    if (this.disposedFlag) {
      return;
    }
    this.runs.setRuns(runs, manifest, cell.cell_id);
    this.node.dataset.runs = String(runs.experiments.length);
    this.pages.compare?.setChoices(runs.experiments);
    const previous = previousRun(runs.experiments, manifest);
    if (
      !previous ||
      !comparable(manifest) ||
      this.previousPath === previous.path
    ) {
      return;
    }
    this.previousPath = previous.path;
    let comparison: IComparison;
    try {
      comparison = await this.api.compare(previous.path, this.bundle.path);
    } catch (error) {
      console.warn(
        'jupyterlab-scorep: cannot compare with the previous run.',
        error
      );
      return;
    }
    if (this.disposedFlag) {
      return;
    }
    this.previous = comparison;
    this.showRunVerdict(comparison, previous);
    const compare = this.pages.compare;
    if (compare && !compare.comparison) {
      void compare.compareWith(previous.path, comparison);
    }
  }

  private showRunVerdict(c: IComparison, previous: IRunEntry): void {
    this.node.dataset.verdict = c.verdict.kind;
    renderRunVerdict(this.runVerdict, c, previous, () =>
      this.reveal('compare')
    );
  }

  private openRun(entry: IRunEntry): void {
    if (this.options.openRun) {
      this.options.openRun(entry);
    }
  }

  private async loadSecondary(experiment: IExperiment): Promise<void> {
    const path = this.bundle.path;
    const [summary, version, tree] = await Promise.allSettled([
      this.api.summary(path),
      this.api.version(),
      this.api.calltree(path)
    ]);
    if (this.disposedFlag) {
      return;
    }
    if (summary.status === 'fulfilled') {
      this.summary = summary.value;
      this.renderFacts();
      this.renderVerdicts(summary.value);
      this.pages.showSummary(summary.value);
    } else {
      this.pages.showError('summary', summary.reason);
    }
    this.version = version.status === 'fulfilled' ? version.value : null;
    if (tree.status === 'fulfilled') {
      // several threads: open the tree of the one that ran the cell (calltree/treeRoot)
      const first = firstLocation(tree.value);
      const shown =
        first === null
          ? tree.value
          : await this.api.calltree(path, first).catch(() => tree.value);
      if (this.disposedFlag) {
        return;
      }
      this.pages.showCallTree(shown);
    } else {
      this.pages.showError('calltree', tree.reason);
    }
    this.pages.renderExport(experiment, this.version);
  }

  private renderFacts(): void {
    renderFacts(this.facts, this.bundle, this.experiment, this.summary);
  }

  private renderVerdicts(summary: ISummary): void {
    renderVerdicts(this.verdicts, summary);
  }

  private setState(state: 'processing' | 'ready' | 'error'): void {
    this.node.dataset.state = state;
    if (state !== 'processing') {
      this.stopTicker();
    }
  }

  /** Rewrite the progress message every second with `text()`, until the state changes. */
  private startTicker(text: () => string): void {
    this.stopTicker();
    this.ticker = setInterval(() => {
      if (this.node.dataset.state === 'processing') {
        this.setMessage(text(), false);
      }
    }, 1000);
  }

  private stopTicker(): void {
    if (this.ticker !== null) {
      clearInterval(this.ticker);
      this.ticker = null;
    }
  }

  private setMessage(text: string, isError: boolean): void {
    this.message.textContent = text;
    this.message.classList.toggle('jp-scorep-error', isError);
    this.message.hidden = !text;
    if (isError) {
      this.message.setAttribute('role', 'alert');
    } else {
      this.message.removeAttribute('role');
    }
  }

  private showTab(id: TabId): void {
    this.pages.opening(id);
    this.tabs.select(id);
  }

  /** Show tab `id` and focus it. */
  private reveal(id: TabId): void {
    this.showTab(id);
    this.tabs.tab(id).focus();
  }

  private readonly header: HTMLDivElement;
  private readonly facts: HTMLDivElement;
  private readonly message: HTMLDivElement;
  private readonly verdicts: HTMLUListElement;
  private ticker: ReturnType<typeof setInterval> | null = null;
  private readonly history: HTMLDivElement;
  private readonly runVerdict: HTMLDivElement;
  private readonly runs: RunsControl;
  /** the comparison with the previous run, once made */
  private previous: IComparison | null = null;
  private previousPath: string | null = null;
  private readonly tabs: TabStrip<TabId>;
  private readonly pages: PanelPages;
  private experiment: IExperiment | null = null;
  private summary: ISummary | null = null;
  private version: IVersion | null = null;
  private started = false;
  private disposedFlag = false;
  private pollTimer: ReturnType<typeof setTimeout> | null = null;
}

namespace Private {
  let id = 0;
  export function nextId(): number {
    return ++id;
  }
}
