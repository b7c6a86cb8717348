/**
 * The Compare tab: this run (B) against another (A; by default the previous run of the
 * same cell, or any experiment on the server). The verdict in words, then three views:
 * per function A, B, Δ and Δ% of exclusive and inclusive time and visits, sorted by |Δ|;
 * the merged call tree with a Δ column (added and removed paths marked); both timelines
 * stacked on one time axis counted from each run's cells' start (zoom and pan move both),
 * with the metric charts overlaid.
 */
import { Widget } from '@lumino/widgets';
import type {
  IComparison,
  ICompareRun,
  IFunctionDelta,
  IManifest
} from '../api';
import type { ScorepAPI } from '../apiClient';
import { el, errorText } from '../dom';
import { backendName, formatWhen, parentDir } from '../history/runs';
import { formatSeconds } from '../timeaxis';
import type { IWindowRequest } from '../timeline/fetcher';
import { TimelineView } from '../timeline/timelineView';
import { MetricsOverlay } from './metricsOverlay';
import {
  changed,
  DeltaKey,
  diffRows,
  formatCountDelta,
  formatDelta,
  formatPct,
  mostChangedPath,
  sortByDelta
} from './deltas';
import { fromRun, ISharedAxis, sharedAxis, toRun } from './sharedAxis';

type Page = 'functions' | 'tree' | 'timelines';

export interface ICandidate {
  path: string;
  manifest: IManifest;
}

let nextId = 0;

export class CompareView extends Widget {
  constructor(
    private readonly api: ScorepAPI,
    /** run B: the run the panel shows */
    private readonly path: string
  ) {
    super();
    this.addClass('jp-scorep-compare');
    const bar = el('div', 'jp-scorep-compare-bar');
    const label = el(
      'label',
      'jp-scorep-compare-label',
      'Compare this run (B) with '
    );
    this.select = el('select', 'jp-scorep-compare-select');
    this.select.setAttribute('aria-label', 'The run to compare with (A)');
    this.select.addEventListener('change', () => {
      if (this.select.value) {
        void this.compareWith(this.select.value);
      }
    });
    label.appendChild(this.select);
    this.pathInput = el('input', 'jp-scorep-compare-path');
    this.pathInput.type = 'text';
    this.pathInput.placeholder = 'or an experiment path…';
    this.pathInput.setAttribute(
      'aria-label',
      'Path of an experiment to compare with'
    );
    this.pathInput.addEventListener('keydown', e => {
      if (e.key === 'Enter' && this.pathInput.value.trim()) {
        void this.compareWith(this.pathInput.value.trim());
      }
    });
    const go = el('button', 'jp-scorep-button', 'Compare');
    go.addEventListener('click', () => {
      if (this.pathInput.value.trim()) {
        void this.compareWith(this.pathInput.value.trim());
      }
    });
    bar.append(label, this.pathInput, go);

    this.verdict = el('div', 'jp-scorep-compare-verdict');
    this.verdict.setAttribute('aria-live', 'polite');
    this.facts = el('div', 'jp-scorep-compare-facts');

    this.tabBar = el('div', 'jp-scorep-tabs jp-scorep-compare-tabs');
    this.tabBar.setAttribute('role', 'tablist');
    this.tabBar.setAttribute('aria-label', 'Comparison views');
    this.pages = el('div', 'jp-scorep-compare-pages');
    const id = ++nextId;
    for (const [page, title] of [
      ['functions', 'Functions'],
      ['tree', 'Call tree Δ'],
      ['timelines', 'Timelines']
    ] as [Page, string][]) {
      const tab = el('button', 'jp-scorep-tab', title);
      tab.setAttribute('role', 'tab');
      tab.id = `jp-scorep-compare-${page}-${id}`;
      tab.dataset.page = page;
      tab.addEventListener('click', () => this.showPage(page));
      tab.addEventListener('keydown', e => this.onTabKey(e, page));
      const div = el(
        'div',
        `jp-scorep-compare-page jp-scorep-compare-page-${page}`
      );
      div.setAttribute('role', 'tabpanel');
      div.setAttribute('aria-labelledby', tab.id);
      this.tabBar.appendChild(tab);
      this.pages.appendChild(div);
      this.pageMap.set(page, { tab, div });
    }
    this.node.append(bar, this.verdict, this.facts, this.tabBar, this.pages);
    this.verdict.textContent =
      'Pick a run to compare with: this cell’s earlier runs, or any experiment on the server.';
    this.showPage('functions');
  }

