/**
 * Renders pages holding profiled cells' text/html gists in Chromium (Playwright from
 * ui-tests/node_modules, Debian's Chromium) and measures what a reader sees: for every text
 * in a `.scorep-gist`, its colour against the background behind it (opacity and
 * translucent backgrounds composited, WCAG contrast ratio), how the table cells are aligned,
 * and whether the share bars are drawn. Screenshots of each gist go to `out`.
 *
 *   node gist_render.js '{"chromium": "...", "out": "...", "pages": [{"name", "file", "scheme"}]}'
 *
 * Prints one JSON object: {name: {gists, minContrast, worst, names, numbers, bars}}.
 * Used by test_nbconvert_execute.py (nbconvert's HTML, light and dark; VS Code's notebook
 * webview, approximated with its stylesheet and theme colours).
 */
const path = require('path');

const config = JSON.parse(process.argv[2]);
const { chromium } = require(path.join(config.modules, 'playwright'));

function measure() {
  const parse = c => {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) {
      return [0, 0, 0, 0];
    }
    const p = m[1]
      .split(/[ ,/]+/)
      .filter(Boolean)
      .map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat(1);
  };
  const background = el => {
    // the colours painted behind el, from the page up to el, composited
    const chain = [];
    for (let e = el; e; e = e.parentElement) {
      chain.unshift(e);
    }
    let bg = [255, 255, 255, 1];
    for (const e of chain) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) {
        bg = over(c, bg);
      }
    }
    return bg;
  };
  const opacity = el => {
    let o = 1;
    for (let e = el; e; e = e.parentElement) {
      o *= Number(getComputedStyle(e).opacity);
    }
    return o;
  };
  const lum = c => {
    const s = c.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * s[0] + 0.7152 * s[1] + 0.0722 * s[2];
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const gists = [...document.querySelectorAll('.scorep-gist')];
  let minContrast = Infinity;
  let worst = '';
  for (const g of gists) {
    const walker = document.createTreeWalker(g, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || el.closest('style')) {
        continue;
      }
      const bg = background(el);
      const fg = parse(getComputedStyle(el).color);
      const seen = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
      const r = ratio(seen, bg);
      if (r < minContrast) {
        minContrast = r;
        worst = n.textContent.trim().slice(0, 60);
      }
    }
  }
  const align = sel =>
    [...document.querySelectorAll(sel)].map(e => getComputedStyle(e).textAlign);
  const bars = [...document.querySelectorAll('.scorep-gist .bar > span')].map(
    s => {
      const cs = getComputedStyle(s);
      return {
        width: s.getBoundingClientRect().width,
        fill: cs.backgroundColor,
        color: cs.color
      };
    }
  );
  return {
    gists: gists.length,
    minContrast,
    worst,
    names: align('.scorep-gist .gt td:last-child'),
    numbers: align('.scorep-gist .gt td.num'),
    labels: align('.scorep-gist .gt th'),
    bars
  };
}

(async () => {
  const browser = await chromium.launch({
    executablePath: config.chromium,
    args: ['--no-sandbox', '--disable-gpu']
  });
  const result = {};
  for (const p of config.pages) {
    const page = await browser.newPage({
      viewport: { width: 1000, height: 800 },
      colorScheme: p.scheme
    });
    await page.goto('file://' + p.file);
    result[p.name] = await page.evaluate(measure);
    const gists = await page.$$('.scorep-gist, pre.gist-plain');
    for (let i = 0; i < gists.length; i++) {
      await gists[i].screenshot({
        path: path.join(config.out, `${p.name}-${i}.png`)
      });
    }
    await page.close();
  }
  await browser.close();
  process.stdout.write(JSON.stringify(result));
})().catch(e => {
  console.error(e);
  process.exit(1);
});
