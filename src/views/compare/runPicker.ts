/**
 * The Compare view's picker of run A: this cell's earlier runs and the other experiments
 * the server lists, or an experiment path typed in.
 */
import type { IManifest } from '../../api/experimentTypes';
import type { ScorepAPI } from '../../api/apiClient';
import { el } from '../../util/dom';
import { backendName, formatWhen, parentDir } from '../history/runs';
import { formatSeconds } from '../../util/timeaxis';

export interface ICandidate {
  path: string;
  manifest: IManifest;
}

export class RunPicker {
  /** the picker's bar: the choices, a path field and its Compare button */
  readonly node: HTMLDivElement;

  constructor(
    private readonly api: ScorepAPI,
    /** run B: the run the panel shows, never offered */
    private readonly path: string,
    /** the user chose run `a` (a path) */
    private readonly onPick: (a: string) => void
  ) {
    this.node = el('div', 'jp-scorep-compare-bar');
    const label = el(
      'label',
      'jp-scorep-compare-label',
      'Compare this run (B) with '
    );
    this.select = el('select', 'jp-scorep-compare-select');
    this.select.setAttribute('aria-label', 'The run to compare with (A)');
    this.select.addEventListener('change', () => {
      if (this.select.value) {
        this.onPick(this.select.value);
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
        this.onPick(this.pathInput.value.trim());
      }
    });
    const go = el('button', 'jp-scorep-button', 'Compare');
    go.addEventListener('click', () => {
      if (this.pathInput.value.trim()) {
        this.onPick(this.pathInput.value.trim());
      }
    });
    this.node.append(label, this.pathInput, go);
  }

  /** The runs offered: the cell's runs first, then other experiments. */
  setChoices(cellRuns: ICandidate[], others: ICandidate[] = this.others): void {
    this.cellRuns = cellRuns.filter(c => c.path !== this.path);
    const mine = new Set(this.cellRuns.map(c => c.path));
    this.others = others.filter(c => c.path !== this.path && !mine.has(c.path));
    this.render();
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

  /** Show run `path` (experiment `id`) as the one chosen, offering it if it was not. */
  chosen(path: string, id: string): void {
    if (![...this.select.options].some(o => o.value === path)) {
      this.others = [{ path, manifest: { id } as IManifest }, ...this.others];
      this.render();
    }
    this.select.value = path;
  }

  private render(): void {
    const value = this.select.value;
    this.select.textContent = '';
    const placeholder = new Option('choose a run…', '');
    placeholder.disabled = true;
    this.select.add(placeholder);
    // the notebook of this cell's runs: another notebook's run is named by its notebook
    const own = this.cellRuns.find(c => c.manifest.notebook)?.manifest.notebook;
    const describe = (c: ICandidate, other: boolean) => {
      const m = c.manifest;
      const cell = (m.cells ?? [])[m.cells ? m.cells.length - 1 : 0];
      const parts = [
        other ? notebookLabel(m.notebook ?? null, own ?? null) : '',
        formatWhen(typeof m.start_ns === 'number' ? m.start_ns : null),
        cell?.execution_count !== undefined ? `[${cell.execution_count}]` : '',
        typeof m.wall_s === 'number' ? formatSeconds(m.wall_s) : '',
        m.backend ? backendName(m.backend) : '',
        m.status ?? ''
      ].filter(Boolean);
      return parts.length > 1 ? parts.join(' · ') : m.id;
    };
    const group = (title: string, list: ICandidate[], other = false) => {
      if (!list.length) {
        return;
      }
      const g = document.createElement('optgroup');
      g.label = title;
      for (const c of list) {
        const o = new Option(describe(c, other), c.path);
        o.title = c.manifest.notebook
          ? `${c.path} (notebook ${c.manifest.notebook})`
          : c.path;
        g.appendChild(o);
      }
      this.select.appendChild(g);
    };
    group("This cell's runs", this.cellRuns);
    group('Other experiments', this.others, true);
    this.select.value = value;
    if (this.select.selectedIndex < 0) {
      this.select.value = '';
    }
  }

  private readonly select: HTMLSelectElement;
  private readonly pathInput: HTMLInputElement;
  private cellRuns: ICandidate[] = [];
  private others: ICandidate[] = [];
  private othersLoaded = false;
}

/** How an experiment's notebook is named in the picker: its file name, "this notebook"
 * for the notebook of the cell's runs, "no notebook" when none was recorded. */
export function notebookLabel(
  notebook: string | null,
  own: string | null
): string {
  if (!notebook) {
    return 'no notebook';
  }
  if (own && notebook === own) {
    return 'this notebook';
  }
  return notebook.replace(/^.*\//, '');
}