  /** The comparison shown (null before one was made). */
  get comparison(): IComparison | null {
    return this._comparison;
  }

  /** The runs offered in the picker: the cell's runs first, then other experiments. */
  setChoices(cellRuns: ICandidate[], others: ICandidate[] = this.others): void {
    this.cellRuns = cellRuns.filter(c => c.path !== this.path);
    const mine = new Set(this.cellRuns.map(c => c.path));
    this.others = others.filter(c => c.path !== this.path && !mine.has(c.path));
    this.renderChoices();
  }

  /** Load the other experiments the server lists (beside this run, and at the roots). */
  async loadOthers(): Promise<void> {
    if (this.othersLoaded) {
      return;
    }
    this.othersLoaded = true;
    const lists = await Promise.allSettled([
      this.api.experiments(parentDir(this.path)),
      this.api.experiments()
    ]);
    const seen = new Map<string, ICandidate>();
    for (const l of lists) {
      if (l.status === 'fulfilled') {
        for (const e of l.value.experiments) {
          seen.set(e.path, e);
        }
      }
    }
    this.setChoices(this.cellRuns, [...seen.values()]);
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
    if (![...this.select.options].some(o => o.value === c.a.path)) {
      this.others = [
        { path: c.a.path, manifest: { id: c.a.id } as IManifest },
        ...this.others
      ];
      this.renderChoices();
    }
    this.select.value = c.a.path;
    this.renderVerdict(c);
    this.renderFunctions();
    this.renderTree(new Set(mostChangedPath(c.tree)));
    await this.buildTimelines(c, seq);
    if (seq === this.sequence) {
      this.node.dataset.state = 'ready';
    }
  }

  dispose(): void {
    this.disposeTimelines();
    super.dispose();
  }

  // -- the picker --------------------------------------------------------------------

