/* One pass over a location's OTF2 event file: what the timeline index draws (Enter/Leave,
 * Metric, BufferFlush, MeasurementOnOff, the first ProgramBegin: otf2_scan_location), or
 * its MPI messages and collectives (MpiSend, MpiIsend, MpiRecv, MpiIrecv, MpiCollectiveEnd:
 * otf2_scan_mpi, for GET ranks' matrix), read as libotf2 reads it, at the speed of a byte
 * loop.
 *
 * Why C: records are of variable length, so where one begins is only known from the one
 * before; numpy has to guess record starts and check its guesses (otf2_decode.py), which
 * caps it at ~2.5M events/s, while this loop reads ~100M/s (10 ms per 1M events). It is a
 * plain shared library loaded with ctypes (no Python headers, one ABI for every Python),
 * built by the wheel's build hook (hatch_build.py) and by `make setup`; where it is
 * missing, the numpy decoder and then libotf2's callbacks read the file, with the same
 * results.
 *
 * What libotf2 applies while reading, this applies too, from the location's local
 * definitions (read through libotf2 by otf2_local_defs.py and handed in): the id mapping
 * tables of regions and metrics (Score-P writes events with process-local ids), and the
 * clock offsets (a timestamp is corrected by the offset interpolated between the
 * location's ClockOffset records, exactly as otf2_evt_reader_apply_clock_correction does).
 *
 * The format (OTF2 3.0, trace format 2; kernel/scorep_kernel/formats/_otf2_encode.py has
 * the details): chunks of chunk_size bytes, each with an 18-byte header (0x03, 0x42, the
 * numbers of its first and last event); records: TIMESTAMP 0x05 + uint64 (the time of
 * the records after it); the "singleton" events (Enter 0x0C, Leave 0x0D and eight MPI/OMP
 * ones, see is_singleton) are their type and one compressed integer (a count byte 0-8 and
 * that many bytes, or 0xFF for the undefined value); every other record is its type, a
 * length byte (0xFF: a uint64 length follows) and that many bytes, of which a reader reads
 * the fields it knows and steps over the rest; END_OF_CHUNK 0x00 (padding follows);
 * END_OF_FILE 0x02 + END_OF_BUFFER 0x01 as the file's last two bytes.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Bump when the interface changes: the Python side refuses a library of another version. */
#define OTF2_SCAN_ABI 5

enum {
    SCAN_OK = 0,
    SCAN_MALFORMED = 2, /* not what this reader expects: the caller falls back */
    SCAN_FULL = 3,      /* more metric values than the caller made room for (it retries) */
};

enum {
    END_OF_CHUNK = 0x00, END_OF_FILE = 0x02, END_OF_BUFFER = 0x01, CHUNK_HEADER = 0x03,
    TIMESTAMP = 0x05, ATTRIBUTE_LIST = 0x06, BUFFER_FLUSH = 10, MEASUREMENT_ON_OFF = 11,
    ENTER = 12, LEAVE = 13, METRIC = 31, PROGRAM_BEGIN = 83,
    MPI_SEND = 14, MPI_ISEND = 15, MPI_RECV = 18, MPI_IRECV = 19, MPI_COLLECTIVE_END = 23,
    HEADER_SIZE = 18,
    TYPE_INT64 = 8, TYPE_DOUBLE = 10, /* OTF2_Type */
};

/* What a mark (flush or on/off switch) holds: 4 int64 each. */
enum { MARK_FLUSH = 1, MARK_ON_OFF = 2, MARK_FIELDS = 4 };

typedef struct {
    /* in: the location's local definitions (NULL / 0: none) */
    const uint32_t *region_map; /* local region id -> global; ids past the end as recorded */
    uint64_t region_map_size;
    const uint32_t *metric_map;
    uint64_t metric_map_size;
    const uint64_t *clock_times; /* the ClockOffset records, in file order */
    const int64_t *clock_offsets;
    uint64_t n_clock;
    /* in: the archive's metrics (NULL / 0: none): member_table[metric * member_width + i]
     * is the member ref of value i of a global metric (-1: none), member_scale[member] the
     * factor its recorded values are in (base**exponent) */
    const int32_t *member_table;
    uint64_t member_rows;
    uint64_t member_width;
    const double *member_scale;
    uint64_t n_members;
    /* out: Enter/Leave (capacity = the events the chunk headers announce) */
    int64_t *times;
    int64_t *regions; /* region for Enter, ~region for Leave */
    uint64_t capacity;
    uint64_t n_events;
    /* out: one row per metric value, decoded as otf2_read's on_metric does (a DOUBLE's
     * bits, INT64 signed, the rest unsigned; times its member's scale); n_metric_values
     * counts them all, also past capacity */
    int64_t *metric_times;
    int32_t *metric_members;
    double *metric_values;
    uint64_t metric_capacity;
    uint64_t n_metric_values;
    /* out: MARK_FIELDS int64 per flush or switch: kind, Enter/Leave position, time, value
     * (a flush's stop time, a switch's measurement mode); capacity as for events */
    int64_t *marks;
    uint64_t mark_capacity;
    uint64_t n_marks;
    int64_t program_begin; /* time of the first ProgramBegin, -1 if none */
} otf2_scan_io;

