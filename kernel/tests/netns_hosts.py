"""Hosts for MPI tests: network namespaces on this machine, each its own host.

``make_hosts(names)`` makes, for each name, a network namespace, all on one link (a
bridge in the first host's namespace, a veth pair to it from each other host; addresses
10.224.0.<i+1>/24, the namespaces' own, never the machine's); each namespace gets /etc/netns/<name>/hosts (``ip netns exec`` mounts it over /etc/hosts there)
naming every host, and a boot id of its own (/run/scorep-kernel-hosts/<name>/boot_id,
mounted over /proc/sys/kernel/random/boot_id in a mount namespace), so that a process
there is on another host for the kernel: another hostname (a UTS namespace), another
boot id, another address. ``enter(name)`` is the command prefix that runs a command on a
host; ``agent`` is Open MPI's rsh agent (``--mca plm_rsh_agent``) doing the same for
mpirun's daemons. Everything made is removed by ``remove_hosts``. Root only; where the
machine refuses (no CAP_SYS_ADMIN, no ``ip``), ``why_not()`` says why."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import uuid
from pathlib import Path

RUN_DIR = Path("/run/scorep-kernel-hosts")
ENTER = 'hostname "$0"; mount --bind {run}/"$0"/boot_id /proc/sys/kernel/random/boot_id; exec "$@"'
AGENT = """#!/bin/sh
# Open MPI's rsh agent: "agent HOST COMMAND..." runs COMMAND on HOST, a network namespace
host=$1; shift
exec ip netns exec "$host" unshare --uts --mount --propagation private \\
  sh -c 'hostname "$0"; mount --bind {run}/"$0"/boot_id /proc/sys/kernel/random/boot_id; exec sh -c "$1"' \\
  "$host" "$*"
"""


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


def why_not() -> str:
    """Why namespaces cannot be made here ("" when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare", "mount", "hostname"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH (Debian: iproute2, util-linux)"
    probe = f"skprobe{os.getpid()}"
    made = _ip("netns", "add", probe)
    if made.returncode:
        return f"`ip netns add` was refused: {made.stderr.strip()}"
    try:
        entered = subprocess.run(
            ["ip", "netns", "exec", probe, "unshare", "--uts", "--mount", "true"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if entered.returncode:
            return f"entering a namespace was refused: {entered.stderr.strip()}"
    finally:
        _ip("netns", "del", probe)
    return ""


def address(hosts: list[str], name: str) -> str:
    return f"10.224.0.{hosts.index(name) + 1}"


def make_hosts(hosts: list[str]) -> None:
    """The namespaces, all on one L2 link: the first host's namespace holds a bridge that
    every other host's veth pair joins (10.224.0.<i+1>/24)."""
    first = hosts[0]
    for name in hosts:
        _check(_ip("netns", "add", name))
        _check(_ip("-n", name, "link", "set", "lo", "up"))
        (RUN_DIR / name).mkdir(parents=True, exist_ok=True)
        (RUN_DIR / name / "boot_id").write_text(str(uuid.uuid4()) + "\n")
        etc = Path("/etc/netns") / name
        etc.mkdir(parents=True, exist_ok=True)
        lines = ["127.0.0.1 localhost"] + [f"{address(hosts, h)} {h}" for h in hosts]
        (etc / "hosts").write_text("\n".join(lines) + "\n")
    _check(_ip("-n", first, "link", "add", "skbr", "type", "bridge"))
    _check(_ip("-n", first, "addr", "add", f"{address(hosts, first)}/24", "dev", "skbr"))
    _check(_ip("-n", first, "link", "set", "skbr", "up"))
    for i, name in zip(itertools.count(1), hosts[1:]):
        near, far = f"skb{i}", f"skh{i}"
        _check(_ip("link", "add", near, "netns", first, "type", "veth", "peer", "name", far,
                   "netns", name))  # fmt: skip
        _check(_ip("-n", first, "link", "set", near, "master", "skbr", "up"))
        _check(_ip("-n", name, "addr", "add", f"{address(hosts, name)}/24", "dev", far))
        _check(_ip("-n", name, "link", "set", far, "up"))
    agent = RUN_DIR / "agent.sh"
    agent.write_text(AGENT.format(run=RUN_DIR))
    agent.chmod(0o755)


def enter(name: str) -> list[str]:
    """The command prefix that runs a command on host ``name`` (it execs: same pid)."""
    return ["ip", "netns", "exec", name, "unshare", "--uts", "--mount", "--propagation",
            "private", "sh", "-c", ENTER.format(run=RUN_DIR), name]  # fmt: skip


def agent() -> str:
    return str(RUN_DIR / "agent.sh")


def link(name: str, up: bool) -> None:
    """Cut (or restore) host ``name``'s link to the others."""
    for dev in _ip("-n", name, "-o", "link", "show").stdout.splitlines():
        ifname = dev.split(":")[1].strip().split("@")[0]
        if ifname.startswith(("skh", "skbr")):
            _check(_ip("-n", name, "link", "set", ifname, "up" if up else "down"))


def remove_hosts(hosts: list[str]) -> None:
    for name in hosts:
        _ip("netns", "del", name)  # its veth ends go with it
        shutil.rmtree(Path("/etc/netns") / name, ignore_errors=True)
        shutil.rmtree(RUN_DIR / name, ignore_errors=True)
    (RUN_DIR / "agent.sh").unlink(missing_ok=True)


def _check(done: subprocess.CompletedProcess) -> None:
    if done.returncode:
        raise RuntimeError(f"{' '.join(done.args)}: {done.stderr.strip()}")
