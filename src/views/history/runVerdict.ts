/**
 * The header's line on this run against the cell's previous run: shown when it is more than
 * the run-to-run noise (the server decides, see GET compare), with a button to the
 * comparison.
 */
import type { IRunEntry } from '../../api/experimentTypes';
import type { IComparison } from '../../api/analysisTypes';
import { el } from '../../util/dom';
import { formatWhen, measuredDifferently } from './runs';

/** Fill `node` with the verdict of comparison `c`; `open` shows the comparison. */
export function renderRunVerdict(
  node: HTMLDivElement,
  c: IComparison,
  previous: IRunEntry,
  open: () => void
): void {
  const v = c.verdict;
  node.dataset.kind = v.kind;
  node.textContent = '';
  if (v.kind === 'within_noise') {
    // only a difference beyond the run-to-run noise is worth a line
    node.hidden = true;
    return;
  }
  node.hidden = false;
  node.title =
    `Against the run of ${formatWhen(previous.manifest.start_ns ?? null)}. ` +
    `Noise: ${v.noise.basis}.`;
  const button = el('button', 'jp-scorep-link', 'Compare');
  button.title = 'Open the comparison with the previous run';
  button.addEventListener('click', open);
  node.append(
    el('span', 'jp-scorep-run-verdict-kind', v.kind === 'slower' ? '▲' : '▼'),
    document.createTextNode(v.sentence + ' '),
    button
  );
  const differently = measuredDifferently(c.a, c.b);
  if (differently) {
    node.append(el('div', 'jp-scorep-compare-warning', `⚠ ${differently}`));
  }
}
