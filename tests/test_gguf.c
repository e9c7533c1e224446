/*
 * test_gguf.c — the GGUF reader and writer (include/qmm_gguf.h).
 *
 *  - round trip writer -> reader for every KV type, strings with NULs, arrays of every
 *    scalar type, arrays of strings, nested arrays, tensors of several types and ranks,
 *    at alignments 16, 32 (default), 64 and 128, through memory and through a file;
 *  - hostile files built byte by byte here (independent of the writer), grouped by the
 *    fault classes of CASES.md: J (overflow, exhaustion, bad ids, duplicates), K (offsets,
 *    alignment, data section placement), L (endianness, magic, version); each must fail
 *    with QMM_ERR_FORMAT and a message naming the field;
 *  - a valid file truncated at every byte offset fails cleanly, and so does every single
 *    byte flipped to 0xFF (no crash, no success with a wrong size);
 *  - every type of the table (found at run time) is read and written at its byte size and
 *    refused at a wrong one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "qmm.h"
#include "qmm_gguf.h"

/* ---------------------------------------------------------------------------------------
 * A raw byte builder for crafted files
 * ------------------------------------------------------------------------------------- */

typedef struct rb {
    uint8_t b[8192];
    size_t n;
} rb;

static void put(rb *r, const void *p, size_t n) {
    assert_true(r->n + n <= sizeof r->b);
    memcpy(r->b + r->n, p, n);
    r->n += n;
}
static void u8(rb *r, uint8_t v) { put(r, &v, 1); }
static void u32(rb *r, uint32_t v) {
    for (int i = 0; i < 4; i++) u8(r, (uint8_t)(v >> (8 * i)));
}
static void u64(rb *r, uint64_t v) {
    for (int i = 0; i < 8; i++) u8(r, (uint8_t)(v >> (8 * i)));
}
static void str(rb *r, const char *s) {
    u64(r, strlen(s));
    put(r, s, strlen(s));
}
static void hdr(rb *r, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put(r, "GGUF", 4);
    u32(r, version);
    u64(r, n_tensors);
    u64(r, n_kv);
}
static void kv_u32(rb *r, const char *key, uint32_t v) {
    str(r, key);
    u32(r, QMM_GGUF_TYPE_UINT32);
    u32(r, v);
}
static void kv_str(rb *r, const char *key, const char *v) {
    str(r, key);
    u32(r, QMM_GGUF_TYPE_STRING);
    str(r, v);
}
/* A tensor info with n_dims dimensions (ne given as u64). */
static void tinfo(rb *r, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                  uint64_t offset) {
    str(r, name);
    u32(r, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) u64(r, ne[d]);
    u32(r, type);
    u64(r, offset);
}
/* Pad to `align` from the start of the file, then `data` zero bytes of tensor data. */
static void finish(rb *r, size_t align, size_t data) {
    while (r->n % align) u8(r, 0);
    for (size_t i = 0; i < data; i++) u8(r, (uint8_t)(i * 7 + 1));
}

/* ---------------------------------------------------------------------------------------
 * Hostile cases
 * ------------------------------------------------------------------------------------- */

typedef struct bad_case {
    const char *name;
    void (*build)(rb *r);
    const char *field; /* must appear in qmm_last_error() */
} bad_case;

static const uint64_t NE_F32_8[1] = {8};

