# candidates at several geometries, q4_0/q4_K/f16, n=512,2048 on the LFM shapes
c() { f=$1; tag=$2; shift 2; echo "== $f $tag $*"; timeout 120 "$Q" bench --backend webgpu --candidate .carry/cand/$f.wgsl --types ${TYPES:-q4_0,q4_K,f16} --preset lfm2.5-350m --n ${NS:-512,2048} --iters 10 --warmup 2 "$@" --json "$OUT/c_${f}_$tag.json" 2>&1 | grep -v '^#' | tail -40; echo "rc=${PIPESTATUS[0]}"; }
c t22 g16x16
c t22 g32x16 --wg-m 32 --wg-n 16
c t22 g32x32 --wg-m 32 --wg-n 32
c t21 g16x16
c t12 g16x16
TYPES=q4_0 c t22u4 g16x16
TYPES=q4_0 c t22 g16x32 --wg-m 16 --wg-n 32
TYPES=q4_0 c t22 g32x32k16 --wg-m 32 --wg-n 32 --tile-k 16
