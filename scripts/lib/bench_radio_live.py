# scripts/lib/bench_radio_live.py: what a station's listener keeps (issue 40, "Done when" and "Performance"), for
# scripts/lib/bench.py (`--only radio`), beside bench_radio.py's CPU and memory:
#
# - A phone call over the station. The private Icecast2 carries the 128 kbit/s position sweep (500 Hz + 250 Hz/s);
#   earshot, `mpg123 -o pulse URL` and `mpv --no-video URL` listen to it on headphones in turn, each to a fresh source,
#   and a 4 s phone-role stream (paplay, media.role=phone) plays over each. The headphones' monitor gives, as the file
#   call measurement does (bench_measure.analyse_call): how much of the show was lost at the call's end (the sweep's
#   position first heard after the call, less its position when the call began), and when the player fell silent
#   and came back.
# - A full live buffer. `earshot serve` plays a station of our own (a plain HTTP server on the loopback, in this
#   process, sending the sweep's MP3 again and again at 128 kbit/s), is paused, and the server then sends 30 minutes'
#   worth (28.8 MB) at once, then far more than the buffer's bound: earshot's resident memory (VmRSS) paused with an
#   empty buffer, with 30 minutes held, and at the bound (`liveBufferMinutes` at 320 kbit/s), with the bytes that
#   `status` says it holds.
import json
import os
import socketserver
import subprocess
import threading
import time

from bench_common import (Recorder, earshot_control, earshot_status, layout, rss_kib, service_env, stop,
                          wait_for_stream)
from bench_measure import analyse_call
from bench_radio import MOUNT, RADIO_PLAYERS, feed, start_icecast, stop_process

# After the player's stream appears: its first sound, then enough of the sweep that the music is above the
# analysis' 800 Hz band (the sweep passes 800 Hz 1.2 s in; the player joins 4.5 s into the source with 4 s of burst).
BEFORE_CALL_SECONDS = 4.0
AFTER_CALL_SECONDS = 3.0
STATION_BYTES_PER_SECOND = 16_000  # 128 kbit/s
BUFFER_MINUTES = 30
# Earshot's bound on a live buffer's bytes: `liveBufferMinutes` at 320 kbit/s (LiveBufferLink.bytesPerSecondBound).
BOUND_BYTES_PER_SECOND = 40_000


def measure_radio_call(bench, tracks):
    """A phone call over the station for each radio player in turn, on headphones."""
    layout()
    icecast, port = start_icecast(bench.work)
    headphones = Recorder(bench.work, "headphones", name="radio-call")
    url = f"http://127.0.0.1:{port}{MOUNT}"
    marks, skipped = [], {}
    try:
        for player in RADIO_PLAYERS:
            source = feed(port, tracks["radio_mp3"])
            command, env = bench.command(player, url, None, sink="headphones")
            process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            try:
                if not wait_for_stream(process, "headphones"):
                    skipped[player] = {"error": "never played on headphones"}
                    continue
                time.sleep(BEFORE_CALL_SECONDS)
                call_mark = headphones.mark()
                subprocess.run(["paplay", "--device=headphones", "--property=media.role=phone",
                                "--client-name=earshot-bench-phone", tracks["phone_wav"]], check=True)
                end_mark = headphones.mark()
                time.sleep(AFTER_CALL_SECONDS)
                marks.append((player, call_mark, end_mark, headphones.mark()))
            finally:
                stop(process)
                stop_process(source)
            time.sleep(0.5)
    finally:
        samples = headphones.stop()
        stop_process(icecast)
    results = dict(skipped)
    lead = 44_100 * 3 // 2
    for player, call_mark, end_mark, stop_mark in marks:
        segment = samples[max(0, call_mark - lead):stop_mark]
        results[player] = analyse_call(segment, min(lead, call_mark), end_mark - call_mark + min(lead, call_mark))
    return {"callSeconds": tracks["phone_seconds"], "players": results}


