# scripts/lib/bench_radio.py: internet radio's cost (issue 40, "Performance"), for scripts/lib/bench.py
# (`--only radio`).
#
# A private Icecast2 (Debian's icecast2, on a free loopback port, with its configuration, logs and pid file in the
# bench's work folder; never the system's service) carries one 128 kbit/s MP3 mount, fed at its own bit rate by
# GStreamer's shout2send, as the tests do (Tests/EndToEndTests/Support/IcecastServer.swift). Once the mount has been on
# air long enough for icecast2's burst on connecting to be full (4 s), earshot (`earshot play URL`),
# `mpg123 -o pulse URL` and `mpv --no-video URL` listen to it at once, each on its own null sink, for SECONDS; then
# each is stopped (SIGTERM) and its CPU seconds (user + system, from wait4) and peak RSS (VmHWM, polled) are taken.
# Beside them earshot plays the same MP3 from its file. A player that ended before the time was up, or had no stream on
# its sink halfway, is reported as such, not measured. Ratios are to mpg123.
import os
import pwd
import grp
import signal
import socket
import subprocess
import time
import urllib.request

from bench_common import log, pactl, sink_index
from bench_measure import peak_rss_kib, sink_of

RADIO_PLAYERS = ["earshot", "mpg123", "mpv"]
# Beside them, in the same run: earshot playing the mount's own MP3 from the file, so that what the network side
# costs (libcurl, its thread, the stream's buffer) shows apart from decoding and playing.
FILE_PLAYER = "earshot-file"
MOUNT = "/bench.mp3"
SOURCE_PASSWORD = "earshot-bench-source"
# icecast2's burst on connecting (64 KiB) lasts 4 s at 128 kbit/s: a listener joining then starts with it.
ON_AIR_SECONDS = 4.5


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def status_page(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status-json.xsl", timeout=2) as reply:
            return reply.read().decode("utf-8", "replace")
    except OSError:
        return ""


def start_icecast(work):
    """icecast2 on a free loopback port, its files in WORK/icecast; returns (process, port). As root it changes to
    Debian's icecast2 user (it refuses to run as root), which then owns its log folder (the work folder, mktemp's
    0700, is opened to it for the path)."""
    folder = os.path.join(work, "icecast")
    logs = os.path.join(folder, "log")
    os.makedirs(logs, exist_ok=True)
    os.chmod(work, 0o755)
    os.chmod(folder, 0o755)
    owner = ""
    if os.getuid() == 0:
        os.chown(logs, pwd.getpwnam("icecast2").pw_uid, grp.getgrnam("icecast").gr_gid)
        owner = "<changeowner><user>icecast2</user><group>icecast</group></changeowner>"
    port = free_port()
    configuration = os.path.join(folder, "icecast.xml")
    with open(configuration, "w") as handle:
        handle.write(f"""<icecast>
  <location>loopback</location><admin>bench@localhost</admin><hostname>127.0.0.1</hostname>
  <limits><clients>16</clients><sources>2</sources><queue-size>524288</queue-size><client-timeout>30</client-timeout>
    <header-timeout>15</header-timeout><source-timeout>10</source-timeout><burst-on-connect>1</burst-on-connect>
    <burst-size>65536</burst-size></limits>
  <authentication><source-password>{SOURCE_PASSWORD}</source-password><admin-user>bench</admin-user>
    <admin-password>{SOURCE_PASSWORD}</admin-password></authentication>
  <listen-socket><port>{port}</port><bind-address>127.0.0.1</bind-address></listen-socket>
  <fileserve>0</fileserve>
  <paths><basedir>/usr/share/icecast2</basedir><logdir>{logs}</logdir><webroot>/usr/share/icecast2/web</webroot>
    <adminroot>/usr/share/icecast2/admin</adminroot><pidfile>{logs}/icecast.pid</pidfile></paths>
  <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>2</loglevel></logging>
  <security><chroot>0</chroot>{owner}</security>
</icecast>
""")
    process = subprocess.Popen(["icecast2", "-c", configuration], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while "icestats" not in status_page(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_process(process)
            raise RuntimeError("icecast2 did not start on the loopback")
        time.sleep(0.05)
    return process, port


def feed(port, mp3):
    """shout2send feeding MOUNT from MP3 at its bit rate; returns once the mount has been on air ON_AIR_SECONDS."""
    source = subprocess.Popen([
        "gst-launch-1.0", "-q", "filesrc", f"location={mp3}", "!", "mpegaudioparse", "!", "shout2send",
        "ip=127.0.0.1", f"port={port}", f"password={SOURCE_PASSWORD}", f"mount={MOUNT}", 'streamname="Bench"',
    ], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while f'"listenurl":"http://127.0.0.1:{port}{MOUNT}"' not in status_page(port):
        if source.poll() is not None or time.monotonic() > deadline:
            stop_process(source)
            raise RuntimeError("shout2send did not bring the mount on air")
        time.sleep(0.05)
    time.sleep(ON_AIR_SECONDS)
    return source


def stop_process(process, grace=3.0):
    """SIGTERM, then SIGKILL after GRACE; returns wait4's (status, rusage) or None when it was reaped already."""
    if process.returncode is not None:
        return None
    process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if time.monotonic() > deadline:
            process.kill()
            pid, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        time.sleep(0.02)


def sinks_with_streams():
    """The names of the sinks that have a stream (a sink-input) now."""
    names = {fields[0]: fields[1] for fields in
             (line.split("\t") for line in pactl("list", "short", "sinks").splitlines())}
    return {names.get(line.split("\t")[1]) for line in pactl("list", "short", "sink-inputs").splitlines()}


def measure_radio(bench, tracks, seconds):
    """Every radio player listening to the same mount at once for SECONDS, each on its own sink."""
    icecast, port = start_icecast(bench.work)
    modules, source, processes = [], None, {}
    try:
        for player in RADIO_PLAYERS + [FILE_PLAYER]:
            if sink_index(sink_of(player)) is None:
                modules.append(pactl("load-module", "module-null-sink", f"sink_name={sink_of(player)}").strip())
        source = feed(port, tracks["radio_mp3"])
        url = f"http://127.0.0.1:{port}{MOUNT}"
        for player in RADIO_PLAYERS:
            command, env = bench.command(player, url, None, sink=sink_of(player))
            processes[player] = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        command, env = bench.command("earshot", tracks["radio_mp3"], None, sink=sink_of(FILE_PLAYER))
        processes[FILE_PLAYER] = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peaks, ended, streaming = {}, {}, None
        started = time.monotonic()
        while time.monotonic() < started + seconds:
            # Halfway, each player must have its stream on its own sink: one that plays nothing costs nothing.
            if streaming is None and time.monotonic() >= started + seconds / 2:
                streaming = sinks_with_streams()
            for player, process in processes.items():
                if player in ended:
                    continue
                pid, status, _ = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    process.returncode = os.waitstatus_to_exitcode(status)
                    ended[player] = round(time.monotonic() - started, 1)
                    continue
                peaks[player] = max(peaks.get(player, 0), peak_rss_kib(process.pid) or 0)
            time.sleep(0.05)
        results = {"seconds": seconds, "bitRateKbps": 128, "players": {}}
        for player, process in processes.items():
            if player in ended:
                results["players"][player] = {"error": f"ended after {ended[player]} s (exit {process.returncode})"}
                continue
            if sink_of(player) not in (streaming or set()):
                stop_process(process)
                results["players"][player] = {"error": "had no stream on its sink halfway"}
                continue
            _, usage = stop_process(process)
            results["players"][player] = {"cpuSeconds": round(usage.ru_utime + usage.ru_stime, 3),
                                          "maxRssKiB": peaks.get(player)}
        return results
    finally:
        for process in processes.values():
            stop_process(process)
        if source is not None:
            stop_process(source)
        for module in modules:
            pactl("unload-module", module)
        stop_process(icecast)


def radio_lines(radio):
    """The bench table's lines for the result of measure_radio."""
    if not radio:
        return []
    if "error" in radio:
        return [f"internet radio: {radio['error']}"]
    players = radio["players"]
    reference = players.get("mpg123", {})

    def cell(player, key, scale=1.0, unit=""):
        entry = players.get(player, {})
        if "error" in entry:
            return f"{player} {entry['error']}"
        value = entry.get(key)
        if value is None:
            return f"{player} n/a"
        ratio = f" ({value / reference[key]:.2f}x)" if reference.get(key) else ""
        return f"{player} {value * scale:.{1 if scale != 1.0 else 3}f}{unit}{ratio}"

    head = (f"internet radio, {radio['seconds']:g} s of one {radio['bitRateKbps']} kbit/s MP3 mount of a local "
            f"Icecast2, all at once")
    shown = RADIO_PLAYERS + [FILE_PLAYER]
    return [f"{head}: CPU s (ratio to mpg123) " + ", ".join(cell(p, "cpuSeconds") for p in shown),
            "  same run: peak RSS MiB (ratio to mpg123) " + ", ".join(cell(p, "maxRssKiB", 1 / 1024) for p in shown),
            f"  ({FILE_PLAYER}: earshot playing the mount's MP3 from its file, beside them)"]


def radio_error(error):
    log(f"internet radio: {error}")
    return {"error": str(error)}
