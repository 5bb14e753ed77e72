#!/bin/sh
# Forced-choice sweep: the measurement behind docs/tuning.md's calibration and its 1.25x table.
#
# For each repetition, runs weft-perf once per choice (the model's own and every forced
# NCCL_ALGO/NCCL_PROTO pair), interleaved and rotated so that load on the machine hits every
# choice alike, and keeps the out-of-place time of each size. Then prints, per size, the median time of every
# choice, the best forced choice, the model's pick (from its own run's --explain table when the
# library has it), pick/best (the forced median of the model's pick over the best forced median:
# the quality of the choice, free of run-to-run noise between the model's run and the others)
# and model/best (the model's own run over the best forced median).
#
# Usage: sweep.sh [-r REPS] [-p PERF] [-c COLL] [-b MIN] [-e MAX] [-n ITERS] [-N RANKS]
#                 [-x CHOICES]
#   CHOICES: space-separated ALGO/PROTO pairs (default "Ring/Simple Ring/LL Tree/Simple Tree/LL";
#   Tree is dropped for collectives other than all_reduce). Extra environment (NCCL_SHM_DISABLE,
#   WEFT_*) passes through to weft-perf. Raw times go to $SWEEP_RAW (default sweep.raw).
set -eu
reps=5
perf=${WEFT_PERF:-build/bin/weft-perf}
coll=all_reduce
minb=8
maxb=64M
iters=20
nranks=2
choices="Ring/Simple Ring/LL Tree/Simple Tree/LL"
while getopts r:p:c:b:e:n:N:x: opt; do
  case $opt in
    r) reps=$OPTARG ;;
    p) perf=$OPTARG ;;
    c) coll=$OPTARG ;;
    b) minb=$OPTARG ;;
    e) maxb=$OPTARG ;;
    n) iters=$OPTARG ;;
    N) nranks=$OPTARG ;;
    x) choices=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
case $coll in
  all_reduce | allreduce) ;;
  *) choices=$(for c in $choices; do case $c in Tree/*) ;; *) printf '%s ' "$c" ;; esac; done) ;;
esac
raw=${SWEEP_RAW:-sweep.raw}
: > "$raw"
explain=""
"$perf" --help 2>/dev/null | grep -q -- --explain && explain="--explain --explain-png none"
run() { # label, then env assignments
  label=$1
  shift
  # shellcheck disable=SC2086
  env "$@" "$perf" "$coll" -np "$nranks" -b "$minb" -e "$maxb" -f 2 -n "$iters" -w 2 -c 0 $explain \
      2>/dev/null |
    awk -v label="$label" '
      /^# explain/ { ex = 1; next }
      ex && /^ +[0-9]/ { print label, $1, "pick", $2 "/" $3; next }
      !ex && /^ +[0-9]/ { print label, $1, "time", $6 }' >> "$raw"
}
# Each repetition runs every choice once, starting one further along the list than the last
# repetition did, so no choice always runs first (right after the longest run) or last.
all="model $choices"
nall=$(echo "$all" | wc -w)
i=0
while [ "$i" -lt "$reps" ]; do
  k=0
  while [ "$k" -lt "$nall" ]; do
    c=$(echo "$all" | awk -v n=$(( (i + k) % nall + 1 )) '{ print $n }')
    if [ "$c" = model ]; then
      run model
    else
      run "$c" NCCL_ALGO="${c%/*}" NCCL_PROTO="${c#*/}"
    fi
    k=$((k + 1))
  done
  i=$((i + 1))
  echo "sweep: repetition $i of $reps done" >&2
done
awk -v choices="model $choices" '
  function median(key,   n, i, j, t, a) {
    n = cnt[key]
    for (i = 1; i <= n; i++) a[i] = val[key, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  $3 == "time" { k = $1 SUBSEP $2; val[k, ++cnt[k]] = $4; if (!($2 in seen)) { seen[$2] = 1; sizes[++ns] = $2 } }
  $3 == "pick" && $1 == "model" { pick[$2] = $4 }
  END {
    nc = split(choices, ch, " ")
    printf "%10s", "size"
    for (c = 1; c <= nc; c++) printf " %12s", ch[c]
    printf "  %-12s %-12s %9s %9s\n", "best", "model-pick", "pick/best", "model/best"
    worst = 0; worst_run = 0
    for (s = 1; s <= ns; s++) {
      sz = sizes[s]; best = ""; bt = 0; pt = 0
      printf "%10s", sz
      for (c = 1; c <= nc; c++) {
        k = ch[c] SUBSEP sz
        if (!cnt[k]) { printf " %12s", "-"; m[c] = 0; continue }
        m[c] = median(k); printf " %12.2f", m[c]
        if (c > 1 && (best == "" || m[c] < bt)) { best = ch[c]; bt = m[c] }
        if (c > 1 && (sz in pick) && ch[c] == pick[sz]) pt = m[c]
      }
      r = bt > 0 && pt > 0 ? pt / bt : 0
      rr = bt > 0 ? m[1] / bt : 0
      if (r > worst) worst = r
      if (rr > worst_run) worst_run = rr
      rs = (r > 0) ? sprintf("%.2f", r) : "-"
      printf "  %-12s %-12s %9s %9.2f\n", best, ((sz in pick) ? pick[sz] : "?"), rs, rr
    }
    printf "worst pick/best (the model\047s choice, measured forced): %.2f\n", worst
    printf "worst model/best (the model\047s own run): %.2f\n", worst_run
  }' "$raw"