/* What otf2_scan_mpi reads: the MPI records libotf2's MpiSend, MpiIsend, MpiRecv, MpiIrecv
 * and MpiCollectiveEnd callbacks get, with the communicator mapped by the location's
 * local definitions, as libotf2 maps it (OTF2_MAPPING_COMM). Every array has room for
 * `capacity` rows: the events the chunk headers announce (otf2_scan_announced). */
typedef struct {
    /* in: local communicator id -> global (NULL / 0: none; ids past the end as recorded) */
    const uint32_t *comm_map;
    uint64_t comm_map_size;
    uint64_t capacity;
    /* out: one row per point-to-point record, in file order: its record type (MPI_SEND,
     * MPI_ISEND, MPI_RECV, MPI_IRECV), the peer (receiver of a send, sender of a receive:
     * a rank of the communicator), the communicator, the tag, the message's bytes */
    uint8_t *p2p_type;
    uint32_t *p2p_peer;
    uint32_t *p2p_comm;
    uint32_t *p2p_tag;
    uint64_t *p2p_bytes;
    uint64_t n_p2p;
    /* out: one row per MpiCollectiveEnd: operation, communicator, root, bytes sent and
     * received */
    uint8_t *coll_op;
    uint32_t *coll_comm;
    uint32_t *coll_root;
    uint64_t *coll_sent;
    uint64_t *coll_received;
    uint64_t n_coll;
} otf2_scan_mpi_io;

int otf2_scan_abi(void) { return OTF2_SCAN_ABI; }

static uint64_t load_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8); /* little endian: checked by the chunk header's 0x42 on LE hosts */
    return v;
}

/* Singleton events: one compressed attribute, no length byte (libotf2's
 * otf2_evt_reader_skip lists them; "there won't be any after 1.1"). */
static int is_singleton(uint8_t type) {
    switch (type) {
    case ENTER: case LEAVE:
    case 16: case 17: case 20: case 21: /* MpiIsendComplete, MpiIrecvRequest, MpiRequestTest, -Cancelled */
    case 24: case 28: case 29: case 30: /* OmpFork, OmpTaskCreate, -Switch, -Complete */
        return 1;
    default:
        return 0;
    }
}

/* A compressed integer at p (a count byte, then that many little-endian bytes; 0xFF: all
 * ones) of at most max_bytes, ending by end: its size in bytes, or 0 where it is not one. */
static uint64_t read_compressed(const uint8_t *p, const uint8_t *end, unsigned max_bytes,
                                uint64_t *value) {
    if (p >= end) return 0;
    uint8_t count = p[0];
    if (count == 0xFF) {
        *value = max_bytes == 4 ? 0xFFFFFFFFULL : UINT64_MAX;
        return 1;
    }
    if (count > max_bytes || (uint64_t)(end - p) < 1u + count) return 0;
    uint64_t v = 0;
    for (unsigned k = 0; k < count; k++) v |= (uint64_t)p[1 + k] << (8 * k);
    *value = v;
    return 1u + count;
}

/* The clock correction of libotf2 (otf2_archive_location_add_clock_offset builds the
 * intervals between consecutive ClockOffset records; otf2_evt_reader_apply_clock_correction
 * moves forward through them as times come and interpolates), with the same arithmetic. */
typedef struct {
    const uint64_t *times;
    const int64_t *offsets;
    uint64_t n_intervals; /* n_clock - 1, or 0: no correction */
    uint64_t current;
    double slope;
} clock_state;

static double interval_slope(const clock_state *c, uint64_t i) {
    return (double)(c->offsets[i + 1] - c->offsets[i]) /
           (double)(c->times[i + 1] - c->times[i]);
}

