/**
 * The call tree as a sortable, searchable tree table (role="treegrid"). Rows are navigable
 * with the keyboard (up/down move, right expands, left collapses, Enter selects); selecting
 * a row highlights that region's calls in the timeline.
 */
import { CellSources, treeCellSources } from '../cellSources';
import { Widget } from '@lumino/widgets';
import type { ICallNode, ICallTree } from '../../api/traceTypes';
import { el } from '../../util/dom';
import {
  flatten,
  hottestPath,
  ISort,
  ITreeRow,
  regionPaths,
  ROOT_KEY,
  search,
  SortKey
} from './rows';
import { formatSeconds } from '../../util/timeaxis';

const COLUMNS: { key: SortKey; title: string; numeric: boolean }[] = [
  { key: 'name', title: 'Region', numeric: false },
  { key: 'incl_s', title: 'Inclusive', numeric: true },
  { key: 'excl_s', title: 'Exclusive', numeric: true },
  { key: 'pct', title: '% of total', numeric: true },
  { key: 'visits', title: 'Visits', numeric: true },
  { key: 'min_s', title: 'Min', numeric: true },
  { key: 'max_s', title: 'Max', numeric: true }
];

export class CallTreeView extends Widget {
  constructor(
    tree: ICallTree,
    private readonly onSelect: (node: ICallNode | null) => void,
    onLocation?: (location: number | null) => void
  ) {
    super();
    this.addClass('jp-scorep-calltree');
    this.tree = tree;
    this.sources = treeCellSources(tree.root);
    this.expanded.add(ROOT_KEY);
    for (const key of hottestPath(tree.root, 0.5)) {
      this.expanded.add(key);
    }

    const bar = el('div', 'jp-scorep-calltree-bar');
    this.searchInput = el('input', 'jp-scorep-calltree-search jp-mod-styled');
    this.searchInput.type = 'search';
    this.searchInput.placeholder = 'Search regions…';
    this.searchInput.setAttribute(
      'aria-label',
      'Search regions in the call tree'
    );
    this.searchInput.addEventListener('input', () => this.onSearch());
    const hot = el(
      'button',
      'jp-scorep-button jp-mod-styled',
      'Expand hottest path'
    );
    hot.addEventListener('click', () => this.expandHottest());
    const info = el(
      'span',
      'jp-scorep-calltree-info',
      `source: ${tree.source === 'cubex' ? 'CUBE profile' : 'trace'}, total ${formatSeconds(tree.total_s)}`
    );
    bar.append(this.searchInput, hot);
    if (onLocation && tree.locations.length > 1) {
      // per-thread trees: the server sums over all locations unless one is chosen
      const select = el('select', 'jp-scorep-calltree-location');
      select.setAttribute('aria-label', 'Location (thread) of the call tree');
      const all = new Option('All locations', '');
      select.add(all);
      for (const loc of tree.locations) {
        select.add(new Option(loc.name, String(loc.id)));
      }
      select.value = tree.location === null ? '' : String(tree.location);
      select.addEventListener('change', () =>
        onLocation(select.value === '' ? null : Number(select.value))
      );
      bar.appendChild(select);
    }
    bar.appendChild(info);

    this.table = el('table', 'jp-scorep-calltree-table');
    this.table.setAttribute('role', 'treegrid');
    this.table.setAttribute('aria-label', 'Call tree');
    const thead = this.table.createTHead();
    const hr = thead.insertRow();
    for (const col of COLUMNS) {
      const th = el('th');
      th.scope = 'col';
      const button = el('button', 'jp-scorep-sort', col.title);
      button.addEventListener('click', () => this.sortBy(col.key));
      th.appendChild(button);
      th.dataset.key = col.key;
      if (col.numeric) {
        th.classList.add('jp-scorep-num');
      }
      hr.appendChild(th);
    }
    this.body = this.table.createTBody();
    this.body.addEventListener('keydown', e => this.onKeyDown(e));
    const scroller = el('div', 'jp-scorep-calltree-scroller');
    scroller.appendChild(this.table);
    this.node.append(bar, scroller);
    this.render();
  }

  /** Expand along the hottest path and select its last node. */
  expandHottest(): void {
    const path = hottestPath(this.tree.root);
    for (const key of path) {
      this.expanded.add(key);
    }
    this.selected = path[path.length - 1];
    this.render();
    this.focusRow(this.selected);
    this.emitSelection();
  }

  /**
   * Open every call path of a region (by name), mark them as matches and select the first
   * (without taking the focus); returns how many paths there are.
   */
  revealRegion(name: string): number {
    const found = regionPaths(this.tree.root, name);
    this.matches = found.matches;
    for (const key of found.expand) {
      this.expanded.add(key);
    }
    const first = [...found.matches][0];
    if (first) {
      this.selected = first;
    }
    this.render();
    if (first) {
      this.body
        .querySelector<HTMLTableRowElement>(`tr[data-key="${first}"]`)
        ?.scrollIntoView?.({ block: 'nearest' });
    }
    return found.matches.size;
  }

  sortBy(key: SortKey): void {
    this.sort =
      this.sort.key === key
        ? { key, descending: !this.sort.descending }
        : { key, descending: key !== 'name' };
    this.render();
  }

