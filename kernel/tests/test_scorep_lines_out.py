"""Score-P's own lines are taken out of a Score-P worker's stderr before it reaches the
cell (they reach the user in words: the manifest's scorep_messages and notes), whatever
the chunks the pipe delivers; everything else passes at once and in order."""

from __future__ import annotations

import random

from scorep_kernel.runs.scorep_backend import ScorePLinesOut

WARNING = (
    "[Score-P] src/measurement/scorep_definition_cube4.c:767: Warning: Given metric name "
    '"io_bytes_read::POSIX I/O" was changed to "io_bytes_read::POSIX_I_O"\n'
)
USER = "a user's line\n 10%|#         | 1/10\r 20%|##        | 2/10\r[Scope] not ours\ndone\n"


def test_score_p_lines_go_and_the_users_text_stays_in_any_chunking():
    text = USER[:14] + WARNING + USER[14:] + WARNING  # at line starts, as Score-P writes
    want = USER
    rng = random.Random(7)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(0, 12)))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        f = ScorePLinesOut()
        assert "".join(f.feed(c) for c in chunks) == want, chunks


def test_a_progress_bar_without_a_newline_is_passed_on_at_once():
    f = ScorePLinesOut()
    assert f.feed(" 50%|#####     | 5/10") == " 50%|#####     | 5/10"
    assert f.feed("\r 60%") == "\r 60%"


def test_the_start_of_a_score_p_line_is_held_until_its_end():
    f = ScorePLinesOut()
    assert f.feed("ok\n[Sco") == "ok\n"
    assert f.feed("re-P] Warning: something\nnext") == "next"
