;; The dot products of VectorRows (vector-rows.ts), with WebAssembly's 128-bit SIMD: a row of
;; int16 components (a unit vector's, times 32767) against one or two queries of float32 kept in
;; the same memory. Compiled to dist/wasm/dot-kernels.wasm by `npm run build` (vector-rows.ts).
;; Every length is a multiple of 16 components, and every address a multiple of 16 bytes.
(module
  (import "rows" "memory" (memory 1 65536))

  ;; The sum of a float32x4's lanes.
  (func $lanes (param $s v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $s)) (f32x4.extract_lane 1 (local.get $s)))
      (f32.add (f32x4.extract_lane 2 (local.get $s)) (f32x4.extract_lane 3 (local.get $s)))))

  ;; The row at byte $row (int16, $dims components) · the query at byte $q (float32), in int16 steps.
  ;; Four sums side by side: one sum's chain of additions would wait on itself each step.
  (func (export "dot") (param $row i32) (param $q i32) (param $dims i32) (result f32)
    (local $end i32) (local $v v128)
    (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local.set $end (i32.add (local.get $row) (i32.shl (local.get $dims) (i32.const 1))))
    (loop $next
      (local.set $v (v128.load (local.get $row)))
      (local.set $s0 (f32x4.add (local.get $s0)
        (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $v))) (v128.load (local.get $q)))))
      (local.set $s1 (f32x4.add (local.get $s1)
        (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $v))) (v128.load offset=16 (local.get $q)))))
      (local.set $v (v128.load offset=16 (local.get $row)))
      (local.set $s2 (f32x4.add (local.get $s2)
        (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $v))) (v128.load offset=32 (local.get $q)))))
      (local.set $s3 (f32x4.add (local.get $s3)
        (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $v))) (v128.load offset=48 (local.get $q)))))
      (local.set $row (i32.add (local.get $row) (i32.const 32)))
      (local.set $q (i32.add (local.get $q) (i32.const 64)))
      (br_if $next (i32.lt_u (local.get $row) (local.get $end))))
    (call $lanes (f32x4.add (f32x4.add (local.get $s0) (local.get $s1)) (f32x4.add (local.get $s2) (local.get $s3)))))

  ;; The row · the query at $a (returned) and · the query at $b (stored at byte $out), the row read
  ;; once; each sum as `dot` makes it (the same four sums, added in the same order).
  (func (export "dot2") (param $row i32) (param $a i32) (param $b i32) (param $dims i32) (param $out i32) (result f32)
    (local $end i32) (local $v v128) (local $x v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local.set $end (i32.add (local.get $row) (i32.shl (local.get $dims) (i32.const 1))))
    (loop $next
      (local.set $v (v128.load (local.get $row)))
      (local.set $x (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $v))))
      (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $x) (v128.load (local.get $a)))))
      (local.set $b0 (f32x4.add (local.get $b0) (f32x4.mul (local.get $x) (v128.load (local.get $b)))))
      (local.set $x (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $v))))
      (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $x) (v128.load offset=16 (local.get $a)))))
      (local.set $b1 (f32x4.add (local.get $b1) (f32x4.mul (local.get $x) (v128.load offset=16 (local.get $b)))))
      (local.set $v (v128.load offset=16 (local.get $row)))
      (local.set $x (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $v))))
      (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $x) (v128.load offset=32 (local.get $a)))))
      (local.set $b2 (f32x4.add (local.get $b2) (f32x4.mul (local.get $x) (v128.load offset=32 (local.get $b)))))
      (local.set $x (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $v))))
      (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $x) (v128.load offset=48 (local.get $a)))))
      (local.set $b3 (f32x4.add (local.get $b3) (f32x4.mul (local.get $x) (v128.load offset=48 (local.get $b)))))
      (local.set $row (i32.add (local.get $row) (i32.const 32)))
      (local.set $a (i32.add (local.get $a) (i32.const 64)))
      (local.set $b (i32.add (local.get $b) (i32.const 64)))
      (br_if $next (i32.lt_u (local.get $row) (local.get $end))))
    (f32.store (local.get $out) (call $lanes (f32x4.add (f32x4.add (local.get $b0) (local.get $b1)) (f32x4.add (local.get $b2) (local.get $b3)))))
    (call $lanes (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (f32x4.add (local.get $a2) (local.get $a3)))))

;; Four float32 components at $src as int16 steps: round(32767·x) to the nearest, halves up
;; (JavaScript's Math.round: floor(y + 0.5), exact in float64 for a float32 times 32767), in
;; lanes 0–3 of an int32x4.
  (func $steps (param $v v128) (result v128)
    (local $scale v128) (local $half v128)
    (local.set $scale (f64x2.splat (f64.const 32767)))
    (local.set $half (f64x2.splat (f64.const 0.5)))
    (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (i32x4.trunc_sat_f64x2_s_zero
        (f64x2.floor (f64x2.add (f64x2.mul (f64x2.promote_low_f32x4 (local.get $v)) (local.get $scale)) (local.get $half))))
      (i32x4.trunc_sat_f64x2_s_zero
        (f64x2.floor (f64x2.add (f64x2.mul
          (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $v) (local.get $v)))
          (local.get $scale)) (local.get $half))))))

  ;; The float32 vector at byte $src kept as the int16 row at byte $row: each component x as
  ;; round(32767·x), held within ±32767 (NaN as 0), as VectorRows.add did in JavaScript.
  (func (export "put") (param $src i32) (param $row i32) (param $dims i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $row) (i32.shl (local.get $dims) (i32.const 1))))
    (loop $next
      (v128.store (local.get $row)
        (i16x8.max_s
          (i16x8.narrow_i32x4_s (call $steps (v128.load (local.get $src))) (call $steps (v128.load offset=16 (local.get $src))))
          (i16x8.splat (i32.const -32767))))
      (local.set $src (i32.add (local.get $src) (i32.const 32)))
      (local.set $row (i32.add (local.get $row) (i32.const 16)))
      (br_if $next (i32.lt_u (local.get $row) (local.get $end)))))
)
