#!/usr/bin/env python3
"""Bit-exact cross-check of qmm's formats against gguf-py's gguf.quants.

For every type of qmm's table that gguf.quants implements:
  * quantize (where gguf.quants can: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0): the bytes
    of qmm_quantize_rows equal gguf.quants.quantize on random rows of several magnitudes and
    on edge blocks (all zero, all equal, a negative largest-magnitude element, exact rounding
    ties, inputs whose f16 scale comes out subnormal (0x0001 .. 0x03FF), at the largest
    finite 0x7BFF, or overflows);
  * dequantize (every type gguf.quants dequantizes, q2_K .. q6_K included): the floats of
    qmm_dequantize_rows equal gguf.quants.dequantize bit for bit on random packed bytes whose
    f16 scale fields are kept finite, with extreme scales planted (0x0001, 0x03FF, 0x7BFF,
    negative, +-0).
Needs env QMM_LIB (the built libqmm.so). Prints what was checked; exits 1 on any mismatch,
77 (skipped) if the gguf package is missing.
"""
import ctypes
import os
import sys

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf import quants as gq
except Exception as e:  # pragma: no cover
    print(f"SKIP: python package gguf not importable: {e}")
    sys.exit(77)

# Byte offsets of the f16 scale fields in each block (ggml-common.h); F16 blocks are one
# element, so the element itself is the "scale" kept finite.
F16_FIELDS = {
    "F16": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ4_NL": [0], "IQ4_XS": [0], "TQ1_0": [52], "TQ2_0": [64],
}
# E8M0 scale bytes (mxfp4, byte 0) whose block values are all finite: 12 * 2^(e-128) < 2^128
# for e <= 0xFC (ggml decodes 0xFD .. 0xFF to scales that overflow).
E8M0_FIELDS = {"MXFP4": [0]}
E8M0_MAX_FINITE = 0xFC
EXTREME_F16 = [0x0001, 0x03FF, 0x7BFF, 0x8001, 0x83FF, 0xFBFF, 0x0000, 0x8000, 0x0400, 0xBC00]

failures = []


def load_qmm():
    path = os.environ.get("QMM_LIB")
    if not path or not os.path.exists(path):
        print(f"FAIL: QMM_LIB is not set to the built libqmm.so (got {path!r})")
        sys.exit(1)
    lib = ctypes.CDLL(path)
    for fn in (lib.qmm_quantize_rows, lib.qmm_dequantize_rows):
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    lib.qmm_type_name.restype = ctypes.c_char_p
    lib.qmm_type_name.argtypes = [ctypes.c_int]
    lib.qmm_type_block_size.restype = ctypes.c_int64
    lib.qmm_type_block_size.argtypes = [ctypes.c_int]
    lib.qmm_type_block_bytes.restype = ctypes.c_size_t
    lib.qmm_type_block_bytes.argtypes = [ctypes.c_int]
    lib.qmm_last_error.restype = ctypes.c_char_p
    return lib


def qmm_types(lib):
    """(id, name, gguf enum, block size, block bytes) for every type in qmm's table that gguf
    knows, checking that both agree on the block size and bytes."""
    out = []
    for t in range(64):
        name = lib.qmm_type_name(t)
        if not name:
            continue
        name = name.decode()
        try:
            gt = T(t)
        except ValueError:
            failures.append(f"{name}: id {t} is not a GGMLQuantizationType")
            continue
        bs, bb = lib.qmm_type_block_size(t), lib.qmm_type_block_bytes(t)
        if gguf.GGML_QUANT_SIZES[gt] != (bs, bb):
            failures.append(f"{name}: qmm block ({bs}, {bb}) != gguf {gguf.GGML_QUANT_SIZES[gt]}")
        out.append((t, name, gt, bs, bb))
    return out


def gguf_can(fn, gt, arg):
    try:
        fn(arg, gt)
        return True
    except NotImplementedError:
        return False