  private onSearch(): void {
    const result = search(this.tree.root, this.searchInput.value);
    this.matches = result.matches;
    for (const key of result.expand) {
      this.expanded.add(key);
    }
    this.render();
  }

  private render(): void {
    this.rows = flatten(
      this.tree.root,
      this.expanded,
      this.sort,
      this.tree.total_s,
      this.matches
    );
    for (const th of Array.from(this.table.tHead!.rows[0].cells)) {
      const key = th.dataset.key;
      th.setAttribute(
        'aria-sort',
        key === this.sort.key
          ? this.sort.descending
            ? 'descending'
            : 'ascending'
          : 'none'
      );
    }
    this.body.textContent = '';
    for (const row of this.rows) {
      this.body.appendChild(this.renderRow(row));
    }
  }

  private renderRow(row: ITreeRow): HTMLTableRowElement {
    const tr = el('tr');
    tr.dataset.key = row.key;
    tr.tabIndex = row.key === this.selected ? 0 : -1;
    tr.setAttribute('role', 'row');
    tr.setAttribute('aria-level', String(row.depth + 1));
    if (row.hasChildren) {
      tr.setAttribute('aria-expanded', String(row.expanded));
    }
    tr.setAttribute('aria-selected', String(row.key === this.selected));
    tr.classList.toggle('jp-scorep-row-selected', row.key === this.selected);
    tr.classList.toggle('jp-scorep-match', row.match);
    const n = row.node;
    const name = el('td', 'jp-scorep-calltree-name');
    name.style.paddingLeft = `${4 + row.depth * 14}px`;
    const twisty = el(
      'span',
      'jp-scorep-twisty',
      row.hasChildren ? (row.expanded ? '▾' : '▸') : ''
    );
    twisty.setAttribute('aria-hidden', 'true');
    twisty.addEventListener('click', e => {
      e.stopPropagation();
      this.toggle(row.key);
    });
    const label = el('span', '', this.sources.label(n.name, n.file, n.line));
    const where = this.sources.where(n.file, n.line);
    name.title = where ? `${n.name} — ${where}` : n.name;
    name.append(twisty, label);
    tr.appendChild(name);
    const cells = [
      formatSeconds(n.incl_s),
      formatSeconds(n.excl_s),
      `${row.pct.toFixed(1)} %`,
      n.visits.toLocaleString(),
      formatSeconds(n.min_s),
      formatSeconds(n.max_s)
    ];
    cells.forEach((text, i) => {
      const td = el('td', 'jp-scorep-num', text);
      td.dataset.col = COLUMNS[i + 1].key;
      if (i === 2) {
        td.style.setProperty('--jp-scorep-pct', `${Math.min(100, row.pct)}%`);
        td.classList.add('jp-scorep-pct');
      }
      tr.appendChild(td);
    });
    tr.addEventListener('click', () => {
      this.selected = row.key;
      this.render();
      this.focusRow(row.key);
      this.emitSelection();
    });
    tr.addEventListener('dblclick', () => this.toggle(row.key));
    return tr;
  }

  private toggle(key: string): void {
    if (this.expanded.has(key)) {
      this.expanded.delete(key);
    } else {
      this.expanded.add(key);
    }
    this.render();
    this.focusRow(key);
  }

  private focusRow(key: string): void {
    const tr = this.body.querySelector<HTMLTableRowElement>(
      `tr[data-key="${key}"]`
    );
    if (tr) {
      for (const other of Array.from(this.body.rows)) {
        other.tabIndex = -1;
      }
      tr.tabIndex = 0;
      tr.focus();
    }
  }

  private emitSelection(): void {
    const row = this.rows.find(r => r.key === this.selected);
    this.onSelect(row ? row.node : null);
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) {
      return; // JupyterLab's shortcuts (Shift+Enter, Ctrl+Enter run the cell)
    }
    const tr = (e.target as HTMLElement).closest('tr');
    if (!tr) {
      return;
    }
    const key = tr.dataset.key!;
    const index = this.rows.findIndex(r => r.key === key);
    const row = this.rows[index];
    switch (e.key) {
      case 'ArrowDown':
        if (index + 1 < this.rows.length) {
          this.focusRow(this.rows[index + 1].key);
        }
        break;
      case 'ArrowUp':
        if (index > 0) {
          this.focusRow(this.rows[index - 1].key);
        }
        break;
      case 'ArrowRight':
        if (row.hasChildren && !row.expanded) {
          this.toggle(key);
        }
        break;
      case 'ArrowLeft':
        if (row.expanded) {
          this.toggle(key);
        } else if (key.includes('/')) {
          this.focusRow(key.slice(0, key.lastIndexOf('/')));
        }
        break;
      case 'Enter':
      case ' ':
        this.selected = key;
        this.render();
        this.focusRow(key);
        this.emitSelection();
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  private readonly tree: ICallTree;
  /** the run's cells (the tree's cell regions), for "cell [3], line 8" in the tooltips */
  private readonly sources: CellSources;
  private readonly expanded = new Set<string>();
  private matches = new Set<string>();
  private selected = ROOT_KEY;
  private sort: ISort = { key: 'incl_s', descending: true };
  private rows: ITreeRow[] = [];
  private readonly searchInput: HTMLInputElement;
  private readonly table: HTMLTableElement;
  private readonly body: HTMLTableSectionElement;
}

/** The tree's cell regions (group "cell") with the files their code ran as. */
