#!/usr/bin/env python3
"""Cross-check of qmm's K-quant reference quantizers against ggml's own compiled code.

For q2_K, q3_K, q4_K, q5_K and q6_K, quantizes the same float rows with
qmm_quantize_rows (libqmm, env QMM_LIB) and with ggml's quantize_row_<type>_ref (from the
libggml shipped by the PyPI package ggml-py, imported as `ggml`), and requires identical bytes.
Also requires qmm_dequantize_rows to equal ggml's dequantize_row_<type> bit for bit on the
quantized rows. Rows: random (normal, uniform, heavy-tailed, sparse, several magnitudes) and
edge rows (all zero, all equal +/-, a lone negative maximum, tiny and huge values, exact
rounding ties, ramps).

Exit 77 (skipped) if the `ggml` package or its library with these symbols cannot be loaded;
install it with `pip install ggml-py`.
"""
import ctypes
import glob
import os
import sys

import numpy as np

QK_K = 256
TYPES = {  # name: (qmm/ggml type id, bytes per 256-element block)
    "q2_K": (10, 84),
    "q3_K": (11, 110),
    "q4_K": (12, 144),
    "q5_K": (13, 176),
    "q6_K": (14, 210),
}


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(77)


def load_ggml():
    try:
        import ggml  # noqa: F401  (the PyPI package ggml-py)
    except Exception as e:  # ImportError, or a broken build
        skip(f"python package 'ggml' (pip install ggml-py) not importable: {e}")
    pkg_dir = os.path.dirname(ggml.__file__)
    candidates = sorted(glob.glob(os.path.join(pkg_dir, "lib", "*.so*")) +
                        glob.glob(os.path.join(pkg_dir, "**", "libggml*.so*"), recursive=True))
    for path in candidates:
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        if all(hasattr(lib, f"quantize_row_{t}_ref") and hasattr(lib, f"dequantize_row_{t}")
               for t in TYPES):
            return lib, path
    skip(f"no library under {pkg_dir} exports quantize_row_q2_K_ref .. q6_K_ref")


def load_qmm():
    path = os.environ.get("QMM_LIB")
    if not path or not os.path.exists(path):
        print(f"FAIL: QMM_LIB is not set to the built libqmm.so (got {path!r})")
        sys.exit(1)
    lib = ctypes.CDLL(path)
    for fn in (lib.qmm_quantize_rows, lib.qmm_dequantize_rows):
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    return lib


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def edge_rows():
    """Named 256-element rows that stress the scale searches."""
    rows = {}
    z = np.zeros(QK_K, np.float32)
    rows["all zero"] = z
    rows["all +1"] = np.full(QK_K, 1.0, np.float32)
    rows["all -3.25"] = np.full(QK_K, -3.25, np.float32)
    r = np.linspace(0.1, 1.0, QK_K, dtype=np.float32)
    r[37] = -5.0
    rows["lone negative max"] = r
    r = -np.linspace(0.0, 2.0, QK_K, dtype=np.float32)
    rows["all non-positive ramp"] = r
    rows["ramp -1..1"] = np.linspace(-1.0, 1.0, QK_K, dtype=np.float32)
    rows["integer ramp"] = (np.arange(QK_K) % 64 - 32).astype(np.float32)
    rows["half-integer ties"] = ((np.arange(QK_K) % 16) * 0.5 - 4.0).astype(np.float32)
    rows["tiny 1e-20"] = (np.random.default_rng(5).standard_normal(QK_K) * 1e-20).astype(np.float32)
    rows["subnormal"] = (np.arange(QK_K) % 7 - 3).astype(np.float32) * np.float32(1e-40)
    rows["below eps 1e-16"] = np.full(QK_K, 1e-16, np.float32)
    rows["huge 3e4"] = (np.random.default_rng(6).standard_normal(QK_K) * 3e4).astype(np.float32)
    rows["f16 overflow 1e6"] = (np.random.default_rng(7).standard_normal(QK_K) * 1e6).astype(np.float32)
    r = np.zeros(QK_K, np.float32)
    r[200] = 1.0
    rows["single nonzero"] = r
    r = np.zeros(QK_K, np.float32)
    r[::16] = -2.0
    rows["one per sub-block"] = r
    rows["alternating +-"] = np.where(np.arange(QK_K) % 2 == 0, 1.0, -1.0).astype(np.float32)
    r = np.random.default_rng(8).standard_normal(QK_K).astype(np.float32)
    r[:128] = 0
    rows["zero first half"] = r
    r = np.random.default_rng(9).standard_normal(QK_K).astype(np.float32)
    r[::32] *= 100
    rows["outliers"] = r
    rows["positive only"] = np.abs(np.random.default_rng(10).standard_normal(QK_K)).astype(np.float32) + 1
    return rows


