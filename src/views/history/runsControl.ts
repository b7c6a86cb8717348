/**
 * The Runs control in the panel's header: this cell's runs found on disk, newest first
 * (when, wall time, status, backend, whether the source changed), each openable in place,
 * comparable with the run shown, or deletable after a confirmation; and the disk the
 * notebook's runs use. Nothing is deleted without the user confirming it.
 */
import type { IManifest, IRunEntry, IRuns } from '../../api/experimentTypes';
import type { ScorepAPI } from '../../api/apiClient';
import { el, errorText } from '../../util/dom';
import { formatBytes } from '../metrics/format';
import { formatSeconds } from '../../util/timeaxis';
import { backendName, formatWhen, runRows } from './runs';

export interface IRunsActions {
  open: (entry: IRunEntry) => void;
  compare: (entry: IRunEntry) => void;
  /** after a run was deleted (the list is reloaded by the caller) */
  deleted: (entry: IRunEntry, freedBytes: number) => void;
  message: (text: string, isError: boolean) => void;
  /** asks the user; resolves true to go ahead (a dialog unless replaced, e.g. in tests) */
  confirm?: (title: string, body: string) => Promise<boolean>;
}

async function confirmDialog(title: string, body: string): Promise<boolean> {
  // loaded when needed: the panel's tests run without JupyterLab's dialogs
  const { Dialog, showDialog } = await import('@jupyterlab/apputils');
  const result = await showDialog({
    title,
    body,
    buttons: [
      Dialog.cancelButton(),
      Dialog.warnButton({ label: 'Delete', ariaLabel: 'Delete the run' })
    ]
  });
  return result.button.accept;
}

let nextId = 0;

export class RunsControl {
  constructor(
    private readonly api: ScorepAPI,
    private readonly actions: IRunsActions
  ) {
    this.node = el('div', 'jp-scorep-runs');
    this.node.hidden = true;
    this.button = el('button', 'jp-scorep-button jp-scorep-runs-button');
    this.button.setAttribute('aria-expanded', 'false');
    this.list = el('div', 'jp-scorep-runs-list');
    this.list.id = `jp-scorep-runs-${++nextId}`;
    this.list.hidden = true;
    this.list.setAttribute('role', 'region');
    this.list.setAttribute('aria-label', 'Runs of this cell');
    this.button.setAttribute('aria-controls', this.list.id);
    this.button.addEventListener('click', () => this.toggle());
    this.disk = el('span', 'jp-scorep-runs-disk');
    this.node.append(this.button, this.disk, this.list);
  }

  readonly node: HTMLDivElement;

  /** The runs now listed (newest first). */
  get runs(): IRunEntry[] {
    return this._runs;
  }

  setRuns(runs: IRuns, current: IManifest, cellId: string | null): void {
    this._runs = runs.experiments;
    this.current = current;
    this.cellId = cellId;
    const n = runs.experiments.length;
    this.node.hidden = false;
    this.button.textContent = `Runs (${n})`;
    this.button.title = `This cell's runs found on disk: ${n}`;
    const { notebook_bytes: bytes, notebook_runs: count } = runs.disk;
    this.disk.textContent = count
      ? `Notebook's runs: ${formatBytes(bytes)} on disk (${count})`
      : '';
    this.renderList();
  }

  toggle(open = this.list.hidden): void {
    this.list.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    // while open, Escape anywhere and a click outside close it, as a menu does; caught
    // before JupyterLab's own handlers (Escape would otherwise only leave edit mode)
    const doc = this.node.ownerDocument;
    if (open) {
      doc.addEventListener('keydown', this.onKey, true);
      doc.addEventListener('pointerdown', this.onPointer, true);
      this.list
        .querySelector<HTMLButtonElement>('button:not(:disabled)')
        ?.focus();
    } else {
      doc.removeEventListener('keydown', this.onKey, true);
      doc.removeEventListener('pointerdown', this.onPointer, true);
    }
  }