static uint64_t corrected(clock_state *c, uint64_t time) {
    if (c->n_intervals == 0) return time;
    /* timestamps past the last interval use the last one */
    while (c->current + 1 < c->n_intervals && time > c->times[c->current + 1]) {
        c->current++;
        c->slope = interval_slope(c, c->current);
    }
    if (c->slope == 0.0 && c->offsets[c->current] == 0) return time; /* what rint gives */
    const uint64_t begin = c->times[c->current];
    const double diff = time >= begin ? (double)(time - begin) : -(double)(begin - time);
    const double interpolated = c->slope * diff;
    const int64_t offset = c->offsets[c->current] + (int64_t)rint(interpolated);
    return time + (uint64_t)offset;
}

static uint32_t mapped(const uint32_t *map, uint64_t size, uint32_t local) {
    return map != NULL && local < size ? map[local] : local;
}

/* One record of length form at body..body_end (type already known): what is drawn. */
static int read_record(uint8_t type, const uint8_t *body, const uint8_t *body_end,
                       int64_t now, clock_state *clock, otf2_scan_io *io) {
    uint64_t v, size;
    if (type == METRIC) {
        const uint8_t *q = body;
        if (!(size = read_compressed(q, body_end, 4, &v))) return SCAN_MALFORMED;
        q += size;
        uint32_t metric = mapped(io->metric_map, io->metric_map_size, (uint32_t)v);
        if (q >= body_end) return SCAN_MALFORMED;
        uint8_t count = *q++;
        for (unsigned i = 0; i < count; i++) {
            if (q >= body_end) return SCAN_MALFORMED;
            uint8_t value_type = *q++;
            if (!(size = read_compressed(q, body_end, 8, &v))) return SCAN_MALFORMED;
            q += size;
            uint64_t k = io->n_metric_values++;
            if (k < io->metric_capacity) {
                int32_t member = metric < io->member_rows && i < io->member_width
                                     ? io->member_table[metric * io->member_width + i]
                                     : -1;
                double value;
                if (value_type == TYPE_DOUBLE) memcpy(&value, &v, 8);
                else if (value_type == TYPE_INT64) value = (double)(int64_t)v;
                else value = (double)v;
                if (member >= 0 && (uint64_t)member < io->n_members)
                    value *= io->member_scale[member];
                io->metric_times[k] = now;
                io->metric_members[k] = member;
                io->metric_values[k] = value;
            }
        }
        return SCAN_OK;
    }
    if (type == BUFFER_FLUSH || type == MEASUREMENT_ON_OFF) {
        uint64_t need = type == BUFFER_FLUSH ? 8 : 1;
        if ((uint64_t)(body_end - body) < need || io->n_marks >= io->mark_capacity)
            return SCAN_MALFORMED;
        int64_t *mark = io->marks + MARK_FIELDS * io->n_marks++;
        mark[0] = type == BUFFER_FLUSH ? MARK_FLUSH : MARK_ON_OFF;
        mark[1] = (int64_t)io->n_events;
        mark[2] = now;
        /* the stop time is a timestamp: corrected after the record's own, as libotf2 does */
        mark[3] = type == BUFFER_FLUSH ? (int64_t)corrected(clock, load_u64(body)) : body[0];
        return SCAN_OK;
    }
    if (type == PROGRAM_BEGIN && io->program_begin < 0) io->program_begin = now;
    return SCAN_OK;
}

/* The compressed fields of an MPI record, in order: each a uint32 or uint64 as libotf2's
 * OTF2_Buffer_ReadUint32 / 64 reads it (a count byte above the width is an error there). */
static int read_fields(const uint8_t **q, const uint8_t *end, const unsigned *widths,
                       unsigned n, uint64_t *values) {
    for (unsigned i = 0; i < n; i++) {
        uint64_t size = read_compressed(*q, end, widths[i], values + i);
        if (!size) return SCAN_MALFORMED;
        *q += size;
    }
    return SCAN_OK;
}

/* One MPI record of length form at body..body_end: a row of io's tables. Fields past the
 * ones read are stepped over, as libotf2 does; a body too short for them is left to
 * libotf2 (it would read on into the next record). */
