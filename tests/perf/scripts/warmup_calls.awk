# Checks the stand-in library's call trace (FAKE_NCCL_TRACE: "pid call count in-place ns", one
# line per call of rank 0, in time order over every process) of a one-collective run with -c 0:
# where weft-perf puts the warm-up.
#   awk -v mode=turn|turnK|turnrep|sweep -v w=W -v n=N -v us=U -f warmup_calls.awk TRACE
# A run is a stretch of calls of one process with the same call, count and in-place flag.
# mode=turn (--vs): the trace holds two processes (library A's and B's rank 0); each size is
#   one run of out-of-place calls, at least W untimed ones and then the N timed ones, directly
#   followed by N in-place calls of the same process and size: nothing of the other library
#   comes between the warm-up and the timing, so the warm-up belongs to the turn. The untimed
#   calls span at least U microseconds (or there are 4096 of them). Both processes time the
#   same sizes, and turns go A B, B A, … (no process runs more than two turns in a row). Each
#   size is K turns of each library (mode=turnK; mode=turn: K = 4, weft-perf's default), in K
#   rounds A B, B A, A B, …: as many rounds of each order. With mode=turnrep (--vs-rep-us), each
#   timing may be repeated, and U is the most passes weft-perf may time: the in-place run is P
#   passes of N calls (1 <= P <= U), the out-of-place run at least W + N calls (its warm-up and
#   passes are not told apart), and at least one timing must have been repeated more than U/16
#   times (so a run capped lower than U fails).
# mode=sweep (no --vs, nccl-tests): one process; first W out-of-place calls of each size in
#   turn (the warm-up sweep), then per size N out-of-place and N in-place calls.
function fail(msg) {
  print "FAIL: warm-up calls: " msg
  bad = 1
}
{
  if (NF < 5) { fail("malformed trace line " NR ": " $0); next }
  if (NR == 1 || $1 != pid[nr] || $2 != call[nr] || $3 != cnt[nr] || $4 != inpl[nr]) {
    nr++
    pid[nr] = $1; call[nr] = $2; cnt[nr] = $3; inpl[nr] = $4; len[nr] = 0
    t0[nr] = $5
  }
  len[nr]++
  # the time of the first call after the untimed ones is known only at the end: keep them all
  at[nr, len[nr]] = $5
}
END {
  if (nr == 0) { fail("no calls traced"); exit 1 }
  if (mode ~ /rep$/) { reps = 1; mode = substr(mode, 1, length(mode) - 3) }
  if (mode ~ /^turn[0-9]*$/) {
    kt = substr(mode, 5) + 0
    if (kt == 0) kt = 4
    least = -1
    for (i = 1; i <= nr; i += 2) {
      if (inpl[i] != 0 || i + 1 > nr || inpl[i + 1] != 1 || pid[i + 1] != pid[i] ||
          cnt[i + 1] != cnt[i] || call[i + 1] != call[i]) {
        fail("run " i " (pid " pid[i] ", " call[i] " count " cnt[i] " in-place " inpl[i] \
             "): not out-of-place calls directly followed by in-place calls of one size")
        break
      }
      warm = len[i] - n
      if (reps) {
        passes = len[i + 1] / n
        if (len[i + 1] % n || passes < 1 || passes > us)
          fail("pid " pid[i] " count " cnt[i] ": " len[i + 1] " in-place calls, want 1 to " us \
               " passes of " n)
        if (passes > most) most = passes
      }
      if (warm < w) # with reps: out-of-place calls beyond one pass (the warm-up, more passes)
        fail("pid " pid[i] " count " cnt[i] ": " warm " untimed calls in the turn, want >= " w)
      span = (at[i, warm + 1] - t0[i]) / 1000
      if (!reps && span < us && warm < 4096)
        fail("pid " pid[i] " count " cnt[i] ": warm-up of " warm " calls took " span \
             " us, want >= " us)
      if (!reps && len[i + 1] != n)
        fail("pid " pid[i] " count " cnt[i] ": " len[i + 1] " in-place calls, want " n)
      if (!(pid[i] in sizes)) npids++
      seq[pid[i], sizes[pid[i]]++] = cnt[i]
      nturns += 0; tpid[nturns] = pid[i]; tcnt[nturns] = cnt[i]; nturns++
      if (least < 0 || warm < least) least = warm
      run_len = (i > 1 && pid[i - 1] == pid[i]) ? run_len + 1 : 1
      if (run_len > 2) fail("pid " pid[i] " ran " run_len " turns in a row")
    }
    if (npids != 2) fail(npids + 0 " processes traced, want 2 (libraries A and B)")
    if (nturns % (2 * kt)) fail(nturns " turns, want " 2 * kt " per size (" kt " rounds)")
    for (j = 0; j + 2 * kt - 1 < nturns && !bad; j += 2 * kt) {
      if (j > 0 && tcnt[j] == tcnt[j - 1]) # one collective: every size differs from the last
        fail("turns " j "-" j + 2 * kt - 1 ": count " tcnt[j] " again: more than " kt \
             " rounds of one size")
      for (m = 0; m < 2 * kt; m++) {
        want = (int(m / 2) % 2 == m % 2) ? tpid[j] : tpid[j + 1] # A B, B A, A B, …
        if (tpid[j] == tpid[j + 1] || tpid[j + m] != want || tcnt[j + m] != tcnt[j]) {
          fail("turns " j "-" j + 2 * kt - 1 ": not one size in " kt " rounds A B, B A, … " \
               "(turn " j + m ": pid " tpid[j + m] " count " tcnt[j + m] ", want pid " want \
               " count " tcnt[j] ")")
          break
        }
      }
    }
    for (p in sizes) {
      if (!first) first = p
      if (sizes[p] != sizes[first])
        fail("pid " p " timed " sizes[p] " sizes, pid " first " " sizes[first])
      for (k = 0; k < sizes[p] && k < sizes[first]; k++)
        if (seq[p, k] != seq[first, k])
          fail("size " k ": count " seq[p, k] " against " seq[first, k])
    }
    if (reps && most * 16 <= us)
      fail("no timing was repeated more than " us / 16 " times (--vs-rep-us): up to " most + 0)
    if (!bad && reps)
      print "timed passes per turn: up to " most "; every turn: " npids " libraries, " \
            sizes[first] / kt " sizes each in " kt " turns, at least " w " + " n \
            " out-of-place calls"
    else if (!bad)
      print "warm-up in every turn: " npids " libraries, " sizes[first] / kt " sizes each in " \
            kt " turns (rounds A B, B A, ...), at least " least " untimed calls (and " us \
            " us) right before each turn's timing"
  } else {
    for (i = 1; i <= nr; i++) if (pid[i] != pid[1]) { fail("more than one process traced"); exit 1 }
    s = 0
    while (s + 1 <= nr && inpl[s + 1] == 0) s++
    s-- # the last out-of-place run before the first in-place one is the first timed size
    if (s < 1) { fail("no warm-up sweep before the timing"); exit 1 }
    for (i = 1; i <= s; i++)
      if (len[i] != w) fail("sweep: count " cnt[i] ": " len[i] " calls, want " w)
    if (nr != 3 * s) fail(nr " runs, want " 3 * s " (" s " sizes)")
    for (i = s + 1; i + 1 <= nr; i += 2) {
      k = (i - s + 1) / 2
      if (inpl[i] != 0 || inpl[i + 1] != 1 || cnt[i] != cnt[i + 1] || cnt[i] != cnt[k])
        fail("timed size " k ": runs out of order (count " cnt[i] ", warmed " cnt[k] ")")
      if (len[i] != n || len[i + 1] != n)
        fail("count " cnt[i] ": " len[i] " out-of-place and " len[i + 1] " in-place calls, want " n)
    }
    if (!bad) print "warm-up sweep once: " s " sizes, " w " calls each, then the timing"
  }
  exit bad
}
