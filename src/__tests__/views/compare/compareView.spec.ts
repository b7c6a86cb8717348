import { Widget } from '@lumino/widgets';
import type { IExperiment } from '../../../api/experimentTypes';
import type { IComparison } from '../../../api/analysisTypes';
import { ScorepAPI } from '../../../api/apiClient';
import { CompareView } from '../../../views/compare/compareView';
import { RunPicker } from '../../../views/compare/runPicker';
import { TimelineView } from '../../../views/timeline/timelineView';

// jsdom has no ResizeObserver; the timelines only need it to exist
(globalThis as any).ResizeObserver = class {
  observe(): void {
    /* no layout in jsdom */
  }
  disconnect(): void {
    /* nothing observed */
  }
};

const flush = async () => {
  for (let i = 0; i < 20; i++) {
    await Promise.resolve();
  }
};

function run(path: string, span: [number, number], end: number) {
  return {
    path,
    id: path,
    backend: 'builtin' as const,
    status: 'ok' as const,
    cells: [],
    source: 'trace' as const,
    range: [0, end] as [number, number],
    cell_span: span,
    metrics: false
  };
}

const comparison: IComparison = {
  // A: the cell from 0 to 500 ms; B (Score-P): 600 ms of start-up, the cell 600-1100 ms
  a: run('/e/a', [0, 500e6], 520e6),
  b: run('/e/b', [600e6, 1100e6], 1300e6),
  same_source: true,
  total: { a_s: 0.5, b_s: 0.5, delta_s: 0, delta_pct: 0 },
  outside: { a_s: 0, b_s: 0.7 },
  verdict: {
    kind: 'within_noise',
    sentence: 'Within run-to-run noise of the previous run (+0.0 %).',
    a_s: 0.5,
    b_s: 0.5,
    delta_s: 0,
    delta_pct: 0,
    threshold_s: 0.05,
    function: null,
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

function experiment(path: string, end: number): IExperiment {
  return {
    path,
    manifest: { format_version: 1, id: path, backend: 'builtin', status: 'ok' },
    available: { otf2: true, cubex: false, metrics: false },
    tools: { vampir: false, cube: false },
    trace: {
      range: [0, end],
      origin_epoch_ns: '0',
      events: 10,
      locations: [{ id: 0, name: 'Master thread', max_depth: 2 }]
    }
  };
}

describe('CompareView timelines', () => {
  it('zooming or panning one timeline moves the other on the shared axis', async () => {
    const api = new ScorepAPI({ baseUrl: 'http://localhost/' } as any);
    api.experiment = async (path: string) =>
      experiment(path, path === '/e/a' ? 520e6 : 1300e6);
    api.timeline = () => new Promise(() => undefined);
    const view = new CompareView(api, '/e/b');
    Widget.attach(view, document.body);
    await view.compareWith('/e/a', comparison);
    await flush();
    const timelines = Array.from(
      view.node.querySelectorAll<HTMLElement>('.jp-scorep-timeline')
    );
    expect(timelines.map(t => t.dataset.run)).toEqual(['A', 'B']);
    const [ta, tb] = timelines.map(node =>
      (view as any).timelines.find((t: TimelineView) => t.node === node)
    ) as TimelineView[];
    // both start on their cells: A at 0, B at 600 ms
    expect(ta.view).toEqual({ t0: 0, t1: 500e6 });
    expect(tb.view).toEqual({ t0: 600e6, t1: 1100e6 });
    // A zoomed to 100-200 ms after its cell's start: B shows 100-200 ms after its own
    ta.setView({ t0: 100e6, t1: 200e6 });
    expect(tb.view).toEqual({ t0: 700e6, t1: 800e6 });
    // and B panned moves A back
    tb.setView({ t0: 650e6, t1: 750e6 });
    expect(ta.view).toEqual({ t0: 50e6, t1: 150e6 });
    view.dispose();
  });
});

describe('CompareView across backends', () => {
  it('warns when the two runs were measured by different backends', async () => {
    const api = new ScorepAPI({ baseUrl: 'http://localhost/' } as any);
    api.experiment = async (path: string) => experiment(path, 520e6);
    api.timeline = () => new Promise(() => undefined);
    const view = new CompareView(api, '/e/b');
    Widget.attach(view, document.body);
    const across: IComparison = {
      ...comparison,
      b: { ...comparison.b, backend: 'scorep', isolation: 'subprocess' }
    };
    await view.compareWith('/e/a', across);
    const warning = view.node.querySelector('.jp-scorep-compare-warning');
    expect(warning?.textContent).toBe(
      '⚠ A was measured with the builtin tracer, B with Score-P: their costs differ, ' +
        'so the difference is not only the code’s.'
    );
    // measured alike: no warning
    await view.compareWith('/e/a', comparison);
    expect(view.node.querySelector('.jp-scorep-compare-warning')).toBeNull();
    view.dispose();
  });
});

describe('RunPicker', () => {
  it('names the notebook of another notebook’s runs', () => {
    const api = new ScorepAPI({ baseUrl: 'http://localhost/' } as any);
    const picker = new RunPicker(api, '/e/b', () => undefined);
    const manifest = (id: string, notebook?: string) => ({
      format_version: 1,
      id,
      backend: 'builtin' as const,
      status: 'ok' as const,
      start_ns: 1.7e18,
      notebook
    });
    picker.setChoices(
      [{ path: '/e/a', manifest: manifest('a', 'work/nb.ipynb') }],
      [
        { path: '/e/c', manifest: manifest('c', 'work/other.ipynb') },
        { path: '/e/d', manifest: manifest('d', 'work/nb.ipynb') },
        { path: '/e/e', manifest: manifest('e') }
      ]
    );
    const labels = Array.from(
      picker.node.querySelectorAll<HTMLOptionElement>(
        'optgroup[label="Other experiments"] option'
      )
    ).map(o => o.textContent!.split(' · ')[0]);
    expect(labels).toEqual(['other.ipynb', 'this notebook', 'no notebook']);
    // the cell's own runs are not named by notebook
    const own = picker.node.querySelector(
      'optgroup[label="This cell\'s runs"] option'
    );
    expect(own?.textContent).not.toContain('nb.ipynb');
  });
});
