"""Reading an experiment's files: the OTF2 trace, its index, the CUBE4 profile. Nothing
here knows HTTP; failures are the trace's own exceptions (``otf2_read.TraceReadError``,
``calltree.ProfileReadError``) or the domain errors of ``..domain_errors``.

    otf2_definitions.py  the archive's definitions (clock, regions, locations)
    otf2_global_defs.py  the global definition records, read with ctypes callbacks
    otf2_read.py         all events of an archive: libotf2 callbacks, after the fast paths
    otf2_events.py       a location's events as every reader gives them (``LocationEvents``)
    otf2_fast.py         the fast paths: the native scanner, else the numpy decoder
    otf2_scan.py         the native scanner (server_ext/native/otf2_scan.c) through ctypes
    otf2_local_defs.py   each location's local definitions, for the native scanner
    otf2_decode.py       numpy decoder of the builtin writer's event files
    device_read.py       accelerator records: launch links and copies
    mpi_read.py          MPI records: messages and collectives, summed per rank
    mpi_scan.py          a location's MPI records by the native scanner, as numpy arrays
    intervals.py         Enter/Leave streams -> interval tables and the call-path profile
    lod.py               timeline level of detail (what to draw per pixel)
    index_build.py       the columnar trace index under ``.index/trace-v3/``
    index_store.py       find, validate, lock and load indexes (memory-mapped, LRU)
    parse_worker.py      the child process the parsers run in (crash and hang isolation)
    calltree.py          the call tree from profile.cubex or from the index
    timeline.py          a window of the trace at a pixel width (or its heat map)
    busy_time.py         many locations' busy time per time column (the heat map's numbers)
    processes.py         the locations by process (rank) in rank order (``ranks=lo:hi``)
"""
