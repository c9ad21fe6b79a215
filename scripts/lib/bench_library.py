# scripts/lib/bench_library.py: the music library side by side with MPD on one generated collection, for
# `scripts/bench --library` (issue 36). Numbers, never assertions: the machine is shared and noisy.
#
# The collection: scripts/lib/bench_collection.py (TRACKS files of every format, with what was written in the tags).
#
# Measured, first, the tag readers alone: Earshot's own and TagLib's, on the same files (scripts/lib/bench_tags.py);
# then, for `earshot serve` (its own library) and `mpd` 0.23 (its own database, a null output), each started with
# no database:
#   - first scan: wall time from the process's start until the library holds every track and no scan runs, and the
#     process's CPU seconds (user + system, all threads) by then;
#   - a rescan with nothing changed (`earshot update`, MPD's `update`): wall time and CPU;
#   - one file added: time until a search finds it, with each watching the folders (Earshot's inotify watcher, MPD's
#     auto_update);
#   - search: the whole `earshot search any WORD` and `mpc search any WORD` command, median and 99th percentile of
#     SEARCHES runs taken in turns (a fifth of the collection matches each); and the same for searches of a few matches
#     (`any WORD any ALBUMNUMBER`: the 5 ms aim is for those);
#   - resident memory (VmRSS) of each with the library loaded, after the searches; the database's size on disk;
#   - MPD's protocol (issue 37): with every track queued, the round trip of `status`, `playlistinfo` (the whole queue)
#     and `search any WORD` on one open connection to each (Earshot's mpd.socket, MPD's socket), median and 99th
#     percentile of runs taken in turns;
#   - Earshot alone (MPD plays nothing here): a second service, with an empty cache, playing a 60 s track (repeated)
#     through a private PulseAudio while its own first scan of the collection, its loudness pass and a `rescan` run:
#     the stream's underruns and the server's underflows (dropouts), and the owner's slowest input (aim under 5 ms).
import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import time

from bench_common import rss_kib
from bench_collection import WORDS, flac_with_comments, make_collection
from bench_tags import measure_readers, table as tag_reader_table

def clock():
    return time.monotonic()