/* J: integer overflow and exhaustion, bad ids, duplicates */
static void j_n_kv_huge(rb *r) { hdr(r, 3, 0, UINT64_MAX); kv_u32(r, "a", 1); }
static void j_n_kv_just_too_many(rb *r) { hdr(r, 3, 0, 3); kv_u32(r, "a", 1); kv_u32(r, "b", 2); }
static void j_n_tensors_huge(rb *r) { hdr(r, 3, UINT64_MAX / 2, 0); finish(r, 32, 64); }
static void j_n_tensors_tiny_file(rb *r) { hdr(r, 3, 1000, 0); finish(r, 32, 64); }
static void j_key_len_huge(rb *r) {
    hdr(r, 3, 0, 1);
    u64(r, UINT64_MAX - 3);
    put(r, "abcdefghijklmnop", 16);
}
static void j_key_len_past_eof(rb *r) {
    hdr(r, 3, 0, 1);
    u64(r, 100);
    put(r, "abcdefgh", 8);
}
static void j_key_empty(rb *r) { hdr(r, 3, 0, 1); kv_u32(r, "", 1); }
static void j_key_with_nul(rb *r) {
    hdr(r, 3, 0, 1);
    u64(r, 3);
    put(r, "a\0b", 3);
    u32(r, QMM_GGUF_TYPE_UINT32);
    u32(r, 1);
}
static void j_string_value_len_huge(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "s");
    u32(r, QMM_GGUF_TYPE_STRING);
    u64(r, (uint64_t)1 << 63);
    put(r, "xyz", 3);
}
static void j_value_type_unknown(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "k");
    u32(r, 13);
    u32(r, 0);
}
static void j_value_type_huge(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "k");
    u32(r, 0xFFFFFFFFu);
    u32(r, 0);
}
static void j_array_elem_type_unknown(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "k");
    u32(r, QMM_GGUF_TYPE_ARRAY);
    u32(r, 77);
    u64(r, 1);
    u32(r, 0);
}
static void j_array_len_huge_u8(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "k");
    u32(r, QMM_GGUF_TYPE_ARRAY);
    u32(r, QMM_GGUF_TYPE_UINT8);
    u64(r, UINT64_MAX);
    u32(r, 0);
}
static void j_array_len_wraps_u32(rb *r) { /* 2^62 * 4 bytes wraps to 0 */
    hdr(r, 3, 0, 1);
    str(r, "k");
    u32(r, QMM_GGUF_TYPE_ARRAY);
    u32(r, QMM_GGUF_TYPE_UINT32);
    u64(r, (uint64_t)1 << 62);
    u32(r, 0);
}
static void j_array_len_huge_strings(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "k");
    u32(r, QMM_GGUF_TYPE_ARRAY);
    u32(r, QMM_GGUF_TYPE_STRING);
    u64(r, (uint64_t)1 << 40);
    str(r, "x");
}
static void j_array_len_huge_nested(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "k");
    u32(r, QMM_GGUF_TYPE_ARRAY);
    u32(r, QMM_GGUF_TYPE_ARRAY);
    u64(r, (uint64_t)1 << 50);
    u32(r, QMM_GGUF_TYPE_UINT8);
    u64(r, 0);
}
static void j_array_nested_too_deep(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "deep");
    u32(r, QMM_GGUF_TYPE_ARRAY);
    for (int d = 0; d < QMM_GGUF_MAX_DEPTH; d++) {
        u32(r, QMM_GGUF_TYPE_ARRAY);
        u64(r, 1);
    }
    u32(r, QMM_GGUF_TYPE_UINT8);
    u64(r, 0);
}
static void j_bool_value_2(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "b");
    u32(r, QMM_GGUF_TYPE_BOOL);
    u8(r, 2);
}
static void j_bool_array_elem_255(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "b");
    u32(r, QMM_GGUF_TYPE_ARRAY);
    u32(r, QMM_GGUF_TYPE_BOOL);
    u64(r, 3);
    u8(r, 0);
    u8(r, 1);
    u8(r, 255);
}
static void j_duplicate_key(rb *r) {
    hdr(r, 3, 0, 3);
    kv_u32(r, "x.y", 1);
    kv_str(r, "other", "v");
    kv_str(r, "x.y", "again");
}
static void j_duplicate_tensor_name(rb *r) {
    hdr(r, 3, 2, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, 32);
    finish(r, 32, 64);
}
static void j_tensor_name_empty(rb *r) {
    hdr(r, 3, 1, 0);
    tinfo(r, "", 1, NE_F32_8, QMM_TYPE_F32, 0);
    finish(r, 32, 32);
}
static void j_n_dims_0(rb *r) {
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 0, NE_F32_8, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void j_n_dims_5(rb *r) {
    const uint64_t ne[5] = {8, 1, 1, 1, 1};
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 5, ne, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void j_ne_zero(rb *r) {
    const uint64_t ne[2] = {8, 0};
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 2, ne, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void j_ne_negative(rb *r) {
    const uint64_t ne[2] = {8, (uint64_t)-5};
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 2, ne, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void j_elements_wrap_64(rb *r) { /* 2^32 * 2^32 = 2^64 wraps to 0 */
    const uint64_t ne[2] = {(uint64_t)1 << 32, (uint64_t)1 << 32};
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 2, ne, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void j_elements_wrap_4d(rb *r) {
    const uint64_t ne[4] = {1u << 16, 1u << 16, 1u << 16, 1u << 16};
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 4, ne, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void j_bytes_wrap_64(rb *r) { /* 2^62 f32 elements: 2^64 bytes */
    const uint64_t ne[1] = {(uint64_t)1 << 62};
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, ne, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void j_type_unknown_4(rb *r) { /* ggml's removed Q4_2 */
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, 4, 0);
    finish(r, 32, 64);
}
static void j_type_unknown_99(rb *r) {
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, 99, 0);
    finish(r, 32, 64);
}
static void j_type_unknown_huge(rb *r) {
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, 0x80000000u, 0);
    finish(r, 32, 64);
}
static void j_ne0_not_block_multiple(rb *r) {
    const uint64_t ne[2] = {48, 2}; /* q4_0 blocks are 32 */
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 2, ne, QMM_TYPE_Q4_0, 0);
    finish(r, 32, 128);
}

/* K: offsets, alignment, data section */
static void k_alignment_0(rb *r) { hdr(r, 3, 0, 1); kv_u32(r, "general.alignment", 0); }
static void k_alignment_3(rb *r) { hdr(r, 3, 0, 1); kv_u32(r, "general.alignment", 3); }
static void k_alignment_48(rb *r) { hdr(r, 3, 0, 1); kv_u32(r, "general.alignment", 48); }
static void k_alignment_u64(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "general.alignment");
    u32(r, QMM_GGUF_TYPE_UINT64);
    u64(r, 32);
}
static void k_alignment_i32(rb *r) {
    hdr(r, 3, 0, 1);
    str(r, "general.alignment");
    u32(r, QMM_GGUF_TYPE_INT32);
    u32(r, 32);
}
static void k_alignment_string(rb *r) { hdr(r, 3, 0, 1); kv_str(r, "general.alignment", "32"); }
static void k_offset_unaligned(rb *r) {
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, 4);
    finish(r, 32, 64);
}
static void k_offset_unaligned_64(rb *r) { /* aligned to 32 but the file says 64 */
    hdr(r, 3, 2, 1);
    kv_u32(r, "general.alignment", 64);
    tinfo(r, "a", 1, NE_F32_8, QMM_TYPE_F32, 0);
    tinfo(r, "b", 1, NE_F32_8, QMM_TYPE_F32, 32);
    finish(r, 64, 128);
}
static void k_offset_past_eof(rb *r) {
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, 4096);
    finish(r, 32, 64);
}
static void k_tensor_runs_past_eof(rb *r) {
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, 0);
    finish(r, 32, 31);
}
static void k_offset_wraps(rb *r) { /* offset + size wraps 64 bits */
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, UINT64_MAX - 31);
    finish(r, 32, 64);
}
static void k_overlap(rb *r) {
    const uint64_t ne[1] = {16}; /* 64 bytes */
    hdr(r, 3, 2, 0);
    tinfo(r, "a", 1, ne, QMM_TYPE_F32, 0);
    tinfo(r, "b", 1, ne, QMM_TYPE_F32, 32);
    finish(r, 32, 128);
}
static void k_overlap_same_offset(rb *r) {
    hdr(r, 3, 2, 0);
    tinfo(r, "a", 1, NE_F32_8, QMM_TYPE_F32, 0);
    tinfo(r, "b", 1, NE_F32_8, QMM_TYPE_F32, 0);
    finish(r, 32, 64);
}
static void k_no_data_section(rb *r) { /* tensor info but the file ends with the header */
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, 0);
}
static void k_data_not_aligned_from_file_start(rb *r) {
    /* data placed right after the header (unpadded): the reader must look at the padded
     * position and find the tensor runs past the end */
    hdr(r, 3, 1, 0);
    tinfo(r, "w", 1, NE_F32_8, QMM_TYPE_F32, 0); /* header ends at 24+9+4+8+4+8 = 57 */
    for (int i = 0; i < 32; i++) u8(r, 1);
}

/* L: endianness, magic, version */
static void l_big_endian_v3(rb *r) {
    put(r, "GGUF", 4);
    put(r, "\0\0\0\3", 4);
    put(r, "\0\0\0\0\0\0\0\0", 8);
    put(r, "\0\0\0\0\0\0\0\0", 8);
}
static void l_big_endian_v2(rb *r) {
    put(r, "GGUF", 4);
    put(r, "\0\0\0\2", 4);
    put(r, "\0\0\0\0\0\0\0\0", 8);
    put(r, "\0\0\0\0\0\0\0\0", 8);
}
static void l_version_1(rb *r) { hdr(r, 1, 0, 0); }
static void l_version_4(rb *r) { hdr(r, 4, 0, 0); }
static void l_version_0(rb *r) { hdr(r, 0, 0, 0); }
static void l_magic_bad(rb *r) {
    hdr(r, 3, 0, 0);
    memcpy(r->b, "GGML", 4);
}
static void l_magic_swapped(rb *r) {
    hdr(r, 3, 0, 0);
    memcpy(r->b, "FUGG", 4);
}
static void l_empty(rb *r) { (void)r; }
static void l_short_magic(rb *r) { put(r, "GG", 2); }

