#!/usr/bin/env bash
# t39: --metrics (Prometheus) and stats --json.
#   39a GET /metrics: promtool check metrics passes, python3-prometheus-client parses it
#   39b values move as traffic moves (accepted, active, tc hand-offs + latency histogram)
#   39c any other path is a 404
#   39d stats --json is valid JSON (python3 -m json.tool) with the documented keys
# mmproxy-bpf only.
source "$(dirname "$0")/lib.sh"
t_setup t39

if ! is_bpf; then
	case_begin "metrics"
	case_skip "go-mmproxy has no metrics endpoint"
	t_finish
fi
METRICS=127.0.0.1:9814
# Debian's python3-prometheus-client lives in the system interpreter (a pyenv python3 may come first on PATH).
PY=${MMP_PYTHON:-/usr/bin/python3}

scrape() { ns_exec "$TOPO_PROXY" curl -s -o "$1" -w '%{http_code}' "http://$METRICS${2:-/metrics}"; }

# value FILE NAME [LABELS]: the sample's value, parsed by python3-prometheus-client.
value() {
	"$PY" - "$@" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
path, name = sys.argv[1], sys.argv[2]
want = dict(kv.split("=", 1) for kv in sys.argv[3].split(",")) if len(sys.argv) > 3 else {}
for fam in text_string_to_metric_families(open(path).read()):
    for s in fam.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in want.items()):
            print(int(s.value)); sys.exit(0)
print("missing"); sys.exit(1)
PY
}

t_require up_start
t_require mmp_start --listeners 2 --metrics "$METRICS"

case_begin "39a /metrics passes promtool and parses with prometheus_client"
code=$(scrape "$T_TMP/m1")
[[ $code == 200 ]] || case_fail "GET /metrics: HTTP $code"
out=$(promtool check metrics <"$T_TMP/m1" 2>&1) || case_fail "promtool: $(head -3 <<<"$out" | tr '\n' ' ')"
[[ -n $out ]] && case_note "promtool: $(head -1 <<<"$out")"
n=$("$PY" -c 'import sys
from prometheus_client.parser import text_string_to_metric_families as p
print(len(list(p(open(sys.argv[1]).read()))))' "$T_TMP/m1" 2>&1) || case_fail "prometheus_client: $n"
grep -v '^#' "$T_TMP/m1" | grep -v '^mmproxy_' | head -1 | grep -q . && case_fail "a series not named mmproxy_*"
case_note "$n metric families"
case_end

case_begin "39b values move with traffic"
a0=$(value "$T_TMP/m1" mmproxy_connections_accepted_total)
h0=$(value "$T_TMP/m1" mmproxy_handoff_duration_seconds_count)
for i in 1 2 3 4 5; do
	next_port p
	echo_via_proxy "203.0.113.$i:$p" "203.0.113.1:443" || break
done
sleep 1.5 # the TCP totals are published once a second
scrape "$T_TMP/m2" >/dev/null
a1=$(value "$T_TMP/m2" mmproxy_connections_accepted_total)
h1=$(value "$T_TMP/m2" mmproxy_handoff_duration_seconds_count)
((a1 >= a0 + 5)) || case_fail "accepted went $a0 -> $a1 after 5 connections"
if [[ $MMP_ENGINE == tc ]]; then
	s1=$(value "$T_TMP/m2" mmproxy_handoffs_total engine=tc,outcome=spliced)
	((h1 > h0)) || case_fail "hand-off histogram count $h0 -> $h1 with engine tc"
	case_note "tc spliced $s1, histogram count $h0 -> $h1"
fi
case_note "accepted $a0 -> $a1"
case_end

case_begin "39c other paths are 404"
code=$(scrape "$T_TMP/other" /other)
[[ $code == 404 ]] || case_fail "GET /other: HTTP $code"
code=$(scrape "$T_TMP/other" /)
[[ $code == 404 ]] || case_fail "GET /: HTTP $code"
case_end

case_begin "39d stats --json is valid JSON with the documented keys"
ns_exec "$TOPO_PROXY" "$MMP_BIN" stats --json --pin-dir "$MMP_PINDIR" >"$T_TMP/s.json" 2>"$T_TMP/s.err" ||
	case_fail "stats --json failed: $(head -2 "$T_TMP/s.err")"
python3 -m json.tool "$T_TMP/s.json" >/dev/null 2>"$T_TMP/j.err" || case_fail "json.tool: $(head -2 "$T_TMP/j.err")"
keys=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(",".join(sorted(d)))' "$T_TMP/s.json")
[[ $keys == "allowed_subnets,pin_dir,sockmap,tc,tcp,udp,version,xdp" ]] || case_fail "top-level keys: $keys"
acc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tcp"]["accepted"])' "$T_TMP/s.json")
((acc >= 5)) || case_fail "tcp.accepted is $acc"
case_note "tcp.accepted $acc"
case_end

mmp_stop
case_lifecycle
t_finish
