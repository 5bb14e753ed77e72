#!/usr/bin/env python3
"""RAS service tests (core/ras): a host-mode job of separate rank processes (ras_job), asked
by weft-ras and by raw protocol clients.
  ras_test.py RAS_JOB WEFT_RAS SCENARIO   (healthy | stopped | killed | init | hostile)
Each run takes a free port for NCCL_RAS_ADDR and one for NCCL_COMM_ID, so tests may run in
parallel. Exit 0: pass, 1: fail, 77: skip."""
import json, os, signal, socket, subprocess, sys, tempfile, time

JOB, CLIENT, SCENARIO = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)
    return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


RAS_PORT, ID_PORT = free_port(), free_port()
ENV = dict(os.environ, WEFT_DEVICE="host", NCCL_RAS_ADDR="127.0.0.1:%d" % RAS_PORT,
           NCCL_COMM_ID="127.0.0.1:%d" % ID_PORT, WEFT_TIMEOUT_MS="60000")
DIR = tempfile.mkdtemp(prefix="weft-ras-")
PROCS = []


def start(nranks, ranks, secs=60, wrap=None):
    for r in ranks:
        cmd = [JOB, str(r), str(nranks), DIR, str(secs)]
        PROCS.append(subprocess.Popen(wrap(r, cmd) if wrap else cmd, env=ENV))


def netns_setup():
    """Two hosts: network, UTS and mount namespaces (a veth pair, host names ras-host-a and
    ras-host-b, each its own /dev/shm so that neither sees the other's status boards)."""
    import shutil
    if os.geteuid() != 0:
        print("SKIP: needs root for network namespaces")
        sys.exit(77)
    for t in ("ip", "unshare", "nsenter", "mount", "hostname"):
        if not shutil.which(t):
            print("SKIP: needs", t)
            sys.exit(77)
    tag = "wras%d" % os.getpid()
    nss = [tag + "a", tag + "b"]
    for ns in nss:
        if subprocess.run(["ip", "netns", "add", ns]).returncode != 0:
            print("SKIP: cannot create network namespaces")
            sys.exit(77)
        CLEANUP.append(["ip", "netns", "del", ns])
    cmds = [["ip", "link", "add", "wr0", "netns", nss[0], "type", "veth", "peer", "name", "wr0",
             "netns", nss[1]],
            ["ip", "-n", nss[0], "addr", "add", "10.78.0.1/24", "dev", "wr0"],
            ["ip", "-n", nss[1], "addr", "add", "10.78.0.2/24", "dev", "wr0"]]
    for ns in nss:
        cmds += [["ip", "-n", ns, "link", "set", "lo", "up"], ["ip", "-n", ns, "link", "set", "wr0", "up"]]
    for c in cmds:
        if subprocess.run(c).returncode != 0:
            sys.exit(check(False, "netns setup: %s" % " ".join(c)) or 1)
    return nss


CLEANUP = []
# Run inside host a against host b's RAS peer port (argv: host port): 300 idle connections,
# 50 with garbage, then one well-formed question with a wrong key, which must get no rows (the
# connection closed, or the answer "no such communicator").
FLOOD = r"""
import os, socket, struct, sys
host, port = sys.argv[1], int(sys.argv[2])
idle = []
for i in range(300):
    s = socket.socket(); s.settimeout(2); s.connect((host, port)); idle.append(s)
for i in range(50):
    s = socket.socket(); s.settimeout(2); s.connect((host, port))
    s.sendall(os.urandom(4096)); s.close()
s = socket.create_connection((host, port), timeout=5)
s.sendall(struct.pack("<QQQii", 0x7765667472617331, 0x1234, 0x5678, 8, 2))
try:
    got = s.recv(64)
    print("wrong key: no rows" if got == b"" or len(got) >= 16 and struct.unpack("<Qii", got[:16])[1:] == (1, 0)
          else "wrong key: answered %r" % got[:16])
except socket.timeout:
    print("wrong key: no answer in 5 s")
for s in idle:
    s.close()
print("flood: %d idle, 50 garbage" % len(idle))
"""
HOLDERS = []  # processes that hold a host's namespaces: killed last