def cpu_seconds(pid):
    """User + system CPU seconds of every thread of PID so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for(description, condition, timeout=1800, interval=0.02):
    deadline = clock() + timeout
    while clock() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise SystemExit(f"[bench] timed out waiting until {description}")


# --- Earshot

class Earshot:
    def __init__(self, binary, work, music, name="earshot", pulse_server=None):
        self.binary = binary
        self.home = os.path.join(work, name)
        for sub in ("config/earshot", "cache", "state", "run"):
            os.makedirs(os.path.join(self.home, sub), exist_ok=True)
        with open(os.path.join(self.home, "config/earshot/config.json"), "w") as handle:
            json.dump({"musicDirectories": [music]}, handle)
        self.socket = os.path.join(self.home, "run/control.sock")
        self.environment = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.home, "config"),
                                XDG_CACHE_HOME=os.path.join(self.home, "cache"),
                                XDG_STATE_HOME=os.path.join(self.home, "state"), EARSHOT_SOCKET=self.socket,
                                PULSE_SERVER=pulse_server or "unix:" + os.path.join(self.home, "no-server"))
        self.database = os.path.join(self.home, "cache/earshot/library.sqlite")
        self.music = music
        self.process = None

    def start(self):
        self.log = open(os.path.join(self.home, "serve.log"), "w")
        self.process = subprocess.Popen([self.binary, "serve"], env=self.environment, stderr=self.log,
                                        stdout=subprocess.DEVNULL)
        return self.process.pid

    def request(self, fields):
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(self.socket)
            client.sendall((json.dumps(fields) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = client.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)

    def library(self):
        try:
            return self.request({"command": "status"}).get("status", {}).get("library", {})
        except OSError:
            return {}

    def scans_finished(self):
        with open(os.path.join(self.home, "serve.log")) as handle:
            return handle.read().count("library scan=finished")

    def command(self, *arguments):
        return subprocess.run([self.binary, *arguments], env=self.environment, capture_output=True, text=True)

    def stop(self):
        if self.process:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)

    def database_bytes(self):
        return sum(os.path.getsize(self.database + end) for end in ("", "-wal") if os.path.exists(self.database + end))


# --- MPD

class MPD:
    def __init__(self, work, music, tracks):
        self.home = os.path.join(work, "mpd")
        os.makedirs(self.home, exist_ok=True)
        self.socket = os.path.join(self.home, "socket")
        self.database = os.path.join(self.home, "database")
        self.config = os.path.join(self.home, "mpd.conf")
        with open(self.config, "w") as handle:
            handle.write(f'music_directory "{music}"\ndb_file "{self.database}"\nbind_to_address "{self.socket}"\n'
                         f'log_file "{self.home}/log"\nauto_update "yes"\n'
                         # MPD's queue holds 16 384 entries by default: every track is queued below, as in Earshot.
                         f'max_playlist_length "{max(16_384, tracks)}"\n'
                         'audio_output {\n type "null"\n name "null"\n}\n')
        self.process = None

    def start(self):
        self.process = subprocess.Popen(["mpd", "--no-daemon", self.config], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        return self.process.pid

    def request(self, command):
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(self.socket)
            data = b""
            while not data.endswith(b"\n"):
                data += client.recv(4096)
            client.sendall((command + "\n").encode())
            data = b""
            while not (data.endswith(b"OK\n") or b"ACK " in data):
                chunk = client.recv(65536)
                if not chunk:
                    break
                data += chunk
        return dict(line.split(": ", 1) for line in data.decode().splitlines() if ": " in line)

    def idle_library(self):
        try:
            status = self.request("status")
            songs = int(self.request("stats").get("songs", "0"))
        except OSError:
            return None
        return None if "updating_db" in status else songs

    def command(self, *arguments):
        return subprocess.run(["mpc", "-h", self.socket, *arguments], capture_output=True, text=True)

    def stop(self):
        if self.process:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


class ProtocolClient:
    """One open connection speaking MPD's protocol."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.connect(path)
        # Buffered: a reply of 10 000 songs is read in large chunks, not a byte at a time.
        self.stream = self.socket.makefile("rb", buffering=1 << 16)
        assert self.stream.readline().startswith(b"OK MPD ")

    def ask(self, line):
        self.socket.sendall(line.encode() + b"\n")
        count = 0
        while True:
            reply = self.stream.readline()
            if reply == b"OK\n":
                return count
            if not reply or reply.startswith(b"ACK"):
                raise RuntimeError(f"{line}: {reply!r}")
            count += 1

    def close(self):
        self.socket.close()


def idle_clients(path, pid, count=100):
    """RSS per connection of COUNT clients connected to the MPD socket at PATH and waiting in `idle`, in KiB."""
    time.sleep(1)  # the connections closed just before are gone from the player's count
    before = rss_kib(pid)
    clients = []
    for _ in range(count):
        try:
            client = ProtocolClient(path)
        except AssertionError:
            # Refused (the player's limit): measured over those that were let in, and said.
            print(f"[bench] {path}: connection {len(clients) + 1} of {count} refused", flush=True)
            break
        client.socket.sendall(b"idle\n")
        clients.append(client)
    time.sleep(1)
    after = rss_kib(pid)
    for client in clients:
        client.close()
    return (after - before) / max(1, len(clients))


def pause_notice_ms(path, runs=11):
    """How soon a client idling on the MPD socket at PATH hears `pause 1` and `pause 0` sent on another connection:
    the median of RUNS changes, in ms, from the request's sending to the idler's `changed: player`."""
    control, idler = ProtocolClient(path), ProtocolClient(path)
    times = []
    for index in range(runs):
        idler.socket.sendall(b"idle player\n")
        time.sleep(0.3)
        began = clock()
        control.ask(f"pause {1 - index % 2}")
        while idler.stream.readline() != b"changed: player\n":
            pass
        times.append(clock() - began)
        assert idler.stream.readline() == b"OK\n"
        time.sleep(0.3)
    control.close()
    idler.close()
    return statistics.median(times) * 1000


