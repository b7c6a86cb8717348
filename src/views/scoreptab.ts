/**
 * The Score-P tab of a Score-P run's panel: Score-P's own view of the run (`scorep-score` on
 * its profile, through GET score): the estimated trace size, the largest trace buffer and the
 * SCOREP_TOTAL_MEMORY that avoids flushes, set against what the run had; the region-type
 * table and the largest regions; and the filter file Score-P suggests for the regions whose
 * measurement costs more than they do, which one click applies to the cell's next run
 * (POST filter writes it beside the experiments, then the cell's `scorep.filter_file` is set
 * to it, and nothing else).
 */
import { Widget } from '@lumino/widgets';
import type {
  IFilterApplied,
  IScore,
  IScoreEstimate,
  IScoreRow
} from '../api/analysisTypes';
import type { ScorepAPI } from '../api/apiClient';
import { cellOf, ICellHandle } from '../notebook/cellbridge';
import { el, errorText } from '../util/dom';
import { filterFileFor, withFilterFile } from '../notebook/cellSettings';

export interface IScorePTabOptions {
  api: ScorepAPI;
  /** the experiment directory */
  path: string;
  /** the cell under which the panel is shown (default: found through ./cellbridge) */
  cell?: () => ICellHandle | null;
  /** a message for the panel's header */
  onMessage?: (text: string, isError: boolean) => void;
}

/**
 * scorep-score -g's heuristics in words: "at least 1 % of the trace buffer and under 1 µs per
 * visit" for `bufferpercent=1,timepervisit=1`.
 */
export function describeHeuristics(heuristics: string): string {
  const words: Record<string, (v: string) => string> = {
    bufferpercent: v => `at least ${v} % of the trace buffer`,
    bufferabsolute: v => `at least ${v} MB of the trace buffer`,
    visits: v => `more than ${v} visits`,
    timepervisit: v => `under ${v} µs per visit`,
    type: v => `of type ${v}`
  };
  return heuristics
    .split(',')
    .map(part => part.split('='))
    .filter(([key, value]) => key in words && value !== undefined)
    .map(([key, value]) => words[key](value))
    .join(' and ');
}

/** Bytes in Score-P's own units (it counts in 1024s). */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '–';
  }
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

/** "256M", "1G", "4097kB", "16 MB" -> bytes (Score-P's units), null when unreadable. */
export function memoryBytes(text: string | null | undefined): number | null {
  const m = /^\s*([\d.]+)\s*([kKmMgGtT]?)i?[bB]?\s*$/.exec(text ?? '');
  if (!m) {
    return null;
  }
  const power = ['', 'k', 'm', 'g', 't'].indexOf(m[2].toLowerCase());
  return Math.round(parseFloat(m[1]) * Math.pow(1024, power));
}

export class ScorePTab extends Widget {
  constructor(private readonly options: IScorePTabOptions) {
    super();
    this.addClass('jp-scorep-scorep');
  }

  /** Load and show Score-P's view of the run (once; later calls do nothing). */
  async load(): Promise<void> {
    if (this.loading) {
      return this.loading;
    }
    this.loading = this.fetch();
    return this.loading;
  }

  /** The answer shown, once loaded. */
  get score(): IScore | null {
    return this._score;
  }

  private async fetch(): Promise<void> {
    this.node.textContent = '';
    this.node.appendChild(
      el('div', 'jp-scorep-hint', 'Asking Score-P (scorep-score)…')
    );
    try {
      this._score = await this.options.api.score(this.options.path);
    } catch (error) {
      this.node.textContent = '';
      this.node.appendChild(el('div', 'jp-scorep-error', errorText(error)));
      this.node.dataset.state = 'error';
      return;
    }
    if (this.isDisposed) {
      return;
    }
    this.render(this._score);
    this.node.dataset.state = 'ready';
  }

  private render(score: IScore): void {
    const node = this.node;
    node.textContent = '';
    node.append(
      this.estimateSection(score),
      this.filterSection(score),
      this.tablesSection(score)
    );
  }

