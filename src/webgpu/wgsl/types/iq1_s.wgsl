// iq1_s: 50-byte super-blocks of 256: f16 d, qs[32] at 2, u16 qh[8] at 34. Unit u (ib = u / 4,
// l = u % 4): grid index qs[u] | (((qh[ib] >> 3l) & 7) << 8) (2048 entries of 8 int8 in
// {-1, 0, 1}); dl = d * (2 ((qh >> 12) & 7) + 1), delta -0.125 when bit 15 of qh is set, else
// 0.125; value dl * (grid + delta) (iq1_group, iqgrids.wgsl).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 50u;
    let u = (e & 255u) >> 3u;
    let ib = u >> 2u;
    let l = u & 3u;
    let qh = w_u16(b + 34u + 2u * ib);
    let idx = w_u8(b + 2u + u) | (extractBits(qh, 3u * l, 3u) << 8u);
    let dl = w_f16(b) * f32(2u * extractBits(qh, 12u, 3u) + 1u);
    let delta = select(0.125, -0.125, (qh & 0x8000u) != 0u);
    return iq1_group(G_IQ1S + 2u * idx, delta, dl);
}
