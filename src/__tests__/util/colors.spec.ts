import {
  currentTheme,
  groupColor,
  hashString,
  paletteIndex,
  PALETTE_HUES
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

describe('group colours', () => {
  const groups = ['__main__', 'numpy', 'os.path', 'json', 'mymodule', 're'];

  it('are the same for the same group whatever the order groups are seen in', () => {
    // two separate module instances (two sessions), fed the groups in opposite orders: an
    // implementation that hands out colours in order of appearance fails here
    const a = freshColors();
    const b = freshColors();
    const first = new Map(groups.map(g => [g, a.groupColor(g, 'light').fill]));
    const second = new Map(
      [...groups].reverse().map(g => [g, b.groupColor(g, 'light').fill])
    );
    for (const g of groups) {
      expect(second.get(g)).toBe(first.get(g));
    }
    // and the colours differ between groups (not one colour for all)
    expect(new Set(first.values()).size).toBe(groups.length);
  });

  it('are fixed across sessions and releases (pinned values)', () => {
    // hue from the slot (fixed for well-known groups, else FNV-1a % 16), saturation and
    // lightness from the variant ((hash >>> 8) % 3)
    expect(groupColor('__main__', 'light')).toEqual({
      fill: 'hsl(210, 75%, 72%)',
      text: '#111111',
      line: 'hsl(210, 85%, 38%)'
    });
    expect(groupColor('__main__', 'dark')).toEqual({
      fill: 'hsl(210, 75%, 50%)',
      text: '#f5f5f5',
      line: 'hsl(210, 85%, 68%)'
    });
    expect(groupColor('numpy', 'light').fill).toBe('hsl(120, 55%, 62%)');
    expect(groupColor('json', 'light').fill).toBe('hsl(0, 75%, 72%)');
    expect(groupColor('mymodule', 'light').fill).toBe('hsl(285, 55%, 62%)');
    expect(groupColor('mymodule', 'dark').fill).toBe('hsl(285, 55%, 42%)');
  });

  it('keep the hue across themes and change only lightness', () => {
    const parts = (s: string) => s.match(/^hsl\((\d+), (\d+)%, (\d+)%\)$/)!;
    for (const g of ['__main__', 'json', 'pandas.core.frame']) {
      const [, hl, sl, ll] = parts(groupColor(g, 'light').fill);
      const [, hd, sd, ld] = parts(groupColor(g, 'dark').fill);
      expect(hd).toBe(hl);
      expect(sd).toBe(sl);
      // lighter fills on the light theme, darker on the dark one
      expect(Number(ll)).toBeGreaterThan(Number(ld));
    }
  });

  it('give the notebook itself and common modules fixed, distinct hues', () => {
    expect(PALETTE_HUES[paletteIndex('__main__')]).toBe(210);
    expect(PALETTE_HUES[paletteIndex('cell')]).toBe(30);
    expect(PALETTE_HUES[paletteIndex('numpy')]).toBe(120);
    expect(PALETTE_HUES[paletteIndex('builtins')]).toBe(60);
  });

  it('tell apart two groups that share a slot by saturation and lightness', () => {
    // "re" hashes to slot 0, the slot of __main__
    expect(paletteIndex('re')).toBe(paletteIndex('__main__'));
    expect(groupColor('re', 'light').fill).toBe('hsl(210, 65%, 67%)');
    expect(groupColor('re', 'light').fill).not.toBe(
      groupColor('__main__', 'light').fill
    );
  });

  it('spread many groups over the whole palette', () => {
    const used = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const idx = paletteIndex(`module_${i}`);
      expect(idx).toBeGreaterThanOrEqual(0);
      expect(idx).toBeLessThan(PALETTE_HUES.length);
      used.add(idx);
    }
    expect(used.size).toBe(PALETTE_HUES.length);
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
