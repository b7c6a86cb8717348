import type {
  ICompareRun,
  IFunctionDelta,
  IPathDelta
} from '../../../api/analysisTypes';
import {
  diffRows,
  formatCountDelta,
  formatDelta,
  formatPct,
  mostChangedPath,
  sortByDelta
} from '../../../views/compare/deltas';
import { fromRun, sharedAxis, toRun } from '../../../views/compare/sharedAxis';

function fn(
  name: string,
  excl: [number, number],
  visits: [number, number],
  status: IFunctionDelta['status'] = 'both'
): IFunctionDelta {
  return {
    name,
    key: name,
    module: name.split(':')[0],
    status,
    excl_a: excl[0],
    excl_b: excl[1],
    excl_delta: excl[1] - excl[0],
    excl_pct: excl[0] ? (100 * (excl[1] - excl[0])) / excl[0] : null,
    incl_a: excl[0],
    incl_b: excl[1],
    incl_delta: excl[1] - excl[0],
    incl_pct: null,
    visits_a: visits[0],
    visits_b: visits[1],
    visits_delta: visits[1] - visits[0],
    visits_pct: null,
    time_changed: false,
    visits_changed: visits[0] !== visits[1]
  };
}

function node(
  name: string,
  incl: [number, number],
  children: IPathDelta[] = []
): IPathDelta {
  return {
    name,
    key: name,
    status: 'both',
    incl_a: incl[0],
    incl_b: incl[1],
    excl_a: 0,
    excl_b: 0,
    visits_a: 1,
    visits_b: 1,
    children
  };
}

function run(
  range: [number, number] | null,
  span: [number, number] | null
): ICompareRun {
  return {
    path: '/x',
    id: 'x',
    backend: 'builtin',
    status: 'ok',
    cells: [],
    source: 'trace',
    range,
    cell_span: span,
    metrics: false
  };
}

describe('compare model', () => {
  it('formats differences with their sign', () => {
    expect(formatDelta(0.12)).toBe('+120 ms');
    expect(formatDelta(-1.5)).toBe('−1.5 s');
    expect(formatDelta(0)).toBe('±0');
    expect(formatCountDelta(300)).toBe('+300');
    expect(formatCountDelta(-2)).toBe('−2');
    expect(formatCountDelta(0)).toBe('±0');
    expect(formatPct(31.04)).toBe('+31 %');
    expect(formatPct(-4.25)).toBe('−4.3 %');
    expect(formatPct(0.01)).toBe('±0 %');
    expect(formatPct(null, 'added')).toBe('new');
    expect(formatPct(null, 'removed')).toBe('gone');
  });

  it('sorts functions by |Δ| of the chosen column', () => {
    const rows = [
      fn('m:a', [1, 1.1], [5, 5]),
      fn('m:b', [1, 0.7], [5, 9]),
      fn('m:c', [0, 0.2], [0, 50], 'added')
    ];
    expect(sortByDelta(rows, 'excl').map(f => f.name)).toEqual([
      'm:b',
      'm:c',
      'm:a'
    ]);
    expect(sortByDelta(rows, 'visits').map(f => f.name)).toEqual([
      'm:c',
      'm:b',
      'm:a'
    ]);
  });

  it('lists the merged tree by |Δ| and opens the most changed path', () => {
    const tree = [
      node(
        'cell [2]',
        [1, 2],
        [
          node('m:small', [0.1, 0.15]),
          node('m:big', [0.5, 1.4], [node('m:leaf', [0.4, 1.3])])
        ]
      )
    ];
    expect(mostChangedPath(tree)).toEqual(['0', '0/1', '0/1/0']);
    const rows = diffRows(tree, new Set(['0', '0/1']));
    expect(rows.map(r => [r.key, r.node.name, r.depth])).toEqual([
      ['0', 'cell [2]', 0],
      ['0/1', 'm:big', 1],
      ['0/1/0', 'm:leaf', 2],
      ['0/0', 'm:small', 1]
    ]);
    expect(rows[1].delta).toBeCloseTo(0.9, 12);
    expect(rows[0].expanded && !rows[3].hasChildren).toBe(true);
  });

  it('puts two runs on one axis from their cells’ start', () => {
    // A: builtin, the cell from 0 to 500 ms; B: Score-P, 600 ms of start-up first
    const a = run([0, 520e6], [0, 500e6]);
    const b = run([0, 1300e6], [600e6, 1100e6]);
    const axis = sharedAxis(a, b);
    expect(axis.offsetA).toBe(0);
    expect(axis.offsetB).toBe(600e6);
    expect(axis.range).toEqual([-600e6, 700e6]);
    expect(axis.initial).toEqual({ t0: 0, t1: 500e6 });
    const view = { t0: 100e6, t1: 200e6 };
    expect(toRun(view, axis.offsetB)).toEqual({ t0: 700e6, t1: 800e6 });
    expect(fromRun(toRun(view, axis.offsetB), axis.offsetB)).toEqual(view);
    // without cells found, the runs align at their starts and show everything
    const plain = sharedAxis(run([0, 10], null), run([0, 30], null));
    expect(plain).toEqual({
      offsetA: 0,
      offsetB: 0,
      range: [0, 30],
      initial: { t0: 0, t1: 30 }
    });
  });
});
