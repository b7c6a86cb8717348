"""The profile panel in a real browser on 1M- and 10M-event traces: frame intervals while the
user wheel-zooms, drag-pans and hovers over the timeline, the canvas draw cost, and the time
from a zoom to the refined window drawn (issue 11: p95 <= 16 ms per frame, <= 100 ms from a
zoom to the refined window).

Set-up: synthetic experiments (server_ext/tests/synthetic_trace.py, cached under
benchmarks/.data/; the 10M one is the trace server_timeline.py queries), one notebook per
size whose saved cell output is the experiment's MIME bundle (as the kernel displays it), so
JupyterLab renders the panel without running anything; a real `jupyter lab` on 127.0.0.1
serving them; Debian's Chromium (headless, software rendering) driven by Playwright from a
small Node script written to a temp dir. The notebook is opened without a kernel, the panel's
Timeline tab shown, and, per repeat:

- zoom: one wheel event of 500 px per step (five notches at once: x0.47 in, x2.1 out),
  14 steps in at one point, then 14 out at another; after each, the wait for the refined
  window drawn (the timeline's data-window changes, then its next draw);
- pan: drag 300 px left and back, one pointer move per frame, at 1/20 of the trace;
- hover: three rows crossed at the full view, one pointer move per frame (tooltip, outline).

Measured in the page: every requestAnimationFrame interval during those interactions (a
60 Hz frame is 16.7 ms, so a smooth panel has p95 = 16.7 ms; the target counts as met when
p95 <= 17 ms, i.e. no more than 5 % of the frames missed their refresh), the canvas draw cost
(data-draw-ms, a MutationObserver), and per zoom the time from the wheel event's timestamp
to the first draw after the refined window arrived, split into the wait to send (wheel
-> request sent), the server's answer (request sent -> response end, Resource Timing) and the
rest (JSON, projection, the draw). Each figure is the median over the repeats of that
repeat's statistic, with the range over repeats beside it; no run is singled out.

The zoom figure includes the wait before the request is sent (src/timeline/fetcher.ts: at
once when no request is in flight, else when the one in flight is answered): its share is
printed beside.

The machine is shared (2 cores, other test suites running): the load average is printed.
SCOREP_BENCH_PANEL_REPEATS (default 3, after one warm-up), SCOREP_BENCH_CHROMIUM (default
/usr/bin/chromium), SCOREP_BENCH_PANEL_DUMP=<file> (the raw records of each repeat, JSON
lines) change the run.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
from _report import report
from _server_tracegen import DATA, cached_experiment

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# (label, events, cache name): the 10M trace is the one server_timeline.py queries (same
# generator arguments), so both benchmarks share one 350 MB directory and its index
SIZES = [("1M", 1_000_000, "panel-frames-1M"), ("10M", 10_000_000, "server-timeline-10M")]
REPEATS = int(os.environ.get("SCOREP_BENCH_PANEL_REPEATS", "3"))
CHROMIUM = os.environ.get("SCOREP_BENCH_CHROMIUM", "/usr/bin/chromium")
NODE_MODULES = ROOT / "ui-tests" / "node_modules"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
DRIVER_TIMEOUT_S = 270  # the whole benchmark stays under ~5 minutes
DUMP = os.environ.get("SCOREP_BENCH_PANEL_DUMP")  # a file for the raw records, to look into
FRAME_TARGET_MS = 17.0  # one 60 Hz refresh (16.7 ms) and its jitter
ZOOM_TARGET_MS = 100.0

# The Node script that drives Chromium; it prints one `PF {json}` line per measured repeat.
DRIVER_JS = r"""
'use strict';
const fs = require('fs');
const { chromium } = require('playwright-core');

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const emit = (kind, obj) => process.stdout.write(`PF ${JSON.stringify({ kind, ...obj })}\n`);
const log = text => process.stdout.write(`${text}\n`);

function isLocal(url) {
  try {
    const u = new URL(url);
    return ['data:', 'blob:', 'about:'].includes(u.protocol) ||
      ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
  } catch (e) {
    return false;
  }
}

// What a failure leaves to look at: failed API answers, and the panel's words then.
const diagnosis = [];

