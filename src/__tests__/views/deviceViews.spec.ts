import type { IDeviceAnalysis } from '../../api/analysisTypes';
import {
  formatRate,
  renderDeviceSummary,
  shares
} from '../../views/summary/deviceSummary';
import {
  laneAt,
  LaunchLinks,
  spanPoint
} from '../../views/timeline/launchLinks';
import { emptyDrawList, layoutLanes } from '../../views/timeline/projection';

const A: IDeviceAnalysis = {
  cell_s: 0.015,
  busy_s: 0.003,
  busy_pct: 20,
  idle_s: 0.012,
  idle_pct: 80,
  idle_pct_of_span: 72,
  idle_by_cause: { input: 0.011, sync: 0.0005, host: 0.0005, other: 0 },
  idle_by_cause_pct: { input: 73.3, sync: 3.3, host: 3.4, other: 0 },
  input_pipeline_s: 0.011,
  input_pipeline_pct: 73.3,
  host_sync_s: 0.002,
  overlap_s: 0.001,
  overlap_pct_of_busy: 33.3,
  streams: [
    {
      location: 1,
      name: 'CUDA[0:7]',
      group: 'CUDA Context 0',
      busy_s: 0.003,
      activities: 24
    }
  ],
  kernels: 15,
  linked: 24,
  top_kernels: [
    { name: 'volta_sgemm_128x64_nn', device_s: 0.0027, count: 9, pct: 87.6 }
  ],
  top_operators: [
    { name: 'aten::mm', device_s: 0.0018, activities: 6, pct: 58.4 }
  ],
  memcpy: {
    HtoD: { count: 3, bytes: 786432, seconds: 0.00012, rate_gb_s: 6.55 }
  },
  memset: { count: 3, seconds: 0.000015 },
  verdict: { kind: 'gpu', level: 'warning', text: 'GPU idle 80 %' }
};

describe('device summary', () => {
  it('splits the cell into busy and the idle causes', () => {
    const s = shares(A);
    expect(s.map(p => p.key)).toEqual([
      'busy',
      'input',
      'sync',
      'host',
      'other'
    ]);
    expect(s.reduce((t, p) => t + p.pct, 0)).toBeCloseTo(100, 0);
  });

  it('renders the bar, the kernels, the operators and the copies', () => {
    const node = renderDeviceSummary(A);
    expect(node.querySelector('h3')?.textContent).toContain('busy 20 %');
    expect(node.querySelector('h3')?.textContent).toContain('CUDA[0:7]');
    const bar = node.querySelector('.jp-scorep-device-bar')!;
    // 'other' is 0 %: no segment for it
    expect(bar.children.length).toBe(4);
    expect(bar.getAttribute('aria-label')).toContain(
      'idle: input pipeline 73 %'
    );
    const tables = node.querySelectorAll('table');
    expect(tables.length).toBe(3);
    expect(tables[0].textContent).toContain('volta_sgemm_128x64_nn');
    expect(tables[1].textContent).toContain('aten::mm');
    expect(tables[2].textContent).toContain('memcpy HtoD');
    expect(tables[2].textContent).toContain('6.55 GB/s');
  });
});

describe('copy rates', () => {
  it('says GB/s, or MB/s for small copies', () => {
    expect(formatRate(6.5536)).toBe('6.55 GB/s');
    expect(formatRate(0.002)).toBe('2.00 MB/s');
    expect(formatRate(0.25)).toBe('250 MB/s');
    expect(formatRate(null)).toBe('–');
  });
});

describe('launch links', () => {
  const layout = layoutLanes([
    { id: 0, name: 'Master thread', max_depth: 3 },
    { id: 1, name: 'CUDA[0:7]', max_depth: 0 }
  ]);

  it('finds the lane of a row and the point of a span', () => {
    expect(laneAt(layout, layout.lanes[0].y + 1)?.id).toBe(0);
    expect(laneAt(layout, layout.lanes[1].y + 1)?.id).toBe(1);
    const list = emptyDrawList(1);
    list.n = 1;
    list.start[0] = 500;
    list.x[0] = 42;
    list.y[0] = layout.lanes[1].y;
    const view = { t0: 0, t1: 1000 };
    expect(spanPoint(list, layout, view, 100, 1, 500)).toEqual({
      x: 42,
      y: layout.lanes[1].y + layout.rowHeight / 2
    });
    // not drawn: by time, on the lane's first row
    expect(spanPoint(list, layout, view, 100, 0, 250)?.x).toBe(25);
  });

  it('draws a line to each link of the selected span', async () => {
    const links = new LaunchLinks(async (location, start) =>
      location === 1 && start === 500
        ? [
            {
              correlation: 7,
              location: 0,
              start: 400,
              end: 450,
              kind: 'launch' as const
            }
          ]
        : []
    );
    const list = emptyDrawList(0);
    const view = { t0: 0, t1: 1000 };
    await links.select({ location: 1, start: 500, end: 600 }, () => undefined);
    links.place(list, layout, view, 100, 20, layout.height);
    expect(links.svg.dataset.links).toBe('1');
    expect(links.svg.querySelectorAll('path').length).toBe(1);
    expect(links.status.textContent).toContain('correlation 7');
    await links.select(null, () => undefined);
    links.place(list, layout, view, 100, 20, layout.height);
    expect(links.svg.dataset.links).toBe('0');
  });
});
