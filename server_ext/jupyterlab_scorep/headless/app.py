"""``jupyter scorep``: profile a notebook from the command line (``run``) and print an
experiment (``report``). The console script ``jupyter-scorep`` makes it a Jupyter
subcommand. docs/HEADLESS.md is the guide; ``jupyter scorep run --help`` the reference."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TextIO

from . import run_summary as hs

EPILOG_RUN = """\
cells: code cells are numbered from 1, markdown cells not counted (In [n] of a fresh run);
  --cells takes numbers, ranges and cell ids: 3,5-7,aee8b4be.
settings: --backend, --isolation and --experiment-dir act as the JupyterLab settings do:
  a key set on a cell itself still wins (README, "Settings precedence").
exit status: 0 all cells ran; 1 a cell raised, timed out, or the kernel died or did not
  start; 2 a wrong option or unreadable notebook; 3 --fail-if-slower found a regression;
  130 interrupted (Ctrl-C). The summary is written in every case.
"""


def _threshold(text: str) -> float:
    t = text.strip().rstrip("%").strip()
    try:
        value = float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a percentage: write it like 20% or 20"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the threshold must be above 0%")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jupyter scorep",
        description="Profile notebooks with the Score-P kernel outside JupyterLab.",
    )
    sub = p.add_subparsers(dest="command", metavar="{run,report}")
    sub.required = True
    r = sub.add_parser(
        "run",
        help="execute a notebook, profiling its toggled cells",
        description="Execute NOTEBOOK with the Score-P kernel, profiling the cells toggled "
        "in JupyterLab (or --all, or --cells), and write scorep-summary.json beside the "
        "experiments.",
        epilog=EPILOG_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("notebook", type=Path, help="the .ipynb to run")
    r.add_argument("-o", "--output", type=Path, help="write the executed notebook here")
    which = r.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="profile every code cell")
    which.add_argument(
        "--cells", metavar="LIST", help="profile exactly these code cells: 3,5-7 or cell ids"
    )
    r.add_argument("--backend", choices=("auto", "scorep", "builtin"), help="what measures")
    r.add_argument(
        "--isolation", choices=("auto", "subprocess", "inprocess"), help="where cells run"
    )
    r.add_argument(
        "--experiment-dir",
        type=Path,
        metavar="DIR",
        help="parent of the experiment directories (default: scorep-experiments/ in the "
        "kernel's working directory)",
    )
    r.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="interrupt a cell that runs longer (it counts as failed)",
    )
    r.add_argument(
        "--cwd",
        type=Path,
        metavar="DIR",
        help="the kernel's working directory (default: the notebook's)",
    )
    r.add_argument(
        "--allow-errors",
        action="store_true",
        help="run the later cells after a cell raised (the exit status still says so)",
    )
    r.add_argument("--summary", type=Path, metavar="FILE", help=f"where to write {hs.SUMMARY_NAME}")
    r.add_argument(
        "--kernel", default="scorep-python", help="kernel spec to run (default: scorep-python)"
    )
    r.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR_OR_SUMMARY",
        help=f"compare each profiled cell with its run there (a {hs.SUMMARY_NAME}, or a "
        "directory of experiments)",
    )
    r.add_argument(
        "--fail-if-slower",
        type=_threshold,
        metavar="PCT",
        help="with --baseline: exit 3 when a cell is slower by more than PCT (e.g. 20%%) "
        "and more than the noise",
    )
    r.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run each profiled cell N times in a row, each its own run; the summary and the "
        "gate take the best (short cells on a loaded machine; the cell must tolerate running "
        "again)",
    )
    r.add_argument(
        "--allow-missing-baseline",
        action="store_true",
        help="with --baseline: pass when the baseline yields nothing to compare (it is "
        f"missing or empty: the first run of a notebook); without it that exits {hs.EXIT_NO_BASELINE}",
    )
    r.add_argument(
        "--files-timeout",
        type=_seconds,
        default=300.0,
        metavar="SECONDS",
        help="how long to wait for the kernel to finish writing traces (default 300)",
    )
    r.add_argument("--color", action=argparse.BooleanOptionalAction, default=None)

    rep = sub.add_parser(
        "report",
        help="print an experiment's summary, top functions and call tree",
        description="Print a profiled run: its summary, its top functions by exclusive time "
        f"and its call tree to --depth. EXPERIMENT is an experiment directory, or a "
        f"{hs.SUMMARY_NAME} (or a directory holding one) for every cell of a headless run.",
    )
    rep.add_argument("experiment", type=Path)
    rep.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    rep.add_argument("--depth", type=int, default=4, help="call tree levels (default 4)")
    rep.add_argument("--top", type=int, default=10, help="top functions (default 10)")
    return p


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    args = parser().parse_args(argv)
    out = out or sys.stdout
    try:
        if args.command == "run":
            return run_command(args, out)
        from .report import report_command

        return report_command(args, out)
    except BrokenPipeError:  # `jupyter scorep report ... | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run_command(args: argparse.Namespace, out: TextIO) -> int:
    from .execute import Runner, UsageError, session_name
    from .run_options import RunOptions

    if args.fail_if_slower is not None and args.baseline is None:
        print("jupyter scorep run: --fail-if-slower needs --baseline", file=sys.stderr)
        return hs.EXIT_USAGE
    if args.repeat < 1:
        print("jupyter scorep run: --repeat needs a count of 1 or more", file=sys.stderr)
        return hs.EXIT_USAGE
    if args.allow_missing_baseline and args.baseline is None:
        print("jupyter scorep run: --allow-missing-baseline needs --baseline", file=sys.stderr)
        return hs.EXIT_USAGE
    opts = RunOptions(
        notebook=args.notebook,
        output=args.output,
        kernel=args.kernel,
        backend=args.backend,
        isolation=args.isolation,
        experiment_dir=args.experiment_dir,
        profile_all=args.all,
        cells=args.cells,
        timeout=args.timeout,
        cwd=args.cwd,
        allow_errors=args.allow_errors,
        summary=args.summary,
        files_timeout=args.files_timeout,
        repeat=args.repeat,
        color=args.color,
    )
    baseline = None
    try:
        if args.baseline is not None:
            from .gate import Baseline

            baseline = Baseline.load(args.baseline, session_name(args.notebook))
        runner = Runner(opts, out)
        data = asyncio.run(runner.run())
    except UsageError as e:
        print(f"jupyter scorep run: {e}", file=sys.stderr)
        return hs.EXIT_USAGE
    except Exception as e:
        from .gate import BaselineError

        if isinstance(e, BaselineError):
            print(f"jupyter scorep run: {e}", file=sys.stderr)
            return hs.EXIT_USAGE
        raise
    report_text = ""
    if baseline is not None:
        from .gate import gate

        result = gate(
            data,
            runner.summary_path.parent,
            baseline,
            args.fail_if_slower,
            allow_missing=args.allow_missing_baseline,
        )
        data["gate"] = result.record
        report_text = result.text
        if data["exit_code"] == hs.EXIT_OK:
            if result.failed:
                data["exit_code"] = hs.EXIT_REGRESSION
            elif result.no_baseline:
                data["exit_code"] = hs.EXIT_NO_BASELINE
    hs.write_summary(runner.summary_path, data)
    runner.write_notebook()
    finish(runner, data, report_text, out)
    return int(data["exit_code"])


def finish(runner, data: dict, gate_text: str, out: TextIO) -> None:
    say = lambda s="": print(s, file=out, flush=True)
    say()
    say(hs.render_table(data))
    say()
    profiled = sum(c["profiled"] for c in data["cells"])
    say(
        f"{profiled} of {len(data['cells'])} code cells profiled; experiments in {data['experiment_dir']}"
    )
    say(f"summary: {runner.summary_path}")
    if data.get("output"):
        say(f"executed notebook: {data['output']}")
    failed = [
        c for c in data["cells"] if c["status"] == hs.CELL_ERROR and not c["error"].get("expected")
    ]
    for c in failed:
        say(f"cell [{c['number']}] failed: {c['error']['ename']}: {c['error']['evalue']}")
    if gate_text:
        say()
        say(gate_text)
    if data["status"] != hs.RUN_OK:
        say(f"run {data['status']}: {data.get('message', '')}".rstrip(": "))
