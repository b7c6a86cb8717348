import { groupColor, hashString, paletteIndex, PALETTE_HUES } from '../colors';

describe('group colours', () => {
  it('are the same for the same group whatever the order groups are seen in', () => {
    const groups = ['__main__', 'numpy', 'os.path', 'json', 'mymodule', 're'];
    const first = groups.map(g => groupColor(g, 'light').fill);
    const reversed = [...groups]
      .reverse()
      .map(g => groupColor(g, 'light').fill);
    expect(reversed.reverse()).toEqual(first);
  });
  it('keep the hue across themes and change only lightness', () => {
    for (const g of ['__main__', 'json', 'pandas.core.frame']) {
      const light = groupColor(g, 'light').fill;
      const dark = groupColor(g, 'dark').fill;
      expect(light).not.toEqual(dark);
      const hue = (s: string) => s.match(/hsl\((\d+)/)![1];
      expect(hue(light)).toEqual(hue(dark));
    }
  });
  it('give the notebook itself and common modules distinct fixed colours', () => {
    expect(paletteIndex('__main__')).not.toEqual(paletteIndex('numpy'));
    expect(paletteIndex('__main__')).not.toEqual(paletteIndex('builtins'));
  });
  it('spread many groups over the palette', () => {
    const used = new Set<number>();
    for (let i = 0; i < 200; i++) {
      used.add(paletteIndex(`module_${i}`));
    }
    expect(used.size).toBe(PALETTE_HUES.length);
  });
  it('hash with FNV-1a (known vector)', () => {
    expect(hashString('')).toBe(0x811c9dc5);
    expect(hashString('a')).toBe(0xe40c292c);
  });
});