static const bad_case J_CASES[] = {
    {"n_kv huge", j_n_kv_huge, "n_kv"},
    {"n_kv beyond file", j_n_kv_just_too_many, "n_kv 3"},
    {"n_tensors huge", j_n_tensors_huge, "n_tensors"},
    {"n_tensors in tiny file", j_n_tensors_tiny_file, "n_tensors"},
    {"key length huge", j_key_len_huge, "key"},
    {"key length past eof", j_key_len_past_eof, "key"},
    {"key empty", j_key_empty, "key"},
    {"key with NUL", j_key_with_nul, "key"},
    {"string value length huge", j_string_value_len_huge, "string value"},
    {"value type 13", j_value_type_unknown, "value type 13"},
    {"value type 0xffffffff", j_value_type_huge, "value type 4294967295"},
    {"array element type 77", j_array_elem_type_unknown, "element type 77"},
    {"array length huge u8", j_array_len_huge_u8, "array length"},
    {"array length wraps u32", j_array_len_wraps_u32, "array length"},
    {"array length huge strings", j_array_len_huge_strings, "array length"},
    {"array length huge nested", j_array_len_huge_nested, "array length"},
    {"arrays nested too deep", j_array_nested_too_deep, "nested"},
    {"bool value 2", j_bool_value_2, "bool"},
    {"bool array element 255", j_bool_array_elem_255, "bool"},
    {"duplicate key", j_duplicate_key, "duplicate key 'x.y'"},
    {"duplicate tensor name", j_duplicate_tensor_name, "duplicate tensor name 'w'"},
    {"tensor name empty", j_tensor_name_empty, "tensor name"},
    {"n_dims 0", j_n_dims_0, "n_dims is 0"},
    {"n_dims 5", j_n_dims_5, "n_dims is 5"},
    {"ne zero", j_ne_zero, "ne[1] is 0"},
    {"ne negative", j_ne_negative, "ne[1]"},
    {"element count wraps", j_elements_wrap_64, "element count"},
    {"element count wraps 4d", j_elements_wrap_4d, "element count"},
    {"byte size wraps", j_bytes_wrap_64, "byte size"},
    {"type id 4", j_type_unknown_4, "type id 4"},
    {"type id 99", j_type_unknown_99, "type id 99"},
    {"type id 2^31", j_type_unknown_huge, "type id 2147483648"},
    {"ne[0] not a block multiple", j_ne0_not_block_multiple, "ne[0] = 48"},
};

static const bad_case K_CASES[] = {
    {"alignment 0", k_alignment_0, "general.alignment is 0"},
    {"alignment 3", k_alignment_3, "general.alignment is 3"},
    {"alignment 48", k_alignment_48, "general.alignment is 48"},
    {"alignment u64", k_alignment_u64, "general.alignment has type u64"},
    {"alignment i32", k_alignment_i32, "general.alignment has type i32"},
    {"alignment string", k_alignment_string, "general.alignment has type str"},
    {"offset unaligned", k_offset_unaligned, "offset 4"},
    {"offset unaligned to 64", k_offset_unaligned_64, "offset 32"},
    {"offset past eof", k_offset_past_eof, "offset 4096"},
    {"tensor past eof", k_tensor_runs_past_eof, "past the end"},
    {"offset wraps", k_offset_wraps, "offset"},
    {"overlap", k_overlap, "overlaps"},
    {"overlap same offset", k_overlap_same_offset, "overlaps"},
    {"no data section", k_no_data_section, "data section"},
    {"data not aligned from file start", k_data_not_aligned_from_file_start, "past the end"},
};

static const bad_case L_CASES[] = {
    {"big-endian v3", l_big_endian_v3, "big-endian GGUF not supported"},
    {"big-endian v2", l_big_endian_v2, "big-endian GGUF not supported"},
    {"version 1", l_version_1, "version is 1"},
    {"version 4", l_version_4, "version is 4"},
    {"version 0", l_version_0, "version is 0"},
    {"magic GGML", l_magic_bad, "magic"},
    {"magic byte-swapped", l_magic_swapped, "magic"},
    {"empty file", l_empty, "magic"},
    {"2-byte file", l_short_magic, "magic"},
};

static void run_bad_cases(const bad_case *cases, size_t n) {
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        rb r = {.n = 0};
        cases[i].build(&r);
        /* an exact-size heap copy so ASan sees any read past the end */
        uint8_t *img = malloc(r.n ? r.n : 1);
        memcpy(img, r.b, r.n);
        qmm_gguf *g = (qmm_gguf *)0x1;
        qmm_status s = qmm_gguf_open_memory(img, r.n, &g);
        const char *msg = qmm_last_error();
        if (s != QMM_ERR_FORMAT || strstr(msg, cases[i].field) == NULL) {
            print_error("case '%s': status %s, message \"%s\", expected QMM_ERR_FORMAT naming "
                        "\"%s\"\n",
                        cases[i].name, qmm_status_str(s), msg, cases[i].field);
            failures++;
        }
        if (s == QMM_OK) qmm_gguf_close(g);
        else if (g != (qmm_gguf *)0x1) {
            print_error("case '%s': *out written on failure\n", cases[i].name);
            failures++;
        }
        free(img);
    }
    assert_int_equal(failures, 0);
}

static void test_hostile_J(void **state) { (void)state; run_bad_cases(J_CASES, sizeof J_CASES / sizeof J_CASES[0]); }
static void test_hostile_K(void **state) { (void)state; run_bad_cases(K_CASES, sizeof K_CASES / sizeof K_CASES[0]); }
static void test_hostile_L(void **state) { (void)state; run_bad_cases(L_CASES, sizeof L_CASES / sizeof L_CASES[0]); }

/* A crafted (writer-independent) valid file with alignment 64: the data section starts at
 * the end of the header rounded up to 64 from the start of the file, and tensor data
 * pointers land there. Also a version 2 file with no alignment key (32). */
static void test_crafted_valid(void **state) {
    (void)state;
    const uint64_t ne2[2] = {32, 3}; /* q8_0: 34 bytes per row, 102 bytes */
    rb r = {.n = 0};
    hdr(&r, 3, 2, 2);
    kv_u32(&r, "general.alignment", 64);
    kv_str(&r, "general.name", "crafted");
    tinfo(&r, "a", 2, ne2, QMM_TYPE_Q8_0, 0);
    tinfo(&r, "b", 1, NE_F32_8, QMM_TYPE_F32, 128);
    size_t header_end = r.n;
    finish(&r, 64, 128 + 32);
    qmm_gguf *g = NULL;
    assert_int_equal(qmm_gguf_open_memory(r.b, r.n, &g), QMM_OK);
    assert_int_equal(qmm_gguf_version(g), 3);
    assert_int_equal(qmm_gguf_alignment(g), 64);
    assert_int_equal(qmm_gguf_data_offset(g), (header_end + 63) / 64 * 64);
    qmm_gguf_tensor t;
    assert_int_equal(qmm_gguf_get_tensor(g, 1, &t), QMM_OK);
    assert_string_equal(t.name, "b");
    assert_int_equal(t.nbytes, 32);
    assert_ptr_equal(t.data, r.b + qmm_gguf_data_offset(g) + 128);
    assert_int_equal(qmm_gguf_get_tensor(g, 0, &t), QMM_OK);
    assert_int_equal(t.nbytes, 102);
    assert_int_equal(t.ne[0], 32);
    assert_int_equal(t.ne[1], 3);
    assert_int_equal(t.ne[2], 1);
    qmm_gguf_close(g);

    rb v2 = {.n = 0};
    hdr(&v2, 2, 1, 0);
    tinfo(&v2, "w", 1, NE_F32_8, QMM_TYPE_F32, 0);
    finish(&v2, 32, 32);
    assert_int_equal(qmm_gguf_open_memory(v2.b, v2.n, &g), QMM_OK);
    assert_int_equal(qmm_gguf_version(g), 2);
    assert_int_equal(qmm_gguf_alignment(g), 32);
    assert_int_equal(qmm_gguf_data_offset(g), 64);
    qmm_gguf_close(g);
}

