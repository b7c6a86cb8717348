import {
  rangeText,
  regionIdsMatching,
  summariseRange
} from '../../../views/timeline/rangeSummary';
import type { IDrawList } from '../../../views/timeline/projection';

const regions = {
  '0': { name: 'cell [1]', group: 'cell' },
  '1': { name: '__main__:grow', group: '__main__' },
  '2': { name: '__main__:<listcomp>', group: '__main__' },
  '3': { name: '__main__:squares', group: '__main__' }
};

/** A draw list of spans [region, start ns, end ns, calls merged]. */
function list(spans: [number, number, number, number][]): IDrawList {
  const n = spans.length;
  const f = (i: number) => Float64Array.from(spans.map(s => s[i]));
  return {
    n,
    x: new Float64Array(n),
    y: new Float64Array(n),
    w: new Float64Array(n),
    region: Int32Array.from(spans.map(s => s[0])),
    count: Int32Array.from(spans.map(s => s[3])),
    start: f(1),
    end: f(2)
  };
}

describe('the timeline search', () => {
  it('matches region names by substring, ignoring case', () => {
    expect([...regionIdsMatching(regions, 'LISTcomp')]).toEqual([2]);
    expect([...regionIdsMatching(regions, '__main__')].sort()).toEqual([
      1, 2, 3
    ]);
    expect(regionIdsMatching(regions, '  ').size).toBe(0);
  });
});

describe('a selected range summarised', () => {
  const spans = list([
    [0, 0, 1000e6, 1], // the cell over the whole run
    [1, 10e6, 800e6, 1], // grow
    [3, 800e6, 900e6, 1], // squares
    [2, 810e6, 890e6, 40] // 40 list comprehensions merged into one span
  ]);
  it('lists the functions in the range by their time inside it', () => {
    const e = summariseRange(spans, regions, 700e6, 850e6);
    expect(e.map(x => [x.name, x.ns, x.calls])).toEqual([
      ['cell [1]', 150e6, 1],
      ['__main__:grow', 100e6, 1],
      ['__main__:squares', 50e6, 1],
      ['__main__:<listcomp>', 40e6, 40]
    ]);
    expect(rangeText(e, 700e6, 850e6, 2)).toBe(
      'Measured 150 ms (700 ms – 850 ms): cell [1] 150 ms (1×) · __main__:grow 100 ms (1×) · +2 more'
    );
  });
  it('says so when no call is in the range', () => {
    const e = summariseRange(list([[1, 0, 10, 1]]), regions, 20, 30);
    expect(e).toEqual([]);
    expect(rangeText(e, 20, 30)).toMatch(/: no calls in it\.$/);
  });
});
