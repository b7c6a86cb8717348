"""Writers of the builtin backend: the OTF2 trace and the CUBE4 profile of a Recording.

``otf2_writer.write_otf2`` and ``cube_writer.write_cubex`` are the entry points;
``callpath.build_profile`` computes the call-path profile the CUBE4 file holds.
"""

# Written into both files' creator fields (OTF2 archive creator, CUBE "Creator" attribute).
CREATOR = "jupyterlab-scorep builtin tracer"