/* Every type of qmm's table, found at run time (ids 0..63): a crafted tensor of the type
 * [2 blocks, 3 rows] opens with nbytes = 6 * block bytes, and the next tensor's data right
 * after it; refused (QMM_ERR_FORMAT, naming the fault) are a next tensor placed inside those
 * bytes (what a reader with a smaller block size would accept), a file one byte short of
 * them, and an ne[0] that is not a multiple of the block size. The writer takes exactly
 * those bytes and refuses one byte less. An id outside the table is refused as a type. */
static void test_every_table_type(void **state) {
    (void)state;
    int n_types = 0;
    for (int id = 0; id < 64; id++) {
        rb r = {.n = 0};
        qmm_gguf *g = NULL;
        qmm_gguf_tensor t;
        if (!qmm_type_is_supported(id)) {
            const uint64_t ne[1] = {256};
            hdr(&r, 3, 1, 0);
            tinfo(&r, "w", 1, ne, (uint32_t)id, 0);
            finish(&r, 32, 2048);
            assert_int_equal(qmm_gguf_open_memory(r.b, r.n, &g), QMM_ERR_FORMAT);
            assert_non_null(strstr(qmm_last_error(), "type id"));
            continue;
        }
        n_types++;
        const int64_t bs = qmm_type_block_size((qmm_type)id);
        const size_t bb = qmm_type_block_bytes((qmm_type)id);
        const size_t nbytes = 6 * bb, pad = (nbytes + 31) / 32 * 32;
        const uint64_t ne[2] = {(uint64_t)(2 * bs), 3};
        hdr(&r, 3, 2, 0);
        tinfo(&r, "w", 2, ne, (uint32_t)id, 0);
        tinfo(&r, "x", 1, NE_F32_8, QMM_TYPE_F32, pad);
        finish(&r, 32, pad + 32);
        if (qmm_gguf_open_memory(r.b, r.n, &g) != QMM_OK)
            fail_msg("%s: %s", qmm_type_name((qmm_type)id), qmm_last_error());
        assert_int_equal(qmm_gguf_get_tensor(g, 0, &t), QMM_OK);
        assert_int_equal(t.type, id);
        assert_int_equal(t.nbytes, nbytes);
        assert_int_equal(t.ne[0], 2 * bs);
        assert_int_equal(qmm_gguf_get_tensor(g, 1, &t), QMM_OK);
        assert_ptr_equal(t.data, r.b + qmm_gguf_data_offset(g) + pad);
        qmm_gguf_close(g);

        r.n = 0; /* the next tensor inside w's bytes */
        hdr(&r, 3, 2, 0);
        tinfo(&r, "w", 2, ne, (uint32_t)id, 0);
        tinfo(&r, "x", 1, NE_F32_8, QMM_TYPE_F32, (nbytes - 1) / 32 * 32);
        finish(&r, 32, pad + 32);
        assert_int_equal(qmm_gguf_open_memory(r.b, r.n, &g), QMM_ERR_FORMAT);
        assert_non_null(strstr(qmm_last_error(), "overlaps"));

        r.n = 0; /* the file ends one byte before w's last byte */
        hdr(&r, 3, 1, 0);
        tinfo(&r, "w", 2, ne, (uint32_t)id, 0);
        finish(&r, 32, nbytes - 1);
        assert_int_equal(qmm_gguf_open_memory(r.b, r.n, &g), QMM_ERR_FORMAT);
        assert_non_null(strstr(qmm_last_error(), "past the end"));
        finish(&r, 1, 1); /* exactly w's bytes */
        assert_int_equal(qmm_gguf_open_memory(r.b, r.n, &g), QMM_OK);
        qmm_gguf_close(g);

        if (bs > 1) { /* a row of one and a half blocks */
            const uint64_t ne_bad[2] = {(uint64_t)(bs + bs / 2), 3};
            r.n = 0;
            hdr(&r, 3, 1, 0);
            tinfo(&r, "w", 2, ne_bad, (uint32_t)id, 0);
            finish(&r, 32, nbytes);
            assert_int_equal(qmm_gguf_open_memory(r.b, r.n, &g), QMM_ERR_FORMAT);
            assert_non_null(strstr(qmm_last_error(), "block size"));
        }

        /* the writer: exactly nbytes, read back the same */
        qmm_gguf_writer *w = NULL;
        const int64_t wne[2] = {2 * bs, 3};
        uint8_t data[6 * 512];
        assert_true(nbytes <= sizeof data);
        for (size_t i = 0; i < nbytes; i++) data[i] = (uint8_t)(i * 29 + id);
        assert_int_equal(qmm_gguf_writer_create(&w), QMM_OK);
        assert_int_equal(qmm_gguf_writer_add_tensor(w, "w", (qmm_type)id, 2, wne, data, nbytes - 1),
                         QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_gguf_writer_add_tensor(w, "w", (qmm_type)id, 2, wne, data, nbytes),
                         QMM_OK);
        void *img = NULL;
        size_t size = 0;
        assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
        qmm_gguf_writer_free(w);
        assert_int_equal(qmm_gguf_open_memory(img, size, &g), QMM_OK);
        assert_int_equal(qmm_gguf_get_tensor(g, 0, &t), QMM_OK);
        assert_int_equal(t.type, id);
        assert_int_equal(t.nbytes, nbytes);
        assert_memory_equal(t.data, data, nbytes);
        qmm_gguf_close(g);
        free(img);
    }
    /* the 16 types of the first table at least (f32 .. q8_K, iq4_nl, iq4_xs, bf16) */
    assert_true(n_types >= 16);
    print_message("every table type: %d types accepted at their size, wrong sizes refused\n",
                  n_types);
}

/* ---------------------------------------------------------------------------------------
 * Round trip
 * ------------------------------------------------------------------------------------- */

enum { NT = 5 };
typedef struct fixture_tensor {
    const char *name;
    qmm_type type;
    uint32_t n_dims;
    int64_t ne[4];
    size_t nbytes;
    uint8_t *data;
} fixture_tensor;

