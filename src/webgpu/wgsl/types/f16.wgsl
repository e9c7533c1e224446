// f16: elements 2i, 2i+1 are the low and high halves of word i of the row (converted by
// integer operations, f16_exact: subnormal elements stay exact on devices that flush).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let i = (rb >> 2u) + (e >> 1u);
    let w = vec4<u32>(W[i], W[i + 1u], W[i + 2u], W[i + 3u]);
    let lo = f16_exact4(w & vec4<u32>(0xFFFFu));
    let hi = f16_exact4(w >> vec4<u32>(16u));
    return W8(vec4<f32>(lo.x, hi.x, lo.y, hi.y), vec4<f32>(lo.z, hi.z, lo.w, hi.w));
}
