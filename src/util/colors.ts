/**
 * Colours for region groups (modules): a categorical palette of 20 colours, 10 hues spread
 * round the wheel in two tones, each at a fixed luminance per theme (so one text colour
 * stays readable on every fill: dark text on the light theme's fills, light text on the
 * dark theme's, at least 4.5:1) and the hue kept across themes.
 *
 * A group's colour is stable: its slot comes from a hash of its name (well-known groups
 * have fixed slots), not from the order groups are seen in. Where a view knows the groups
 * it shows (a run's modules), it claims them ({@link claimGroups}): groups whose slots
 * collide then take the next free slot, so up to 20 groups on screen never share a colour;
 * a claim holds for the page, so every view shows a group in the colour it got first.
 */

/** Hues spaced round the wheel (red, orange, amber, olive, green, teal, sky, blue, violet,
 * magenta); slot i has hue PALETTE_HUES[i % 10] and tone Math.floor(i / 10). */
export const PALETTE_HUES = [0, 28, 48, 80, 130, 170, 195, 220, 265, 318];
export const PALETTE_SIZE = PALETTE_HUES.length * 2;

/** WCAG relative luminance of each tone's fills, per theme: the light theme's dark text
 * (#111) on them reads at 7:1 and 11:1, the dark theme's light text (#f5f5f5) at 7.4:1 and
 * 4.6:1; the two tones of one hue differ clearly. */
const TONE_LUMINANCE: Record<ThemeKind, [number, number]> = {
  light: [0.34, 0.58],
  dark: [0.08, 0.16]
};
const TONE_SATURATION = [0.62, 0.5];

/** FNV-1a 32-bit hash of a string. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export type ThemeKind = 'light' | 'dark';

export interface IGroupColor {
  fill: string;
  /** text colour readable on `fill` */
  text: string;
}

const FIXED: Record<string, number> = {
  __main__: 7,
  cell: 1,
  numpy: 4,
  builtins: 2
};

/** The slot a group prefers: fixed for well-known groups, else its hash's. */
export function paletteIndex(group: string): number {
  if (group in FIXED) {
    return FIXED[group];
  }
  return hashString(group) % PALETTE_SIZE;
}

/** The page's claims: group -> slot (see the module doc). */
const claimed = new Map<string, number>();

/**
 * Claim slots for the groups a view shows: each unclaimed group takes its own slot when
 * no claimed group holds it, else the next free one (fixed groups first, then by name, so
 * the outcome depends on the set, not the order given). Groups claimed before keep theirs.
 */
export function claimGroups(groups: Iterable<string>): void {
  const fresh = [...new Set(groups)].filter(g => !claimed.has(g));
  fresh.sort(
    (a, b) =>
      Number(b in FIXED) - Number(a in FIXED) || (a < b ? -1 : a > b ? 1 : 0)
  );
  for (const g of fresh) {
    const taken = new Set(claimed.values());
    const own = paletteIndex(g);
    let slot = own;
    for (let k = 0; k < PALETTE_SIZE && taken.has(slot); k++) {
      slot = (own + k + 1) % PALETTE_SIZE;
    }
    claimed.set(g, taken.size >= PALETTE_SIZE ? own : slot);
  }
}

/** The slot a group is drawn with: its claim, else the one it prefers. */
export function groupSlot(group: string): number {
  return claimed.get(group) ?? paletteIndex(group);
}

/** The colour of a region group in the given theme. */
export function groupColor(group: string, theme: ThemeKind): IGroupColor {
  const slot = groupSlot(group);
  const hue = PALETTE_HUES[slot % PALETTE_HUES.length];
  const tone = Math.floor(slot / PALETTE_HUES.length);
  const sat = TONE_SATURATION[tone];
  const fill = rgb(atLuminance(hue, sat, TONE_LUMINANCE[theme][tone]));
  const text = theme === 'dark' ? 'rgb(245, 245, 245)' : 'rgb(17, 17, 17)';
  return { fill, text };
}

/**
 * Line colours for the series of one chart (a metric's total and its parts, a run and the
 * run it is compared with), in order: blue, orange, green, red, violet, teal. Apart from
 * the module palette, so a chart's series always differ (ΔE*ab > 30 between any two) and
 * read as legend text on the theme's background (contrast at least 5:1).
 */
export const SERIES_COLORS: Record<ThemeKind, readonly string[]> = {
  light: [
    'rgb(31, 99, 180)',
    'rgb(176, 85, 0)',
    'rgb(29, 122, 42)',
    'rgb(192, 40, 45)',
    'rgb(122, 69, 176)',
    'rgb(0, 115, 122)'
  ],
  dark: [
    'rgb(106, 174, 240)',
    'rgb(255, 165, 82)',
    'rgb(111, 212, 122)',
    'rgb(255, 123, 123)',
    'rgb(197, 155, 245)',
    'rgb(79, 208, 214)'
  ]
};

/** The line colour of a chart's series at `index` (colours repeat after six). */
export function seriesColor(index: number, theme: ThemeKind): string {
  const colors = SERIES_COLORS[theme];
  return colors[index % colors.length];
}

/** WCAG contrast ratio of two colours given as [r, g, b] in 0..255. */
export function contrast(a: number[], b: number[]): number {
  const [la, lb] = [luminance(a), luminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/** `rgb(r, g, b)` parsed back to [r, g, b]. */
export function parseRgb(color: string): number[] {
  return (color.match(/\d+/g) ?? []).slice(0, 3).map(Number);
}

function rgb(c: number[]): string {
  return `rgb(${c.join(', ')})`;
}

function luminance(c: number[]): number {
  const lin = (v: number) => {
    const s = v / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
}

function hsl(h: number, s: number, l: number): number[] {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/** The colour of hue `h` and saturation `s` whose luminance is closest to `target`. */
function atLuminance(h: number, s: number, target: number): number[] {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 24; i++) {
    const mid = (lo + hi) / 2;
    if (luminance(hsl(h, s, mid)) < target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hsl(h, s, (lo + hi) / 2);
}

/** The current JupyterLab theme kind, read from the body attribute JupyterLab sets. */
export function currentTheme(doc: Document = document): ThemeKind {
  return doc.body?.dataset?.jpThemeLight === 'false' ? 'dark' : 'light';
}

/**
 * Call `redraw` whenever JupyterLab changes its theme (light/dark or another theme: the CSS
 * variables canvases read change with it). Disconnect the observer on dispose.
 */
export function observeTheme(redraw: () => void): MutationObserver {
  const observer = new MutationObserver(redraw);
  observer.observe(document.body, {
    attributes: true,
    attributeFilter: ['data-jp-theme-light', 'data-jp-theme-name']
  });
  return observer;
}

/** A JupyterLab CSS variable's computed value (canvas cannot use var() directly). */
export function cssVar(
  name: string,
  fallback: string,
  element: Element = document.body
): string {
  const value = getComputedStyle(element).getPropertyValue(name).trim();
  return value || fallback;
}

/**
 * Size a canvas for `width` × `height` CSS pixels at the device pixel ratio (sharp on HiDPI
 * screens) and return its context scaled so drawing code works in CSS pixels.
 */
export function hiDpiContext(
  canvas: HTMLCanvasElement,
  width: number,
  height: number
): CanvasRenderingContext2D | null {
  const dpr = window.devicePixelRatio || 1;
  const pw = Math.round(width * dpr);
  const ph = Math.round(height * dpr);
  if (canvas.width !== pw || canvas.height !== ph) {
    canvas.width = pw;
    canvas.height = ph;
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  const ctx = canvas.getContext('2d');
  ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}
