/* The builtin tracer's recorder: a C profile function (PyEval_SetProfile, CPython 3.11)
 * that writes one 24-byte row per finished call (start ns, end ns, key) into a buffer of
 * its thread, and hands each thread's buffer over at the end (scorep_kernel.measure
 * .calltrace_engine reads it with numpy: no object per call, no copy); a buffer read and
 * freed goes back to a pool for the next run.
 *
 * Why our own and not VizTracer's: per event this does one counter read and, for a call, one
 * lookup of the code object in a small open-addressing table (cProfile does a rotating-tree
 * lookup and a context allocation per call); a call's key is an index into a table of
 * what was called, so reading the buffer out needs no per-call Python object and no
 * reference per call to release.
 *
 * Rules, the same as the engine it replaces:
 * - a call whose code's file starts with the ignore prefix (the tracer's own package) or
 *   one of the exclude prefixes (frozen importlib) is dropped with everything below it;
 * - C functions are recorded only when asked (c_functions);
 * - a return ends the open call it names (the frame, or the C function): one without
 *   its call (a frame entered before recording started) is ignored, and calls whose
 *   return was missed end with the call below them;
 * - calls still open at stop() end at stop();
 * - past `capacity` calls in all threads, or after halt(), nothing more is recorded.
 * Everything runs under the GIL: the profile function is called with it held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct {
    int64_t start;
    int64_t end;
    int32_t key;
    int32_t depth; /* nesting depth on its thread when it was called (0 = outermost) */
} Call;

typedef struct {
    int64_t start;
    void *who; /* the frame, or the C function called: what its return names */
    int32_t key;
} Open;

typedef struct {
    void *a, *b;   /* code object, or (PyMethodDef*, module-or-type) for a C function */
    int32_t key;   /* index into keys, or -1 when dropped */
    int32_t used;
} Slot;

typedef struct TracerObject TracerObject;
#define POOL 4
#define POOL_BYTES (64 << 20) /* larger buffers (a run of millions of calls) are freed */

typedef struct {
    PyObject_HEAD
    TracerObject *owner; /* strong (a cycle through owner->threads: tracers live as long as
                          * their process, measure.engine keeps them) */
    unsigned long tid;
    PyObject *name;
    Call *calls;
    Py_ssize_t ncalls, calls_cap;
    Open *stack;
    Py_ssize_t depth, stack_cap;
    void *skip; /* the frame of a dropped call, until it returns: nothing below it counts */
} ThreadObject;

struct TracerObject {
    PyObject_HEAD
    int collecting;
    int c_functions;
    Py_ssize_t capacity;
    Py_ssize_t recorded;
    Slot *slots;
    Py_ssize_t nslots, nused; /* nslots: a power of two */
    PyObject *keys;           /* list: ("py", code) | ("c", module, type, name) */
    PyObject *held;           /* list: what the table's pointers point to, kept alive */
    PyObject *threads;        /* dict: tid -> ThreadObject */
    char **prefixes;          /* [0] the ignore prefix, then the exclude prefixes */
    Py_ssize_t nprefixes;
    /* buffers given back by Rows that were read and freed, for the next run's threads:
     * their pages are mapped already (fresh memory costs the kernel's zeroing, here
     * ~0.3 ms per MB) */
    Call *pool[POOL];
    Py_ssize_t pool_cap[POOL];
    int npool;
    size_t pool_bytes;
};

/* One thread's rows, handed over by take(): owns the memory, exports it as bytes. */
typedef struct {
    PyObject_HEAD
    TracerObject *owner; /* strong: the memory goes back to its pool */
    Call *calls;
    Py_ssize_t ncalls, cap;
    Py_ssize_t exports;
} RowsObject;

static PyTypeObject ThreadType;
static PyTypeObject TracerType;

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The rows' clock: the time-stamp counter where there is one (one instruction, ~10 ns
 * here against ~23 ns for clock_gettime through the vDSO), scaled to CLOCK_MONOTONIC ns by
 * a factor measured over 2 ms when the module loads; the session maps the tracer's ns to
 * perf_counter's with readings at start and stop (measure.session._clock_map), which
 * corrects what the factor is off by over a long run. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static int use_tsc = 1;
