import { IExperiment, IExperimentBundle } from '../../api/experimentTypes';
import { ApiError, ScorepAPI } from '../../api/apiClient';
import { openRequested } from '../../panel/openTools';

const bundle: IExperimentBundle = {
  id: 'exp-1',
  path: '/nb/scorep-experiments/exp-1',
  backend: 'scorep',
  status: 'ok',
  open: ['vampir']
};

function experiment(otf2: boolean): IExperiment {
  return {
    path: bundle.path,
    manifest: {
      format_version: 1,
      id: 'exp-1',
      backend: 'scorep',
      isolation: 'subprocess',
      status: 'ok',
      files_status: 'ready',
      files: {}
    },
    available: { otf2, cubex: true, metrics: false },
    tools: { vampir: true, cube: false },
    trace: null
  };
}

function api(answer: () => Promise<{ pid: number | null; already: boolean }>) {
  const client = new ScorepAPI({ baseUrl: 'http://localhost/' } as any);
  const calls: [string, string][] = [];
  client.openOnce = (path, tool) => {
    calls.push([path, tool]);
    return answer();
  };
  return { client, calls };
}

describe('openRequested', () => {
  it('asks the server once per tool and says that it opened', async () => {
    const { client, calls } = api(async () => ({ pid: 42, already: false }));
    const said: [string, boolean][] = [];
    await openRequested(client, bundle, experiment(true), (t, e) =>
      said.push([t, e])
    );
    expect(calls).toEqual([[bundle.path, 'vampir']]);
    expect(said).toEqual([['Opened in Vampir (pid 42).', false]]);
  });

  it('says nothing when the server opened it before (a reopened notebook)', async () => {
    const { client } = api(async () => ({ pid: null, already: true }));
    const said: string[] = [];
    await openRequested(client, bundle, experiment(true), t => said.push(t));
    expect(said).toEqual([]);
  });

  it('shows the server’s advice when Vampir is not found, and a run without a trace', async () => {
    const { client, calls } = api(() =>
      Promise.reject(new ApiError('vampir is not on the server’s PATH.', 404))
    );
    const said: [string, boolean][] = [];
    await openRequested(client, bundle, experiment(true), (t, e) =>
      said.push([t, e])
    );
    expect(said).toEqual([['vampir is not on the server’s PATH.', true]]);
    said.length = 0;
    await openRequested(client, bundle, experiment(false), (t, e) =>
      said.push([t, e])
    );
    expect(calls.length).toBe(1);
    expect(said[0][0]).toMatch(/no trace to open/);
  });

  it('does nothing for a bundle that asks for nothing', async () => {
    const { client, calls } = api(async () => ({ pid: 1, already: false }));
    await openRequested(
      client,
      { ...bundle, open: undefined },
      experiment(true),
      () => {
        throw new Error('nothing to say');
      }
    );
    expect(calls).toEqual([]);
  });
});
