/**
 * The Compare view's Call tree Δ page: the merged call tree of both runs with a Δ column,
 * added and removed paths marked, opened down the most changed path; a treegrid, walked
 * with the arrow keys.
 */
import type { IComparison } from '../../api/analysisTypes';
import { el } from '../../util/dom';
import { formatSeconds } from '../../util/timeaxis';
import { diffRows, formatDelta, formatPct, mostChangedPath } from './deltas';

export class CallTreeDeltaTable {
  constructor(
    /** the page it fills */
    private readonly div: HTMLDivElement
  ) {}

  /** Show the merged tree of comparison `c`, the most changed path open. */
  show(c: IComparison): void {
    this.comparison = c;
    this.render(new Set(mostChangedPath(c.tree)));
  }

  private render(expanded: Set<string>): void {
    this.expanded = expanded;
    const c = this.comparison;
    const div = this.div;
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
      tr.tabIndex = row.key === this.focused ? 0 : -1;
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
      tr.addEventListener('click', () => this.toggle(row.key));
    }
    if (!rows.some(r => r.key === this.focused) && body.rows[0]) {
      this.focused = body.rows[0].dataset.key!;
      body.rows[0].tabIndex = 0;
    }
    body.addEventListener('keydown', e => this.onKey(e, rows));
    const scroller = el('div', 'jp-scorep-compare-scroller');
    scroller.appendChild(table);
    div.appendChild(scroller);
  }

  private toggle(key: string): void {
    const next = new Set(this.expanded);
    if (next.has(key)) {
      next.delete(key);
    } else {
      next.add(key);
    }
    this.focused = key;
    this.render(next);
    this.focusRow(key);
  }

  private focusRow(key: string): void {
    const div = this.div;
    const tr = div.querySelector<HTMLTableRowElement>(`tr[data-key="${key}"]`);
    if (tr) {
      for (const r of Array.from(
        div.querySelectorAll<HTMLTableRowElement>('tbody tr')
      )) {
        r.tabIndex = -1;
      }
      tr.tabIndex = 0;
      tr.focus();
      this.focused = key;
    }
  }

  private onKey(e: KeyboardEvent, rows: ReturnType<typeof diffRows>): void {
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
          this.focusRow(rows[i + 1].key);
        }
        break;
      case 'ArrowUp':
        if (i > 0) {
          this.focusRow(rows[i - 1].key);
        }
        break;
      case 'ArrowRight':
        if (row.hasChildren && !row.expanded) {
          this.toggle(row.key);
        }
        break;
      case 'ArrowLeft':
        if (row.expanded) {
          this.toggle(row.key);
        } else if (row.key.includes('/')) {
          this.focusRow(row.key.slice(0, row.key.lastIndexOf('/')));
        }
        break;
      case 'Enter':
      case ' ':
        if (row.hasChildren) {
          this.toggle(row.key);
        }
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  private comparison: IComparison | null = null;
  private expanded = new Set<string>();
  /** the row in the tab order */
  private focused = '';
}
