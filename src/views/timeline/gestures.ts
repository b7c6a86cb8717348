/**
 * What the pointer, the wheel and the keys do on the timeline canvas: the wheel zooms around
 * the cursor, shift-wheel and a sideways wheel pan, and over ranks taller than the plot the
 * wheel scrolls them while ctrl-wheel zooms (interaction.ts's wheelAction); drag pans,
 * shift-drag selects a range to zoom to, alt/ctrl-drag measures a span, a click selects a
 * call, arrows pan, +/- zoom, 0 and a double click show everything. It holds the drag's
 * state (the selection and the measured span, which the view paints) and tells the view
 * what to do through {@link IGestureHost}; what a key does is keyAction (interaction.ts).
 */
import { keyAction, wheelAction } from './interaction';
import { IView, panBy, xToTime, zoomAround } from './projection';

type DragMode = 'pan' | 'select' | 'measure';

/** What the gestures ask of the timeline view. */
export interface IGestureHost {
  /** the visible window */
  view(): IView;
  /** the plot's width in CSS pixels */
  width(): number;
  /** the plot's height in CSS pixels (without the ruler) */
  plotHeight(): number;
  /** whether the ranks are taller than the plot (then the plain wheel scrolls them) */
  ranksScrollable(): boolean;
  /** scroll the ranks down by `px` CSS px (up when negative) */
  scrollRanks(px: number): void;
  setView(view: IView, fetch?: boolean): void;
  resetView(): void;
  /** ask for the window of the current view (after a pan, which asks for none) */
  requestWindow(): void;
  scheduleDraw(): void;
  setStatus(text: string): void;
  /** a measured span from t0 to t1 (ns), dt long, was let go */
  measured(t0: number, t1: number, dt: number): void;
  /** the pointer moved to (x, y) over the canvas without a drag */
  pointAt(x: number, y: number): void;
  hideTooltip(): void;
  /** the pointer left the canvas without a drag */
  leave(): void;
  /** a click (a pan shorter than 3 px) at (x, y) of the canvas */
  click(x: number, y: number): void;
}

export class TimelineGestures {
  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly host: IGestureHost
  ) {
    canvas.addEventListener('wheel', this.onWheel, { passive: false });
    canvas.addEventListener('pointerdown', this.onPointerDown);
    canvas.addEventListener('pointermove', this.onPointerMove);
    canvas.addEventListener('pointerup', this.onPointerUp);
    canvas.addEventListener('pointerleave', this.onPointerLeave);
    canvas.addEventListener('keydown', this.onKeyDown);
    canvas.addEventListener('dblclick', () => host.resetView());
  }

  /** The range a shift-drag selects, in canvas px (null when none). */
  get selection(): [number, number] | null {
    return this._selection;
  }

  /** The span an alt/ctrl-drag measures, in canvas px (null when none). */
  get measure(): [number, number] | null {
    return this._measure;
  }

  private localPoint(e: MouseEvent): [number, number] {
    const rect = this.canvas.getBoundingClientRect();
    return [e.clientX - rect.left, e.clientY - rect.top];
  }

  private onWheel = (e: WheelEvent): void => {
    e.preventDefault();
    const [x] = this.localPoint(e);
    const view = this.host.view();
    const width = this.host.width();
    const action = wheelAction(
      e,
      this.host.ranksScrollable(),
      width,
      this.host.plotHeight()
    );
    if (action.kind === 'scroll') {
      this.host.scrollRanks(action.px);
    } else if (action.kind === 'pan') {
      this.host.setView(panBy(view, width, action.px));
    } else {
      this.host.setView(zoomAround(view, width, x, action.factor));
    }
  };

  private onPointerDown = (e: PointerEvent): void => {
    if (e.button !== 0) {
      return;
    }
    this.canvas.focus();
    const [x] = this.localPoint(e);
    this.dragStart = x;
    this.dragView = this.host.view();
    this.dragMode = e.shiftKey
      ? 'select'
      : e.altKey || e.ctrlKey || e.metaKey
        ? 'measure'
        : 'pan';
    if (this.dragMode === 'measure') {
      this._measure = [x, x];
    } else {
      this._measure = null;
    }
    this.canvas.setPointerCapture(e.pointerId);
    this.host.hideTooltip();
  };

  private onPointerMove = (e: PointerEvent): void => {
    const [x, y] = this.localPoint(e);
    if (this.dragMode && this.dragView) {
      const dx = x - this.dragStart;
      if (this.dragMode === 'pan') {
        // No request while the drag lasts: answers parsed and drawn mid-drag cost frames
        // on big traces (10M events: panning p95 33 ms instead of 16.7 ms,
        // benchmarks/panel_frames.py); the window is asked for when the drag ends.
        this.host.setView(panBy(this.dragView, this.host.width(), dx), false);
        this.canvas.style.cursor = 'grabbing';
      } else if (this.dragMode === 'select') {
        this._selection = [this.dragStart, x];
        this.host.scheduleDraw();
      } else {
        this._measure = [this.dragStart, x];
        this.host.scheduleDraw();
      }
      return;
    }
    this.host.pointAt(x, y);
  };

  private onPointerUp = (e: PointerEvent): void => {
    const width = this.host.width();
    if (this.dragMode === 'select' && this._selection) {
      const [a, b] = this._selection;
      if (Math.abs(b - a) > 3) {
        const view = this.host.view();
        const t0 = xToTime(Math.min(a, b), view, width);
        const t1 = xToTime(Math.max(a, b), view, width);
        this.host.setView({ t0, t1 });
      }
      this._selection = null;
      this.host.scheduleDraw();
    }
    if (this.dragMode === 'measure' && this._measure) {
      const [a, b] = this._measure;
      const view = this.host.view();
      const dt = (Math.abs(b - a) / width) * (view.t1 - view.t0);
      const t0 = xToTime(Math.min(a, b), view, width);
      const t1 = xToTime(Math.max(a, b), view, width);
      this.host.measured(t0, t1, dt);
    }
    if (this.dragMode === 'pan' && this.dragView !== this.host.view()) {
      this.host.requestWindow();
    }
    const [x, y] = this.localPoint(e);
    if (this.dragMode === 'pan' && Math.abs(x - this.dragStart) < 3) {
      this.host.click(x, y);
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
      this.host.leave();
    }
  };

  private onKeyDown = (e: KeyboardEvent): void => {
    const action = keyAction(e.key, this.host.view(), this.host.width());
    if (!action) {
      return;
    }
    if (action.kind === 'view') {
      this.host.setView(action.view);
    } else if (action.kind === 'reset') {
      this.host.resetView();
    } else {
      this._measure = null;
      this.host.setStatus('');
      this.host.scheduleDraw();
    }
    e.preventDefault();
    e.stopPropagation();
  };

  private _selection: [number, number] | null = null;
  private _measure: [number, number] | null = null;
  private dragMode: DragMode | null = null;
  private dragStart = 0;
  private dragView: IView | null = null;
}
