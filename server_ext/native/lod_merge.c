/* The timeline levels' merge (jupyterlab_scorep/trace/lod.py, ``merge``) in two passes over
 * sorted arrays instead of numpy's dozen: a level of the 1,024-rank, 100M-event archive
 * (40M calls) was ~2 s of numpy here. Built into the scanner's library (build_scanner.py);
 * lod_native.py binds it and lod.py falls back to numpy where the library lacks it. The
 * results are numpy's, exactly (server_ext/tests/trace/test_lod.py compares the two):
 *
 * lod_groups: items (sorted by segment, then start) narrower than px (the duration as a
 * double against px, as numpy compares int64 with float64) that start in the same pixel,
 * floor((start - origin) / px) in doubles, of one segment form a group; any other item is
 * a group of one. Per group: its first item, the largest end, the summed count (int64, as
 * numpy's add.reduceat sums int32), whether its first item is narrow, and its dominant region
 * where that is the heaviest item's (ties: the lowest region): when no two of its items
 * have regions equal modulo 32 (numpy's test: a bit per region id modulo 32) and every
 * duration is under 2**53 in size (where doubles order them as integers). Otherwise the
 * group's region is LOD_EXACT and the caller sums durations per region in doubles as
 * lod._dominant does.
 *
 * Items of a segment flagged in pass_segment (NULL: none) are groups of one that never
 * join: they pass unchanged, as the rows of a location that does not merge this level.
 *
 * lod_join: neighbouring groups, both narrow, of one region and segment, the gap from the
 * earlier group's own end to the later's start under px, become one span (the first's start,
 * the largest end, the summed count), compacting the arrays in place.
 */
#include <math.h>
#include <stdint.h>

#define LOD_EXACT INT32_MIN
#define TWO_53 9007199254740992LL

int64_t lod_groups(const int64_t *start, const int64_t *end, const int32_t *region,
                   const int64_t *count, const int64_t *segment, int64_t n, double px,
                   int64_t origin, const uint8_t *pass_segment, int64_t *g_first,
                   int64_t *g_end, int64_t *g_count, int32_t *g_region, uint8_t *g_narrow) {
    int64_t g = -1;
    double prev_bucket = 0.0;
    int prev_narrow = 0;
    uint32_t bits = 0;
    int exact = 0;
    int64_t best_w = 0;
    int32_t best_r = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t w = end[i] - start[i];
        int narrow = (double)w < px;
        if (pass_segment && pass_segment[segment[i]]) narrow = 0; /* a group of its own */
        double bucket = floor((double)(start[i] - origin) / px);
        int same = g >= 0 && narrow && prev_narrow && bucket == prev_bucket &&
                   segment[i] == segment[i - 1];
        int32_t r = region[i];
        if (!same) {
            if (g >= 0) g_region[g] = exact ? LOD_EXACT : best_r;
            g++;
            g_first[g] = i;
            g_end[g] = end[i];
            g_count[g] = count[i];
            g_narrow[g] = (uint8_t)narrow;
            bits = 0;
            exact = 0;
            best_w = w;
            best_r = r;
        } else {
            if (end[i] > g_end[g]) g_end[g] = end[i];
            g_count[g] += count[i];
            if (w > best_w || (w == best_w && r < best_r)) {
                best_w = w;
                best_r = r;
            }
        }
        uint32_t bit = (uint32_t)1 << ((uint32_t)r & 31u);
        if ((bits & bit) || w >= TWO_53 || w <= -TWO_53) exact = 1;
        bits |= bit;
        prev_bucket = bucket;
        prev_narrow = narrow;
    }
    if (g >= 0) g_region[g] = exact ? LOD_EXACT : best_r;
    return g + 1;
}

int64_t lod_join(int64_t *g_start, int64_t *g_end, int32_t *g_region, int64_t *g_count,
                 int64_t *g_segment, const uint8_t *g_narrow, int64_t n, double px) {
    if (n <= 0) return 0;
    int64_t k = 0;           /* the span being built */
    int64_t own_end = g_end[0]; /* the previous group's own end, not the span's */
    for (int64_t i = 1; i < n; i++) {
        int join = g_narrow[i] && g_narrow[i - 1] && g_region[i] == g_region[i - 1] &&
                   g_segment[i] == g_segment[i - 1] && (double)(g_start[i] - own_end) < px;
        own_end = g_end[i];
        if (join) {
            if (g_end[i] > g_end[k]) g_end[k] = g_end[i];
            g_count[k] += g_count[i];
        } else {
            k++;
            g_start[k] = g_start[i];
            g_end[k] = g_end[i];
            g_region[k] = g_region[i];
            g_count[k] = g_count[i];
            g_segment[k] = g_segment[i];
        }
    }
    return k + 1;
}
