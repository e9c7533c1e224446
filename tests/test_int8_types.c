/*
 * test_int8_types.c — the type list and per-type facts of the CPU int8 class
 * (src/cpu/int8_types.h), which the x86 and aarch64 int8 kernels compile in:
 *   facts     for every type of QMM_I8_TYPES the block bytes and elements equal the type
 *             table's (qmm_type_block_bytes, qmm_type_block_size), qmm_i8_sub16 holds exactly
 *             where the layout's sub-block is 16 elements, qmm_i8_has_min exactly where the
 *             layout has a min, qmm_i8_k_quant exactly for the integer types of QK_K elements,
 *             qmm_i8_codebook exactly for QMM_I8_CODEBOOK_TYPES; every other type id is outside
 *             the class (has_type false, 0 bytes and elements);
 *   kernels   the int8 kernels' has_type answers are the list's: on x86-64
 *             qmm_x86_gemv_int8_avx2_has_type (where the CPU has AVX2),
 *             qmm_x86_gemv_int8_avx512_has_type and qmm_x86_gemv_int8_codebook_has_type (where
 *             it has AVX-512), on aarch64 qmm_arm_int8_has_type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/types.h"
#include "cpu/cpu_features.h"
#include "cpu/int8_types.h"
#if defined(QMM_ARCH_X86_64)
#include "cpu/x86/x86_kernels.h"
#endif
#if defined(QMM_ARCH_AARCH64)
#include "cpu/arm/arm_kernels.h"
#endif

static void check_member(qmm_type t, bool codebook) {
    const qmm_type_traits *tr = qmm_type_traits_get(t);
    assert_non_null(tr);
    assert_true(tr->is_weight);
    assert_true(qmm_i8_has_type(t));
    assert_int_equal(qmm_i8_block_bytes(t), tr->block_bytes);
    assert_int_equal(qmm_i8_block_elems(t), tr->block_size);
    assert_int_equal(qmm_i8_sub16(t), tr->layout->sub_block == 16);
    assert_int_equal(qmm_i8_has_min(t), tr->layout->has_min);
    assert_int_equal(qmm_i8_k_quant(t), !codebook && tr->block_size == QK_K);
    assert_int_equal(qmm_i8_codebook(t), codebook);
}

static void test_facts(void **state) {
    (void)state;
    bool in[QMM_TYPE_COUNT] = {false};
    int count = 0;
#define INTEGER(p, E, nm) check_member(QMM_TYPE_##E, false), in[QMM_TYPE_##E] = true, count++;
#define CODEBOOK(p, E, nm) check_member(QMM_TYPE_##E, true), in[QMM_TYPE_##E] = true, count++;
    QMM_I8_INTEGER_TYPES(INTEGER, )
    QMM_I8_CODEBOOK_TYPES(CODEBOOK, )
#undef INTEGER
#undef CODEBOOK
    int listed = 0;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        listed += in[t];
        if (in[t]) continue;
        assert_false(qmm_i8_has_type((qmm_type)t));
        assert_false(qmm_i8_codebook((qmm_type)t));
        assert_int_equal(qmm_i8_block_bytes((qmm_type)t), 0);
        assert_int_equal(qmm_i8_block_elems((qmm_type)t), 0);
    }
    assert_int_equal(listed, count); /* no type listed twice */
}

static void test_kernels(void **state) {
    (void)state;
    int checked = 0;
    for (int i = 0; i < QMM_TYPE_COUNT; i++) {
        const qmm_type t = (qmm_type)i;
        const bool want = qmm_i8_has_type(t);
        (void)want;
#if defined(QMM_ARCH_X86_64)
        if (qmm_cpu_isa_supported(QMM_CPU_ISA_AVX2)) {
            assert_int_equal(qmm_x86_gemv_int8_avx2_has_type(t), want);
            checked++;
        }
        if (qmm_cpu_isa_supported(QMM_CPU_ISA_AVX512)) {
            assert_int_equal(qmm_x86_gemv_int8_avx512_has_type(t), want);
            assert_int_equal(qmm_x86_gemv_int8_codebook_has_type(t), qmm_i8_codebook(t));
            checked++;
        }
#elif defined(QMM_ARCH_AARCH64)
        assert_int_equal(qmm_arm_int8_has_type(t), want);
        checked++;
#endif
    }
    if (checked == 0) skip();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_facts),
        cmocka_unit_test(test_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
