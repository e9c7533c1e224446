// q6_K: 210-byte super-blocks of 256: ql[128] at 0, qh[64] at 128, int8 scales[16] at 192,
// f16 d at 208. Element 128h + 32p + l: low 4 bits from nibble p/2 of ql[64h + 32(p%2) + l],
// high 2 bits from bits 2p of qh[32h + l], minus 32; scale scales[8h + 2p + l/16]; value
// (d * sc) * q (both products exact).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 210u;
    let i = e & 255u;
    let h = i >> 7u;
    let p = (i >> 5u) & 3u;
    let l = i & 31u;
    let sc = f32(extractBits(bitcast<i32>(w_u8(b + 192u + 8u * h + 2u * p + (l >> 4u))), 0u, 8u));
    let ds = w_f16(b + 208u) * sc;
    let ql = b + 64u * h + 32u * (p & 1u) + l;
    let qh = b + 128u + 32u * h + l;
    let lo = fields4(w_u32(ql), 4u * (p >> 1u), 4u) | (fields4(w_u32(qh), 2u * p, 2u) << vec4<u32>(4u));
    let hi = fields4(w_u32(ql + 4u), 4u * (p >> 1u), 4u) | (fields4(w_u32(qh + 4u), 2u * p, 2u) << vec4<u32>(4u));
    return W8((vec4<f32>(lo) - 32.0) * ds, (vec4<f32>(hi) - 32.0) * ds);
}
