/**
 * What keys do to the timeline view, and what a tooltip says about a span: pure functions
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

/** Wheel → zoom factor (>1 zooms out), for pixel and line delta modes. */
export function wheelZoomFactor(deltaY: number, deltaMode: number): number {
  const scale = deltaMode === 1 ? 40 : 1;
  return Math.exp(deltaY * scale * 0.0015);
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
