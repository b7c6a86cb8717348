"""The builtin writer's OTF2 event files, byte by byte: a contract between the kernel and
the server.

The kernel's fast encoder (``formats._otf2_encode``) writes a location's enter/leave
events as these bytes, the very ones libotf2 writes for ``OTF2_EvtWriter_Enter`` /
``_Leave`` without attribute lists (kernel/tests/test_otf2_writer_engines.py checks byte
equality with libotf2's own output); the server's numpy decoder
(``jupyterlab_scorep.otf2_decode``) reads them back. Both take the values below from
here, and server_ext/tests/test_otf2_decode.py reads the encoder's output with the
decoder. Standard library only: the server imports it as it imports ``experiment``.

The layout, from OTF2 3.0's OTF2_Buffer.[ch] and OTF2_EvtWriter.c (trace format 2):

- The file is a sequence of chunks of ``chunk_size`` bytes (``CHUNK_SIZE`` here,
  recorded in the anchor file); the last chunk is cut after its final byte.
- Chunk header (``HEADER_SIZE`` = 18 bytes): ``CHUNK_HEADER``, ``LITTLE_ENDIAN``, uint64
  number of the chunk's first event (1-based), uint64 number of its last event.
- A timestamp record (``TIMESTAMP`` + uint64, ``TIMESTAMP_SIZE`` bytes) is written before
  an event whose time is greater than the previous one, and at the start of every chunk.
- ``ENTER`` / ``LEAVE`` + a compressed region ref, where a compressed uint32 is ``0x00``
  for 0, ``0xFF`` (``COMPRESSED_UINT32_MAX``) for UINT32_MAX, else a byte count n (1-4)
  and the n low bytes, little endian. The encoder writes refs up to ``MAX_REF`` only.
- A thread other than the master (as Score-P's pthread adapter writes it) begins with
  an ``ATTRIBUTE_LIST`` (one attribute: the ThreadId, a compressed uint32 count, the
  attribute ref, its type ``TYPE_UINT64`` and a compressed uint64) and a ``THREAD_BEGIN``
  as its first event, and ends with a ``THREAD_END`` as its last; both hold a compressed
  uint32 contingent (the COMM ref) and a compressed uint64 sequence count (always
  undefined: ``0xFF``). libotf2 requests ``THREAD_REQUEST_SIZE`` bytes for a THREAD_END
  (record id, length byte, 5 + 9 bytes of fields, a timestamp's 9).
- Every other record (libotf2's, never the builtin writer's) is its type, a length byte
  (0xFF: a uint64 length follows) and that many bytes; ``ATTRIBUTE_LIST`` is the highest
  record type that is not an event (the chunk headers count every record above it).
- Before each event libotf2 requests ``REQUEST_SIZE`` bytes (the record's upper bound
  plus a timestamp); a new chunk starts when ``used + REQUEST_SIZE >= chunk_size``.
  Unused chunk bytes are ``END_OF_CHUNK`` (0x00).
- The file ends with ``END_OF_FILE`` and ``END_OF_BUFFER``.
"""

from __future__ import annotations

CHUNK_SIZE = 1024 * 1024  # the otf2 package's default chunk_size_events

# record types (the first byte of a record)
END_OF_CHUNK = 0x00
END_OF_BUFFER = 0x01
END_OF_FILE = 0x02
CHUNK_HEADER = 0x03
TIMESTAMP = 0x05
ATTRIBUTE_LIST = 0x06
ENTER = 0x0C
LEAVE = 0x0D
THREAD_BEGIN = 0x3F
THREAD_END = 0x41

LITTLE_ENDIAN = 0x42  # the chunk header's second byte
HEADER_SIZE = 18
TIMESTAMP_SIZE = 9
COMPRESSED_UINT32_MAX = 0xFF  # the count byte that stands for UINT32_MAX
# OTF2_EvtWriter_Enter/Leave request 1 (record id) + 5 (uint32 + length byte) bytes,
# plus a timestamp's 9.
REQUEST_SIZE = 6 + TIMESTAMP_SIZE
THREAD_REQUEST_SIZE = 1 + 1 + 5 + 9 + TIMESTAMP_SIZE
TYPE_UINT64 = 0x04  # OTF2_TYPE_UINT64, the ThreadId attribute's type
MAX_REF = 0xFFFFFF  # refs up to 3 bytes keep every record at least 2 bytes under the request
