import { Widget } from '@lumino/widgets';
import type { ITimeline } from '../../../api/traceTypes';
import type { IRanks } from '../../../api/analysisTypes';
import { ScorepAPI } from '../../../api/apiClient';
import {
  barParts,
  flowText,
  headline,
  rowCells,
  shade,
  topFlows
} from '../../../views/ranks/balanceAndTraffic';
import { RanksView } from '../../../views/ranks/ranksView';
import { hitTest, toDrawList } from '../../../views/timeline/projection';
import {
  layoutTimeline,
  processes,
  rankOf
} from '../../../views/timeline/rankLanes';

const TWO: IRanks = {
  ranks: [
    {
      rank: 0,
      name: 'MPI Rank 0',
      locations: [0],
      cell_s: 0.01,
      mpi_s: 0.003,
      compute_s: 0.007,
      bytes_sent: 800,
      messages_sent: 1,
      collective_calls: 1,
      collective_bytes_sent: 8,
      collective_bytes_received: 8
    },
    {
      rank: 1,
      name: 'MPI Rank 1',
      locations: [1],
      cell_s: 0.01,
      mpi_s: 0.008,
      compute_s: 0.002,
      bytes_sent: 0,
      messages_sent: 0,
      collective_calls: 1,
      collective_bytes_sent: 8,
      collective_bytes_received: 8
    }
  ],
  load_balance: 0.643,
  imbalance_pct: 35.7,
  slowest_rank: 0,
  communication_share: 0.55,
  matrix: {
    bytes: [
      [0, 800],
      [0, 0]
    ],
    messages: [
      [0, 1],
      [0, 0]
    ]
  },
  received: [
    { bytes: 0, messages: 0 },
    { bytes: 800, messages: 1 }
  ],
  unmatched: 0,
  mpi: { ranks: 2 }
};

describe('the Ranks tab, as words and numbers', () => {
  it('says the imbalance, the slowest rank and the communication share', () => {
    expect(headline(TWO)).toBe(
      '2 ranks · 36 % imbalance (rank 0 computes longest) · 55 % of the time in MPI · 800 B sent point to point'
    );
  });

  it('splits a rank bar into compute and MPI against the longest rank', () => {
    expect(barParts(TWO.ranks[1], 0.02)).toEqual({ compute: 0.1, mpi: 0.4 });
    expect(barParts(TWO.ranks[1], 0)).toEqual({ compute: 0, mpi: 0 });
    expect(rowCells(TWO.ranks[1])).toEqual([
      '1',
      '10 ms',
      '2 ms',
      '8 ms',
      '80 %',
      '0 B',
      '0'
    ]);
  });

  it('shades the matrix on a log scale and lists the largest flows', () => {
    expect(shade(0, 800)).toBe(0);
    expect(shade(800, 800)).toBe(1);
    expect(shade(10, 1000)).toBeCloseTo(Math.log1p(10) / Math.log1p(1000));
    const m = [
      [0, 5, 1],
      [9, 0, 0],
      [5, 0, 0]
    ];
    expect(topFlows(m, 3)).toEqual([
      { from: 1, to: 0, value: 9 },
      { from: 0, to: 1, value: 5 },
      { from: 2, to: 0, value: 5 }
    ]);
    expect(flowText(TWO, 0, 1)).toBe('rank 0 → rank 1: 800 B in 1 message');
  });

  it('renders the table and the matrix from GET ranks', async () => {
    const api = new ScorepAPI();
    api.ranks = () => Promise.resolve(TWO);
    const view = new RanksView(api, '/exp');
    await view.load();
    const rows = view.node.querySelectorAll('.jp-scorep-ranks-table tbody tr');
    expect(rows.length).toBe(2);
    expect(rows[0].classList.contains('jp-scorep-ranks-slowest')).toBe(true);
    const cells = view.node.querySelectorAll('.jp-scorep-matrix tbody td');
    expect([...cells].map(c => c.textContent)).toEqual(['', '800 B', '', '']);
    expect((cells[1] as HTMLElement).title).toBe(
      'rank 0 → rank 1: 800 B in 1 message'
    );
    // messages instead of bytes
    const toggle = [...view.node.querySelectorAll('button')].find(
      b => b.textContent === 'Messages'
    )!;
    toggle.click();
    const again = view.node.querySelectorAll('.jp-scorep-matrix tbody td');
    expect([...again].map(c => c.textContent)).toEqual(['', '1', '', '']);
  });

  it('shows why when GET ranks fails', async () => {
    const api = new ScorepAPI();
    api.ranks = () =>
      Promise.reject(new Error('the trace is still being written'));
    const view = new RanksView(api, '/exp');
    await view.load();
    expect(view.node.textContent).toBe(
      'Ranks: the trace is still being written'
    );
  });
});

const loc = (id: number, group: string, name = 'Master thread', depth = 3) => ({
  id,
  name,
  group,
  kind: 'thread',
  max_depth: depth
});

