import {
  inViewText,
  keepCentre,
  lanesInView,
  maxVerticalZoom,
  rankRows,
  RankRows,
  ranksToAsk,
  scrolledLayout
} from '../../../views/timeline/rankRows';
import { layoutTimeline } from '../../../views/timeline/rankLanes';

/** n ranks of one thread each, as an MPI run's locations: one 34 px lane per rank */
function ranksLayout(n: number) {
  return layoutTimeline(
    Array.from({ length: n }, (_, r) => ({
      id: r,
      name: 'Master thread',
      max_depth: 3,
      group: `MPI Rank ${r}`,
      kind: 'thread' as const
    }))
  );
}

describe('rankRows', () => {
  it('draws one row per rank when the ranks fit the height', () => {
    expect(rankRows(9, 340, 34)).toEqual({
      mode: 'rows',
      rows: 9,
      height: 306
    });
  });

  it('asks for a heat map of 2 px rows when they do not', () => {
    expect(rankRows(1024, 334, 34)).toEqual({
      mode: 'heatmap',
      rows: 167,
      height: 334
    });
  });

  it('switches to one row per rank as the vertical zoom grows', () => {
    const modes = [1, 2, 4, 8, 16, 32, 64, 128].map(
      z => rankRows(1024, 334, 34, z).mode
    );
    expect(modes).toEqual([
      'heatmap',
      'heatmap',
      'heatmap',
      'heatmap',
      'heatmap',
      'heatmap',
      'heatmap',
      'rows'
    ]);
    expect(rankRows(100, 334, 34, 16).mode).toBe('rows');
    expect(rankRows(100, 334, 34, 8).mode).toBe('heatmap');
  });

  it('never asks for as many rows as ranks in a heat map', () => {
    // 20 ranks of 34 px do not fit 100 px; 50 rows of 2 px would be more than the ranks
    expect(rankRows(20, 100, 34)).toEqual({
      mode: 'heatmap',
      rows: 19,
      height: 100
    });
  });
});

describe('the zoom', () => {
  it('goes up to the first power of 2 where every rank has its own row', () => {
    // 1,024 ranks of 34 px: 34,816 px; 356 px x 128 = 45,568 px is the first that holds them
    expect(maxVerticalZoom(1024, 356, 34)).toBe(128);
    expect(maxVerticalZoom(9, 340, 34)).toBe(1);
    expect(rankRows(1024, 356, 34, 64).mode).toBe('heatmap');
  });
});

describe('the lanes in view', () => {
  const layout = ranksLayout(1024);

  it('are the lanes whose title or row shows in the window', () => {
    expect(layout.collapsed).toBe(true);
    // lane i: title from 34 i, its row 34 i + 16 .. 34 (i + 1)
    expect(lanesInView(layout, 0, 356)).toEqual([0, 11]);
    expect(lanesInView(layout, 3400, 356)).toEqual([100, 111]);
    // a window starting inside lane 100's row still shows it (and lane 101's title)
    expect(lanesInView(layout, 3433, 10)).toEqual([100, 102]);
    expect(lanesInView(layout, 3434, 10)).toEqual([101, 102]);
    expect(lanesInView(layout, 34 * 1024 - 100, 356)).toEqual([1021, 1024]);
  });

  it('are drawn moved up by the scroll', () => {
    const drawn = scrolledLayout(layout, [100, 102], 3400);
    expect(drawn.lanes.map(l => [l.name, l.y])).toEqual([
      ['Rank 100', 16],
      ['Rank 101', 50]
    ]);
    expect(drawn.rowHeight).toBe(layout.rowHeight);
    // the layout itself is untouched
    expect(layout.lanes[100].y).toBe(3416);
  });

  it('are named in the bar', () => {
    expect(inViewText(layout, [100, 111])).toBe('ranks 100–110 in view');
    expect(inViewText(layout, [5, 5])).toBe('');
  });
});

describe('the ranks asked for', () => {
  it('are the view and as much again either side, clamped', () => {
    expect(ranksToAsk([100, 111], 1024, null)).toEqual([89, 122]);
    expect(ranksToAsk([0, 11], 1024, null)).toEqual([0, 22]);
    expect(ranksToAsk([1020, 1024], 1024, null)).toEqual([1016, 1024]);
  });

  it('stay while they hold the view', () => {
    expect(ranksToAsk([95, 106], 1024, [89, 122])).toEqual([89, 122]);
    expect(ranksToAsk([115, 126], 1024, [89, 122])).toEqual([104, 137]);
  });
});

describe('keepCentre', () => {
  it('keeps the content at the middle of the plot there', () => {
    // the middle of 1,000 px at 300 (top 250 of a 100 px plot) is 30 %: of 2,000 px, 600
    expect(keepCentre(250, 100, 1000, 2000)).toBe(550);
    // never past either end
    expect(keepCentre(0, 100, 1000, 100)).toBe(0);
    expect(keepCentre(900, 100, 1000, 500)).toBe(400);
  });
});

describe('RankRows', () => {
  const plot = 356;

  it('zooms from the heat map to one row per rank and stops there', () => {
    const ranks = new RankRows(1024, ranksLayout(1024));
    const modes: string[] = [];
    for (let z = 1; z <= 512; z *= 2) {
      ranks.setZoom(z, plot);
      modes.push(`${ranks.vzoom} ${ranks.mode(plot).mode}`);
    }
    expect(modes.slice(-4)).toEqual([
      '64 heatmap',
      '128 rows',
      '128 rows',
      '128 rows'
    ]);
    expect(ranks.contentHeight(plot)).toBe(34 * 1024);
    expect(ranks.setZoom(1024, plot)).toBe(false);
  });

  it("asks for the heat map's rows, then only the ranks about the view", () => {
    const ranks = new RankRows(1024, ranksLayout(1024));
    expect(ranks.request(plot, 1024)).toEqual({ rows: 178 });
    ranks.setZoom(128, plot);
    ranks.scrollTo(0, plot);
    expect(ranks.request(plot, 1024)).toEqual({ ranks: [0, 22] });
    ranks.scrollTo(3400, plot);
    expect(ranks.inView(plot)).toEqual([100, 111]);
    expect(ranks.needsRequest(plot)).toBe(true);
    expect(ranks.request(plot, 1024)).toEqual({ ranks: [89, 122] });
    // a few rows further: still inside what was asked
    ranks.scrollTo(3500, plot);
    expect(ranks.needsRequest(plot)).toBe(false);
    // the scroll never passes the last rank
    ranks.scrollTo(1e9, plot);
    expect(ranks.top).toBe(34 * 1024 - plot);
    expect(ranks.inView(plot)[1]).toBe(1024);
  });

  it('keeps the ranks in the middle of the plot in view as it zooms', () => {
    const ranks = new RankRows(1024, ranksLayout(1024));
    ranks.setZoom(64, plot);
    // the heat map's middle: rank ~512
    ranks.scrollTo((plot * 64) / 2 - plot / 2, plot);
    ranks.setZoom(128, plot);
    const [a, b] = ranks.inView(plot);
    expect(a).toBeLessThanOrEqual(512);
    expect(b).toBeGreaterThan(512);
  });

  it('asks for every location when all the ranks are in view', () => {
    const ranks = new RankRows(9, ranksLayout(9));
    expect(ranks.mode(plot).mode).toBe('rows');
    expect(ranks.request(plot, 9)).toEqual({});
  });
});
