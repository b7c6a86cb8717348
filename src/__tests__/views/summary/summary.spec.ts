import type { IFunctionStat } from '../../../api/analysisTypes';
import {
  barFraction,
  groupByModule,
  hasSplit,
  meanTime,
  ranked,
  sameRegion,
  waitedShare
} from '../../../views/summary/functions';

const F: IFunctionStat[] = [
  {
    name: '__main__:work',
    module: '__main__',
    excl_s: 0.1,
    incl_s: 0.4,
    visits: 1
  },
  {
    name: '__main__:step',
    module: '__main__',
    excl_s: 0.3,
    incl_s: 0.3,
    visits: 600
  },
  { name: 'numpy:dot', module: 'numpy', excl_s: 0.35, incl_s: 0.35, visits: 7 },
  { name: 'cell [3]', module: 'cell', excl_s: 0.05, incl_s: 0.8, visits: 1 }
];

describe('function summary', () => {
  it('ranks by exclusive or inclusive time', () => {
    expect(ranked(F, 'excl').map(f => f.name)).toEqual([
      'numpy:dot',
      '__main__:step',
      '__main__:work',
      'cell [3]'
    ]);
    expect(ranked(F, 'incl').map(f => f.name)[0]).toBe('cell [3]');
  });

  it('groups by module: exclusive times add up, inclusive ones nest', () => {
    const excl = groupByModule(F, 'excl');
    expect(excl.map(g => [g.module, g.total])).toEqual([
      ['__main__', 0.4],
      ['numpy', 0.35],
      ['cell', 0.05]
    ]);
    expect(excl[0].functions.map(f => f.name)).toEqual([
      '__main__:step',
      '__main__:work'
    ]);
    const incl = groupByModule(F, 'incl');
    expect(incl.map(g => [g.module, g.total])).toEqual([
      ['cell', 0.8],
      ['__main__', 0.4],
      ['numpy', 0.35]
    ]);
  });

  it('means, bars and region names', () => {
    expect(meanTime(F[1], 'excl')).toBeCloseTo(0.0005, 12);
    expect(meanTime({ ...F[1], visits: 0 }, 'incl')).toBe(0);
    expect(barFraction(0.3, 0.6)).toBe(0.5);
    expect(barFraction(1, 0)).toBe(0);
    expect(barFraction(2, 1)).toBe(1);
    expect(sameRegion(':cell [4]', 'cell [4]')).toBe(true);
    expect(sameRegion('cell [4]', 'cell [5]')).toBe(false);
    expect(sameRegion('m:f', 'm:f')).toBe(true);
    expect(sameRegion(':f', 'f')).toBe(false);
  });
});

describe('what the user can speed up', () => {
  // the heartbeat cell: a thread that only sleeps has the most own time
  const H: IFunctionStat[] = [
    {
      name: '__main__:heartbeat',
      module: '__main__',
      excl_s: 0.9,
      incl_s: 0.9,
      visits: 1,
      cpu_s: 0.01,
      queue_s: 0.04,
      wait_s: 0.85,
      effective_s: 0.01
    },
    {
      name: '__main__:score',
      module: '__main__',
      excl_s: 0.6,
      incl_s: 0.6,
      visits: 1,
      cpu_s: 0.5,
      queue_s: 0.1,
      wait_s: 0,
      effective_s: 0.5
    }
  ];

  it('ranks by the running time, not the waiting', () => {
    expect(hasSplit(H)).toBe(true);
    expect(hasSplit(F)).toBe(false);
    expect(ranked(H, 'effective').map(f => f.name)).toEqual([
      '__main__:score',
      '__main__:heartbeat'
    ]);
    expect(ranked(H, 'excl')[0].name).toBe('__main__:heartbeat');
    // without the split it falls back to the exclusive time
    expect(ranked(F, 'effective').map(f => f.name)).toEqual(
      ranked(F, 'excl').map(f => f.name)
    );
    expect(groupByModule(H, 'effective')[0].total).toBeCloseTo(0.51, 12);
  });

  it('says what waited', () => {
    expect(waitedShare(H[0])).toBeCloseTo(0.85 / 0.9, 12);
    expect(waitedShare(H[1])).toBe(0);
    expect(waitedShare(F[0])).toBe(0);
  });
});
