#!/usr/bin/env python3
"""Bit-exact cross-check of qmm's grid i-quant codecs (codec_iq2.h, codec_iq3.h, codec_iq1.h)
against gguf.quants.dequantize and against ggml's compiled dequantize_row_<type> (the libggml of
the PyPI package ggml-py).

Types, by GGMLQuantizationType id (names come from qmm_type_name and gguf): 16, 17, 22 (the
2-bit grids), 18, 21 (3-bit), 19, 29 (1-bit). For each, qmm_dequantize_rows must equal both
authorities bit for bit on:
  * random packed bytes (finite f16 scales), enough blocks that every grid index, every sign
    pattern (the 128 ksigns indices, or the 256 explicit sign bytes), every 3- or 4-bit scale
    and both delta signs occur: the script decodes those index fields from the bytes itself
    and fails if any value is missing;
  * extreme f16 scales planted into the d field (for id 29, into the top nibbles of its four
    uint16 scales): 0x0001, 0x03FF (subnormal), 0x0400, 0x7BFF (largest), their negatives,
    +-0, +-1;
  * all-zero blocks, and blocks of all-0xFF bytes with a finite d.
Env QMM_LIB: the built libqmm.so. Exit 1 on any mismatch, 77 (skipped) when gguf or ggml-py is
missing.
"""
import ctypes
import glob
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

QK_K = 256
IDS = [16, 17, 22, 18, 21, 19, 29]
IQ1M = 29
EXTREME_F16 = [0x0001, 0x03FF, 0x0400, 0x7BFF, 0x8001, 0x83FF, 0x8400, 0xFBFF, 0x0000, 0x8000,
               0x3C00, 0xBC00]

failures = []


def ggml_name(t):
    return T(t).name.lower()


def load_qmm():
    path = os.environ.get("QMM_LIB")
    if not path or not os.path.exists(path):
        print(f"FAIL: QMM_LIB is not set to the built libqmm.so (got {path!r})")
        sys.exit(1)
    lib = ctypes.CDLL(path)
    lib.qmm_dequantize_rows.restype = ctypes.c_int
    lib.qmm_dequantize_rows.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_int64, ctypes.c_int64]
    lib.qmm_type_name.restype = ctypes.c_char_p
    lib.qmm_type_name.argtypes = [ctypes.c_int]
    lib.qmm_type_block_size.restype = ctypes.c_int64
    lib.qmm_type_block_size.argtypes = [ctypes.c_int]
    lib.qmm_type_block_bytes.restype = ctypes.c_size_t
    lib.qmm_type_block_bytes.argtypes = [ctypes.c_int]
    lib.qmm_last_error.restype = ctypes.c_char_p
    return lib


def load_ggml():
    try:
        import ggml  # noqa: F401  (the PyPI package ggml-py)
    except Exception as e:
        print(f"SKIP: python package 'ggml' (pip install ggml-py) not importable: {e}")
        sys.exit(77)
    pkg_dir = os.path.dirname(ggml.__file__)
    for path in sorted(glob.glob(os.path.join(pkg_dir, "lib", "*.so*")) +
                       glob.glob(os.path.join(pkg_dir, "**", "libggml*.so*"), recursive=True)):
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        if all(hasattr(lib, f"dequantize_row_{ggml_name(t)}") for t in IDS):
            for t in IDS:
                fn = getattr(lib, f"dequantize_row_{ggml_name(t)}")
                fn.restype = None
                fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            return lib, path
    print(f"SKIP: no library under {pkg_dir} exports dequantize_row_<t> for these types")
    sys.exit(77)


# ---------------------------------------------------------------------------------------
# f16 scale field (d at byte 0, or for id 29 the top nibbles of its uint16 scales) and the index fields, read from the bytes
# ---------------------------------------------------------------------------------------

def u16(q, off, n):
    return np.ascontiguousarray(q[:, off:off + 2 * n]).view(np.uint16).reshape(q.shape[0], n).astype(np.uint32)


def u32(q, off, n):
    return np.ascontiguousarray(q[:, off:off + 4 * n]).view(np.uint32).reshape(q.shape[0], n).astype(np.uint64)


