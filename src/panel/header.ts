/** The panel's header: the run's facts (what measured it, isolation, wall time, status,
 * events; for a Score-P run its configuration) and the summary's verdicts and top regions. */
import type { IExperiment, IExperimentBundle } from '../api/experimentTypes';
import type { ISummary } from '../api/analysisTypes';
import { el } from '../util/dom';
import { formatDuration, formatSeconds } from '../util/timeaxis';

export function renderFacts(
  container: HTMLElement,
  bundle: IExperimentBundle,
  experiment: IExperiment | null,
  summary: ISummary | null
): void {
  const m = experiment?.manifest;
  const isolation = m?.isolation ?? bundle.isolation ?? '';
  // the cells' time (their regions on the thread that ran them): the manifest's, else as
  // the kernel reported it with the output; one definition everywhere (docs/API.md)
  const wall = m?.wall_s ?? bundle.summary?.wall_s ?? summary?.wall_s;
  const status = summary?.status ?? m?.status ?? bundle.status;
  const events =
    summary?.events ?? experiment?.trace?.events ?? bundle.summary?.events;
  container.textContent = '';
  // titled by what measured the run: a builtin run is no Score-P run
  const scorep = (m?.backend ?? bundle.backend) === 'scorep';
  container.appendChild(
    el('span', 'jp-scorep-title', scorep ? 'Score-P' : 'Builtin tracer')
  );
  const known = (v: number | null | undefined, f: (x: number) => string) =>
    v !== undefined && v !== null ? f(v) : '–';
  const items: [string, string, string][] = [
    ['backend', 'Backend', measuredBy(bundle, experiment)],
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
    if (key === 'wall') {
      item.title = wallTitle(
        m?.cell_time ?? summary?.cell_time,
        wall,
        m?.run_s
      );
    }
    container.appendChild(item);
  }
  const config = m?.measurement?.scorep_config;
  if (config && typeof config === 'object') {
    container.appendChild(renderScorepConfig(config));
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

/** The cells' time in words: its split, and what the measurement cost beside it. */
export function wallTitle(
  split:
    | { cpu_s: number | null; queue_s: number | null; wait_s: number | null }
    | null
    | undefined,
  wall: number | null | undefined,
  runS: number | null | undefined
): string {
  const parts = ["The cells' time: their regions on the thread that ran them."];
  if (
    split &&
    split.cpu_s !== null &&
    split.queue_s !== null &&
    split.wait_s !== null
  ) {
    parts.push(
      `Running ${formatSeconds(split.cpu_s)}, waiting ${formatSeconds(split.wait_s)} ` +
        `(sleep, lock, I/O), queued for a CPU ${formatSeconds(split.queue_s)} (the machine's load).`
    );
  }
  if (typeof runS === 'number' && typeof wall === 'number' && runS >= wall) {
    parts.push(`The measurement itself added ${formatSeconds(runS - wall)}.`);
  }
  return parts.join(' ');
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
      el(
        'span',
        'jp-scorep-verdict-kind',
        v.kind === 'scorep' ? 'Score-P' : v.kind.toUpperCase()
      ),
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

/** What measured the run: "Score-P 8.4" (the manifest's or the bundle's `tool`), else
 * "Score-P", or the builtin tracer. */
export function measuredBy(
  bundle: IExperimentBundle,
  experiment: IExperiment | null
): string {
  const m = experiment?.manifest;
  if ((m?.backend ?? bundle.backend) !== 'scorep') {
    return 'builtin tracer';
  }
  const tool = m?.measurement?.tool ?? bundle.tool;
  return typeof tool === 'string' && tool ? tool : 'Score-P';
}

const ON = /^(true|yes|on|1)$/i;
const METRIC_KEYS = [
  'SCOREP_METRIC_PAPI',
  'SCOREP_METRIC_PAPI_PER_PROCESS',
  'SCOREP_METRIC_RUSAGE',
  'SCOREP_METRIC_RUSAGE_PER_PROCESS',
  'SCOREP_METRIC_PERF',
  'SCOREP_METRIC_PERF_PER_PROCESS',
  'SCOREP_METRIC_PLUGINS'
];

/**
 * The Score-P settings that matter for reading a run, in a few words each: tracing and
 * profiling, the measurement memory, the filter file, recorded metrics, sampling, the timer.
 * `[key, text, title]`; settings Score-P did not report are left out.
 */
export function scorepConfigItems(
  config: Record<string, string>
): [string, string, string][] {
  const items: [string, string, string][] = [];
  const has = (key: string) => typeof config[key] === 'string';
  const onOff = (key: string, what: string) => {
    if (has(key)) {
      items.push([key, `${what} ${ON.test(config[key]) ? 'on' : 'off'}`, '']);
    }
  };
  onOff('SCOREP_ENABLE_TRACING', 'tracing');
  onOff('SCOREP_ENABLE_PROFILING', 'profiling');
  if (config['SCOREP_TOTAL_MEMORY']) {
    items.push([
      'SCOREP_TOTAL_MEMORY',
      `memory ${config['SCOREP_TOTAL_MEMORY']}`,
      'SCOREP_TOTAL_MEMORY: the measurement memory per process; a run that needs more flushes its trace buffer'
    ]);
  }
  if (has('SCOREP_FILTERING_FILE')) {
    const file = config['SCOREP_FILTERING_FILE'];
    items.push(
      file
        ? ['SCOREP_FILTERING_FILE', `filter ${file.split('/').pop()}`, file]
        : ['SCOREP_FILTERING_FILE', 'no filter', '']
    );
  }
  const metrics = METRIC_KEYS.filter(k => config[k]).map(k => config[k]);
  if (metrics.length) {
    items.push(['SCOREP_METRIC', `metrics ${metrics.join(', ')}`, '']);
  }
  if (ON.test(config['SCOREP_ENABLE_UNWINDING'] ?? '')) {
    items.push([
      'SCOREP_ENABLE_UNWINDING',
      `sampling ${config['SCOREP_SAMPLING_EVENTS'] ?? ''}`.trim(),
      ''
    ]);
  }
  if (config['SCOREP_TIMER']) {
    items.push(['SCOREP_TIMER', `timer ${config['SCOREP_TIMER']}`, '']);
  }
  return items;
}

/** The run's Score-P configuration: the settings that matter in one line, every setting
 * with a value when opened. */
export function renderScorepConfig(
  config: Record<string, string>
): HTMLDetailsElement {
  const details = el('details', 'jp-scorep-config');
  const summary = el('summary', 'jp-scorep-config-summary');
  summary.appendChild(el('span', 'jp-scorep-fact-label', 'Configuration: '));
  scorepConfigItems(config).forEach(([key, text, title], i) => {
    if (i > 0) {
      summary.appendChild(document.createTextNode(' · '));
    }
    const item = el('span', 'jp-scorep-config-item', text);
    item.dataset.key = key;
    if (title) {
      item.title = title;
    }
    summary.appendChild(item);
  });
  details.appendChild(summary);
  const table = el('table', 'jp-scorep-config-table');
  for (const key of Object.keys(config).sort()) {
    if (!config[key]) {
      continue;
    }
    const row = table.insertRow();
    row.insertCell().textContent = key;
    row.insertCell().textContent = config[key];
  }
  details.appendChild(table);
  return details;
}
