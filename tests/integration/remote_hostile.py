# A hostile ssh host for jdwpmux's tests (run by sshd's ForceCommand instead of the shell
# jdwpmux asks for). It answers the JVM scan with what no real host prints: a greeting with
# escape sequences, 6,000 processes, command lines of 100 KB whose main class is an escape
# sequence, huge environments and descriptor lists, then a record that never ends (one
# session) or silence (the next), session after session.
import os, sys, time

state = sys.argv[1]
try:
    session = int(open(state).read() or "0") + 1
except OSError:
    session = 1
open(state, "w").write(str(session))

def out(b):
    sys.stdout.buffer.write(b)
    sys.stdout.buffer.flush()

def rec(tag, arg, body, nonce):
    out(b"@" + tag + b" " + arg + b"\n" + body + b"\n@@" + nonce + b"\n")

out(b"Welcome to a hostile host \x1b[2J\x1b]0;title\x07\n")
rounds = 0
for line in sys.stdin.buffer:
    words = line.replace(b";", b" ").split()
    if b"jdwpmux_done" not in words:
        continue
    nonce = words[words.index(b"jdwpmux_done") + 1]
    if nonce == b"ready":
        rec(b"done", b"-", b"", b"ready")
        continue
    if b"jdwpmux_scan" in words:
        rounds += 1
        if rounds >= 2 and session % 2 == 0:
            time.sleep(3600)
        if rounds >= 2:
            out(b"@tcp -\n" + b"x" * (20 << 20))
            time.sleep(3600)
        rec(b"id", b"-", b"0", nonce)
        rec(b"tcp", b"-", b"".join(b"%4d: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 %d 1 0\n" % (i, 9000, 70000 + i) for i in range(3000)), nonce)
        ns = b"/proc/self/ns/net -> net:[1]\n/proc/self/ns/pid -> pid:[2]\n"
        ns += b"".join(b"/proc/%d/ns/net -> net:[1]\n/proc/%d/ns/pid -> pid:[2]\n" % (p, p) for p in range(100, 6100))
        rec(b"ns", b"-", ns, nonce)
    pids = [w for w in words if w.isdigit()]
    if b"jdwpmux_proc" in words:
        rec(b"pods", b"-", b"".join(b"pods/ns_\x1b[2Jpod-%d_%s\n" % (i, b"u" * 36) for i in range(20000)), nonce)
        rec(b"netns", b"-", b"".join(b"1 /run/netns/\x1b]0;t\x07%d\n" % i for i in range(20000)), nonce)
    for p in pids:
        if b"jdwpmux_proc" in words:
            rec(b"proc", p, b"0 root\x1b[31m", nonce)
            cmd = b"java\0-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=9000\0-cp\0" + b"a:" * 50000 + b"\0\x1b]0;pwned\x07Evil\0"
            rec(b"cmdline", p, cmd, nonce)
            rec(b"environ", p, b"JAVA_TOOL_OPTIONS=" + b"y" * 100000 + b"\ncontainer=\x1b[31m" + b"c" * 1000, nonce)
            rec(b"cgroup", p, b"".join(b"%d:x:/libpod_parent/libpod-%s\n" % (i, b"f" * 64) for i in range(100)), nonce)
            for _ in range(8):
                rec(b"parent", p, b"conmon\0-n\0\x1b]0;pwned\x07" + b"n" * 300 + b"\0", nonce)
            rec(b"docker", p, b'{"Name":"/\\u001b[2J' + b"d" * 2000 + b'"}', nonce)
        if b"jdwpmux_fd" in words:
            rec(b"fd", p, b"".join(b"l %d -> socket:[%d]\n" % (i, 70000 + i) for i in range(10000)), nonce)
        if b"jdwpmux_threads" in words:
            rec(b"threads", p, b"JDWP Transport\nCommon-Cleaner\n" * 5000, nonce)
    rec(b"done", b"-", b"", nonce)
