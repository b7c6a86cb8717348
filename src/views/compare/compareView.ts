/**
 * The Compare tab: this run (B) against another (A; by default the previous run of the
 * same cell, or any experiment on the server). The verdict in words, then three views:
 * per function A, B, Δ and Δ% of exclusive and inclusive time and visits, sorted by |Δ|;
 * the merged call tree with a Δ column (added and removed paths marked); both timelines
 * stacked on one time axis counted from each run's cells' start (zoom and pan move both),
 * with the metric charts overlaid.
 */
import { Widget } from '@lumino/widgets';
import type { IComparison, ICompareRun } from '../../api/analysisTypes';
import type { ScorepAPI } from '../../api/apiClient';
import { el, errorText } from '../../util/dom';
import { backendName, formatWhen, measuredDifferently } from '../history/runs';
import { TabStrip } from '../../util/tabStrip';
import { formatSeconds } from '../../util/timeaxis';
import type { IWindowRequest } from '../timeline/fetcher';
import { TimelineView } from '../timeline/timelineView';
import { CallTreeDeltaTable } from './callTreeDeltaTable';
import { FunctionDeltaTable } from './functionDeltaTable';
import { MetricsOverlay } from './metricsOverlay';
import { ICandidate, RunPicker } from './runPicker';
import { fromRun, ISharedAxis, sharedAxis, toRun } from './sharedAxis';

type Page = 'functions' | 'tree' | 'timelines';

let nextId = 0;

export class CompareView extends Widget {
  constructor(
    private readonly api: ScorepAPI,
    /** run B: the run the panel shows */
    private readonly path: string
  ) {
    super();
    this.addClass('jp-scorep-compare');
    this.picker = new RunPicker(api, path, a => void this.compareWith(a));

    this.verdict = el('div', 'jp-scorep-compare-verdict');
    this.verdict.setAttribute('aria-live', 'polite');
    this.facts = el('div', 'jp-scorep-compare-facts');

    const id = ++nextId;
    this.tabs = new TabStrip<Page>({
      tabs: [
        ['functions', 'Functions'],
        ['tree', 'Call tree Δ'],
        ['timelines', 'Timelines']
      ],
      barClass: 'jp-scorep-tabs jp-scorep-compare-tabs',
      pagesClass: 'jp-scorep-compare-pages',
      pageClass: page =>
        `jp-scorep-compare-page jp-scorep-compare-page-${page}`,
      elementId: page => `jp-scorep-compare-${page}-${id}`,
      dataKey: 'page',
      onPick: page => this.showPage(page)
    });
    this.tabs.bar.setAttribute('aria-label', 'Comparison views');
    this.functions = new FunctionDeltaTable(this.tabs.page('functions'));
    this.tree = new CallTreeDeltaTable(this.tabs.page('tree'));
    this.node.append(
      this.picker.node,
      this.verdict,
      this.facts,
      this.tabs.bar,
      this.tabs.pages
    );
    this.verdict.textContent =
      'Pick a run to compare with: this cell’s earlier runs, or any experiment on the server.';
    this.showPage('functions');
  }

  /** The comparison shown (null before one was made). */
  get comparison(): IComparison | null {
    return this._comparison;
  }

  /** The runs offered in the picker: the cell's runs first, then other experiments. */
  setChoices(cellRuns: ICandidate[], others?: ICandidate[]): void {
    this.picker.setChoices(cellRuns, others);
  }

  /** Load the other experiments the server lists (beside this run, and at the roots). */
  loadOthers(): Promise<void> {
    return this.picker.loadOthers();
  }

  /** Compare with run `a` (a path); `known` is a comparison already fetched. */
  async compareWith(a: string, known?: IComparison): Promise<void> {
    const seq = ++this.sequence;
    this.node.dataset.state = 'loading';
    this.verdict.textContent = 'Comparing…';
    this.verdict.removeAttribute('data-kind');
    let c: IComparison;
    try {
      c = known ?? (await this.api.compare(a, this.path));
    } catch (error) {
      if (seq === this.sequence) {
        this.node.dataset.state = 'error';
        this.verdict.textContent = errorText(error);
        this.verdict.classList.add('jp-scorep-error');
      }
      return;
    }
    if (seq !== this.sequence || this.isDisposed) {
      return;
    }
    this.verdict.classList.remove('jp-scorep-error');
    this._comparison = c;
    this.picker.chosen(c.a.path, c.a.id);
    this.renderVerdict(c);
    this.functions.show(c);
    this.tree.show(c);
    await this.buildTimelines(c, seq);
    if (seq === this.sequence) {
      this.node.dataset.state = 'ready';
    }
  }

  dispose(): void {
    this.disposeTimelines();
    super.dispose();
  }

  // -- verdict -----------------------------------------------------------------------

