/**
 * What keys and the wheel do to the timeline view, and what a tooltip says about a span: pure functions
 * so the canvas widget stays about wiring, and the behaviour is tested without a browser.
 */
import { CellSources } from '../cellSources';
import type { IRegionInfo } from '../../api/traceTypes';
import { IView, zoomAround } from './projection';
import { formatDuration } from '../../util/timeaxis';

/** Fraction of the view an arrow key pans by, and the zoom factor of one +/- press. */
export const PAN_STEP = 0.1;
export const ZOOM_STEP = 0.7;

export type KeyAction =
  | { kind: 'view'; view: IView }
  | { kind: 'reset' }
  | { kind: 'clear-measure' }
  | null;

/** The action for a key pressed on the focused timeline (null: not ours). */
export function keyAction(key: string, view: IView, width: number): KeyAction {
  const span = view.t1 - view.t0;
  const center = width / 2;
  switch (key) {
    case 'ArrowLeft':
      return {
        kind: 'view',
        view: { t0: view.t0 - span * PAN_STEP, t1: view.t1 - span * PAN_STEP }
      };
    case 'ArrowRight':
      return {
        kind: 'view',
        view: { t0: view.t0 + span * PAN_STEP, t1: view.t1 + span * PAN_STEP }
      };
    case '+':
    case '=':
    case 'ArrowUp':
      return { kind: 'view', view: zoomAround(view, width, center, ZOOM_STEP) };
    case '-':
    case '_':
    case 'ArrowDown':
      return {
        kind: 'view',
        view: zoomAround(view, width, center, 1 / ZOOM_STEP)
      };
    case '0':
    case 'Home':
      return { kind: 'reset' };
    case 'Escape':
      return { kind: 'clear-measure' };
    default:
      return null;
  }
}

/** CSS px of one wheel line (WheelEvent.deltaMode 1, Firefox's mouse wheel). */
export const WHEEL_LINE_PX = 40;

/** Wheel → zoom factor (>1 zooms out), for pixel and line delta modes. */
export function wheelZoomFactor(deltaY: number, deltaMode: number): number {
  const scale = deltaMode === 1 ? WHEEL_LINE_PX : 1;
  return Math.exp(deltaY * scale * 0.0015);
}

/** A wheel delta in CSS px: pixel mode as is, lines of WHEEL_LINE_PX, pages of `page` px. */
export function wheelPixels(
  delta: number,
  deltaMode: number,
  page: number
): number {
  return deltaMode === 1
    ? delta * WHEEL_LINE_PX
    : deltaMode === 2
      ? delta * page
      : delta;
}

/** What of a WheelEvent decides its action. */
export interface IWheelInput {
  deltaX: number;
  deltaY: number;
  deltaMode: number;
  shiftKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
}

export type WheelAction =
  | { kind: 'zoom'; factor: number }
  /** pan time by `px` CSS px (positive: earlier times come into view) */
  | { kind: 'pan'; px: number }
  /** scroll the ranks down by `px` CSS px */
  | { kind: 'scroll'; px: number };

/**
 * What a wheel event over the canvas does. Time as in Perfetto UI (its pan_and_zoom_handler
 * and help): a sideways delta (trackpad swipe, tilt wheel) pans, ctrl/cmd-wheel (and a
 * trackpad's pinch, which browsers send as ctrl-wheel) zooms around the pointer; shift-wheel
 * pans too, as in vcdrom and NVIDIA's Visual Profiler. The plain vertical wheel zooms, as it always has here,
 * unless the ranks are taller than the plot (`scrollable`: a many-rank view zoomed
 * vertically): then it scrolls them, as Perfetto's plain wheel scrolls its tracks and any
 * list with a scrollbar does. `page` is the plot's height, for page-mode deltas.
 */
export function wheelAction(
  e: IWheelInput,
  scrollable: boolean,
  width: number,
  page: number
): WheelAction {
  if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
    return { kind: 'pan', px: -wheelPixels(e.deltaX, e.deltaMode, width) };
  }
  if (e.shiftKey) {
    return { kind: 'pan', px: -wheelPixels(e.deltaY, e.deltaMode, width) };
  }
  if (scrollable && !e.ctrlKey && !e.metaKey) {
    return { kind: 'scroll', px: wheelPixels(e.deltaY, e.deltaMode, page) };
  }
  return { kind: 'zoom', factor: wheelZoomFactor(e.deltaY, e.deltaMode) };
}

/** The timeline's help line under the plot; `manyRanks`: a many-rank run (rankRows.ts),
 * whose ranks the wheel scrolls once they are taller than the plot (wheelAction). One
 * process's line stays as it was (one line at the panel's usual width). */
export function gestureHelp(manyRanks: boolean): string {
  const wheel = manyRanks
    ? [
        'Wheel: zoom, or scroll the ranks when they are taller than the plot (ctrl-wheel or a pinch zooms then)',
        'shift-wheel: pan'
      ]
    : ['Wheel: zoom'];
  return [
    ...wheel,
    'drag: pan',
    'shift-drag: zoom to selection',
    'alt/ctrl-drag: measure (the functions in the range)',
    'double-click or 0: show all'
  ].join(' · ');
}

/** The tooltip for one drawn span: title line and detail lines. */
export function tooltipLines(
  info: IRegionInfo | undefined,
  regionId: number,
  start: number,
  end: number,
  count: number,
  sources: CellSources = new CellSources([])
): { title: string; lines: string[] } {
  const duration = end - start;
  // in the notebook's words: "cell [3], line 8"
  const where = sources.where(info?.file, info?.line);
  const lines = [
    count > 1
      ? `${count.toLocaleString()} calls merged, ${formatDuration(duration)} span`
      : `Duration ${formatDuration(duration)}`,
    `Start ${formatDuration(start)}`,
    where
  ].filter(Boolean);
  return { title: info?.name ?? `region ${regionId}`, lines };
}

/** The run's cells and the files their code ran as, from the trace's cell regions. */
export function cellSourcesOf(
  regions: Record<string, IRegionInfo>
): CellSources {
  return new CellSources(
    Object.values(regions)
      .filter(r => r.role === 'cell')
      .map(r => ({ label: r.name, file: r.file }))
  );
}
