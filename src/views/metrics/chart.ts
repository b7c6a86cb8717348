/**
 * Drawing one metric chart on a canvas: the y axis with its unit (bottom, middle and top
 * ticks, labelled at the right), each series as steps (see scale.ts), the legend, and the
 * hover line where the pointer is.
 */
import type { IMetricSeries } from '../../api/traceTypes';
import { hiDpiContext, seriesColor } from '../../util/colors';
import type { IView } from '../timeline/projection';
import { IStep, tickLabels, yRange } from './scale';

export const CHART_HEIGHT = 64;
/** room above the plot for the legend */
const TOP = 13;
const BOTTOM = 2;

export interface IChartStyle {
  theme: 'light' | 'dark';
  bg: string;
  grid: string;
  text: string;
  font: string;
  width: number;
  view: IView;
  /** the time under the pointer (ns since the run's start), or null */
  hoverT: number | null;
}

export function drawChart(
  canvas: HTMLCanvasElement,
  series: IMetricSeries[],
  steps: IStep[][],
  c: IChartStyle
): void {
  const width = c.width;
  const height = CHART_HEIGHT;
  const ctx = hiDpiContext(canvas, width, height);
  if (!ctx) {
    return;
  }
  ctx.fillStyle = c.bg;
  ctx.fillRect(0, 0, width, height);
  ctx.strokeStyle = c.grid;
  ctx.strokeRect(0.5, 0.5, width - 1, height - 1);
  // one y scale per chart, in the first series' unit
  const unit = series[0].unit;
  const same = series
    .map((s, i) => ({ s, steps: steps[i] ?? [] }))
    .filter(e => e.s.unit === unit);
  const range = yRange(
    same.flatMap(e => [...e.s.min, ...e.s.max, ...e.s.mean]),
    unit
  );
  const span = Math.max(1, c.view.t1 - c.view.t0);
  const x = (t: number) => ((t - c.view.t0) / span) * width;
  const plotH = height - TOP - BOTTOM;
  const y = (v: number) =>
    height - BOTTOM - ((v - range.lo) / (range.hi - range.lo)) * plotH;
  // the middle tick as a dotted grid line
  ctx.setLineDash([2, 3]);
  ctx.beginPath();
  const mid = Math.round(y(range.ticks[1])) + 0.5;
  ctx.moveTo(0, mid);
  ctx.lineTo(width, mid);
  ctx.stroke();
  ctx.setLineDash([]);
  same.forEach(({ s, steps: st }, i) => {
    // the total first and strongest; per-core and secondary series lighter
    const color = seriesColor(i, c.theme);
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = i === 0 ? 1.5 : 1;
    ctx.globalAlpha = i === 0 ? 1 : 0.8;
    ctx.beginPath();
    let last: IStep | null = null;
    for (const step of st) {
      const x0 = x(step.t0);
      const x1 = x(step.t1);
      if (x1 < -1 || x0 > width + 1) {
        last = step;
        continue;
      }
      const yv = y(step.value);
      if (last && last.t1 === step.t0) {
        ctx.lineTo(x0, yv);
      } else {
        ctx.moveTo(x0, yv);
      }
      ctx.lineTo(x1, yv);
      last = step;
    }
    ctx.stroke();
    if (i === 0) {
      // the total's area, faint, down to the axis
      ctx.globalAlpha = 0.12;
      for (const step of st) {
        const x0 = Math.max(0, x(step.t0));
        const x1 = Math.min(width, x(step.t1));
        if (x1 > x0) {
          const yv = y(step.value);
          ctx.fillRect(x0, yv, x1 - x0, height - BOTTOM - yv);
        }
      }
    }
    ctx.globalAlpha = 1;
  });
  ctx.font = `10px ${c.font}`;
  ctx.textBaseline = 'top';
  // legend: each series' label in its line colour
  let lx = 4;
  same.slice(0, 6).forEach(({ s }, i) => {
    const label = i === 0 ? s.label : `· ${s.label}`;
    ctx.fillStyle = seriesColor(i, c.theme);
    ctx.fillText(label, lx, 2);
    lx += ctx.measureText(label).width + 6;
  });
  ctx.fillStyle = c.text;
  if (same.length > 6) {
    ctx.fillText(`+${same.length - 6}`, lx, 2);
  }
  // the axis: bottom, middle and top values in the unit, at the right edge
  const labels = tickLabels(range, unit);
  const put = (text: string, yy: number, baseline: CanvasTextBaseline) => {
    ctx.textBaseline = baseline;
    const w = ctx.measureText(text).width;
    ctx.fillStyle = c.bg;
    ctx.globalAlpha = 0.75;
    const top =
      baseline === 'top' ? yy : baseline === 'middle' ? yy - 6 : yy - 11;
    ctx.fillRect(width - w - 6, top, w + 4, 11);
    ctx.globalAlpha = 1;
    ctx.fillStyle = c.text;
    ctx.fillText(text, width - w - 4, yy);
  };
  put(labels[2], 2, 'top');
  put(labels[1], mid, 'middle');
  put(labels[0], height - BOTTOM, 'bottom');
  if (c.hoverT !== null) {
    const hx = Math.round(x(c.hoverT)) + 0.5;
    ctx.strokeStyle = c.text;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(hx, TOP);
    ctx.lineTo(hx, height - BOTTOM);
    ctx.stroke();
  }
}