class _Station(socketserver.ThreadingTCPServer):
    """One MP3 station on the loopback: real time until asked to send a burst, then real time again."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, mp3):
        with open(mp3, "rb") as handle:
            self.audio = handle.read()
        # Twice over, so that any piece of at most one file's length starting inside the first copy is one slice.
        self.loop = self.audio * 2
        self.burst = 0  # bytes still to send at once
        self.sent = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Listener)

    def send_at_once(self, count):
        with self.lock:
            self.burst += count


class _Listener(socketserver.BaseRequestHandler):
    def handle(self):
        station = self.server
        head = b""
        while b"\r\n\r\n" not in head:
            received = self.request.recv(4096)
            if not received:
                return
            head += received
        self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nicy-name: Bench\r\n"
                             b"icy-br: 128\r\n\r\n")
        offset, block = 0, STATION_BYTES_PER_SECOND // 10
        try:
            while True:
                with station.lock:
                    at_once = min(station.burst, 1 << 16)
                    station.burst -= at_once
                count = at_once or block
                piece = station.loop[offset:offset + count]
                offset = (offset + count) % len(station.audio)
                self.request.sendall(piece)
                with station.lock:
                    station.sent += count
                if not at_once:
                    time.sleep(0.1)
        except OSError:
            return


def measure_live_buffer(bench, tracks):
    """`earshot serve` paused on a station while the station sends 30 minutes' worth at once, then past the bound."""
    home = os.path.join(bench.work, "live-buffer")
    # HOME too: the library's default music folder is below it.
    env = service_env(bench, home, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    with open(os.path.join(home, "config", "earshot", "config.json"), "w") as handle:
        # No MPD front-end and no library: the buffer's cost alone.
        json.dump({"liveBufferMinutes": BUFFER_MINUTES, "mpdListen": [], "musicDirectories": []}, handle)
    station = _Station(tracks["radio_mp3"])
    threading.Thread(target=station.serve_forever, daemon=True).start()
    with open(os.path.join(home, "serve.log"), "w") as serve_log:
        serve = subprocess.Popen([bench.earshot, "serve"], env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=serve_log)

    def control(*arguments):
        return earshot_control(bench, env, *arguments)

    def status():
        return earshot_status(bench, env)

    def wait_for(test, what, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = status()
            if test(current):
                return current
            if serve.poll() is not None:
                raise RuntimeError(f"earshot serve ended waiting for {what}")
            time.sleep(0.2)
        raise RuntimeError(f"earshot serve: no {what} within {timeout} s")

    def held_after(sent_target):
        # The station sent SENT_TARGET bytes; what earshot holds stops growing once they are in.
        deadline = time.monotonic() + 120
        while station.sent < sent_target and time.monotonic() < deadline:
            time.sleep(0.1)
        last, steady = -1, 0
        while steady < 5 and time.monotonic() < deadline:
            held = status().get("liveBufferBytes") or 0
            steady = steady + 1 if held == last else 0
            last = held
            time.sleep(0.2)
        return last

    result = {"liveBufferMinutes": BUFFER_MINUTES, "stationKbps": STATION_BYTES_PER_SECOND * 8 // 1000}
    try:
        wait_for(lambda s: s.get("playback") is not None, "answer", timeout=30)
        control("add", f"http://127.0.0.1:{station.server_address[1]}/live.mp3")
        control("play")
        wait_for(lambda s: s.get("playback") == "playing", "playing")
        time.sleep(2)
        control("pause")
        paused = wait_for(lambda s: str(s.get("playback", "")).startswith("paused"), "pause")
        time.sleep(1)
        result["emptyRssKiB"] = rss_kib(serve.pid)
        result["emptyHeldBytes"] = paused.get("liveBufferBytes")
        thirty = BUFFER_MINUTES * 60 * STATION_BYTES_PER_SECOND
        station.send_at_once(thirty)
        result["thirtyMinutesHeldBytes"] = held_after(station.sent + thirty)
        result["thirtyMinutesRssKiB"] = rss_kib(serve.pid)
        bound = BUFFER_MINUTES * 60 * BOUND_BYTES_PER_SECOND
        station.send_at_once(2 * bound)
        result["boundBytes"] = bound
        result["atBoundHeldBytes"] = held_after(station.sent + 2 * bound)
        result["atBoundRssKiB"] = rss_kib(serve.pid)
        result["playbackAtEnd"] = status().get("playback")
    finally:
        stop(serve, grace=10)
        station.shutdown()
        station.server_close()
    return result


def radio_live_lines(call, buffer):
    """The bench table's lines for measure_radio_call and measure_live_buffer."""
    lines = []
    if call:
        if "error" in call:
            lines.append(f"a call over the station: {call['error']}")
        else:
            cells = []
            for player in RADIO_PLAYERS:
                entry = call["players"].get(player, {})
                if "lostMs" not in entry:
                    cells.append(f"{player} {entry.get('error') or entry.get('note') or 'n/a'}")
                    continue
                lost = entry["lostMs"]
                cells.append(f"{player} {'n/a' if lost is None else f'{lost:.1f}'}"
                             + (f" ({entry['note']})" if entry.get("note") else ""))
            lines.append(f"a {call['callSeconds']} s phone call over the station: show lost at the call's end, ms: "
                         + ", ".join(cells))
    if buffer:
        if "error" in buffer:
            lines.append(f"a full live buffer: {buffer['error']}")
        else:
            mib = 1 / 1024

            def grown(key):
                return (buffer[key] - buffer["emptyRssKiB"]) * mib

            lines.append(
                f"live buffer ({buffer['liveBufferMinutes']} min), earshot serve paused: RSS "
                f"{buffer['emptyRssKiB'] * mib:.1f} MiB empty; {grown('thirtyMinutesRssKiB'):+.1f} MiB holding 30 min "
                f"at {buffer['stationKbps']} kbit/s ({buffer['thirtyMinutesHeldBytes'] / 1e6:.1f} MB held); "
                f"{grown('atBoundRssKiB'):+.1f} MiB at the bound ({buffer['atBoundHeldBytes'] / 1e6:.1f} MB held of "
                f"{buffer['boundBytes'] / 1e6:.1f})")
    return lines