def protocol_latency(earshot, mpd, tracks, results):
    """Queues every track in both, then times status, playlistinfo and search round trips in turns."""
    paths = []
    for folder, _, files in os.walk(earshot.music):
        paths += [os.path.join(folder, name) for name in files
                  if name.endswith((".mp3", ".flac", ".ogg", ".opus"))]
    for start in range(0, len(paths), 500):
        earshot.request({"command": "add", "paths": paths[start:start + 500]})
    clients = {"earshot": ProtocolClient(earshot.socket.replace("control.sock", "mpd.socket")),
               "mpd": ProtocolClient(mpd.socket)}
    clients["mpd"].ask('add ""')
    for name, client in clients.items():
        listed = client.ask("playlistinfo")
        results[name]["queued_lines"] = listed
    for request, runs, key in (("status", 201, "status"), ("playlistinfo", 21, "playlistinfo"),
                               (None, 51, "protocol_search")):
        times = {"earshot": [], "mpd": []}
        for index in range(runs):
            line = request or f"search any {WORDS[index % len(WORDS)][:4]}"
            for name, client in clients.items():
                began = clock()
                client.ask(line)
                times[name].append(clock() - began)
        record_percentiles(times, key, results)
    for client in clients.values():
        client.close()
    # MPD plays its queue into its null output, paced as a sound card: a pause there is a pause (Earshot's, which has
    # no sound server in this part, is timed in playback_during_scan).
    clients["mpd"] = ProtocolClient(mpd.socket)
    clients["mpd"].ask("play")
    results["mpd"]["pause_notice_ms"] = pause_notice_ms(mpd.socket)
    clients["mpd"].ask("stop")
    clients["mpd"].close()
    for name, path, pid in (("earshot", earshot.socket.replace("control.sock", "mpd.socket"), earshot.process.pid),
                            ("mpd", mpd.socket, mpd.process.pid)):
        results[name]["idle_client_kib"] = idle_clients(path, pid)
    print(f"[bench] MPD protocol: {tracks} tracks queued in each", flush=True)


def record_percentiles(times, key, results):
    """Each player's median and 99th percentile of TIMES (seconds) as KEY_median_ms and KEY_p99_ms."""
    for name in times:
        ordered = sorted(times[name])
        results[name][f"{key}_median_ms"] = statistics.median(ordered) * 1000
        results[name][f"{key}_p99_ms"] = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def timed_searches(earshot, mpd, runs, words, key, results):
    """`search WORDS(INDEX)...` as each player's whole command (`earshot search`, `mpc search`), in turns."""
    times = {"earshot": [], "mpd": []}
    for index in range(runs):
        arguments = words(index)
        for name, player in (("earshot", earshot), ("mpd", mpd)):
            began = clock()
            player.command("search", *arguments)
            times[name].append(clock() - began)
    record_percentiles(times, key, results)


def few_match_searches(earshot, mpd, tracks, searches, results):
    """A word and an album's number: a few tracks match each (an album's number is in its tag and its folder)."""
    albums = max(1, tracks // 10)
    picker = random.Random(3636)
    timed_searches(earshot, mpd, searches,
                   lambda index: ["any", WORDS[index % len(WORDS)][:4], "any", str(picker.randrange(albums))],
                   "few_search", results)


def playback_during_scan(binary, work, music, pulse_server, tracks, results):
    """A second Earshot, with an empty cache, plays a track through the server while it scans the collection."""
    track = os.path.join(work, "playing.mp3")
    wav = os.path.join(work, "playing.wav")
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "60", "sine", "440",
                    "gain", "-6"], check=True)
    subprocess.run(["lame", "--quiet", "-b", "128", "--cbr", wav, track], check=True)
    player = Earshot(binary, work, music, name="earshot-playing", pulse_server=pulse_server)
    player.start()
    try:
        wait_for("the playing service answers", lambda: bool(player.library()) or player.process.poll() is not None,
                 timeout=60)
        player.command("repeat", "track")
        player.command("play", track)
        status = lambda: player.request({"command": "status"}).get("status", {})
        wait_for("it plays", lambda: status().get("playback") == "playing", timeout=30)
        began = clock()
        # The collection holds the files the earlier part added too: the scan's end is what is waited for.
        wait_for("its first scan is done", lambda: player.library().get("scansFinished", 0) >= 1
                 and not player.library().get("scanning", True), timeout=1800)
        wait_for("its loudness pass is done", lambda: player.library().get("gainsToMeasure") == 0, timeout=1800)
        before = player.scans_finished()
        player.command("rescan")
        wait_for("its rescan is done", lambda: player.scans_finished() > before, timeout=1800)
        scanned = clock() - began
        final = status()
        results["earshot"]["pause_notice_ms"] = pause_notice_ms(player.socket.replace("control.sock", "mpd.socket"))
        results["earshot"].update(
            playing_scan_seconds=scanned, playing_still=final.get("playback") == "playing",
            playing_underruns=final.get("underruns"), playing_server_underflows=final.get("serverUnderflows"),
            playing_slowest_ms=final.get("slowestHandlingMicros", 0) / 1000,
            playing_slowest_kind=final.get("slowestHandlingKind"))
    finally:
        player.stop()


