/*
 * qmm_gguf.h — read (validated, zero-copy) and write GGUF files.
 *
 * The GGUF file format (version 2 and 3; all integers little-endian; no implicit padding
 * anywhere inside the header). Authority: ggml's docs/gguf.md, gguf.cpp and gguf-py.
 *
 *   offset 0   u32  magic     the bytes "GGUF" (0x47 0x47 0x55 0x46)
 *          4   u32  version   2 or 3 (1 used 32-bit counts and is not read; a byte-swapped
 *                             version 0x02000000/0x03000000 marks a big-endian file, which
 *                             is refused with "big-endian GGUF not supported")
 *          8   u64  n_tensors number of tensor infos
 *         16   u64  n_kv      number of metadata key/value pairs
 *         24   n_kv  KV pairs, then n_tensors tensor infos, then padding, then the data.
 *
 *   string  := u64 length, then `length` bytes of UTF-8, no terminating NUL
 *   KV pair := string key, u32 value type, value
 *   value   := by type (qmm_gguf_value_type):
 *                0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (1 byte, 0 or 1),
 *                8 string, 10 u64, 11 i64, 12 f64: the value itself;
 *                9 array := u32 element type, u64 count, `count` values of that type
 *                  (arrays of strings, and arrays of arrays — nested — are allowed).
 *   tensor info := string name, u32 n_dims (1..4), n_dims x u64 ne (ne[0] = elements per
 *                  row, i.e. k; ne[1] = rows, i.e. m), u32 type (a ggml_type id = qmm_type),
 *                  u64 offset (bytes from the start of the data section).
 *
 *   alignment: the u32 key "general.alignment" if present (a non-zero power of two; any
 *   other value type is an error), else 32. The data section starts at the end of the
 *   tensor infos rounded up to a multiple of the alignment, counted from the START OF THE
 *   FILE. Every tensor offset is a multiple of the alignment; a tensor occupies
 *   (ne[0] / block_size) * block_bytes * ne[1] * ne[2] * ne[3] bytes.
 *
 * The reader validates everything before it hands anything out, with QMM_ERR_FORMAT and a
 * sentence naming the field and its value: magic, version, every count and length bounded
 * by the bytes left in the file BEFORE anything is allocated (allocations are proportional
 * to the file size), value type ids, bool bytes, nested array depth (QMM_GGUF_MAX_DEPTH),
 * duplicate keys, empty keys or names and ones holding a NUL byte, n_dims, ne >= 1, element
 * and byte counts that would wrap 64 bits, tensor type ids qmm knows, ne[0] a multiple of
 * the block size, offsets aligned, inside the file and non-overlapping, duplicate tensor
 * names, and truncation anywhere. Open/mmap failures are QMM_ERR_IO. The library never
 * prints.
 *
 * Threads: an open qmm_gguf is read-only and may be shared by threads.
 */
#ifndef QMM_GGUF_H
#define QMM_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The default data alignment when "general.alignment" is absent. */
#define QMM_GGUF_DEFAULT_ALIGNMENT 32
/** The deepest array nesting accepted: an array whose elements are arrays is depth 2. */
#define QMM_GGUF_MAX_DEPTH 8

/** GGUF metadata value types; the numeric values are the ids stored in the file. */
typedef enum qmm_gguf_value_type {
    QMM_GGUF_TYPE_UINT8 = 0,
    QMM_GGUF_TYPE_INT8 = 1,
    QMM_GGUF_TYPE_UINT16 = 2,
    QMM_GGUF_TYPE_INT16 = 3,
    QMM_GGUF_TYPE_UINT32 = 4,
    QMM_GGUF_TYPE_INT32 = 5,
    QMM_GGUF_TYPE_FLOAT32 = 6,
    QMM_GGUF_TYPE_BOOL = 7,
    QMM_GGUF_TYPE_STRING = 8,
    QMM_GGUF_TYPE_ARRAY = 9,
    QMM_GGUF_TYPE_UINT64 = 10,
    QMM_GGUF_TYPE_INT64 = 11,
    QMM_GGUF_TYPE_FLOAT64 = 12,
    QMM_GGUF_TYPE_COUNT = 13 /**< one past the largest id */
} qmm_gguf_value_type;

