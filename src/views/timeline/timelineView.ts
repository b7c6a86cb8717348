/**
 * The timeline: a focusable, devicePixelRatio-aware canvas with one row per location and call
 * depth. Wheel zooms around the cursor, drag pans, shift-drag zooms to the selection,
 * alt/ctrl-drag measures a span, arrows pan and +/- zoom. The data is fetched window by window
 * (width = canvas px, one request in flight, the newest view sent next); between answers the last data is
 * re-projected so interaction stays smooth on large traces.
 */
import { rangeText, regionIdsMatching, summariseRange } from './rangeSummary';
import { Signal, ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { ITraceLocation } from '../../api/experimentTypes';
import type { ITimeline } from '../../api/traceTypes';
import { currentTheme, hiDpiContext, observeTheme } from '../../util/colors';
import { el } from '../../util/dom';
import {
  clampView,
  emptyDrawList,
  hitTest,
  IDrawList,
  ILayout,
  IView,
  panBy,
  regionIdsNamed,
  toDrawList,
  xToTime,
  zoomAround
} from './projection';
import { formatDuration } from '../../util/timeaxis';
import { AXIS_HEIGHT, paint, readThemeColors } from './draw';
import { layoutTimeline } from './rankLanes';
import { IWindowRequest, WindowFetcher } from './fetcher';
import {
  cellSourcesOf,
  keyAction,
  tooltipLines,
  wheelZoomFactor
} from './interaction';
import { renderLegend, showTooltip } from './overlays';
import { laneAt, LaunchLinks, LinkLoader } from './launchLinks';

const KEYS_HELP = 'Arrow keys pan, plus and minus zoom, 0 shows everything.';

export type TimelineLoader = (
  request: IWindowRequest,
  signal: AbortSignal
) => Promise<ITimeline>;

type DragMode = 'pan' | 'select' | 'measure';

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
    this.layout_ = layoutTimeline(
      options.locations.filter(l => (l.kind ?? 'thread') !== 'metric')
    );
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
    this.tooltip = el('div', 'jp-scorep-tooltip');
    this.tooltip.setAttribute('role', 'tooltip');
    this.tooltip.hidden = true;
    // the hovered span's outline: an element over the canvas, so hovering moves it and
    // never repaints the canvas (a full view repaints ~20,000 spans)
    this.hoverBox = el('div', 'jp-scorep-timeline-hover');
    this.hoverBox.hidden = true;
    this.legend = el('div', 'jp-scorep-legend');
    this.legend.setAttribute('aria-label', 'Region groups (modules)');
    this.status = el('div', 'jp-scorep-timeline-status');
    this.status.setAttribute('aria-live', 'polite');

    const scroller = el('div', 'jp-scorep-timeline-scroller');
    scroller.appendChild(this.canvas);
    scroller.appendChild(this.hoverBox);
    if (options.links) {
      this.links = new LaunchLinks(options.links);
      scroller.appendChild(this.links.svg);
    }
    scroller.appendChild(this.tooltip);
    this.node.appendChild(this.legend);
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
    this.canvas.addEventListener('wheel', this.onWheel, { passive: false });
    this.canvas.addEventListener('pointerdown', this.onPointerDown);
    this.canvas.addEventListener('pointermove', this.onPointerMove);
    this.canvas.addEventListener('pointerup', this.onPointerUp);
    this.canvas.addEventListener('pointerleave', this.onPointerLeave);
    this.canvas.addEventListener('keydown', this.onKeyDown);
    this.canvas.addEventListener('dblclick', () => this.resetView());
    this.resizeObserver = new ResizeObserver(() => this.handleResize());
    this.resizeObserver.observe(this.node);
    this.themeObserver = observeTheme(() => this.scheduleDraw());
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

  private setData(data: ITimeline): void {
    this._data = data;
    this.updateHighlight();
    for (const info of Object.values(data.regions)) {
      this.groups.add(info.group ?? '?');
    }
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
        `${data.locations.length} location(s); regions: ${regions || 'none'}. ` +
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
      width: Math.round(this.cssWidth)
    });
  }

  private handleResize(): void {
    const width = Math.floor(this.canvas.parentElement?.clientWidth ?? 0);
    if (width <= 0 || width === this.cssWidth) {
      return;
    }
    this.cssWidth = width;
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
    const height = AXIS_HEIGHT + this.layout_.height + 4;
    const ctx = hiDpiContext(this.canvas, width, height);
    if (!ctx) {
      return;
    }
    const started = performance.now();
    this.list = this._data
      ? toDrawList(this._data, this.layout_, this._view, width)
      : emptyDrawList();
    const theme = currentTheme();
    if (this._data) {
      this.updateLegend();
    }
    paint(ctx, {
      width,
      height,
      view: this._view,
      layout: this.layout_,
      list: this.list,
      regions: this._data?.regions ?? {},
      highlight: this.highlight,
      selection: this.selection,
      measure: this.measure,
      colors: readThemeColors(this.node, theme),
      origin: this.axisOrigin
    });
    this.placeHover();
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

  private localPoint(e: MouseEvent): [number, number] {
    const rect = this.canvas.getBoundingClientRect();
    return [e.clientX - rect.left, e.clientY - rect.top];
  }

  private onWheel = (e: WheelEvent): void => {
    e.preventDefault();
    const [x] = this.localPoint(e);
    if (e.shiftKey && Math.abs(e.deltaX) < Math.abs(e.deltaY)) {
      this.setView(panBy(this._view, this.cssWidth, -e.deltaY));
      return;
    }
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      this.setView(panBy(this._view, this.cssWidth, -e.deltaX));
      return;
    }
    const factor = wheelZoomFactor(e.deltaY, e.deltaMode);
    this.setView(zoomAround(this._view, this.cssWidth, x, factor));
  };

  private onPointerDown = (e: PointerEvent): void => {
    if (e.button !== 0) {
      return;
    }
    this.canvas.focus();
    const [x] = this.localPoint(e);
    this.dragStart = x;
    this.dragView = this._view;
    this.dragMode = e.shiftKey
      ? 'select'
      : e.altKey || e.ctrlKey || e.metaKey
        ? 'measure'
        : 'pan';
    if (this.dragMode === 'measure') {
      this.measure = [x, x];
    } else {
      this.measure = null;
    }
    this.canvas.setPointerCapture(e.pointerId);
    this.hideTooltip();
  };

  private onPointerMove = (e: PointerEvent): void => {
    const [x, y] = this.localPoint(e);
    if (this.dragMode && this.dragView) {
      const dx = x - this.dragStart;
      if (this.dragMode === 'pan') {
        // No request while the drag lasts: answers parsed and drawn mid-drag cost frames
        // on big traces (10M events: panning p95 33 ms instead of 16.7 ms,
        // benchmarks/panel_frames.py); the window is asked for when the drag ends.
        this.setView(panBy(this.dragView, this.cssWidth, dx), false);
        this.canvas.style.cursor = 'grabbing';
      } else if (this.dragMode === 'select') {
        this.selection = [this.dragStart, x];
        this.scheduleDraw();
      } else {
        this.measure = [this.dragStart, x];
        this.scheduleDraw();
      }
      return;
    }
    const k = hitTest(this.list, this.layout_.rowHeight, x, y - AXIS_HEIGHT);
    if (k !== this.hover) {
      this.hover = k;
      this.placeHover();
    }
    if (k >= 0) {
      this.showTooltip(k, x, y);
    } else {
      this.hideTooltip();
    }
  };

  private onPointerUp = (e: PointerEvent): void => {
    if (this.dragMode === 'select' && this.selection) {
      const [a, b] = this.selection;
      if (Math.abs(b - a) > 3) {
        const t0 = xToTime(Math.min(a, b), this._view, this.cssWidth);
        const t1 = xToTime(Math.max(a, b), this._view, this.cssWidth);
        this.setView({ t0, t1 });
      }
      this.selection = null;
      this.scheduleDraw();
    }
    if (this.dragMode === 'measure' && this.measure) {
      const [a, b] = this.measure;
      const dt =
        (Math.abs(b - a) / this.cssWidth) * (this._view.t1 - this._view.t0);
      // the range summarised: the functions in it by their time there (rangeSummary.ts)
      const t0 = xToTime(Math.min(a, b), this._view, this.cssWidth);
      const t1 = xToTime(Math.max(a, b), this._view, this.cssWidth);
      this.setStatus(
        dt > 0 && this._data
          ? rangeText(
              summariseRange(this.list, this._data.regions, t0, t1),
              t0,
              t1
            )
          : `Measured: ${formatDuration(dt)}`
      );
    }
    if (this.dragMode === 'pan' && this.dragView !== this._view) {
      this.requestWindow();
    }
    const [x, y] = this.localPoint(e);
    if (
      this.dragMode === 'pan' &&
      this.links &&
      Math.abs(x - this.dragStart) < 3
    ) {
      this.clickSpan(x, y - AXIS_HEIGHT);
    }
    this.dragMode = null;
    this.dragView = null;
    this.canvas.style.cursor = '';
    if (this.canvas.hasPointerCapture(e.pointerId)) {
      this.canvas.releasePointerCapture(e.pointerId);
    }
  };

  private onPointerLeave = (): void => {
    if (!this.dragMode) {
      this.hover = -1;
      this.hideTooltip();
      this.placeHover();
    }
  };

  private onKeyDown = (e: KeyboardEvent): void => {
    const action = keyAction(e.key, this._view, this.cssWidth);
    if (!action) {
      return;
    }
    if (action.kind === 'view') {
      this.setView(action.view);
    } else if (action.kind === 'reset') {
      this.resetView();
    } else {
      this.measure = null;
      this.setStatus('');
      this.scheduleDraw();
    }
    e.preventDefault();
    e.stopPropagation();
  };

  /** A click on a single call selects it and draws its launch links (or clears them). */
  private clickSpan(x: number, y: number): void {
    const k = hitTest(this.list, this.layout_.rowHeight, x, y);
    const lane = k >= 0 ? laneAt(this.layout_, this.list.y[k]) : null;
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

  private showTooltip(k: number, x: number, y: number): void {
    const id = this.list.region[k];
    const content = tooltipLines(
      this._data?.regions[String(id)],
      id,
      this.list.start[k],
      this.list.end[k],
      this.list.count[k],
      cellSourcesOf(this._data?.regions ?? {})
    );
    showTooltip(this.tooltip, content, x, y, this.cssWidth);
  }

  /** Outline the hovered span of the drawn list (hidden when none). */
  private placeHover(): void {
    const k = this.hover;
    const box = this.hoverBox;
    if (k < 0 || k >= this.list.n) {
      box.hidden = true;
      return;
    }
    const left = Math.max(this.list.x[k], 0);
    const right = Math.min(
      this.list.x[k] + Math.max(this.list.w[k], 1),
      this.cssWidth
    );
    box.style.left = `${left}px`;
    box.style.top = `${AXIS_HEIGHT + this.list.y[k] + 1}px`;
    box.style.width = `${Math.max(right - left, 1) + 1}px`;
    box.style.height = `${this.layout_.rowHeight - 2}px`;
    box.hidden = false;
  }

  private hideTooltip(): void {
    this.tooltip.hidden = true;
  }

  readonly canvas: HTMLCanvasElement;
  private readonly range: [number, number];
  private readonly axisOrigin: number;
  private layout_: ILayout;
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
  private selection: [number, number] | null = null;
  private measure: [number, number] | null = null;
  private hover = -1;
  private dragMode: DragMode | null = null;
  private dragStart = 0;
  private dragView: IView | null = null;
  private cssWidth = 0;
  private frame = 0;
  private readonly tooltip: HTMLDivElement;
  private readonly hoverBox: HTMLDivElement;
  private readonly links: LaunchLinks | null = null;
  private readonly legend: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly fetcher: WindowFetcher<ITimeline>;
  private readonly resizeObserver: ResizeObserver;
  private readonly themeObserver: MutationObserver;
  private readonly _viewChanged = new Signal<this, IView>(this);
}
