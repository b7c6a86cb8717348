/**
 * *Profile as MPI ranks…*: a dialog asking how many ranks, which launcher and what extra
 * launcher arguments, for the cells the command acts on.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import { el } from '../../util/dom';
import { IMpiChoice, LAUNCHERS, MAX_RANKS, parseRanks } from './metadata';

class MpiForm extends Widget {
  constructor(initial: IMpiChoice | null) {
    super();
    this.addClass('jp-scorep-mpi-form');
    const ranksLabel = el('label', '', 'Ranks ');
    this.ranks = el('input');
    this.ranks.type = 'number';
    this.ranks.min = '1';
    this.ranks.max = String(MAX_RANKS);
    this.ranks.value = String(initial?.ranks ?? 2);
    this.ranks.setAttribute('aria-label', 'Number of MPI ranks');
    ranksLabel.appendChild(this.ranks);
    const launcherLabel = el('label', '', 'Launcher ');
    this.launcher = el('select');
    this.launcher.setAttribute('aria-label', 'MPI launcher');
    const chosen = initial?.launcher ?? '';
    const choices = LAUNCHERS.includes(chosen)
      ? LAUNCHERS
      : [...LAUNCHERS, chosen];
    for (const name of choices) {
      const option = el(
        'option',
        '',
        name || 'default (srun in Slurm, else mpirun)'
      );
      option.value = name;
      option.selected = name === chosen;
      this.launcher.appendChild(option);
    }
    launcherLabel.appendChild(this.launcher);
    const argsLabel = el('label', '', 'Launcher arguments ');
    this.args = el('input');
    this.args.type = 'text';
    this.args.placeholder = 'e.g. --hostfile hosts';
    this.args.value = initial?.args ?? '';
    this.args.setAttribute('aria-label', 'Extra launcher arguments');
    argsLabel.appendChild(this.args);
    this.node.append(
      ranksLabel,
      launcherLabel,
      argsLabel,
      el(
        'p',
        'jp-scorep-help',
        "The cell runs as this many processes of your MPI launcher; every rank starts from the notebook's variables and rank 0's come back."
      )
    );
  }

  getValue(): IMpiChoice | null {
    const ranks = parseRanks(this.ranks.value);
    if (ranks === null) {
      return null;
    }
    return { ranks, launcher: this.launcher.value, args: this.args.value };
  }

  readonly ranks: HTMLInputElement;
  readonly launcher: HTMLSelectElement;
  readonly args: HTMLInputElement;
}

/**
 * The user's choice; `null` for *Not MPI* (run on one process again), `undefined` when the
 * dialog was cancelled or the ranks were no whole number from 1 to 4096.
 */
export async function askMpi(
  initial: IMpiChoice | null
): Promise<IMpiChoice | null | undefined> {
  const form = new MpiForm(initial);
  const result = await showDialog({
    title: 'Profile as MPI ranks',
    body: form,
    buttons: [
      Dialog.cancelButton(),
      ...(initial ? [Dialog.warnButton({ label: 'Not MPI' })] : []),
      Dialog.okButton({ label: 'Profile as MPI' })
    ],
    focusNodeSelector: 'input'
  });
  if (!result.button.accept) {
    return undefined;
  }
  if (result.button.displayType === 'warn') {
    return null;
  }
  return result.value ?? undefined;
}