  private readonly onKey = (e: KeyboardEvent): void => {
    if (e.key !== 'Escape') {
      return;
    }
    e.stopPropagation();
    e.preventDefault();
    const inside = this.node.contains(e.target as Node);
    this.toggle(false);
    if (inside || !this.node.isConnected) {
      this.button.focus();
    }
  };

  private readonly onPointer = (e: PointerEvent): void => {
    if (!this.node.isConnected || !this.node.contains(e.target as Node)) {
      this.toggle(false);
    }
  };

  private renderList(): void {
    const current = this.current;
    this.list.textContent = '';
    if (!current) {
      return;
    }
    const table = el('table', 'jp-scorep-runs-table');
    const head = table.createTHead().insertRow();
    for (const title of [
      'When',
      'Cell',
      'Wall',
      'Status',
      'Backend',
      'Source',
      ''
    ]) {
      const th = el('th', '', title);
      th.scope = 'col';
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const row of runRows(this._runs, current, this.cellId)) {
      const tr = body.insertRow();
      tr.dataset.id = row.id;
      tr.classList.toggle('jp-scorep-runs-current', row.current);
      const when = formatWhen(row.startNs);
      const cells = [
        when,
        row.executionCount !== null ? `[${row.executionCount}]` : '',
        row.wallS !== null ? formatSeconds(row.wallS) : '–',
        row.status,
        `${backendName(row.backend)}${row.isolation ? `, ${row.isolation}` : ''}`,
        row.current
          ? 'this run'
          : row.sourceChanged === null
            ? '?'
            : row.sourceChanged
              ? 'changed'
              : 'same'
      ];
      cells.forEach((text, i) => {
        const td = el('td', '', text);
        if (i === 3) {
          td.dataset.status = row.status;
        }
        if (i === 5) {
          td.dataset.col = 'source';
          if (row.sourceChanged) {
            td.classList.add('jp-scorep-changed');
          }
        }
        tr.appendChild(td);
      });
      const actions = el('td', 'jp-scorep-runs-actions');
      const open = el('button', 'jp-scorep-link', 'Open');
      open.title = row.current
        ? 'This panel shows this run'
        : `Show the run of ${when} here`;
      open.disabled = row.current;
      open.addEventListener('click', () => {
        this.toggle(false);
        this.actions.open(row.entry);
      });
      const compare = el('button', 'jp-scorep-link', 'Compare');
      compare.title = `Compare the run shown with the run of ${when}`;
      compare.disabled = row.current;
      compare.addEventListener('click', () => {
        this.toggle(false);
        this.actions.compare(row.entry);
      });
      const del = el('button', 'jp-scorep-link jp-scorep-danger', 'Delete…');
      del.title = row.current
        ? 'This panel shows this run'
        : `Delete the run of ${when} from disk`;
      del.disabled = row.current;
      del.addEventListener('click', () => void this.remove(row.entry, when));
      actions.append(open, compare, del);
      tr.appendChild(actions);
    }
    this.list.appendChild(table);
  }

  private async remove(entry: IRunEntry, when: string): Promise<void> {
    const ask = this.actions.confirm ?? confirmDialog;
    const ok = await ask(
      'Delete this run?',
      `The run of ${when} (${entry.manifest.id}) is removed from disk: ` +
        `${entry.path} (${formatBytes(entry.disk_bytes)}). This cannot be undone.`
    );
    if (!ok) {
      return;
    }
    try {
      const answer = await this.api.deleteExperiment(
        entry.path,
        entry.manifest.id
      );
      this.actions.message(
        `Deleted the run of ${when} (${formatBytes(answer.freed_bytes)} freed).`,
        false
      );
      this.actions.deleted(entry, answer.freed_bytes);
    } catch (error) {
      this.actions.message(errorText(error), true);
    }
  }

  private readonly button: HTMLButtonElement;
  private readonly list: HTMLDivElement;
  private readonly disk: HTMLSpanElement;
  private _runs: IRunEntry[] = [];
  private current: IManifest | null = null;
  private cellId: string | null = null;
}
