/**
 * The fakes the panel's specs share: a profiled cell's bundle, its experiment (pending or
 * ready) and a ScorepAPI whose answers are canned. Importing this module also gives jsdom
 * the ResizeObserver the timeline needs.
 */
import { IExperiment, IExperimentBundle } from '../../api/experimentTypes';
import { ScorepAPI } from '../../api/apiClient';
// jsdom has no ResizeObserver; the timeline only needs it to exist
(globalThis as any).ResizeObserver = class {
  observe(): void {
    /* no layout in jsdom */
  }
  disconnect(): void {
    /* nothing observed */
  }
};

export const bundle: IExperimentBundle = {
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

export function experiment(
  filesStatus: 'pending' | 'ready',
  files = {}
): IExperiment {
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

export function fakeApi(answers: (() => Promise<IExperiment>)[]): ScorepAPI {
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