static fixture_tensor tensors[NT] = {
    {"token_embd.weight", QMM_TYPE_Q8_0, 2, {64, 3, 1, 1}, 0, NULL},
    {"blk.0.ffn_down.weight", QMM_TYPE_Q4_K, 2, {256, 2, 1, 1}, 0, NULL},
    {"norm", QMM_TYPE_F32, 1, {5, 1, 1, 1}, 0, NULL},
    {"cube", QMM_TYPE_F16, 3, {3, 2, 2, 1}, 0, NULL},
    {"four.d", QMM_TYPE_Q4_0, 4, {32, 1, 2, 3}, 0, NULL},
};

static const uint8_t V_U8 = 200;
static const int8_t V_I8 = -100;
static const uint16_t V_U16 = 60000;
static const int16_t V_I16 = -30000;
static const uint32_t V_U32 = 4000000000u;
static const int32_t V_I32 = -2000000000;
static const float V_F32 = -1.5e-3f;
static const uint8_t V_BOOL = 1;
static const uint64_t V_U64 = 18000000000000000000ull;
static const int64_t V_I64 = INT64_MIN;
static const double V_F64 = 3.141592653589793;
static const char V_STR[] = "h\0llo, w\xc3\xb6rld"; /* inner NUL, UTF-8 */
static const int32_t V_ARR_I32[4] = {-1, 0, 1, INT32_MAX};
static const double V_ARR_F64[3] = {0.5, -0.25, 1e300};
static const uint8_t V_ARR_BOOL[3] = {1, 0, 1};

