/**
 * The timeline's many ranks on the page: the bar above the plot (heatBar.ts), the spacer
 * under the plot's stage that gives the scroller the height of all the ranks, and the
 * scroller's scroll (its scrollbar, its keys, the wheel over the canvas), all kept in step
 * with the ranks' state (rankRows.ts: zoom, scroll, mode). The view asks it what to draw
 * and fetch; it tells the view when to draw or fetch. It says which lane's title sticks
 * to the plot's top (laneTitles.ts) on the node, for ui-tests.
 */
import { currentTheme } from '../../util/colors';
import { el } from '../../util/dom';
import { IN_VIEW_CLASS, renderHeatBar } from './heatBar';
import { ITitlePlace, titlePlaces } from './laneTitles';
import type { ILayout } from './projection';
import { inViewText, RankRows, scrolledLayout } from './rankRows';

/** What the scroller needs of the view. */
export interface IRankScrollerHost {
  /** the timeline's node (data-rank-mode, data-ranks-in-view for ui-tests) */
  node: HTMLElement;
  scroller: HTMLElement;
  /** the plot's height without scrolling, px */
  plotHeight(): number;
  scheduleDraw(): void;
  requestWindow(): void;
  /** the pointer's hover is stale: the rows moved under it */
  leaveHover(): void;
}

export class RankScroller {
  constructor(
    readonly ranks: RankRows,
    private readonly host: IRankScrollerHost
  ) {
    this.bar = el('div', 'jp-scorep-heatbar');
    this.spacer = el('div', 'jp-scorep-timeline-spacer');
    host.scroller.addEventListener('scroll', () => this.onScroll());
  }

  /** the bar above the plot */
  readonly bar: HTMLDivElement;
  /** goes under the plot's stage in the scroller */
  readonly spacer: HTMLDivElement;

  /** The vertical zoom changes to `vzoom` (clamped): the ranks at the middle stay. */
  setZoom(vzoom: number): void {
    if (!this.ranks.setZoom(vzoom, this.host.plotHeight())) {
      return;
    }
    this.updateExtent();
    this.host.scroller.scrollTop = this.ranks.top;
    this.render();
    this.host.scheduleDraw();
    this.host.requestWindow();
  }

  /** Whether the ranks are taller than the plot (zoomed vertically): the scroller scrolls. */
  scrollable(): boolean {
    const plot = this.host.plotHeight();
    return this.ranks.contentHeight(plot) > plot;
  }

  /** Scroll the ranks by `px` CSS px (down when positive), as the scrollbar does: the
   * scroller's scroll event follows (onScroll). */
  scrollBy(px: number): void {
    this.host.scroller.scrollTop += px;
  }

  /** The plot was resized. */
  resized(): void {
    this.ranks.scrollTo(this.host.scroller.scrollTop, this.host.plotHeight());
    this.updateExtent();
    this.render();
  }

  /** The height of what the plot shows (at most the plot's), and the lanes to draw. */
  drawn(layout: ILayout): { height: number; layout: ILayout } {
    const plot = this.host.plotHeight();
    const height = Math.min(this.ranks.contentHeight(plot), plot);
    if (this.ranks.mode(plot).mode === 'heatmap') {
      this.showSticky(null);
      return { height, layout: { ...layout, lanes: [] } };
    }
    const drawn = scrolledLayout(
      layout,
      this.ranks.inView(plot),
      this.ranks.top
    );
    this.showSticky(titlePlaces(drawn).find(t => t.sticky) ?? null);
    return { height, layout: drawn };
  }

  /** The node's data-sticky-title (the lane whose title is kept at the plot's top, '' when
   * none) and data-sticky-title-top (its box's top, px from the plot's), for ui-tests. */
  private showSticky(title: ITitlePlace | null): void {
    const data = this.host.node.dataset;
    data.stickyTitle = title?.name ?? '';
    data.stickyTitleTop = title ? String(title.top) : '';
  }

  /** Render the bar: the mode, the ranks in view, the zoom, the heat map's measure. */
  render(): void {
    const ranks = this.ranks;
    const mode = ranks.mode(this.host.plotHeight());
    renderHeatBar(this.bar, {
      ranks: ranks.ranks,
      mode,
      measure: ranks.measure,
      vzoom: ranks.vzoom,
      theme: currentTheme(),
      setMeasure: m => {
        ranks.measure = m;
        this.render();
        this.host.scheduleDraw();
      },
      zoom: factor => this.setZoom(ranks.vzoom * factor)
    });
    this.host.node.dataset.rankMode = mode.mode;
    this.updateInView();
  }

  private onScroll(): void {
    const plot = this.host.plotHeight();
    this.ranks.scrollTo(this.host.scroller.scrollTop, plot);
    this.host.leaveHover();
    this.updateInView();
    this.host.scheduleDraw();
    if (this.ranks.needsRequest(plot)) {
      this.host.requestWindow();
    }
  }

  /** The bar's "ranks a–b in view" and the node's data-ranks-in-view (ui-tests). */
  private updateInView(): void {
    const range = this.ranks.inView(this.host.plotHeight());
    const text = inViewText(this.ranks.layout, range);
    const span = this.bar.querySelector(`.${IN_VIEW_CLASS}`);
    if (span && span.textContent !== text) {
      span.textContent = text;
    }
    this.host.node.dataset.ranksInView = `${range[0]}:${range[1]}`;
  }

  /** The scroller's height: the spacer makes up the ranks the plot does not show. */
  private updateExtent(): void {
    const plot = this.host.plotHeight();
    const content = this.ranks.contentHeight(plot);
    this.spacer.style.height = `${Math.max(0, content - plot)}px`;
  }
}
