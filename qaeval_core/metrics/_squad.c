/* Exact match over a batch of items, in one pass per item.
 *
 * qaeval_core.metrics.lexical.ExactMatch uses it when it was compiled (the build marks it
 * optional; without it the numpy path does everything). For each item it reads ``candidate``
 * and ``references``, normalises the candidate and each reference into scratch buffers exactly
 * as qaeval_core.text.normalize_answer does, and compares them, stopping at the first match:
 * NFKC and lowercasing (through unicodedata and str.lower; skipped for ASCII, which they do not
 * change), punctuation and white space to one space, every maximal run of word characters
 * spelling a / an / the to one space (that is what the regex \b(a|an|the)\b matches once
 * punctuation is spaces), no space at either end. Values that are not exact str objects, or
 * references that are not a tuple, are declined: the caller scores those items itself.
 * tests/test_fingerprint.py checks the kernel against the numpy path on hostile text.
 *
 * exact_match_items(items) -> (best, details, declined)
 *   best:     bytearray of int64, the index of the first matching reference, -1 for none
 *   details:  list, {"best_reference": str | None} per item, None where declined
 *   declined: list of the item indices the caller must score itself
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { WORD = 0, SEP = 1, OTHER = 2 };

static unsigned char char_class[128];
static Py_UCS4 lower_map[128];
static PyObject *nfkc_normalize, *s_NFKC, *s_lower;
static PyObject *s_candidate, *s_references, *s_best_reference;

typedef struct {
    Py_UCS4 *data;
    Py_ssize_t size; /* in code points */
} Buffer;

static int buffer_reserve(Buffer *b, Py_ssize_t n) {
    if (n <= b->size) return 0;
    Py_ssize_t want = n < 256 ? 256 : n * 2;
    Py_UCS4 *grown = PyMem_Realloc(b->data, (size_t)want * sizeof(Py_UCS4));
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = grown;
    b->size = want;
    return 0;
}

static int is_article(const Py_UCS4 *t, Py_ssize_t n) {
    return (n == 1 && t[0] == 'a') || (n == 2 && t[0] == 'a' && t[1] == 'n') ||
           (n == 3 && t[0] == 't' && t[1] == 'h' && t[2] == 'e');
}

/* Class of a code point of NFKC-normalised, lowercased text. */
static int unicode_class(Py_UCS4 c) {
    if (c < 128) return char_class[c];
    switch (c) { /* the non-ASCII punctuation of qaeval_core.text.PUNCTUATION */
    case 0x2018: case 0x2019: case 0x201C: case 0x201D: case 0x2013: case 0x2014:
    case 0x2026: case 0x00AB: case 0x00BB: case 0x00BF: case 0x00A1:
        return SEP;
    }
    if (Py_UNICODE_ISSPACE(c)) return SEP;
    return Py_UNICODE_ISALNUM(c) ? WORD : OTHER;
}

#define CLASS_AT(k) (ascii ? char_class[PyUnicode_READ(kind, data, k)] \
                           : unicode_class(PyUnicode_READ(kind, data, k)))

/* normalize_answer's output for `text` (kind / data / n; already NFKC and lowercase unless
 * ASCII) into `out` (room for n): punctuation and white space become one space, a maximal run
 * of word characters spelling a / an / the (what the regex \b(a|an|the)\b matches once
 * punctuation is spaces) becomes one space too, and no space leads or trails. */
static inline Py_ssize_t squad_normalize(int kind, const void *data, Py_ssize_t n, int ascii,
                                         Py_UCS4 *out) {
    Py_ssize_t i = 0, o = 0;
    int space = 0;
    while (i < n) {
        int cls = CLASS_AT(i);
        if (cls == SEP) {
            space = 1;
            i++;
            continue;
        }
        Py_ssize_t end = i + 1;
        if (cls == WORD)
            while (end < n && CLASS_AT(end) == WORD) end++;
        if (cls == WORD && end - i <= 3) {
            Py_UCS4 run[3];
            for (Py_ssize_t k = i; k < end; k++) {
                Py_UCS4 c = PyUnicode_READ(kind, data, k);
                run[k - i] = ascii ? lower_map[c] : c;
            }
            if (is_article(run, end - i)) {
                space = 1;
                i = end;
                continue;
            }
        }
        if (space && o > 0) out[o++] = ' ';
        space = 0;
        for (; i < end; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            out[o++] = ascii ? lower_map[c] : c;
        }
    }
    return o;
}

/* Normalised form of `text` into `buf`; -1 to decline (not an exact str), -2 on error. */
static Py_ssize_t normalize_value(PyObject *text, Buffer *buf) {
    if (!PyUnicode_CheckExact(text)) return -1;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return -2; /* legacy strings; a no-op from 3.12 */
#endif
    if (PyUnicode_IS_ASCII(text)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        if (buffer_reserve(buf, n) < 0) return -2;
        return squad_normalize(PyUnicode_1BYTE_KIND, PyUnicode_DATA(text), n, 1, buf->data);
    }
    PyObject *nfkc = PyObject_CallFunctionObjArgs(nfkc_normalize, s_NFKC, text, NULL);
    if (!nfkc) return -2;
    PyObject *folded = PyObject_CallMethodNoArgs(nfkc, s_lower);
    Py_DECREF(nfkc);
    if (!folded) return -2;
    Py_ssize_t n = PyUnicode_GET_LENGTH(folded), length = -2;
    if (buffer_reserve(buf, n) == 0)
        length = squad_normalize(PyUnicode_KIND(folded), PyUnicode_DATA(folded), n, 0, buf->data);
    Py_DECREF(folded);
    return length;
}

