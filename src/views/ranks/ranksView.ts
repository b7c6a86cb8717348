/**
 * The Ranks tab of an MPI cell's panel (GET ranks): a process summary (time per rank in
 * the cells, split into compute and MPI, with the imbalance and the communication share)
 * and the communication matrix (bytes or messages from each rank to each other, from the
 * trace), shaded on a log scale; above MATRIX_MAX_RANKS ranks a canvas of blocks of ranks
 * (matrixCanvas.ts) above the table, and the verdict naming the slowest ranks.
 */
import { Widget } from '@lumino/widgets';
import type { IRanks } from '../../api/analysisTypes';
import type { ScorepAPI } from '../../api/apiClient';
import { observeTheme } from '../../util/colors';
import { el, errorText } from '../../util/dom';
import { matrixCanvas } from './matrixCanvas';
import { denseOf, matrixCells } from './matrixBlocks';
import {
  barParts,
  flowText,
  formatMeasure,
  headline,
  MatrixMeasure,
  MATRIX_MAX_RANKS,
  matrixMax,
  rowCells,
  shade,
  slowestText
} from './balanceAndTraffic';

const COLUMNS = [
  'Rank',
  'In cells',
  'Compute',
  'MPI',
  'MPI share',
  'Sent',
  'Messages'
];

export class RanksView extends Widget {
  constructor(
    private readonly api: ScorepAPI,
    private readonly path: string
  ) {
    super();
    this.addClass('jp-scorep-ranks');
    this.node.textContent = 'Loading the ranks…';
    // the canvas's colours follow the theme
    this.themeObserver = observeTheme(() => {
      if (this.data && this.data.ranks.length > MATRIX_MAX_RANKS) {
        this.render();
      }
    });
  }

  dispose(): void {
    this.themeObserver.disconnect();
    super.dispose();
  }

  /** Fetch GET ranks once (again after a failure) and render it. */
  async load(): Promise<void> {
    if (this.loading || this.data) {
      return this.loading ?? undefined;
    }
    this.loading = this.api
      .ranks(this.path, 'pairs')
      .then(data => {
        // the matrix comes as its non-zero cells; the table of a few ranks reads it dense
        const cells = matrixCells(data);
        this.data =
          data.ranks.length <= MATRIX_MAX_RANKS && data.matrix.pairs
            ? { ...data, matrix: { ...data.matrix, ...denseOf(cells) } }
            : data;
        this.render();
      })
      .catch(error => {
        this.node.textContent = `Ranks: ${errorText(error)}`;
        this.node.classList.add('jp-scorep-error');
      })
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }

  /** The answer drawn (tests, and the panel's header). */
  get ranks(): IRanks | null {
    return this.data;
  }

  private render(): void {
    const r = this.data!;
    this.node.textContent = '';
    this.node.classList.remove('jp-scorep-error');
    const head = el('p', 'jp-scorep-ranks-headline', headline(r));
    this.node.appendChild(head);
    const verdict = slowestText(r);
    if (verdict) {
      this.node.appendChild(el('p', 'jp-scorep-ranks-verdict', verdict));
    }
    const many = r.ranks.length > MATRIX_MAX_RANKS;
    if (!many) {
      this.node.appendChild(this.table(r));
    }
    const title = el('div', 'jp-scorep-ranks-title', 'Communication');
    const toggle = el('div', 'jp-scorep-ranks-measure');
    toggle.setAttribute('role', 'group');
    toggle.setAttribute('aria-label', 'What the matrix counts');
    for (const measure of ['bytes', 'messages'] as MatrixMeasure[]) {
      const b = el(
        'button',
        'jp-scorep-link',
        measure === 'bytes' ? 'Bytes' : 'Messages'
      );
      b.setAttribute('aria-pressed', String(measure === this.measure));
      b.addEventListener('click', () => {
        this.measure = measure;
        this.render();
      });
      toggle.appendChild(b);
    }
    title.appendChild(toggle);
    this.node.appendChild(title);
    this.node.appendChild(this.matrix(r));
    if (many) {
      this.node.appendChild(
        el('div', 'jp-scorep-ranks-title', 'Time per rank')
      );
      this.node.appendChild(this.table(r));
    }
    if (r.unmatched > 0) {
      this.node.appendChild(
        el(
          'p',
          'jp-scorep-help',
          `${r.unmatched} sends name no receiver in the trace.`
        )
      );
    }
  }

  private table(r: IRanks): HTMLTableElement {
    const table = el('table', 'jp-scorep-ranks-table');
    table.setAttribute('aria-label', 'Time per rank');
    const head = el('tr');
    for (const c of [...COLUMNS.slice(0, 5), '', ...COLUMNS.slice(5)]) {
      head.appendChild(el('th', '', c));
    }
    table.appendChild(el('thead')).appendChild(head);
    const body = el('tbody');
    const longest = Math.max(0, ...r.ranks.map(x => x.cell_s));
    for (const row of r.ranks) {
      const tr = el('tr');
      tr.dataset.rank = String(row.rank);
      if (row.rank === r.slowest_rank && r.ranks.length > 1) {
        tr.classList.add('jp-scorep-ranks-slowest');
      }
      const cells = rowCells(row);
      cells.slice(0, 5).forEach(c => tr.appendChild(el('td', '', c)));
      const bar = el('td', 'jp-scorep-ranks-bar');
      const parts = barParts(row, longest);
      const compute = el('span', 'jp-scorep-ranks-compute');
      compute.style.width = `${(100 * parts.compute).toFixed(2)}%`;
      compute.title = `compute ${cells[2]}`;
      const mpi = el('span', 'jp-scorep-ranks-mpi');
      mpi.style.width = `${(100 * parts.mpi).toFixed(2)}%`;
      mpi.title = `MPI ${cells[3]}`;
      bar.append(compute, mpi);
      tr.appendChild(bar);
      cells.slice(5).forEach(c => tr.appendChild(el('td', '', c)));
      body.appendChild(tr);
    }
    table.appendChild(body);
    return table;
  }

  private matrix(r: IRanks): HTMLElement {
    const m = r.matrix[this.measure];
    const n = r.ranks.length;
    if (n > MATRIX_MAX_RANKS) {
      return matrixCanvas(r, this.measure);
    }
    const max = matrixMax(m);
    const table = el('table', 'jp-scorep-matrix');
    table.setAttribute(
      'aria-label',
      `Communication matrix: ${this.measure} sent from the row's rank to the column's rank`
    );
    const head = el('tr');
    head.appendChild(el('th', '', 'from \\ to'));
    for (let to = 0; to < n; to++) {
      head.appendChild(el('th', '', String(to)));
    }
    table.appendChild(el('thead')).appendChild(head);
    const body = el('tbody');
    for (let from = 0; from < n; from++) {
      const tr = el('tr');
      tr.appendChild(el('th', '', String(from)));
      for (let to = 0; to < n; to++) {
        const value = m[from]?.[to] ?? 0;
        const td = el(
          'td',
          '',
          value > 0 ? formatMeasure(value, this.measure) : ''
        );
        const s = shade(value, max);
        td.style.setProperty('--jp-scorep-shade', s.toFixed(3));
        td.classList.toggle('jp-scorep-matrix-dark', s > 0.6);
        td.title = flowText(r, from, to);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    return table;
  }

  private data: IRanks | null = null;
  private loading: Promise<void> | null = null;
  private measure: MatrixMeasure = 'bytes';
  private readonly themeObserver: MutationObserver;
}
