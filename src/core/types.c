/* types.c — the type table and the public type queries. */
#include "core/types.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"
#include "formats/quants.h"

/* One row per type: name, block, codec and layout facts (formats/codec.h). The float types'
 * "block" is one element and its "scale field" the element itself. */
#define F16_AT(type, field) {offsetof(type, field), QMM_SCALE_F16, 1}
#define ROW(id, nm, bs, bb, w, ...)                                                       \
    [id] = {.name = #nm, .block_size = (bs), .block_bytes = (bb), .is_weight = (w),        \
            .to_float = qmm_dequantize_row_##nm, .from_float_ref = qmm_quantize_row_##nm##_ref, \
            .layout = &(const qmm_type_layout){.block_size = (bs), .block_bytes = (bb), __VA_ARGS__}}
#define UNIT_ROW(E, nm)                                                                   \
    [QMM_TYPE_##E] = {.name = #nm, .block_size = QMM_QK_##nm,                               \
                      .block_bytes = sizeof(block_##nm), .is_weight = true,                \
                      .to_float = qmm_dequantize_row_##nm, .from_float_ref = QMM_QUANTIZER_##nm, \
                      .unit = qmm_unit_##nm, .layout = &qmm_layout_##nm},

static const qmm_type_traits type_table[QMM_TYPE_COUNT] = {
    ROW(QMM_TYPE_F32, f32, 1, 4, true, .scales = {{0, QMM_SCALE_F32, 1}}, .sub_block = 1, .max_q = 1),
    ROW(QMM_TYPE_F16, f16, 1, 2, true, .scales = {{0, QMM_SCALE_F16, 1}}, .sub_block = 1, .max_q = 1),
    ROW(QMM_TYPE_BF16, bf16, 1, 2, true, .scales = {{0, QMM_SCALE_BF16, 1}}, .sub_block = 1, .max_q = 1),
    ROW(QMM_TYPE_Q4_0, q4_0, QK4_0, sizeof(block_q4_0), true,
        .scales = {F16_AT(block_q4_0, d)}, .sub_block = QK4_0, .max_q = 8),
    ROW(QMM_TYPE_Q4_1, q4_1, QK4_1, sizeof(block_q4_1), true,
        .scales = {F16_AT(block_q4_1, d), F16_AT(block_q4_1, m)}, .sub_block = QK4_1,
        .has_min = true, .max_q = 15),
    ROW(QMM_TYPE_Q5_0, q5_0, QK5_0, sizeof(block_q5_0), true,
        .scales = {F16_AT(block_q5_0, d)}, .sub_block = QK5_0, .max_q = 16),
    ROW(QMM_TYPE_Q5_1, q5_1, QK5_1, sizeof(block_q5_1), true,
        .scales = {F16_AT(block_q5_1, d), F16_AT(block_q5_1, m)}, .sub_block = QK5_1,
        .has_min = true, .max_q = 31),
    ROW(QMM_TYPE_Q8_0, q8_0, QK8_0, sizeof(block_q8_0), true,
        .scales = {F16_AT(block_q8_0, d)}, .sub_block = QK8_0, .max_q = 128),
    ROW(QMM_TYPE_Q2_K, q2_K, QK_K, sizeof(block_q2_K), true,
        .scales = {F16_AT(block_q2_K, d), F16_AT(block_q2_K, dmin)}, .sub_block = 16,
        .has_min = true, .max_q = 3 * 15),
    ROW(QMM_TYPE_Q3_K, q3_K, QK_K, sizeof(block_q3_K), true,
        .scales = {F16_AT(block_q3_K, d)}, .sub_block = 16, .max_q = 4 * 32),
    ROW(QMM_TYPE_Q4_K, q4_K, QK_K, sizeof(block_q4_K), true,
        .scales = {F16_AT(block_q4_K, d), F16_AT(block_q4_K, dmin)}, .sub_block = 32,
        .has_min = true, .max_q = 15 * 63),
    ROW(QMM_TYPE_Q5_K, q5_K, QK_K, sizeof(block_q5_K), true,
        .scales = {F16_AT(block_q5_K, d), F16_AT(block_q5_K, dmin)}, .sub_block = 32,
        .has_min = true, .max_q = 31 * 63),
    ROW(QMM_TYPE_Q6_K, q6_K, QK_K, sizeof(block_q6_K), true,
        .scales = {F16_AT(block_q6_K, d)}, .sub_block = 16, .max_q = 32 * 128),
    ROW(QMM_TYPE_Q8_K, q8_K, QK_K, sizeof(block_q8_K), false,
        .scales = {{offsetof(block_q8_K, d), QMM_SCALE_F32, 1}}, .sub_block = QK_K, .max_q = 128),
    QMM_UNIT_TYPES(UNIT_ROW)
};

const qmm_type_traits *qmm_type_traits_get(int type) {
    if (type < 0 || type >= QMM_TYPE_COUNT || type_table[type].name == NULL) return NULL;
    return &type_table[type];
}

bool qmm_type_is_supported(int type) { return qmm_type_traits_get(type) != NULL; }

const char *qmm_type_name(qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    return t ? t->name : NULL;
}

qmm_status qmm_type_from_name(const char *name, qmm_type *out) {
    if (name == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_type_from_name: NULL argument");
    for (int i = 0; i < QMM_TYPE_COUNT; i++) {
        if (type_table[i].name && strcasecmp(type_table[i].name, name) == 0) {
            *out = (qmm_type)i;
            return QMM_OK;
        }
    }
    return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown type name '%s'", name);
}

int64_t qmm_type_block_size(qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    return t ? t->block_size : 0;
}

size_t qmm_type_block_bytes(qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    return t ? t->block_bytes : 0;
}

bool qmm_type_is_weight(qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    return t ? t->is_weight : false;
}

bool qmm_type_has_quantizer(qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    return t != NULL && t->from_float_ref != NULL;
}

qmm_status qmm_row_bytes(qmm_type type, int64_t k, size_t *out) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    if (t == NULL) return qmm_error(QMM_ERR_UNSUPPORTED, "unsupported type id %d", (int)type);
    if (out == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_row_bytes: out is NULL");
    if (k <= 0 || k % t->block_size != 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "k (%lld) must be a positive multiple of %s's block size (%lld)",
                         (long long)k, t->name, (long long)t->block_size);
    uint64_t nb = (uint64_t)(k / t->block_size);
    if (nb > SIZE_MAX / t->block_bytes)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "row of %lld %s elements overflows size_t",
                         (long long)k, t->name);
    *out = (size_t)nb * t->block_bytes;
    return QMM_OK;
}
