/**
 * Stable colours for region groups (modules): the same group gets the same colour in every
 * panel, every session and either theme (only lightness changes with the theme), because the
 * colour comes from a hash of the group's name, not from the order groups were seen in.
 */

/** Hues spaced to stay distinguishable; indexed by the group's hash. */
export const PALETTE_HUES = [
  210, 30, 120, 0, 270, 180, 60, 330, 150, 240, 90, 300, 15, 195, 45, 285
];

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
  /** the same hue with more contrast against the background: lines and legend text */
  line: string;
}

/** Slot in {@link PALETTE_HUES} for a group; well-known groups get fixed slots. */
export function paletteIndex(group: string): number {
  const fixed: Record<string, number> = {
    __main__: 0,
    builtins: 6,
    numpy: 2,
    cell: 1
  };
  if (group in fixed) {
    return fixed[group];
  }
  return hashString(group) % PALETTE_HUES.length;
}

/** The colour of a region group in the given theme. */
export function groupColor(group: string, theme: ThemeKind): IGroupColor {
  const idx = paletteIndex(group);
  const hue = PALETTE_HUES[idx];
  // a second hash bit varies saturation so two groups in one slot still differ a little
  const variant = (hashString(group) >>> 8) % 3;
  const sat = 55 + variant * 10;
  const light = theme === 'dark' ? 42 + variant * 4 : 62 + variant * 5;
  const fill = `hsl(${hue}, ${sat}%, ${light}%)`;
  const text = theme === 'dark' ? '#f5f5f5' : '#111111';
  const line = `hsl(${hue}, ${sat + 10}%, ${theme === 'dark' ? 68 : 38}%)`;
  return { fill, text, line };
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
