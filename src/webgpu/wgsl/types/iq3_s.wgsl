// iq3_s: 110-byte super-blocks of 256: f16 d, qs[64] at 2, qh[8] at 66, signs[32] at 74,
// scales[4] at 106. Unit u (ib = u / 4, l = u % 4): grid entries qs[2u] | ((qh[ib] << (8 - 2l))
// & 256) and qs[2u + 1] | ((qh[ib] << (7 - 2l)) & 256) (512 entries of 4 magnitudes), signs
// signs[u], scale d * (1 + 2 s), s = nibble ib % 2 of scales[ib / 2].
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 110u;
    let u = (e & 255u) >> 3u;
    let ib = u >> 2u;
    let l = u & 3u;
    let qh = w_u8(b + 66u + ib);
    let s = extractBits(w_u8(b + 106u + (ib >> 1u)), 4u * (ib & 1u), 4u);
    let db = w_f16(b) * f32(1u + 2u * s);
    let q = b + 2u + 2u * u;
    let g1 = G[G_IQ3S + (w_u8(q) | ((qh << (8u - 2u * l)) & 256u))];
    let g2 = G[G_IQ3S + (w_u8(q + 1u) | ((qh << (7u - 2u * l)) & 256u))];
    let sg = w_u8(b + 74u + u);
    return W8((vec4<f32>(fields4(g1, 0u, 8u)) * db) * signs4(sg, 0u),
              (vec4<f32>(fields4(g2, 0u, 8u)) * db) * signs4(sg, 4u));
}
