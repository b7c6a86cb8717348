import { IExperiment, IExperimentBundle } from '../../api/experimentTypes';
import { IFilterApplied, IScore } from '../../api/analysisTypes';
import { ScorepAPI } from '../../api/apiClient';
import type { ICellHandle } from '../../notebook/cellbridge';
import {
  measuredBy,
  renderFacts,
  renderScorepConfig,
  renderVerdicts,
  scorepConfigItems
} from '../../panel/header';
import { ExperimentPanel } from '../../panel/panel';
import {
  describeHeuristics,
  formatBytes,
  memoryBytes,
  ScorePTab
} from '../../views/scoreptab';
import {
  filterFileFor,
  IScorepMetadata,
  withFilterFile
} from '../../notebook/cellSettings';

// Score-P 8.4's scorep.cfg of a run, as the manifest records it (shortened)
const CONFIG: Record<string, string> = {
  SCOREP_ENABLE_PROFILING: 'true',
  SCOREP_ENABLE_TRACING: 'true',
  SCOREP_ENABLE_UNWINDING: 'false',
  SCOREP_EXPERIMENT_DIRECTORY: '/nb/scorep-experiments/run-1',
  SCOREP_FILTERING_FILE: '',
  SCOREP_METRIC_RUSAGE: '',
  SCOREP_SAMPLING_EVENTS: 'perf_cycles@10000000',
  SCOREP_TIMER: 'tsc',
  SCOREP_TOTAL_MEMORY: '2M'
};

const bundle: IExperimentBundle = {
  id: 'run-1',
  path: '/nb/scorep-experiments/run-1',
  backend: 'scorep',
  isolation: 'subprocess',
  status: 'ok',
  tool: 'Score-P 8.4'
};

function experiment(measurement: Record<string, unknown>): IExperiment {
  return {
    path: bundle.path,
    manifest: {
      format_version: 1,
      id: 'run-1',
      backend: 'scorep',
      isolation: 'subprocess',
      status: 'ok',
      files_status: 'ready',
      measurement
    },
    available: { otf2: true, cubex: true, metrics: true },
    tools: { vampir: false, cube: false },
    trace: null
  };
}

// GET score of a run that flushed (numbers from a real run, shortened)
const SCORE: IScore = {
  tool: '/opt/scorep/bin/scorep-score',
  estimate: {
    trace: '1407kB',
    trace_bytes: 1440768,
    max_buf: '1407kB',
    max_buf_bytes: 1440768,
    total_memory: '4097kB',
    total_memory_bytes: 4195328,
    hint: 'When tracing set SCOREP_TOTAL_MEMORY=4097kB to avoid intermediate flushes'
  },
  types: [
    {
      type: 'ALL',
      max_buf_bytes: 1440129,
      visits: 60003,
      time_s: 0.64,
      time_pct: 100,
      time_per_visit_us: 10.66
    },
    {
      type: 'USR',
      max_buf_bytes: 1440024,
      visits: 60001,
      time_s: 0.03,
      time_pct: 4.7,
      time_per_visit_us: 0.5
    }
  ],
  regions: [
    {
      type: 'USR',
      name: '__main__:h',
      max_buf_bytes: 1440000,
      visits: 60000,
      time_s: 0.02,
      time_pct: 3.1,
      time_per_visit_us: 0.33
    }
  ],
  regions_total: 4,
  filter: {
    heuristics: 'bufferpercent=1,timepervisit=1',
    regions: [
      {
        type: 'USR',
        name: '__main__:h',
        max_buf_bytes: 1440000,
        visits: 60000,
        time_s: 0.02,
        time_pct: 3.1,
        time_per_visit_us: 0.33
      }
    ],
    estimate: { trace: '130', trace_bytes: 130, total_memory_bytes: 4195328 },
    types: [],
    text: 'SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE\n    MANGLED __main__:h\nSCOREP_REGION_NAMES_END\n'
  },
  configured: { SCOREP_TOTAL_MEMORY: '2M', SCOREP_FILTERING_FILE: '' },
  applied: null
};

