/**
 * The Summary tab (Vampir's Function Summary): the run's functions ranked by exclusive or
 * inclusive time as horizontal bars with visits and the mean time per visit, grouped by
 * module or as one ranking. Selecting a function (click, or Enter on a focused row)
 * highlights its calls in the timeline and opens its call paths in the call tree.
 */
import { Widget } from '@lumino/widgets';
import type { IFunctionStat, ISummary } from '../../api/analysisTypes';
import {
  claimGroups,
  currentTheme,
  groupColor,
  observeTheme
} from '../../util/colors';
import { el } from '../../util/dom';
import { formatSeconds } from '../../util/timeaxis';
import {
  barFraction,
  groupByModule,
  hasSplit,
  meanTime,
  metricOf,
  ranked,
  SummaryMetric,
  waitedShare
} from './functions';

export interface ISummaryActions {
  /** a function was selected (null: cleared) */
  select: (name: string | null) => void;
  /** show the selected function in the timeline or the call tree */
  show: (where: 'timeline' | 'calltree') => void;
}

export class FunctionSummaryView extends Widget {
  constructor(
    private readonly summary: ISummary,
    private readonly actions: ISummaryActions
  ) {
    super();
    this.addClass('jp-scorep-summary');
    // the run's modules told apart (util/colors: up to 20 never share a colour)
    claimGroups((summary.functions ?? []).map(colourGroup));
    const bar = el('div', 'jp-scorep-summary-bar');
    const switcher = el('div', 'jp-scorep-switch');
    switcher.setAttribute('role', 'group');
    switcher.setAttribute('aria-label', 'Rank by');
    const split = hasSplit(summary.functions ?? []);
    const metrics: [SummaryMetric, string][] = [
      ['excl', 'Exclusive'],
      ['incl', 'Inclusive']
    ];
    if (split) {
      metrics.unshift(['effective', 'Can speed up']);
    }
    const titles: Record<SummaryMetric, string> = {
      effective:
        "What the cell's time depends on: the function's running time on any thread, " +
        "plus its waiting on the cell's thread (a thread that only waits ranks low)",
      excl: 'Time spent in the function itself (running and waiting)',
      incl: 'Time from entering the function to leaving it, callees included'
    };
    for (const [metric, label] of metrics) {
      const b = el('button', 'jp-scorep-switch-button', label);
      b.dataset.metric = metric;
      b.title = titles[metric];
      b.addEventListener('click', () => this.setMetric(metric));
      switcher.appendChild(b);
      this.switchButtons.push(b);
    }
    const groupLabel = el('label', 'jp-scorep-summary-group');
    this.groupBox = el('input');
    this.groupBox.type = 'checkbox';
    this.groupBox.checked = true;
    this.groupBox.addEventListener('change', () => this.render());
    groupLabel.append(this.groupBox, document.createTextNode(' by module'));
    const functions = summary.functions ?? [];
    const total = summary.functions_total ?? functions.length;
    const info = el(
      'span',
      'jp-scorep-summary-info',
      `${total.toLocaleString()} function${total === 1 ? '' : 's'}` +
        (total > functions.length
          ? ` (the ${functions.length.toLocaleString()} heaviest shown)`
          : '') +
        (summary.outside_s
          ? ` · ${formatSeconds(summary.outside_s)} outside the cells (interpreter start-up, measurement)`
          : '')
    );
    bar.append(switcher, groupLabel, info);

    this.table = el('table', 'jp-scorep-summary-table');
    this.table.setAttribute('aria-label', 'Functions by time');
    // fixed column widths: the layout does not move with the numbers
    const cols = el('colgroup');
    for (const cls of [
      '',
      'jp-scorep-col-time',
      'jp-scorep-col-count',
      'jp-scorep-col-num'
    ]) {
      cols.appendChild(el('col', cls));
    }
    this.table.appendChild(cols);
    const head = this.table.createTHead().insertRow();
    for (const [title, cls] of [
      ['Function', ''],
      ['Time', ''],
      ['Visits', 'jp-scorep-num'],
      ['Mean', 'jp-scorep-num']
    ]) {
      const th = el('th', cls, title);
      th.scope = 'col';
      head.appendChild(th);
    }
    this.body = this.table.createTBody();
    this.body.addEventListener('keydown', e => this.onKeyDown(e));
    this.status = el('div', 'jp-scorep-summary-status');
    this.status.setAttribute('aria-live', 'polite');
    const scroller = el('div', 'jp-scorep-summary-scroller');
    scroller.appendChild(this.table);
    this.node.append(bar, scroller, this.status);
    if (!functions.length) {
      this.status.textContent =
        'No functions were measured (the run has no call tree).';
    }
    this.themeObserver = observeTheme(() => this.render());
    this.setMetric(split ? 'effective' : 'excl');
  }

  get metric(): SummaryMetric {
    return this._metric;
  }

  setMetric(metric: SummaryMetric): void {
    this._metric = metric;
    for (const b of this.switchButtons) {
      b.setAttribute('aria-pressed', String(b.dataset.metric === metric));
    }
    this.render();
  }

  /** Select a function by name (as a click on its row does). */
  select(name: string | null): void {
    this.selected = name;
    this.render();
    // an anonymous function's row adds its place to the region's name (GET summary)
    const row = (this.summary.functions ?? []).find(f => f.name === name);
    this.actions.select(row?.region ?? name);
    if (name) {
      this.status.textContent = `${name}: calls highlighted in the timeline, call paths opened in the call tree.`;
    } else {
      this.status.textContent = '';
    }
  }

  dispose(): void {
    this.themeObserver.disconnect();
    super.dispose();
  }

