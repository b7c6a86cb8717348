/**
 * The function summary (Vampir's Function Summary): the run's functions ranked by exclusive
 * or inclusive time, optionally grouped by module, with visits and the mean time per visit.
 * Pure functions over GET summary's `functions`.
 */
import type { IFunctionStat } from '../../api/analysisTypes';

/** 'effective': what the user can speed up (running on any thread plus waiting on the
 * cell's thread; IFunctionStat.effective_s), where the run has the running/waiting split */
export type SummaryMetric = 'effective' | 'excl' | 'incl';

export function metricOf(f: IFunctionStat, metric: SummaryMetric): number {
  if (metric === 'effective') {
    return f.effective_s ?? f.excl_s;
  }
  return metric === 'excl' ? f.excl_s : f.incl_s;
}

/** Whether the run's functions carry the running/waiting split. */
export function hasSplit(functions: IFunctionStat[]): boolean {
  return functions.some(f => f.cpu_s !== null && f.cpu_s !== undefined);
}

/** "waited 230 ms"-like words where most of a function's own time was waiting. */
export function waitedShare(f: IFunctionStat): number {
  return f.wait_s !== null && f.wait_s !== undefined && f.excl_s > 0
    ? f.wait_s / f.excl_s
    : 0;
}

/** Mean time per visit of the chosen metric (0 without visits). */
export function meanTime(f: IFunctionStat, metric: SummaryMetric): number {
  return f.visits > 0 ? metricOf(f, metric) / f.visits : 0;
}

export interface IModuleGroup {
  module: string;
  /** the module's functions' summed exclusive time, or its largest inclusive time
   * (inclusive times of one module nest, so they are not summed) */
  total: number;
  functions: IFunctionStat[];
}

function byMetric(metric: SummaryMetric) {
  return (a: IFunctionStat, b: IFunctionStat) =>
    metricOf(b, metric) - metricOf(a, metric) || a.name.localeCompare(b.name);
}

/** Functions ranked by the metric, largest first. */
export function ranked(
  functions: IFunctionStat[],
  metric: SummaryMetric
): IFunctionStat[] {
  return [...functions].sort(byMetric(metric));
}

/** Functions grouped by module, the groups ranked by their total, each group's functions
 * by the metric. */
export function groupByModule(
  functions: IFunctionStat[],
  metric: SummaryMetric
): IModuleGroup[] {
  const groups = new Map<string, IFunctionStat[]>();
  for (const f of functions) {
    const list = groups.get(f.module);
    if (list) {
      list.push(f);
    } else {
      groups.set(f.module, [f]);
    }
  }
  const out: IModuleGroup[] = [];
  for (const [module, list] of groups) {
    list.sort(byMetric(metric));
    const values = list.map(f => metricOf(f, metric));
    const total =
      metric === 'incl'
        ? Math.max(0, ...values)
        : values.reduce((a, b) => a + b, 0);
    out.push({ module, total, functions: list });
  }
  return out.sort(
    (a, b) => b.total - a.total || a.module.localeCompare(b.module)
  );
}

/** A bar's length as a fraction of the largest value shown (0..1). */
export function barFraction(value: number, max: number): number {
  if (!(max > 0) || !(value > 0)) {
    return 0;
  }
  return Math.min(1, value / max);
}

/** Whether two region names mean the same region: a cell's region reads "cell [n]" under
 * both backends, ":cell [n]" in Score-P experiments written before the worker began it
 * through Score-P's user API. */
export function sameRegion(a: string, b: string): boolean {
  const norm = (s: string) => (/^:cell \[\d+\]$/.test(s) ? s.slice(1) : s);
  return norm(a) === norm(b);
}
