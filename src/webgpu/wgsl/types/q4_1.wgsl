// q4_1: 20-byte blocks of 32: f16 d, f16 m, 16 bytes qs (nibbles as q4_0); value q * d + m
// (q * d is exact, so a contracted multiply-add rounds the same).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 5u) * 20u;
    let d = w_f16(b);
    let m = w_f16(b + 2u);
    let j = e & 31u;
    let sh = select(0u, 4u, j >= 16u);
    let q = b + 4u + (j & 15u);
    return W8(vec4<f32>(fields4(w_u32(q), sh, 4u)) * d + m,
              vec4<f32>(fields4(w_u32(q + 4u), sh, 4u)) * d + m);
}