static qmm_gguf_writer *make_writer(size_t alignment) {
    qmm_gguf_writer *w = NULL;
    assert_int_equal(qmm_gguf_writer_create(&w), QMM_OK);
    if (alignment) assert_int_equal(qmm_gguf_writer_set_alignment(w, alignment), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.u8", QMM_GGUF_TYPE_UINT8, &V_U8), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.i8", QMM_GGUF_TYPE_INT8, &V_I8), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.u16", QMM_GGUF_TYPE_UINT16, &V_U16), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.i16", QMM_GGUF_TYPE_INT16, &V_I16), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_u32(w, "s.u32", V_U32), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.i32", QMM_GGUF_TYPE_INT32, &V_I32), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.f32", QMM_GGUF_TYPE_FLOAT32, &V_F32), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.bool", QMM_GGUF_TYPE_BOOL, &V_BOOL), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.u64", QMM_GGUF_TYPE_UINT64, &V_U64), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.i64", QMM_GGUF_TYPE_INT64, &V_I64), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "s.f64", QMM_GGUF_TYPE_FLOAT64, &V_F64), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, "s.str", V_STR, sizeof V_STR - 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, "s.empty", "", 0), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_array(w, "a.i32", QMM_GGUF_TYPE_INT32, V_ARR_I32, 4), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_array(w, "a.f64", QMM_GGUF_TYPE_FLOAT64, V_ARR_F64, 3), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_array(w, "a.bool", QMM_GGUF_TYPE_BOOL, V_ARR_BOOL, 3), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_array(w, "a.empty", QMM_GGUF_TYPE_UINT16, NULL, 0), QMM_OK);
    /* array of strings */
    assert_int_equal(qmm_gguf_writer_begin_array(w, "a.str", QMM_GGUF_TYPE_STRING, 3), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "<s>", 3), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "", 0), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "token", 5), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    /* nested: [[1, 2], [], [[\"x\"], [\"y\", \"z\"]]] is not homogeneous in GGUF, so:
     * a.nested = [[u32 1, 2], [u32], [u32 7]] and a.deep = [[[\"x\"], [\"y\", \"z\"]]] */
    const uint32_t one_two[2] = {1, 2}, seven = 7;
    assert_int_equal(qmm_gguf_writer_begin_array(w, "a.nested", QMM_GGUF_TYPE_ARRAY, 3), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_array(w, NULL, QMM_GGUF_TYPE_UINT32, one_two, 2), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_array(w, NULL, QMM_GGUF_TYPE_UINT32, NULL, 0), QMM_OK);
    assert_int_equal(qmm_gguf_writer_begin_array(w, NULL, QMM_GGUF_TYPE_UINT32, 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_scalar(w, NULL, QMM_GGUF_TYPE_UINT32, &seven), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_begin_array(w, "a.deep", QMM_GGUF_TYPE_ARRAY, 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_begin_array(w, NULL, QMM_GGUF_TYPE_ARRAY, 2), QMM_OK);
    assert_int_equal(qmm_gguf_writer_begin_array(w, NULL, QMM_GGUF_TYPE_STRING, 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "x", 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_begin_array(w, NULL, QMM_GGUF_TYPE_STRING, 2), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "y", 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "z", 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);

    for (int i = 0; i < NT; i++) {
        fixture_tensor *t = &tensors[i];
        if (t->data == NULL) {
            size_t row;
            assert_int_equal(qmm_row_bytes(t->type, t->ne[0], &row), QMM_OK);
            t->nbytes = row * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
            t->data = malloc(t->nbytes);
            for (size_t b = 0; b < t->nbytes; b++) t->data[b] = (uint8_t)(b * 31 + i * 17 + 3);
        }
        assert_int_equal(qmm_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne,
                                                    t->data, t->nbytes),
                         QMM_OK);
    }
    return w;
}

static qmm_gguf_value kv(const qmm_gguf *g, const char *key, qmm_gguf_value_type type) {
    int64_t i = qmm_gguf_find_kv(g, key);
    assert_true(i >= 0);
    assert_string_equal(qmm_gguf_kv_key(g, i), key);
    assert_int_equal(qmm_gguf_kv_type(g, i), type);
    qmm_gguf_value v;
    assert_int_equal(qmm_gguf_get_kv(g, i, &v), QMM_OK);
    assert_int_equal(v.type, type);
    return v;
}

static void check_reader(const qmm_gguf *g, size_t alignment) {
    assert_int_equal(qmm_gguf_version(g), 3);
    assert_int_equal(qmm_gguf_alignment(g), alignment);
    assert_int_equal(qmm_gguf_data_offset(g) % alignment, 0);
    /* 20 pairs, plus general.alignment when it is not the default */
    assert_int_equal(qmm_gguf_n_kv(g), 20 + (alignment != 32));
    if (alignment != 32) {
        assert_string_equal(qmm_gguf_kv_key(g, 0), "general.alignment");
        qmm_gguf_value v = kv(g, "general.alignment", QMM_GGUF_TYPE_UINT32);
        uint64_t a;
        assert_int_equal(qmm_gguf_value_uint(&v, &a), QMM_OK);
        assert_int_equal(a, alignment);
    }
    uint64_t u;
    int64_t s;
    double f;
    qmm_gguf_value v;
    v = kv(g, "s.u8", QMM_GGUF_TYPE_UINT8);
    assert_int_equal(qmm_gguf_value_uint(&v, &u), QMM_OK);
    assert_int_equal(u, V_U8);
    v = kv(g, "s.i8", QMM_GGUF_TYPE_INT8);
    assert_int_equal(qmm_gguf_value_int(&v, &s), QMM_OK);
    assert_int_equal(s, V_I8);
    assert_int_equal(qmm_gguf_value_uint(&v, &u), QMM_ERR_INVALID_ARGUMENT); /* negative */
    v = kv(g, "s.u16", QMM_GGUF_TYPE_UINT16);
    assert_int_equal(qmm_gguf_value_uint(&v, &u), QMM_OK);
    assert_int_equal(u, V_U16);
    v = kv(g, "s.i16", QMM_GGUF_TYPE_INT16);
    assert_int_equal(qmm_gguf_value_int(&v, &s), QMM_OK);
    assert_int_equal(s, V_I16);
    v = kv(g, "s.u32", QMM_GGUF_TYPE_UINT32);
    assert_int_equal(qmm_gguf_value_uint(&v, &u), QMM_OK);
    assert_int_equal(u, V_U32);
    v = kv(g, "s.i32", QMM_GGUF_TYPE_INT32);
    assert_int_equal(qmm_gguf_value_int(&v, &s), QMM_OK);
    assert_int_equal(s, V_I32);
    v = kv(g, "s.f32", QMM_GGUF_TYPE_FLOAT32);
    assert_int_equal(qmm_gguf_value_float(&v, &f), QMM_OK);
    assert_true(f == (double)V_F32);
    assert_int_equal(qmm_gguf_value_int(&v, &s), QMM_ERR_INVALID_ARGUMENT);
    v = kv(g, "s.bool", QMM_GGUF_TYPE_BOOL);
    assert_int_equal(qmm_gguf_value_uint(&v, &u), QMM_OK);
    assert_int_equal(u, 1);
    v = kv(g, "s.u64", QMM_GGUF_TYPE_UINT64);
    assert_int_equal(qmm_gguf_value_uint(&v, &u), QMM_OK);
    assert_true(u == V_U64);
    assert_int_equal(qmm_gguf_value_int(&v, &s), QMM_ERR_INVALID_ARGUMENT); /* > INT64_MAX */
    v = kv(g, "s.i64", QMM_GGUF_TYPE_INT64);
    assert_int_equal(qmm_gguf_value_int(&v, &s), QMM_OK);
    assert_true(s == V_I64);
    v = kv(g, "s.f64", QMM_GGUF_TYPE_FLOAT64);
    assert_int_equal(qmm_gguf_value_float(&v, &f), QMM_OK);
    assert_true(f == V_F64);
    const char *cs;
    size_t len;
    v = kv(g, "s.str", QMM_GGUF_TYPE_STRING);
    assert_int_equal(qmm_gguf_value_string(&v, &cs, &len), QMM_OK);
    assert_int_equal(len, sizeof V_STR - 1);
    assert_memory_equal(cs, V_STR, len);
    assert_int_equal(cs[len], '\0');
    v = kv(g, "s.empty", QMM_GGUF_TYPE_STRING);
    assert_int_equal(qmm_gguf_value_string(&v, &cs, &len), QMM_OK);
    assert_int_equal(len, 0);
    assert_string_equal(cs, "");

    qmm_gguf_value e;
    v = kv(g, "a.i32", QMM_GGUF_TYPE_ARRAY);
    assert_int_equal(v.elem_type, QMM_GGUF_TYPE_INT32);
    assert_int_equal(v.n, 4);
    assert_memory_equal(v.data, V_ARR_I32, sizeof V_ARR_I32); /* little-endian host */
    for (uint64_t j = 0; j < 4; j++) {
        assert_int_equal(qmm_gguf_array_get(&v, j, &e), QMM_OK);
        assert_int_equal(e.type, QMM_GGUF_TYPE_INT32);
        assert_int_equal(qmm_gguf_value_int(&e, &s), QMM_OK);
        assert_int_equal(s, V_ARR_I32[j]);
    }
    assert_int_equal(qmm_gguf_array_get(&v, 4, &e), QMM_ERR_INVALID_ARGUMENT);
    v = kv(g, "a.f64", QMM_GGUF_TYPE_ARRAY);
    assert_int_equal(v.n, 3);
    for (uint64_t j = 0; j < 3; j++) {
        assert_int_equal(qmm_gguf_array_get(&v, j, &e), QMM_OK);
        assert_int_equal(qmm_gguf_value_float(&e, &f), QMM_OK);
        assert_true(f == V_ARR_F64[j]);
    }
    v = kv(g, "a.bool", QMM_GGUF_TYPE_ARRAY);
    assert_int_equal(v.elem_type, QMM_GGUF_TYPE_BOOL);
    assert_memory_equal(v.data, V_ARR_BOOL, 3);
    v = kv(g, "a.empty", QMM_GGUF_TYPE_ARRAY);
    assert_int_equal(v.elem_type, QMM_GGUF_TYPE_UINT16);
    assert_int_equal(v.n, 0);
    v = kv(g, "a.str", QMM_GGUF_TYPE_ARRAY);
    assert_int_equal(v.elem_type, QMM_GGUF_TYPE_STRING);
    assert_int_equal(v.n, 3);
    const char *strs[3] = {"<s>", "", "token"};
    for (uint64_t j = 0; j < 3; j++) {
        assert_int_equal(qmm_gguf_array_get(&v, j, &e), QMM_OK);
        assert_int_equal(qmm_gguf_value_string(&e, &cs, &len), QMM_OK);
        assert_string_equal(cs, strs[j]);
        assert_int_equal(len, strlen(strs[j]));
    }
    v = kv(g, "a.nested", QMM_GGUF_TYPE_ARRAY);
    assert_int_equal(v.elem_type, QMM_GGUF_TYPE_ARRAY);
    assert_int_equal(v.n, 3);
    const uint64_t inner_n[3] = {2, 0, 1};
    const uint32_t inner_first[3] = {1, 0, 7};
    for (uint64_t j = 0; j < 3; j++) {
        qmm_gguf_value in, x;
        assert_int_equal(qmm_gguf_array_get(&v, j, &in), QMM_OK);
        assert_int_equal(in.type, QMM_GGUF_TYPE_ARRAY);
        assert_int_equal(in.elem_type, QMM_GGUF_TYPE_UINT32);
        assert_int_equal(in.n, inner_n[j]);
        if (in.n) {
            assert_int_equal(qmm_gguf_array_get(&in, 0, &x), QMM_OK);
            assert_int_equal(qmm_gguf_value_uint(&x, &u), QMM_OK);
            assert_int_equal(u, inner_first[j]);
        }
    }
    v = kv(g, "a.deep", QMM_GGUF_TYPE_ARRAY);
    qmm_gguf_value l1, l2, l3;
    assert_int_equal(qmm_gguf_array_get(&v, 0, &l1), QMM_OK);
    assert_int_equal(l1.n, 2);
    assert_int_equal(qmm_gguf_array_get(&l1, 1, &l2), QMM_OK);
    assert_int_equal(l2.elem_type, QMM_GGUF_TYPE_STRING);
    assert_int_equal(l2.n, 2);
    assert_int_equal(qmm_gguf_array_get(&l2, 1, &l3), QMM_OK);
    assert_int_equal(qmm_gguf_value_string(&l3, &cs, NULL), QMM_OK);
    assert_string_equal(cs, "z");
    assert_int_equal(qmm_gguf_find_kv(g, "missing"), -1);

    assert_int_equal(qmm_gguf_n_tensors(g), NT);
    uint64_t prev_end = 0;
    for (int i = 0; i < NT; i++) {
        qmm_gguf_tensor t;
        assert_int_equal(qmm_gguf_get_tensor(g, i, &t), QMM_OK);
        assert_string_equal(t.name, tensors[i].name);
        assert_int_equal(qmm_gguf_find_tensor(g, tensors[i].name), i);
        assert_int_equal(t.type, tensors[i].type);
        assert_int_equal(t.n_dims, tensors[i].n_dims);
        for (int d = 0; d < 4; d++) assert_int_equal(t.ne[d], tensors[i].ne[d]);
        assert_int_equal(t.nbytes, tensors[i].nbytes);
        assert_int_equal(t.offset % alignment, 0);
        assert_true(t.offset >= prev_end);
        prev_end = t.offset + t.nbytes;
        assert_memory_equal(t.data, tensors[i].data, t.nbytes);
    }
    assert_int_equal(qmm_gguf_find_tensor(g, "nope"), -1);
    qmm_gguf_tensor t;
    assert_int_equal(qmm_gguf_get_tensor(g, NT, &t), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_get_tensor(g, -1, &t), QMM_ERR_INVALID_ARGUMENT);
}

static void test_round_trip_memory(void **state) {
    (void)state;
    const size_t aligns[5] = {0, 16, 32, 64, 128};
    for (int a = 0; a < 5; a++) {
        qmm_gguf_writer *w = make_writer(aligns[a]);
        void *img = NULL;
        size_t size = 0;
        assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
        qmm_gguf *g = NULL;
        assert_int_equal(qmm_gguf_open_memory(img, size, &g), QMM_OK);
        check_reader(g, aligns[a] ? aligns[a] : 32);
        qmm_gguf_close(g);
        free(img);
        qmm_gguf_writer_free(w);
    }
}

static void test_round_trip_file(void **state) {
    (void)state;
    char path[] = "/tmp/qmm_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    qmm_gguf_writer *w = make_writer(64);
    assert_int_equal(qmm_gguf_writer_write_file(w, path), QMM_OK);
    void *img = NULL;
    size_t size = 0;
    assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
    qmm_gguf *g = NULL;
    assert_int_equal(qmm_gguf_open(path, &g), QMM_OK);
    check_reader(g, 64);
    assert_int_equal(qmm_gguf_file_size(g), size); /* file and memory images agree */
    qmm_gguf_close(g);
    free(img);
    qmm_gguf_writer_free(w);
    unlink(path);

    /* version 2, no tensors, no metadata */
    assert_int_equal(qmm_gguf_writer_create(&w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_set_version(w, 2), QMM_OK);
    assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
    assert_int_equal(qmm_gguf_open_memory(img, size, &g), QMM_OK);
    assert_int_equal(qmm_gguf_version(g), 2);
    assert_int_equal(qmm_gguf_n_kv(g), 0);
    assert_int_equal(qmm_gguf_n_tensors(g), 0);
    qmm_gguf_close(g);
    free(img);
    qmm_gguf_writer_free(w);
}

/* I/O errors: missing file, a directory, an empty file. */
static void test_open_errors(void **state) {
    (void)state;
    qmm_gguf *g = NULL;
    assert_int_equal(qmm_gguf_open("/nonexistent/dir/x.gguf", &g), QMM_ERR_IO);
    assert_non_null(strstr(qmm_last_error(), "/nonexistent/dir/x.gguf"));
    assert_int_equal(qmm_gguf_open("/tmp", &g), QMM_ERR_IO);
    assert_null(g);
    char path[] = "/tmp/qmm_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(qmm_gguf_open(path, &g), QMM_ERR_FORMAT);
    assert_non_null(strstr(qmm_last_error(), "magic"));
    unlink(path);
    assert_int_equal(qmm_gguf_open(NULL, &g), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_open_memory(NULL, 4, &g), QMM_ERR_INVALID_ARGUMENT);
    assert_null(g);
}

/* Writer misuse is refused. */
static void test_writer_errors(void **state) {
    (void)state;
    qmm_gguf_writer *w = NULL;
    assert_int_equal(qmm_gguf_writer_create(&w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_set_alignment(w, 0), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_set_alignment(w, 48), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_set_version(w, 1), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_add_u32(w, "k", 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_u32(w, "k", 2), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_add_u32(w, "", 2), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_add_u32(w, NULL, 2), QMM_ERR_INVALID_ARGUMENT);
    uint8_t two = 2;
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "b", QMM_GGUF_TYPE_BOOL, &two),
                     QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_begin_array(w, "arr", QMM_GGUF_TYPE_STRING, 2), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_u32(w, NULL, 1), QMM_ERR_INVALID_ARGUMENT); /* type */
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "a", 1), QMM_OK);
    void *img;
    size_t size;
    assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_ERR_INVALID_ARGUMENT); /* 1 of 2 */
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "b", 1), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_string(w, NULL, "c", 1), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_end_array(w), QMM_ERR_INVALID_ARGUMENT);
    float data[8] = {0};
    const int64_t ne8[1] = {8}, ne_bad[1] = {0}, ne_q[1] = {16};
    assert_int_equal(qmm_gguf_writer_add_tensor(w, "t", QMM_TYPE_F32, 1, ne8, data, 31),
                     QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_add_tensor(w, "t", QMM_TYPE_F32, 5, ne8, data, 32),
                     QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_add_tensor(w, "t", QMM_TYPE_F32, 1, ne_bad, data, 0),
                     QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_add_tensor(w, "t", QMM_TYPE_Q4_0, 1, ne_q, data, 9),
                     QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_add_tensor(w, "t", (qmm_type)4, 1, ne8, data, 32),
                     QMM_ERR_UNSUPPORTED);
    assert_int_equal(qmm_gguf_writer_add_tensor(w, "t", QMM_TYPE_F32, 1, ne8, data, 32), QMM_OK);
    assert_int_equal(qmm_gguf_writer_add_tensor(w, "t", QMM_TYPE_F32, 1, ne8, data, 32),
                     QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_set_alignment(w, 64), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
    qmm_gguf *g;
    assert_int_equal(qmm_gguf_open_memory(img, size, &g), QMM_OK);
    qmm_gguf_close(g);
    free(img);
    qmm_gguf_writer_free(w);

    /* arrays nested QMM_GGUF_MAX_DEPTH levels deep are written and read; one more is not */
    assert_int_equal(qmm_gguf_writer_create(&w), QMM_OK);
    for (int d = 1; d < QMM_GGUF_MAX_DEPTH; d++)
        assert_int_equal(qmm_gguf_writer_begin_array(w, d == 1 ? "deep" : NULL,
                                                     QMM_GGUF_TYPE_ARRAY, 1),
                         QMM_OK);
    assert_int_equal(qmm_gguf_writer_begin_array(w, NULL, QMM_GGUF_TYPE_ARRAY, 0), QMM_OK);
    assert_int_equal(qmm_gguf_writer_begin_array(w, NULL, QMM_GGUF_TYPE_UINT8, 0),
                     QMM_ERR_INVALID_ARGUMENT);
    for (int d = 0; d < QMM_GGUF_MAX_DEPTH; d++)
        assert_int_equal(qmm_gguf_writer_end_array(w), QMM_OK);
    assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
    assert_int_equal(qmm_gguf_open_memory(img, size, &g), QMM_OK);
    qmm_gguf_value v;
    assert_int_equal(qmm_gguf_get_kv(g, 0, &v), QMM_OK);
    for (int d = 1; d < QMM_GGUF_MAX_DEPTH; d++) {
        assert_int_equal(v.type, QMM_GGUF_TYPE_ARRAY);
        assert_int_equal(v.n, 1);
        assert_int_equal(qmm_gguf_array_get(&v, 0, &v), QMM_OK);
    }
    assert_int_equal(v.n, 0);
    qmm_gguf_close(g);
    free(img);
    qmm_gguf_writer_free(w);

    /* a caller-added general.alignment of the wrong type is written as is, and refused */
    assert_int_equal(qmm_gguf_writer_create(&w), QMM_OK);
    const uint64_t a64 = 32;
    assert_int_equal(qmm_gguf_writer_add_scalar(w, "general.alignment", QMM_GGUF_TYPE_UINT64, &a64),
                     QMM_OK);
    assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
    assert_int_equal(qmm_gguf_open_memory(img, size, &g), QMM_ERR_FORMAT);
    assert_non_null(strstr(qmm_last_error(), "general.alignment"));
    free(img);
    qmm_gguf_writer_free(w);
}

