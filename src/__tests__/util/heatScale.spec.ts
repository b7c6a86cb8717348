import {
  heatColor,
  heatGradient,
  heatLegend,
  heatRgba
} from '../../util/heatScale';

describe('heatColor', () => {
  it('runs from the background to the darkest stop in light theme', () => {
    expect(heatColor(0, 'mpi', 'light')).toEqual([245, 245, 245]);
    expect(heatColor(255, 'mpi', 'light')).toEqual([127, 39, 4]);
    // between stops: linear (85 of 255 is the second stop)
    expect(heatColor(85, 'mpi', 'light')).toEqual([253, 208, 162]);
    // out of range clamps
    expect(heatColor(400, 'active', 'light')).toEqual(
      heatColor(255, 'active', 'light')
    );
  });

  it('runs from the dark background to the lightest stop in dark theme', () => {
    expect(heatColor(0, 'mpi', 'dark')).toEqual([35, 35, 35]);
    expect(heatColor(255, 'mpi', 'dark')).toEqual([253, 208, 162]);
  });

  it('grows monotonically in darkness (light theme)', () => {
    const lum = (c: number[]): number => c[0] + c[1] + c[2];
    let last = Infinity;
    for (let v = 0; v <= 255; v += 5) {
      const l = lum(heatColor(v, 'active', 'light'));
      expect(l).toBeLessThanOrEqual(last);
      last = l;
    }
  });
});

describe('heatRgba', () => {
  it('colours each value and leaves negative ones transparent', () => {
    const px = heatRgba([0, 255, -1, NaN, 85], 5, 'mpi', 'light');
    expect([...px.slice(0, 4)]).toEqual([245, 245, 245, 255]);
    expect([...px.slice(4, 8)]).toEqual([127, 39, 4, 255]);
    expect([...px.slice(8, 16)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect([...px.slice(16, 20)]).toEqual([253, 208, 162, 255]);
  });

  it('fills n pixels, the missing values transparent', () => {
    const px = heatRgba([255], 3, 'active', 'dark');
    expect(px.length).toBe(12);
    expect([...px.slice(0, 4)]).toEqual([
      ...heatColor(255, 'active', 'dark'),
      255
    ]);
    expect(px[7]).toBe(0);
  });
});

describe('heatLegend', () => {
  it('labels both ends and runs the ramp from its first value to the top', () => {
    const legend = heatLegend({
      measure: 'active',
      theme: 'light',
      from: 0.15 * 255,
      low: '1 B',
      high: '4 KiB per cell (log scale)',
      label: 'Colour scale (logarithmic)'
    });
    expect(legend.textContent).toBe('1 B4 KiB per cell (log scale)');
    expect(legend.getAttribute('role')).toBe('img');
    expect(legend.getAttribute('aria-label')).toBe(
      'Colour scale (logarithmic)'
    );
    expect(legend.querySelector('.jp-scorep-heatbar-ramp')).not.toBeNull();
  });
});

describe('heatGradient', () => {
  it('runs from its first value to the top in five stops', () => {
    const css = (v: number): string => {
      const [r, g, b] = heatColor(v, 'active', 'light');
      return `rgb(${r}, ${g}, ${b})`;
    };
    const g = heatGradient('active', 'light', 0.15 * 255);
    expect(g.startsWith('linear-gradient(to right, ')).toBe(true);
    expect(g).toContain(`${css(0.15 * 255)} 0%`);
    expect(g).toContain(`${css(0.15 * 255 + 0.5 * 0.85 * 255)} 50%`);
    expect(g).toContain(`${css(255)} 100%`);
    expect(g.match(/%/g)).toHaveLength(5);
    expect(heatGradient('mpi', 'dark')).toContain(`rgb(35, 35, 35) 0%`);
  });
});