def get_d(t, q):
    if t == IQ1M:
        sc = u16(q, 48, 4)
        return ((sc[:, 0] >> 12) | ((sc[:, 1] >> 8) & 0xF0) | ((sc[:, 2] >> 4) & 0xF00) | (sc[:, 3] & 0xF000))
    return u16(q, 0, 1)[:, 0]


def set_d(t, q, h):
    h = np.asarray(h, np.uint32)
    if t == IQ1M:
        sc = u16(q, 48, 4)
        for i in range(4):
            sc[:, i] = (sc[:, i] & 0x0FFF) | (((h >> (4 * i)) & 0xF) << 12)
        q[:, 48:56] = sc.astype(np.uint16).view(np.uint8).reshape(-1, 8)
    else:
        q[:, 0:2] = h.astype(np.uint16).reshape(-1, 1).view(np.uint8).reshape(-1, 2)


def fields(t, q):
    """name -> (values seen, number of possible values) for the index fields of type t."""
    if t == 16:  # qs: 8 sub-blocks of (uint32 grid bytes, uint32 signs|scale)
        a = u32(q, 2, 16).reshape(-1, 8, 2)
        grid = q[:, 2:66].reshape(-1, 8, 8)[:, :, :4]
        signs = np.stack([(a[..., 1] >> (7 * l)) & 127 for l in range(4)])
        return {"grid": (grid, 256), "ksigns": (signs, 128), "scale": (a[..., 1] >> 28, 16)}
    if t == 17:
        qs = u16(q, 2, 32)
        sc = q[:, 66:74]
        return {"grid": (qs & 511, 512), "ksigns": (qs >> 9, 128),
                "scale": (np.concatenate([sc & 15, sc >> 4]), 16)}
    if t == 22:
        qs, signs, qh, sc = q[:, 2:34].astype(np.uint32), q[:, 34:66], q[:, 66:74].astype(np.uint32), q[:, 74:82]
        idx = qs.reshape(-1, 8, 4) | (((qh.reshape(-1, 8, 1) >> (2 * np.arange(4))) & 3) << 8)
        return {"grid": (idx, 1024), "signs": (signs, 256), "scale": (np.concatenate([sc & 15, sc >> 4]), 16)}
    if t == 18:
        a = u32(q, 66, 8)
        signs = np.stack([(a >> (7 * l)) & 127 for l in range(4)])
        return {"grid": (q[:, 2:66], 256), "ksigns": (signs, 128), "scale": (a >> 28, 16)}
    if t == 21:
        qs, qh, signs, sc = q[:, 2:66].astype(np.uint32), q[:, 66:74].astype(np.uint32), q[:, 74:106], q[:, 106:110]
        idx = qs | (((qh.reshape(-1, 8, 1) >> np.arange(8)) & 1).reshape(-1, 64) << 8)
        return {"grid": (idx, 512), "signs": (signs, 256), "scale": (np.concatenate([sc & 15, sc >> 4]), 16)}
    if t == 19:
        qs, qh = q[:, 2:34].astype(np.uint32), u16(q, 34, 8)
        idx = qs.reshape(-1, 8, 4) | (((qh.reshape(-1, 8, 1) >> (3 * np.arange(4))) & 7) << 8)
        return {"grid": (idx, 2048), "scale": ((qh >> 12) & 7, 8), "delta sign": (qh >> 15, 2)}
    if t == IQ1M:
        qs, qh, sc = q[:, 0:32].astype(np.uint32), q[:, 32:48].astype(np.uint32), u16(q, 48, 4)
        nib = np.stack([qh & 15, qh >> 4], axis=-1).reshape(-1, 32)
        idx = qs | ((nib & 7) << 8)
        s = np.stack([(sc >> (3 * i)) & 7 for i in range(4)])
        return {"grid": (idx, 2048), "scale": (s, 8), "delta sign": (nib >> 3, 2)}
    raise ValueError(t)


def random_blocks(rng, t, bb, nblocks):
    q = rng.integers(0, 256, (nblocks, bb), dtype=np.uint8)
    h = get_d(t, q)
    h = np.where((h & 0x7C00) == 0x7C00, h & 0xBFFF, h)  # clear an exponent bit: finite
    h[: len(EXTREME_F16)] = EXTREME_F16
    rng.shuffle(h)
    set_d(t, q, h)
    return q


