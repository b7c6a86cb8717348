"""How the server names and classes the regions of either backend: the contract's
``decode_region_role`` and ``cell_region_label`` on the names Score-P's bindings and the
builtin tracer write (real traces are read in server_ext/tests/scorep_runs/)."""

from __future__ import annotations

import pytest

from scorep_kernel import region_words as rw


@pytest.mark.parametrize(
    ("name", "otf2_role", "description", "role"),
    [
        (":cell [3]", "FUNCTION", "", rw.ROLE_CELL),  # Score-P's bindings
        ("cell [3]", "CODE", "cell", rw.ROLE_CELL),  # the builtin writer's description
        ("import:xml.dom", "FUNCTION", "", rw.ROLE_IMPORT),
        ("user:phase one", "FUNCTION", "", rw.ROLE_USER),
        ("__main__:f", "FUNCTION", "", rw.ROLE_FUNCTION),
        ("__main__.Model:fit", "FUNCTION", "", rw.ROLE_FUNCTION),
        ("MEASUREMENT OFF", "ARTIFICIAL", "", rw.ROLE_ARTIFICIAL),
        ("TRACE BUFFER FLUSH", "ARTIFICIAL", "", rw.ROLE_ARTIFICIAL),
        ("python3.11", "ARTIFICIAL", "", rw.ROLE_ARTIFICIAL),  # Score-P's program region
        ("pthread_create", "THREAD_CREATE", "", rw.ROLE_FUNCTION),
        ("MPI_Send", "POINT2POINT", "", rw.ROLE_FUNCTION),
        ("user:x", "FUNCTION", "function", rw.ROLE_FUNCTION),  # the description wins
    ],
)
def test_region_roles_of_both_backends(name, otf2_role, description, role):
    assert rw.decode_region_role(description, otf2_role, name) == role


def test_a_cell_is_shown_alike_under_both_backends():
    assert rw.cell_region_label(":cell [3]") == "cell [3]"
    assert rw.cell_region_label("cell [3]") == "cell [3]"
    assert rw.cell_region_label(":training loop") == "training loop"
    for other in ("__main__:cell", "user:cell [3]", ":", "cell", "import:cell"):
        assert rw.cell_region_label(other) is None, other
