/* Exact match over a batch of items, for the ASCII case, in one pass per item.
 *
 * qaeval_core.metrics.lexical.ExactMatch uses it when it was compiled (the build marks it
 * optional) and keeps the numpy path for everything it declines. For each item it reads
 * ``candidate`` and ``references``, SQuAD-normalises the candidate and each reference into
 * scratch buffers (lowercase; punctuation and white space separate tokens; the tokens a / an /
 * the are dropped; tokens joined by one space) and compares them, stopping at the first match.
 * That is exactly qaeval_core.text.normalize_answer for ASCII text without control
 * characters (NFKC changes no ASCII character; with punctuation turned into spaces the regex
 * word boundaries fall between tokens). An item is declined, and left to the Python path, when
 * a value is not an exact str / tuple, holds a non-ASCII character, or holds a control
 * character other than white space (those are \W but not \s, so the regex would see word
 * boundaries inside a token).
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

enum { KEEP = 0, SEP = 1, BAD = 2 };

static unsigned char char_class[128];
static char lower_map[128];
static PyObject *s_candidate, *s_references, *s_best_reference;

typedef struct {
    char *data;
    Py_ssize_t size;
} Buffer;

static int buffer_reserve(Buffer *b, Py_ssize_t n) {
    if (n <= b->size) return 0;
    Py_ssize_t want = n < 256 ? 256 : n * 2;
    char *grown = PyMem_Realloc(b->data, want);
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = grown;
    b->size = want;
    return 0;
}

static int is_article(const char *t, Py_ssize_t n) {
    return (n == 1 && t[0] == 'a') || (n == 2 && t[0] == 'a' && t[1] == 'n') ||
           (n == 3 && t[0] == 't' && t[1] == 'h' && t[2] == 'e');
}

/* Normalise the ASCII string `s` into `out` (at least n bytes); the length, or -1 to decline. */
static Py_ssize_t squad_normalize(const unsigned char *s, Py_ssize_t n, char *out) {
    Py_ssize_t i = 0, o = 0;
    while (i < n) {
        while (i < n && char_class[s[i]] == SEP) i++;
        if (i >= n) break;
        Py_ssize_t token_space = o;
        if (o > 0) out[o++] = ' ';
        Py_ssize_t token = o;
        while (i < n) {
            unsigned char c = char_class[s[i]];
            if (c == SEP) break;
            if (c == BAD) return -1;
            out[o++] = lower_map[s[i++]];
        }
        if (is_article(out + token, o - token)) o = token_space;
    }
    return o;
}

/* Normalised form of `text` into `buf`; -1 to decline, -2 on error. */
static Py_ssize_t normalize_value(PyObject *text, Buffer *buf) {
    if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text)) return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (buffer_reserve(buf, n) < 0) return -2;
    return squad_normalize(PyUnicode_1BYTE_DATA(text), n, buf->data);
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
            if (rn == cn && memcmp(cand->data, ref->data, (size_t)cn) == 0) {
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
    PyObject *seq = PySequence_Fast(arg, "items must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *best_buf = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *details = PyList_New(n);
    PyObject *declined = PyList_New(0);
    Buffer cand = {NULL, 0}, ref = {NULL, 0};
    if (!best_buf || !details || !declined) goto error;
    int64_t *best = (int64_t *)PyByteArray_AS_STRING(best_buf);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = -1;
        PyObject *refs = NULL;
        int status = match_item(items[i], &cand, &ref, &j, &refs);
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
    PyModuleDef_HEAD_INIT, "_squad", "Exact match over ASCII items in C (see _squad.c).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__squad(void) {
    const char *punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    for (int c = 0; c < 128; c++) {
        char_class[c] = (c < 0x20 || c == 0x7f) ? BAD : KEEP;
        lower_map[c] = (char)((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    for (const char *p = punctuation; *p; p++) char_class[(unsigned char)*p] = SEP;
    /* str.isspace() in ASCII: what the regex \s matches and str.strip() removes. */
    const char *spaces = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f";
    for (const char *p = spaces; *p; p++) char_class[(unsigned char)*p] = SEP;
    s_candidate = PyUnicode_InternFromString("candidate");
    s_references = PyUnicode_InternFromString("references");
    s_best_reference = PyUnicode_InternFromString("best_reference");
    if (!s_candidate || !s_references || !s_best_reference) return NULL;
    return PyModule_Create(&module);
}
