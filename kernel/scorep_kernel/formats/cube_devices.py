"""A Recording's accelerator streams in its CUBE4 profile, as Score-P's profile holds
them: each stream a location of type ``accelerator stream`` in a location group ``CUDA
Context <device>`` (type ``accelerator``) under a system tree node of class ``CUDA
Device``, beside the process; its kernels, copies and sets are call paths of their own
(top level, beneath the profile's root). The time of a stream's call paths is device
time."""

from __future__ import annotations

from .cube_writer import _text, write_cubex
from .recording import Recording


def system_xml(hostname: str, threads: list[str], recording: Recording) -> str:
    """The system tree: machine -> node -> Process (threads), then one node per device
    -> its context -> its streams. Location ids run depth first, threads then streams."""
    lines = [" <system>\n", '  <systemtreenode Id="0">\n', "   <name>Linux</name>\n",
             "   <class>machine</class>\n", '   <systemtreenode Id="1">\n',
             f"    <name>{_text(hostname or 'localhost')}</name>\n", "    <class>node</class>\n",
             '    <locationgroup Id="0">\n', "     <name>Process</name>\n",
             "     <rank>0</rank>\n", "     <type>process</type>\n"]  # fmt: skip
    for i, name in enumerate(threads):
        lines.append(
            f'     <location Id="{i}">\n      <name>{_text(name)}</name>\n'
            f"      <rank>{i}</rank>\n      <type>thread</type>\n     </location>\n"
        )
    lines.append("    </locationgroup>\n")
    location = len(threads)
    node_id, group_id = 2, 1
    devices = sorted({s.device for s in recording.devices})
    for device in devices:
        lines += [f'    <systemtreenode Id="{node_id}">\n', f"     <name>{device}</name>\n",
                  "     <class>CUDA Device</class>\n", f'     <locationgroup Id="{group_id}">\n',
                  f"      <name>CUDA Context {device}</name>\n",
                  f"      <rank>{device}</rank>\n", "      <type>accelerator</type>\n"]  # fmt: skip
        for rank, s in enumerate(d for d in recording.devices if d.device == device):
            lines.append(
                f'      <location Id="{location}">\n       <name>{_text(s.name)}</name>\n'
                f"       <rank>{rank}</rank>\n       <type>accelerator stream</type>\n"
                "      </location>\n"
            )
            location += 1
        lines += ["     </locationgroup>\n", "    </systemtreenode>\n"]
        node_id += 1
        group_id += 1
    lines += ["   </systemtreenode>\n", "  </systemtreenode>\n", " </system>\n"]
    return "".join(lines)


def write_cubex_with_devices(recording: Recording, path) -> dict:
    """profile.cubex of the host threads and the device streams."""
    from ..accel.device_recording import with_device_lanes

    combined = with_device_lanes(recording)
    system = system_xml(recording.hostname, [t.name for t in recording.threads], recording)
    return write_cubex(combined, path, system=system)
