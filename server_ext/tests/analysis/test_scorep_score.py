"""scorep-score's report read into JSON, and where an applied filter goes: on scorep-score's
own words as Score-P 8.4 prints them (runs of the real tool are in
server_ext/tests/scorep_runs/test_scorep_filters.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyterlab_scorep.analysis import scorep_score

# scorep-score -r -f FILTER profile.cubex (Score-P 8.4), shortened
FILTERED = """
Estimated aggregate size of event trace:                   130
Estimated requirements for largest trace buffer (max_buf): 130
Estimated memory requirements (SCOREP_TOTAL_MEMORY):       4097kB
(hint: When tracing set SCOREP_TOTAL_MEMORY=4097kB to avoid intermediate flushes
 or reduce requirements using USR regions filters.)

flt     type max_buf[B]  visits time[s] time[%] time/visit[us]  region
 -       ALL  1,440,129  60,003    0.64   100.0          10.66  ALL
 -       USR  1,440,024  60,001    0.03     4.7           0.50  USR
 -    SCOREP        105       2    0.61    95.3      304811.53  SCOREP

 *       ALL        129       3    0.62    96.9      206505.30  ALL-FLT
 +       FLT  1,440,000  60,000    0.02     3.1           0.33  FLT
 -    SCOREP        105       2    0.61    95.3      304811.53  SCOREP-FLT
 *       USR         24       1    0.01     1.6        9938.01  USR-FLT

 +       USR  1,440,000  60,000    0.02     3.1           0.33  __main__:h
 -       USR         24       1    0.01     1.6        9938.01  :cell [5]
 -    SCOREP         81       1    0.61    95.3      609623.06  python3.11
 -    SCOREP         24       1    0.00     0.0         523.00  TRACE BUFFER FLUSH
"""

GENERATED = """# Initial filter file, starting point for further adaptation.
SCOREP_REGION_NAMES_BEGIN
  EXCLUDE
    # type=USR max_buf= 1,440,000 visits= 60,000, time= 0.02s (3.1%), time/visit= 0.33us
    # name='__main__:h'
    # file='tmp/x/<ipython-input-5-0a>'
    MANGLED __main__:h

SCOREP_REGION_NAMES_END
"""


def test_the_report_and_its_tables():
    got = scorep_score.parse(FILTERED)
    assert got["estimate"] == {
        "trace": "130",
        "trace_bytes": 130,  # a size without a unit is bytes
        "max_buf": "130",
        "max_buf_bytes": 130,
        "total_memory": "4097kB",
        "total_memory_bytes": 4097 * 1024,
        "hint": "When tracing set SCOREP_TOTAL_MEMORY=4097kB to avoid intermediate flushes "
        "or reduce requirements using USR regions filters.",
    }
    types = {t["type"]: t for t in got["types"]}
    assert list(types) == ["ALL", "USR", "SCOREP", "ALL-FLT", "FLT", "SCOREP-FLT", "USR-FLT"]
    assert types["FLT"] == {
        "type": "FLT",
        "max_buf_bytes": 1_440_000,
        "visits": 60_000,
        "time_s": 0.02,
        "time_pct": 3.1,
        "time_per_visit_us": 0.33,
        "flt": "+",
    }
    assert types["ALL-FLT"]["flt"] == "*"
    names = [r["name"] for r in got["regions"]]
    # region names with spaces and colons, the program region of type SCOREP
    assert names == ["__main__:h", ":cell [5]", "python3.11", "TRACE BUFFER FLUSH"]
    assert got["regions"][0]["flt"] == "+" and got["regions"][1]["flt"] == "-"


@pytest.mark.parametrize(
    ("text", "size"),
    [("73kB", 73 * 1024), ("7MB", 7 * 2**20), ("1.5GB", 3 * 2**29), ("86", 86), ("?", None)],
)
def test_sizes(text, size):
    assert scorep_score.size_bytes(text) == size


def test_the_regions_a_generated_filter_excludes():
    assert scorep_score.filtered_names(GENERATED) == ["__main__:h"]
    assert scorep_score.looks_like_filter(GENERATED)
    assert not scorep_score.looks_like_filter("SCOREP_TOTAL_MEMORY=1G")


def test_the_filter_lives_beside_the_experiments_and_keeps_the_old_rules(tmp_path):
    exp = tmp_path / "nb" / "scorep-experiments" / "20261201T000000_000000Z-abcdef"
    assert scorep_score.filter_dir(exp) == tmp_path / "nb" / "scorep-filters"
    explicit = tmp_path / "scratch" / "my-run"  # SCOREP_EXPERIMENT_DIRECTORY=.../my-run
    assert scorep_score.filter_dir(explicit) == tmp_path / "scratch" / "scorep-filters"
    manifest = {"id": "run-7", "cells": [{"execution_count": 5}]}
    old = (
        "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE\n    MANGLED __main__:tiny\nSCOREP_REGION_NAMES_END\n"
    )
    text = scorep_score.filter_text(manifest, GENERATED, ("/nb/scorep-filters/a.filter", old))
    assert "experiment run-7 (cell [5])" in text
    assert text.index("MANGLED __main__:tiny") < text.index("MANGLED __main__:h")
    assert text.count("SCOREP_REGION_NAMES_BEGIN") == 2
    path = scorep_score.write_filter(tmp_path / "f", "run-7.filter", text)
    assert path.read_text() == text and not list(Path(path.parent).glob(".filter-*"))


def test_the_heuristics_are_checked_and_said_in_words(caplog):
    assert scorep_score.check_heuristics(" bufferpercent=1, timepervisit=20") == (
        "bufferpercent=1,timepervisit=20"
    )
    for bad in ("timepervisit", "speed=1", "visits=many", "type=mpi", "bufferpercent=1;rm"):
        with pytest.raises(ValueError):
            scorep_score.check_heuristics(bad)
    assert scorep_score.describe_heuristics("bufferpercent=1,timepervisit=20,type=usr") == (
        "at least 1 % of the trace buffer and under 20 us per visit and of type usr"
    )
    text = scorep_score.filter_text({"id": "r"}, GENERATED, None, "visits=1000")
    assert "scorep-score -g visits=1000" in text and "more than 1000 visits" in text
    # a bad setting is said in the log; the server keeps Score-P's defaults
    from jupyterlab_scorep.http.service import Service

    service = Service("/nonexistent", version="test", filter_heuristics="timepervisit=fast")
    try:
        assert service.scores.filter_heuristics == scorep_score.HEURISTICS
        assert "filter_heuristics='timepervisit=fast'" in caplog.text
    finally:
        service.shutdown()