const APPLIED: IFilterApplied = {
  path: '/srv/nb/scorep-filters/run-1.filter',
  root_path: 'nb/scorep-filters/run-1.filter',
  regions: ['__main__:h'],
  merged: null
};

function fakeApi(
  score: () => Promise<IScore>,
  apply: () => Promise<IFilterApplied>
): ScorepAPI & { applied: number } {
  const api = new ScorepAPI({ baseUrl: 'http://localhost/' } as any) as any;
  api.applied = 0;
  api.score = score;
  api.applyFilter = () => {
    api.applied++;
    return apply();
  };
  return api;
}

function fakeCell(initial: IScorepMetadata | undefined): ICellHandle & {
  meta: IScorepMetadata | undefined;
} {
  const cell = {
    notebookPath: 'nb/analysis.ipynb',
    meta: initial,
    getScorep: () => cell.meta,
    setScorep: (m: IScorepMetadata) => {
      cell.meta = m;
    }
  };
  return cell;
}

describe('the filter file in the cell', () => {
  it('sets filter_file and keeps every other key', () => {
    const own: IScorepMetadata = {
      profile: true,
      backend: 'scorep',
      max_depth: 3,
      lab_settings: { isolation: 'subprocess' }
    };
    expect(withFilterFile(own, 'scorep-filters/a.filter')).toEqual({
      ...own,
      filter_file: 'scorep-filters/a.filter'
    });
    expect(own.filter_file).toBeUndefined(); // not changed in place
    expect(withFilterFile(undefined, '/abs/a.filter')).toEqual({
      filter_file: '/abs/a.filter'
    });
  });

  it('is relative to the notebook when inside its folder, else absolute', () => {
    const abs = '/srv/nb/scorep-filters/a.filter';
    expect(
      filterFileFor('nb/scorep-filters/a.filter', abs, 'nb/analysis.ipynb')
    ).toBe('scorep-filters/a.filter');
    expect(
      filterFileFor('scorep-filters/a.filter', abs, 'analysis.ipynb')
    ).toBe('scorep-filters/a.filter');
    expect(
      filterFileFor('other/scorep-filters/a.filter', abs, 'nb/x.ipynb')
    ).toBe(abs);
    expect(filterFileFor('nbx/a.filter', abs, 'nb/x.ipynb')).toBe(abs);
    expect(filterFileFor(null, abs, 'nb/x.ipynb')).toBe(abs);
  });
});