  private renderChoices(): void {
    const value = this.select.value;
    this.select.textContent = '';
    const placeholder = new Option('choose a run…', '');
    placeholder.disabled = true;
    this.select.add(placeholder);
    const describe = (c: ICandidate) => {
      const m = c.manifest;
      const cell = (m.cells ?? [])[m.cells ? m.cells.length - 1 : 0];
      const parts = [
        formatWhen(typeof m.start_ns === 'number' ? m.start_ns : null),
        cell?.execution_count !== undefined ? `[${cell.execution_count}]` : '',
        typeof m.wall_s === 'number' ? formatSeconds(m.wall_s) : '',
        m.backend ? backendName(m.backend) : '',
        m.status ?? ''
      ].filter(Boolean);
      return parts.length > 1 ? parts.join(' · ') : m.id;
    };
    const group = (title: string, list: ICandidate[]) => {
      if (!list.length) {
        return;
      }
      const g = document.createElement('optgroup');
      g.label = title;
      for (const c of list) {
        const o = new Option(describe(c), c.path);
        o.title = c.path;
        g.appendChild(o);
      }
      this.select.appendChild(g);
    };
    group("This cell's runs", this.cellRuns);
    group('Other experiments', this.others);
    this.select.value = value;
    if (this.select.selectedIndex < 0) {
      this.select.value = '';
    }
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

  // -- functions ---------------------------------------------------------------------

  private renderFunctions(): void {
    const c = this._comparison;
    const div = this.pageMap.get('functions')!.div;
    div.textContent = '';
    if (!c) {
      return;
    }
    const bar = el('div', 'jp-scorep-compare-tools');
    const only = el('label', '');
    const box = el('input');
    box.type = 'checkbox';
    box.checked = this.onlyChanged;
    box.addEventListener('change', () => {
      this.onlyChanged = box.checked;
      this.renderFunctions();
    });
    only.append(
      box,
      document.createTextNode(
        ' only changes (beyond noise, visits, new or gone)'
      )
    );
    bar.appendChild(only);
    if (c.truncated?.functions_dropped) {
      bar.appendChild(
        el(
          'span',
          'jp-scorep-hint',
          `${c.truncated.functions_dropped.toLocaleString()} functions with the smallest changes left out`
        )
      );
    }
    const table = el(
      'table',
      'jp-scorep-compare-table jp-scorep-compare-functions'
    );
    table.setAttribute('aria-label', 'Functions of both runs');
    // fixed column widths: the layout does not move with the numbers
    const cols = el('colgroup');
    cols.appendChild(el('col', 'jp-scorep-col-name'));
    for (let i = 0; i < 11; i++) {
      cols.appendChild(
        el('col', i >= 8 ? 'jp-scorep-col-count' : 'jp-scorep-col-num')
      );
    }
    table.appendChild(cols);
    const head = table.createTHead();
    const top = head.insertRow();
    const th0 = el('th', '', 'Function');
    th0.rowSpan = 2;
    th0.scope = 'col';
    top.appendChild(th0);
    const groups: [DeltaKey, string, number][] = [
      ['excl', 'Exclusive', 4],
      ['incl', 'Inclusive', 4],
      ['visits', 'Visits', 3]
    ];
    for (const [key, title, span] of groups) {
      const th = el('th', 'jp-scorep-compare-group');
      th.colSpan = span;
      th.scope = 'colgroup';
      th.dataset.key = key;
      th.setAttribute(
        'aria-sort',
        key === this.sortKey ? 'descending' : 'none'
      );
      const b = el('button', 'jp-scorep-sort', title);
      b.title = `Sort by |Δ| of ${title.toLowerCase()}`;
      b.addEventListener('click', () => {
        this.sortKey = key;
        this.renderFunctions();
      });
      th.appendChild(b);
      top.appendChild(th);
    }
    const sub = head.insertRow();
    for (const [key, , span] of groups) {
      for (const t of ['A', 'B', 'Δ', 'Δ%'].slice(0, span)) {
        const th = el('th', 'jp-scorep-num', t);
        th.scope = 'col';
        th.dataset.col = `${key}_${t}`;
        sub.appendChild(th);
      }
    }
    const body = table.createTBody();
    let rows = sortByDelta(c.functions, this.sortKey);
    if (this.onlyChanged) {
      rows = rows.filter(changed);
    }
    for (const f of rows) {
      body.appendChild(this.functionRow(f));
    }
    if (!rows.length) {
      const tr = body.insertRow();
      const td = el(
        'td',
        'jp-scorep-hint',
        'No function changed beyond noise.'
      );
      td.colSpan = 12;
      tr.appendChild(td);
    }
    const scroller = el('div', 'jp-scorep-compare-scroller');
    scroller.appendChild(table);
    div.append(bar, scroller);
  }

  private functionRow(f: IFunctionDelta): HTMLTableRowElement {
    const tr = el('tr');
    tr.dataset.name = f.name;
    tr.dataset.status = f.status;
    tr.classList.toggle('jp-scorep-changed', changed(f));
    const name = el('td', 'jp-scorep-compare-name');
    name.title = `${f.name} (${f.module})`;
    name.appendChild(el('span', '', f.name));
    if (f.status !== 'both') {
      name.appendChild(
        el(
          'span',
          `jp-scorep-badge jp-scorep-badge-${f.status}`,
          f.status === 'added' ? 'new' : 'gone'
        )
      );
    }
    tr.appendChild(name);
    const cell = (text: string, col: string, sign = 0, strong = false) => {
      const td = el('td', 'jp-scorep-num', text);
      td.dataset.col = col;
      if (sign) {
        td.classList.add(sign > 0 ? 'jp-scorep-up' : 'jp-scorep-down');
      }
      if (strong) {
        td.classList.add('jp-scorep-strong');
      }
      tr.appendChild(td);
    };
    for (const key of ['excl', 'incl'] as const) {
      const a = key === 'excl' ? f.excl_a : f.incl_a;
      const b = key === 'excl' ? f.excl_b : f.incl_b;
      const d = key === 'excl' ? f.excl_delta : f.incl_delta;
      const pct = key === 'excl' ? f.excl_pct : f.incl_pct;
      cell(formatSeconds(a), `${key}_A`);
      cell(formatSeconds(b), `${key}_B`);
      cell(
        formatDelta(d),
        `${key}_Δ`,
        f.time_changed ? Math.sign(d) : 0,
        f.time_changed
      );
      cell(
        formatPct(pct, f.status),
        `${key}_Δ%`,
        f.time_changed ? Math.sign(d) : 0
      );
    }
    cell(f.visits_a.toLocaleString(), 'visits_A');
    cell(f.visits_b.toLocaleString(), 'visits_B');
    cell(
      formatCountDelta(f.visits_delta),
      'visits_Δ',
      Math.sign(f.visits_delta),
      f.visits_changed
    );
    return tr;
  }

  // -- call tree Δ -------------------------------------------------------------------

  private renderTree(expanded: Set<string>): void {
    this.expanded = expanded;
    const c = this._comparison;
    const div = this.pageMap.get('tree')!.div;
    div.textContent = '';
    if (!c) {
      return;
    }
    if (c.truncated?.paths_dropped) {
      div.appendChild(
        el(
          'div',
          'jp-scorep-hint',
          `${c.truncated.paths_dropped.toLocaleString()} call paths left out (the lightest and least changed).`
        )
      );
    }
    const table = el('table', 'jp-scorep-compare-table jp-scorep-compare-tree');
    const cols = el('colgroup');
    cols.appendChild(el('col', 'jp-scorep-col-name'));
    for (let i = 0; i < 5; i++) {
      cols.appendChild(
        el('col', i === 4 ? 'jp-scorep-col-visits' : 'jp-scorep-col-num')
      );
    }
    table.appendChild(cols);
    table.setAttribute('role', 'treegrid');
    table.setAttribute('aria-label', 'Call tree of both runs with the change');
    const head = table.createTHead().insertRow();
    for (const [t, numeric] of [
      ['Call path', false],
      ['Inclusive A', true],
      ['Inclusive B', true],
      ['Δ', true],
      ['Δ%', true],
      ['Visits A → B', true]
    ] as [string, boolean][]) {
      const th = el('th', numeric ? 'jp-scorep-num' : '', t);
      th.scope = 'col';
      head.appendChild(th);
    }
    const body = table.createTBody();
    const rows = diffRows(c.tree, this.expanded);
    for (const row of rows) {
      const n = row.node;
      const tr = body.insertRow();
      tr.dataset.key = row.key;
      tr.dataset.status = n.status;
      tr.tabIndex = row.key === this.treeFocus ? 0 : -1;
      tr.setAttribute('aria-level', String(row.depth + 1));
      if (row.hasChildren) {
        tr.setAttribute('aria-expanded', String(row.expanded));
      }
      const name = el('td', 'jp-scorep-calltree-name');
      name.style.paddingLeft = `${4 + row.depth * 14}px`;
      const twisty = el(
        'span',
        'jp-scorep-twisty',
        row.hasChildren ? (row.expanded ? '▾' : '▸') : ''
      );
      twisty.setAttribute('aria-hidden', 'true');
      name.append(twisty, el('span', '', n.name));
      name.title = n.name;
      if (n.status !== 'both') {
        name.appendChild(
          el(
            'span',
            `jp-scorep-badge jp-scorep-badge-${n.status}`,
            n.status === 'added' ? 'added' : 'removed'
          )
        );
      }
      tr.appendChild(name);
      const pct = n.incl_a ? (100 * row.delta) / n.incl_a : null;
      const moved =
        Math.abs(row.delta) > (c.verdict.noise.function_floor_s || 0);
      for (const [text, sign] of [
        [n.status === 'added' ? '–' : formatSeconds(n.incl_a), 0],
        [n.status === 'removed' ? '–' : formatSeconds(n.incl_b), 0],
        [formatDelta(row.delta), moved ? Math.sign(row.delta) : 0],
        [formatPct(pct, n.status), moved ? Math.sign(row.delta) : 0],
        [`${n.visits_a.toLocaleString()} → ${n.visits_b.toLocaleString()}`, 0]
      ] as [string, number][]) {
        const td = el('td', 'jp-scorep-num', text);
        if (sign) {
          td.classList.add(sign > 0 ? 'jp-scorep-up' : 'jp-scorep-down');
        }
        tr.appendChild(td);
      }
      tr.addEventListener('click', () => this.toggleTree(row.key));
    }
    if (!rows.some(r => r.key === this.treeFocus) && body.rows[0]) {
      this.treeFocus = body.rows[0].dataset.key!;
      body.rows[0].tabIndex = 0;
    }
    body.addEventListener('keydown', e => this.onTreeKey(e, rows));
    const scroller = el('div', 'jp-scorep-compare-scroller');
    scroller.appendChild(table);
    div.appendChild(scroller);
  }

  private toggleTree(key: string): void {
    const next = new Set(this.expanded);
    if (next.has(key)) {
      next.delete(key);
    } else {
      next.add(key);
    }
    this.treeFocus = key;
    this.renderTree(next);
    this.focusTreeRow(key);
  }

  private focusTreeRow(key: string): void {
    const div = this.pageMap.get('tree')!.div;
    const tr = div.querySelector<HTMLTableRowElement>(`tr[data-key="${key}"]`);
    if (tr) {
      for (const r of Array.from(
        div.querySelectorAll<HTMLTableRowElement>('tbody tr')
      )) {
        r.tabIndex = -1;
      }
      tr.tabIndex = 0;
      tr.focus();
      this.treeFocus = key;
    }
  }

  private onTreeKey(e: KeyboardEvent, rows: ReturnType<typeof diffRows>): void {
    if (e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) {
      return; // JupyterLab's shortcuts (Shift+Enter, Ctrl+Enter run the cell)
    }
    const tr = (e.target as HTMLElement).closest('tr');
    const i = rows.findIndex(r => r.key === tr?.dataset.key);
    if (i < 0) {
      return;
    }
    const row = rows[i];
    switch (e.key) {
      case 'ArrowDown':
        if (i + 1 < rows.length) {
          this.focusTreeRow(rows[i + 1].key);
        }
        break;
      case 'ArrowUp':
        if (i > 0) {
          this.focusTreeRow(rows[i - 1].key);
        }
        break;
      case 'ArrowRight':
        if (row.hasChildren && !row.expanded) {
          this.toggleTree(row.key);
        }
        break;
      case 'ArrowLeft':
        if (row.expanded) {
          this.toggleTree(row.key);
        } else if (row.key.includes('/')) {
          this.focusTreeRow(row.key.slice(0, row.key.lastIndexOf('/')));
        }
        break;
      case 'Enter':
      case ' ':
        if (row.hasChildren) {
          this.toggleTree(row.key);
        }
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  // -- timelines and metrics ---------------------------------------------------------

  private async buildTimelines(c: IComparison, seq: number): Promise<void> {
    this.disposeTimelines();
    const div = this.pageMap.get('timelines')!.div;
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
    for (const [key, { tab, div }] of this.pageMap) {
      const on = key === page;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      tab.classList.toggle('jp-scorep-tab-current', on);
      div.hidden = !on;
    }
  }

  private onTabKey(e: KeyboardEvent, page: Page): void {
    const keys = [...this.pageMap.keys()];
    const i = keys.indexOf(page);
    let next: Page | null = null;
    if (e.key === 'ArrowRight') {
      next = keys[(i + 1) % keys.length];
    } else if (e.key === 'ArrowLeft') {
      next = keys[(i + keys.length - 1) % keys.length];
    }
    if (next) {
      e.preventDefault();
      this.showPage(next);
      this.pageMap.get(next)!.tab.focus();
    }
  }

  /** The shared axis of the timelines shown (null before a comparison). */
  get sharedAxis(): ISharedAxis | null {
    return this.axis;
  }

  private readonly select: HTMLSelectElement;
  private readonly pathInput: HTMLInputElement;
  private readonly verdict: HTMLDivElement;
  private readonly facts: HTMLDivElement;
  private readonly tabBar: HTMLDivElement;
  private readonly pages: HTMLDivElement;
  private readonly pageMap = new Map<
    Page,
    { tab: HTMLButtonElement; div: HTMLDivElement }
  >();
  private cellRuns: ICandidate[] = [];
  private others: ICandidate[] = [];
  private othersLoaded = false;
  private _comparison: IComparison | null = null;
  private sequence = 0;
  private sortKey: DeltaKey = 'excl';
  private onlyChanged = false;
  private expanded = new Set<string>();
  private treeFocus = '';
  private timelines: TimelineView[] = [];
  private overlay: MetricsOverlay | null = null;
  private syncing = false;
  private axis: ISharedAxis | null = null;
}
