/**
 * The timeline: a focusable, devicePixelRatio-aware canvas with one row per location and call
 * depth. The data is fetched window by window (width = canvas px, one request in flight, the
 * newest view sent next; fetcher.ts); between answers the last data is re-projected so
 * interaction stays smooth on large traces. The view holds the window, the data and the
 * highlight and draws them (draw.ts); what the pointer and the keys do is gestures.ts, the
 * hovered span's outline and tooltip spanHover.ts. A many-rank run's ranks (a heat map, or
 * one row per rank scrolled through, only the rows in view drawn and fetched) are
 * rankRows.ts's (the state) and rankScroller.ts's (the bar, the scroll).
 */
import { rangeText, regionIdsMatching, summariseRange } from './rangeSummary';
import { Signal, ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { ITraceLocation } from '../../api/experimentTypes';
import type { ITimeline } from '../../api/traceTypes';
import {
  claimGroups,
  currentTheme,
  hiDpiContext,
  observeTheme
} from '../../util/colors';
import { el } from '../../util/dom';
import {
  clampView,
  emptyDrawList,
  hitTest,
  IDrawList,
  ILayout,
  IView,
  regionIdsNamed,
  toDrawList
} from './projection';
import { formatDuration } from '../../util/timeaxis';
import { AXIS_HEIGHT, paint, readThemeColors } from './draw';
import { layoutTimeline, processes } from './rankLanes';
import { heatCellAt, heatOf, heatText, IHeat, paintHeat } from './heatmap';
import { IRankMode, RankRows } from './rankRows';
import { RankScroller } from './rankScroller';
import { IWindowRequest, WindowFetcher } from './fetcher';
import { TimelineGestures } from './gestures';
import { renderLegend, showTooltip } from './overlays';
import { SpanHover } from './spanHover';
import { laneAt, LaunchLinks, LinkLoader } from './launchLinks';

const KEYS_HELP = 'Arrow keys pan, plus and minus zoom, 0 shows everything.';

export type TimelineLoader = (
  request: IWindowRequest,
  signal: AbortSignal
) => Promise<ITimeline>;

export class TimelineView extends Widget {
  constructor(options: {
    range: [number, number];
    locations: ITraceLocation[];
    load: TimelineLoader;
    /** the time the ruler counts from (default 0, the run's start) */
    axisOrigin?: number;
    /** a span's launch links (GET link): clicking a span draws them */
    links?: LinkLoader;
  }) {
    super();
    this.addClass('jp-scorep-timeline');
    this.range = options.range;
    this.axisOrigin = options.axisOrigin ?? 0;
    // metric locations (OTF2 METRIC kind) carry samples, not calls: the metrics charts show them
    // one process: a lane per location; an MPI run's ranks: grouped by rank (rankLanes.ts)
    const shown = options.locations.filter(
      l => (l.kind ?? 'thread') !== 'metric'
    );
    const layout = layoutTimeline(shown);
    this.layout_ = layout;
    this.drawn = layout;
    const ranks = layout.collapsed ? processes(shown).length : 0;
    this.locationCount = shown.length;
    this._view = {
      t0: options.range[0],
      t1: Math.max(options.range[1], options.range[0] + 1)
    };

    this.canvas = el('canvas', 'jp-scorep-timeline-canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute(
      'aria-label',
      `Timeline of the profiled run. ${KEYS_HELP}`
    );
    this.hover = new SpanHover({
      list: () => this.list,
      rowHeight: () => this.layout_.rowHeight,
      width: () => this.cssWidth,
      regions: () => this._data?.regions ?? {}
    });
    this.legend = el('div', 'jp-scorep-legend');
    this.legend.setAttribute('aria-label', 'Region groups (modules)');
    this.status = el('div', 'jp-scorep-timeline-status');
    this.status.setAttribute('aria-live', 'polite');

    // the stage (canvas and what lies over it) sticks to the scroller's top: with many
    // ranks it is the plot's height, and the spacer under it gives the scrollbar the
    // height of all the ranks, of which only the part in view is drawn
    const scroller = el('div', 'jp-scorep-timeline-scroller');
    this.scroller = scroller;
    const stage = el('div', 'jp-scorep-timeline-stage');
    stage.appendChild(this.canvas);
    stage.appendChild(this.hover.box);
    if (options.links) {
      this.links = new LaunchLinks(options.links);
      stage.appendChild(this.links.svg);
    }
    stage.appendChild(this.hover.tooltip);
    scroller.appendChild(stage);
    this.many =
      ranks > 0
        ? new RankScroller(new RankRows(ranks, layout), {
            node: this.node,
            scroller,
            plotHeight: () => this.plotHeight(),
            scheduleDraw: () => this.scheduleDraw(),
            requestWindow: () => this.requestWindow(),
            leaveHover: () => this.hover.leave()
          })
        : null;
    this.node.appendChild(this.legend);
    if (this.many) {
      scroller.appendChild(this.many.spacer);
      this.node.appendChild(this.many.bar);
    }
    this.node.appendChild(scroller);
    this.node.appendChild(this.status);
    if (this.links) {
      this.node.appendChild(this.links.status);
    }

    this.fetcher = new WindowFetcher<ITimeline>(
      options.load,
      data => this.setData(data),
      error => this.setStatus(`Timeline: ${error.message}`)
    );
    this.gestures = new TimelineGestures(this.canvas, {
      view: () => this._view,
      width: () => this.cssWidth,
      plotHeight: () => this.plotHeight(),
      ranksScrollable: () => this.many?.scrollable() ?? false,
      scrollRanks: px => this.many?.scrollBy(px),
      setView: (view, fetch) => this.setView(view, fetch),
      resetView: () => this.resetView(),
      requestWindow: () => this.requestWindow(),
      scheduleDraw: () => this.scheduleDraw(),
      setStatus: text => this.setStatus(text),
      measured: (t0, t1, dt) => this.setStatus(this.measuredText(t0, t1, dt)),
      pointAt: (x, y) =>
        this.heatShown() ? this.heatHover(x, y) : this.hover.pointAt(x, y),
      hideTooltip: () => this.hover.hideTooltip(),
      leave: () => this.hover.leave(),
      click: (x, y) => {
        if (this.links) {
          this.clickSpan(x, y - AXIS_HEIGHT);
        }
      }
    });
    this.resizeObserver = new ResizeObserver(() => this.handleResize());
    this.resizeObserver.observe(this.node);
    this.themeObserver = observeTheme(() => {
      // the bar's colour scale is drawn in the theme's ramp too
      this.many?.render();
      this.scheduleDraw();
    });
  }

  /** The visible window, ns since the run's start. */
  get view(): IView {
    return this._view;
  }

  /** Emitted whenever the visible window changes (metrics follow it). */
  get viewChanged(): ISignal<this, IView> {
    return this._viewChanged;
  }

  /** Width of the plot in CSS pixels. */
  get plotWidth(): number {
    return this.cssWidth;
  }

  /** The last timeline answer drawn. */
  get data(): ITimeline | null {
    return this._data;
  }

  setView(view: IView, fetch = true): void {
    this._view = clampView(view, this.range);
    this._viewChanged.emit(this._view);
    this.scheduleDraw();
    if (fetch) {
      this.requestWindow();
    }
  }

  resetView(): void {
    this.setView({ t0: this.range[0], t1: this.range[1] });
  }

  /** Emphasise the calls of one region (by name); null clears. */
  highlightRegion(name: string | null): void {
    this.highlightName = name;
    this.updateHighlight();
    this.scheduleDraw();
  }

  /** Emphasise the regions whose name contains `query` (the timeline's search); '' clears. */
  search(query: string): void {
    this.query = query;
    this.updateHighlight();
    this.scheduleDraw();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.fetcher.dispose();
    this.resizeObserver.disconnect();
    this.themeObserver.disconnect();
    if (this.frame) {
      cancelAnimationFrame(this.frame);
    }
    super.dispose();
  }

  /** Vertical zoom: the ranks get `vzoom` times the plot's height (1 up to where one row
   * per rank fits); one row per rank once they fit, the heat map before. */
  get verticalZoom(): number {
    return this.many?.ranks.vzoom ?? 1;
  }

  setVerticalZoom(vzoom: number): void {
    this.many?.setZoom(vzoom);
  }

  /** Whether this is a many-rank run's timeline (a heat map or one row per rank). */
  get manyRanks(): boolean {
    return this.many !== null;
  }

  /** What the ranks are drawn as now: one row per rank, or a heat map of `rows` rows. */
  get rankMode(): IRankMode {
    return (
      this.many?.ranks.mode(this.plotHeight()) ?? {
        mode: 'rows',
        rows: 0,
        height: this.layout_.height
      }
    );
  }

  /** The height the scroller shows without scrolling, less the ruler. */
  private plotHeight(): number {
    const max = parseFloat(getComputedStyle(this.scroller).maxHeight);
    const room = Number.isFinite(max) && max > 0 ? max : 360;
    return Math.max(40, room - AXIS_HEIGHT - 4);
  }

  private heatShown(): boolean {
    return this.heat !== null && this.rankMode.mode === 'heatmap';
  }

  private heatHover(x: number, y: number): void {
    const mode = this.rankMode;
    const top = this.many?.ranks.top ?? 0;
    const cell = this.heat
      ? heatCellAt(
          this.heat,
          this._view,
          this.cssWidth,
          mode.height,
          x,
          y - AXIS_HEIGHT + top
        )
      : null;
    if (!cell) {
      this.hover.hideTooltip();
      return;
    }
    showTooltip(this.hover.tooltip, heatText(cell), x, y, this.cssWidth);
  }

  private setData(data: ITimeline): void {
    this._data = data;
    this.heat = data.heatmap ? heatOf(data.heatmap, data.window) : null;
    this.updateHighlight();
    for (const info of Object.values(data.regions)) {
      this.groups.add(info.group ?? '?');
    }
    claimGroups(this.groups);
    this.updateLegend();
    this.setStatus('');
    this.node.dataset.window = `${data.window[0]},${data.window[1]}`;
    // a text alternative for screen readers: what the canvas shows now
    const regions = Object.values(data.regions)
      .map(r => r.name)
      .slice(0, 8)
      .join(', ');
    this.canvas.setAttribute(
      'aria-label',
      `Timeline from ${formatDuration(data.window[0])} to ${formatDuration(data.window[1])}, ` +
        (this.heat
          ? `${this.many?.ranks.ranks} ranks as a heat map of ${this.heat.map.rows.length} rows ` +
            `(share of time in MPI or busy). `
          : `${data.locations.length} location(s); regions: ${regions || 'none'}. `) +
        KEYS_HELP
    );
    this.scheduleDraw();
  }

  private updateHighlight(): void {
    this.highlight =
      this.highlightName && this._data
        ? regionIdsNamed(this._data.regions, this.highlightName)
        : new Set();
    if (this.query.trim() && this._data) {
      const matching = regionIdsMatching(this._data.regions, this.query);
      for (const id of matching) {
        this.highlight.add(id);
      }
      // each window fetched has its own regions: the count follows it
      this.onSearchMatches?.(matching.size);
    }
  }

  /** Re-render the legend when the groups seen or the theme changed (cheap: runs per frame). */
  private updateLegend(): void {
    const theme = currentTheme();
    // groups are only ever added, so their count says whether they changed
    const key = `${theme}|${this.groups.size}`;
    if (key === this.legendKey) {
      return;
    }
    this.legendKey = key;
    renderLegend(this.legend, this.groups, theme);
  }

  private setStatus(text: string): void {
    this.status.textContent = text;
    this.status.hidden = !text;
  }

  private requestWindow(): void {
    if (this.cssWidth <= 0) {
      return;
    }
    this.fetcher.request({
      t0: this._view.t0,
      t1: this._view.t1,
      width: Math.round(this.cssWidth),
      // the heat map's rows, or the ranks about the view; one process: every location
      ...this.many?.ranks.request(this.plotHeight(), this.locationCount)
    });
  }

  private handleResize(): void {
    const width = Math.floor(this.canvas.parentElement?.clientWidth ?? 0);
    const plot = this.plotHeight();
    if (width <= 0 || (width === this.cssWidth && plot === this.lastPlot)) {
      return;
    }
    this.cssWidth = width;
    this.lastPlot = plot;
    this.many?.resized();
    this.draw();
    this.requestWindow();
    // the metrics charts share the axis: they need the new width too
    this._viewChanged.emit(this._view);
  }

  private scheduleDraw(): void {
    if (this.frame) {
      return;
    }
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  private draw(): void {
    const width = this.cssWidth;
    if (width <= 0) {
      return;
    }
    const mode = this.rankMode;
    const heat = mode.mode === 'heatmap' ? this.heat : null;
    // many ranks: the plot is a window of the plot's height onto them, scrolled by `top`
    const drawn = this.many?.drawn(this.layout_);
    const top = this.many?.ranks.top ?? 0;
    const height =
      AXIS_HEIGHT + (drawn ? drawn.height : this.layout_.height) + 4;
    const ctx = hiDpiContext(this.canvas, width, height);
    if (!ctx) {
      return;
    }
    const started = performance.now();
    // a heat map: no spans and no lane titles; rows of an answer that came as a heat map
    // (the mode changed since): nothing until the rows come. Rows: the lanes in view only
    const layout = drawn ? drawn.layout : this.layout_;
    this.drawn = layout;
    this.list =
      this._data && mode.mode === 'rows'
        ? toDrawList(this._data, layout, this._view, width)
        : emptyDrawList();
    const theme = currentTheme();
    if (this._data) {
      this.updateLegend();
    }
    paint(ctx, {
      width,
      height,
      view: this._view,
      layout,
      list: this.list,
      regions: this._data?.regions ?? {},
      highlight: this.highlight,
      selection: this.gestures.selection,
      measure: this.gestures.measure,
      colors: readThemeColors(this.node, theme),
      origin: this.axisOrigin,
      plot: heat
        ? c =>
            paintHeat(
              c,
              heat,
              this._view,
              { top: -top, width, height: mode.height },
              this.many?.ranks.measure ?? 'mpi',
              theme,
              readThemeColors(this.node, theme)
            )
        : undefined
    });
    this.hover.place();
    this.links?.place(
      this.list,
      this.layout_,
      this._view,
      width,
      AXIS_HEIGHT,
      this.layout_.height
    );
    this.node.dataset.spans = String(this.list.n);
    // the cost of the last frame, for performance checks (ui-tests read it)
    this.node.dataset.drawMs = (performance.now() - started).toFixed(2);
  }

  /** The status line for a span measured from t0 to t1 (ns), dt long: the functions in it
   * by their time there (rangeSummary.ts). */
  private measuredText(t0: number, t1: number, dt: number): string {
    return dt > 0 && this._data
      ? rangeText(summariseRange(this.list, this._data.regions, t0, t1), t0, t1)
      : `Measured: ${formatDuration(dt)}`;
  }

  /** A click on a single call selects it and draws its launch links (or clears them). */
  private clickSpan(x: number, y: number): void {
    const k = hitTest(this.list, this.layout_.rowHeight, x, y);
    const lane = k >= 0 ? laneAt(this.drawn, this.list.y[k]) : null;
    const span =
      k >= 0 && lane && this.list.count[k] === 1
        ? {
            location: lane.id,
            start: this.list.start[k],
            end: this.list.end[k]
          }
        : null;
    void this.links?.select(span, () => this.scheduleDraw());
  }

  readonly canvas: HTMLCanvasElement;
  private readonly range: [number, number];
  private readonly locationCount: number;
  /** the ranks when the layout has one row per rank (more than COLLAPSE_RANKS), else null */
  private readonly many: RankScroller | null;
  private lastPlot = 0;
  private heat: IHeat | null = null;
  private readonly scroller: HTMLDivElement;
  private readonly axisOrigin: number;
  private layout_: ILayout;
  /** the layout last drawn: the lanes in view, moved by the scroll */
  private drawn: ILayout;
  private _view: IView;
  private _data: ITimeline | null = null;
  private list: IDrawList = emptyDrawList();
  private highlightName: string | null = null;
  private query = '';
  /** told how many regions of the window drawn match the search, after each change */
  onSearchMatches: ((n: number) => void) | null = null;
  private highlight = new Set<number>();
  private groups = new Set<string>();
  private legendKey = '';
  private cssWidth = 0;
  private frame = 0;
  private readonly hover: SpanHover;
  private readonly gestures: TimelineGestures;
  private readonly links: LaunchLinks | null = null;
  private readonly legend: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly fetcher: WindowFetcher<ITimeline>;
  private readonly resizeObserver: ResizeObserver;
  private readonly themeObserver: MutationObserver;
  private readonly _viewChanged = new Signal<this, IView>(this);
}
