/**
 * Where the timeline draws its lanes' titles. A title sits in the gap above its lane's rows;
 * scrolled through many ranks, the lane at the plot's top edge would have its title cut or
 * gone while its rows still show. That title sticks to the plot's top, as CSS
 * `position: sticky` keeps a heading inside its section: it stays whole at the top while
 * the lane shows a title's height, then leaves with the lane's bottom edge, pushed up by the
 * next lane's title (which is whole below it by then).
 */
import type { ILayout } from './projection';

export interface ITitlePlace {
  name: string;
  /** the top of the title's box (laneGap px high), px from the plot's top */
  top: number;
  /** moved from its place above the lane to stay in the plot: drawn over the lane's rows,
   * on a backdrop */
  sticky: boolean;
}

/** The titles of `layout`'s lanes (their y already moved by the scroll), in lane order. */
export function titlePlaces(layout: ILayout): ITitlePlace[] {
  const gap = layout.laneGap;
  const places: ITitlePlace[] = [];
  for (const lane of layout.lanes) {
    const top = lane.y - gap;
    const bottom = lane.y + lane.rows * layout.rowHeight;
    if (bottom <= 0) {
      continue; // scrolled off: neither title nor rows show
    }
    if (top >= 0) {
      places.push({ name: lane.name, top, sticky: false });
    } else {
      places.push({
        name: lane.name,
        top: Math.min(0, bottom - gap),
        sticky: true
      });
    }
  }
  return places;
}