  private estimateSection(score: IScore): HTMLElement {
    const section = el('section', 'jp-scorep-score-estimate');
    section.setAttribute('aria-label', "Score-P's estimate");
    section.appendChild(
      el('h4', 'jp-scorep-score-title', "Score-P's estimate (scorep-score)")
    );
    const e = score.estimate;
    const list = el('table', 'jp-scorep-score-list');
    const item = (key: string, label: string, value: string) => {
      const row = list.insertRow();
      row.insertCell().textContent = label;
      const cell = row.insertCell();
      cell.textContent = value;
      cell.dataset.key = key;
      return cell;
    };
    item('trace', 'Trace size', formatBytes(e.trace_bytes));
    item(
      'max_buf',
      'Largest trace buffer (max_buf)',
      formatBytes(e.max_buf_bytes)
    );
    const needed = item(
      'total_memory',
      'SCOREP_TOTAL_MEMORY needed',
      formatBytes(e.total_memory_bytes)
    );
    const had = score.configured.SCOREP_TOTAL_MEMORY;
    if (had) {
      const hadBytes = memoryBytes(had);
      const short =
        hadBytes !== null &&
        e.total_memory_bytes !== null &&
        e.total_memory_bytes !== undefined &&
        e.total_memory_bytes > hadBytes;
      const note = el(
        'span',
        short ? 'jp-scorep-score-short' : 'jp-scorep-hint',
        short
          ? ` — more than the ${had} this run had: with tracing, Score-P flushes its buffer during the run`
          : ` (this run had ${had})`
      );
      needed.appendChild(note);
      section.dataset.short = String(short);
    }
    section.appendChild(list);
    return section;
  }

  private filterSection(score: IScore): HTMLElement {
    const section = el('section', 'jp-scorep-score-filter');
    section.setAttribute('aria-label', 'Suggested filter');
    section.appendChild(el('h4', 'jp-scorep-score-title', 'Suggested filter'));
    const filter = score.filter;
    const rule = describeHeuristics(
      filter?.heuristics ?? score.heuristics ?? 'bufferpercent=1,timepervisit=1'
    );
    if (!filter) {
      section.appendChild(
        el(
          'p',
          'jp-scorep-hint',
          `No region meets Score-P’s filter heuristics (${rule}): every region is worth its measurement.`
        )
      );
      return section;
    }
    const n = filter.regions.length;
    const what =
      n === 1
        ? `the region with ${rule}, whose measurement costs more than it does`
        : `${n} regions with ${rule}, whose measurement costs more than they do`;
    section.appendChild(
      el(
        'p',
        '',
        `Score-P suggests leaving out ${what}. With the filter: trace ${formatEstimateChange(score.estimate, filter.estimate)}.`
      )
    );
    const table = rowsTable(
      filter.regions,
      ['region', 'visits', 'per_visit', 'buffer'],
      r => [
        r.name ?? '',
        r.visits.toLocaleString(),
        r.time_per_visit_us.toFixed(2),
        formatBytes(r.max_buf_bytes)
      ]
    );
    table.classList.add('jp-scorep-score-filtered');
    section.appendChild(table);
    const actions = el('div', 'jp-scorep-export-row');
    const apply = el(
      'button',
      'jp-scorep-button jp-mod-styled jp-scorep-apply-filter',
      score.applied ? 'Apply again' : "Apply to the cell's next run"
    );
    apply.title =
      'Write this filter to scorep-filters/ beside the experiments and set the cell’s scorep.filter_file to it (SCOREP_FILTERING_FILE for its next run)';
    const status = el('span', 'jp-scorep-hint jp-scorep-filter-status');
    status.setAttribute('role', 'status');
    if (score.applied) {
      status.textContent = `Applied: ${score.applied}`;
    }
    apply.addEventListener('click', () => void this.apply(apply, status));
    actions.append(apply, status);
    section.appendChild(actions);
    const file = el('details', 'jp-scorep-score-file');
    file.append(
      el('summary', '', 'The filter file'),
      el('pre', 'jp-scorep-score-text', filter.text)
    );
    section.appendChild(file);
    return section;
  }

