;; Test-only sandbox probe (world mcpward:probe/probe in probe-wit/): a guard that imports WASI
;; and tries to use it. evaluate-tool-call answers deny(code) where code says what happened:
;;   fs    -> "fs_visible" if any preopened directory is visible, else "fs_none"
;;   net   -> "socket_created" if a TCP socket could be created, else "socket_denied"
;;   clock -> "clock_real" if the wall clock reads after 1970, else "clock_frozen"
;;   wait  -> subscribes to a one-second monotonic-clock wait (the host refuses: a trap)
;;   anything else -> allow
(module
  (import "wasi:filesystem/preopens@0.2.9" "get-directories" (func $get_directories (param i32)))
  (import "wasi:sockets/tcp-create-socket@0.2.9" "create-tcp-socket" (func $create_tcp (param i32 i32)))
  (import "wasi:clocks/wall-clock@0.2.9" "now" (func $wall_now (param i32)))
  (import "wasi:clocks/monotonic-clock@0.2.9" "subscribe-duration"
    (func $subscribe_duration (param i64) (result i32)))

  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))

  (data (i32.const 1024) "fs")              ;; 2
  (data (i32.const 1032) "net")             ;; 3
  (data (i32.const 1040) "clock")           ;; 5
  (data (i32.const 1048) "wait")            ;; 4
  (data (i32.const 1056) "fs_visible")      ;; 10
  (data (i32.const 1072) "fs_none")         ;; 7
  (data (i32.const 1088) "socket_created")  ;; 14
  (data (i32.const 1104) "socket_denied")   ;; 13
  (data (i32.const 1120) "clock_real")      ;; 10
  (data (i32.const 1136) "clock_frozen")    ;; 12
  (data (i32.const 1152) "probe result")    ;; 12

  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32)
    (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr
      (i32.and (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
               (i32.sub (i32.const 0) (local.get $align))))
    (global.set $heap (i32.add (local.get $ptr) (local.get $size)))
    (if (i32.gt_u (global.get $heap) (i32.const 65536)) (then unreachable))
    (local.get $ptr))

  (func $reset (param i32) (global.set $heap (i32.const 8192)))

  (func $streq (param $a i32) (param $al i32) (param $b i32) (param $bl i32) (result i32)
    (local $i i32)
    (if (i32.ne (local.get $al) (local.get $bl)) (then (return (i32.const 0))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $al)))
        (if (i32.ne (i32.load8_u (i32.add (local.get $a) (local.get $i)))
                    (i32.load8_u (i32.add (local.get $b) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 1))

  (func $allow (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.store8 (i32.const 20) (i32.const 0))
    (i32.const 16))

  (func $deny (param $cp i32) (param $cl i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.store8 (i32.const 20) (i32.const 1))
    (i32.store (i32.const 24) (local.get $cp))
    (i32.store (i32.const 28) (local.get $cl))
    (i32.store (i32.const 32) (i32.const 1152))
    (i32.store (i32.const 36) (i32.const 12))
    (i32.store8 (i32.const 40) (i32.const 0))
    (i32.const 16))

  (func $decide (param $np i32) (param $nl i32) (result i32)
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1024) (i32.const 2))
      (then
        ;; list<tuple<own<descriptor>, string>> written at 128: (ptr, len)
        (call $get_directories (i32.const 128))
        (if (i32.load (i32.const 132))
          (then (return (call $deny (i32.const 1056) (i32.const 10)))))
        (return (call $deny (i32.const 1072) (i32.const 7)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1032) (i32.const 3))
      (then
        ;; result<own<tcp-socket>, error-code> at 160: discriminant 0 = ok
        (call $create_tcp (i32.const 0) (i32.const 160))
        (if (i32.eqz (i32.load8_u (i32.const 160)))
          (then (return (call $deny (i32.const 1088) (i32.const 14)))))
        (return (call $deny (i32.const 1104) (i32.const 13)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1040) (i32.const 5))
      (then
        ;; datetime {seconds: u64, nanoseconds: u32} at 192
        (call $wall_now (i32.const 192))
        (if (i64.gt_u (i64.load (i32.const 192)) (i64.const 0))
          (then (return (call $deny (i32.const 1120) (i32.const 10)))))
        (return (call $deny (i32.const 1136) (i32.const 12)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1048) (i32.const 4))
      (then (drop (call $subscribe_duration (i64.const 1000000000)))))
    (call $allow))

  (func (export "mcp:security-guard/guard@0.1.0#evaluate-tool-call") (param $args i32) (result i32)
    (call $decide (i32.load (local.get $args)) (i32.load offset=4 (local.get $args))))
  (func (export "mcp:security-guard/guard@0.1.0#evaluate-tools-list")
    (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
    (call $allow))
  (func (export "mcp:security-guard/guard@0.1.0#evaluate-tool-response") (param i32) (result i32)
    (call $allow))
  (func (export "mcp:security-guard/guard@0.1.0#evaluate-prompt-request") (param i32) (result i32)
    (call $allow))
  (func (export "mcp:security-guard/guard@0.1.0#evaluate-resource-request")
    (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
    (call $allow))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-tool-call") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-tools-list") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-tool-response") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-prompt-request") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-resource-request") (param i32)
    (call $reset (local.get 0)))
)
