/** The panel's header: the run's facts (backend, isolation, wall time, status, events) and
 * the summary's verdicts and top regions. */
import type { IExperiment, IExperimentBundle, ISummary } from './api';
import { el } from './dom';
import { formatDuration, formatSeconds } from './timeaxis';

export function renderFacts(
  container: HTMLElement,
  bundle: IExperimentBundle,
  experiment: IExperiment | null,
  summary: ISummary | null
): void {
  const m = experiment?.manifest;
  const backend = m?.backend ?? bundle.backend;
  const isolation = m?.isolation ?? bundle.isolation ?? '';
  // the cell's wall time as the kernel reported it with the output, then the manifest's
  const wall = bundle.summary?.wall_s ?? m?.wall_s ?? summary?.wall_s;
  const status = summary?.status ?? m?.status ?? bundle.status;
  const events =
    summary?.events ?? experiment?.trace?.events ?? bundle.summary?.events;
  container.textContent = '';
  container.appendChild(el('span', 'jp-scorep-title', 'Score-P'));
  const known = (v: number | null | undefined, f: (x: number) => string) =>
    v !== undefined && v !== null ? f(v) : '–';
  const items: [string, string, string][] = [
    ['backend', 'Backend', backend === 'scorep' ? 'Score-P' : 'builtin tracer'],
    ['isolation', 'Isolation', isolation || '–'],
    ['wall', 'Wall time', known(wall, formatSeconds)],
    ['status', 'Status', status],
    ['events', 'Events', known(events, x => x.toLocaleString())]
  ];
  for (const [key, label, value] of items) {
    const item = el('span', `jp-scorep-fact jp-scorep-fact-${key}`);
    item.dataset.key = key;
    item.append(
      el('span', 'jp-scorep-fact-label', `${label}: `),
      el('b', '', value)
    );
    if (key === 'status') {
      item.dataset.status = status;
    }
    container.appendChild(item);
  }
  const measurement = m?.measurement ?? {};
  if (measurement['cap_reached'] === true) {
    const cap = measurement['event_cap'];
    container.appendChild(
      el(
        'span',
        'jp-scorep-fact jp-scorep-warn',
        `Event cap${typeof cap === 'number' ? ` of ${cap.toLocaleString()}` : ''} reached: later events were not recorded`
      )
    );
  }
}

export function renderVerdicts(
  container: HTMLElement,
  summary: ISummary
): void {
  container.textContent = '';
  for (const v of summary.verdicts) {
    const li = el('li', `jp-scorep-verdict jp-scorep-verdict-${v.level}`);
    li.dataset.kind = v.kind;
    li.append(
      el('span', 'jp-scorep-verdict-kind', v.kind.toUpperCase()),
      document.createTextNode(v.text)
    );
    container.appendChild(li);
  }
  if (summary.top_regions.length) {
    const top = summary.top_regions
      .slice(0, 3)
      .map(
        r =>
          `${r.name} ${r.pct.toFixed(0)} % (${formatDuration(r.excl_s * 1e9)}, ${r.visits}×)`
      )
      .join(' · ');
    const li = el('li', 'jp-scorep-verdict jp-scorep-verdict-top');
    li.append(
      el('span', 'jp-scorep-verdict-kind', 'TOP'),
      document.createTextNode(top)
    );
    container.appendChild(li);
  }
}
