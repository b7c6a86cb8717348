/**
 * The Compare view's Functions page: per function A, B, Δ and Δ% of exclusive and
 * inclusive time and visits, sorted by |Δ| of the column group chosen.
 */
import type { IComparison, IFunctionDelta } from '../../api/analysisTypes';
import { el } from '../../util/dom';
import { formatSeconds } from '../../util/timeaxis';
import {
  changed,
  DeltaKey,
  formatCountDelta,
  formatDelta,
  formatPct,
  sortByDelta
} from './deltas';

export class FunctionDeltaTable {
  constructor(
    /** the page it fills */
    private readonly div: HTMLDivElement
  ) {}

  /** Show the functions of comparison `c`. */
  show(c: IComparison): void {
    this.comparison = c;
    this.render();
  }

  private render(): void {
    const c = this.comparison;
    const div = this.div;
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
      this.render();
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
        this.render();
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
      body.appendChild(this.row(f));
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

  private row(f: IFunctionDelta): HTMLTableRowElement {
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

  private comparison: IComparison | null = null;
  private sortKey: DeltaKey = 'excl';
  private onlyChanged = false;
}
