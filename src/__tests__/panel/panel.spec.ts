import { Panel, Widget } from '@lumino/widgets';
import { IExperiment, IExperimentBundle } from '../../api/experimentTypes';
import { ApiError, ScorepAPI } from '../../api/apiClient';
import { ExperimentRenderer } from '../../mime';
import { ExperimentPanel } from '../../panel/panel';

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

  it('opens the trace in Vampir when the bundle asks, once its files are ready', async () => {
    const api = fakeApi([async () => experiment('ready')]);
    const asked: string[] = [];
    api.openOnce = async (_path, tool) => {
      asked.push(tool);
      return { pid: 7, already: false };
    };
    const flush = async () => {
      for (let i = 0; i < 20; i++) {
        await Promise.resolve();
      }
    };
    const panel = new ExperimentPanel({ ...bundle, open: ['vampir'] }, api);
    Widget.attach(panel, document.body); // attaching starts loading
    await flush();
    expect(asked).toEqual(['vampir']);
    expect(panel.node.querySelector('.jp-scorep-message')!.textContent).toBe(
      'Opened in Vampir (pid 7).'
    );
    const plain = new ExperimentPanel(bundle, api);
    Widget.attach(plain, document.body);
    await flush();
    expect(asked).toEqual(['vampir']); // a bundle that asks for nothing opens nothing
    panel.dispose();
    plain.dispose();
  });

  it('counts the seconds while a poll waits for the server', async () => {
    jest.useFakeTimers();
    let answer: (e: IExperiment) => void = () => undefined;
    const api = fakeApi([
      async () => experiment('pending', { otf2: 'traces.otf2' }),
      () => new Promise<IExperiment>(resolve => (answer = resolve))
    ]);
    const panel = new ExperimentPanel(bundle, api);
    const flush = async () => {
      for (let i = 0; i < 20; i++) {
        await Promise.resolve();
      }
    };
    Widget.attach(panel, document.body);
    await flush();
    const message = () =>
      panel.node.querySelector('.jp-scorep-message')!.textContent!;
    expect(message()).toMatch(/\(0 s\)$/);
    // the second poll's answer takes 3 s: the count goes on meanwhile
    for (let i = 0; i < 4; i++) {
      jest.advanceTimersByTime(1000);
      await flush();
    }
    expect(message()).toMatch(/\(4 s\)$/);
    answer(experiment('ready'));
    await flush();
    expect(panel.node.dataset.state).toBe('ready');
    // titled by the backend: a builtin run is not a "Score-P" run
    expect(panel.node.querySelector('.jp-scorep-title')!.textContent).toBe(
      'Builtin tracer'
    );
    panel.dispose();
    jest.useRealTimers();
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
    // opened on the thread that ran the cell, not summed over the threads
    expect(select.value).toBe('0');
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

  it('follows its panel when detached, re-attached and disposed with the notebook', async () => {
    const api = fakeApi([async () => experiment('ready')]);
    const panel = new ExperimentPanel(bundle, api);
    // the output area: a layout that holds the panel, in a notebook attached to the page
    const notebook = new Panel();
    notebook.addWidget(panel);
    Widget.attach(notebook, document.body);
    for (let i = 0; i < 20; i++) {
      await Promise.resolve();
    }
    expect(panel.node.dataset.state).toBe('ready');
    const timeline = panel.node.querySelector('.jp-scorep-timeline');
    expect(timeline).not.toBeNull();
    // scrolled out of the notebook's window and back: the views come and go with it
    Widget.detach(notebook);
    Widget.attach(notebook, document.body);
    // closing: the shell detaches the notebook first, then disposes it
    Widget.detach(notebook);
    expect(() => notebook.dispose()).not.toThrow();
    expect(panel.isDisposed).toBe(true);
  });
});

