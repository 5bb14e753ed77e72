/* Prints what the team functions of an nccl_device.h answer on random inputs, one line per
 * call, for a seed given as argv[1]. Built twice: against NVIDIA's 2.30.7 header (whose team
 * functions are host-callable) and against weft's; devcomm_team_check.cmake compares the two
 * outputs line by line. Inputs stay small, so no call overflows or divides by zero. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nccl_device.h>

static uint64_t state;
static int pick(int lo, int hi) { /* uniform in [lo, hi] */
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return lo + (int)(state % (uint64_t)(hi - lo + 1));
}
static int nonzero(int lo, int hi) {
  int v;
  do v = pick(lo, hi);
  while (v == 0);
  return v;
}
static ncclTeam randomTeam() {
  ncclTeam t;
  t.nRanks = pick(1, 16);
  t.rank = pick(0, t.nRanks - 1);
  t.stride = nonzero(-4, 8);
  return t;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s seed\n", argv[0]);
    return 2;
  }
  state = strtoull(argv[1], nullptr, 10) | 1;
  for (int i = 0; i < 5000; i++) {
    ncclTeam a = randomTeam(), b = randomTeam();
    int brank = pick(-4, 20);
    printf("member %d rankToTeam %d\n", (int)ncclTeamRankIsMember(a, b, brank),
           ncclTeamRankToTeam(a, b, brank));

    int innerSize = pick(1, 8);
    ncclTeam in = ncclTeamInnerFactor(a, innerSize), out = ncclTeamOuterFactor(a, innerSize);
    printf("inner %d %d %d outer %d %d %d\n", in.nRanks, in.rank, in.stride, out.nRanks,
           out.rank, out.stride);

    ncclTeam parent, subset;
    parent.stride = pick(1, 3);
    parent.nRanks = pick(1, 32);
    parent.rank = pick(0, parent.nRanks - 1);
    subset.stride = parent.stride * nonzero(-3, 4);
    subset.nRanks = pick(1, 8);
    subset.rank = pick(0, subset.nRanks - 1);
    printf("difference %d\n", ncclTeamRankInDifference(parent, subset, pick(0, 24)));

    ncclDevComm comm;
    memset(&comm, 0, sizeof comm);
    comm.lsaSize = pick(1, 8);
    comm.nRanks = comm.lsaSize * pick(1, 8);
    comm.rank = pick(0, comm.nRanks - 1);
    comm.lsaRank = comm.rank % comm.lsaSize;
    comm.nRanks_rcp32 = (uint32_t)(UINT64_C(0x100000000) / (uint64_t)comm.nRanks);
    comm.lsaSize_rcp32 = (uint32_t)(UINT64_C(0x100000000) / (uint64_t)comm.lsaSize);
    ncclTeam w = ncclTeamWorld(comm), l = ncclTeamLsa(comm), r = ncclTeamRail(comm);
    printf("world %d %d %d lsa %d %d %d rail %d %d %d\n", w.nRanks, w.rank, w.stride, l.nRanks,
           l.rank, l.stride, r.nRanks, r.rank, r.stride);
    int tr = pick(0, 7);
    printf("toWorld %d toLsa %d offset %zu\n", ncclTeamRankToWorld(comm, r, tr),
           ncclTeamRankToLsa(comm, l, tr), ncclGetResourceBufferOffset((uint32_t)pick(0, 1000)));
  }
  return 0;
}
