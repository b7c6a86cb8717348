/**
 * The bottom-up view of the call tree (as Chrome DevTools' Bottom-Up tab): functions by own
 * time; a row opens to the functions that called it, with the part of the own time spent
 * below each caller.
 */
import { Widget } from '@lumino/widgets';
import type { ICallNode } from '../../api/traceTypes';
import { el } from '../../util/dom';
import { formatSeconds } from '../../util/timeaxis';
import { bottomUp, IBottomUpNode } from './bottomUp';

export class BottomUpTable extends Widget {
  constructor(root: ICallNode) {
    super();
    this.addClass('jp-scorep-bottomup');
    this.rows = bottomUp(root);
    this.total = root.incl_s > 0 ? root.incl_s : 1;
    const table = el(
      'table',
      'jp-scorep-calltree-table jp-scorep-bottomup-table'
    );
    table.setAttribute(
      'aria-label',
      'Bottom-up: functions by own time, and their callers'
    );
    const head = table.createTHead().insertRow();
    for (const [title, num] of [
      ['Function (callers below)', false],
      ['Own time', true],
      ['% of total', true],
      ['Visits', true]
    ] as const) {
      const th = el('th', num ? 'jp-scorep-num' : '', title);
      th.scope = 'col';
      head.appendChild(th);
    }
    this.body = table.createTBody();
    const scroller = el('div', 'jp-scorep-calltree-scroller');
    scroller.appendChild(table);
    this.node.appendChild(scroller);
    this.render();
  }

  /** The bottom-up rows (top level), for tests. */
  get data(): IBottomUpNode[] {
    return this.rows;
  }

  private render(): void {
    this.body.textContent = '';
    const add = (n: IBottomUpNode, depth: number, key: string) => {
      const tr = this.body.insertRow();
      tr.dataset.name = n.name;
      tr.dataset.depth = String(depth);
      const name = el('td', 'jp-scorep-calltree-name');
      name.style.paddingLeft = `${4 + depth * 14}px`;
      const open = this.open.has(key);
      const twisty = el(
        'span',
        'jp-scorep-twisty',
        n.callers.length ? (open ? '▾' : '▸') : ''
      );
      name.append(twisty, el('span', '', n.name));
      name.title = depth ? `called from ${n.name}` : n.name;
      tr.appendChild(name);
      for (const text of [
        formatSeconds(n.self_s),
        `${((n.self_s / this.total) * 100).toFixed(1)} %`,
        n.visits.toLocaleString()
      ]) {
        tr.appendChild(el('td', 'jp-scorep-num', text));
      }
      if (n.callers.length) {
        tr.addEventListener('click', () => {
          if (this.open.has(key)) {
            this.open.delete(key);
          } else {
            this.open.add(key);
          }
          this.render();
        });
      }
      if (open) {
        n.callers.forEach((c, i) => add(c, depth + 1, `${key}/${i}`));
      }
    };
    this.rows.slice(0, 500).forEach((r, i) => add(r, 0, String(i)));
  }

  private readonly rows: IBottomUpNode[];
  private readonly total: number;
  private readonly body: HTMLTableSectionElement;
  private readonly open = new Set<string>();
}
