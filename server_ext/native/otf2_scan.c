/* One pass over a location's OTF2 event file: the Enter/Leave events the timeline index
 * needs, as otf2_decode.py reads them with numpy, at the speed of a byte loop.
 *
 * Why C: records are of variable length, so where one begins is only known from the one
 * before; numpy has to guess record starts and check its guesses (otf2_decode.py), which
 * caps it at ~2.5M events/s, while this loop reads ~100M/s (10 ms per 1M events). It is a plain shared library
 * loaded with ctypes (no Python headers, one ABI for every Python), built by the wheel's
 * build hook (hatch_build.py) and by `make setup`; where it is missing, the numpy decoder
 * and then libotf2's callbacks read the file, with the same results.
 *
 * The format (OTF2 3.0, trace format 2; kernel/scorep_kernel/formats/_otf2_encode.py has
 * the details): chunks of chunk_size bytes, each with an 18-byte header (0x03, 0x42, the
 * numbers of its first and last event); records: TIMESTAMP 0x05 + uint64; ENTER 0x0C /
 * LEAVE 0x0D + a compressed uint32 (a count byte 0-4 and that many bytes, or 0xFF for
 * UINT32_MAX); every other record is its type, a length byte (0xFF: a uint64 length
 * follows) and that many bytes; END_OF_CHUNK 0x00 (padding follows); END_OF_FILE 0x02 +
 * END_OF_BUFFER 0x01 as the file's last two bytes.
 */
#include <stdint.h>
#include <string.h>

/* Bump when the interface changes: the Python side refuses a library of another version. */
#define OTF2_SCAN_ABI 1

enum {
    SCAN_OK = 0,
    SCAN_ELSEWHERE = 1, /* records the ctypes reader turns into something drawn */
    SCAN_MALFORMED = 2, /* not what this reader expects: the caller falls back */
    SCAN_FULL = 3,      /* more Enter/Leave events than the chunk headers announce */
};

enum {
    END_OF_CHUNK = 0x00, END_OF_BUFFER = 0x01, END_OF_FILE = 0x02, CHUNK_HEADER = 0x03,
    TIMESTAMP = 0x05, ATTRIBUTE_LIST = 0x06, BUFFER_FLUSH = 0x0A, MEASUREMENT_ON_OFF = 0x0B,
    ENTER = 0x0C, LEAVE = 0x0D, METRIC = 0x1F, PROGRAM_BEGIN = 0x53,
    HEADER_SIZE = 18,
};

int otf2_scan_abi(void) { return OTF2_SCAN_ABI; }

static uint64_t load_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8); /* little endian: checked by the chunk header's 0x42 on LE hosts */
    return v;
}

/* Fills times[i] (ticks as recorded) and signed_regions[i] (region for Enter, ~region for
 * Leave) for up to capacity events; *n_events gets their number, *program_begin the time
 * of the first ProgramBegin (-1 if none). Returns a SCAN_* code. */
int otf2_scan(const uint8_t *buf, uint64_t n, uint64_t chunk_size, int64_t *times,
              int64_t *signed_regions, uint64_t capacity, uint64_t *n_events,
              int64_t *program_begin) {
    uint64_t out = 0;
    int64_t now = -1; /* no timestamp yet */
    *program_begin = -1;
    *n_events = 0;
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
                now = (int64_t)load_u64(buf + p + 1);
                p += 9;
                continue;
            }
            if (type == ENTER || type == LEAVE) {
                if (p + 2 > c1) return SCAN_MALFORMED;
                uint8_t count = buf[p + 1];
                int64_t region;
                if (count == 0xFF) {
                    region = 0xFFFFFFFFLL;
                    p += 2;
                } else if (count <= 4) {
                    if (p + 2 + count > c1) return SCAN_MALFORMED;
                    uint64_t v = 0;
                    for (unsigned k = 0; k < count; k++) v |= (uint64_t)buf[p + 2 + k] << (8 * k);
                    region = (int64_t)v;
                    p += 2 + count;
                } else {
                    return SCAN_MALFORMED;
                }
                if (now < 0 || out >= capacity) return now < 0 ? SCAN_MALFORMED : SCAN_FULL;
                times[out] = now;
                signed_regions[out] = type == ENTER ? region : ~region;
                out++;
                counted++;
                continue;
            }
            if (type == BUFFER_FLUSH || type == MEASUREMENT_ON_OFF || type == METRIC)
                return SCAN_ELSEWHERE;
            if (type < ATTRIBUTE_LIST) return SCAN_MALFORMED; /* 0x01, 0x03, 0x04 */
            /* any other record: its length byte (0xFF: a uint64 length) and that many bytes */
            if (p + 2 > c1) return SCAN_MALFORMED;
            uint64_t length = buf[p + 1], body = p + 2;
            if (length == 0xFF) {
                if (p + 10 > c1) return SCAN_MALFORMED;
                length = load_u64(buf + p + 2);
                body = p + 10;
            }
            if (length > c1 - body) return SCAN_MALFORMED;
            if (type == PROGRAM_BEGIN && *program_begin < 0) {
                if (now < 0) return SCAN_MALFORMED;
                *program_begin = now;
            }
            if (type != ATTRIBUTE_LIST) counted++;
            p = body + length;
        }
        if (!ended) return SCAN_MALFORMED; /* a chunk's records ran into its end */
        /* the header counts the events (every record but timestamps, attribute lists and
         * end markers): a reading that lost its way cannot match it */
        if (last + 1 - first != counted) return SCAN_MALFORMED;
    }
    *n_events = out;
    return SCAN_OK;
}
