import type { IMetricSeries } from '../../../api/traceTypes';
import { SERIES_COLORS, ThemeKind } from '../../../util/colors';
import { drawChart } from '../../../views/metrics/chart';

/** A 2D context that records the colour each text and line is drawn in. */
function recordingCanvas(): {
  canvas: HTMLCanvasElement;
  texts: [string, string][];
  strokes: string[];
} {
  const texts: [string, string][] = [];
  const strokes: string[] = [];
  const state: Record<string, unknown> = {};
  const ctx = new Proxy(state, {
    get(target, prop: string) {
      if (prop === 'fillText') {
        return (text: string) => texts.push([text, String(target.fillStyle)]);
      }
      if (prop === 'stroke') {
        return () => strokes.push(String(target.strokeStyle));
      }
      if (prop === 'measureText') {
        return (text: string) => ({ width: text.length * 6 });
      }
      if (prop in target) {
        return target[prop];
      }
      return () => undefined;
    },
    set(target, prop: string, value) {
      target[prop] = value;
      return true;
    }
  });
  const canvas = document.createElement('canvas');
  canvas.getContext = (() => ctx) as unknown as HTMLCanvasElement['getContext'];
  return { canvas, texts, strokes };
}

function series(key: string, label: string): IMetricSeries {
  return {
    key,
    label,
    unit: '%',
    group: 'cpu',
    t: [0, 100],
    mean: [40, 60],
    min: [30, 50],
    max: [50, 70]
  };
}

describe('A metric chart', () => {
  it.each<ThemeKind>(['light', 'dark'])(
    'draws each series and its legend text in its own colour (%s)',
    theme => {
      const { canvas, texts, strokes } = recordingCanvas();
      const all = [
        series('cpu.total', 'CPU total'),
        series('cpu.0', 'CPU core 0'),
        series('cpu.1', 'CPU core 1')
      ];
      const steps = all.map(() => [
        { t0: 0, t1: 100, value: 40 },
        { t0: 100, t1: 200, value: 60 }
      ]);
      drawChart(canvas, all, steps, {
        theme,
        bg: '#fff',
        grid: '#ccc',
        text: '#666',
        font: 'sans-serif',
        width: 400,
        view: { t0: 0, t1: 200 },
        hoverT: null
      });
      const legend = new Map(texts);
      expect(legend.get('CPU total')).toBe(SERIES_COLORS[theme][0]);
      expect(legend.get('· CPU core 0')).toBe(SERIES_COLORS[theme][1]);
      expect(legend.get('· CPU core 1')).toBe(SERIES_COLORS[theme][2]);
      // every series' line is stroked in its legend's colour
      for (const color of SERIES_COLORS[theme].slice(0, 3)) {
        expect(strokes).toContain(color);
      }
    }
  );
});