static int read_mpi_record(uint8_t type, const uint8_t *body, const uint8_t *body_end,
                           otf2_scan_mpi_io *io) {
    static const unsigned p2p_widths[4] = {4, 4, 4, 8}; /* peer, comm, tag, bytes */
    static const unsigned coll_widths[4] = {4, 4, 8, 8}; /* comm, root, sent, received */
    uint64_t f[4];
    const uint8_t *q = body;
    if (type == MPI_SEND || type == MPI_ISEND || type == MPI_RECV || type == MPI_IRECV) {
        /* the request id of MpiIsend / MpiIrecv is not needed, but libotf2 reads it */
        if (read_fields(&q, body_end, p2p_widths, 4, f) != SCAN_OK) return SCAN_MALFORMED;
        if (type == MPI_ISEND || type == MPI_IRECV) {
            uint64_t request;
            if (!read_compressed(q, body_end, 8, &request)) return SCAN_MALFORMED;
        }
        uint64_t k = io->n_p2p;
        if (k >= io->capacity) return SCAN_MALFORMED;
        io->p2p_type[k] = type;
        io->p2p_peer[k] = (uint32_t)f[0];
        io->p2p_comm[k] = mapped(io->comm_map, io->comm_map_size, (uint32_t)f[1]);
        io->p2p_tag[k] = (uint32_t)f[2];
        io->p2p_bytes[k] = f[3];
        io->n_p2p = k + 1;
        return SCAN_OK;
    }
    if (type == MPI_COLLECTIVE_END) {
        if (q >= body_end) return SCAN_MALFORMED;
        uint8_t op = *q++; /* one raw byte (OTF2_CollectiveOp) */
        if (read_fields(&q, body_end, coll_widths, 4, f) != SCAN_OK) return SCAN_MALFORMED;
        uint64_t k = io->n_coll;
        if (k >= io->capacity) return SCAN_MALFORMED;
        io->coll_op[k] = op;
        io->coll_comm[k] = mapped(io->comm_map, io->comm_map_size, (uint32_t)f[0]);
        io->coll_root[k] = (uint32_t)f[1];
        io->coll_sent[k] = f[2];
        io->coll_received[k] = f[3];
        io->n_coll = k + 1;
    }
    return SCAN_OK;
}

/* Why otf2_scan_announced refuses a file (otf2_scan.py words each). */
enum {
    ANNOUNCED_SHORT = -1,      /* shorter than a chunk header */
    ANNOUNCED_CUT = -2,        /* cut inside a chunk header */
    ANNOUNCED_NOT_CHUNKS = -3, /* not chunks of this size (or big endian) */
    ANNOUNCED_IMPOSSIBLE = -4, /* a header's event numbers cannot be */
    ANNOUNCED_TOO_MANY = -5,   /* more events than the bytes can hold */
};

/* The number of events the chunk headers announce (room for every Enter/Leave and mark
 * the scan can write), or an ANNOUNCED_* code: one look at each chunk's header, so the
 * caller sizes its arrays without a pass of its own. */
int64_t otf2_scan_announced(const uint8_t *buf, uint64_t n, uint64_t chunk_size) {
    if (n < HEADER_SIZE || chunk_size <= HEADER_SIZE) return ANNOUNCED_SHORT;
    int64_t total = 0;
    if ((n - 1) / chunk_size * chunk_size + HEADER_SIZE > n) return ANNOUNCED_CUT;
    for (uint64_t c0 = 0; c0 < n; c0 += chunk_size) {
        if (buf[c0] != CHUNK_HEADER || buf[c0 + 1] != 0x42) return ANNOUNCED_NOT_CHUNKS;
    }
    for (uint64_t c0 = 0; c0 < n; c0 += chunk_size) {
        /* as int64 with wrap-around, as numpy computes it */
        int64_t announced = (int64_t)(load_u64(buf + c0 + 10) + 1 - load_u64(buf + c0 + 2));
        if (announced < 0 || (uint64_t)announced > n) return ANNOUNCED_IMPOSSIBLE;
        total += announced;
    }
    if ((uint64_t)total > n / 2) return ANNOUNCED_TOO_MANY; /* a record is >= 2 bytes */
    return total;
}

/* The one pass over the chunks and their records, for both readings: the drawn events
 * into io (mpi NULL), or the MPI records into mpi (io NULL; no time is corrected, none is
 * kept). The checks of the file's structure are the same for both. */
