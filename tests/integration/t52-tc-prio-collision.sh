#!/usr/bin/env bash
# t52: two pin directories whose TC priorities collide (issue 26, minor
# finding; lib/instance.c derives the priority from an FNV-1a hash of the
# pin directory, 4096 values). Instance A is SIGKILLed and leaves its filter
# on lo, as it does whenever spliced flows must survive. Instance B, with
# another pin directory that hashes to the same priority, used to take A's
# filter over with REPLACE, cutting A's kept flows from their translation.
#   1 B refuses to start with one line naming the collision and both fixes;
#     A's filter on lo is untouched (same program id);
#   2 after `cleanup --pin-dir A`, B starts; a restart of B (same pin dir)
#     still takes over its own filter.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t52 "TC priority collisions"
t_setup t52

PIN_A=$(tc_pindir prio-a)
# A pin directory for B whose priority equals A's: FNV-1a 32 of the path, mod 4096.
PIN_B=$(python3 - "$PIN_A" <<'EOF'
import sys
def fnv(s):
    h = 2166136261
    for c in s.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return h
a = sys.argv[1]
for i in range(1, 1000000):
    b = "%s-b%d" % (a, i)
    if fnv(b) % 4096 == fnv(a) % 4096:
        print(b)
        break
EOF
)
PREF=$(python3 -c 'import sys
h = 2166136261
for c in sys.argv[1].encode(): h = ((h ^ c) * 16777619) & 0xffffffff
print(0x4e00 + h % 4096)' "$PIN_A")
cleanup_push "rm -rf '$PIN_B'"

# lo_prog: the program id of the filter at PREF on lo ingress, empty when none.
lo_prog() {
	tc -n "$TOPO_PROXY" filter show dev lo ingress 2>/dev/null | grep "pref $PREF " | grep -o ' id [0-9]*' | head -1 |
		awk '{print $2}'
}

t_require up_start
case_begin "1 B (pin dir hashing to A's priority $PREF) refuses to take over A's filter"
t_require tc_mmp_start "$PIN_A" "127.0.0.1:$PROXY_PORT"
prog_a=$(lo_prog)
[[ -n $prog_a ]] || case_fail "A has no filter at pref $PREF on lo: $(tc -n "$TOPO_PROXY" filter show dev lo ingress | head -2)"
MMP_RUNNING=0
kill -KILL "$MMP_PID"
wait "$MMP_PID" 2>/dev/null
out=$(ns_exec "$TOPO_PROXY" timeout 20 "$MMP_BIN" run -l "127.0.0.1:$((PROXY_PORT + 1))" -4 "127.0.0.1:$UP_PORT" \
	-6 "[::1]:$UP_PORT" --engine tc --pin-dir "$PIN_B" 2>&1)
rc=$?
((rc != 0 && rc != 124)) || case_fail "B started (exit $rc), expected a refusal"
line=$(grep -m1 'not this instance' <<<"$out")
[[ -n $line ]] || case_fail "no line naming the collision: $(grep -v libbpf <<<"$out" | tail -2 | tr '\n' ' ')"
grep -q -- '--pin-dir' <<<"$line" && grep -q 'cleanup' <<<"$line" || case_fail "the line does not name both fixes: $line"
[[ $(lo_prog) == "$prog_a" ]] || case_fail "A's filter (prog $prog_a) was replaced by prog $(lo_prog)"
[[ -n $(tc_pins "$PIN_B") ]] && case_fail "B left pins: $(tc_pins "$PIN_B" | head -2 | tr '\n' ' ')"
case_note "${line#*tc engine: }"
case_end

case_begin "2 after cleanup of A, B starts, and takes over its own filter on restart"
out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN_A" 2>&1) || case_fail "cleanup A: $out"
[[ -z $(lo_prog) ]] || case_fail "cleanup left A's filter"
if tc_mmp_start "$PIN_B" "127.0.0.1:$PROXY_PORT"; then
	prog_b=$(lo_prog)
	MMP_RUNNING=0
	kill -KILL "$MMP_PID"
	wait "$MMP_PID" 2>/dev/null
	if tc_mmp_start "$PIN_B" "127.0.0.1:$PROXY_PORT"; then
		[[ -n $(lo_prog) && $(lo_prog) != "$prog_b" ]] || case_fail "B's restart did not replace its own filter"
		echo_via_proxy "203.0.113.7:30001" "198.51.100.1:443"
		mmp_stop
	else
		case_fail "B's restart: $MMP_START_ERR"
	fi
else
	case_fail "B: $MMP_START_ERR"
fi
ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN_B" >/dev/null 2>&1
case_end

case_lifecycle
t_finish