describe('ExperimentRenderer', () => {
  it('is removed and disposed on a re-run without "Widget is not attached."', async () => {
    const api = fakeApi([async () => experiment('ready')]);
    const renderer = new ExperimentRenderer(api);
    // the output area: a layout holding the renderer, attached to the page
    const outputArea = new Panel();
    outputArea.addWidget(renderer);
    Widget.attach(outputArea, document.body);
    await renderer.renderModel({
      data: { 'application/vnd.scorep.experiment+json': bundle as any }
    } as any);
    for (let i = 0; i < 20; i++) {
      await Promise.resolve();
    }
    const panel = renderer.node.querySelector('.jp-scorep-panel');
    expect(panel?.getAttribute('data-state')).toBe('ready');
    // a re-run clears the outputs: the layout removes the renderer, then disposes it
    const errors: unknown[] = [];
    const spy = jest
      .spyOn(console, 'error')
      .mockImplementation((...a) => void errors.push(a));
    renderer.parent = null;
    expect(() => renderer.dispose()).not.toThrow();
    spy.mockRestore();
    expect(errors).toEqual([]);
    outputArea.dispose();
  });
});

describe('ExperimentPanel history', () => {
  const flush = async () => {
    for (let i = 0; i < 40; i++) {
      await Promise.resolve();
    }
  };

  function manifestOf(id: string, startS: number, sha: string) {
    return {
      format_version: 1,
      id,
      backend: 'builtin' as const,
      isolation: 'inprocess' as const,
      status: 'ok' as const,
      files_status: 'ready' as const,
      start_ns: startS * 1e9,
      wall_s: 0.5,
      notebook: 'nb/analysis.ipynb',
      cells: [
        { cell_id: 'cell-1', execution_count: startS, source_sha256: sha }
      ]
    };
  }

  function historyApi(kind: 'slower' | 'within_noise') {
    const api = fakeApi([
      async () => ({
        ...experiment('ready'),
        manifest: manifestOf('exp-1', 300, 'b')
      })
    ]);
    const calls: string[] = [];
    api.summary = async () => ({
      wall_s: 1.5,
      events: 1234,
      status: 'ok',
      top_regions: [],
      verdicts: [],
      functions: [
        {
          name: '__main__:step',
          module: '__main__',
          excl_s: 0.42,
          incl_s: 0.42,
          visits: 900
        },
        {
          name: 'cell [3]',
          module: 'cell',
          excl_s: 0.05,
          incl_s: 0.52,
          visits: 1
        }
      ],
      functions_total: 2,
      outside_s: 0
    });
    api.runs = async (notebook, cell, dir) => {
      calls.push(`runs ${notebook} ${cell} ${dir}`);
      return {
        experiments: [
          {
            path: bundle.path,
            manifest: manifestOf('exp-1', 300, 'b'),
            disk_bytes: 2048
          },
          {
            path: '/nb/scorep-experiments/exp-0',
            manifest: manifestOf('exp-0', 200, 'a'),
            disk_bytes: 1024
          }
        ],
        notebook,
        cell,
        disk: { notebook_bytes: 3 * 1024 * 1024, notebook_runs: 5 }
      };
    };
    api.compare = async (a, b) => {
      calls.push(`compare ${a} ${b}`);
      return {
        a: {
          path: a,
          id: 'exp-0',
          backend: 'builtin',
          status: 'ok',
          cells: [],
          source: 'trace',
          range: null,
          cell_span: null,
          metrics: false
        },
        b: {
          path: b,
          id: 'exp-1',
          backend: 'builtin',
          status: 'ok',
          cells: [],
          source: 'trace',
          range: null,
          cell_span: null,
          metrics: false
        },
        same_source: false,
        total: { a_s: 0.4, b_s: 0.524, delta_s: 0.124, delta_pct: 31 },
        outside: { a_s: 0, b_s: 0 },
        verdict: {
          kind,
          sentence:
            kind === 'slower'
              ? '31 % slower than the previous run: `step` +120 ms, visits 600 → 900.'
              : 'Within run-to-run noise of the previous run (+1.0 %).',
          a_s: 0.4,
          b_s: 0.524,
          delta_s: 0.124,
          delta_pct: 31,
          threshold_s: 0.05,
          function: '__main__:step',
          noise: {
            rel: 0.1,
            floor_s: 0.002,
            function_floor_s: 0.001,
            basis: 'default',
            runs: 0
          }
        },
        functions: [],
        tree: []
      };
    };
    api.deleteExperiment = async (path, id) => {
      calls.push(`delete ${path} ${id}`);
      return { deleted: path, id, freed_bytes: 1024 };
    };
    return { api, calls };
  }

  it('says how this run compares with the previous one, beyond noise only', async () => {
    const { api, calls } = historyApi('slower');
    const panel = new ExperimentPanel(bundle, api);
    Widget.attach(panel, document.body);
    await flush();
    expect(calls.slice(0, 2)).toEqual([
      'runs nb/analysis.ipynb cell-1 /nb/scorep-experiments',
      'compare /nb/scorep-experiments/exp-0 /nb/scorep-experiments/exp-1'
    ]);
    const line = panel.node.querySelector<HTMLElement>(
      '.jp-scorep-run-verdict'
    )!;
    expect(line.hidden).toBe(false);
    expect(line.dataset.kind).toBe('slower');
    expect(line.textContent).toContain('31 % slower than the previous run');
    expect(
      panel.node.querySelector('.jp-scorep-runs-button')!.textContent
    ).toBe('Runs (2)');
    expect(panel.node.querySelector('.jp-scorep-runs-disk')!.textContent).toBe(
      "Notebook's runs: 3.00 MiB on disk (5)"
    );
    // the Summary tab comes first and is shown
    const tabs = Array.from(
      panel.node.querySelectorAll('.jp-scorep-tabs > .jp-scorep-tab')
    );
    expect(tabs.map(t => t.textContent)).toEqual([
      'Summary',
      'Timeline',
      'Call tree',
      'Compare',
      'Export'
    ]);
    expect(tabs[0].getAttribute('aria-selected')).toBe('true');
    const rows = panel.node.querySelectorAll('.jp-scorep-summary-row');
    expect(Array.from(rows).map(r => (r as HTMLElement).dataset.name)).toEqual([
      '__main__:step',
      'cell [3]'
    ]);
    panel.dispose();

    const quiet = historyApi('within_noise');
    const panel2 = new ExperimentPanel(bundle, quiet.api);
    Widget.attach(panel2, document.body);
    await flush();
    expect(quiet.calls).toHaveLength(2);
    expect(
      panel2.node.querySelector<HTMLElement>('.jp-scorep-run-verdict')!.hidden
    ).toBe(true);
    panel2.dispose();
  });

  it('deletes a run only when the user confirms it', async () => {
    const { api, calls } = historyApi('slower');
    const answers = [false, true];
    const asked: string[] = [];
    const panel = new ExperimentPanel(bundle, api, {
      confirm: async (_title, body) => {
        asked.push(body);
        return answers.shift()!;
      }
    });
    Widget.attach(panel, document.body);
    await flush();
    const row = panel.node.querySelector(
      '.jp-scorep-runs-table tr[data-id="exp-0"]'
    )!;
    const del = Array.from(row.querySelectorAll('button')).find(
      b => b.textContent === 'Delete…'
    )!;
    // the run shown cannot be deleted from its own panel
    const own = panel.node.querySelector(
      '.jp-scorep-runs-table tr[data-id="exp-1"]'
    )!;
    expect(
      Array.from(own.querySelectorAll('button')).every(
        b => (b as HTMLButtonElement).disabled
      )
    ).toBe(true);
    del.click();
    await flush();
    expect(asked[0]).toContain('/nb/scorep-experiments/exp-0 (1.00 KiB)');
    expect(calls.filter(c => c.startsWith('delete'))).toEqual([]);
    del.click();
    await flush();
    expect(calls.filter(c => c.startsWith('delete'))).toEqual([
      'delete /nb/scorep-experiments/exp-0 exp-0'
    ]);
    expect(
      panel.node.querySelector('.jp-scorep-message')!.textContent
    ).toContain('Deleted the run of');
    panel.dispose();
  });
});
