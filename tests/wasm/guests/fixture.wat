;; Test-only guard (core module; tests turn it into a component with wasm-tools).
;; Canonical ABI written by hand for mcp:security-guard@0.1.0.
;;
;; evaluate-tool-call, by tool name:
;;   rm_rf  -> deny(blocked_tool, details {"tool":"rm_rf"})
;;   warn   -> modify add_warning
;;   redact -> modify redact_fields $.secret
;;   fail   -> err("guard refused to decide")
;;   spin   -> loops forever (stopped by the epoch deadline or fuel)
;;   trap   -> unreachable
;;   grow   -> grows memory one page at a time until refused, then err("memory limit reached")
;;   cfg    -> deny(from_config, message = get-config("message")), allow if the key is absent
;;   log    -> host log + record-metric, then allow
;;   badjson-> modify("not json")
;;   anything else -> modify(get-config("call_action")) when set, else allow
;; evaluate-tools-list / evaluate-tool-response: modify(get-config("tools_list_action") /
;;   get-config("response_action")) when set, else allow.
;; evaluate-prompt-request: allow.  evaluate-resource-request: deny(no_resources).
(module
  (import "mcp:security-guard/host@0.1.0" "log" (func $log (param i32 i32 i32)))
  (import "mcp:security-guard/host@0.1.0" "get-config" (func $get_config (param i32 i32 i32)))
  (import "mcp:security-guard/host@0.1.0" "record-metric"
    (func $record_metric (param i32 i32 f64 i32 i32)))

  (memory (export "memory") 2)

  ;; 16: the 36-byte return area; 64: get-config's option<string>; 96: metric labels
  (global $heap (mut i32) (i32.const 65536))

  (data (i32.const 1024) "rm_rf")             ;; 5
  (data (i32.const 1040) "blocked_tool")      ;; 12
  (data (i32.const 1056) "rm_rf is blocked by the fixture guard")  ;; 37
  (data (i32.const 1104) "{\"tool\":\"rm_rf\"}")  ;; 16
  (data (i32.const 1136) "warn")              ;; 4
  (data (i32.const 1152) "{\"type\":\"add_warning\",\"message\":\"fixture warning\"}")  ;; 50
  (data (i32.const 1216) "redact")            ;; 6
  (data (i32.const 1232) "{\"type\":\"redact_fields\",\"paths\":[\"$.secret\"],\"replacement\":\"***\"}")  ;; 65
  (data (i32.const 1312) "fail")              ;; 4
  (data (i32.const 1328) "guard refused to decide")  ;; 23
  (data (i32.const 1360) "spin")              ;; 4
  (data (i32.const 1376) "trap")              ;; 4
  (data (i32.const 1392) "grow")              ;; 4
  (data (i32.const 1408) "memory limit reached")  ;; 20
  (data (i32.const 1440) "cfg")               ;; 3
  (data (i32.const 1456) "message")           ;; 7
  (data (i32.const 1472) "from_config")       ;; 11
  (data (i32.const 1488) "log")               ;; 3
  (data (i32.const 1504) "hello from the fixture guard")  ;; 28
  (data (i32.const 1536) "fixture_calls")     ;; 13
  (data (i32.const 1552) "tool")              ;; 4
  (data (i32.const 1568) "tools_list_action") ;; 17
  (data (i32.const 1600) "response_action")   ;; 15
  (data (i32.const 1616) "no_resources")      ;; 12
  (data (i32.const 1632) "resources are not readable here")  ;; 31
  (data (i32.const 1664) "badjson")           ;; 7
  (data (i32.const 1680) "not json")          ;; 8
  (data (i32.const 1696) "call_action")       ;; 11

  ;; bump allocator; post-return resets it, so each call starts from an empty heap
  (func $cabi_realloc (export "cabi_realloc") (param $old i32) (param $old_size i32)
    (param $align i32) (param $size i32) (result i32)
    (local $ptr i32) (local $end i32) (local $pages i32)
    (local.set $ptr
      (i32.and (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
               (i32.sub (i32.const 0) (local.get $align))))
    (local.set $end (i32.add (local.get $ptr) (local.get $size)))
    (local.set $pages (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable))))
    (if (local.get $old_size)
      (then (memory.copy (local.get $ptr) (local.get $old) (local.get $old_size))))
    (global.set $heap (local.get $end))
    (local.get $ptr))

  (func $reset (param i32) (global.set $heap (i32.const 65536)))

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

  (func $deny (param $cp i32) (param $cl i32) (param $mp i32) (param $ml i32)
    (param $dp i32) (param $dl i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.store8 (i32.const 20) (i32.const 1))
    (i32.store (i32.const 24) (local.get $cp))
    (i32.store (i32.const 28) (local.get $cl))
    (i32.store (i32.const 32) (local.get $mp))
    (i32.store (i32.const 36) (local.get $ml))
    (if (i32.lt_s (local.get $dl) (i32.const 0))
      (then (i32.store8 (i32.const 40) (i32.const 0)))
      (else
        (i32.store8 (i32.const 40) (i32.const 1))
        (i32.store (i32.const 44) (local.get $dp))
        (i32.store (i32.const 48) (local.get $dl))))
    (i32.const 16))

  (func $modify (param $p i32) (param $l i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.store8 (i32.const 20) (i32.const 2))
    (i32.store (i32.const 24) (local.get $p))
    (i32.store (i32.const 28) (local.get $l))
    (i32.const 16))

  (func $err (param $p i32) (param $l i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 1))
    (i32.store (i32.const 20) (local.get $p))
    (i32.store (i32.const 24) (local.get $l))
    (i32.const 16))

  ;; modify(config[key]) when the key is set, else allow
  (func $modify_from_config (param $kp i32) (param $kl i32) (result i32)
    (call $get_config (local.get $kp) (local.get $kl) (i32.const 64))
    (if (result i32) (i32.load8_u (i32.const 64))
      (then (call $modify (i32.load (i32.const 68)) (i32.load (i32.const 72))))
      (else (call $allow))))

  (func $decide_call (param $np i32) (param $nl i32) (result i32)
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1024) (i32.const 5))
      (then (return (call $deny (i32.const 1040) (i32.const 12) (i32.const 1056) (i32.const 37)
                                (i32.const 1104) (i32.const 16)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1136) (i32.const 4))
      (then (return (call $modify (i32.const 1152) (i32.const 50)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1216) (i32.const 6))
      (then (return (call $modify (i32.const 1232) (i32.const 65)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1312) (i32.const 4))
      (then (return (call $err (i32.const 1328) (i32.const 23)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1360) (i32.const 4))
      (then (loop $forever (br $forever))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1376) (i32.const 4))
      (then unreachable))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1392) (i32.const 4))
      (then
        (block $refused
          (loop $more
            (br_if $refused (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
            (br $more)))
        (return (call $err (i32.const 1408) (i32.const 20)))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1440) (i32.const 3))
      (then
        (call $get_config (i32.const 1456) (i32.const 7) (i32.const 64))
        (if (i32.load8_u (i32.const 64))
          (then (return (call $deny (i32.const 1472) (i32.const 11)
                                    (i32.load (i32.const 68)) (i32.load (i32.const 72))
                                    (i32.const 0) (i32.const -1)))))
        (return (call $allow))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1488) (i32.const 3))
      (then
        (call $log (i32.const 2) (i32.const 1504) (i32.const 28))
        ;; labels: [("tool", "log")]
        (i32.store (i32.const 96) (i32.const 1552))
        (i32.store (i32.const 100) (i32.const 4))
        (i32.store (i32.const 104) (i32.const 1488))
        (i32.store (i32.const 108) (i32.const 3))
        (call $record_metric (i32.const 1536) (i32.const 13) (f64.const 1) (i32.const 96) (i32.const 1))
        (return (call $allow))))
    (if (call $streq (local.get $np) (local.get $nl) (i32.const 1664) (i32.const 7))
      (then (return (call $modify (i32.const 1680) (i32.const 8)))))
    (call $modify_from_config (i32.const 1696) (i32.const 11)))

  (func (export "mcp:security-guard/guard@0.1.0#evaluate-tools-list")
    (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
    (call $modify_from_config (i32.const 1568) (i32.const 17)))

  ;; 18 flat params > 16: the host passes one pointer to (tool-name, arguments, context)
  (func (export "mcp:security-guard/guard@0.1.0#evaluate-tool-call") (param $args i32) (result i32)
    (call $decide_call (i32.load (local.get $args)) (i32.load offset=4 (local.get $args))))

  (func (export "mcp:security-guard/guard@0.1.0#evaluate-tool-response") (param $args i32) (result i32)
    (call $modify_from_config (i32.const 1600) (i32.const 15)))

  (func (export "mcp:security-guard/guard@0.1.0#evaluate-prompt-request") (param $args i32) (result i32)
    (call $allow))

  (func (export "mcp:security-guard/guard@0.1.0#evaluate-resource-request")
    (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
    (call $deny (i32.const 1616) (i32.const 12) (i32.const 1632) (i32.const 31)
                (i32.const 0) (i32.const -1)))

  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-tools-list") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-tool-call") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-tool-response") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-prompt-request") (param i32)
    (call $reset (local.get 0)))
  (func (export "cabi_post_mcp:security-guard/guard@0.1.0#evaluate-resource-request") (param i32)
    (call $reset (local.get 0)))
)
