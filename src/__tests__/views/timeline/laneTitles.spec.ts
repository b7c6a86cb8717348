import { titlePlaces } from '../../../views/timeline/laneTitles';
import { scrolledLayout } from '../../../views/timeline/rankRows';
import { layoutTimeline } from '../../../views/timeline/rankLanes';

/** n ranks (past COLLAPSE_RANKS) of one thread each: one 34 px lane per rank (16 px title,
 * 18 px row) */
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

/** the lanes 0..n-1 of `layout` as the plot draws them scrolled by `top` px */
function scrolled(top: number, n = 64) {
  const layout = ranksLayout(n);
  return titlePlaces(scrolledLayout(layout, [0, n], top));
}

describe('lane titles', () => {
  it('sit above their lanes when nothing is scrolled', () => {
    const places = scrolled(0);
    expect(places.slice(0, 3)).toEqual([
      { name: 'Rank 0', top: 0, sticky: false },
      { name: 'Rank 1', top: 34, sticky: false },
      { name: 'Rank 2', top: 68, sticky: false }
    ]);
  });

  it('keep the title of a lane cut by the top edge whole at the top', () => {
    // rank 10's title box is 340..356 px: scrolled by 348, half of it is above the plot
    const places = scrolled(10 * 34 + 8);
    expect(places[0]).toEqual({ name: 'Rank 10', top: 0, sticky: true });
    expect(places[1]).toEqual({ name: 'Rank 11', top: 26, sticky: false });
    // its title gone above the plot, rank 10's row still shows: the title too
    expect(scrolled(10 * 34 + 17)[0]).toEqual({
      name: 'Rank 10',
      top: 0,
      sticky: true
    });
  });

  it('leave with the lane, pushed up by the next title', () => {
    // 10 px of rank 10's row show: its title's box ends where rank 11's begins
    const places = scrolled(10 * 34 + 24);
    expect(places[0]).toEqual({ name: 'Rank 10', top: -6, sticky: true });
    expect(places[1]).toEqual({ name: 'Rank 11', top: 10, sticky: false });
    expect(places[0].top + 16).toBe(places[1].top);
  });

  it('name no lane scrolled off and none sticky on a lane boundary', () => {
    const places = scrolled(11 * 34);
    expect(places[0]).toEqual({ name: 'Rank 11', top: 0, sticky: false });
    expect(places.filter(p => p.sticky)).toEqual([]);
  });

  it('never stick in a single process: its lanes start below their titles', () => {
    const layout = layoutTimeline([
      { id: 0, name: 'Master thread', max_depth: 4 },
      { id: 1, name: 'Thread 1', max_depth: 0 }
    ]);
    expect(titlePlaces(layout).map(p => [p.top, p.sticky])).toEqual([
      [0, false],
      [106, false]
    ]);
  });
});