static inline int64_t ticks(void) { return use_tsc ? (int64_t)__rdtsc() : now_ns(); }
#else
static int use_tsc = 0;
static inline int64_t ticks(void) { return now_ns(); }
#endif
static double tick_ns = 1.0;
static int64_t base_ticks = 0, base_ns = 0;

static void calibrate(void) {
    int64_t n0 = now_ns(), t0 = ticks(), n1, t1;
    do {
        n1 = now_ns();
        t1 = ticks();
    } while (n1 - n0 < 2000000);
    double f = (double)(n1 - n0) / (double)(t1 - t0);
    if (!use_tsc || !(f > 0.01 && f < 100.0)) { /* no usable counter: the clock itself */
        use_tsc = 0;
        f = 1.0;
        t1 = n1 = now_ns();
    }
    tick_ns = f;
    base_ticks = t1;
    base_ns = n1;
}

static inline double ticks_to_ns(int64_t t) {
    return (double)base_ns + (double)(t - base_ticks) * tick_ns;
}

/* --- the table of what was called ----------------------------------------------------- */

static int table_grow(TracerObject *t) {
    Py_ssize_t n = t->nslots ? t->nslots * 2 : 1024;
    Slot *s = PyMem_Calloc((size_t)n, sizeof(Slot));
    if (!s) return -1;
    for (Py_ssize_t i = 0; i < t->nslots; i++) {
        Slot *o = &t->slots[i];
        if (!o->used) continue;
        size_t h = (((uintptr_t)o->a >> 4) ^ ((uintptr_t)o->b >> 3)) & (size_t)(n - 1);
        while (s[h].used) h = (h + 1) & (size_t)(n - 1);
        s[h] = *o;
    }
    PyMem_Free(t->slots);
    t->slots = s;
    t->nslots = n;
    return 0;
}

/* The slot for (a, b): found, or a fresh one (used = 0) to fill in. NULL on no memory. */
static inline Slot *table_find(TracerObject *t, void *a, void *b) {
    if ((t->nused + 1) * 2 > t->nslots && table_grow(t) < 0) return NULL;
    size_t mask = (size_t)(t->nslots - 1);
    size_t h = (((uintptr_t)a >> 4) ^ ((uintptr_t)b >> 3)) & mask;
    while (t->slots[h].used) {
        if (t->slots[h].a == a && t->slots[h].b == b) return &t->slots[h];
        h = (h + 1) & mask;
    }
    return &t->slots[h];
}

static int is_dropped(TracerObject *t, PyCodeObject *code) {
    const char *file = PyUnicode_AsUTF8(code->co_filename);
    if (!file) {
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; i < t->nprefixes; i++) {
        const char *p = t->prefixes[i];
        if (p[0] && strncmp(file, p, strlen(p)) == 0) return 1;
    }
    return 0;
}

/* Add a key tuple; its index, or -1 with an exception set. */
static int32_t add_key(TracerObject *t, PyObject *key) {
    if (!key) return -1;
    Py_ssize_t n = PyList_GET_SIZE(t->keys);
    int rc = PyList_Append(t->keys, key);
    Py_DECREF(key);
    return rc < 0 ? -1 : (int32_t)n;
}

/* The key of a Python call (-2: dropped, -1: error). */
static int32_t py_key(TracerObject *t, PyFrameObject *frame) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    Slot *s = table_find(t, code, NULL);
    if (s && s->used) {
        Py_DECREF(code);
        return s->key;
    }
    if (!s) {
        Py_DECREF(code);
        return -1;
    }
    int32_t key = -2;
    if (!is_dropped(t, code)) key = add_key(t, Py_BuildValue("(sO)", "py", (PyObject *)code));
    if (key == -1 || PyList_Append(t->held, (PyObject *)code) < 0) {
        Py_DECREF(code);
        return -1;
    }
    Py_DECREF(code); /* `held` keeps it, so the pointer stays its own */
    s->a = code;
    s->b = NULL;
    s->key = key;
    s->used = 1;
    t->nused++;
    return key;
}

