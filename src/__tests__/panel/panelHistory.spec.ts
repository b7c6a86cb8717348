import { Widget } from '@lumino/widgets';
import { ExperimentPanel } from '../../panel/panel';
import { bundle, experiment, fakeApi } from './panelFakes';

// the cell's other runs in the header: the verdict against the previous run, deleting one
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