describe('what measured the run and how', () => {
  it('names the tool with its version', () => {
    expect(measuredBy(bundle, experiment({ tool: 'Score-P 8.4' }))).toBe(
      'Score-P 8.4'
    );
    expect(measuredBy(bundle, null)).toBe('Score-P 8.4'); // the bundle's, before loading
    expect(measuredBy({ ...bundle, tool: undefined }, null)).toBe('Score-P');
    expect(measuredBy({ ...bundle, backend: 'builtin' }, null)).toBe(
      'builtin tracer'
    );
  });

  it('sums up the settings that matter', () => {
    expect(scorepConfigItems(CONFIG).map(([, text]) => text)).toEqual([
      'tracing on',
      'profiling on',
      'memory 2M',
      'no filter',
      'timer tsc'
    ]);
    const more = {
      ...CONFIG,
      SCOREP_ENABLE_PROFILING: 'false',
      SCOREP_FILTERING_FILE: '/nb/scorep-filters/run-0.filter',
      SCOREP_METRIC_RUSAGE: 'ru_maxrss,ru_utime',
      SCOREP_ENABLE_UNWINDING: 'true'
    };
    expect(scorepConfigItems(more).map(([, text]) => text)).toEqual([
      'tracing on',
      'profiling off',
      'memory 2M',
      'filter run-0.filter',
      'metrics ru_maxrss,ru_utime',
      'sampling perf_cycles@10000000',
      'timer tsc'
    ]);
  });

  it('shows the configuration in the header, every set value when opened', () => {
    const facts = document.createElement('div');
    renderFacts(
      facts,
      bundle,
      experiment({ tool: 'Score-P 8.4', scorep_config: CONFIG }),
      null
    );
    expect(facts.querySelector('[data-key=backend] b')!.textContent).toBe(
      'Score-P 8.4'
    );
    const config = facts.querySelector('details.jp-scorep-config')!;
    expect(config.querySelector('summary')!.textContent).toBe(
      'Configuration: tracing on · profiling on · memory 2M · no filter · timer tsc'
    );
    const rows = [...config.querySelectorAll('tr')].map(r => r.textContent);
    expect(rows).toContain('SCOREP_TIMERtsc');
    expect(rows).not.toContain('SCOREP_FILTERING_FILE'); // empty values left out
    expect(renderScorepConfig(CONFIG).open).toBe(false);
  });

  it("says Score-P's messages in words, labelled Score-P", () => {
    const ul = document.createElement('ul');
    renderVerdicts(ul, {
      wall_s: 1,
      events: 10,
      status: 'ok',
      top_regions: [],
      verdicts: [
        {
          kind: 'scorep',
          level: 'warning',
          text: 'Score-P ran out of its measurement memory (SCOREP_TOTAL_MEMORY=2M).'
        }
      ]
    });
    const li = ul.querySelector('li')!;
    expect(li.querySelector('.jp-scorep-verdict-kind')!.textContent).toBe(
      'Score-P'
    );
    expect(li.textContent).toContain('SCOREP_TOTAL_MEMORY=2M');
  });
});