/* The key of a C call: (module name or None, type name or None, function name). */
static int32_t c_key(TracerObject *t, PyObject *func) {
    void *a, *b;
    PyObject *module = NULL, *self = NULL;
    if (PyCFunction_Check(func)) {
        PyCFunctionObject *f = (PyCFunctionObject *)func;
        module = f->m_module;
        self = f->m_self;
        a = f->m_ml;
        b = module ? (void *)module : (self ? (void *)Py_TYPE(self) : NULL);
    } else {
        a = (void *)Py_TYPE(func);
        b = (void *)func;
    }
    Slot *s = table_find(t, a, b);
    if (!s) return -1;
    if (s->used) return s->key;
    PyObject *mod_name = Py_None, *type_name = Py_None, *name = NULL, *keep = NULL;
    Py_INCREF(Py_None);
    Py_INCREF(Py_None);
    if (PyCFunction_Check(func)) {
        PyCFunctionObject *f = (PyCFunctionObject *)func;
        name = PyUnicode_FromString(f->m_ml->ml_name ? f->m_ml->ml_name : "?");
        if (module && PyUnicode_Check(module)) {
            Py_SETREF(mod_name, Py_NewRef(module));
        } else if (module && PyModule_Check(module)) {
            PyObject *m = PyModule_GetNameObject(module);
            if (m) Py_SETREF(mod_name, m);
            else PyErr_Clear();
        } else if (!module && self) {
            Py_SETREF(type_name, PyUnicode_FromString(Py_TYPE(self)->tp_name));
        }
        keep = module ? module : (self ? (PyObject *)Py_TYPE(self) : Py_None);
    } else {
        name = PyObject_Repr(func);
        keep = func;
    }
    if (!name || !type_name) {
        Py_XDECREF(name);
        Py_XDECREF(mod_name);
        Py_XDECREF(type_name);
        return -1;
    }
    int32_t key = add_key(t, Py_BuildValue("(sNNN)", "c", mod_name, type_name, name));
    if (key < 0 || PyList_Append(t->held, keep) < 0) return -1;
    s->a = a;
    s->b = b;
    s->key = key;
    s->used = 1;
    t->nused++;
    return key;
}

/* --- per thread ------------------------------------------------------------------------ */

static int push(ThreadObject *th, int64_t ts, int32_t key, void *who) {
    if (th->depth == th->stack_cap) {
        Py_ssize_t n = th->stack_cap ? th->stack_cap * 2 : 256;
        Open *s = PyMem_Realloc(th->stack, (size_t)n * sizeof(Open));
        if (!s) return -1;
        th->stack = s;
        th->stack_cap = n;
    }
    th->stack[th->depth].start = ts;
    th->stack[th->depth].who = who;
    th->stack[th->depth].key = key;
    th->depth++;
    return 0;
}

static int pop(ThreadObject *th, int64_t ts) {
    TracerObject *t = th->owner;
    if (!th->calls && t->npool) { /* a buffer of an earlier run, its pages mapped */
        t->npool--;
        th->calls = t->pool[t->npool];
        th->calls_cap = t->pool_cap[t->npool];
        t->pool_bytes -= (size_t)th->calls_cap * sizeof(Call);
    }
    if (th->ncalls == th->calls_cap) {
        Py_ssize_t n = th->calls_cap ? th->calls_cap * 2 : 4096;
        Call *c = PyMem_Realloc(th->calls, (size_t)n * sizeof(Call));
        if (!c) return -1;
        th->calls = c;
        th->calls_cap = n;
    }
    th->depth--;
    Call *c = &th->calls[th->ncalls++];
    c->start = th->stack[th->depth].start;
    c->end = ts;
    c->key = th->stack[th->depth].key;
    c->depth = (int32_t)th->depth;
    if (++t->recorded >= t->capacity) t->collecting = 0;
    return 0;
}

static int on_call(ThreadObject *th, int32_t key, void *who) {
    if (key == -1) return -1;
    if (key == -2) {
        th->skip = who;
        return 0;
    }
    return push(th, ticks(), key, who);
}

