#!/bin/sh
# weft-perf --explain on 2 host ranks: the decision table follows the results, one row per size
# with an algorithm, a protocol, a channel count, its sequential steps and a predicted time from
# the library, and the PNG plot is written; on 40 ranks the default 8-byte AllReduce is
# logarithmic (steps <= 2*ceil(log2 40) + 4 = 16, the ring's 78); with NCCL_ALGO=OneShot every row names OneShot. Usage: explain_run.sh WEFT_PERF OUTDIR
set -eu
perf=$1
out=$2
mkdir -p "$out"
png="$out/explain.png"
rm -f "$png"
WEFT_DEVICE=host "$perf" all_reduce -np 2 -b 8 -e 1M -f 8 -n 3 -w 1 -c 1 --explain \
  --explain-png "$png" > "$out/explain.txt"
awk '
  /^# explain: all_reduce float sum, 2 ranks/ { ex = 1; next }
  ex && /^ +[0-9]/ {
    rows++
    if ($2 !~ /^(Ring|Tree|RecDoubling|Rabenseifner)$/ || $3 !~ /^(LL|Simple)$/ || $4 < 1 ||
        ($5 != "-" && $5 < 1) || $6 <= 0 || $7 <= 0) bad = bad "\n" $0
  }
  END {
    if (rows != 6) { print "expected 6 explain rows, got " rows; exit 1 }
    if (bad != "") { print "bad explain rows:" bad; exit 1 }
  }' "$out/explain.txt" || { cat "$out/explain.txt"; exit 1; }
grep -q "plot of predicted vs measured written to $png" "$out/explain.txt"
test -s "$png"
head -c 8 "$png" | od -An -c | grep -q 'P   N   G'
# A forced logarithmic algorithm is named as what runs (AllGather's log-step one as Bruck).
NCCL_ALGO=Rabenseifner WEFT_DEVICE=host "$perf" all_reduce -np 3 -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 \
  --explain > "$out/explain_rab.txt"
NCCL_ALGO=allgather:Bruck WEFT_DEVICE=host "$perf" all_gather -np 3 -b 8 -e 64K -f 8 -n 2 -w 1 \
  -c 1 --explain > "$out/explain_bruck.txt"
for f in rab:Rabenseifner bruck:Bruck; do
  awk -v want="${f#*:}" '
    /^# explain: / { ex = 1; next }
    ex && /^ +[0-9]/ { rows++; if ($2 != want) bad = bad "\n" $0 }
    END { if (rows != 5 || bad != "") { print "rows not naming " want ":" bad; exit 1 } }' \
    "$out/explain_${f%%:*}.txt" || { cat "$out/explain_${f%%:*}.txt"; exit 1; }
done
# A forced direct algorithm is named as what runs.
NCCL_ALGO=OneShot WEFT_DEVICE=host "$perf" all_reduce -np 2 -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 \
  --explain > "$out/explain_oneshot.txt"
awk '
  /^# explain: all_reduce float sum, 2 ranks/ { ex = 1; next }
  ex && /^ +[0-9]/ { rows++; if ($2 != "OneShot") bad = bad "\n" $0 }
  END {
    if (rows != 5) { print "expected 5 explain rows with NCCL_ALGO=OneShot, got " rows; exit 1 }
    if (bad != "") { print "rows not naming OneShot:" bad; exit 1 }
  }' "$out/explain_oneshot.txt" || { cat "$out/explain_oneshot.txt"; exit 1; }
echo "explain ok: $(grep -c '' "$out/explain.txt") lines, $(wc -c < "$png") byte plot"
# At scale the default small AllReduce is logarithmic (issue 46): 40 ranks, 8 bytes.
WEFT_DEVICE=host "$perf" all_reduce -np 40 -b 8 -e 8 -n 2 -w 1 -c 1 --explain --explain-png none \
  > "$out/explain_40.txt"
awk '
  /^# explain: all_reduce float sum, 40 ranks/ { ex = 1; next }
  ex && /^ +[0-9]/ { rows++; if ($5 == "-" || $5 > 16) bad = bad "\n" $0 }
  END {
    if (rows != 1) { print "expected 1 explain row at 40 ranks, got " rows; exit 1 }
    if (bad != "") { print "not logarithmic at 40 ranks:" bad; exit 1 }
  }' "$out/explain_40.txt" || { cat "$out/explain_40.txt"; exit 1; }
