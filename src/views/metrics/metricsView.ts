/**
 * System metrics (CPU, memory, I/O, network, GPU) as canvas charts on the timeline's time axis.
 * Each chart follows the timeline's view; the data for the view is fetched (one request in flight,
 * the newest view next) with width = plot px, so the server returns at most one bucket (mean,
 * min, max) per pixel.
 */
import { Widget } from '@lumino/widgets';
import type { IMetricSeries, IMetrics } from '../../api/traceTypes';
import { cssVar, currentTheme, observeTheme } from '../../util/colors';
import { el } from '../../util/dom';
import type { IView } from '../timeline/projection';
import { IWindowRequest, WindowFetcher } from '../timeline/fetcher';
import { formatSeconds } from '../../util/timeaxis';
import { drawChart } from './chart';
import { formatValue } from './format';
import { IStep, sampleSteps, shortRunNote, stepAt } from './scale';

const GROUPS: { key: string; title: string }[] = [
  { key: 'cpu', title: 'CPU' },
  { key: 'memory', title: 'Memory' },
  { key: 'io', title: 'I/O' },
  { key: 'network', title: 'Network' },
  { key: 'gpu', title: 'GPU' }
];

export type MetricsLoader = (
  request: IWindowRequest,
  signal: AbortSignal
) => Promise<IMetrics>;

/** One chart: a group's series, or (for amounts in bytes) one series of a group. */
interface IChart {
  key: string;
  title: string;
  series: IMetricSeries[];
}

/**
 * The charts for the data: one per group, except that each series of bytes (memory: the
 * process tree's RSS, the machine's memory in use) gets its own chart and its own range,
 * as Perfetto gives each counter its own track: on one scale the machine's GiB flatten the
 * process's growth.
 */
export function chartsOf(series: IMetricSeries[]): IChart[] {
  const charts: IChart[] = [];
  for (const g of GROUPS) {
    const own = series.filter(s => s.group === g.key);
    if (own.length === 0) {
      continue;
    }
    if (['bytes', 'B'].includes(own[0].unit.trim())) {
      own.forEach((s, i) =>
        charts.push({
          key: i === 0 ? g.key : `${g.key}:${s.key}`,
          title: i === 0 ? g.title : s.label,
          series: [s]
        })
      );
    } else {
      charts.push({ key: g.key, title: g.title, series: own });
    }
  }
  return charts;
}

export class MetricsView extends Widget {
  constructor(load: MetricsLoader) {
    super();
    this.addClass('jp-scorep-metrics');
    this.notes = el('div', 'jp-scorep-metrics-notes');
    this.readout = el('div', 'jp-scorep-metric-readout');
    this.readout.hidden = true;
    this.fetcher = new WindowFetcher<IMetrics>(
      load,
      data => {
        this.data = data;
        this.render();
      },
      error => {
        this.notes.textContent = `Metrics: ${error.message}`;
      }
    );
    this.node.append(this.notes, this.readout);
    this.themeObserver = observeTheme(() => this.render());
  }

  /** Follow the timeline: redraw now with what we have, fetch the new window shortly. */
  setView(view: IView, width: number): void {
    if (this.runNs === null && view.t1 > view.t0) {
      // the first view is the whole run: its length is the run's
      this.runNs = view.t1 - view.t0;
    }
    this.view = view;
    this.width = width;
    this.render();
    if (width > 0) {
      this.fetcher.request(metricsWindow(view, width));
    }
  }

  dispose(): void {
    this.fetcher.dispose();
    this.themeObserver.disconnect();
    super.dispose();
  }

  private render(): void {
    const data = this.data;
    if (!data || this.width <= 0) {
      return;
    }
    const charts = chartsOf(data.series);
    if (this.shortNote === undefined) {
      // decided once, on the first answer (the whole run): too few samples to chart
      const samples = Math.max(0, ...data.series.map(s => s.t.length));
      const values = charts.map(c => {
        const s = c.series[0];
        return `${s.label} ${formatValue(s.mean[0] ?? NaN, s.unit)}`;
      });
      this.shortNote = shortRunNote(
        samples,
        this.runNs ?? 0,
        data.interval_s,
        values
      );
    }
    const notes = [...(this.shortNote ? [this.shortNote] : []), ...data.notes];
    this.notes.textContent = notes.join(' ');
    this.notes.hidden = notes.length === 0;
    for (const row of this.rows.values()) {
      row.row.hidden = true;
    }
    if (this.shortNote) {
      return;
    }
    const style = {
      theme: currentTheme(),
      bg: cssVar('--jp-layout-color0', '#fff', this.node),
      grid: cssVar('--jp-border-color2', '#ccc', this.node),
      text: cssVar('--jp-ui-font-color2', '#666', this.node),
      font: cssVar('--jp-ui-font-family', 'sans-serif', this.node)
    };
    // the kernel's sampler (it has an interval): from the window's start (scale.ts)
    const from = data.interval_s ? data.window[0] : null;
    for (const chart of charts) {
      const entry = this.row(chart);
      entry.row.hidden = false;
      const steps = chart.series.map(s => sampleSteps(s.t, s.mean, from));
      this.steps.set(chart.key, steps);
      drawChart(entry.canvas, chart.series, steps, {
        ...style,
        width: this.width,
        view: this.view,
        hoverT: this.hoverT
      });
      const words = chart.series
        .map(s => `${s.label}: ${formatValue(mean(s.mean), s.unit)} mean`)
        .join(', ');
      entry.canvas.setAttribute(
        'aria-label',
        `${chart.title} over time. ${words}`
      );
      entry.label.title = words;
    }
  }