/* A return ends the open call it names. Events come in pairs while the profile function
 * stays in place; where it was not (sys.setprofile(None) and back, a thread recorded from
 * the middle of its stack), a return can come without its call, or a call's return can
 * be missed: a return that names no open call is ignored, and calls above the one it
 * names end with it. */
static int on_return(ThreadObject *th, void *who) {
    if (th->skip) {
        if (who == th->skip) th->skip = NULL;
        return 0;
    }
    Py_ssize_t i = th->depth - 1;
    while (i >= 0 && th->stack[i].who != who) i--;
    if (i < 0) return 0;
    int64_t ts = ticks();
    while (th->depth > i)
        if (pop(th, ts) < 0) return -1;
    return 0;
}

static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    ThreadObject *th = (ThreadObject *)obj;
    TracerObject *t = th->owner;
    if (!t->collecting) return 0;
    int rc = 0;
    switch (what) {
    case PyTrace_CALL:
        if (th->skip) return 0;
        rc = on_call(th, py_key(t, frame), frame);
        break;
    case PyTrace_RETURN:
        rc = on_return(th, frame);
        break;
    case PyTrace_C_CALL:
        if (!t->c_functions || th->skip) return 0;
        rc = on_call(th, c_key(t, arg), arg);
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (!t->c_functions) return 0;
        rc = on_return(th, arg);
        break;
    default:
        return 0;
    }
    if (rc < 0) { /* out of memory: stop recording rather than fail the user's code */
        PyErr_Clear();
        t->collecting = 0;
    }
    return 0;
}

static void thread_dealloc(ThreadObject *th) {
    Py_XDECREF(th->owner);
    Py_XDECREF(th->name);
    PyMem_Free(th->calls);
    PyMem_Free(th->stack);
    Py_TYPE(th)->tp_free((PyObject *)th);
}

static PyTypeObject ThreadType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scorep_kernel.measure._calltrace.Thread",
    .tp_basicsize = sizeof(ThreadObject),
    .tp_dealloc = (destructor)thread_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One thread's recorded calls (what sys.getprofile() returns on a traced thread).",
};

/* This thread's record, made on first use. Borrowed reference. */
static ThreadObject *this_thread(TracerObject *t) {
    unsigned long tid = PyThread_get_thread_native_id();
    PyObject *k = PyLong_FromUnsignedLong(tid);
    if (!k) return NULL;
    ThreadObject *th = (ThreadObject *)PyDict_GetItemWithError(t->threads, k);
    if (th || PyErr_Occurred()) {
        Py_DECREF(k);
        return th;
    }
    th = PyObject_New(ThreadObject, &ThreadType);
    if (!th) {
        Py_DECREF(k);
        return NULL;
    }
    Py_INCREF(t);
    th->owner = t;
    th->tid = tid;
    th->calls = NULL;
    th->stack = NULL;
    th->ncalls = th->calls_cap = th->depth = th->stack_cap = 0;
    th->skip = NULL;
    th->name = NULL;
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *cur = threading ? PyObject_CallMethod(threading, "current_thread", NULL) : NULL;
    th->name = cur ? PyObject_GetAttrString(cur, "name") : NULL;
    Py_XDECREF(cur);
    Py_XDECREF(threading);
    if (!th->name) {
        PyErr_Clear();
        th->name = PyUnicode_FromFormat("thread %lu", tid);
    }
    int rc = PyDict_SetItem(t->threads, k, (PyObject *)th);
    Py_DECREF(k);
    Py_DECREF(th);
    return rc < 0 ? NULL : th;
}

/* --- the tracer ------------------------------------------------------------------------ */

static void free_prefixes(TracerObject *t) {
    for (Py_ssize_t i = 0; i < t->nprefixes; i++) PyMem_Free(t->prefixes[i]);
    PyMem_Free(t->prefixes);
    t->prefixes = NULL;
    t->nprefixes = 0;
}

static void clear_table(TracerObject *t) {
    PyMem_Free(t->slots);
    t->slots = NULL;
    t->nslots = t->nused = 0;
}

