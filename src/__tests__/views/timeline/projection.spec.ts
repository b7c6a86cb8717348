import type { ITimeline } from '../../../api/traceTypes';
import {
  clampView,
  hitTest,
  layoutLanes,
  panBy,
  toDrawList,
  windowCovers,
  zoomAround
} from '../../../views/timeline/projection';

const data: ITimeline = {
  window: [0, 1000],
  width: 100,
  range: [0, 1000],
  regions: {
    '1': { name: '__main__:g', group: '__main__', file: '<cell>', line: 3 },
    '2': { name: '__main__:f', group: '__main__', file: '<cell>', line: 1 }
  },
  locations: [
    {
      id: 0,
      name: 'Master thread',
      max_depth: 1,
      rows: [
        { depth: 0, start: [100], end: [900], region: [1], count: [1] },
        {
          depth: 1,
          start: [100, 400, 700, 950],
          end: [300, 600, 900, 960],
          region: [2, 2, 2, 2],
          count: [1, 1, 1, 1]
        }
      ]
    },
    {
      id: 1,
      name: 'Thread 2',
      max_depth: 0,
      rows: [{ depth: 0, start: [0], end: [10], region: [2], count: [40] }]
    }
  ]
};

describe('layoutLanes', () => {
  it('stacks one lane per location with one row per depth', () => {
    const layout = layoutLanes(data.locations, 20, 10);
    expect(layout.lanes.map(l => [l.y, l.rows])).toEqual([
      [10, 2],
      [60, 1]
    ]);
    expect(layout.height).toBe(80);
  });
});

describe('toDrawList', () => {
  const layout = layoutLanes(data.locations, 20, 10);
  it('maps times to pixels for the view', () => {
    const list = toDrawList(data, layout, { t0: 0, t1: 1000 }, 100);
    expect(list.n).toBe(6);
    // g spans 100..900 ns → 10..90 px on row 0 of lane 0
    expect(list.x[0]).toBeCloseTo(10);
    expect(list.w[0]).toBeCloseTo(80);
    expect(list.y[0]).toBe(10);
    // the f calls on row 1
    expect(Array.from(list.x.slice(1, 4))).toEqual([10, 40, 70]);
    expect(list.y[1]).toBe(30);
    // merged span keeps its count
    expect(list.count[5]).toBe(40);
    expect(list.y[5]).toBe(60);
  });
  it('drops spans outside a zoomed view and clips the rest', () => {
    const list = toDrawList(data, layout, { t0: 350, t1: 650 }, 300);
    const names = Array.from(list.region.slice(0, list.n));
    expect(names).toEqual([1, 2]);
    expect(list.x[0]).toBe(-1); // g clipped on the left
    expect(list.x[1]).toBeCloseTo(50);
    expect(list.w[1]).toBeCloseTo(200);
  });
  it('gives sub-pixel calls a minimum width and merges same-pixel neighbours', () => {
    const dense: ITimeline = {
      ...data,
      locations: [
        {
          id: 0,
          name: 'Master thread',
          max_depth: 0,
          rows: [
            {
              depth: 0,
              start: [0, 2, 4, 500],
              end: [1, 3, 5, 501],
              region: [2, 2, 2, 2],
              count: [1, 1, 1, 1]
            }
          ]
        }
      ]
    };
    const list = toDrawList(
      dense,
      layoutLanes(dense.locations),
      { t0: 0, t1: 1000 },
      100
    );
    expect(list.n).toBe(2);
    expect(list.count[0]).toBe(3);
    expect(list.w[0]).toBeGreaterThanOrEqual(1);
  });
  it('finds the rectangle under the pointer', () => {
    const list = toDrawList(data, layout, { t0: 0, t1: 1000 }, 100);
    const k = hitTest(list, 20, 45, 35);
    expect(k).toBe(2);
    expect(list.start[k]).toBe(400);
    expect(hitTest(list, 20, 95, 35)).toBe(4);
    expect(hitTest(list, 20, 5, 15)).toBe(-1);
  });
});

describe('view arithmetic', () => {
  it('zooms around the cursor keeping the time under it fixed', () => {
    const v = zoomAround({ t0: 0, t1: 1000 }, 100, 25, 0.5);
    expect(v).toEqual({ t0: 125, t1: 625 });
  });
  it('pans by pixels', () => {
    expect(panBy({ t0: 100, t1: 200 }, 100, 50)).toEqual({ t0: 50, t1: 150 });
  });
  it('clamps to the trace range keeping the span', () => {
    expect(clampView({ t0: -50, t1: 50 }, [0, 1000], 10)).toEqual({
      t0: 0,
      t1: 100
    });
    expect(clampView({ t0: 10, t1: 11 }, [0, 1000], 10)).toEqual({
      t0: 10,
      t1: 20
    });
    expect(clampView({ t0: 950, t1: 1050 }, [0, 1000], 10)).toEqual({
      t0: 900,
      t1: 1000
    });
    expect(clampView({ t0: -5000, t1: 5000 }, [0, 1000])).toEqual({
      t0: 0,
      t1: 1000
    });
  });
  it('knows when a fetched window is too coarse or too small for the view', () => {
    const fetched = { window: [0, 1000] as [number, number], width: 100 };
    expect(windowCovers(fetched, { t0: 0, t1: 1000 }, 100)).toBe(true);
    expect(windowCovers(fetched, { t0: 0, t1: 100 }, 100)).toBe(false);
    expect(windowCovers(fetched, { t0: 500, t1: 1500 }, 100)).toBe(false);
    expect(windowCovers(null, { t0: 0, t1: 1 }, 1)).toBe(false);
  });
});