// Installed in the page once the timeline exists: frame times, the timeline's attribute
// changes (data-window: a fetched window arrived; data-draw-ms: a draw), wheel events and
// the timeline requests' Resource Timing.
function instrument() {
  const node = document.querySelector('.jp-scorep-panel .jp-scorep-timeline');
  const pf = (window.__pf = { phase: null, frames: [], muts: [], wheels: [], fetches: [] });
  const loop = t => {
    if (pf.phase) {
      pf.frames.push([pf.phase, t]);
    }
    requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
  window.addEventListener('wheel', e => pf.wheels.push(e.timeStamp), { capture: true, passive: true });
  new MutationObserver(records => {
    const now = performance.now();
    for (const r of records) {
      const draw = r.attributeName === 'data-draw-ms';
      pf.muts.push([draw ? 'd' : 'w', now, draw ? Number(node.dataset.drawMs) : 0, pf.phase]);
    }
  }).observe(node, { attributes: true, attributeFilter: ['data-window', 'data-draw-ms'] });
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) {
      if (e.name.includes('/scorep/api/timeline')) {
        pf.fetches.push([e.startTime, e.responseStart, e.responseEnd]);
      }
    }
  }).observe({ type: 'resource' });
}

// Resolves once a window arrived after `since` (performance.now() time) and was drawn.
async function refined(page, since, timeout = 10000) {
  const handle = await page.waitForFunction(
    since => {
      let arrived = -1;
      const muts = window.__pf.muts;
      for (let i = muts.length - 1; i >= 0 && muts[i][1] >= since; i--) {
        if (muts[i][0] === 'w') {
          arrived = i;
        }
      }
      if (arrived < 0) {
        return false;
      }
      for (let i = arrived + 1; i < muts.length; i++) {
        if (muts[i][0] === 'd') {
          return { arrived: muts[arrived][1], drawn: muts[i][1] };
        }
      }
      return false;
    },
    since,
    { timeout, polling: 20 }
  );
  return handle.jsonValue();
}

// One wheel event at (x, y); resolves with its timestamp and when its refined window was
// drawn.
async function wheel(page, x, y, dy) {
  await page.mouse.move(x, y);
  const before = await page.evaluate(() => window.__pf.wheels.length);
  await page.mouse.wheel(0, dy);
  await page.waitForFunction(n => window.__pf.wheels.length > n, before, { polling: 10 });
  const at = await page.evaluate(n => window.__pf.wheels[n], before);
  try {
    const r = await refined(page, at);
    return { in: dy < 0, wheel: at, arrived: r.arrived, drawn: r.drawn };
  } catch (e) {
    return { in: dy < 0, wheel: at, timedOut: true };
  }
}

const now = page => page.evaluate(() => performance.now());
const setPhase = (page, phase) => page.evaluate(p => { window.__pf.phase = p; }, phase);

async function apiIdle(page, state, quietMs = 1000, timeout = 180000) {
  const end = Date.now() + timeout;
  let quietSince = Date.now();
  while (Date.now() < end) {
    if (state.inflight > 0) {
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= quietMs) {
      return;
    }
    await page.waitForTimeout(100);
  }
  throw new Error('the panel kept requesting for ' + timeout / 1000 + ' s');
}

async function resetView(page, canvas) {
  const since = await now(page);
  await canvas.focus();
  await page.keyboard.press('0');
  await refined(page, since);
}

