import {
  claimGroups,
  contrast,
  currentTheme,
  groupColor,
  hashString,
  paletteIndex,
  PALETTE_HUES,
  PALETTE_SIZE,
  parseRgb,
  SERIES_COLORS,
  seriesColor,
  ThemeKind
} from '../../util/colors';

type ColorsModule = typeof import('../../util/colors');

/** A fresh copy of the colours module, as a new browser session would load it. */
function freshColors(): ColorsModule {
  let mod: ColorsModule | undefined;
  jest.isolateModules(() => {
    mod = jest.requireActual<ColorsModule>('../../util/colors');
  });
  return mod!;
}

const THEMES: ThemeKind[] = ['light', 'dark'];

/** CIE L*a*b* of an sRGB colour (D65). */
function lab(c: number[]): number[] {
  const lin = (v: number) => {
    const s = v / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const [r, g, b] = c.map(lin);
  const xyz = [
    (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
    0.2126 * r + 0.7152 * g + 0.0722 * b,
    (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
  ].map(t => (t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116));
  return [116 * xyz[1] - 16, 500 * (xyz[0] - xyz[1]), 200 * (xyz[1] - xyz[2])];
}

function deltaE(a: string, b: string): number {
  const [x, y] = [lab(parseRgb(a)), lab(parseRgb(b))];
  return Math.hypot(x[0] - y[0], x[1] - y[1], x[2] - y[2]);
}

function hueOf(c: number[]): number {
  const [r, g, b] = c.map(v => v / 255);
  const max = Math.max(r, g, b);
  const d = max - Math.min(r, g, b);
  const h =
    max === r
      ? ((g - b) / d) % 6
      : max === g
        ? (b - r) / d + 2
        : (r - g) / d + 4;
  return (h * 60 + 360) % 360;
}

/** Groups that hash to the given slots, found by counting up (module_0, module_1, ...). */
function groupsInSlot(slot: number, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    if (paletteIndex(`module_${i}`) === slot) {
      out.push(`module_${i}`);
    }
  }
  return out;
}

// a cell's run as issue 21 saw it: 17 modules
const SEVENTEEN = [
  '__main__', 'cell', 'numpy', 'builtins', 'json', 're', 'os', 'posixpath', 'threading',
  'collections', 'functools', 'pandas', 'scipy', 'typing', 'abc', 'enum', 'importlib'
]; // prettier-ignore

describe('group colours', () => {
  it('are the same for the same group whatever the order groups are seen in', () => {
    // two separate module instances (two sessions), fed the groups in opposite orders: an
    // implementation that hands out colours in order of appearance fails here
    const a = freshColors();
    const b = freshColors();
    const first = new Map(
      SEVENTEEN.map(g => [g, a.groupColor(g, 'light').fill])
    );
    const second = new Map(
      [...SEVENTEEN].reverse().map(g => [g, b.groupColor(g, 'light').fill])
    );
    expect(second).toEqual(first);
    // and claimed as a set, in either order: the same colours again
    const c = freshColors();
    const d = freshColors();
    c.claimGroups(SEVENTEEN);
    d.claimGroups([...SEVENTEEN].reverse());
    for (const g of SEVENTEEN) {
      expect(d.groupColor(g, 'dark')).toEqual(c.groupColor(g, 'dark'));
    }
  });

  it('give the 17 modules of one run 17 different colours, far apart', () => {
    const m = freshColors();
    m.claimGroups(SEVENTEEN);
    for (const theme of THEMES) {
      const fills = SEVENTEEN.map(g => m.groupColor(g, theme).fill);
      expect(new Set(fills).size).toBe(SEVENTEEN.length);
      let closest = Infinity;
      for (let i = 0; i < fills.length; i++) {
        for (let j = i + 1; j < fills.length; j++) {
          closest = Math.min(closest, deltaE(fills[i], fills[j]));
        }
      }
      // ΔE*ab of 10 is a difference seen at a glance, side by side
      expect(closest).toBeGreaterThan(10);
    }
  });

  it('has no two palette slots alike, in either theme', () => {
    for (const theme of THEMES) {
      const m = freshColors();
      const fills = Array.from({ length: PALETTE_SIZE }, (_, slot) => {
        const [g] = groupsInSlot(slot, 1);
        return m.groupColor(g, theme).fill;
      });
      for (let i = 0; i < fills.length; i++) {
        for (let j = i + 1; j < fills.length; j++) {
          expect(deltaE(fills[i], fills[j])).toBeGreaterThan(10);
        }
      }
    }
  });

  it('keep the text readable on every fill in both themes (WCAG 4.5:1)', () => {
    for (const theme of THEMES) {
      for (let slot = 0; slot < PALETTE_SIZE; slot++) {
        const [g] = groupsInSlot(slot, 1);
        const c = groupColor(g, theme);
        expect(
          contrast(parseRgb(c.fill), parseRgb(c.text))
        ).toBeGreaterThanOrEqual(4.5);
      }
    }
  });

  it('keep the hue across themes, lighter fills on the light theme', () => {
    for (const g of ['__main__', 'json', 'pandas.core.frame', 'numpy']) {
      const light = parseRgb(groupColor(g, 'light').fill);
      const dark = parseRgb(groupColor(g, 'dark').fill);
      expect(Math.abs(hueOf(light) - hueOf(dark))).toBeLessThan(6);
      expect(Math.max(...light)).toBeGreaterThan(Math.max(...dark));
    }
  });

  it('give a claimed group whose slot is taken the next free one, and keep claims', () => {
    const m = freshColors();
    const [x, y] = groupsInSlot(5, 2).sort();
    m.claimGroups([y, x]);
    // x sorts first: its own slot; y the next one
    expect(m.groupColor(x, 'light')).toEqual(
      groupColor(groupsInSlot(5, 1)[0], 'light')
    );
    expect(m.groupColor(y, 'light')).toEqual(
      groupColor(groupsInSlot(6, 1)[0], 'light')
    );
    // a later view's claim changes nothing already claimed
    m.claimGroups([...groupsInSlot(6, 3), x]);
    expect(m.groupColor(y, 'light')).toEqual(
      groupColor(groupsInSlot(6, 1)[0], 'light')
    );
  });

  it('are fixed across sessions and releases (pinned values)', () => {
    expect(groupColor('__main__', 'light')).toEqual({
      fill: 'rgb(124, 157, 224)',
      text: 'rgb(17, 17, 17)'
    });
    expect(groupColor('__main__', 'dark').fill).toBe('rgb(37, 77, 156)');
    expect(groupColor('cell', 'light').fill).toBe('rgb(214, 141, 78)');
    expect(groupColor('numpy', 'dark').fill).toBe('rgb(22, 93, 33)');
  });

  it('give the notebook itself and common modules fixed, distinct hues', () => {
    expect(PALETTE_HUES[paletteIndex('__main__') % 10]).toBe(220);
    expect(PALETTE_HUES[paletteIndex('cell') % 10]).toBe(28);
    expect(PALETTE_HUES[paletteIndex('numpy') % 10]).toBe(130);
    expect(PALETTE_HUES[paletteIndex('builtins') % 10]).toBe(48);
  });

  it('spread many groups over the whole palette', () => {
    const used = new Set<number>();
    for (let i = 0; i < 400; i++) {
      const idx = paletteIndex(`module_${i}`);
      expect(idx).toBeGreaterThanOrEqual(0);
      expect(idx).toBeLessThan(PALETTE_SIZE);
      used.add(idx);
    }
    expect(used.size).toBe(PALETTE_SIZE);
  });

  it('hash with FNV-1a 32-bit (published test vectors)', () => {
    expect(hashString('')).toBe(0x811c9dc5);
    expect(hashString('a')).toBe(0xe40c292c);
    expect(hashString('foobar')).toBe(0xbf9cf968);
  });

  it('follow the theme JupyterLab sets on the body', () => {
    document.body.dataset.jpThemeLight = 'false';
    expect(currentTheme()).toBe('dark');
    document.body.dataset.jpThemeLight = 'true';
    expect(currentTheme()).toBe('light');
    delete document.body.dataset.jpThemeLight;
    expect(currentTheme()).toBe('light');
  });
});

// the claims of this file's own module instance (the tests above use fresh ones)
claimGroups([]);

describe("A chart's series colours", () => {
  // the themes' chart backgrounds (--jp-layout-color0 of JupyterLab's light and dark)
  const BACKGROUND: Record<ThemeKind, number[]> = {
    light: [255, 255, 255],
    dark: [17, 17, 17]
  };

  it.each(THEMES)(
    'differ from each other at a glance and read as legend text (%s)',
    theme => {
      const colors = SERIES_COLORS[theme];
      expect(colors.length).toBe(6);
      for (let i = 0; i < colors.length; i++) {
        expect(
          contrast(parseRgb(colors[i]), BACKGROUND[theme])
        ).toBeGreaterThanOrEqual(5);
        for (let j = i + 1; j < colors.length; j++) {
          expect(deltaE(colors[i], colors[j])).toBeGreaterThan(30);
        }
      }
    }
  );

  it('come in order and repeat after six, whatever modules were claimed', () => {
    claimGroups(['cpu', 'memory', 'io', 'network']);
    expect(seriesColor(0, 'light')).toBe(SERIES_COLORS.light[0]);
    expect(seriesColor(1, 'dark')).toBe(SERIES_COLORS.dark[1]);
    expect(seriesColor(6, 'light')).toBe(SERIES_COLORS.light[0]);
  });
});
