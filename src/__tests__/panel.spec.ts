import { Widget } from '@lumino/widgets';
import { ApiError, IExperiment, IExperimentBundle, ScorepAPI } from '../api';
import { ExperimentPanel } from '../panel';

// jsdom has no ResizeObserver; the timeline only needs it to exist
(globalThis as any).ResizeObserver = class {
  observe(): void {
    /* no layout in jsdom */
  }
  disconnect(): void {
    /* nothing observed */
  }
};

const bundle: IExperimentBundle = {
  id: 'exp-1',
  path: '/nb/scorep-experiments/exp-1',
  backend: 'builtin',
  isolation: 'subprocess',
  status: 'ok',
  summary: {
    wall_s: 1.5,
    events: 1234,
    message: 'Profiled with the builtin tracer.'
  }
};

function experiment(filesStatus: 'pending' | 'ready', files = {}): IExperiment {
  return {
    path: bundle.path,
    manifest: {
      format_version: 1,
      id: 'exp-1',
      backend: 'builtin',
      isolation: 'subprocess',
      status: 'ok',
      files_status: filesStatus,
      files
    },
    available: { otf2: filesStatus === 'ready', cubex: true, metrics: false },
    tools: { vampir: false, cube: true },
    trace:
      filesStatus === 'ready'
        ? {
            range: [0, 1000],
            origin_epoch_ns: '0',
            events: 1234,
            locations: [{ id: 0, name: 'Master thread', max_depth: 1 }]
          }
        : null
  };
}

function fakeApi(answers: (() => Promise<IExperiment>)[]): ScorepAPI {
  const api = new ScorepAPI({ baseUrl: 'http://localhost/' } as any);
  let call = 0;
  api.experiment = () => answers[Math.min(call++, answers.length - 1)]();
  api.summary = async () => ({
    wall_s: 1.5,
    events: 1234,
    status: 'ok',
    top_regions: [],
    verdicts: [{ kind: 'cpu', level: 'warning', text: 'One core saturated.' }]
  });
  api.version = async () => ({
    version: '0.1.0',
    scorep: { available: false, scorep_config: null, bindings: false },
    tools: { vampir: null, cube: '/usr/bin/cube' }
  });
  api.calltree = async (_path: string, location?: number | null) => ({
    source: 'cubex',
    location: location ?? null,
    total_s: 1,
    locations: [
      { id: 0, name: 'Master thread' },
      { id: 1, name: 'Thread 2' }
    ],
    root: {
      id: 0,
      name: 'cell',
      incl_s: 1,
      excl_s: 1,
      visits: 1,
      min_s: 1,
      max_s: 1,
      children: []
    }
  });
  api.timeline = () => new Promise(() => undefined);
  return api;
}

describe('ExperimentPanel', () => {
  afterEach(() => jest.useRealTimers());

  it('shows the server message when the experiment cannot be read', async () => {
    const api = fakeApi([
      () =>
        Promise.reject(
          new ApiError(
            'Not an experiment: /x has no manifest.json. Rerun the profiled cell.',
            404
          )
        )
    ]);
    const panel = new ExperimentPanel(bundle, api);
    await panel.load();
    expect(panel.node.dataset.state).toBe('error');
    const message = panel.node.querySelector('.jp-scorep-message')!;
    expect(message.textContent).toContain('has no manifest.json');
    expect(message.getAttribute('role')).toBe('alert');
  });

  it('shows progress while the files are pending, then the panel', async () => {
    jest.useFakeTimers();
    const api = fakeApi([
      async () => experiment('pending', { otf2: 'traces.otf2' }),
      async () => experiment('ready')
    ]);
    const panel = new ExperimentPanel(bundle, api);
    const flush = async () => {
      for (let i = 0; i < 20; i++) {
        await Promise.resolve();
      }
    };
    Widget.attach(panel, document.body); // attaching starts loading
    await flush();
    expect(panel.node.dataset.state).toBe('processing');
    const text = panel.node.querySelector('.jp-scorep-message')!.textContent!;
    expect(text).toMatch(/^processing… .*1 of 3 files ready/);
    jest.advanceTimersByTime(1000);
    await flush();
    expect(panel.node.dataset.state).toBe('ready');
    expect(
      panel.node.querySelector('.jp-scorep-verdict')!.textContent
    ).toContain('One core saturated.');
    const facts = panel.node.querySelector('.jp-scorep-facts')!.textContent!;
    expect(facts).toContain('builtin tracer');
    expect(facts).toContain('1.5 s');
    expect(facts).toContain('1,234');
    // export: cube found by the server → its button is enabled, vampir's is not
    const buttons = Array.from(
      panel.node.querySelectorAll<HTMLButtonElement>('.jp-scorep-export button')
    );
    expect(buttons.map(b => [b.textContent, b.disabled])).toEqual([
      ['Open in Vampir', true],
      ['Open in Cube', false]
    ]);
    const links = Array.from(
      panel.node.querySelectorAll<HTMLAnchorElement>('a.jp-scorep-download')
    ).map(a => a.href);
    expect(links[0]).toContain('/scorep/api/download?path=');
    expect(links[0]).toContain('what=otf2');

    // per-location call trees: choosing a thread asks the server for that location
    const calls: (number | null | undefined)[] = [];
    const original = api.calltree.bind(api);
    api.calltree = (path: string, location?: number | null) => {
      calls.push(location);
      return original(path, location);
    };
    const select = panel.node.querySelector<HTMLSelectElement>(
      '.jp-scorep-calltree-location'
    )!;
    expect(Array.from(select.options).map(o => o.text)).toEqual([
      'All locations',
      'Master thread',
      'Thread 2'
    ]);
    select.value = '1';
    select.dispatchEvent(new Event('change'));
    await flush();
    expect(calls).toEqual([1]);
    expect(
      panel.node.querySelector<HTMLSelectElement>(
        '.jp-scorep-calltree-location'
      )!.value
    ).toBe('1');
    panel.dispose();
  });
});
