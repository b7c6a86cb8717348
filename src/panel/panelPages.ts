/**
 * The views in the panel's tab pages. The summary, timeline (with metrics), call tree and
 * export are made when their data arrives; Ranks, Compare and Score-P on first use. A
 * function picked in the summary is highlighted in the timeline and revealed in the call
 * tree, a node picked in the call tree highlighted in the timeline.
 */
import { TreeModes } from '../views/calltree/treeModes';
import { presentTree } from '../views/calltree/treeRoot';
import { Widget } from '@lumino/widgets';
import type { IExperiment, IRunEntry, IVersion } from '../api/experimentTypes';
import type { ICallTree } from '../api/traceTypes';
import type { IComparison, ISummary } from '../api/analysisTypes';
import type { ScorepAPI } from '../api/apiClient';
import { CallTreeView } from '../views/calltree/treeTable';
import { CompareView } from '../views/compare/compareView';
import { el, errorText } from '../util/dom';
import { renderExport } from '../views/exporttab';
import { MetricsView } from '../views/metrics/metricsView';
import { RanksView } from '../views/ranks/ranksView';
import { ScorePTab } from '../views/scoreptab';
import { FunctionSummaryView } from '../views/summary/functionSummary';
import { renderDeviceSummary } from '../views/summary/deviceSummary';
import { TimelineView } from '../views/timeline/timelineView';
import { gestureHelp } from '../views/timeline/interaction';

export type TabId =
  | 'summary'
  | 'timeline'
  | 'calltree'
  | 'ranks'
  | 'compare'
  | 'scorep'
  | 'export';

/** What the pages need of the panel. */
export interface IPanelPagesHost {
  api: ScorepAPI;
  /** the run's experiment path */
  path: string;
  page(id: TabId): HTMLDivElement;
  /** show tab `id` and focus it */
  reveal(id: TabId): void;
  message(text: string, isError: boolean): void;
  /** this cell's runs, offered by a Compare view made later */
  runs(): IRunEntry[];
  /** the comparison with the previous run, shown first by a Compare view made later */
  previous(): IComparison | null;
}

export class PanelPages {
  constructor(private readonly host: IPanelPagesHost) {}

  /** The views made so far. */
  all(): Widget[] {
    return [
      this.timeline,
      this.metrics,
      this.calltree,
      ...(this.treeModes?.views.slice(1) ?? []),
      this.functionSummary,
      this._compare,
      this._scorep,
      this._ranks
    ].filter(
      (view): view is NonNullable<typeof view> =>
        view !== null && view !== undefined
    );
  }

  /** The Compare view, when it was made. */
  get compare(): CompareView | null {
    return this._compare;
  }

  /** Tab `id` is being shown: make (and load) its view when it is made on first use. */
  opening(id: TabId): void {
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
  }

  /** The Compare tab's view, made on first use. */
  compareView(): CompareView {
    if (!this._compare) {
      const page = this.host.page('compare');
      page.textContent = '';
      this._compare = new CompareView(this.host.api, this.host.path);
      Widget.attach(this._compare, page);
      this._compare.setChoices(this.host.runs());
      const previous = this.host.previous();
      if (previous) {
        void this._compare.compareWith(previous.a.path, previous);
      }
    }
    return this._compare;
  }

  /** A page whose data could not be loaded: the error in words. */
  showError(id: TabId, error: unknown): void {
    const page = this.host.page(id);
    page.textContent = '';
    page.appendChild(el('div', 'jp-scorep-error', errorText(error)));
  }

  showSummary(summary: ISummary): void {
    const page = this.host.page('summary');
    this.functionSummary?.dispose();
    page.textContent = '';
    if (summary.device) {
      page.appendChild(renderDeviceSummary(summary.device));
    }
    this.functionSummary = new FunctionSummaryView(summary, {
      select: name => {
        this.selectedFunction = name;
        this.timeline?.highlightRegion(name);
        if (name) {
          this.treeModes?.show('top-down');
          this.calltree?.revealRegion(name);
        }
      },
      show: where => this.host.reveal(where)
    });
    Widget.attach(this.functionSummary, page);
  }