describe('the timeline of several ranks', () => {
  it('reads ranks from Score-P style group names', () => {
    expect(rankOf('MPI Rank 12')).toBe(12);
    expect(rankOf('Process')).toBeNull();
    const procs = processes([
      loc(0, 'MPI Rank 1'),
      loc(1, 'MPI Rank 0'),
      loc(2, 'MPI Rank 1', 'Thread 1')
    ]);
    expect(procs.map(p => [p.group, p.locations.map(l => l.id)])).toEqual([
      ['MPI Rank 0', [1]],
      ['MPI Rank 1', [0, 2]]
    ]);
  });

  it('keeps one lane per location for one process', () => {
    const layout = layoutTimeline([
      loc(0, 'Process'),
      loc(1, 'Process', 'Thread 1')
    ]);
    expect(layout.lanes.map(l => l.name)).toEqual([
      'Master thread',
      'Thread 1'
    ]);
    expect(layout.collapsed).toBe(false);
  });

  it('groups lanes by rank, in rank order', () => {
    const layout = layoutTimeline([
      loc(0, 'MPI Rank 1'),
      loc(1, 'MPI Rank 0'),
      loc(2, 'MPI Rank 0', 'Thread 1', 0)
    ]);
    expect(layout.lanes.map(l => [l.id, l.name, l.rows])).toEqual([
      [1, 'Rank 0 · Master thread', 4],
      [2, 'Rank 0 · Thread 1', 1],
      [0, 'Rank 1 · Master thread', 4]
    ]);
  });

  it('collapses many ranks to one row each, deeper calls drawn on top', () => {
    const locations = Array.from({ length: 10 }, (_, r) =>
      loc(r, `MPI Rank ${r}`)
    );
    const layout = layoutTimeline(locations);
    expect(layout.collapsed).toBe(true);
    expect(layout.lanes.map(l => l.name)).toEqual(
      Array.from({ length: 10 }, (_, r) => `Rank ${r}`)
    );
    expect(layout.lanes.every(l => l.rows === 1 && l.flatten)).toBe(true);
    expect(layoutTimeline(locations, { expand: true }).collapsed).toBe(false);
    // rank 0's cell (depth 0) and a call at depth 2: both in the one row, the call on top
    const data: ITimeline = {
      window: [0, 100],
      width: 100,
      range: [0, 100],
      regions: {
        '1': { name: 'cell [1]', group: 'cell', file: '', line: 0 },
        '2': {
          name: 'mpi4py.MPI.Comm:Barrier',
          group: 'MPI',
          file: '',
          line: 0
        }
      },
      locations: [
        {
          id: 0,
          name: 'Master thread',
          max_depth: 2,
          rows: [
            { depth: 2, start: [40], end: [60], region: [2], count: [1] },
            { depth: 0, start: [0], end: [100], region: [1], count: [1] }
          ]
        }
      ]
    };
    const list = toDrawList(data, layout, { t0: 0, t1: 100 }, 100);
    expect(list.n).toBe(2);
    expect([...list.y.slice(0, 2)]).toEqual([
      layout.lanes[0].y,
      layout.lanes[0].y
    ]);
    expect(
      list.region[hitTest(list, layout.rowHeight, 50, layout.lanes[0].y + 1)]
    ).toBe(2);
    expect(
      list.region[hitTest(list, layout.rowHeight, 10, layout.lanes[0].y + 1)]
    ).toBe(1);
  });
});

describe("an MPI cell's panel", () => {
  it('has a Ranks tab that loads GET ranks when shown', async () => {
    const { ExperimentPanel } = await import('../../../panel/panel');
    const api = new ScorepAPI();
    const asked: string[] = [];
    api.ranks = (path: string) => {
      asked.push(path);
      return Promise.resolve(TWO);
    };
    const bundle = {
      id: 'x',
      path: '/exp/x',
      backend: 'builtin' as const,
      status: 'ok' as const,
      mpi: { ranks: 2, hosts: ['a'] }
    };
    // everything else the panel asks stays pending
    for (const name of Object.getOwnPropertyNames(ScorepAPI.prototype)) {
      if (name !== 'constructor' && name !== 'ranks' && name !== 'url') {
        (api as unknown as Record<string, unknown>)[name] = () =>
          new Promise(() => undefined);
      }
    }
    const panel = new ExperimentPanel(bundle, api);
    Widget.attach(panel, document.body);
    const tab =
      panel.node.querySelector<HTMLButtonElement>('[data-tab="ranks"]')!;
    expect(tab.textContent).toBe('Ranks');
    tab.click();
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(asked).toEqual(['/exp/x']);
    expect(
      panel.node.querySelector('.jp-scorep-ranks-headline')?.textContent
    ).toContain('2 ranks');
    // a single-process run has no Ranks tab
    const plain = new ExperimentPanel({ ...bundle, mpi: undefined }, api);
    expect(plain.node.querySelector('[data-tab="ranks"]')).toBeNull();
    panel.dispose();
  });
});
