"""MPI cells' settings without MPI: the ``mpi`` cell metadata and ``%%scorep_mpi`` checked
and explained, the settings precedence, the launcher chosen and its command line."""

from __future__ import annotations

import os
import stat

import pytest

from scorep_kernel.cell_metadata import parse_cell_metadata
from scorep_kernel.mpi import config
from scorep_kernel.mpi.config import check_mpi, launch_command, parse_mpi_magic
from scorep_kernel.settings import (
    MPI_ISOLATION,
    Availability,
    KernelSettings,
    MpiSettings,
    SettingsError,
)

NO_SCOREP = Availability(False, "Score-P not found.", True, "builtin")


def test_metadata_makes_an_mpi_cell():
    parsed = parse_cell_metadata(
        {"scorep": {"profile": True, "mpi": {"ranks": 4, "gather": "x, y", "args": "-H a,b"}}}
    )
    mpi = parsed.settings["mpi"]
    assert mpi == MpiSettings(ranks=4, args=("-H", "a,b"), gather=("x", "y"))
    cell = KernelSettings().resolve(parsed.settings, NO_SCOREP)
    assert cell.isolation == MPI_ISOLATION and cell.mpi == mpi and cell.backend == "builtin"
    # null: an ordinary cell
    plain = parse_cell_metadata({"scorep": {"profile": True, "mpi": None}})
    assert "mpi" not in plain.settings


@pytest.mark.parametrize(
    ("mpi", "words"),
    [
        (4, "must be an object"),
        ({}, "ranks must be a whole number"),
        ({"ranks": 0}, "ranks must be a whole number"),
        ({"ranks": True}, "ranks must be a whole number"),
        ({"ranks": 2, "launcher": ""}, "launcher must be"),
        ({"ranks": 2, "timeout": 0}, "timeout must be seconds"),
        ({"ranks": 2, "gather": ["not a name"]}, "is not a variable name"),
        ({"ranks": 2, "args": 5}, "args must be a list"),
        ({"ranks": 2, "hosts": 3}, "unknown key 'hosts'"),
        ({"ranks": 2, "fresh": "yes"}, "fresh must be true or false"),
    ],
)
def test_bad_mpi_metadata_is_explained(mpi, words):
    with pytest.raises(SettingsError) as error:
        parse_cell_metadata({"scorep": {"profile": True, "mpi": mpi}})
    assert words in str(error.value) and '"scorep".mpi' in str(error.value)


def test_inprocess_cannot_run_ranks():
    parsed = parse_cell_metadata(
        {"scorep": {"profile": True, "isolation": "inprocess", "mpi": {"ranks": 2}}}
    )
    with pytest.raises(SettingsError, match="cannot run a cell as MPI ranks"):
        KernelSettings().resolve(parsed.settings, NO_SCOREP)


def test_magic_line():
    got = parse_mpi_magic("-n 4 --oversubscribe --gather a,b --timeout 30 -- --timeout 9")
    assert got == MpiSettings(
        ranks=4, args=("--oversubscribe", "--timeout", "9"), gather=("a", "b"), timeout=30.0
    )
    assert parse_mpi_magic("--ranks=2 --launcher srun").launcher == "srun"
    fresh = parse_mpi_magic("-n 2 --fresh -- --fresh")
    assert fresh.fresh and fresh.args == ("--fresh",)  # after --: the launcher's
    assert not parse_mpi_magic("-n 2").fresh
    with pytest.raises(SettingsError, match="-n N"):
        parse_mpi_magic("--oversubscribe")
    with pytest.raises(SettingsError, match="needs a whole number"):
        parse_mpi_magic("-n four")
    with pytest.raises(SettingsError, match="needs a value"):
        parse_mpi_magic("-n")


@pytest.fixture
def fake_bin(tmp_path):
    """A PATH with stand-ins for the launchers (``--version`` says what they are)."""

    def make(name: str, version: str) -> str:
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\necho '{version}'\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
        return str(path)

    config.launcher_kind.cache_clear()
    yield make
    config.launcher_kind.cache_clear()


def test_open_mpi_gets_exports_root_and_oversubscription(fake_bin, tmp_path):
    fake_bin("mpirun", "mpirun (Open MPI) 4.1.4")
    env = {"PATH": str(tmp_path)}
    plan = launch_command(MpiSettings(ranks=4), ["TOKEN"], env, cpu_count=2, is_root=True)
    assert plan.kind == "openmpi" and not plan.remote
    assert plan.argv[1:] == [
        "-n", "4", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "TOKEN"
    ]  # fmt: skip
    # enough cores, not root, hosts named: none of the three
    plan = launch_command(MpiSettings(ranks=2, args=("-H", "a,b")), [], env, cpu_count=8,
                          is_root=False)  # fmt: skip
    assert plan.argv[1:] == ["-n", "2", "-H", "a,b"] and plan.remote


def test_slurm_allocation_prefers_srun(fake_bin, tmp_path):
    fake_bin("mpirun", "mpirun (Open MPI) 4.1.4")
    fake_bin("srun", "slurm 23.02")
    env = {"PATH": str(tmp_path), "SLURM_JOB_ID": "42"}
    plan = launch_command(MpiSettings(ranks=3), ["TOKEN"], env)
    assert os.path.basename(plan.launcher) == "srun" and plan.kind == "srun" and plan.remote
    assert plan.argv[1:] == ["-n", "3", "--kill-on-bad-exit=1"]
    # the cell's choice wins over the allocation
    plan = launch_command(MpiSettings(ranks=3, launcher="mpirun"), [], env, is_root=False)
    assert plan.kind == "openmpi"


def test_hydra_and_environment_defaults(fake_bin, tmp_path):
    fake_bin("mpiexec", "HYDRA build details: Version: 4.1")
    env = {"PATH": str(tmp_path), config.ENV_ARGS: "-ppn 2"}
    plan = launch_command(MpiSettings(ranks=2), ["TOKEN"], env)
    assert plan.kind == "hydra" and plan.argv[1:] == ["-n", "2", "-ppn", "2"]
    env[config.ENV_LAUNCHER] = "mpiexec"
    assert config.default_launcher(env) == "mpiexec"


def test_no_launcher_is_explained(tmp_path):
    with pytest.raises(config.LauncherError, match=r"No MPI launcher found.*openmpi-bin"):
        launch_command(MpiSettings(ranks=2), [], {"PATH": str(tmp_path)})
    with pytest.raises(config.LauncherError, match="'/nowhere/mpiexec' was not found"):
        launch_command(MpiSettings(ranks=2, launcher="/nowhere/mpiexec"), [], {"PATH": ""})


def test_check_mpi_round_trips_its_dict():
    s = check_mpi({"ranks": 3, "launcher": "srun", "args": ["-N", "2"], "gather": ["a"],
                   "timeout": 5, "fresh": True})  # fmt: skip
    assert s.fresh and check_mpi(s.as_dict()) == s