def pids(nranks, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        got = {}
        for r in range(nranks):
            try:
                with open(os.path.join(DIR, "rank%d.pid" % r)) as f:
                    got[r] = int(f.read())
            except (OSError, ValueError):
                pass
        if len(got) == nranks:
            return got
        time.sleep(0.1)
    sys.exit(check(False, "all %d ranks finished init within %d s" % (nranks, timeout)) or 1)


NETNS = []  # the twohost scenario: the namespace weft-ras runs in


def ask(fmt="json", verbose=False, timeout=20):
    cmd = [CLIENT, "-p", str(RAS_PORT), "-h", "127.0.0.1", "-f", fmt] + (["-v"] if verbose else [])
    if NETNS:
        cmd = ["ip", "netns", "exec", NETNS[0]] + cmd
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    took = time.time() - t0
    if p.returncode != 0:
        print(p.stderr)
    check(p.returncode == 0, "weft-ras -f %s answers (%.2f s)" % (fmt, took))
    if fmt == "json":
        try:
            return json.loads(p.stdout), took
        except ValueError as e:
            print(p.stdout)
            check(False, "the JSON report parses: %s" % e)
            return None, took
    return p.stdout, took


def raw(lines, read_until_eof=False):
    """Send protocol lines one at a time; return the replies."""
    for attempt in range(20):  # a stopped process's socket may take this connection
        s = socket.create_connection(("127.0.0.1", RAS_PORT), timeout=1)
        out = []
        try:
            for ln in lines:
                s.sendall(ln.encode() + b"\n")
                if read_until_eof:
                    continue
                buf = b""
                while not buf.endswith(b"\n"):
                    c = s.recv(1)
                    if not c:
                        break
                    buf += c
                out.append(buf.decode())
            if read_until_eof:
                s.settimeout(10)
                buf = b""
                while True:
                    c = s.recv(65536)
                    if not c:
                        break
                    buf += c
                out.append(buf.decode())
            return out
        except socket.timeout:
            continue
        finally:
            s.close()
    return None


def socket_owner(client_port, pids):
    """The pid among pids whose socket is the server side of our connection from client_port."""
    inodes = set()
    for tab in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(tab).read().split("\n")[1:]
        except OSError:
            continue
        for ln in lines:
            f = ln.split()
            if len(f) > 9 and int(f[1].split(":")[1], 16) == RAS_PORT and \
                    int(f[2].split(":")[1], 16) == client_port:
                inodes.add("socket:[%s]" % f[9])
    for pid in pids:
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in inodes:
                    return pid
        except OSError:
            pass
    return None


def monitor(pid_of):
    """A raw MONITOR client (text); returns the socket and the pid that serves it."""
    for attempt in range(20):
        s = socket.create_connection(("127.0.0.1", RAS_PORT), timeout=1)
        try:
            s.sendall(b"CLIENT PROTOCOL 2\n")
            if not s.recv(64).startswith(b"SERVER PROTOCOL"):
                raise socket.timeout
            s.sendall(b"MONITOR\n")
            if not s.recv(64).startswith(b"OK"):
                raise socket.timeout
        except socket.timeout:
            s.close()
            continue
        return s, socket_owner(s.getsockname()[1], pid_of.values())
    sys.exit(check(False, "a MONITOR client was greeted") or 1)


def comm_of(rep, nranks):
    comms = rep["communicators"] if rep else []
    check(len(comms) == 1 and rep["communicators_count"] == 1, "one communicator reported")
    return comms[0] if comms else None


NCCL_FIELDS = ["nccl_version", "cuda_runtime_version", "cuda_driver_version", "timestamp",
               "communicators_count", "communicators", "ras"]
COMM_FIELDS = ["hash", "secondary_hash", "size", "ranks_count", "missing_ranks_count", "ranks",
               "missing_ranks"]
RANK_FIELDS = ["rank", "host", "pid", "cuda_dev", "nvml_dev", "status", "collective_counts"]
STATUS_FIELDS = ["init_state", "async_error", "finalize_called", "destroy_flag", "abort_flag"]


def check_healthy(rep, nranks, pid_of):
    check(rep is not None and all(k in rep for k in NCCL_FIELDS), "NCCL's top-level fields")
    c = comm_of(rep, nranks)
    if not c:
        return
    check(all(k in c for k in COMM_FIELDS), "NCCL's communicator fields")
    check(c["size"] == nranks and c["ranks_count"] == nranks and c["missing_ranks_count"] == 0,
          "size %d, ranks_count %d, missing %d (want %d, %d, 0)" %
          (c["size"], c["ranks_count"], c["missing_ranks_count"], nranks, nranks))
    got = sorted(r["rank"] for r in c["ranks"])
    check(got == list(range(nranks)), "every rank listed once: %s" % got)
    for r in c["ranks"]:
        ok = all(k in r for k in RANK_FIELDS) and all(k in r["status"] for k in STATUS_FIELDS)
        check(ok and r["pid"] == pid_of[r["rank"]] and r["status"]["init_state"] == 0 and
              r["status"]["async_error"] == 0 and not r["status"]["abort_flag"] and
              r["collective_counts"].get("AllReduce", 0) > 0,
              "rank %d: pid %d, init done, no error, AllReduce count %d" %
              (r["rank"], r["pid"], r["collective_counts"].get("AllReduce", 0)))


def stop_job():
    open(os.path.join(DIR, "stop"), "w").close()
    rcs = []
    for p in PROCS:
        try:
            rcs.append(p.wait(timeout=60))
        except subprocess.TimeoutExpired:
            p.kill()
            rcs.append("timeout")
    return rcs


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def main():
    if not os.path.exists("/proc/self/stat"):
        print("SKIP: no /proc")
        return 77
    if SCENARIO == "healthy":
        n = 6
        start(n, range(n))
        pid_of = pids(n)
        time.sleep(0.5)
        seen = set()
        for i in range(4):  # several processes answer (SO_REUSEPORT): each says the same
            rep, _ = ask("json")
            check_healthy(rep, n, pid_of)
            if rep:
                seen.add(rep["weft"]["answered_by_pid"])
        print("answered by pids", sorted(seen))
        text, _ = ask("text", verbose=True)
        check("Ranks: %d" % n in text and "Ok: %d" % n in text and "Status: OK" in text,
              "the text report counts %d ranks, all ok" % n)
        check("Who waits for whom" in text, "the verbose text report carries weft's hang summary")
        r = raw(["CLIENT PROTOCOL 2", "TIMEOUT 5", "SET FORMAT yaml", "SET FORMAT json",
                 "MONITOR bogus", "NONSENSE"])
        check(r is not None and r[0] == "SERVER PROTOCOL 2\n" and r[1] == "OK\n" and
              r[2].startswith("ERROR") and r[3] == "OK\n" and r[4].startswith("ERROR") and
              r[5].startswith("ERROR"), "protocol replies: %s" % r)
        for bad, word in ((["-f", "xml"], "text or json"), (["-p", "0"], "1 to 65535"),
                          (["-t", "x"], "seconds"), (["extra"], "unexpected argument")):
            p = subprocess.run([CLIENT] + bad, capture_output=True, text=True, timeout=20)
            if os.path.basename(CLIENT) == "weft-ras":  # NCCL's client words its errors its own way
                check(p.returncode == 2 and word in p.stderr,
                      "weft-ras %s: exit 2, says '%s'" % (" ".join(bad), word))
        r = raw(["CLIENT PROTOCOL 2", "STATUS"], read_until_eof=True)
        check(r is not None and r[0].startswith("SERVER PROTOCOL 2\n") and "Job summary" in r[0],
              "a raw STATUS ends at EOF with the text report")
        rcs = stop_job()
        check(all(rc == 0 for rc in rcs), "every rank exited 0: %s" % rcs)
        done = [int(open(os.path.join(DIR, "rank%d.done" % i)).read()) for i in range(n)]
        check(len(set(done)) == 1 and done[0] > 0, "every rank checked the same AllReduces: %s" % done)
    elif SCENARIO in ("stopped", "killed"):
        n = 4
        start(n, range(n))
        pid_of = pids(n)
        time.sleep(0.3)
        mon, server_pid = monitor(pid_of)
        # the victim is not the process that serves the monitor (its events would stop with it)
        victim = next(r for r in (2, 1, 3) if pid_of[r] != server_pid)
        print("monitor served by pid %s; victim rank %d" % (server_pid, victim))
        time.sleep(1.0)
        t_sig = time.time()
        os.kill(pid_of[victim], signal.SIGSTOP if SCENARIO == "stopped" else signal.SIGKILL)
        key = "unresponsive" if SCENARIO == "stopped" else "considered_dead"
        named = False
        while time.time() - t_sig < 10 and not named:
            rep, _ = ask("json")
            c = rep and rep["communicators"][0]
            miss = [m for m in c["missing_ranks"] if m["rank"] == victim] if c else []
            named = bool(miss and miss[0]["status"][key])
        after = time.time() - t_sig
        check(named, "rank %d named %s %.1f s after the signal" % (victim, key, after))
        for i in range(3):  # every live process still answers, and the same
            rep, took = ask("json")
            c = rep and rep["communicators"][0]
            check(c and c["ranks_count"] == n - 1 and c["missing_ranks_count"] == 1 and
                  c["missing_ranks"][0]["rank"] == victim and
                  c["missing_ranks"][0]["pid"] == pid_of[victim],
                  "report %d: %d ranks ok, rank %d missing (answered by pid %s in %.1f s)" %
                  (i, c["ranks_count"] if c else -1, victim,
                   rep and rep["weft"]["answered_by_pid"], took))
        text, _ = ask("text")
        word = "UNRESPONSIVE" if SCENARIO == "stopped" else "DEAD"
        check(("rank %d (pid %d" % (victim, pid_of[victim])) in text and word in text,
              "the text report names rank %d %s" % (victim, word))
        time.sleep(0.7)
        mon.settimeout(2)
        events = ""
        try:
            while True:
                b = mon.recv(65536)
                if not b:
                    break
                events += b.decode()
        except socket.timeout:
            pass
        mon.close()
        print(events)
        ev = "PEER_UNRESPONSIVE" if SCENARIO == "stopped" else "PEER_DEAD"
        check(ev in events, "MONITOR streamed %s" % ev)
        if SCENARIO == "stopped":
            os.kill(pid_of[victim], signal.SIGCONT)
        stop_job()
    elif SCENARIO == "init":
        n = 4
        start(n, range(n - 1))  # rank 3 never arrives
        time.sleep(2)
        rep, _ = ask("json")
        c = comm_of(rep, n)
        if c:
            # the bootstrap root (in rank 0's process: NCCL_COMM_ID) says who has checked in
            check(c["size"] == n and c["ranks_count"] == n - 1 and c["missing_ranks_count"] == 1,
                  "during init: size %d, %d ranks checked in, 1 missing (got %d, %d)" %
                  (n, n - 1, c["ranks_count"], c["missing_ranks_count"]))
            check(c["weft"]["this_rank_init_state"] == 7, "the answering rank's init is in progress (7)")
            miss = c["missing_ranks"]
            check(len(miss) == 1 and miss[0]["rank"] == n - 1 and miss[0]["weft"]["state"] == "not_arrived",
                  "rank %d is named as not arrived: %s" % (n - 1, [(m["rank"], m["weft"]["state"]) for m in miss]))
            check(sorted(r["rank"] for r in c["ranks"]) == list(range(n - 1)) and
                  all(r["status"]["init_state"] == 7 for r in c["ranks"]),
                  "ranks 0-%d are listed, init in progress" % (n - 2))
            check(c["weft"]["init"]["root_answered"] and c["weft"]["init"]["not_arrived_count"] == 1,
                  "the init block: the root answered, 1 not arrived")
        text, _ = ask("text")
        check("init ncclInProgress" in text or "in progress" in text.lower(), "the text report says init is in progress")
        check(("rank %d (pid -1, host ?) NOT ARRIVED" % (n - 1)) in text and
              ("%d of %d ranks checked in" % (n - 1, n)) in text,
              "the text report names rank %d as not arrived" % (n - 1))
        # then rank 0, whose process holds the root, goes too: the others say the root is gone
        os.kill(PROCS[0].pid, signal.SIGKILL)
        PROCS[0].wait()
        rep = None
        for i in range(10):
            rep, _ = ask("json")
            if rep and rep["communicators"] and not rep["communicators"][0]["weft"]["init"]["root_answered"]:
                break
            time.sleep(0.3)
        c = rep and rep["communicators"] and rep["communicators"][0]
        check(c and not c["weft"]["init"]["root_answered"] and
              any("bootstrap root does not answer" in m["weft"]["why"] for m in c["missing_ranks"]),
              "with the root's process gone, the report says the bootstrap root does not answer")
        for p in PROCS:
            p.kill()
            p.wait()
    elif SCENARIO == "twohost":
        # 2 hosts x 4 ranks; STATUS asked on host a names host b's ranks (from b's RAS peers),
        # then a SIGSTOPped rank of b (rank 4: the first process a asks there, so a passes over
        # it when it stays silent) as unresponsive, then a SIGKILLed one (rank 5) as dead.
        nss = netns_setup()
        NETNS.append(nss[0])
        n, per = 8, 4
        ENV["NCCL_COMM_ID"] = "10.78.0.1:29611"
        ENV["NCCL_SOCKET_IFNAME"] = "wr0"

        holders = []  # one process per host holds its UTS and mount namespaces
        for h in range(2):
            holders.append(subprocess.Popen(
                ["ip", "netns", "exec", nss[h], "unshare", "--uts", "--mount", "sh", "-c",
                 "mount -t tmpfs weft-ras-shm /dev/shm && hostname ras-host-%s && echo up && "
                 "exec sleep 300" % "ab"[h]], stdout=subprocess.PIPE, text=True))
            HOLDERS.append(holders[-1])
            if holders[-1].stdout.readline().strip() != "up":
                sys.exit(check(False, "host %s's namespaces are set up" % "ab"[h]) or 1)

        def wrap(r, cmd):  # the rank joins its host's namespaces (the holder's: the pid of sleep)
            return ["nsenter", "-t", str(holders[r // per].pid), "-n", "-u", "-m"] + cmd
        start(n, range(n), wrap=wrap)
        pid_of = pids(n)
        time.sleep(0.5)
        rep, took = ask("json")
        check_healthy(rep, n, pid_of)
        c = rep and rep["communicators"][0]
        if c:
            hosts = {r["rank"]: r["host"] for r in c["ranks"]}
            check(all(hosts.get(r) == "ras-host-%s" % "ab"[r // per] for r in range(n)),
                  "each rank's host named: %s" % hosts)
            check(c["weft"]["other_hosts_asked"] == 1 and c["weft"]["other_hosts_answered"] == 1 and
                  c["weft"]["other_hosts_ranks_count"] == 0,
                  "host b asked and answered, no rank left uncounted (%.2f s)" % took)
            check(rep["weft"]["host"] == "ras-host-a", "answered on host a (%s)" % rep["weft"]["host"])
        # a flood on host b's RAS peer port (rank 4's process, the one host a asks first): idle
        # connections past its 64, garbage, a question with a wrong key; the next report is whole
        peer = c and next((r["weft"].get("ras_peer") for r in c["ranks"] if r["rank"] == 4), None)
        check(bool(peer), "rank 4's RAS peer address is reported: %s" % peer)
        if peer:
            host, port = peer.rsplit(":", 1)
            rss0 = rss_kb(pid_of[4])
            flood = subprocess.run(["ip", "netns", "exec", nss[0], sys.executable, "-c", FLOOD, host, port],
                                   capture_output=True, text=True, timeout=60)
            print(flood.stdout.strip(), flood.stderr.strip())
            check(flood.returncode == 0 and "wrong key: no rows" in flood.stdout,
                  "the peer port gives a question with a wrong key no rows")
            rep, took = ask("json")
            c2 = rep and rep["communicators"][0]
            check(c2 and c2["ranks_count"] == n and c2["weft"]["other_hosts_answered"] == 1,
                  "after the flood host a still lists all %d ranks (%.2f s)" % (n, took))
            grow = rss_kb(pid_of[4]) - rss0
            check(grow < 8 * 1024, "rank 4's process grew by %d KiB during the flood (< 8 MiB)" % grow)
        for victim, sig, key in ((4, signal.SIGSTOP, "unresponsive"), (5, signal.SIGKILL, "considered_dead")):
            t_sig = time.time()
            os.kill(pid_of[victim], sig)
            named, c = False, None
            while time.time() - t_sig < 15 and not named:
                rep, took = ask("json")
                c = rep and rep["communicators"][0]
                miss = [m for m in c["missing_ranks"] if m["rank"] == victim] if c else []
                named = bool(miss and miss[0]["status"][key] and miss[0]["pid"] == pid_of[victim]
                             and miss[0]["host"] == "ras-host-b")
            check(named, "host a names rank %d on host b %s %.1f s after the signal (report took %.1f s)"
                  % (victim, key, time.time() - t_sig, took))
            live = n - (1 if victim == 4 else 2)
            check(c and c["ranks_count"] == live and c["weft"]["other_hosts_answered"] == 1,
                  "%d ranks ok, host b still answered (by a live process)" % live)
        text, _ = ask("text")
        check(("rank 4 (pid %d, host ras-host-b) UNRESPONSIVE" % pid_of[4]) in text and
              ("rank 5 (pid %d, host ras-host-b) DEAD" % pid_of[5]) in text,
              "the text report from host a names ranks 4 and 5 of host b")
        os.kill(pid_of[4], signal.SIGCONT)
        stop_job()
    elif SCENARIO == "hostile":
        n = 4
        start(n, range(n))
        pid_of = pids(n)
        time.sleep(0.5)
        rss0 = {r: rss_kb(p) for r, p in pid_of.items()}
        done0 = time.time()
        socks = []
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, 4096)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        flood = want - 64
        for i in range(flood):  # many idle connections
            try:
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex(("127.0.0.1", RAS_PORT))
                socks.append(s)
            except OSError:
                break
        print("opened %d idle connections" % len(socks))
        for i in range(50):  # garbage and over-long lines
            try:
                s = socket.create_connection(("127.0.0.1", RAS_PORT), timeout=1)
                s.sendall(os.urandom(4096) + b"\n" + b"A" * 5000)
                s.close()
            except OSError:
                pass
        slow = []
        for i in range(20):  # slowloris: a byte at a time, never a newline
            try:
                s = socket.create_connection(("127.0.0.1", RAS_PORT), timeout=1)
                slow.append(s)
            except OSError:
                pass
        for k in range(10):
            for s in slow:
                try:
                    s.send(b"S")
                except OSError:
                    pass
            time.sleep(0.1)
        rep, took = ask("json", timeout=30)
        check_healthy(rep, n, pid_of)
        check(took < 15, "a real client is answered during the flood (%.1f s)" % took)
        for s in socks + slow:
            s.close()
        rss1 = {r: rss_kb(p) for r, p in pid_of.items()}
        grow = max(rss1[r] - rss0[r] for r in rss0)
        check(grow < 32 * 1024, "rank processes grew by at most %d KiB during the flood (< 32 MiB)" % grow)
        rcs = stop_job()
        check(all(rc == 0 for rc in rcs), "every rank exited 0: %s" % rcs)
        done = [int(open(os.path.join(DIR, "rank%d.done" % i)).read()) for i in range(n)]
        check(len(set(done)) == 1 and done[0] > 0,
              "every rank checked the same AllReduces during the flood: %s in %.1f s" %
              (done, time.time() - done0))
    else:
        print("unknown scenario", SCENARIO)
        return 2
    return 1 if FAILS else 0


try:
    rc = main()
finally:
    for p in PROCS:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)
            except OSError:
                pass
            p.kill()
            p.wait()
    for p in HOLDERS:
        p.kill()
        p.wait()
    for c in CLEANUP:
        subprocess.run(c)
if FAILS:
    print("FAILED:", FAILS)
sys.exit(rc)