  private render(): void {
    const functions = this.summary.functions ?? [];
    const metric = this._metric;
    const theme = currentTheme();
    const max = Math.max(0, ...functions.map(f => metricOf(f, metric)));
    this.body.textContent = '';
    const addRow = (f: IFunctionStat, depth: number) => {
      const tr = el('tr', 'jp-scorep-summary-row');
      tr.dataset.name = f.name;
      tr.tabIndex = -1;
      tr.setAttribute('aria-selected', String(f.name === this.selected));
      tr.classList.toggle('jp-scorep-row-selected', f.name === this.selected);
      const name = el('td', 'jp-scorep-summary-name');
      name.style.paddingLeft = `${4 + depth * 14}px`;
      name.title = f.name;
      name.appendChild(el('span', '', f.name));
      if (f.name === this.selected) {
        for (const [where, label] of [
          ['timeline', 'Timeline'],
          ['calltree', 'Call tree']
        ] as ['timeline' | 'calltree', string][]) {
          const go = el('button', 'jp-scorep-link', `→ ${label}`);
          go.title = `Show ${f.name} in the ${label.toLowerCase()}`;
          go.addEventListener('click', e => {
            e.stopPropagation();
            this.actions.show(where);
          });
          name.appendChild(go);
        }
      }
      const value = metricOf(f, metric);
      const time = el('td', 'jp-scorep-summary-time');
      const track = el('div', 'jp-scorep-bar-track');
      const fill = el('div', 'jp-scorep-bar');
      fill.style.width = `${(100 * barFraction(value, max)).toFixed(2)}%`;
      fill.style.background = groupColor(colourGroup(f), theme).fill;
      track.appendChild(fill);
      time.append(
        track,
        el('span', 'jp-scorep-bar-label', formatSeconds(value))
      );
      if (waitedShare(f) > 0.5 && f.wait_s) {
        // say what waited: most of its own time it slept, waited on a lock, I/O, ...
        const waited = el(
          'span',
          'jp-scorep-summary-waited',
          `waited ${formatSeconds(f.wait_s)}`
        );
        waited.title =
          `${f.name} waited ${formatSeconds(f.wait_s)} of its ${formatSeconds(f.excl_s)} ` +
          '(sleep, lock, queue, I/O, device or MPI); it ran ' +
          formatSeconds(f.cpu_s ?? 0);
        time.appendChild(waited);
      }
      const visits = el('td', 'jp-scorep-num', f.visits.toLocaleString());
      visits.dataset.col = 'visits';
      const mean = el(
        'td',
        'jp-scorep-num',
        formatSeconds(meanTime(f, metric))
      );
      mean.dataset.col = 'mean';
      tr.append(name, time, visits, mean);
      tr.addEventListener('click', () => this.choose(f.name));
      this.body.appendChild(tr);
    };
    if (this.groupBox.checked) {
      for (const group of groupByModule(functions, metric)) {
        const tr = el('tr', 'jp-scorep-summary-module');
        const th = el('th', '', group.module);
        th.scope = 'rowgroup';
        const swatch = el('span', 'jp-scorep-legend-swatch');
        swatch.style.background = groupColor(
          colourGroup(group.functions[0]),
          theme
        ).fill;
        th.prepend(swatch);
        const total = el(
          'td',
          'jp-scorep-summary-time',
          metric === 'excl'
            ? formatSeconds(group.total)
            : `up to ${formatSeconds(group.total)}`
        );
        tr.append(th, total, el('td'), el('td'));
        this.body.appendChild(tr);
        for (const f of group.functions) {
          addRow(f, 1);
        }
      }
    } else {
      for (const f of ranked(functions, metric)) {
        addRow(f, 0);
      }
    }
    const rows = this.rows();
    const focusable =
      rows.find(r => r.dataset.name === this.selected) ?? rows[0];
    if (focusable) {
      focusable.tabIndex = 0;
    }
  }

  private rows(): HTMLTableRowElement[] {
    return Array.from(
      this.body.querySelectorAll<HTMLTableRowElement>(
        'tr.jp-scorep-summary-row'
      )
    );
  }

  private choose(name: string): void {
    this.select(this.selected === name ? null : name);
    this.rows()
      .find(r => r.dataset.name === name)
      ?.focus();
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) {
      return; // JupyterLab's shortcuts (Shift+Enter, Ctrl+Enter run the cell)
    }
    const tr = (e.target as HTMLElement).closest('tr');
    const rows = this.rows();
    const i = rows.indexOf(tr as HTMLTableRowElement);
    if (i < 0) {
      return;
    }
    const move = (j: number) => {
      for (const r of rows) {
        r.tabIndex = -1;
      }
      rows[j].tabIndex = 0;
      rows[j].focus();
    };
    switch (e.key) {
      case 'ArrowDown':
        move(Math.min(rows.length - 1, i + 1));
        break;
      case 'ArrowUp':
        move(Math.max(0, i - 1));
        break;
      case 'Enter':
      case ' ':
        this.choose(rows[i].dataset.name!);
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  private _metric: SummaryMetric = 'excl';
  private selected: string | null = null;
  private readonly switchButtons: HTMLButtonElement[] = [];
  private readonly groupBox: HTMLInputElement;
  private readonly table: HTMLTableElement;
  private readonly body: HTMLTableSectionElement;
  private readonly status: HTMLDivElement;
  private readonly themeObserver: MutationObserver;
}

/** What a function is coloured by: its region's group, as in the timeline and the flame
 * graph (a summary module such as `difflib.SequenceMatcher` is the timeline's `difflib`). */
function colourGroup(f: IFunctionStat): string {
  return f.group || f.module;
}