/* Every prefix of a valid file is refused with QMM_ERR_FORMAT, never a crash; every byte
 * set to 0xFF either opens with all tensors inside the image or fails with FORMAT. */
static void test_truncation_and_corruption(void **state) {
    (void)state;
    qmm_gguf_writer *w = make_writer(32);
    void *img = NULL;
    size_t size = 0;
    assert_int_equal(qmm_gguf_writer_write_memory(w, &img, &size), QMM_OK);
    qmm_gguf_writer_free(w);
    int failures = 0;
    for (size_t cut = 0; cut < size; cut++) {
        uint8_t *p = malloc(cut ? cut : 1); /* exact size: ASan catches over-reads */
        memcpy(p, img, cut);
        qmm_gguf *g = NULL;
        qmm_status s = qmm_gguf_open_memory(p, cut, &g);
        /* the last tensor's padding may be cut without harm */
        qmm_gguf *full = NULL;
        assert_int_equal(qmm_gguf_open_memory(img, size, &full), QMM_OK);
        qmm_gguf_tensor last;
        assert_int_equal(qmm_gguf_get_tensor(full, NT - 1, &last), QMM_OK);
        size_t needed = qmm_gguf_data_offset(full) + last.offset + last.nbytes;
        qmm_gguf_close(full);
        qmm_status want = cut >= needed ? QMM_OK : QMM_ERR_FORMAT;
        if (s != want || (s != QMM_OK && qmm_last_error()[0] == '\0')) {
            if (failures++ < 5)
                print_error("cut at %zu of %zu: %s (%s)\n", cut, size, qmm_status_str(s),
                            qmm_last_error());
        }
        if (s == QMM_OK) qmm_gguf_close(g);
        free(p);
    }
    uint8_t *p = malloc(size);
    for (size_t at = 0; at < size; at++) {
        memcpy(p, img, size);
        p[at] = 0xFF;
        qmm_gguf *g = NULL;
        qmm_status s = qmm_gguf_open_memory(p, size, &g);
        if (s == QMM_OK) {
            for (int64_t i = 0; i < qmm_gguf_n_tensors(g); i++) {
                qmm_gguf_tensor t;
                assert_int_equal(qmm_gguf_get_tensor(g, i, &t), QMM_OK);
                assert_true((const uint8_t *)t.data + t.nbytes <= p + size);
            }
            qmm_gguf_close(g);
        } else if (s != QMM_ERR_FORMAT) {
            if (failures++ < 5)
                print_error("0xFF at %zu: %s (%s)\n", at, qmm_status_str(s), qmm_last_error());
        }
    }
    free(p);
    free(img);
    assert_int_equal(failures, 0);
}