  /** The row of a chart, made on first use, in the order the charts come. */
  private row(chart: IChart): IMetricRow {
    let entry = this.rows.get(chart.key);
    if (!entry) {
      entry = metricRow(chart.key, chart.title);
      this.node.insertBefore(entry.row, this.notes);
      this.rows.set(chart.key, entry);
      const canvas = entry.canvas;
      canvas.addEventListener('mousemove', e =>
        this.hover(e, canvas, chart.key)
      );
      canvas.addEventListener('mouseleave', () => {
        this.hoverT = null;
        this.readout.hidden = true;
        this.render();
      });
    }
    return entry;
  }

  /** The values under the pointer, as Perfetto's counter tracks show them. */
  private hover(e: MouseEvent, canvas: HTMLCanvasElement, key: string): void {
    const box = canvas.getBoundingClientRect();
    const x = e.clientX - box.left;
    const span = this.view.t1 - this.view.t0;
    this.hoverT = this.view.t0 + (x / Math.max(1, box.width)) * span;
    const chart = chartsOf(this.data?.series ?? []).find(c => c.key === key);
    const steps = this.steps.get(key) ?? [];
    const parts = (chart?.series ?? []).slice(0, 4).map((s, i) => {
      const step = stepAt(steps[i] ?? [], this.hoverT!);
      return `${s.label} ${step ? formatValue(step.value, s.unit) : '–'}`;
    });
    const more = (chart?.series.length ?? 0) - 4;
    this.readout.textContent =
      `${formatSeconds(this.hoverT / 1e9)}: ${parts.join(' · ')}` +
      (more > 0 ? ` · +${more}` : '');
    this.readout.hidden = false;
    const host = this.node.getBoundingClientRect();
    this.readout.style.top = `${box.top - host.top + box.height + 2}px`;
    this.readout.style.left = `${Math.max(0, Math.min(x + box.left - host.left, host.width - 260))}px`;
    this.render();
  }

  private data: IMetrics | null = null;
  private view: IView = { t0: 0, t1: 1 };
  private width = 0;
  private runNs: number | null = null;
  private shortNote: string | null | undefined = undefined;
  private hoverT: number | null = null;
  private readonly steps = new Map<string, IStep[][]>();
  private readonly rows = new Map<string, IMetricRow>();
  private readonly notes: HTMLDivElement;
  private readonly readout: HTMLDivElement;
  private readonly fetcher: WindowFetcher<IMetrics>;
  private readonly themeObserver: MutationObserver;
}

/**
 * The window to ask for: the view plus a margin on both sides, so that a view narrower than
 * the sampling interval still has the samples around it and the lines run through the chart
 * instead of leaving it empty. The width grows with the window to keep one point per pixel.
 */
/** One metric group's row: its label and its canvas (hidden until it has data). */
export interface IMetricRow {
  row: HTMLDivElement;
  canvas: HTMLCanvasElement;
  label: HTMLDivElement;
}

export function metricRow(key: string, title: string): IMetricRow {
  const row = el('div', 'jp-scorep-metric-row');
  row.dataset.group = key;
  row.hidden = true;
  const label = el('div', 'jp-scorep-metric-label', title);
  const canvas = el('canvas', 'jp-scorep-metric-canvas');
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', `${title} over time`);
  row.append(label, canvas);
  return { row, canvas, label };
}

export function metricsWindow(
  view: IView,
  width: number,
  minMarginNs = 250e6
): IWindowRequest {
  const span = Math.max(1, view.t1 - view.t0);
  const margin = Math.max(span * 0.5, minMarginNs);
  const t0 = Math.max(0, view.t0 - margin);
  const t1 = view.t1 + margin;
  const scaled = Math.round((width * (t1 - t0)) / span);
  return { t0, t1, width: Math.max(1, Math.min(scaled, 4 * width)) };
}

function mean(values: (number | null)[]): number {
  const finite = values.filter(
    (v): v is number => v !== null && Number.isFinite(v)
  );
  if (finite.length === 0) {
    return NaN;
  }
  return finite.reduce((a, b) => a + b, 0) / finite.length;
}
