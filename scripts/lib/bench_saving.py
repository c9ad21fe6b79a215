# scripts/lib/bench_saving.py: what `earshot serve` writes to disk while it plays a long queue (issue 21), for
# scripts/lib/bench.py (`--only saving`).
#
# `earshot serve` runs under `strace -f --seccomp-bpf -ttt` tracing only the calls that flush (fsync, fdatasync,
# sync_file_range, syncfs, msync) and those that save the state (pwrite64: a position.json record; rename: a
# state.json replaced), so the other calls run at full speed. A 10 000-track queue is added and played; then, over
# SECONDS of playing, the service's /proc/PID/io is read before and after, and the traced calls in that window are
# counted by their time stamps. The stop that follows is counted apart (a clean exit flushes on purpose).
#
# Bytes: `write_bytes` is the figure that counts, the bytes the process caused to be written to the storage layer
# (charged when it dirties a page in the page cache, so a page rewritten before the kernel writes it back counts
# once; `cancelled_write_bytes` is what was dirtied and then discarded before writeback, e.g. by a truncation). The
# state folder is on the work folder's file system, which must be a real disk (tmpfs charges nothing), and the
# service's standard error goes to a pipe, so the log dirties no page. `wchar` is reported beside it but overstates
# the disk: it counts every byte handed to write(2) and pwrite(2), the log lines to the pipe and the 8-byte writes that
# wake threads (eventfd) included.
import json
import os
import re
import signal
import subprocess
import threading
import time

from bench_common import earshot_control, earshot_status, service_env

TRACED = "fsync,fdatasync,sync_file_range,syncfs,msync,pwrite64,rename,renameat,renameat2"
FLUSHES = ("fsync", "fdatasync", "sync_file_range", "syncfs", "msync")
# One line of `strace -f -ttt`: [pid] seconds.micros name(...; an interrupted call's "<... name resumed>" is not a call.
CALL = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\d+\.\d+)\s+([a-z_0-9]+)\(")


def process_io(pid):
    """The counters of /proc/PID/io as integers ({} once the process is gone)."""
    try:
        with open(f"/proc/{pid}/io") as handle:
            return {key: int(value) for key, value in (line.split(": ") for line in handle.read().splitlines())}
    except OSError:
        return {}


def filesystem_type(path):
    """The type of the file system holding PATH (from /proc/mounts: the longest mount point that is its prefix)."""
    best, kind = "", "unknown"
    real = os.path.realpath(path)
    with open("/proc/mounts") as handle:
        for line in handle:
            fields = line.split()
            mount = fields[1]
            if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
                best, kind = mount, fields[2]
    return kind


def traced_calls(trace, start, end):
    """Counts of the traced calls, by name, whose time stamps lie in [START, END)."""
    counts = {}
    with open(trace) as handle:
        for line in handle:
            match = CALL.match(line)
            if match and start <= float(match.group(1)) < end:
                counts[match.group(2)] = counts.get(match.group(2), 0) + 1
    return counts


def child_of(pid, timeout=10):
    """The first child process of PID (strace's tracee)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as handle:
                children = handle.read().split()
            if children:
                return int(children[0])
        except OSError:
            pass
        time.sleep(0.05)
    return None


def measure_saving(bench, tracks, count=10_000, seconds=60):
    """Bytes written and flushes of `earshot serve` over SECONDS of playing a COUNT-track queue, and at its stop."""
    home = os.path.join(bench.work, "saving")
    env = service_env(bench, home)
    state = env["XDG_STATE_HOME"]
    playlist = os.path.join(home, "queue.m3u")
    with open(playlist, "w") as handle:
        handle.write(f"{tracks['tiny_mp3']}\n" * count)
    trace = os.path.join(home, "strace.txt")
    traced = subprocess.Popen(["strace", "-f", "--seccomp-bpf", "-ttt", "-e", f"trace={TRACED}", "-o", trace,
                               bench.earshot, "serve"], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # The log goes to memory through a pipe: a log file would be written to the disk measured.
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(traced.stderr), daemon=True)
    reader.start()

    def control(*arguments):
        return earshot_control(bench, env, *arguments)

    def status():
        return earshot_status(bench, env)

    result = {"tracks": count, "seconds": seconds, "fileSystem": filesystem_type(home)}
    pid = child_of(traced.pid)
    try:
        deadline = time.monotonic() + 30
        while control("status").returncode != 0:
            if pid is None or traced.poll() is not None or time.monotonic() > deadline:
                return {"error": "earshot serve did not answer under strace: "
                        + b"".join(lines).decode(errors="replace")[-400:]}
            time.sleep(0.2)
        added = control("add", playlist)
        if added.returncode != 0:
            return {"error": f"earshot add: {added.stderr.strip()[-200:]}"}
        control("play")
        # The queue change is written now (state.json, flushed): let it finish before the window opens.
        time.sleep(3)
        before, started = process_io(pid), time.time()
        time.sleep(seconds)
        after, ended = process_io(pid), time.time()
        playing = status()
        result.update({"queued": playing.get("trackCount"), "playback": playing.get("playback"),
                       "trackIndex": playing.get("trackIndex")})
        for key in ("write_bytes", "cancelled_write_bytes", "wchar", "syscw"):
            result[key] = after.get(key, 0) - before.get(key, 0)
        window = traced_calls(trace, started, ended)
        result["flushes"] = sum(window.get(name, 0) for name in FLUSHES)
        result["callsWhilePlaying"] = window
        result["windowSeconds"] = round(ended - started, 1)
        stopping = time.time()
        os.kill(pid, signal.SIGTERM)
        traced.wait(30)
        reader.join(5)
        at_stop = traced_calls(trace, stopping, time.time() + 1)
        result["flushesAtStop"] = sum(at_stop.get(name, 0) for name in FLUSHES)
        result["callsAtStop"] = at_stop
        files = {}
        for name in sorted(os.listdir(os.path.join(state, "earshot"))):
            files[name] = os.path.getsize(os.path.join(state, "earshot", name))
        result["stateFiles"] = files
    finally:
        if traced.poll() is None:
            if pid:
                os.kill(pid, signal.SIGKILL)
            traced.kill()
            traced.wait()
    return result


def saving_lines(saving):
    """The bench table's lines for the result of measure_saving."""
    if not saving:
        return []
    if "error" in saving:
        return [f"earshot serve saving its state: {saving['error']}"]
    minute = 60 / max(saving["windowSeconds"], 1e-3)
    calls = saving["callsWhilePlaying"]
    return [
        f"earshot serve playing a {saving['queued']}-track queue ({saving['fileSystem']}), per minute: "
        f"{saving['write_bytes'] * minute / 1024:.1f} KiB written to disk (write_bytes; "
        f"{saving['cancelled_write_bytes'] * minute / 1024:.1f} KiB cancelled), "
        f"{saving['flushes'] * minute:.0f} fsync/fdatasync calls, {calls.get('pwrite64', 0) * minute:.0f} position "
        f"records, {sum(calls.get(n, 0) for n in ('rename', 'renameat', 'renameat2')) * minute:.0f} state.json "
        f"replaced; wchar {saving['wchar'] * minute / 1024:.1f} KiB (every write(2), the log to a pipe included)",
        f"  then SIGTERM: {saving['flushesAtStop']} flushes ({saving['callsAtStop']}); "
        f"state files {saving['stateFiles']}",
    ]
