/**
 * The shared time axis of two runs' timelines in the Compare view. Pure functions, tested
 * without a browser.
 */
import type { ICompareRun } from '../../api/analysisTypes';
import type { IView } from '../timeline/projection';

/**
 * Two runs on one time axis: times are counted from each run's cells' start (the first
 * enter of a cell region; Score-P's trace begins with the interpreter's start-up), so the
 * same code lines up. `range` is the union of both runs' ranges on that axis, `initial`
 * the view that shows both runs' cells.
 */
export interface ISharedAxis {
  offsetA: number;
  offsetB: number;
  range: [number, number];
  initial: IView;
}

export function sharedAxis(a: ICompareRun, b: ICompareRun): ISharedAxis {
  const offsetA = a.cell_span?.[0] ?? 0;
  const offsetB = b.cell_span?.[0] ?? 0;
  const ra = a.range ?? [0, 1];
  const rb = b.range ?? [0, 1];
  const range: [number, number] = [
    Math.min(ra[0] - offsetA, rb[0] - offsetB),
    Math.max(ra[1] - offsetA, rb[1] - offsetB, 1)
  ];
  let initial: IView = { t0: range[0], t1: range[1] };
  if (a.cell_span && b.cell_span) {
    const end = Math.max(a.cell_span[1] - offsetA, b.cell_span[1] - offsetB, 1);
    initial = { t0: 0, t1: end };
  }
  return { offsetA, offsetB, range, initial };
}

/** A view on the shared axis as the view of the run with `offset`, and back. */
export function toRun(view: IView, offset: number): IView {
  return { t0: view.t0 + offset, t1: view.t1 + offset };
}

export function fromRun(view: IView, offset: number): IView {
  return { t0: view.t0 - offset, t1: view.t1 - offset };
}
