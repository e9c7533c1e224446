// q5_K: 176-byte super-blocks of 256: f16 d, f16 dmin, 12 bytes scales (kscale.wgsl), qh[32]
// at 16, qs[128] at 48. As q4_K, plus 16 when bit 2c + s of qh[l] is set.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 176u;
    let i = e & 255u;
    let c = i >> 6u;
    let s = (i >> 5u) & 1u;
    let l = i & 31u;
    let sub = 2u * c + s;
    let sm = kscale_min(b + 4u, sub);
    let d1 = w_f16(b) * f32(sm.x);
    let m1 = w_f16(b + 2u) * f32(sm.y);
    let q = b + 48u + 32u * c + l;
    let qh = b + 16u + l;
    let lo = fields4(w_u32(q), 4u * s, 4u) | (fields4(w_u32(qh), sub, 1u) << vec4<u32>(4u));
    let hi = fields4(w_u32(q + 4u), 4u * s, 4u) | (fields4(w_u32(qh + 4u), sub, 1u) << vec4<u32>(4u));
    return W8(vec4<f32>(lo) * d1 - m1, vec4<f32>(hi) * d1 - m1);
}