def qmm_quantize(lib, t, x, bb, bs):
    rows, k = x.shape
    out = np.zeros((rows, k // bs * bb), np.uint8)
    st = lib.qmm_quantize_rows(t, x.ctypes.data, out.ctypes.data, rows, k)
    if st != 0:
        raise RuntimeError(f"qmm_quantize_rows failed ({st}): {lib.qmm_last_error().decode()}")
    return out


def qmm_dequantize(lib, t, q, bs, bb):
    rows = q.shape[0]
    k = q.shape[1] // bb * bs
    out = np.zeros((rows, k), np.float32)
    st = lib.qmm_dequantize_rows(t, q.ctypes.data, out.ctypes.data, rows, k)
    if st != 0:
        raise RuntimeError(f"qmm_dequantize_rows failed ({st}): {lib.qmm_last_error().decode()}")
    return out


def first_diff(a, b):
    idx = np.flatnonzero(a.reshape(-1) != b.reshape(-1))
    return idx[0] if idx.size else None


def quantize_rows_for(bs, rng):
    """Named float32 rows (k = 256, a whole number of blocks of any size)."""
    k = 256
    rows = {}
    for mag in (1.0, 1e-3, 1e3, 3e4):
        rows[f"normal x{mag:g}"] = rng.standard_normal((8, k)) * mag
    rows["uniform [-1,1)"] = rng.uniform(-1, 1, (8, k))
    rows["heavy tail"] = rng.standard_cauchy((4, k)).clip(-1e4, 1e4)
    rows["all zero"] = np.zeros((1, k))
    rows["all +0.7"] = np.full((1, k), 0.7)
    rows["all -3.25"] = np.full((1, k), -3.25)
    neg = rng.uniform(-1, 1, (4, k))
    for r in range(4):
        neg[r, (np.arange(k) % 32) == (7 * r + 3) % 32] = -10.0 - r
    rows["negative largest magnitude"] = neg
    # half-integer grids: x*id hits .5 exactly for q8_0 (amax 127), q4_0 (max -8),
    # q5_0 (max -16), q4_1/q5_1 (min 0, max 15 / 31) — the rounding ties
    base = (rng.integers(-32, 33, (5, k)) * 0.5)
    base[0, ::32] = 127.0
    base[0] = base[0].clip(-127, 127)
    base[1, ::32] = -8.0
    base[1] = base[1].clip(-7.5, 7.5)
    base[1, ::32] = -8.0
    base[2] = base[2].clip(-15.5, 15.5)
    base[2, ::32] = -16.0
    base[3] = np.abs(base[3]).clip(0, 15)
    base[3, ::32] = 0.0
    base[3, 1::32] = 15.0
    base[4] = np.abs(base[4]).clip(0, 31)
    base[4, ::32] = 0.0
    base[4, 1::32] = 31.0
    rows["rounding ties"] = base
    # scales that land on f16 subnormals (d = 2^-24 .. 1023*2^-24), near 0x7BFF, and beyond
    for amax in (8 * 2.0**-24, 16 * 2.0**-24, 127 * 2.0**-24, 8 * 1023 * 2.0**-24,
                 127 * 1023 * 2.0**-24, 1e-9, 8 * 65504.0, 16 * 65504.0, 127 * 65504.0,
                 15 * 65504.0, 31 * 65504.0, 1e7):
        r = rng.uniform(-1, 1, (2, k))
        r[:, ::32] = -1.0
        rows[f"block max {amax:.4g}"] = r * amax
    if bs == 1:  # values around the f16/bf16 ranges, for the element types only
        rows["f16 edges"] = np.array([[65504, 65519.99, 65520, -65520, 6.1035e-05, 5.96e-08, 2.98e-08,
                                       2.99e-08, 1e-40, -1e-45, 3.0e38, -3.4e38] * 21 + [0.0] * 4])
    return {name: np.ascontiguousarray(v, dtype=np.float32) for name, v in rows.items()}


def check_quantize(lib, types, rng):
    for t, name, gt, bs, bb in types:
        probe = np.zeros((1, bs * 8), np.float32)
        if not gguf_can(gq.quantize, gt, probe):
            print(f"  quantize {name:5s}: not implemented in gguf.quants, skipped")
            continue
        n_rows = 0
        for rname, x in quantize_rows_for(bs, rng).items():
            with np.errstate(all="ignore"):
                ref = np.ascontiguousarray(gq.quantize(x, gt)).view(np.uint8).reshape(x.shape[0], -1)
            ours = qmm_quantize(lib, t, x, bb, bs)
            n_rows += x.shape[0]
            if ref.shape != ours.shape:
                failures.append(f"quantize {name} [{rname}]: shape {ours.shape} != gguf {ref.shape}")
                continue
            i = first_diff(ours, ref)
            if i is not None:
                r, byte = divmod(int(i), ours.shape[1])
                failures.append(f"quantize {name} [{rname}]: row {r} byte {byte} (block {byte // bb}, "
                                f"offset {byte % bb}): qmm 0x{ours[r, byte]:02x} != gguf 0x{ref[r, byte]:02x}")
        print(f"  quantize {name:5s}: {n_rows} rows of 256 compared byte for byte with gguf.quants.quantize")


def random_packed(rng, name, bs, bb, nblocks):
    q = rng.integers(0, 256, (nblocks, bb), dtype=np.uint8)
    if name == "F32":
        f = q.view(np.uint32)
        f[(f & 0x7F800000) == 0x7F800000] &= np.uint32(0xBFFFFFFF)  # keep finite
        return q
    if name == "BF16":
        h = q.view(np.uint16)
        h[(h & 0x7F80) == 0x7F80] &= np.uint16(0xBFFF)
        return q
    for off in E8M0_FIELDS.get(name, []):
        e = q[:, off]
        e[e > E8M0_MAX_FINITE] &= np.uint8(0x7F)
        e[:3] = (0x00, 0x01, E8M0_MAX_FINITE)
    for off in F16_FIELDS.get(name, []):
        h = np.ascontiguousarray(q[:, off:off + 2]).view(np.uint16).reshape(-1)
        h[(h & 0x7C00) == 0x7C00] &= np.uint16(0xBFFF)  # clear an exponent bit: finite
        h[: len(EXTREME_F16)] = EXTREME_F16[: min(len(EXTREME_F16), h.size)]
        rng.shuffle(h)
        q[:, off:off + 2] = h.view(np.uint8).reshape(-1, 2)
    return q


def check_dequantize(lib, types, rng):
    for t, name, gt, bs, bb in types:
        probe = np.zeros((1, bb), np.uint8)
        if not gguf_can(gq.dequantize, gt, probe):
            print(f"  dequantize {name:5s}: not implemented in gguf.quants, skipped")
            continue
        nblocks = 4096 if bs == 1 else (512 if bs == 32 else 128)
        q = random_packed(rng, gt.name, bs, bb, nblocks)
        row = q.reshape(1, -1)
        with np.errstate(all="ignore"):
            ref = np.asarray(gq.dequantize(row, gt), dtype=np.float32).reshape(1, -1)
        ours = qmm_dequantize(lib, t, np.ascontiguousarray(row), bs, bb)
        i = first_diff(ours.view(np.uint32), ref.view(np.uint32))
        if i is not None:
            i = int(i)
            failures.append(f"dequantize {name}: element {i} (block {i // bs}): qmm {ours[0, i]!r} "
                            f"(0x{ours.view(np.uint32)[0, i]:08x}) != gguf {ref[0, i]!r} "
                            f"(0x{ref.view(np.uint32)[0, i]:08x})")
        if not np.isfinite(ours).all():
            failures.append(f"dequantize {name}: non-finite output from finite scales")
        print(f"  dequantize {name:5s}: {nblocks} random blocks ({nblocks * bs} values) compared bit for bit "
              f"with gguf.quants.dequantize")


def main():
    lib = load_qmm()
    types = qmm_types(lib)
    rng = np.random.default_rng(20240611)
    print(f"gguf.quants cross-check of {len(types)} types: {', '.join(n for _, n, _, _, _ in types)}")
    check_quantize(lib, types, rng)
    check_dequantize(lib, types, rng)
    if failures:
        for f in failures:
            print(f"MISMATCH: {f}")
        print(f"FAIL: {len(failures)} mismatch(es) against gguf.quants")
        sys.exit(1)
    print("OK: qmm equals gguf.quants bit for bit on everything above")


if __name__ == "__main__":
    main()