async function measure(page, canvas, box, repeat, label) {
  const w = box.width;
  const rowY = depth => box.y + 22 + 16 + depth * 18 + 9;  // axis, lane title, rows of 18 px
  // zoom in at one point, then out at another, one wheel event each, each refined
  await resetView(page, canvas);
  const zooms = [];
  await setPhase(page, 'zoom');
  for (let i = 0; i < 28; i++) {
    const zoomIn = i < 14;
    zooms.push(await wheel(page, box.x + w * (zoomIn ? 0.37 : 0.71), rowY(1), zoomIn ? -500 : 500));
  }
  await setPhase(page, null);

  // drag-pan at 1/20 of the trace: 300 px left and back, one move per frame
  await resetView(page, canvas);
  for (let i = 0; i < 4; i++) {
    await wheel(page, box.x + w * 0.5, rowY(1), -500);
  }
  await setPhase(page, 'pan');
  await page.mouse.down();
  for (let i = 1; i <= 60; i++) {
    const dx = i <= 30 ? -10 * i : -10 * (60 - i);
    await page.mouse.move(box.x + w * 0.5 + dx, rowY(1));
  }
  await page.mouse.up();
  const panEnd = await now(page);
  const panRefined = await refined(page, panEnd).catch(() => null);
  await setPhase(page, null);

  // hover across three rows at the full view: tooltip and outline follow the pointer
  await resetView(page, canvas);
  await setPhase(page, 'hover');
  for (const depth of [0, 2, 4]) {
    for (let i = 0; i <= 60; i++) {
      await page.mouse.move(box.x + w * (0.05 + 0.9 * i / 60), rowY(depth));
    }
  }
  await page.mouse.move(box.x + w / 2, box.y - 40);  // leave the canvas
  await page.waitForTimeout(100);
  await setPhase(page, null);

  const pf = await page.evaluate(() => {
    const pf = window.__pf;
    const out = { frames: pf.frames, muts: pf.muts, fetches: pf.fetches };
    pf.frames = [];
    pf.muts = [];
    pf.fetches = [];
    pf.wheels = [];
    return out;
  });
  emit('repeat', { label, repeat, zooms, panEnd, panRefined, ...pf });
}

// Open the notebook in a fresh JupyterLab page, show the panel's Timeline tab, wait until
// it drew and the panel's other requests (summary, call tree) are done.
async function openPanel(page, nb, state) {
  let t = Date.now();
  await page.goto(`${cfg.base}/lab?reset&token=${cfg.token}`);  // reset: no documents restored
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.shell, null, { timeout: 120000 });
  await page.evaluate(() => window.jupyterapp.restored);
  log(`${nb.label}: JupyterLab loaded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  t = Date.now();
  await page.evaluate(path => window.jupyterapp.commands.execute('docmanager:open', {
    path, kernelPreference: { shouldStart: false, canStart: false, autoStartDefault: false }
  }), nb.path);
  const panel = page.locator('.jp-scorep-panel').first();
  await page.waitForSelector('.jp-scorep-panel[data-state="ready"]', { timeout: 120000 });
  // the output may be rendered again (a new panel, on its Summary tab): click again then
  for (let attempt = 1; ; attempt++) {
    await panel.locator('.jp-scorep-tab[data-tab="timeline"]').click();
    try {
      await page.waitForFunction(
        () => Number(document.querySelector('.jp-scorep-panel .jp-scorep-timeline')?.dataset.spans) > 0,
        null, { timeout: 20000, polling: 100 });
      break;
    } catch (e) {
      if (attempt === 3) {
        throw e;
      }
      log(`${nb.label}: no timeline drawn 20 s after showing it (${(await page.evaluate(panelWords)).join('; ')}); again`);
    }
  }
  await apiIdle(page, state);
  log(`${nb.label}: panel ready in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return panel;
}

// The panel's own words, for a failure's report.
function panelWords() {
  const panel = document.querySelector('.jp-scorep-panel');
  if (!panel) {
    return ['no panel in the page'];
  }
  const text = sel => (panel.querySelector(sel)?.textContent ?? '').trim().slice(0, 300);
  const tl = panel.querySelector('.jp-scorep-timeline');
  return [
    `panel state ${panel.dataset.state}; message "${text('.jp-scorep-message')}"`,
    `tab shown: ${panel.querySelector('.jp-scorep-tab[aria-selected="true"]')?.textContent}`,
    `timeline: spans ${tl?.dataset.spans}, window ${tl?.dataset.window}, ` +
      `status "${text('.jp-scorep-timeline-status')}"`
  ];
}

