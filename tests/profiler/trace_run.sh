#!/bin/sh
# The trace plugin in a 4-rank host run (PROF_NRANKS): every rank writes its file into
# WEFT_TRACE_DIR, each parses as JSON (python3 -m json.tool), holds every collective, and the
# merge tool joins them; WEFT_METRICS_DIR's Prometheus files parse and count the collectives
# (check_metrics.py). TRACE_EXPECT_NET=socket: the run goes over the socket net and the
# files hold its net transfers too. TRACE_CASE=trace_exit: the ranks exit without destroying
# their communicators, so the files are written when the plugin is unloaded at exit.
# TRACE_BAD_SETTINGS=1: bad WEFT_TRACE_EVENTS and WEFT_TRACE_MASK warn and keep the defaults.
#   trace_run.sh PROF_TREE PLUGIN MERGE_TOOL CHECKER OUTDIR
set -eu
prof_tree=$1 plugin=$2 merge=$3 checker=$4 out=$5
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
rm -rf "$out" && mkdir -p "$out/ranks" "$out/metrics"
nranks=${PROF_NRANKS:-4}
if [ -n "${TRACE_BAD_SETTINGS:-}" ]; then
  # Bad WEFT_TRACE_EVENTS / WEFT_TRACE_MASK: a WARN naming each and its default, and the run
  # traces with the defaults (the checks below).
  WEFT_TRACE_EVENTS=lots WEFT_TRACE_MASK=0x1g WEFT_METRICS_DIR="$out/metrics" \
    WEFT_TRACE_DIR="$out/ranks" PROF_NRANKS=$nranks \
    "$prof_tree" "${TRACE_CASE:-trace}" "$plugin" 2> "$out/stderr" || { cat "$out/stderr"; exit 1; }
  for want in "WEFT_TRACE_EVENTS=lots: expected an integer in" "WEFT_TRACE_MASK=0x1g: expected"; do
    grep -q "$want.*using the default" "$out/stderr" ||
      { echo "no WARN '$want ... using the default' in:"; cat "$out/stderr"; exit 1; }
  done
else
  WEFT_METRICS_DIR="$out/metrics" WEFT_TRACE_DIR="$out/ranks" PROF_NRANKS=$nranks \
    "$prof_tree" "${TRACE_CASE:-trace}" "$plugin"
fi
for f in "$out"/ranks/weft-trace-*.json; do
  python3 -m json.tool "$f" >/dev/null || { echo "not JSON: $f"; exit 1; }
done
python3 "$merge" -o "$out/merged.json" "$out/ranks"
python3 -m json.tool "$out/merged.json" >/dev/null
python3 "$checker" "$out/ranks" "$nranks" "$out/merged.json" ${TRACE_EXPECT_NET:-}
# the Prometheus files (metrics.c), written with the traces
python3 "$(dirname "$0")/check_metrics.py" "$out/metrics" "$nranks"
