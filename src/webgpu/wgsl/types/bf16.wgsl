// bf16: the top 16 bits of an f32; elements 2i, 2i+1 are the halves of word i of the row.
fn bf16x2(w: u32) -> vec2<f32> {
    return bitcast<vec2<f32>>(vec2<u32>(w << 16u, w & 0xFFFF0000u));
}
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let i = (rb >> 2u) + (e >> 1u);
    return W8(vec4<f32>(bf16x2(W[i]), bf16x2(W[i + 1u])),
              vec4<f32>(bf16x2(W[i + 2u]), bf16x2(W[i + 3u])));
}
