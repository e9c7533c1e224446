// iq3_xxs: 98-byte super-blocks of 256: f16 d, qs[96] at 2 (64 grid indices, then 8 u32 of
// signs and scale). Unit u (ib = u / 4, l = u % 4): a = u32 at qs[64 + 4 ib]; grid entries
// qs[2u], qs[2u + 1] (4 magnitudes each), signs ksigns[(a >> 7l) & 127], scale
// (d * (0.5 + (a >> 28))) * 0.5; value (db * magnitude) * sign.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 98u;
    let u = (e & 255u) >> 3u;
    let ib = u >> 2u;
    let l = u & 3u;
    let a = w_u32(b + 66u + 4u * ib);
    let db = (w_f16(b) * (0.5 + f32(a >> 28u))) * 0.5;
    let s = ksign(extractBits(a, 7u * l, 7u));
    let g1 = G[G_IQ3XXS + w_u8(b + 2u + 2u * u)];
    let g2 = G[G_IQ3XXS + w_u8(b + 3u + 2u * u)];
    return W8((vec4<f32>(fields4(g1, 0u, 8u)) * db) * signs4(s, 0u),
              (vec4<f32>(fields4(g2, 0u, 8u)) * db) * signs4(s, 4u));
}
