import { Widget } from '@lumino/widgets';
import { IExperiment } from '../../api/experimentTypes';
import { ApiError } from '../../api/apiClient';
import { ExperimentPanel } from '../../panel/panel';
import { bundle, experiment, fakeApi } from './panelFakes';

// loading: what the panel says before, while and after the server reads the experiment
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
});