describe('the Score-P tab', () => {
  it('sizes in Score-P’s units', () => {
    expect(formatBytes(130)).toBe('130 B');
    expect(formatBytes(1440768)).toBe('1.4 MB');
    expect(formatBytes(4195328)).toBe('4.0 MB');
    expect(memoryBytes('2M')).toBe(2 * 1024 * 1024);
    expect(memoryBytes('256M')).toBe(256 * 1024 * 1024);
    expect(memoryBytes('4097kB')).toBe(4097 * 1024);
    expect(memoryBytes('1G')).toBe(1024 ** 3);
    expect(memoryBytes('lots')).toBeNull();
  });

  it('says the filter heuristics in words', () => {
    expect(describeHeuristics('bufferpercent=1,timepervisit=1')).toBe(
      'at least 1 % of the trace buffer and under 1 µs per visit'
    );
    expect(describeHeuristics('visits=1000,type=usr,nonsense')).toBe(
      'more than 1000 visits and of type usr'
    );
  });

  it('shows the estimate against what the run had, and the filter', async () => {
    const api = fakeApi(
      async () => SCORE,
      async () => APPLIED
    );
    const tab = new ScorePTab({ api, path: bundle.path, cell: () => null });
    await tab.load();
    const node = tab.node;
    expect(node.dataset.state).toBe('ready');
    const dd = (key: string) =>
      node.querySelector(`td[data-key=${key}]`)!.textContent;
    expect(dd('trace')).toBe('1.4 MB');
    expect(dd('total_memory')).toContain('more than the 2M this run had');
    expect(
      node
        .querySelector('.jp-scorep-score-estimate')!
        .getAttribute('data-short')
    ).toBe('true');
    const filtered = node.querySelector('.jp-scorep-score-filtered tbody')!;
    expect(filtered.textContent).toContain('__main__:h');
    expect(filtered.textContent).toContain('60,000');
    expect(node.querySelector('.jp-scorep-score-text')!.textContent).toContain(
      'MANGLED __main__:h'
    );
    expect(node.querySelector('.jp-scorep-score-types')!.textContent).toContain(
      'USR'
    );
  });

  it('applies the filter to the cell: filter_file set, nothing else changed', async () => {
    const api = fakeApi(
      async () => SCORE,
      async () => APPLIED
    );
    const cell = fakeCell({
      profile: true,
      backend: 'scorep',
      lab_settings: { isolation: 'subprocess' }
    });
    const tab = new ScorePTab({ api, path: bundle.path, cell: () => cell });
    await tab.load();
    const button = tab.node.querySelector<HTMLButtonElement>(
      '.jp-scorep-apply-filter'
    )!;
    button.click();
    for (let i = 0; i < 10; i++) {
      await Promise.resolve();
    }
    expect(api.applied).toBe(1);
    expect(cell.meta).toEqual({
      profile: true,
      backend: 'scorep',
      lab_settings: { isolation: 'subprocess' },
      filter_file: 'scorep-filters/run-1.filter'
    });
    expect(
      tab.node.querySelector('.jp-scorep-filter-status')!.textContent
    ).toContain('scorep-filters/run-1.filter');
    expect(button.textContent).toBe('Apply again');
  });

  it('leaves the cell alone when the server refuses, or without a cell', async () => {
    const api = fakeApi(
      async () => SCORE,
      () => Promise.reject(new Error('Not writable: make that folder writable'))
    );
    const cell = fakeCell({ profile: true });
    const tab = new ScorePTab({ api, path: bundle.path, cell: () => cell });
    await tab.load();
    tab.node
      .querySelector<HTMLButtonElement>('.jp-scorep-apply-filter')!
      .click();
    for (let i = 0; i < 10; i++) {
      await Promise.resolve();
    }
    expect(cell.meta).toEqual({ profile: true });
    const status = tab.node.querySelector('.jp-scorep-filter-status')!;
    expect(status.textContent).toContain('Not writable');
    const lonely = new ScorePTab({ api, path: bundle.path, cell: () => null });
    await lonely.load();
    lonely.node
      .querySelector<HTMLButtonElement>('.jp-scorep-apply-filter')!
      .click();
    await Promise.resolve();
    expect(api.applied).toBe(1); // only the first tab asked the server
    expect(
      lonely.node.querySelector('.jp-scorep-filter-status')!.textContent
    ).toContain('not under a notebook cell');
  });

  it('says when there is nothing to filter, or why there is no estimate', async () => {
    const nothing = new ScorePTab({
      api: fakeApi(
        async () => ({ ...SCORE, filter: null }),
        async () => APPLIED
      ),
      path: bundle.path
    });
    await nothing.load();
    expect(nothing.node.querySelector('.jp-scorep-apply-filter')).toBeNull();
    expect(nothing.node.textContent).toContain('No region meets');
    expect(nothing.node.textContent).toContain('under 1 µs per visit');
    const wider = new ScorePTab({
      api: fakeApi(
        async () => ({
          ...SCORE,
          filter: null,
          heuristics: 'bufferpercent=1,timepervisit=20'
        }),
        async () => APPLIED
      ),
      path: bundle.path
    });
    await wider.load();
    expect(wider.node.textContent).toContain('under 20 µs per visit');
    const failing = new ScorePTab({
      api: fakeApi(
        () => Promise.reject(new Error('scorep-score is not on the server')),
        async () => APPLIED
      ),
      path: bundle.path
    });
    await failing.load();
    expect(failing.node.dataset.state).toBe('error');
    expect(failing.node.textContent).toContain('scorep-score is not');
  });

  it('is a tab of Score-P runs only', () => {
    const api = new ScorepAPI({ baseUrl: 'http://localhost/' } as any);
    const tabs = (b: IExperimentBundle) =>
      [
        ...new ExperimentPanel(b, api).node.querySelectorAll<HTMLElement>(
          '.jp-scorep-tab'
        )
      ].map(t => t.dataset.tab);
    expect(tabs(bundle)).toContain('scorep');
    expect(tabs({ ...bundle, backend: 'builtin' })).not.toContain('scorep');
  });
});