(async () => {
  const browser = await chromium.launch({
    executablePath: cfg.chromium,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-default-apps',
      '--disable-domain-reliability', '--no-first-run', '--disable-breakpad'
    ]
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    await context.route(url => !isLocal(url.href), route => route.abort());
    for (const nb of cfg.notebooks) {
      // a page of its own per notebook: JupyterLab loaded afresh, the notebook opened
      const page = await context.newPage();
      const state = { inflight: 0 };
      const api = r => r.url().includes('/scorep/api/');
      page.on('request', r => { if (api(r)) state.inflight++; });
      page.on('requestfinished', r => { if (api(r)) state.inflight--; });
      page.on('requestfailed', r => { if (api(r)) state.inflight--; });
      page.on('pageerror', e => log(`page error: ${e.message}`));
      page.on('response', r => {
        if (api(r) && !r.ok()) {
          diagnosis.push(`${r.status()} ${r.url().replace(/token=[^&]*/, '')}`);
        }
      });
      try {
        const panel = await openPanel(page, nb, state);
        const canvas = panel.locator('.jp-scorep-timeline-canvas');
        await canvas.scrollIntoViewIfNeeded();
        const box = await canvas.boundingBox();
        const spans = Number(await panel.locator('.jp-scorep-timeline').getAttribute('data-spans'));
        emit('setup', { label: nb.label, canvas: box, spans });
        await page.evaluate(instrument);
        for (let r = 0; r < cfg.warmups + cfg.repeats; r++) {
          const t = Date.now();
          await measure(page, canvas, box, r - cfg.warmups, nb.label);
          const what = r < cfg.warmups ? 'warm-up' : `repeat ${r - cfg.warmups + 1}`;
          log(`${nb.label}: ${what} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
        }
      } catch (e) {
        diagnosis.push(...(await page.evaluate(panelWords).catch(() => [])));
        throw e;
      }
      await page.close();
    }
  } finally {
    await browser.close();
  }
})().catch(e => {
  log(`driver failed: ${e.stack || e}`);
  for (const line of diagnosis) {
    log(`  ${line}`);
  }
  process.exitCode = 1;
});
"""


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook(exp: Path) -> dict:
    """A saved notebook whose one cell shows the experiment's panel, as after a run."""
    from scorep_kernel.runs.display import experiment_bundle

    manifest = json.loads((exp / "manifest.json").read_text())
    bundle = experiment_bundle(
        exp_id=manifest["id"],
        path=exp.name,  # relative to the server root
        backend=manifest["backend"],
        isolation=manifest["isolation"],
        status=manifest["status"],
        wall_s=manifest.get("wall_s"),
        events=manifest.get("measurement", {}).get("events"),
    )
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"language_info": {"name": "python"}},
        "cells": [
            {
                "cell_type": "code",
                "id": "panel-frames",
                "execution_count": 1,
                "metadata": {"scorep": {"profile": True}},
                "source": "run()  # a synthetic trace (benchmarks/panel_frames.py)",
                "outputs": [{"output_type": "display_data", "data": bundle, "metadata": {}}],
            }
        ],
    }


# prctl, looked up before any fork: the child only calls it (Linux; elsewhere the SIGTERM
# handler and the watchdog in drive() end what this script started)
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when this script dies, even by SIGKILL."""
    if _LIBC is not None:
        _LIBC.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG


def spawn(cmd: list[str], **kw) -> subprocess.Popen:
    """A process group of its own (stopped as a whole), ended with this script."""
    return subprocess.Popen(
        cmd,
        start_new_session=True,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 (one prctl call, nothing that locks)
        **kw,
    )


def stop(proc: subprocess.Popen, grace: float = 10) -> None:
    """End a process this script started and everything it started: the server's parse
    worker, Chromium (Playwright starts it in a process group of its own)."""
    import psutil

    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(grace)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    _, alive = psutil.wait_procs(children, timeout=5)
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            pass


def start_lab(tmp: Path, token: str) -> tuple[subprocess.Popen, int, Path]:
    """`jupyter lab` on 127.0.0.1 serving benchmarks/.data, settings and workspaces of its
    own (no news, no update check: nothing leaves the machine)."""
    port = free_port()
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    log = tmp / "lab.log"
    python = VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable)
    with log.open("w") as out:
        proc = spawn(
            [
                str(python),
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={DATA}",
                "--LabApp.expose_app_in_browser=True",
                f"--LabApp.user_settings_dir={tmp / 'settings'}",
                f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/scorep/api/version"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            raise RuntimeError(
                f"jupyter lab exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
            )
        try:
            req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
            urllib.request.urlopen(req, timeout=5).read()
            return proc, port, log
        except OSError:
            if time.monotonic() > deadline:
                stop(proc)
                raise RuntimeError(
                    f"jupyter lab did not answer:\n{log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.3)


def pct(values, q) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def analyse(rep: dict) -> dict:
    """One repeat's statistics (ms)."""
    intervals: dict[str, list[float]] = {}
    last: dict[str, float] = {}
    for phase, t in rep["frames"]:
        if phase in last:
            intervals.setdefault(phase, []).append(t - last[phase])
        last[phase] = t
    frames = [d for v in intervals.values() for d in v]
    draws = [m[2] for m in rep["muts"] if m[0] == "d" and m[3]]
    fetches = sorted(rep["fetches"])
    zoom, sent, server, after = [], [], [], []
    for z in rep["zooms"]:
        if z.get("timedOut"):
            continue
        zoom.append(z["drawn"] - z["wheel"])
        # the request for this view: the first one sent after the wheel, answered before
        # the window arrived
        f = next((f for f in fetches if f[0] >= z["wheel"] and f[2] <= z["arrived"] + 1), None)
        if f:
            sent.append(f[0] - z["wheel"])
            server.append(f[2] - f[0])
            after.append(z["drawn"] - f[2])
    return {
        "frame_p50": pct(frames, 50),
        "frame_p95": pct(frames, 95),
        "frame_max": max(frames, default=float("nan")),
        "frames": len(frames),
        **{f"frame_{p}_p95": pct(v, 95) for p, v in intervals.items()},
        "draw_p50": pct(draws, 50),
        "draw_p95": pct(draws, 95),
        "draw_max": max(draws, default=float("nan")),
        "draws": len(draws),
        "zoom_p50": pct(zoom, 50),
        "zoom_p95": pct(zoom, 95),
        "zoom_timeouts": sum(1 for z in rep["zooms"] if z.get("timedOut")),
        "sent_p50": pct(sent, 50),
        "server_p50": pct(server, 50),
        "after_p50": pct(after, 50),
        "pan_refined": (
            rep["panRefined"]["drawn"] - rep["panEnd"] if rep.get("panRefined") else float("nan")
        ),
    }


def summarise(stats: list[dict], key: str) -> tuple[float, str]:
    """The median over the repeats, and their range."""
    values = [s[key] for s in stats]
    return statistics.median(values), f"{min(values):.1f}-{max(values):.1f}"


def drive(notebooks: list[dict]) -> tuple[dict[str, list[dict]], dict[str, dict], int]:
    """Start the server and the driver, collect each repeat's statistics; both are stopped
    whatever happens (and die with this script: see spawn)."""
    token = "bench-" + os.urandom(12).hex()
    results: dict[str, list[dict]] = {}
    setups: dict[str, dict] = {}
    rc = 1
    with tempfile.TemporaryDirectory(prefix="panel-frames-") as tmp_s:
        tmp = Path(tmp_s)
        lab = driver = watchdog = None
        try:
            lab, port, lab_log = start_lab(tmp, token)
            script = tmp / "driver.js"
            script.write_text(DRIVER_JS)
            config = {
                "base": f"http://127.0.0.1:{port}",
                "token": token,
                "chromium": CHROMIUM,
                "notebooks": notebooks,
                "repeats": REPEATS,
                "warmups": 1,
            }
            (tmp / "config.json").write_text(json.dumps(config))
            driver = spawn(
                ["node", str(script), str(tmp / "config.json")],
                cwd=tmp,
                env=dict(os.environ, NODE_PATH=str(NODE_MODULES)),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            watchdog = threading.Timer(DRIVER_TIMEOUT_S, stop, (driver,))
            watchdog.daemon = True
            watchdog.start()
            assert driver.stdout is not None
            for line in driver.stdout:
                if not line.startswith("PF "):
                    print("  " + line.rstrip(), flush=True)
                    continue
                rec = json.loads(line[3:])
                if rec["kind"] == "setup":
                    setups[rec["label"]] = rec
                    box = rec["canvas"]
                    print(
                        f"  {rec['label']}: canvas {box['width']:.0f} x {box['height']:.0f} px,"
                        f" {rec['spans']:,} spans drawn at the full view",
                        flush=True,
                    )
                elif rec["repeat"] >= 0:
                    if DUMP:
                        with open(DUMP, "a") as f:
                            f.write(json.dumps(rec) + "\n")
                    results.setdefault(rec["label"], []).append(analyse(rec))
            driver.wait()
            if not watchdog.is_alive():
                print(f"  [driver stopped after {DRIVER_TIMEOUT_S} s]")
            rc = driver.returncode
            if rc:
                print(f"  driver exit {rc}; the server's log ends:")
                print(lab_log.read_text()[-2000:])
        finally:
            if watchdog is not None:
                watchdog.cancel()
            if driver is not None:
                stop(driver)
            if lab is not None:
                stop(lab)
    return results, setups, rc


def main() -> None:
    for found, what in ((shutil.which("node"), "node"), (Path(CHROMIUM).exists(), CHROMIUM)):
        if not found:
            raise SystemExit(f"panel_frames: {what} not found")
    if not (NODE_MODULES / "playwright-core").exists():
        raise SystemExit("panel_frames: no ui-tests/node_modules/playwright-core (make setup)")
    # stopped from outside (SIGTERM): still stop the server and the browser
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"load average at start: {load()} ({os.cpu_count()} cores)", flush=True)
    t_start = time.perf_counter()
    from jupyterlab_scorep.index_store import ensure_index

    notebooks = []
    for label, n, name in SIZES:
        exp = cached_experiment(name, n)
        ensure_index(str(exp))  # as after a first look: the server's index is on disk
        nb = DATA / f"panel-frames-{label}.ipynb"
        nb.write_text(json.dumps(notebook(exp), indent=1))
        notebooks.append({"label": label, "path": nb.name})
    print(f"experiments and indexes ready in {time.perf_counter() - t_start:.1f} s", flush=True)

    results, setups, rc = drive(notebooks)
    took = time.perf_counter() - t_start
    print(f"load average at end: {load()}; the benchmark took {took:.0f} s", flush=True)
    for label, _, _ in SIZES:
        stats = results.get(label)
        if not stats:
            print(f"no measurements for {label} events")
            rc = rc or 1
            continue
        for i, s in enumerate(stats):
            print(
                f"{label} repeat {i + 1}: frame intervals p50/p95/max {s['frame_p50']:.1f}/"
                f"{s['frame_p95']:.1f}/{s['frame_max']:.0f} ms over {s['frames']} frames "
                f"(p95 zooming {s.get('frame_zoom_p95', 0):.1f}, panning "
                f"{s.get('frame_pan_p95', 0):.1f}, hovering {s.get('frame_hover_p95', 0):.1f});"
                f" draw p50/p95/max {s['draw_p50']:.1f}/{s['draw_p95']:.1f}/"
                f"{s['draw_max']:.1f} ms over {s['draws']} draws; zoom -> refined window "
                f"drawn p50/p95 {s['zoom_p50']:.0f}/{s['zoom_p95']:.0f} ms (of the median: "
                f"wheel -> request {s['sent_p50']:.0f}, server {s['server_p50']:.0f}, "
                f"answer -> drawn {s['after_p50']:.0f}; {s['zoom_timeouts']} of 28 timed out);"
                f" pan end -> refined {s['pan_refined']:.0f} ms"
            )
        width = setups.get(label, {}).get("canvas", {}).get("width", 0)
        where = (
            f"{len(stats)} repeats: median, range {{}}; canvas {width:.0f} px, headless "
            f"Chromium, software rendering; load average {load()} on {os.cpu_count()} cores"
        )
        p95, p95_range = summarise(stats, "frame_p95")
        fmax, fmax_range = summarise(stats, "frame_max")
        report(
            f"panel frame interval p95 ({label} events)",
            p95,
            "ms",
            peer="canvas draw p95 (data-draw-ms)",
            peer_value=summarise(stats, "draw_p95")[0],
            target="<= 16 ms per frame (60 Hz: <= 17)",
            met=bool(p95 <= FRAME_TARGET_MS),
            note=where.format(p95_range) + f"; longest frame {fmax:.0f} ms ({fmax_range})",
        )
        z50, z_range = summarise(stats, "zoom_p50")
        report(
            f"zoom -> refined window drawn, median ({label} events)",
            z50,
            "ms",
            peer="server's timeline answer (request -> response end)",
            peer_value=summarise(stats, "server_p50")[0],
            target="<= 100",
            met=bool(z50 <= ZOOM_TARGET_MS),
            note=where.format(z_range)
            + f"; p95 {summarise(stats, 'zoom_p95')[0]:.0f} ms; wheel -> request sent "
            f"{summarise(stats, 'sent_p50')[0]:.0f} ms (the fetcher's wait for the request in flight)",
        )
    if rc:
        sys.exit(rc)


if __name__ == "__main__":
    main()
