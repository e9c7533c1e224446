// gemv.wgsl — decode sizes: each workgroup owns GV_ROWS rows of W and GV_TOKENS tokens.
//
// GV_LANES threads per row walk the row in 8-element pieces (lane l takes pieces l,
// l + GV_LANES, ...), decode each once (qmm_dec8) and multiply it with the GV_TOKENS tokens'
// X values into one vec4 accumulator (component j: token j); then the lanes' partial sums are
// added in workgroup memory by halving (no subgroup operations). The order of every sum is
// fixed and the same for every n: batch-invariant; f32 throughout (F32 class).
//
// The X row shifts (common.wgsl: scaling) are found here, not by an xscale dispatch: the
// lanes of each row read the whole X rows of the workgroup's tokens anyway, so beside the
// sums they keep the largest bits (sign cleared) they read per token, reduced with the sums.
// Row 0 of the workgroup is always a row of W, so its maxima are complete: if every shift
// is 0 (the usual case) the sums stand; else the rows are computed again from X times its
// shifts and reduced again (the same operations as a kernel told the shifts beforehand).
// Y through y_store_shift.

var<workgroup> red: array<vec4<f32>, GV_ROWS * GV_LANES>;
var<workgroup> xmx: array<vec4<u32>, GV_ROWS * GV_LANES>;

// Token t's X bits for elements e .. e+7 (0 beyond the dispatch's tokens and past k).
fn xbits(t: u32, e: u32) -> X8 {
    if (t >= P.n) {
        return X8(vec4<u32>(0u), vec4<u32>(0u));
    }
    return x_bits8(P.x_off + t * P.ldx + e, e);
}

// The largest of the eight elements' bits with the sign cleared (their largest |x|).
fn xmax8(b: X8) -> u32 {
    let m = max(b.lo & vec4<u32>(0x7FFFFFFFu), b.hi & vec4<u32>(0x7FFFFFFFu));
    return max(max(m.x, m.y), max(m.z, m.w));
}

// The eight elements (their row's shift s: 0 in the first pass) dotted with w.
fn xdot(b: X8, w: W8, s: i32) -> f32 {
    return dot(w.lo, x_f32x4(b.lo, s)) + dot(w.hi, x_f32x4(b.hi, s));
}

// Adds the lanes' partial sums of each row in workgroup memory by halving (the maxima
// alongside when with_max); the row's total ends in red[row slot 0].
fn reduce(lane: u32, slot: u32, with_max: bool) {
    for (var s = GV_LANES / 2u; s > 0u; s = s / 2u) {
        if (lane < s) {
            red[slot] = red[slot] + red[slot + s];
            if (with_max) {
                xmx[slot] = max(xmx[slot], xmx[slot + s]);
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(GV_LANES, GV_ROWS, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let lane = lid.x;
    let r = wid.x * GV_ROWS + lid.y;
    let t0 = wid.y * GV_TOKENS;
    var acc = vec4<f32>(0.0);
    var mx = vec4<u32>(0u);
    if (r < P.rows) {
        for (var e = lane * 8u; e < P.k; e += GV_LANES * 8u) {
            let w = load_w8(r, e);
            let b0 = xbits(t0, e);
            let b1 = xbits(t0 + 1u, e);
            let b2 = xbits(t0 + 2u, e);
            let b3 = xbits(t0 + 3u, e);
            acc += vec4<f32>(xdot(b0, w, 0), xdot(b1, w, 0), xdot(b2, w, 0), xdot(b3, w, 0));
            mx = max(mx, vec4<u32>(xmax8(b0), xmax8(b1), xmax8(b2), xmax8(b3)));
        }
    }
    let slot = lid.y * GV_LANES + lane;
    red[slot] = acc;
    xmx[slot] = mx;
    workgroupBarrier();
    reduce(lane, slot, true);
    let a = workgroupUniformLoad(&xmx[0]); // row 0's maxima: the tokens' whole rows
    let s0 = x_shift_of(a.x);
    let s1 = x_shift_of(a.y);
    let s2 = x_shift_of(a.z);
    let s3 = x_shift_of(a.w);
    if ((s0 | s1 | s2 | s3) != 0) { // a tiny X row among the workgroup's tokens: again, scaled
        acc = vec4<f32>(0.0);
        if (r < P.rows) {
            for (var e = lane * 8u; e < P.k; e += GV_LANES * 8u) {
                let w = load_w8(r, e);
                acc += vec4<f32>(xdot(xbits(t0, e), w, s0), xdot(xbits(t0 + 1u, e), w, s1),
                                 xdot(xbits(t0 + 2u, e), w, s2), xdot(xbits(t0 + 3u, e), w, s3));
            }
        }
        red[slot] = acc;
        workgroupBarrier();
        reduce(lane, slot, false);
    }
    if (lane == 0u && r < P.rows) {
        let sum = red[slot];
        let y = P.y_off + r;
        if (t0 < P.n) { y_store_shift(y + t0 * P.ldy, s0, r, sum.x); }
        if (t0 + 1u < P.n) { y_store_shift(y + (t0 + 1u) * P.ldy, s1, r, sum.y); }
        if (t0 + 2u < P.n) { y_store_shift(y + (t0 + 2u) * P.ldy, s2, r, sum.z); }
        if (t0 + 3u < P.n) { y_store_shift(y + (t0 + 3u) * P.ldy, s3, r, sum.w); }
    }
}