  showCallTree(answer: ICallTree): void {
    // the cell (or a named sum over the threads) at the top, not the experiment's id
    const tree = presentTree(answer);
    const page = this.host.page('calltree');
    this.treeModes?.dispose();
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
            await this.host.api.calltree(this.host.path, location)
          );
        } catch (error) {
          this.host.message(errorText(error), true);
        }
      }
    );
    // top-down, bottom-up and a flame graph of the same tree (calltree/treeModes)
    this.treeModes = new TreeModes(page, tree, this.calltree);
    if (this.selectedFunction) {
      this.calltree.revealRegion(this.selectedFunction);
    }
  }

  buildTimeline(experiment: IExperiment): void {
    const trace = experiment.trace!;
    const page = this.host.page('timeline');
    page.textContent = '';
    const { api, path } = this.host;
    const help = el('div', 'jp-scorep-help');
    // search the timeline's regions by name, as Perfetto's search box does
    const bar = el('div', 'jp-scorep-timeline-bar');
    const search = el('input', 'jp-scorep-timeline-search jp-mod-styled');
    search.type = 'search';
    search.placeholder = 'Search the timeline…';
    search.setAttribute('aria-label', 'Search the timeline by region name');
    const found = el('span', 'jp-scorep-hint jp-scorep-timeline-found');
    found.setAttribute('aria-live', 'polite');
    search.addEventListener('input', () => {
      found.textContent = '';
      this.timeline?.search(search.value);
    });
    bar.append(search, found);
    page.appendChild(bar);
    this.timeline = new TimelineView({
      range: trace.range,
      locations: trace.locations,
      load: (req, signal) =>
        api.timeline(path, req.t0, req.t1, req.width, signal, {
          rows: req.rows,
          ranks: req.ranks
        }),
      // device lanes: a kernel's launch and back (GET link)
      links: trace.locations.some(l => l.kind === 'gpu')
        ? async (location, start) =>
            (await api.link(path, location, start)).links
        : undefined
    });
    this.timeline.onSearchMatches = n => {
      found.textContent = search.value.trim()
        ? `${n} region${n === 1 ? '' : 's'} in view match`
        : '';
    };
    Widget.attach(this.timeline, page);
    help.textContent = gestureHelp(this.timeline.manyRanks);
    page.appendChild(help);
    if (experiment.available.metrics) {
      this.metrics = new MetricsView((req, signal) =>
        api.metrics(path, req.t0, req.t1, req.width, signal)
      );
      Widget.attach(this.metrics, page);
      this.timeline.viewChanged.connect((_, view) => {
        this.metrics?.setView(view, this.timeline!.plotWidth);
      });
    }
  }

  renderExport(experiment: IExperiment, version: IVersion | null): void {
    renderExport(this.host.page('export'), {
      api: this.host.api,
      path: this.host.path,
      experiment,
      version,
      onMessage: (text, isError) => this.host.message(text, isError)
    });
  }

  /** The Score-P tab's view, made (and loaded) on first use. */
  private scorepTab(): ScorePTab {
    if (!this._scorep) {
      const page = this.host.page('scorep');
      page.textContent = '';
      this._scorep = new ScorePTab({
        api: this.host.api,
        path: this.host.path,
        onMessage: (text, isError) => this.host.message(text, isError)
      });
      Widget.attach(this._scorep, page);
    }
    return this._scorep;
  }

  /** The Ranks tab's view, made on first use. */
  private ranksView(): RanksView {
    if (!this._ranks) {
      const page = this.host.page('ranks');
      page.textContent = '';
      this._ranks = new RanksView(this.host.api, this.host.path);
      Widget.attach(this._ranks, page);
    }
    return this._ranks;
  }

  private functionSummary: FunctionSummaryView | null = null;
  private selectedFunction: string | null = null;
  private timeline: TimelineView | null = null;
  private metrics: MetricsView | null = null;
  private calltree: CallTreeView | null = null;
  private treeModes: TreeModes | null = null;
  private _compare: CompareView | null = null;
  private _scorep: ScorePTab | null = null;
  private _ranks: RanksView | null = null;
}