  private tablesSection(score: IScore): HTMLElement {
    const section = el('section', 'jp-scorep-score-tables');
    section.setAttribute('aria-label', 'Regions by type');
    section.appendChild(el('h4', 'jp-scorep-score-title', 'Regions by type'));
    const types = rowsTable(
      score.types,
      ['type', 'buffer', 'visits', 'time', 'pct', 'per_visit'],
      r => [
        r.type,
        formatBytes(r.max_buf_bytes),
        r.visits.toLocaleString(),
        r.time_s.toFixed(2),
        r.time_pct.toFixed(1),
        r.time_per_visit_us.toFixed(2)
      ]
    );
    types.classList.add('jp-scorep-score-types');
    types.title =
      'USR: the program’s regions; COM: regions on a path to communication; SCOREP: the measurement’s own; ALL: everything';
    section.appendChild(types);
    const largest = el('details', 'jp-scorep-score-regions');
    const shown = score.regions.length;
    largest.appendChild(
      el(
        'summary',
        '',
        `Largest regions by trace buffer (${shown} of ${score.regions_total})`
      )
    );
    largest.appendChild(
      rowsTable(
        score.regions,
        ['region', 'type', 'buffer', 'visits', 'time', 'per_visit'],
        r => [
          r.name ?? '',
          r.type,
          formatBytes(r.max_buf_bytes),
          r.visits.toLocaleString(),
          r.time_s.toFixed(2),
          r.time_per_visit_us.toFixed(2)
        ]
      )
    );
    section.appendChild(largest);
    return section;
  }

  private async apply(
    button: HTMLButtonElement,
    status: HTMLElement
  ): Promise<void> {
    const cell = (this.options.cell ?? (() => cellOf(this.node)))();
    if (!cell) {
      status.textContent =
        'This output is not under a notebook cell: the filter cannot be set on a cell from here.';
      status.classList.add('jp-scorep-error');
      return;
    }
    button.disabled = true;
    let written: IFilterApplied;
    try {
      written = await this.options.api.applyFilter(this.options.path);
    } catch (error) {
      status.textContent = errorText(error);
      status.classList.add('jp-scorep-error');
      button.disabled = false;
      return;
    }
    const value = filterFileFor(
      written.root_path,
      written.path,
      cell.notebookPath
    );
    cell.setScorep(withFilterFile(cell.getScorep(), value));
    status.classList.remove('jp-scorep-error');
    status.textContent = `Applied: the cell's next run uses ${value} (scorep.filter_file)${
      written.merged ? `, which keeps the rules of ${written.merged}` : ''
    }.`;
    button.textContent = 'Apply again';
    button.disabled = false;
    const n = written.regions.length;
    this.options.onMessage?.(
      `Filter written to ${written.path}; rerun the cell to measure without ${n === 1 ? written.regions[0] : `those ${n} regions`}.`,
      false
    );
  }

  private loading: Promise<void> | null = null;
  private _score: IScore | null = null;
}

function formatEstimateChange(
  before: IScoreEstimate,
  after: IScoreEstimate
): string {
  return `${formatBytes(before.trace_bytes)} → ${formatBytes(after.trace_bytes)}, SCOREP_TOTAL_MEMORY ${formatBytes(before.total_memory_bytes)} → ${formatBytes(after.total_memory_bytes)}`;
}

const COLUMNS: Record<string, string> = {
  region: 'Region',
  type: 'Type',
  buffer: 'Buffer',
  visits: 'Visits',
  time: 'Time (s)',
  pct: 'Time %',
  per_visit: 'Time/visit (µs)'
};

/** A table of scorep-score rows; each cell says its column (`data-col`). */
function rowsTable(
  rows: IScoreRow[],
  columns: string[],
  cells: (r: IScoreRow) => string[]
): HTMLTableElement {
  const table = el('table', 'jp-scorep-score-table');
  const header = table.createTHead().insertRow();
  columns.forEach((key, i) => {
    const th = el('th', i === 0 ? '' : 'jp-scorep-num', COLUMNS[key]);
    th.dataset.col = key;
    header.appendChild(th);
  });
  const body = table.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    cells(r).forEach((text, i) => {
      const td = tr.insertCell();
      td.textContent = text;
      td.dataset.col = columns[i];
      if (i > 0) {
        td.className = 'jp-scorep-num';
      }
    });
  }
  return table;
}
