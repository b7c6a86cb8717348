/**
 * The panel shown under a profiled cell: a header (backend, isolation, wall time, status,
 * events, the summary's verdicts, this cell's runs and the verdict against the previous
 * run), then tabs for the function summary, the timeline with metrics, the call tree, the
 * comparison with another run and exports. It is built from the kernel's MIME bundle
 * alone, so a notebook reopened from disk reloads everything from the experiment path.
 */
import { Message, MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import {
  ICallTree,
  IComparison,
  IExperiment,
  IExperimentBundle,
  IRunEntry,
  ISummary,
  IVersion
} from './api';
import { ScorepAPI } from './apiClient';
import { CallTreeView } from './calltree/treeTable';
import { CompareView } from './compare/compareView';
import { el, errorText } from './dom';
import { renderExport } from './exporttab';
import { renderFacts, renderVerdicts } from './header';
import {
  comparable,
  formatWhen,
  panelCell,
  parentDir,
  previousRun
} from './history/runs';
import { IRunsActions, RunsControl } from './history/runsControl';
import { MetricsView } from './metrics/metricsView';
import { RanksView } from './ranks/ranksView';
import { FunctionSummaryView } from './summary/functionSummary';
import { ScorePTab } from './scoreptab';
import { TimelineView } from './timeline/timelineView';

const POLL_MS = 1000;
const POLL_LIMIT_MS = 30 * 60 * 1000;

type TabId =
  | 'summary'
  | 'timeline'
  | 'calltree'
  | 'ranks'
  | 'compare'
  | 'scorep'
  | 'export';

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
    this.node.setAttribute('aria-label', `Score-P experiment ${bundle.id}`);
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
        void this.compareView().compareWith(entry.path);
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

    this.tabBar = el('div', 'jp-scorep-tabs');
    this.tabBar.setAttribute('role', 'tablist');
    this.body = el('div', 'jp-scorep-body');
    this.node.append(this.header, this.tabBar, this.body);
    for (const [id, title] of [
      ['summary', 'Summary'],
      ['timeline', 'Timeline'],
      ['calltree', 'Call tree'],
      // an MPI cell's ranks side by side and their communication (GET ranks)
      ...(bundle.mpi ? [['ranks', 'Ranks']] : []),
      ['compare', 'Compare'],
      // Score-P's own view of a Score-P run (scorep-score), with its suggested filter
      ...(bundle.backend === 'scorep' ? [['scorep', 'Score-P']] : []),
      ['export', 'Export']
    ] as [TabId, string][]) {
      const tab = el('button', 'jp-scorep-tab', title);
      tab.setAttribute('role', 'tab');
      tab.id = `jp-scorep-tab-${id}-${Private.nextId()}`;
      tab.dataset.tab = id;
      tab.addEventListener('click', () => this.showTab(id));
      tab.addEventListener('keydown', e => this.onTabKey(e, id));
      const page = el('div', `jp-scorep-page jp-scorep-page-${id}`);
      page.setAttribute('role', 'tabpanel');
      page.setAttribute('aria-labelledby', tab.id);
      this.tabBar.appendChild(tab);
      this.body.appendChild(page);
      this.tabs.set(id, { tab, page });
    }
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
    for (const view of this.views()) {
      if (!view.isDisposed && when(view)) {
        MessageLoop.sendMessage(view, msg);
      }
    }
  }

  private views(): Widget[] {
    return [
      this.timeline,
      this.metrics,
      this.calltree,
      this.functionSummary,
      this._compare,
      this._scorep,
      this._ranks
    ].filter(
      (view): view is NonNullable<typeof view> =>
        view !== null && view !== undefined
    );
  }

  dispose(): void {
    this.disposedFlag = true;
    if (this.pollTimer) {
      clearTimeout(this.pollTimer);
    }
    for (const view of this.views()) {
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
        this.setMessage(this.failureText(experiment), true);
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
      this.setMessage(this.progressText(experiment, elapsed), false);
      await new Promise<void>(resolve => {
        this.pollTimer = setTimeout(resolve, POLL_MS);
      });
      if (this.disposedFlag) {
        return;
      }
    }
    this.setState('ready');
    this.setMessage(this.bundle.summary?.message ?? '', false);
    this.buildTimeline(experiment);
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
    this._compare?.setChoices(runs.experiments);
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
    if (this._compare && !this._compare.comparison) {
      void this._compare.compareWith(previous.path, comparison);
    }
  }

  private showRunVerdict(c: IComparison, previous: IRunEntry): void {
    const v = c.verdict;
    this.runVerdict.dataset.kind = v.kind;
    this.node.dataset.verdict = v.kind;
    this.runVerdict.textContent = '';
    if (v.kind === 'within_noise') {
      // only a difference beyond the run-to-run noise is worth a line
      this.runVerdict.hidden = true;
      return;
    }
    this.runVerdict.hidden = false;
    this.runVerdict.title =
      `Against the run of ${formatWhen(previous.manifest.start_ns ?? null)}. ` +
      `Noise: ${v.noise.basis}.`;
    const open = el('button', 'jp-scorep-link', 'Compare');
    open.title = 'Open the comparison with the previous run';
    open.addEventListener('click', () => {
      this.showTab('compare');
      this.tabs.get('compare')!.tab.focus();
    });
    this.runVerdict.append(
      el('span', 'jp-scorep-run-verdict-kind', v.kind === 'slower' ? '▲' : '▼'),
      document.createTextNode(v.sentence + ' '),
      open
    );
  }

  private openRun(entry: IRunEntry): void {
    if (this.options.openRun) {
      this.options.openRun(entry);
    }
  }

  /** The Score-P tab's view, made (and loaded) on first use. */
  private scorepTab(): ScorePTab {
    if (!this._scorep) {
      const page = this.tabs.get('scorep')!.page;
      page.textContent = '';
      this._scorep = new ScorePTab({
        api: this.api,
        path: this.bundle.path,
        onMessage: (text, isError) => this.setMessage(text, isError)
      });
      Widget.attach(this._scorep, page);
    }
    return this._scorep;
  }

  /** The Ranks tab's view, made on first use. */
  private ranksView(): RanksView {
    if (!this._ranks) {
      const page = this.tabs.get('ranks')!.page;
      page.textContent = '';
      this._ranks = new RanksView(this.api, this.bundle.path);
      Widget.attach(this._ranks, page);
    }
    return this._ranks;
  }

  /** The Compare tab's view, made on first use. */
  private compareView(): CompareView {
    if (!this._compare) {
      const page = this.tabs.get('compare')!.page;
      page.textContent = '';
      this._compare = new CompareView(this.api, this.bundle.path);
      Widget.attach(this._compare, page);
      this._compare.setChoices(this.runs.runs);
      if (this.previous) {
        void this._compare.compareWith(this.previous.a.path, this.previous);
      }
    }
    return this._compare;
  }

  private progressText(experiment: IExperiment, elapsed: number): string {
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

  private failureText(experiment: IExperiment): string {
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
      this.showSummary(summary.value);
    } else {
      const page = this.tabs.get('summary')!.page;
      page.textContent = '';
      page.appendChild(el('div', 'jp-scorep-error', errorText(summary.reason)));
    }
    this.version = version.status === 'fulfilled' ? version.value : null;
    if (tree.status === 'fulfilled') {
      this.showCallTree(tree.value);
    } else {
      const page = this.tabs.get('calltree')!.page;
      page.textContent = '';
      page.appendChild(el('div', 'jp-scorep-error', errorText(tree.reason)));
    }
    this.renderExport(experiment);
  }

  private showSummary(summary: ISummary): void {
    const page = this.tabs.get('summary')!.page;
    this.functionSummary?.dispose();
    page.textContent = '';
    this.functionSummary = new FunctionSummaryView(summary, {
      select: name => {
        this.selectedFunction = name;
        this.timeline?.highlightRegion(name);
        if (name) {
          this.calltree?.revealRegion(name);
        }
      },
      show: where => {
        this.showTab(where);
        this.tabs.get(where)!.tab.focus();
      }
    });
    Widget.attach(this.functionSummary, page);
  }

  private showCallTree(tree: ICallTree): void {
    const page = this.tabs.get('calltree')!.page;
    this.calltree?.dispose();
    page.textContent = '';
    this.calltree = new CallTreeView(
      tree,
      node => {
        this.timeline?.highlightRegion(
          node && node.name !== tree.root.name ? node.name : null
        );
      },
      async location => {
        try {
          this.showCallTree(
            await this.api.calltree(this.bundle.path, location)
          );
        } catch (error) {
          this.setMessage(errorText(error), true);
        }
      }
    );
    Widget.attach(this.calltree, page);
    if (this.selectedFunction) {
      this.calltree.revealRegion(this.selectedFunction);
    }
  }

  private buildTimeline(experiment: IExperiment): void {
    const trace = experiment.trace!;
    const page = this.tabs.get('timeline')!.page;
    page.textContent = '';
    const path = this.bundle.path;
    const help = el(
      'div',
      'jp-scorep-help',
      'Wheel: zoom · drag: pan · shift-drag: zoom to selection · alt/ctrl-drag: measure · double-click or 0: show all'
    );
    this.timeline = new TimelineView({
      range: trace.range,
      locations: trace.locations,
      load: (req, signal) =>
        this.api.timeline(path, req.t0, req.t1, req.width, signal)
    });
    Widget.attach(this.timeline, page);
    page.appendChild(help);
    if (experiment.available.metrics) {
      this.metrics = new MetricsView((req, signal) =>
        this.api.metrics(path, req.t0, req.t1, req.width, signal)
      );
      Widget.attach(this.metrics, page);
      this.timeline.viewChanged.connect((_, view) => {
        this.metrics?.setView(view, this.timeline!.plotWidth);
      });
    }
  }

  private renderExport(experiment: IExperiment): void {
    renderExport(this.tabs.get('export')!.page, {
      api: this.api,
      path: this.bundle.path,
      experiment,
      version: this.version,
      onMessage: (text, isError) => this.setMessage(text, isError)
    });
  }

  private renderFacts(): void {
    renderFacts(this.facts, this.bundle, this.experiment, this.summary);
  }

  private renderVerdicts(summary: ISummary): void {
    renderVerdicts(this.verdicts, summary);
  }

  private setState(state: 'processing' | 'ready' | 'error'): void {
    this.node.dataset.state = state;
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
    if (id === 'ranks') {
      void this.ranksView().load();
    }
    if (id === 'scorep') {
      void this.scorepTab().load();
    }
    if (id === 'compare') {
      const view = this.compareView();
      void view.loadOthers();
    }
    for (const [key, { tab, page }] of this.tabs) {
      const on = key === id;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      tab.classList.toggle('jp-scorep-tab-current', on);
      page.hidden = !on;
    }
  }

  private onTabKey(e: KeyboardEvent, id: TabId): void {
    const ids = [...this.tabs.keys()];
    const i = ids.indexOf(id);
    let next: TabId | null = null;
    if (e.key === 'ArrowRight') {
      next = ids[(i + 1) % ids.length];
    } else if (e.key === 'ArrowLeft') {
      next = ids[(i + ids.length - 1) % ids.length];
    }
    if (next) {
      e.preventDefault();
      this.showTab(next);
      this.tabs.get(next)!.tab.focus();
    }
  }

  private readonly header: HTMLDivElement;
  private readonly facts: HTMLDivElement;
  private readonly message: HTMLDivElement;
  private readonly verdicts: HTMLUListElement;
  private readonly history: HTMLDivElement;
  private readonly runVerdict: HTMLDivElement;
  private readonly runs: RunsControl;
  private functionSummary: FunctionSummaryView | null = null;
  private selectedFunction: string | null = null;
  private _compare: CompareView | null = null;
  private _scorep: ScorePTab | null = null;
  private _ranks: RanksView | null = null;
  /** the comparison with the previous run, once made */
  private previous: IComparison | null = null;
  private previousPath: string | null = null;
  private readonly tabBar: HTMLDivElement;
  private readonly body: HTMLDivElement;
  private readonly tabs = new Map<
    TabId,
    { tab: HTMLButtonElement; page: HTMLDivElement }
  >();
  private experiment: IExperiment | null = null;
  private summary: ISummary | null = null;
  private version: IVersion | null = null;
  private timeline: TimelineView | null = null;
  private metrics: MetricsView | null = null;
  private calltree: CallTreeView | null = null;
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
