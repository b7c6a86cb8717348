"""How the server names and classes the regions of either backend: the contract's
``decode_region_role``, ``is_cell_region`` and ``cell_region_label`` on the names and groups
Score-P (its bindings, and the worker's cells through its user API) and the builtin tracer
write (real traces are read in server_ext/tests/scorep_runs/)."""

from __future__ import annotations

import pytest

from scorep_kernel import region_words as rw


@pytest.mark.parametrize(
    ("name", "otf2_role", "description", "role"),
    [
        (":cell [3]", "FUNCTION", "", rw.ROLE_CELL),  # Score-P's bindings, older experiments
        ("cell [3]", "FUNCTION", "", rw.ROLE_CELL),  # Score-P's user API, group "cell"
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


@pytest.mark.parametrize(
    ("name", "group", "role"),
    [
        ("training loop", "cell", rw.ROLE_CELL),  # a labelled cell, by its group
        ("cell [3]", "cell", rw.ROLE_CELL),
        ("cell [3]", None, rw.ROLE_CELL),  # by its name, where no group was read
        ("cell:f", "cell", rw.ROLE_FUNCTION),  # a function of a module named cell
        ("cell.K:m", "cell", rw.ROLE_FUNCTION),  # a method of a class of that module
        ("training loop", "__main__", rw.ROLE_FUNCTION),
        ("user:phase", "cell", rw.ROLE_USER),
    ],
)
def test_a_cell_is_found_by_its_group(name, group, role):
    assert rw.decode_region_role("", "FUNCTION", name, group) == role
    assert rw.is_cell_region(name, group) == (role == rw.ROLE_CELL)
    shown = rw.cell_region_label(name, group)
    assert (shown == name) if role == rw.ROLE_CELL else (shown is None)
