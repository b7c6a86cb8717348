/* The heat map's search (jupyterlab_scorep/trace/busy_time.py, BusyTable._searched) in C:
 * for each row r of sorted keys (row r's are keys[bounds[r]:bounds[r + 1]], each
 * r * span + a time) and each of the increasing edges, the index numpy's
 * searchsorted(keys, r * span + edge, side="left") gives. The edges of a row are looked
 * up in order, each from where the one before was found, by galloping (steps of 1, 2, 4,
 * ... then a binary search in the last step): a row's few hundred kB stay in cache and an
 * edge costs the log of the keys between it and the one before, where numpy's binary
 * search over all rows' keys (13M MPI intervals of 1,024 ranks) missed the cache at every
 * step. Built into the scanner's library (build_scanner.py); busy_time.py searches with
 * numpy where the library lacks it.
 */
#include <stdint.h>

/* The first index in [lo, hi) whose key is >= target (hi if none). */
static int64_t gallop(const int64_t *keys, int64_t lo, int64_t hi, int64_t target) {
    int64_t step = 1, a = lo, b = lo;
    while (b < hi && keys[b] < target) { /* keys[a..b) are all < target */
        a = b + 1;
        b = a + step;
        step *= 2;
    }
    if (b > hi) b = hi;
    while (a < b) { /* keys[a-1] < target (or a == lo), keys[b] >= target (or b == hi) */
        int64_t mid = a + (b - a) / 2;
        if (keys[mid] < target) a = mid + 1;
        else b = mid;
    }
    return a;
}

void busy_search(const int64_t *keys, const int64_t *bounds, int64_t n_rows,
                 const int64_t *edges, int64_t n_edges, int64_t span, int64_t *out) {
    for (int64_t r = 0; r < n_rows; r++) {
        int64_t at = bounds[r], hi = bounds[r + 1], base = r * span;
        for (int64_t c = 0; c < n_edges; c++) {
            at = gallop(keys, at, hi, base + edges[c]);
            out[r * n_edges + c] = at;
        }
    }
}
