;; wat-tool-blocklist: deny tools/call for the tool names listed in wasm_config.blocked_tools
;; (comma-separated, e.g. "delete_file,drop_table"); allow everything else.
;;
;; A core module with the canonical ABI of mcp:security-guard@0.1.0 written by hand; build it with
;;   wasm-tools parse guard.wat -o guard.core.wasm
;;   wasm-tools component embed WIT_DIR --world security-guard guard.core.wasm -o guard.embed.wasm
;;   wasm-tools component new guard.embed.wasm -o wat-tool-blocklist.wasm
;; where WIT_DIR holds the contract (`mcpward guard wit > WIT_DIR/guard.wit`).
(module
  (import "mcp:security-guard/host@0.1.0" "log" (func $log (param i32 i32 i32)))
  (import "mcp:security-guard/host@0.1.0" "get-config" (func $get_config (param i32 i32 i32)))

  (memory (export "memory") 1)
  ;; 16: return area (36 bytes); 64: get-config's option<string>; heap from 4096
  (global $heap (mut i32) (i32.const 4096))

  (data (i32.const 1024) "blocked_tools")                 ;; 13
  (data (i32.const 1040) "blocked_tool")                  ;; 12
  (data (i32.const 1056) "this tool is on the guard's block list")  ;; 38
  (data (i32.const 1104) "denied a blocked tool")         ;; 21

  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32)
    (param $size i32) (result i32)
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

  ;; the heap only holds one call's arguments and config strings: start over after each call
  (func $reset (param i32) (global.set $heap (i32.const 4096)))

  (func $allow (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))   ;; result: ok
    (i32.store8 (i32.const 20) (i32.const 0))   ;; decision: allow
    (i32.const 16))

  (func $deny_blocked (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))   ;; result: ok
    (i32.store8 (i32.const 20) (i32.const 1))   ;; decision: deny
    (i32.store (i32.const 24) (i32.const 1040))
    (i32.store (i32.const 28) (i32.const 12))
    (i32.store (i32.const 32) (i32.const 1056))
    (i32.store (i32.const 36) (i32.const 38))
    (i32.store8 (i32.const 40) (i32.const 0))   ;; details: none
    (i32.const 16))

  ;; is [name, name+len) one of the comma-separated entries of [list, list+list_len)?
  (func $listed (param $name i32) (param $len i32) (param $list i32) (param $list_len i32) (result i32)
    (local $start i32) (local $i i32) (local $j i32) (local $seg i32)
    (block $done
      (loop $entries
        (br_if $done (i32.gt_u (local.get $start) (local.get $list_len)))
        ;; find the end of this entry
        (local.set $i (local.get $start))
        (block $end
          (loop $scan
            (br_if $end (i32.ge_u (local.get $i) (local.get $list_len)))
            (br_if $end (i32.eq (i32.load8_u (i32.add (local.get $list) (local.get $i))) (i32.const 44)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $scan)))
        (local.set $seg (i32.sub (local.get $i) (local.get $start)))
        (if (i32.eq (local.get $seg) (local.get $len))
          (then
            (local.set $j (i32.const 0))
            (block $differ
              (loop $cmp
                (if (i32.ge_u (local.get $j) (local.get $len)) (then (return (i32.const 1))))
                (br_if $differ
                  (i32.ne (i32.load8_u (i32.add (local.get $name) (local.get $j)))
                          (i32.load8_u (i32.add (local.get $list)
                                                (i32.add (local.get $start) (local.get $j))))))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $cmp)))))
        (local.set $start (i32.add (local.get $i) (i32.const 1)))
        (br $entries)))
    (i32.const 0))

  (func $decide (param $name i32) (param $len i32) (result i32)
    (call $get_config (i32.const 1024) (i32.const 13) (i32.const 64))
    (if (i32.eqz (i32.load8_u (i32.const 64))) (then (return (call $allow))))
    (if (call $listed (local.get $name) (local.get $len) (i32.load (i32.const 68)) (i32.load (i32.const 72)))
      (then
        (call $log (i32.const 2) (i32.const 1104) (i32.const 21))   ;; level info
        (return (call $deny_blocked))))
    (call $allow))

  ;; (tool-name, arguments, context) is 18 flat values, so it arrives as one pointer
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