  private renderVerdict(c: IComparison): void {
    const v = c.verdict;
    this.verdict.textContent = '';
    this.verdict.dataset.kind = v.kind;
    this.verdict.append(el('span', 'jp-scorep-compare-sentence', v.sentence));
    const noise = el(
      'span',
      'jp-scorep-hint',
      `Noise: ${v.noise.basis}; floor ${formatSeconds(v.noise.floor_s)}.`
    );
    this.verdict.appendChild(noise);
    const differently = measuredDifferently(c.a, c.b);
    if (differently) {
      const warn = el('div', 'jp-scorep-compare-warning', `⚠ ${differently}`);
      warn.setAttribute('role', 'note');
      this.verdict.appendChild(warn);
    }
    const run = (r: ICompareRun, name: string) =>
      `${name}: ${formatWhen(r.start_ns ?? null)} · ${backendName(r.backend)}` +
      `${r.isolation ? `, ${r.isolation}` : ''} · ${formatSeconds(name === 'A' ? c.total.a_s : c.total.b_s)} measured` +
      (r.status !== 'ok' ? ` · ${r.status}` : '');
    this.facts.textContent =
      `${run(c.a, 'A')}   →   ${run(c.b, 'B')} · ` +
      (c.same_source ? 'same source' : 'source changed') +
      (c.outside.a_s || c.outside.b_s
        ? ` · outside the cells: A ${formatSeconds(c.outside.a_s)}, B ${formatSeconds(c.outside.b_s)}`
        : '');
  }

  // -- timelines and metrics ---------------------------------------------------------

  private async buildTimelines(c: IComparison, seq: number): Promise<void> {
    this.disposeTimelines();
    const div = this.tabs.page('timelines');
    div.textContent = '';
    const [ea, eb] = await Promise.allSettled([
      this.api.experiment(c.a.path),
      this.api.experiment(c.b.path)
    ]);
    if (seq !== this.sequence || this.isDisposed) {
      return;
    }
    const axis = sharedAxis(c.a, c.b);
    this.axis = axis;
    div.appendChild(
      el(
        'div',
        'jp-scorep-help',
        c.a.cell_span && c.b.cell_span
          ? 'Both runs on one time axis counted from their cells’ start. Zoom or pan either timeline: the other follows.'
          : 'Both runs on one time axis counted from their starts (no cell region found). Zoom or pan either timeline: the other follows.'
      )
    );
    const views: (TimelineView | null)[] = [];
    for (const [name, run, result, offset] of [
      ['A', c.a, ea, axis.offsetA],
      ['B', c.b, eb, axis.offsetB]
    ] as const) {
      const label = el(
        'div',
        'jp-scorep-compare-lane-title',
        `${name} · ${formatWhen(run.start_ns ?? null)} · ${backendName(run.backend)}`
      );
      div.appendChild(label);
      const trace = result.status === 'fulfilled' ? result.value.trace : null;
      if (!trace) {
        div.appendChild(
          el(
            'div',
            'jp-scorep-hint',
            result.status === 'rejected'
              ? errorText(result.reason)
              : `Run ${name} has no readable trace.`
          )
        );
        views.push(null);
        continue;
      }
      const path = run.path;
      const view = new TimelineView({
        range: [axis.range[0] + offset, axis.range[1] + offset],
        axisOrigin: offset,
        locations: trace.locations,
        load: (req, signal) =>
          this.api.timeline(path, req.t0, req.t1, req.width, signal)
      });
      view.node.dataset.run = name;
      Widget.attach(view, div);
      view.setView(toRun(axis.initial, offset), false);
      views.push(view);
    }
    const [ta, tb] = views;
    this.timelines = views.filter((v): v is TimelineView => v !== null);
    const metricsOf = (run: ICompareRun) =>
      run.metrics
        ? (req: IWindowRequest, signal: AbortSignal) =>
            this.api.metrics(run.path, req.t0, req.t1, req.width, signal)
        : null;
    const metricsA = metricsOf(c.a);
    const metricsB = metricsOf(c.b);
    if (metricsA || metricsB) {
      this.overlay = new MetricsOverlay(
        metricsA,
        metricsB,
        axis.offsetA,
        axis.offsetB
      );
      Widget.attach(this.overlay, div);
    }
    const follow = (from: TimelineView, fromOffset: number) => {
      from.viewChanged.connect((_, view) => {
        if (this.syncing) {
          return;
        }
        this.syncing = true;
        const shared = fromRun(view, fromOffset);
        try {
          if (from === ta && tb) {
            tb.setView(toRun(shared, axis.offsetB));
          } else if (from === tb && ta) {
            ta.setView(toRun(shared, axis.offsetA));
          }
        } finally {
          this.syncing = false;
        }
        this.overlay?.setView(shared, from.plotWidth);
      });
    };
    if (ta) {
      follow(ta, axis.offsetA);
    }
    if (tb) {
      follow(tb, axis.offsetB);
    }
  }

  private disposeTimelines(): void {
    for (const t of this.timelines) {
      t.dispose();
    }
    this.timelines = [];
    this.overlay?.dispose();
    this.overlay = null;
  }

  // -- tabs --------------------------------------------------------------------------

  showPage(page: Page): void {
    this.tabs.select(page);
  }

  /** The shared axis of the timelines shown (null before a comparison). */
  get sharedAxis(): ISharedAxis | null {
    return this.axis;
  }

  private readonly picker: RunPicker;
  private readonly verdict: HTMLDivElement;
  private readonly facts: HTMLDivElement;
  private readonly tabs: TabStrip<Page>;
  private readonly functions: FunctionDeltaTable;
  private readonly tree: CallTreeDeltaTable;
  private _comparison: IComparison | null = null;
  private sequence = 0;
  private timelines: TimelineView[] = [];
  private overlay: MetricsOverlay | null = null;
  private syncing = false;
  private axis: ISharedAxis | null = null;
}