static int teardown_all(void **state) {
    (void)state;
    for (int i = 0; i < NT; i++) free(tensors[i].data);
    return 0;
}

/*
 * J: an error found after string values grew the reader's string storage must still name the
 * key correctly (the key was once a pointer into that storage, freed when it grew: a
 * use-after-free that ASan reports). One key holds an array of two arrays: 4 strings of 2 KiB,
 * then an array with the unknown element type 99.
 */
static void test_hostile_key_after_string_growth(void **state) {
    (void)state;
    static unsigned char buf[16384];
    size_t pos = 0;
#define PUT(v, n) (memcpy(buf + pos, (v), (n)), pos += (n))
    uint32_t u32;
    uint64_t u64;
    PUT("GGUF", 4);
    u32 = 3, PUT(&u32, 4);           /* version */
    u64 = 0, PUT(&u64, 8);           /* n_tensors */
    u64 = 1, PUT(&u64, 8);           /* n_kv */
    u64 = 6, PUT(&u64, 8), PUT("my.key", 6);
    u32 = 9, PUT(&u32, 4);           /* value: array */
    u32 = 9, PUT(&u32, 4);           /* of arrays */
    u64 = 2, PUT(&u64, 8);
    u32 = 8, PUT(&u32, 4);           /* inner array 0: strings */
    u64 = 4, PUT(&u64, 8);
    char big[2048];
    memset(big, 'a', sizeof big);
    for (int i = 0; i < 4; i++) {
        u64 = sizeof big, PUT(&u64, 8), PUT(big, sizeof big);
    }
    u32 = 99, PUT(&u32, 4);          /* inner array 1: unknown element type */
    u64 = 0, PUT(&u64, 8);
#undef PUT
    qmm_gguf *g = NULL;
    assert_int_equal(qmm_gguf_open_memory(buf, pos, &g), QMM_ERR_FORMAT);
    assert_null(g);
    assert_non_null(strstr(qmm_last_error(), "'my.key'"));
    assert_non_null(strstr(qmm_last_error(), "99"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_memory),
        cmocka_unit_test(test_round_trip_file),
        cmocka_unit_test(test_crafted_valid),
        cmocka_unit_test(test_every_table_type),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_hostile_J),
        cmocka_unit_test(test_hostile_K),
        cmocka_unit_test(test_hostile_L),
        cmocka_unit_test(test_hostile_key_after_string_growth),
        cmocka_unit_test(test_truncation_and_corruption),
    };
    return cmocka_run_group_tests(tests, NULL, teardown_all);
}