def random_rows(rng, nrows):
    out = []
    for i in range(nrows):
        kind = i % 5
        scale = np.float32(10.0 ** rng.uniform(-4, 3))
        if kind == 0:
            r = rng.standard_normal(QK_K)
        elif kind == 1:
            r = rng.uniform(-1, 1, QK_K)
        elif kind == 2:
            r = rng.standard_t(2, QK_K)
        elif kind == 3:
            r = rng.standard_normal(QK_K) * (rng.random(QK_K) < 0.2)
        else:
            r = rng.uniform(-1, 1, QK_K) + rng.uniform(-2, 2)  # offset: asymmetric blocks
        out.append((r * scale).astype(np.float32))
    return out


def main():
    gg, gg_path = load_ggml()
    qmm = load_qmm()
    print(f"ggml library: {gg_path}")
    rng = np.random.default_rng(20240601)

    named = edge_rows()
    rows = list(named.values()) + random_rows(rng, 1000)
    labels = list(named.keys()) + [f"random #{i}" for i in range(1000)]
    x = np.ascontiguousarray(np.stack(rows))  # one block per row
    nrows = x.shape[0]

    failures = 0
    for name, (tid, bb) in TYPES.items():
        q_ref = getattr(gg, f"quantize_row_{name}_ref")
        q_ref.restype = None
        q_ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        dq_ref = getattr(gg, f"dequantize_row_{name}")
        dq_ref.restype = None
        dq_ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

        ours = np.zeros((nrows, bb), np.uint8)
        theirs = np.zeros((nrows, bb), np.uint8)
        st = qmm.qmm_quantize_rows(tid, ptr(x), ptr(ours), nrows, QK_K)
        if st != 0:
            print(f"FAIL {name}: qmm_quantize_rows returned status {st}")
            failures += 1
            continue
        q_ref(ptr(x), ptr(theirs), nrows * QK_K)

        # The same data as one long row (k = nrows * 256): the row functions loop over blocks.
        one_row = np.zeros((nrows, bb), np.uint8)
        st = qmm.qmm_quantize_rows(tid, ptr(x), ptr(one_row), 1, nrows * QK_K)
        if st != 0 or not np.array_equal(one_row, ours):
            print(f"FAIL {name}: quantizing all blocks as one row differs from row by row (status {st})")
            failures += 1

        bad = [i for i in range(nrows) if not np.array_equal(ours[i], theirs[i])]
        for i in bad[:5]:
            j = int(np.nonzero(ours[i] != theirs[i])[0][0])
            print(f"FAIL {name} quantize, row '{labels[i]}': first differing byte {j} "
                  f"(qmm {ours[i][j]:#04x}, ggml {theirs[i][j]:#04x}); {len(bad)} rows differ")
        failures += bool(bad)

        # Dequantize ggml's bytes both ways: bit-identical floats (NaN/Inf included).
        y_ours = np.zeros(nrows * QK_K, np.float32)
        y_theirs = np.zeros(nrows * QK_K, np.float32)
        st = qmm.qmm_dequantize_rows(tid, ptr(theirs), ptr(y_ours), nrows, QK_K)
        dq_ref(ptr(theirs), ptr(y_theirs), nrows * QK_K)
        same = st == 0 and np.array_equal(y_ours.view(np.uint32), y_theirs.view(np.uint32))
        if not same:
            print(f"FAIL {name} dequantize: status {st}, "
                  f"{int(np.sum(y_ours.view(np.uint32) != y_theirs.view(np.uint32)))} values differ")
            failures += 1
        if not bad and same:
            print(f"ok   {name}: {nrows} rows, quantize bytes and dequantized bits identical")

    total = 3 * len(TYPES)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