/** "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64",
 *  "f64"; NULL for an unknown id. */
QMM_API const char *qmm_gguf_value_type_name(int type);

/** Bytes of one scalar of `type` in the file (1, 2, 4 or 8); 0 for string, array, unknown. */
QMM_API size_t qmm_gguf_value_type_size(int type);

/* ---------------------------------------------------------------------------------------
 * Reader
 * ------------------------------------------------------------------------------------- */

typedef struct qmm_gguf qmm_gguf; /**< an open, fully validated GGUF file (opaque) */

/**
 * Open and validate a GGUF file, mapped read-only (mmap). Tensor data is not copied: it
 * points into the mapping, which lives until qmm_gguf_close. *out is set only on success.
 * Errors: QMM_ERR_INVALID_ARGUMENT (NULL), QMM_ERR_IO (open, stat or mmap failed; the
 * message names the path and the system error), QMM_ERR_FORMAT (malformed file: see the
 * top of this header), QMM_ERR_OUT_OF_MEMORY.
 */
QMM_API qmm_status qmm_gguf_open(const char *path, qmm_gguf **out);

/**
 * Validate a GGUF image of `size` bytes in memory without copying it: `data` must stay
 * valid and unchanged until qmm_gguf_close (meant for fuzzing and tests). Errors as
 * qmm_gguf_open, except QMM_ERR_IO.
 */
QMM_API qmm_status qmm_gguf_open_memory(const void *data, size_t size, qmm_gguf **out);

/** Unmap and free (NULL is a no-op). Every pointer obtained from `g` becomes invalid. */
QMM_API void qmm_gguf_close(qmm_gguf *g);

/** The file's version (2 or 3). */
QMM_API uint32_t qmm_gguf_version(const qmm_gguf *g);
/** The data alignment in bytes (general.alignment, or 32). */
QMM_API size_t qmm_gguf_alignment(const qmm_gguf *g);
/** Byte offset of the data section from the start of the file (a multiple of the alignment). */
QMM_API uint64_t qmm_gguf_data_offset(const qmm_gguf *g);
/** Size in bytes of the file or memory image. */
QMM_API uint64_t qmm_gguf_file_size(const qmm_gguf *g);

/* ---- tensors ---- */

/** Number of tensors. */
QMM_API int64_t qmm_gguf_n_tensors(const qmm_gguf *g);

/** One tensor, as described by its tensor info. Pointers live until qmm_gguf_close. */
typedef struct qmm_gguf_tensor {
    const char *name;  /**< NUL-terminated, unique in the file */
    qmm_type type;     /**< a type qmm knows (qmm_type_is_supported) */
    uint32_t n_dims;   /**< 1..4 */
    int64_t ne[4];     /**< elements per dimension; ne[0] = elements per row (k), ne[1] = rows
                            (m); dimensions past n_dims are 1 */
    uint64_t offset;   /**< bytes from the start of the data section (aligned) */
    size_t nbytes;     /**< bytes of the data: qmm_row_bytes(type, ne[0]) * ne[1]*ne[2]*ne[3] */
    const void *data;  /**< the data, inside the mapping (read-only) */
} qmm_gguf_tensor;

/**
 * Fill *out with tensor i (0 <= i < qmm_gguf_n_tensors, in file order).
 * Errors: QMM_ERR_INVALID_ARGUMENT (NULL or i out of range).
 */
QMM_API qmm_status qmm_gguf_get_tensor(const qmm_gguf *g, int64_t i, qmm_gguf_tensor *out);

/** Index of the tensor named `name`, or -1 if there is none (binary search). */
QMM_API int64_t qmm_gguf_find_tensor(const qmm_gguf *g, const char *name);

/* ---- metadata (key/value pairs) ---- */

/**
 * A metadata value: a scalar, a string, or an array (of scalars, strings or arrays).
 * Filled by qmm_gguf_get_kv and qmm_gguf_array_get; valid until qmm_gguf_close.
 */