def edge_blocks(t, bb):
    """Named edge rows (each a whole number of blocks)."""
    rows = {"all zero": np.zeros((4, bb), np.uint8)}
    ff = np.full((len(EXTREME_F16), bb), 0xFF, np.uint8)
    set_d(t, ff, EXTREME_F16)
    rows["all 0xFF, extreme d"] = ff
    z = np.zeros((len(EXTREME_F16), bb), np.uint8)
    set_d(t, z, EXTREME_F16)
    rows["zero quants, extreme d"] = z
    return rows


def compare(name, what, ours, ref):
    ob, rb = ours.reshape(-1).view(np.uint32), np.asarray(ref, np.float32).reshape(-1).view(np.uint32)
    if ob.shape != rb.shape:
        failures.append(f"{name} [{what}]: {ob.size} values != {rb.size}")
        return
    idx = np.flatnonzero(ob != rb)
    if idx.size:
        i = int(idx[0])
        failures.append(f"{name} [{what}]: {idx.size} values differ, first element {i} (block {i // QK_K}, "
                        f"element {i % QK_K}): qmm 0x{ob[i]:08x} != 0x{rb[i]:08x}")


def main():
    lib = load_qmm()
    glib, gpath = load_ggml()
    rng = np.random.default_rng(20240612)
    print(f"ggml: {gpath}; gguf: {os.path.dirname(gguf.__file__)}")
    for t in IDS:
        raw = lib.qmm_type_name(t)
        if not raw:
            failures.append(f"type id {t} ({ggml_name(t)}) is not in qmm's table")
            continue
        name = raw.decode()
        gt = T(t)
        bs, bb = lib.qmm_type_block_size(t), lib.qmm_type_block_bytes(t)
        if name != ggml_name(t) or gguf.GGML_QUANT_SIZES[gt] != (bs, bb):
            failures.append(f"{name}: qmm ({name}, {bs}, {bb}) != gguf ({ggml_name(t)}, {gguf.GGML_QUANT_SIZES[gt]})")
            continue
        nblocks = 4096 if t in (19, IQ1M) else 1024
        cases = {"random": random_blocks(rng, t, bb, nblocks)}
        cases.update(edge_blocks(t, bb))
        seen = []
        for f, (vals, n) in fields(t, cases["random"]).items():
            got = np.unique(vals).size
            seen.append(f"{f} {got}/{n}")
            if got != n:
                failures.append(f"{name}: random blocks reach {got} of {n} values of {f}")
        d_seen = set(int(v) for v in get_d(t, cases["random"]))
        if not set(EXTREME_F16) <= d_seen:
            failures.append(f"{name}: extreme scales not planted")
        total = 0
        for what, q in cases.items():
            rows = 4 if q.shape[0] % 4 == 0 else 1
            packed = np.ascontiguousarray(q.reshape(rows, -1))
            k = q.shape[0] // rows * bs
            ours = np.zeros((rows, k), np.float32)
            st = lib.qmm_dequantize_rows(t, packed.ctypes.data, ours.ctypes.data, rows, k)
            if st != 0:
                failures.append(f"{name} [{what}]: qmm_dequantize_rows failed: {lib.qmm_last_error().decode()}")
                continue
            with np.errstate(all="ignore"):
                ref_py = np.asarray(gq.dequantize(packed, gt), np.float32)
            ref_c = np.zeros((rows, k), np.float32)
            flat = np.ascontiguousarray(packed.reshape(-1))
            getattr(glib, f"dequantize_row_{ggml_name(t)}")(flat.ctypes.data, ref_c.ctypes.data, rows * k)
            compare(name, f"{what} vs gguf.quants", ours, ref_py)
            compare(name, f"{what} vs ggml dequantize_row", ours, ref_c)
            if not np.isfinite(ours).all():
                failures.append(f"{name} [{what}]: non-finite output from finite scales")
            total += q.shape[0]
        print(f"  {name:8s}: {total} blocks ({total * bs} values) equal to gguf.quants and ggml bit for bit; "
              f"random blocks reach {', '.join(seen)}; extreme d {len(EXTREME_F16)}/{len(EXTREME_F16)}")
    if failures:
        for f in failures:
            print(f"MISMATCH: {f}")
        print(f"FAIL: {len(failures)} problem(s)")
        sys.exit(1)
    print("OK: every grid i-quant decodes bit for bit as gguf.quants and ggml")


if __name__ == "__main__":
    main()
