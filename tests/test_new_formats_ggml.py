#!/usr/bin/env python3
"""Cross-check of mxfp4, nvfp4, tq1_0, tq2_0, iq4_nl, iq4_xs against the compiled ggml of the
ggml-py package (libggml-base.so: dequantize_row_<t>, quantize_row_<t>_ref) and gguf.quants.

  * dequantize: qmm_dequantize_rows equals ggml's dequantize_row_<t> and gguf.quants.dequantize
    bit for bit (float32 bits, NaN payloads included) on random bytes (every byte random, f16
    scales Inf/NaN included), on every E8M0 byte 0x00..0xFF (mxfp4) and every UE4M3 byte
    0x00..0xFF in each of nvfp4's four scale positions, each with every nibble, and on extreme
    f16 scales (tq1_0, tq2_0, iq4_nl, iq4_xs);
  * quantize: qmm_quantize_rows equals ggml's quantize_row_<t>_ref byte for byte (and
    gguf.quants.quantize where it exists: MXFP4, TQ1_0, TQ2_0) on normal, uniform,
    heavy-tailed, all-zero, constant and rounding-tie rows of many magnitudes.
Needs env QMM_LIB (the built libqmm.so). Exits 1 on a mismatch, 77 if ggml-py or gguf is missing.
"""
import ctypes
import os
import sys

import numpy as np

try:
    from gguf import GGMLQuantizationType as T
    from gguf import GGML_QUANT_SIZES
    from gguf import quants as gq
    import ggml as _ggml_pkg
except Exception as e:  # pragma: no cover
    print(f"SKIP: python packages gguf / ggml-py not importable: {e}")
    sys.exit(77)

GGML_LIB = os.path.join(os.path.dirname(_ggml_pkg.__file__), "lib", "libggml-base.so")
TYPES = ["MXFP4", "NVFP4", "TQ1_0", "TQ2_0", "IQ4_NL", "IQ4_XS"]
F16_AT = {"TQ1_0": [52], "TQ2_0": [64], "IQ4_NL": [0], "IQ4_XS": [0]}
EXTREME_F16 = [0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0x7E00, 0x7C01, 0x8001, 0x83FF, 0xFBFF,
               0xFC00, 0xFE00, 0x0000, 0x8000, 0x3C00, 0xBC00]
failures = []


def load():
    path = os.environ.get("QMM_LIB")
    if not path or not os.path.exists(path):
        print(f"FAIL: QMM_LIB is not set to the built libqmm.so (got {path!r})")
        sys.exit(1)
    q = ctypes.CDLL(path)
    for fn in (q.qmm_quantize_rows, q.qmm_dequantize_rows):
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    q.qmm_last_error.restype = ctypes.c_char_p
    g = ctypes.CDLL(GGML_LIB)
    for t in TYPES:
        for fn in (getattr(g, "dequantize_row_" + t.lower()), getattr(g, f"quantize_row_{t.lower()}_ref")):
            fn.restype = None
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    return q, g


def sizes(t):
    return GGML_QUANT_SIZES[T[t]]


def qmm_deq(q, t, raw):
    bs, bb = sizes(t)
    nb = raw.size // bb
    out = np.zeros(nb * bs, np.float32)
    raw = np.ascontiguousarray(raw, np.uint8)
    st = q.qmm_dequantize_rows(int(T[t]), raw.ctypes.data, out.ctypes.data, 1, nb * bs)
    if st:
        raise RuntimeError(q.qmm_last_error().decode())
    return out


def ggml_deq(g, t, raw):
    bs, bb = sizes(t)
    nb = raw.size // bb
    out = np.zeros(nb * bs, np.float32)
    raw = np.ascontiguousarray(raw, np.uint8)
    getattr(g, "dequantize_row_" + t.lower())(raw.ctypes.data, out.ctypes.data, nb * bs)
    return out