def first_scan(player, pid, started, tracks, full):
    wait_for("the first scan is done", lambda: full())
    return clock() - started, cpu_seconds(pid)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--earshot", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tracks", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=51)
    parser.add_argument("--output", required=True)
    parser.add_argument("--pulse-server", required=True, help="the private server the playing part plays through")
    options = parser.parse_args()
    music = os.path.join(options.work, "music")
    started = clock()
    template = make_collection(music, options.tracks, options.work)
    print(f"[bench] a collection of {options.tracks} tracks made in {clock() - started:.1f} s", flush=True)
    results = {"tracks": options.tracks}
    measure_readers(options.earshot, music, options.work, results)
    earshot, mpd = Earshot(options.earshot, options.work, music), MPD(options.work, music, options.tracks)
    try:
        for name, player in (("earshot", earshot), ("mpd", mpd)):
            began = clock()
            pid = player.start()
            if name == "earshot":
                full = lambda: earshot.library().get("tracks") == options.tracks and not earshot.library().get(
                    "scanning", True)
            else:
                full = lambda: mpd.idle_library() == options.tracks
            wall, cpu = first_scan(player, pid, began, options.tracks, full)
            results[name] = {"first_scan_wall": wall, "first_scan_cpu": cpu}
            print(f"[bench] {name}: first scan {wall:.2f} s, {cpu:.2f} s CPU", flush=True)
        # Then Earshot's library measures the loudness (EBU R128) of the tracks without tagged gains, every one here,
        # on its idle thread: waited for, so that the rows below do not count it, and reported on its own (MPD has no
        # such step).
        cpu_before, began = cpu_seconds(earshot.process.pid), clock()
        wait_for("earshot's loudness measuring is done", lambda: earshot.library().get("gainsToMeasure") == 0)
        measured = earshot.library().get("gainsMeasured", 0)
        results["earshot"].update(measure_wall=clock() - began,
                                  measure_cpu=cpu_seconds(earshot.process.pid) - cpu_before, measured=measured)
        print(f"[bench] earshot: loudness of {measured} tracks measured in {results['earshot']['measure_wall']:.2f} s, "
              f"{results['earshot']['measure_cpu']:.2f} s CPU", flush=True)
        # Rescans with nothing changed.
        before, cpu_before, began = earshot.scans_finished(), cpu_seconds(earshot.process.pid), clock()
        earshot.command("update")
        wait_for("earshot's rescan is done", lambda: earshot.scans_finished() > before, interval=0.005)
        results["earshot"].update(rescan_wall=clock() - began, rescan_cpu=cpu_seconds(earshot.process.pid) - cpu_before)
        cpu_before, began = cpu_seconds(mpd.process.pid), clock()
        mpd.request("update")
        wait_for("mpd's rescan is done", lambda: mpd.idle_library() is not None, interval=0.005)
        results["mpd"].update(rescan_wall=clock() - began, rescan_cpu=cpu_seconds(mpd.process.pid) - cpu_before)
        # One file added, each watching.
        folder = sorted(os.scandir(music), key=lambda entry: entry.name)[0].path
        for name, player, search in (
                ("earshot", earshot, lambda: earshot.command("search", "title", "zzadded").stdout.strip()),
                ("mpd", mpd, lambda: mpd.command("search", "title", "zzadded").stdout.strip())):
            data = flac_with_comments(open(template, "rb").read(), {"TITLE": f"zzadded {name}", "ARTIST": "Added"})
            began = clock()
            with open(os.path.join(folder, f"zzadded-{name}.flac"), "wb") as handle:
                handle.write(data)
            wait_for(f"{name} finds an added file", lambda: bool(search()), timeout=120, interval=0.01)
            results[name]["added_seen"] = clock() - began
        # Searches, in turns.
        timed_searches(earshot, mpd, options.searches, lambda index: ["any", WORDS[index % len(WORDS)][:4]],
                       "search", results)
        few_match_searches(earshot, mpd, options.tracks, options.searches, results)
        try:
            protocol_latency(earshot, mpd, options.tracks, results)
        except RuntimeError as error:
            # A refusal (MPD's queue limit at the scale run) leaves the protocol's rows out, not the others.
            results["protocol_error"] = str(error)
            print(f"[bench] MPD protocol: not measured: {error}", flush=True)
        results["earshot"]["rss_kib"] = rss_kib(earshot.process.pid)
        results["mpd"]["rss_kib"] = rss_kib(mpd.process.pid)
        results["earshot"]["database_bytes"] = earshot.database_bytes()
        results["mpd"]["database_bytes"] = os.path.getsize(mpd.database)
    finally:
        earshot.stop()
        mpd.stop()
    playback_during_scan(options.earshot, options.work, music, options.pulse_server, options.tracks, results)
    with open(options.output, "w") as handle:
        json.dump(results, handle, indent=2)
    rows = [
        ("first scan, wall s", "first_scan_wall", "{:.2f}"), ("first scan, CPU s", "first_scan_cpu", "{:.2f}"),
        ("rescan, nothing changed, wall s", "rescan_wall", "{:.3f}"),
        ("rescan, nothing changed, CPU s", "rescan_cpu", "{:.3f}"),
        ("one file added, seen after s", "added_seen", "{:.2f}"),
        ("search (whole command), median ms", "search_median_ms", "{:.1f}"),
        ("search (whole command), p99 ms", "search_p99_ms", "{:.1f}"),
        ("search of a few matches (whole command), median ms", "few_search_median_ms", "{:.1f}"),
        ("search of a few matches (whole command), p99 ms", "few_search_p99_ms", "{:.1f}"),
        ("RSS with the library loaded, KiB", "rss_kib", "{}"), ("database on disk, bytes", "database_bytes", "{}"),
        ("MPD protocol: status, median ms", "status_median_ms", "{:.2f}"),
        ("MPD protocol: status, p99 ms", "status_p99_ms", "{:.2f}"),
        ("MPD protocol: playlistinfo (every track queued), median ms", "playlistinfo_median_ms", "{:.1f}"),
        ("MPD protocol: playlistinfo (every track queued), p99 ms", "playlistinfo_p99_ms", "{:.1f}"),
        ("MPD protocol: search any WORD, median ms", "protocol_search_median_ms", "{:.1f}"),
        ("MPD protocol: search any WORD, p99 ms", "protocol_search_p99_ms", "{:.1f}"),
        ("MPD protocol: an idling client hears `pause 1`/`pause 0`, median ms", "pause_notice_ms", "{:.2f}"),
        ("MPD protocol: memory per idling client (about 100 connected), KiB", "idle_client_kib", "{:.1f}"),
    ]
    lines = [f"| {options.tracks} tracks | Earshot | MPD 0.23 | ratio |", "|---|---|---|---|"]
    for label, key, form in rows:
        if key not in results["earshot"] or key not in results["mpd"]:
            lines.append(f"| {label} | not measured: {results.get('protocol_error', 'n/a')} | | |")
            continue
        mine, theirs = results["earshot"][key], results["mpd"][key]
        ratio = f"{mine / theirs:.2f}x" if theirs else "-"
        lines.append(f"| {label} | {form.format(mine)} | {form.format(theirs)} | {ratio} |")
    mine = results["earshot"]
    # Every generated track is untagged, so each is decoded and analysed; those shorter than R128's 400 ms gating
    # block have no loudness and get no gain.
    lines.append(f"\nEarshot alone: the loudness (EBU R128) of the {options.tracks} tracks analysed after the first "
                 f"scan in {mine['measure_wall']:.2f} s, {mine['measure_cpu']:.2f} s CPU "
                 f"({options.tracks / max(mine['measure_cpu'], 1e-6):.0f} tracks a CPU second; {mine['measured']} "
                 f"long enough for a gain)")
    lines.append(f"\nEarshot alone: a second service, with an empty cache, playing a 60 s MP3 (repeated) through "
                 f"PulseAudio while it scanned the collection, measured its loudness and rescanned it "
                 f"({mine['playing_scan_seconds']:.1f} s): "
                 f"still playing {mine['playing_still']}, {mine['playing_underruns']} underruns, "
                 f"{mine['playing_server_underflows']} server underflows; the owner's slowest input "
                 f"{mine['playing_slowest_ms']:.2f} ms ({mine['playing_slowest_kind']})")
    lines.append(tag_reader_table(results["tag_readers"]))
    table = "\n".join(lines)
    print(table)
    with open(os.path.splitext(options.output)[0] + ".md", "w") as handle:
        handle.write(table + "\n")


if __name__ == "__main__":
    main()