typedef struct qmm_gguf_value {
    qmm_gguf_value_type type;      /**< this value's type */
    qmm_gguf_value_type elem_type; /**< arrays: the element type; otherwise = type */
    uint64_t n;                    /**< arrays: element count; strings: length in bytes;
                                        scalars: 1 */
    const void *data;              /**< scalars: the value's bytes in the file (little-endian,
                                        maybe unaligned: read with the accessors or memcpy);
                                        strings: a NUL-terminated copy (may hold inner NULs:
                                        use n); arrays of scalars: the n packed elements in
                                        the file; arrays of strings/arrays: NULL (use
                                        qmm_gguf_array_get) */
    const qmm_gguf *g;             /**< internal: the owning file */
    int64_t node;                  /**< internal: index of this value's node */
} qmm_gguf_value;

/** Number of key/value pairs. */
QMM_API int64_t qmm_gguf_n_kv(const qmm_gguf *g);

/** The NUL-terminated key of pair i (file order), or NULL if i is out of range. */
QMM_API const char *qmm_gguf_kv_key(const qmm_gguf *g, int64_t i);

/** The value type of pair i, or -1 if i is out of range. */
QMM_API int qmm_gguf_kv_type(const qmm_gguf *g, int64_t i);

/** Index of the pair whose key is `key`, or -1 (binary search). */
QMM_API int64_t qmm_gguf_find_kv(const qmm_gguf *g, const char *key);

/** The value of pair i. Errors: QMM_ERR_INVALID_ARGUMENT (NULL or i out of range). */
QMM_API qmm_status qmm_gguf_get_kv(const qmm_gguf *g, int64_t i, qmm_gguf_value *out);

/**
 * Element j of array `arr` (0 <= j < arr->n) as a value of its own, for every element type
 * (scalars point into the file; strings and nested arrays as from qmm_gguf_get_kv).
 * Errors: QMM_ERR_INVALID_ARGUMENT (NULL, not an array, j out of range).
 */
QMM_API qmm_status qmm_gguf_array_get(const qmm_gguf_value *arr, uint64_t j,
                                      qmm_gguf_value *out);

/**
 * Read a scalar as an integer: any integer type or bool. Errors: QMM_ERR_INVALID_ARGUMENT
 * for NULL, a non-integer type, or a value out of range of the result (a negative value
 * for _uint, a u64 above INT64_MAX for _int).
 */
QMM_API qmm_status qmm_gguf_value_uint(const qmm_gguf_value *v, uint64_t *out);
QMM_API qmm_status qmm_gguf_value_int(const qmm_gguf_value *v, int64_t *out);
/** Read an f32 or f64 scalar as a double. Errors: QMM_ERR_INVALID_ARGUMENT (other types). */
QMM_API qmm_status qmm_gguf_value_float(const qmm_gguf_value *v, double *out);
/** Read a string value: *s NUL-terminated, *len its byte length (len may be NULL).
 *  Errors: QMM_ERR_INVALID_ARGUMENT (NULL, not a string). */
QMM_API qmm_status qmm_gguf_value_string(const qmm_gguf_value *v, const char **s, size_t *len);

/* ---------------------------------------------------------------------------------------
 * Writer (for test fixtures and tools). Builds the header in memory; tensor data is
 * referenced, not copied, until the file is written. Writes version 3, little-endian.
 * It validates what a reader would reject (shapes, types, sizes, duplicate keys or names,
 * alignment) except the type of a caller-added "general.alignment", so tests can craft
 * that error.
 * ------------------------------------------------------------------------------------- */

typedef struct qmm_gguf_writer qmm_gguf_writer; /**< a GGUF file under construction */

/** Create an empty writer (alignment 32, version 3). Errors: NULL, out of memory. */
QMM_API qmm_status qmm_gguf_writer_create(qmm_gguf_writer **out);
/** Free a writer (NULL is a no-op). */
QMM_API void qmm_gguf_writer_free(qmm_gguf_writer *w);

/**
 * Use `alignment` bytes (a non-zero power of two <= 2^31) for the data section and
 * offsets. Unless a "general.alignment" KV was added explicitly, the written file gets
 * the key "general.alignment" (u32) as its first pair when alignment != 32.
 * Errors: QMM_ERR_INVALID_ARGUMENT (not a power of two, or called after a tensor was added).
 */