static PyObject *tracer_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Py_ssize_t capacity;
    static char *names[] = {"capacity", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "n", names, &capacity)) return NULL;
    if (capacity < 1) {
        PyErr_SetString(PyExc_ValueError, "capacity must be at least 1 call");
        return NULL;
    }
    TracerObject *t = (TracerObject *)type->tp_alloc(type, 0);
    if (!t) return NULL;
    t->capacity = capacity;
    t->keys = PyList_New(0);
    t->held = PyList_New(0);
    t->threads = PyDict_New();
    if (!t->keys || !t->held || !t->threads) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void tracer_dealloc(TracerObject *t) {
    Py_XDECREF(t->keys);
    Py_XDECREF(t->held);
    Py_XDECREF(t->threads);
    clear_table(t);
    free_prefixes(t);
    for (int i = 0; i < t->npool; i++) PyMem_Free(t->pool[i]);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *tracer_configure(TracerObject *t, PyObject *args) {
    PyObject *prefixes;
    int c_functions;
    if (!PyArg_ParseTuple(args, "O!p", &PyList_Type, &prefixes, &c_functions)) return NULL;
    free_prefixes(t);
    Py_ssize_t n = PyList_GET_SIZE(prefixes);
    t->prefixes = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    if (!t->prefixes) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *p = PyUnicode_AsUTF8(PyList_GET_ITEM(prefixes, i));
        if (!p) return NULL;
        t->prefixes[i] = PyMem_Malloc(strlen(p) + 1);
        if (!t->prefixes[i]) return PyErr_NoMemory();
        strcpy(t->prefixes[i], p);
        t->nprefixes = i + 1;
    }
    t->c_functions = c_functions;
    /* the table's drop flags depend on the prefixes */
    clear_table(t);
    if (PyList_SetSlice(t->keys, 0, PY_SSIZE_T_MAX, NULL) < 0) return NULL;
    if (PyList_SetSlice(t->held, 0, PY_SSIZE_T_MAX, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *tracer_clear(TracerObject *t, PyObject *Py_UNUSED(ignored)) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(t->threads, &pos, &k, &v)) {
        ThreadObject *th = (ThreadObject *)v;
        th->ncalls = th->depth = 0;
        th->skip = NULL;
    }
    t->recorded = 0;
    clear_table(t);
    if (PyList_SetSlice(t->keys, 0, PY_SSIZE_T_MAX, NULL) < 0) return NULL;
    if (PyList_SetSlice(t->held, 0, PY_SSIZE_T_MAX, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *tracer_install(TracerObject *t, PyObject *Py_UNUSED(ignored)) {
    ThreadObject *th = this_thread(t);
    if (!th) return NULL;
    PyEval_SetProfile(profile, (PyObject *)th);
    Py_RETURN_NONE;
}

static PyObject *tracer_start(TracerObject *t, PyObject *Py_UNUSED(ignored)) {
    t->collecting = t->recorded < t->capacity;
    return tracer_install(t, NULL);
}

/* What threading.setprofile() calls first on a new thread: put the C function in its place
 * on that thread, and take the event it was called for. */
static PyObject *tracer_thread_func(TracerObject *t, PyObject *args) {
    PyObject *frame, *event, *arg;
    if (!PyArg_ParseTuple(args, "OUO", &frame, &event, &arg)) return NULL;
    ThreadObject *th = this_thread(t);
    if (!th) return NULL;
    PyEval_SetProfile(profile, (PyObject *)th);
    if (PyFrame_Check(frame) && PyUnicode_CompareWithASCIIString(event, "call") == 0)
        profile((PyObject *)th, (PyFrameObject *)frame, PyTrace_CALL, arg);
    Py_RETURN_NONE;
}

/* Stop recording; calls still open on any thread end now. */
static PyObject *tracer_stop(TracerObject *t, PyObject *Py_UNUSED(ignored)) {
    int64_t ts = ticks();
    t->collecting = 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(t->threads, &pos, &k, &v)) {
        ThreadObject *th = (ThreadObject *)v;
        while (th->depth > 0) {
            Py_ssize_t cap = t->capacity;
            t->capacity = PY_SSIZE_T_MAX; /* the open calls are part of the record */
            int rc = pop(th, ts);
            t->capacity = cap;
            if (rc < 0) return PyErr_NoMemory();
        }
        th->skip = NULL;
    }
    /* Threads other than this one keep a profile function for their life once given one
     * (threading.setprofile): every bytecode of theirs would run on the interpreter's slow
     * tracing path after the run, and they would be recorded again by the next one. Take
     * ours away from them, as 3.12's PyEval_SetProfileAllThreads does (this thread's own
     * is put back by the caller, to what it was). */
    PyThreadState *me = PyThreadState_Get();
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts;
         ts = PyThreadState_Next(ts)) {
        if (ts != me && ts->c_profilefunc == profile && ts->c_profileobj &&
            Py_IS_TYPE(ts->c_profileobj, &ThreadType) &&
            ((ThreadObject *)ts->c_profileobj)->owner == t) {
            if (_PyEval_SetProfile(ts, NULL, NULL) < 0) PyErr_Clear();
        }
    }
    Py_RETURN_NONE;
}

static PyObject *tracer_halt(TracerObject *t, PyObject *Py_UNUSED(ignored)) {
    t->collecting = 0;
    Py_RETURN_NONE;
}

static int rows_getbuffer(RowsObject *r, Py_buffer *view, int flags) {
    int rc = PyBuffer_FillInfo(view, (PyObject *)r, r->calls, r->ncalls * (Py_ssize_t)sizeof(Call),
                               1, flags);
    if (rc == 0) r->exports++;
    return rc;
}

static void rows_releasebuffer(RowsObject *r, Py_buffer *Py_UNUSED(view)) { r->exports--; }

static void rows_dealloc(RowsObject *r) {
    TracerObject *t = r->owner;
    size_t bytes = (size_t)r->cap * sizeof(Call);
    if (r->calls && t && t->npool < POOL && t->pool_bytes + bytes <= POOL_BYTES) {
        t->pool[t->npool] = r->calls;
        t->pool_cap[t->npool] = r->cap;
        t->pool_bytes += bytes;
        t->npool++;
    } else {
        PyMem_Free(r->calls);
    }
    Py_XDECREF(t);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static Py_ssize_t rows_length(RowsObject *r) { return r->ncalls; }

static PyBufferProcs rows_as_buffer = {
    .bf_getbuffer = (getbufferproc)rows_getbuffer,
    .bf_releasebuffer = (releasebufferproc)rows_releasebuffer,
};

static PySequenceMethods rows_as_sequence = {.sq_length = (lenfunc)rows_length};

static PyTypeObject RowsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scorep_kernel.measure._calltrace.Rows",
    .tp_basicsize = sizeof(RowsObject),
    .tp_dealloc = (destructor)rows_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_buffer = &rows_as_buffer,
    .tp_as_sequence = &rows_as_sequence,
    .tp_doc = "One thread's recorded calls, as a read-only buffer of rows (take()).",
};

/* [(tid, name, Rows)] for the threads that recorded calls, and the keys; the rows leave
 * the threads (which start on empty buffers). */
static PyObject *tracer_take(TracerObject *t, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(t->threads, &pos, &k, &v)) {
        ThreadObject *th = (ThreadObject *)v;
        if (!th->ncalls) continue;
        RowsObject *rows = PyObject_New(RowsObject, &RowsType);
        if (!rows) {
            Py_DECREF(out);
            return NULL;
        }
        Py_INCREF(t);
        rows->owner = t;
        rows->calls = th->calls;
        rows->ncalls = th->ncalls;
        rows->cap = th->calls_cap;
        rows->exports = 0;
        th->calls = NULL;
        th->ncalls = th->calls_cap = 0;
        PyObject *item = Py_BuildValue("(kON)", th->tid, th->name, (PyObject *)rows);
        if (!item || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    PyObject *keys = PyList_GetSlice(t->keys, 0, PY_SSIZE_T_MAX);
    return keys ? Py_BuildValue("(NN(dLL))", out, keys, tick_ns, (long long)base_ticks,
                                (long long)base_ns)
                : NULL;
}

static PyObject *tracer_now(TracerObject *Py_UNUSED(t), PyObject *Py_UNUSED(ignored)) {
    return PyFloat_FromDouble(ticks_to_ns(ticks()));
}

static PyObject *tracer_get_collecting(TracerObject *t, void *Py_UNUSED(c)) {
    return PyBool_FromLong(t->collecting);
}

static PyObject *tracer_get_recorded(TracerObject *t, void *Py_UNUSED(c)) {
    return PyLong_FromSsize_t(t->recorded);
}

static PyObject *tracer_get_capacity(TracerObject *t, void *Py_UNUSED(c)) {
    return PyLong_FromSsize_t(t->capacity);
}

static PyObject *tracer_owns(TracerObject *t, PyObject *obj) {
    return PyBool_FromLong(Py_IS_TYPE(obj, &ThreadType) && ((ThreadObject *)obj)->owner == t);
}

static PyMethodDef tracer_methods[] = {
    {"configure", (PyCFunction)tracer_configure, METH_VARARGS,
     "configure(drop_prefixes: list[str], c_functions: bool): files whose calls are dropped "
     "with everything below them; whether C functions are recorded. Empties the buffer."},
    {"clear", (PyCFunction)tracer_clear, METH_NOARGS, "Forget every recorded call."},
    {"start", (PyCFunction)tracer_start, METH_NOARGS, "Record, on this thread from now on."},
    {"install", (PyCFunction)tracer_install, METH_NOARGS,
     "Put the profile function on this thread (its record kept from before)."},
    {"thread_func", (PyCFunction)tracer_thread_func, METH_VARARGS,
     "For threading.setprofile(): installs the C profile function on a new thread."},
    {"stop", (PyCFunction)tracer_stop, METH_NOARGS,
     "Stop recording; calls still open end now."},
    {"halt", (PyCFunction)tracer_halt, METH_NOARGS, "Stop recording (open calls stay open)."},
    {"take", (PyCFunction)tracer_take, METH_NOARGS,
     "([(tid, thread name, Rows)], keys, (tick_ns, base_ticks, base_ns)): each thread's "
     "rows leave it (no copy); a row is (start, end, key, depth) as int64, int64, int32, "
     "int32, times in ticks: ns = base_ns + (ticks - base_ticks) * tick_ns."},
    {"now", (PyCFunction)tracer_now, METH_NOARGS,
     "The tracer's clock in ns (the ticks scaled to CLOCK_MONOTONIC)."},
    {"owns", (PyCFunction)tracer_owns, METH_O,
     "Whether a sys.getprofile() value is this tracer's profile function on a thread."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tracer_getset[] = {
    {"collecting", (getter)tracer_get_collecting, NULL, "Whether calls are recorded now.", NULL},
    {"recorded", (getter)tracer_get_recorded, NULL, "Calls recorded, all threads.", NULL},
    {"capacity", (getter)tracer_get_capacity, NULL, "Calls recorded at most.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TracerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scorep_kernel.measure._calltrace.Tracer",
    .tp_basicsize = sizeof(TracerObject),
    .tp_dealloc = (destructor)tracer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tracer(capacity): records finished calls, per thread.",
    .tp_methods = tracer_methods,
    .tp_getset = tracer_getset,
    .tp_new = tracer_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_calltrace",
    "The builtin tracer's recorder (kernel/native/calltrace.c).", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__calltrace(void) {
    if (PyType_Ready(&ThreadType) < 0 || PyType_Ready(&TracerType) < 0 ||
        PyType_Ready(&RowsType) < 0)
        return NULL;
    calibrate();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&TracerType);
    if (PyModule_AddObject(m, "Tracer", (PyObject *)&TracerType) < 0 ||
        PyModule_AddIntConstant(m, "CALL_BYTES", (long)sizeof(Call)) < 0 ||
        PyModule_AddIntConstant(m, "TSC", use_tsc) < 0) {
        Py_DECREF(&TracerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