static int walk(const uint8_t *buf, uint64_t n, uint64_t chunk_size, otf2_scan_io *io,
                otf2_scan_mpi_io *mpi) {
    uint64_t raw = 0;
    int have_time = 0;
    int64_t now = 0;
    clock_state clock = {NULL, NULL, 0, 0, 0.0};
    if (io != NULL) {
        clock.times = io->clock_times;
        clock.offsets = io->clock_offsets;
        io->n_events = io->n_metric_values = io->n_marks = 0;
        io->program_begin = -1;
        if (io->n_clock >= 2) {
            for (uint64_t i = 1; i < io->n_clock; i++)
                if (io->clock_times[i - 1] >= io->clock_times[i]) return SCAN_MALFORMED;
            clock.n_intervals = io->n_clock - 1;
            clock.slope = interval_slope(&clock, 0);
        }
    } else {
        mpi->n_p2p = mpi->n_coll = 0;
    }
    if (n < HEADER_SIZE || chunk_size <= HEADER_SIZE) return SCAN_MALFORMED;
    for (uint64_t c0 = 0; c0 < n; c0 += chunk_size) {
        uint64_t c1 = c0 + chunk_size < n ? c0 + chunk_size : n;
        int last_chunk = c1 == n;
        if (c1 - c0 < HEADER_SIZE || buf[c0] != CHUNK_HEADER || buf[c0 + 1] != 0x42)
            return SCAN_MALFORMED;
        uint64_t first = load_u64(buf + c0 + 2), last = load_u64(buf + c0 + 10);
        uint64_t counted = 0;
        uint64_t p = c0 + HEADER_SIZE;
        int ended = 0;
        while (p < c1) {
            uint8_t type = buf[p];
            if (type == END_OF_CHUNK) {
                if (last_chunk) return SCAN_MALFORMED; /* a file ends with END_OF_FILE */
                ended = 1;
                break;
            }
            if (type == END_OF_FILE) {
                if (!last_chunk || p + 2 != n || buf[p + 1] != END_OF_BUFFER)
                    return SCAN_MALFORMED;
                ended = 1;
                break;
            }
            if (type == TIMESTAMP) {
                if (p + 9 > c1) return SCAN_MALFORMED;
                raw = load_u64(buf + p + 1);
                have_time = 1;
                p += 9;
                continue;
            }
            if (type < ATTRIBUTE_LIST) return SCAN_MALFORMED; /* 0x01, 0x03, 0x04 */
            if (type != ATTRIBUTE_LIST) {
                if (!have_time) return SCAN_MALFORMED; /* an event before any time */
                /* every event's time is corrected once, in order, as libotf2 does */
                if (io != NULL) now = (int64_t)corrected(&clock, raw);
                counted++;
            }
            if (is_singleton(type)) {
                uint64_t v, size = read_compressed(buf + p + 1, buf + c1, 8, &v);
                if (!size) return SCAN_MALFORMED;
                if (type == ENTER || type == LEAVE) {
                    if (size > 5) return SCAN_MALFORMED; /* a region is a uint32 */
                    if (io == NULL) {
                        p += 1 + size;
                        continue;
                    }
                    if (io->n_events >= io->capacity) return SCAN_MALFORMED;
                    uint32_t region = mapped(io->region_map, io->region_map_size, (uint32_t)v);
                    io->times[io->n_events] = now;
                    io->regions[io->n_events] = type == ENTER ? (int64_t)region : ~(int64_t)region;
                    io->n_events++;
                }
                p += 1 + size;
                continue;
            }
            /* any other record: its length byte (0xFF: a uint64 length) and that many bytes */
            if (p + 2 > c1) return SCAN_MALFORMED;
            uint64_t length = buf[p + 1], body = p + 2;
            if (length == 0xFF) {
                if (p + 10 > c1) return SCAN_MALFORMED;
                length = load_u64(buf + p + 2);
                body = p + 10;
            }
            if (length > c1 - body) return SCAN_MALFORMED;
            if (type != ATTRIBUTE_LIST) {
                int status = io != NULL
                                 ? read_record(type, buf + body, buf + body + length, now, &clock, io)
                                 : read_mpi_record(type, buf + body, buf + body + length, mpi);
                if (status != SCAN_OK) return status;
            }
            p = body + length;
        }
        if (!ended) return SCAN_MALFORMED; /* a chunk's records ran into its end */
        /* the header counts the events (every record but timestamps, attribute lists and
         * end markers): a reading that lost its way cannot match it */
        if (last + 1 - first != counted) return SCAN_MALFORMED;
    }
    return io != NULL && io->n_metric_values > io->metric_capacity ? SCAN_FULL : SCAN_OK;
}

/* Reads the file into io (see otf2_scan_io). Returns a SCAN_* code. */
int otf2_scan_location(const uint8_t *buf, uint64_t n, uint64_t chunk_size, otf2_scan_io *io) {
    return walk(buf, n, chunk_size, io, NULL);
}

/* Reads the file's MPI records into io (see otf2_scan_mpi_io). Returns a SCAN_* code. */
int otf2_scan_mpi(const uint8_t *buf, uint64_t n, uint64_t chunk_size, otf2_scan_mpi_io *io) {
    return walk(buf, n, chunk_size, NULL, io);
}