def qmm_quant(q, t, x):
    bs, bb = sizes(t)
    rows, k = x.shape
    out = np.zeros((rows, k // bs * bb), np.uint8)
    st = q.qmm_quantize_rows(int(T[t]), x.ctypes.data, out.ctypes.data, rows, k)
    if st:
        raise RuntimeError(q.qmm_last_error().decode())
    return out


def ggml_quant(g, t, x):
    bs, bb = sizes(t)
    rows, k = x.shape
    out = np.zeros((rows, k // bs * bb), np.uint8)
    fn = getattr(g, f"quantize_row_{t.lower()}_ref")
    for r in range(rows):  # one call per row, as qmm_quantize_rows does
        xr = np.ascontiguousarray(x[r])
        o = np.zeros(k // bs * bb, np.uint8)
        fn(xr.ctypes.data, o.ctypes.data, k)
        out[r] = o
    return out


def bits_diff(a, b):
    idx = np.flatnonzero(a.view(np.uint32) != b.view(np.uint32))
    return None if idx.size == 0 else int(idx[0])


def cmp_deq(q, g, t, raw, what, stats):
    bs, bb = sizes(t)
    ours = qmm_deq(q, t, raw)
    ref = ggml_deq(g, t, raw)
    with np.errstate(all="ignore"):
        gg = np.asarray(gq.dequantize(raw.reshape(1, -1), T[t]), np.float32).reshape(-1)
    for name, other in (("ggml", ref), ("gguf.quants", gg)):
        i = bits_diff(ours, other)
        if i is not None:
            failures.append(f"dequantize {t} [{what}] vs {name}: element {i} (block {i // bs}): qmm "
                            f"0x{ours.view(np.uint32)[i]:08x} != 0x{other.view(np.uint32)[i]:08x}")
    i = bits_diff(ref, gg)
    if i is not None:
        stats.setdefault("ggml!=gguf", []).append(f"{t} [{what}] element {i}: ggml 0x{ref.view(np.uint32)[i]:08x} "
                                                  f"gguf 0x{gg.view(np.uint32)[i]:08x}")
    stats[t] = stats.get(t, 0) + ours.size


def check_dequantize(q, g, rng):
    stats = {}
    for t in TYPES:
        bs, bb = sizes(t)
        nb = 8192 if bs <= 64 else 2048
        raw = rng.integers(0, 256, (nb, bb), dtype=np.uint8)
        cmp_deq(q, g, t, raw.reshape(-1), "random bytes", stats)
        if t in F16_AT:
            for off in F16_AT[t]:
                r2 = raw.copy()
                h = np.array(EXTREME_F16 * (nb // len(EXTREME_F16) + 1), np.uint16)[:nb]
                rng.shuffle(h)
                r2[:, off:off + 2] = h.view(np.uint8).reshape(-1, 2)
                cmp_deq(q, g, t, r2.reshape(-1), "extreme f16 scales", stats)
                # every f16 bit pattern as the scale
                r3 = rng.integers(0, 256, (65536, bb), dtype=np.uint8)
                r3[:, off:off + 2] = np.arange(65536, dtype=np.uint16).view(np.uint8).reshape(-1, 2)
                cmp_deq(q, g, t, r3.reshape(-1), "every f16 scale", stats)
    # mxfp4: every E8M0 byte with every nibble (256 blocks x 2 nibble patterns)
    raw = np.zeros((2, 256, 17), np.uint8)
    raw[:, :, 0] = np.arange(256)
    nib = np.arange(16, dtype=np.uint8)
    raw[0, :, 1:] = (nib | (nib[::-1] << 4))[None, :]
    raw[1, :, 1:] = (nib[::-1] | (nib << 4))[None, :]
    cmp_deq(q, g, "MXFP4", raw.reshape(-1), "every E8M0 byte x every nibble", stats)
    # nvfp4: every UE4M3 byte in each of the four positions, every nibble in each sub-block
    raw = np.zeros((4, 256, 36), np.uint8)
    for pos in range(4):
        raw[pos, :, :4] = rng.integers(0, 256, (256, 4), dtype=np.uint8)
        raw[pos, :, pos] = np.arange(256)
        for s in range(4):
            n8 = np.arange(8, dtype=np.uint8)
            raw[pos, :, 4 + 8 * s:4 + 8 * s + 8] = (n8 | ((n8 + 8) << 4))[None, :] if s % 2 == 0 else \
                ((n8 + 8) | (n8 << 4))[None, :]
    cmp_deq(q, g, "NVFP4", raw.reshape(-1), "every UE4M3 byte in each position x every nibble", stats)
    for t in TYPES:
        print(f"  dequantize {t:6s}: {stats[t]:8d} values equal to ggml dequantize_row_{t.lower()} and gguf.quants")
    for s in stats.get("ggml!=gguf", []):
        print(f"  note: ggml and gguf.quants differ: {s}")
    return stats


def rows_for(t, rng):
    k = 512
    rows = {}
    for mag in (1.0, 1e-3, 1e3, 3e4, 1e-20, 1e20):
        rows[f"normal x{mag:g}"] = rng.standard_normal((8, k)) * mag
    rows["uniform [-1,1)"] = rng.uniform(-1, 1, (8, k))
    rows["uniform [0,1)"] = rng.uniform(0, 1, (4, k))
    rows["heavy tail (cauchy)"] = rng.standard_cauchy((8, k))
    rows["heavy tail (student t2)"] = rng.standard_t(2, (8, k))
    rows["all zero"] = np.zeros((2, k))
    rows["all -0"] = np.full((1, k), -0.0)
    rows["all +0.7"] = np.full((1, k), 0.7)
    rows["all -3.25"] = np.full((1, k), -3.25)
    sparse = rng.standard_normal((4, k))
    sparse[rng.uniform(size=(4, k)) < 0.9] = 0.0
    rows["sparse (90% zero)"] = sparse
    # zero blocks inside a row, and as its first block
    zb = rng.standard_normal((4, k))
    zb[0, :32] = 0
    zb[1, 64:128] = 0
    zb[2, 256:512] = 0
    zb[3, 32:64] = 1e-16
    rows["zero blocks"] = zb
    # ties: midpoints of the doubled E2M1 grid with amax 6 (d = 0.5), ternary +-amax/2
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float64)
    mids = np.concatenate([(grid[1:] + grid[:-1]) / 2, grid])
    tie = rng.choice(np.concatenate([mids, -mids]), (8, k))
    tie[:, ::16] = 6.0
    tie[4:] *= 2.0 ** rng.integers(-20, 20, (4, 1))
    rows["E2M1 ties"] = tie
    tt = rng.choice([-0.5, 0.5, 0.0, 1.0, -1.0, 0.25, -0.75], (4, k))
    tt[:, ::64] = 1.0
    rows["ternary ties"] = tt * np.array([[1.0], [3.0], [1e-5], [7e4]])
    cb = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float64)
    cbm = np.concatenate([cb, (cb[1:] + cb[:-1]) / 2])
    rows["iq4 codebook points and midpoints"] = rng.choice(cbm, (8, k)) * np.array([[1.0], [0.01], [3.0], [-1.0], [1e-4], [50.0], [0.5], [2.0]])
    ints = rng.integers(-8, 9, (4, k)).astype(np.float64)
    rows["small integers"] = ints
    for amax in (2.0**-126, 2.0**-127, 2.0**-130, 1e-40, 1e-44, 6 * 2.0**-10, 6 * 2.0**-9, 5.9e-3,
                 448 * 6, 449 * 6, 1e4, 65504.0, 65520.0, 1e5, 3e38, 2.0**-24, 2.0**-25, 1e-9):
        r = rng.uniform(-1, 1, (2, k))
        r[:, ::16] = -1.0
        rows[f"block max {amax:.4g}"] = r * amax
    # amax just below and at powers of two (floor(log2f) edge for the E8M0 scale)
    edge = []
    for e in (-100, -10, -1, 0, 1, 2, 3, 10, 100):
        for v in (np.nextafter(np.float32(2.0**e), np.float32(0)), np.float32(2.0**e),
                  np.nextafter(np.float32(2.0**e), np.float32(np.inf))):
            r = rng.uniform(-1, 1, k) * float(v)
            r[::32] = v
            edge.append(r)
    rows["amax at powers of two +-1 ulp"] = np.array(edge)
    out = {}
    for name, v in rows.items():
        with np.errstate(all="ignore"):
            out[name] = np.ascontiguousarray(v, dtype=np.float32)
    return out


def mask_iq4_nl_leading_zero_blocks(x, ours, ref):
    """ggml's quantize_row_iq4_nl_ref does not write the indices of a block whose amax is below
    1e-15 (its d is 0): they are left from the previous block, and for the blocks before the
    first non-zero block of a call they are uninitialized stack bytes. qmm writes index 0 there
    (docs/FORMATS.md). Check qmm's nibbles of those blocks are 0 and take them as ggml's."""
    ref = ref.copy()
    for r in range(x.shape[0]):
        for b in range(x.shape[1] // 32):
            blk = np.abs(x[r, 32 * b:32 * b + 32])
            if (blk[~np.isnan(blk)] >= np.float32(1e-15)).any():  # ggml's amax ignores NaNs
                break
            if ours[r, 18 * b + 2:18 * b + 18].any():
                failures.append(f"quantize IQ4_NL: leading zero block {b} of row {r}: nibbles not 0")
            ref[r, 18 * b + 2:18 * b + 18] = ours[r, 18 * b + 2:18 * b + 18]
    return ref


def check_quantize(q, g, rng, with_nonfinite):
    for t in TYPES:
        n = 0
        gguf_ok = t in ("MXFP4", "TQ1_0", "TQ2_0")
        ng = 0
        rows = rows_for(t, rng)
        if with_nonfinite:
            k = 512
            nf = rng.standard_normal((4, k)).astype(np.float32)
            nf[0, 5] = np.inf
            nf[1, 300] = -np.inf
            nf[2, 40] = np.nan
            nf[3, ::7] = np.nan
            rows["non-finite inputs"] = nf
        for rname, x in rows.items():
            ours = qmm_quant(q, t, x)
            ref = ggml_quant(g, t, x)
            n += x.shape[0]
            if t == "IQ4_NL":
                ref = mask_iq4_nl_leading_zero_blocks(x, ours, ref)
            idx = np.flatnonzero(ours.reshape(-1) != ref.reshape(-1))
            if idx.size:
                r, b = divmod(int(idx[0]), ours.shape[1])
                msg = (f"quantize {t} [{rname}] vs ggml: row {r} byte {b} (block {b // sizes(t)[1]}): "
                       f"qmm 0x{ours[r, b]:02x} != ggml 0x{ref[r, b]:02x} ({idx.size} bytes differ)")
                (failures.append if rname != "non-finite inputs" else print)(("  note: " if rname == "non-finite inputs" else "") + msg)
            if gguf_ok and rname != "non-finite inputs":
                with np.errstate(all="ignore"):
                    gg = np.ascontiguousarray(gq.quantize(x, T[t])).view(np.uint8).reshape(x.shape[0], -1)
                ng += x.shape[0]
                idx = np.flatnonzero(ours.reshape(-1) != gg.reshape(-1))
                if idx.size:
                    r, b = divmod(int(idx[0]), ours.shape[1])
                    gi = np.flatnonzero(ref.reshape(-1) != gg.reshape(-1)).size
                    failures.append(f"quantize {t} [{rname}] vs gguf.quants: row {r} byte {b}: qmm 0x{ours[r, b]:02x} "
                                    f"!= gguf 0x{gg[r, b]:02x} ({idx.size} bytes differ; ggml vs gguf differ in {gi})")
        extra = f", {ng} of them also against gguf.quants.quantize" if gguf_ok else ""
        print(f"  quantize {t:6s}: {n} rows of 512 equal to ggml quantize_row_{t.lower()}_ref{extra}")


def check_roundtrip_e8m0_edges(q, g):
    """log2f edge: amax values just below 2^e for every e, row by row against ggml."""
    k = 32
    xs = []
    for e in range(-149, 128):
        for v in (np.float32(2.0**e) if e > -150 else np.float32(0),):
            lo = np.nextafter(v, np.float32(0))
            for a in (lo, v):
                if a > 0 and np.isfinite(a):
                    r = np.zeros(k, np.float32)
                    r[0] = a
                    r[1] = -a / 2
                    xs.append(r)
    x = np.array(xs, np.float32).reshape(1, -1)
    for t in ("MXFP4", "NVFP4"):
        ours = qmm_quant(q, t, x.reshape(1, -1)[:, : x.size // sizes(t)[0] * sizes(t)[0]])
        ref = ggml_quant(g, t, x.reshape(1, -1)[:, : x.size // sizes(t)[0] * sizes(t)[0]])
        idx = np.flatnonzero(ours != ref)
        if idx.size:
            failures.append(f"quantize {t} [every power of two and its predecessor]: {idx.size} bytes differ")
        extra = ""
        if t == "MXFP4":
            with np.errstate(all="ignore"):
                gg = np.ascontiguousarray(gq.quantize(x, T[t])).view(np.uint8).reshape(1, -1)
            idx = np.flatnonzero(ours != gg)
            if idx.size:
                failures.append(f"quantize {t} [every power of two and its predecessor] vs gguf.quants: "
                                f"{idx.size} bytes differ, first at {idx[0]}")
            extra = " and gguf.quants"
        print(f"  quantize {t:6s}: {x.size // 32} blocks with amax = 2^e and its predecessor (e = -149..127) "
              f"equal to ggml{extra}")


def main():
    q, g = load()
    rng = np.random.default_rng(7)
    print("dequantize:")
    check_dequantize(q, g, rng)
    print("quantize:")
    check_quantize(q, g, rng, with_nonfinite=True)
    check_roundtrip_e8m0_edges(q, g)
    if failures:
        for f in failures:
            print("MISMATCH:", f)
        print(f"FAIL: {len(failures)} mismatch(es)")
        sys.exit(1)
    print("OK: qmm equals the compiled ggml (and gguf.quants where it implements the type) on everything above")


if __name__ == "__main__":
    main()