/* -1 declined, -2 error, else the index of the first matching reference or -1 as `*best`. */
static int match_item(PyObject *item, Buffer *cand, Buffer *ref, Py_ssize_t *best, PyObject **refs_out) {
    int status = -1;
    PyObject *candidate = PyObject_GetAttr(item, s_candidate);
    if (!candidate) return -2;
    PyObject *refs = PyObject_GetAttr(item, s_references);
    if (!refs) {
        Py_DECREF(candidate);
        return -2;
    }
    *best = -1;
    Py_ssize_t cn = normalize_value(candidate, cand);
    if (cn == -2) status = -2;
    if (cn >= 0 && PyTuple_CheckExact(refs)) {
        status = 0;
        Py_ssize_t count = PyTuple_GET_SIZE(refs);
        for (Py_ssize_t j = 0; j < count; j++) {
            Py_ssize_t rn = normalize_value(PyTuple_GET_ITEM(refs, j), ref);
            if (rn < 0) {
                status = (int)rn;
                break;
            }
            if (rn == cn && memcmp(cand->data, ref->data, (size_t)cn * sizeof(Py_UCS4)) == 0) {
                *best = j;
                break;
            }
        }
    }
    Py_DECREF(candidate);
    if (status == 0) {
        *refs_out = refs; /* the caller owns it */
    } else {
        Py_DECREF(refs);
    }
    return status;
}

static PyObject *exact_match_items(PyObject *self, PyObject *arg) {
    /* A private list: reading an attribute may run Python code, which must not be able to
     * change the sequence under the loop. */
    PyObject *seq = PySequence_List(arg);
    if (!seq) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(seq);
    PyObject *best_buf = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *details = PyList_New(n);
    PyObject *declined = PyList_New(0);
    Buffer cand = {NULL, 0}, ref = {NULL, 0};
    if (!best_buf || !details || !declined) goto error;
    int64_t *best = (int64_t *)PyByteArray_AS_STRING(best_buf);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = -1;
        PyObject *refs = NULL;
        int status = match_item(PyList_GET_ITEM(seq, i), &cand, &ref, &j, &refs);
        if (status == -2) goto error;
        best[i] = j;
        if (status == -1) {
            PyObject *index = PyLong_FromSsize_t(i);
            if (!index || PyList_Append(declined, index) < 0) {
                Py_XDECREF(index);
                goto error;
            }
            Py_DECREF(index);
            Py_INCREF(Py_None);
            PyList_SET_ITEM(details, i, Py_None);
            continue;
        }
        PyObject *detail = PyDict_New();
        PyObject *chosen = j >= 0 ? PyTuple_GET_ITEM(refs, j) : Py_None;
        if (!detail || PyDict_SetItem(detail, s_best_reference, chosen) < 0) {
            Py_XDECREF(detail);
            Py_DECREF(refs);
            goto error;
        }
        Py_DECREF(refs);
        PyList_SET_ITEM(details, i, detail);
    }
    PyMem_Free(cand.data);
    PyMem_Free(ref.data);
    Py_DECREF(seq);
    return Py_BuildValue("(NNN)", best_buf, details, declined);

error:
    PyMem_Free(cand.data);
    PyMem_Free(ref.data);
    Py_DECREF(seq);
    Py_XDECREF(best_buf);
    Py_XDECREF(details);
    Py_XDECREF(declined);
    return NULL;
}

static PyMethodDef methods[] = {
    {"exact_match_items", exact_match_items, METH_O,
     "exact_match_items(items) -> (best: bytearray of int64, details: list, declined: list)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_squad", "Exact match over items in C (see _squad.c).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__squad(void) {
    const char *punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    for (int c = 0; c < 128; c++) {
        int word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        char_class[c] = word ? WORD : OTHER;
        lower_map[c] = (Py_UCS4)((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    for (const char *p = punctuation; *p; p++) char_class[(unsigned char)*p] = SEP;
    /* str.isspace() in ASCII: what the regex \s matches and str.strip() removes. */
    const char *spaces = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f";
    for (const char *p = spaces; *p; p++) char_class[(unsigned char)*p] = SEP;
    PyObject *unicodedata = PyImport_ImportModule("unicodedata");
    if (!unicodedata) return NULL;
    nfkc_normalize = PyObject_GetAttrString(unicodedata, "normalize");
    Py_DECREF(unicodedata);
    if (!nfkc_normalize) return NULL;
    s_NFKC = PyUnicode_InternFromString("NFKC");
    s_lower = PyUnicode_InternFromString("lower");
    if (!s_NFKC || !s_lower) return NULL;
    s_candidate = PyUnicode_InternFromString("candidate");
    s_references = PyUnicode_InternFromString("references");
    s_best_reference = PyUnicode_InternFromString("best_reference");
    if (!s_candidate || !s_references || !s_best_reference) return NULL;
    return PyModule_Create(&module);
}
