// nvfp4: 36-byte blocks of 64 = 4 sub-blocks of 16: UE4M3 scales d[4], qs[32] (element j of
// sub-block s low nibble of qs[8s + j], j + 8 high); value kvalues[q] * ue4m3(d[s]), ue4m3 =
// half the E4M3 value: 0x00 and 0x7F are 0; exponent bits (x >> 3) & 15 (the top bit is
// ignored), mantissa x & 7; exponent 0: man * 2^-10, else 2^(exp - 8) (1 + man / 8).
fn ue4m3(x: u32) -> f32 {
    let ex = (x >> 3u) & 15u;
    let man = x & 7u;
    if (x == 0u || x == 0x7Fu) {
        return 0.0;
    }
    if (ex == 0u) {
        return f32(man) * bitcast<f32>(117u << 23u);
    }
    return bitcast<f32>(((ex + 119u) << 23u) | (man << 20u));
}

fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 6u) * 36u;
    let i = e & 63u;
    let s = i >> 4u;
    let d = ue4m3(w_u8(b + s));
    let sh = select(0u, 4u, (i & 15u) >= 8u);
    let q = b + 4u + 8u * s;
    return W8(cb16x4(CB_E2M1, fields4(w_u32(q), sh, 4u)) * d,
              cb16x4(CB_E2M1, fields4(w_u32(q + 4u), sh, 4u)) * d);
}