QMM_API qmm_status qmm_gguf_writer_set_alignment(qmm_gguf_writer *w, size_t alignment);

/** Version to write: 2 or 3 (the layout is identical). Errors: INVALID_ARGUMENT. */
QMM_API qmm_status qmm_gguf_writer_set_version(qmm_gguf_writer *w, uint32_t version);

/*
 * Adding metadata. `key` names a new top-level pair (non-empty, unique); key == NULL adds
 * the value as the next element of the array opened with qmm_gguf_writer_begin_array
 * (its type must be the array's element type). Errors: QMM_ERR_INVALID_ARGUMENT (NULL
 * where not allowed, duplicate/empty key, wrong type for the open array, a key given while
 * an array is open, too many elements), QMM_ERR_OUT_OF_MEMORY.
 */

/** Add a scalar (any type but string/array); `value` points at a C value of that type
 *  (uint8_t ... double; bool as a uint8_t 0 or 1). */
QMM_API qmm_status qmm_gguf_writer_add_scalar(qmm_gguf_writer *w, const char *key,
                                              qmm_gguf_value_type type, const void *value);
/** Add a u32 scalar (convenience for add_scalar). */
QMM_API qmm_status qmm_gguf_writer_add_u32(qmm_gguf_writer *w, const char *key, uint32_t v);
/** Add a string of `len` bytes (may hold NULs). */
QMM_API qmm_status qmm_gguf_writer_add_string(qmm_gguf_writer *w, const char *key,
                                              const char *s, size_t len);
/** Add an array of `n` scalars of `elem_type` (packed C values as for add_scalar). */
QMM_API qmm_status qmm_gguf_writer_add_array(qmm_gguf_writer *w, const char *key,
                                             qmm_gguf_value_type elem_type, const void *elems,
                                             uint64_t n);
/**
 * Open an array of `n` elements of `elem_type` (any type; STRING and ARRAY elements are then
 * added one by one with key == NULL; nested begin_array calls open element arrays, up to
 * QMM_GGUF_MAX_DEPTH). Close it with qmm_gguf_writer_end_array after exactly n elements.
 */
QMM_API qmm_status qmm_gguf_writer_begin_array(qmm_gguf_writer *w, const char *key,
                                               qmm_gguf_value_type elem_type, uint64_t n);
/** Close the innermost open array. Errors: none open, or fewer elements than announced. */
QMM_API qmm_status qmm_gguf_writer_end_array(qmm_gguf_writer *w);

/**
 * Add a tensor: name (non-empty, unique), type, n_dims (1..4) dimensions ne (ne[0] = k, a
 * multiple of the block size), and its `nbytes` bytes of data, which must equal the size the
 * shape implies. `data` is NOT copied: it must stay valid until the last write call.
 * Tensors are laid out in the order added, each at the next aligned offset.
 * Errors: QMM_ERR_INVALID_ARGUMENT, QMM_ERR_UNSUPPORTED (unknown type), QMM_ERR_OUT_OF_MEMORY.
 */
QMM_API qmm_status qmm_gguf_writer_add_tensor(qmm_gguf_writer *w, const char *name,
                                              qmm_type type, uint32_t n_dims,
                                              const int64_t *ne, const void *data,
                                              size_t nbytes);

/**
 * Write the file (header, padding, every tensor padded to the alignment).
 * Errors: QMM_ERR_INVALID_ARGUMENT (an array still open), QMM_ERR_IO (the message names
 * the path and the system error), QMM_ERR_OUT_OF_MEMORY.
 */
QMM_API qmm_status qmm_gguf_writer_write_file(const qmm_gguf_writer *w, const char *path);

/** Write the file image into a new malloc'd buffer (*data; release with free()) of *size
 *  bytes. Errors as qmm_gguf_writer_write_file, except QMM_ERR_IO. */
QMM_API qmm_status qmm_gguf_writer_write_memory(const qmm_gguf_writer *w, void **data,
                                                size_t *size);

#ifdef __cplusplus
}
#endif

#endif /* QMM_GGUF_H */
