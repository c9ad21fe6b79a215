#!/usr/bin/env python3
# scripts/lib/bench.py: the measurements of scripts/bench, run inside the private PulseAudio it started.
#
# Every player gets the same generated audio and is measured the same way, on the monitors of the null sinks:
# parec records a monitor into a raw file (s16le stereo 44.1 kHz), and the size of that file at a moment is the
# "mark" of that moment in the recording (it lags the server by parec's 10 ms blocks, the same for every player).
# Numbers only, no assertions: the machine is shared and noisy.
#
# The position track is the test toolkit's (Tests/EarshotTestSupport/Fixtures.swift): a sine sweeping
# linearly from 500 Hz at 250 Hz per second, so the frequency heard says which moment of the track is playing
# (1 Hz = 4 ms). The phone call is the toolkit's dial tone (350 Hz + 440 Hz), below the sweep's band.
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

import numpy

from bench_saving import measure_saving, saving_lines

RATE = 44_100
BYTES_PER_FRAME = 4
SWEEP_START_HZ = 500.0
SWEEP_RATE_HZ_PER_S = 250.0
PHONE_HZ = (350.0, 440.0)
STARTUP_ROUNDS = 11  # runs of each player for the start-up's median (an odd count: the median is one of them)
AUDIBLE = 10  # 16-bit steps: about -70 dBFS, the toolkit's threshold; a null sink's silence is exact zeros

PLAYERS = ["earshot", "mpg123", "mpv", "gst-play", "paplay"]


def log(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Players


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.earshot = args.earshot
        self.env = dict(os.environ)
        self.sockets = 0
        # The players measured (the buffer sweep measures Earshot against mpg123 only).
        self.players = list(PLAYERS)
        # Earshot's target latency (its --latency) in every measurement; None leaves its default. The other
        # players keep theirs, so mpg123 stays the same yardstick at every latency of the sweep.
        self.earshot_latency_ms = None

    def command(self, player, mp3, wav, sink=None, latency_ms=None):
        """The command line and environment that make PLAYER play the track (MP3, or WAV for paplay)."""
        env = dict(self.env)
        if player == "earshot" and latency_ms is None:
            latency_ms = self.earshot_latency_ms
        if latency_ms is not None and player != "earshot":
            # libpulse's own override of the buffer attributes: every libpulse client honours it.
            env["PULSE_LATENCY_MSEC"] = str(latency_ms)
        if player == "earshot":
            self.sockets += 1
            env["EARSHOT_SOCKET"] = os.path.join(self.work, f"earshot-{self.sockets}.sock")
            command = [self.earshot, "play"]
            if sink:
                command += ["--sink", sink]
            if latency_ms is not None:
                command += ["--latency", str(latency_ms)]
            return command + [mp3], env
        if player == "mpg123":
            return ["mpg123", "-q", "-o", "pulse"] + (["-a", sink] if sink else []) + [mp3], env
        if player == "mpv":
            command = ["mpv", "--no-video", "--no-terminal", "--no-config", "--ao=pulse"]
            if sink:
                command.append(f"--audio-device=pulse/{sink}")
            if latency_ms is not None:
                # mpv sets its own buffer attributes (100 ms) over PULSE_LATENCY_MSEC.
                command.append(f"--pulse-buffer={latency_ms}")
            return command + [mp3], env
        if player == "gst-play":
            sink_element = "pulsesink" + (f" device={sink}" if sink else "")
            if latency_ms is not None:
                # pulsesink sets its own buffer attributes (buffer-time 200 ms) over PULSE_LATENCY_MSEC.
                sink_element += f" buffer-time={latency_ms * 1000} latency-time={latency_ms * 500}"
            return ["gst-play-1.0", "-q", "--no-interactive", f"--audiosink={sink_element}", mp3], env
        if player == "paplay":
            return ["paplay"] + ([f"--device={sink}"] if sink else []) + [wav], env
        raise ValueError(player)

    def start(self, player, mp3, wav, sink=None, latency_ms=None, log_file=None):
        command, env = self.command(player, mp3, wav, sink, latency_ms)
        output = open(log_file, "w") if log_file else subprocess.DEVNULL
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=output)
        process.earshot_socket = env.get("EARSHOT_SOCKET")
        return process


def stop(process, grace=3.0):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def pactl(*arguments):
    return subprocess.run(["pactl", *arguments], check=True, capture_output=True, text=True).stdout


def sink_index(name):
    for line in pactl("list", "short", "sinks").splitlines():
        fields = line.split("\t")
        if fields[1] == name:
            return fields[0]
    return None


def wait_for_stream(process, sink, timeout=20.0):
    """Waits until a stream plays on SINK (a sink-input there); False if the player ended or time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        index = sink_index(sink)
        if index is not None:
            for line in pactl("list", "short", "sink-inputs").splitlines():
                if line.split("\t")[1] == index:
                    return True
        if process.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def module_of_sink(name):
    block = None
    for line in pactl("list", "sinks").splitlines():
        stripped = line.strip()
        if stripped.startswith("Name: "):
            block = stripped[6:]
        elif stripped.startswith("Owner Module: ") and block == name:
            return stripped[len("Owner Module: "):]
    return None


def server_name():
    """"PulseAudio 16.1" or "PipeWire 1.4.2" (pipewire-pulse names itself "PulseAudio (on PipeWire 1.4.2)")."""
    info = pactl("info")
    name = info.split("Server Name: ")[1].split("\n")[0]
    if "on PipeWire " in name:
        return "PipeWire " + name.split("on PipeWire ")[1].rstrip(")")
    return "PulseAudio " + info.split("Server Version: ")[1].split("\n")[0]


def on_pipewire():
    return os.environ.get("SOUNDSERVER_KIND", "pulseaudio") != "pulseaudio"


def layout():
    subprocess.run([os.environ["SOUNDSERVER_CTL"], "layout"], check=True, stdout=subprocess.DEVNULL)


# ---------------------------------------------------------------------------------------------------------------
# Recording monitors


class Recorder:
    """parec on SINK.monitor into a raw file; mark() is the current frame count of the recording."""

    def __init__(self, work, sink, name=None):
        self.path = os.path.join(work, f"rec-{name or sink}.raw")
        self.file = open(self.path, "wb")
        self.process = subprocess.Popen(
            ["parec", f"--device={sink}.monitor", "--raw", "--format=s16le", f"--rate={RATE}", "--channels=2",
             "--latency-msec=10", "--client-name=earshot-bench-recorder", f"--stream-name=monitor of {sink}"]
            # On PipeWire, WirePlumber would move a recorder whose monitor went away to the new default source.
            + (["--property=node.dont-reconnect=true"] if on_pipewire() else []),
            stdout=self.file, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while os.path.getsize(self.path) == 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"parec on {sink}.monitor delivered no data")
            time.sleep(0.01)

        # The instant of frame 0: the file holds n frames at instant t, so frame 0 was rendered no later than
        # t - n / RATE; the tightest such bound over half a second is the estimate (as the test toolkit's
        # MonitorRecorder does). The null sink renders on the same monotonic clock, so it does not drift.
        self.frame_zero = None
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            now = time.monotonic()
            bound = now - os.path.getsize(self.path) // BYTES_PER_FRAME / RATE
            self.frame_zero = bound if self.frame_zero is None else min(self.frame_zero, bound)
            time.sleep(0.002)

    def mark(self):
        """The frame being rendered now, from the file's size (late by up to parec's 10 ms blocks)."""
        return os.path.getsize(self.path) // BYTES_PER_FRAME

    def frame_at(self, instant):
        """The frame rendered at the monotonic INSTANT, from the calibrated clock (good to a few ms)."""
        return int(round((instant - self.frame_zero) * RATE))

    def first_audible_after(self, frame, timeout):
        """Polls the growing file for the first audible frame at or after FRAME; None after TIMEOUT seconds."""
        deadline = time.monotonic() + timeout
        with open(self.path, "rb") as reader:
            position = frame
            while time.monotonic() < deadline:
                reader.seek(position * BYTES_PER_FRAME)
                data = reader.read()
                frames = len(data) // BYTES_PER_FRAME
                if frames:
                    samples = numpy.frombuffer(data[:frames * BYTES_PER_FRAME], dtype="<i2").reshape(-1, 2)
                    loud = numpy.nonzero(numpy.abs(samples.astype(numpy.int32)).max(axis=1) >= AUDIBLE)[0]
                    if loud.size:
                        return position + int(loud[0])
                    position += frames
                time.sleep(0.005)
        return None

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.file.close()
        samples = numpy.fromfile(self.path, dtype="<i2")
        samples = samples[:samples.size // 2 * 2].reshape(-1, 2)
        os.remove(self.path)
        return samples


# ---------------------------------------------------------------------------------------------------------------
# Analysis


def audible_mask(samples):
    return numpy.abs(samples.astype(numpy.int32)).max(axis=1) >= AUDIBLE


def mono(samples):
    return samples.astype(numpy.float64).mean(axis=1) / 32768.0


def windowed_amplitude(signal_, frequency, window, hop):
    """The amplitude of a sine at FREQUENCY in Hann windows of WINDOW frames every HOP frames; window starts."""
    starts = numpy.arange(0, max(0, signal_.size - window), hop)
    if starts.size == 0:
        return starts, numpy.zeros(0)
    hann = numpy.hanning(window)
    phasor = numpy.exp(-2j * numpy.pi * frequency * numpy.arange(window) / RATE) * hann
    frames = numpy.lib.stride_tricks.sliding_window_view(signal_, window)[starts]
    return starts, 2 * numpy.abs(frames @ phasor) / hann.sum()


def band_amplitude(signal_, low, window, hop):
    """The RMS-equivalent sine amplitude above LOW Hz in Hann windows of WINDOW frames every HOP frames."""
    starts = numpy.arange(0, max(0, signal_.size - window), hop)
    hann = numpy.hanning(window)
    frames = numpy.lib.stride_tricks.sliding_window_view(signal_, window)[starts] * hann
    spectrum = numpy.abs(numpy.fft.rfft(frames, axis=1)) ** 2
    bins = numpy.fft.rfftfreq(window, 1 / RATE) >= low
    # By Parseval, a sine of amplitude A under the window gives about A^2 * N * sum(hann^2) / 4 summed over the
    # positive bins: dividing by that for A = 1 makes 1.0 a full-scale sine in the band.
    energy = spectrum[:, bins].sum(axis=1)
    return starts, numpy.sqrt(energy / (window * (hann ** 2).sum() / 4))


def sweep_position(signal_, centre, window=882, low=600.0, high=15_000.0):
    """The position track's position (s) heard in a WINDOW-frame window centred on frame CENTRE, or None."""
    start = int(centre - window // 2)
    if start < 0 or start + window > signal_.size:
        return None
    frame = signal_[start:start + window] * numpy.hanning(window)
    padded = 1 << 16
    spectrum = numpy.abs(numpy.fft.rfft(frame, padded))
    frequencies = numpy.fft.rfftfreq(padded, 1 / RATE)
    band = (frequencies >= low) & (frequencies <= high)
    indices = numpy.nonzero(band)[0]
    best = indices[numpy.argmax(spectrum[indices])]
    if best in (indices[0], indices[-1]) or spectrum[best] * 4 / window < 0.02:
        return None
    a, b, c = numpy.log(spectrum[best - 1:best + 2] + 1e-30)
    shift = 0.5 * (a - c) / (a - 2 * b + c)
    frequency = frequencies[best] + shift * (frequencies[1] - frequencies[0])
    return (frequency - SWEEP_START_HZ) / SWEEP_RATE_HZ_PER_S


def edges(values, threshold):
    """Indices where VALUES crosses THRESHOLD upwards (rising) and downwards (falling)."""
    above = values >= threshold
    change = numpy.diff(above.astype(numpy.int8))
    return numpy.nonzero(change == 1)[0] + 1, numpy.nonzero(change == -1)[0] + 1


def gaps(samples, minimum_frames):
    """Silent runs of at least MINIMUM_FRAMES between the first and the last audible frame: (count, total frames,
    longest frames)."""
    loud = numpy.nonzero(audible_mask(samples))[0]
    if loud.size < 2:
        return 0, 0, 0
    runs = numpy.diff(loud) - 1
    runs = runs[runs >= minimum_frames]
    return int(runs.size), int(runs.sum()), int(runs.max()) if runs.size else 0


# ---------------------------------------------------------------------------------------------------------------
# The measurements


def start_on_headphones(bench, player, tracks, measurement):
    """Starts PLAYER on the position track and returns it once its stream is on headphones (None if it never is)."""
    process = bench.start(player, tracks["position_mp3"], tracks["position_wav"])
    if wait_for_stream(process, "headphones"):
        return process
    stop(process)
    log(f"{measurement}: {player} never played on headphones")
    return None


def measure_unplug(bench, tracks, repetitions):
    """Audio on speakers.monitor in the WINDOW after headphones is unloaded, per unplug (ms)."""
    # Long enough for all of a large buffer to play out on the speakers, were it not held back.
    window = 1.5 + (bench.earshot_latency_ms or 0) / 1000
    results = {}
    layout()
    speakers = Recorder(bench.work, "speakers")
    marks = []
    for player in bench.players:
        for _ in range(repetitions.get(player, 0)):
            layout()
            process = start_on_headphones(bench, player, tracks, "unplug")
            if process is None:
                continue
            time.sleep(1.0)
            module = module_of_sink("headphones")
            before = speakers.mark()
            pactl("unload-module", module)
            time.sleep(window)
            after = speakers.mark()
            marks.append((player, before, after))
            stop(process)
            time.sleep(0.3)
    layout()
    samples = speakers.stop()
    for player, before, after in marks:
        leaked = audible_mask(samples[before:after]).sum() / RATE * 1000
        results.setdefault(player, []).append(round(float(leaked), 2))
    return {"windowMs": window * 1000, "leakedMs": results}


def analyse_call(samples, call_mark, end_mark):
    """Phone-call figures from the headphones recording around one call (see measure_call)."""
    signal_ = mono(samples)
    # The dial tone: 5 ms windows every 0.5 ms; each tone is 0.25 full scale, so half of it marks an edge.
    window, hop = 220, 22
    starts, a350 = windowed_amplitude(signal_, PHONE_HZ[0], window, hop)
    _, a440 = windowed_amplitude(signal_, PHONE_HZ[1], window, hop)
    tone = numpy.minimum(a350, a440)
    centres = starts + window // 2
    rising, falling = edges(tone, 0.125)
    rising = rising[centres[rising] >= call_mark - RATE // 2]
    if rising.size == 0:
        return {"error": "the phone call was not heard"}
    call_start = centres[rising[0]]
    falling = falling[centres[falling] > call_start]
    if falling.size == 0:
        return {"error": "the phone call's end was not heard"}
    call_end = centres[falling[-1]]
    # The music: the sweep's energy above 800 Hz in 10 ms windows every 0.5 ms, against its level before the call.
    window = 441
    starts, music = band_amplitude(signal_, 800.0, window, hop)
    centres = starts + window // 2
    before = (centres > call_start - RATE // 2) & (centres < call_start - window)
    level = numpy.median(music[before]) if before.any() else 0
    if level < 0.05:
        return {"error": "no music before the call"}
    on = music >= level / 2
    # The music's first falling edge from 300 ms before the call's first sound on (a player corked as the call's
    # stream connects can fall silent before the call is heard): signed, negative when it came first.
    _, falling_music = edges(music, level / 2)
    falling_music = falling_music[(centres[falling_music] >= call_start - int(0.3 * RATE))
                                  & (centres[falling_music] <= call_end)]
    silent_from = centres[falling_music[0]] if falling_music.size else None
    result = {"musicLevel": round(float(level), 3)}
    position_before_call = sweep_position(signal_, call_start - RATE // 20)
    position_before_call = None if position_before_call is None else position_before_call + 0.05
    if silent_from is None:
        # Played on through the call: all of it was drowned by the call.
        result["silentAfterCallStartMs"] = None
        result["audibleAfterCallEndMs"] = None
        result["positionErrorMs"] = None
        after = sweep_position(signal_, call_end)
        if after is not None and position_before_call is not None:
            result["lostMs"] = round((after - position_before_call) * 1000, 1)
        result["note"] = "kept playing through the call"
        return result
    result["silentAfterCallStartMs"] = round((silent_from - call_start) / RATE * 1000, 1)
    after_call = numpy.nonzero((centres > call_end) & on)[0]
    if after_call.size == 0:
        result["audibleAfterCallEndMs"] = None
        result["note"] = "did not resume"
        result["lostMs"] = None
        result["positionErrorMs"] = None
        return result
    resumed = centres[after_call[0]]
    result["audibleAfterCallEndMs"] = round((resumed - call_end) / RATE * 1000, 1)
    # Positions 30 ms inside the music on both sides of the pause, carried to the edges.
    last_heard = sweep_position(signal_, silent_from - int(0.030 * RATE))
    first_heard = sweep_position(signal_, resumed + int(0.030 * RATE))
    if last_heard is None or first_heard is None or position_before_call is None:
        result["note"] = "position not readable"
        return result
    last_heard += 0.030
    first_heard -= 0.030
    result["positionErrorMs"] = round((first_heard - last_heard) * 1000, 1)
    result["lostMs"] = round((first_heard - position_before_call) * 1000, 1)
    return result


def measure_call(bench, tracks, call_seconds):
    """A phone call (paplay, media.role=phone) on headphones while each player plays the position track."""
    layout()
    headphones = Recorder(bench.work, "headphones")
    marks = []
    for player in bench.players:
        process = start_on_headphones(bench, player, tracks, "call")
        if process is None:
            continue
        time.sleep(2.5)
        call_mark = headphones.mark()
        subprocess.run(["paplay", "--device=headphones", "--property=media.role=phone",
                        "--client-name=earshot-bench-phone", tracks["phone_wav"]], check=True)
        end_mark = headphones.mark()
        time.sleep(2.5)
        stop_mark = headphones.mark()
        stop(process)
        marks.append((player, call_mark, end_mark, stop_mark))
        time.sleep(0.5)
    samples = headphones.stop()
    results = {}
    for player, call_mark, end_mark, stop_mark in marks:
        lead = RATE * 3 // 2
        segment = samples[max(0, call_mark - lead):stop_mark]
        results[player] = analyse_call(segment, min(lead, call_mark), end_mark - call_mark + min(lead, call_mark))
    return {"callSeconds": call_seconds, "players": results}


def bench_sinks(bench):
    """One extra null sink per player, so that players measured at once do not share a monitor."""
    modules = []
    for player in bench.players:
        name = "bench_" + player.replace("-", "_")
        if sink_index(name) is None:
            modules.append(pactl("load-module", "module-null-sink", f"sink_name={name}").strip())
    return modules


def sink_of(player):
    return "bench_" + player.replace("-", "_")


def measure_cpu(bench, tracks, mp3="cpu_mp3", wav="cpu_wav", seconds="cpu_seconds"):
    """CPU seconds and peak RSS of each player playing the track (60 s) to its end, all at once on their own sinks;
    and the voluntary context switches per second of all its threads while it plays (from 3 s after the start
    until 2 s before the end, at most 10 s: the wake-ups of steady playing, without start and end)."""
    processes = {player: bench.start(player, tracks[mp3], tracks[wav], sink=sink_of(player))
                 for player in bench.players}
    results = {}
    started = time.monotonic()
    pending = {process.pid: player for player, process in processes.items()}
    counters = {}
    window = (started + 3, started + 3 + min(10, max(1, tracks[seconds] - 5)))
    # Peak RSS from /proc (VmHWM, polled): wait4's ru_maxrss would include this Python process, since a child
    # started with vfork carries its parent's high-water mark through exec.
    peaks = {}
    deadline = started + tracks[seconds] + 60
    while pending and time.monotonic() < deadline:
        now = time.monotonic()
        for pid in pending:
            peaks[pid] = max(peaks.get(pid, 0), peak_rss_kib(pid) or 0)
            if window[0] <= now < window[1]:
                counters.setdefault(pid, ThreadCounter(pid)).poll()
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.02)
            continue
        if pid not in pending:
            continue
        player = pending.pop(pid)
        processes[player].returncode = os.waitstatus_to_exitcode(status)
        results[player] = {"cpuSeconds": round(usage.ru_utime + usage.ru_stime, 3),
                           "maxRssKiB": peaks.get(pid), "wallSeconds": round(time.monotonic() - started, 2),
                           "exit": processes[player].returncode}
        if pid in counters:
            results[player]["switchesPerSecond"] = round(counters[pid].total() / counters[pid].seconds(), 1)
            results[player]["threads"] = counters[pid].by_thread()
    for pid, player in pending.items():
        stop(processes[player])
        results[player] = {"error": "did not finish in time"}
    return results


def measure_stress(bench, tracks, minutes, latency_ms):
    """Every player at once, each on its own sink at LATENCY_MS target latency, for MINUTES with stress-ng on
    both cores: Earshot's own underrun counter, and the dropouts every sink's monitor actually played."""
    recorders = {player: Recorder(bench.work, sink_of(player)) for player in bench.players}
    processes = {}
    logs = {}
    server_log = server_debug_log()
    for player in bench.players:
        logs[player] = os.path.join(bench.work, f"stress-{player}.log")
        # A file name of its own, so that players naming their stream after the file can be told apart.
        mp3 = os.path.join(bench.work, f"stress-{player}.mp3")
        wav = os.path.join(bench.work, f"stress-{player}.wav")
        for source, link in ((tracks["stress_mp3"], mp3), (tracks["stress_wav"], wav)):
            if not os.path.exists(link):
                os.symlink(source, link)
        processes[player] = bench.start(player, mp3, wav, sink=sink_of(player),
                                        latency_ms=latency_ms, log_file=logs[player])
    for player in bench.players:
        wait_for_stream(processes[player], sink_of(player))
    streams = sink_inputs_by_sink()
    log_start = os.path.getsize(server_log)
    stress = subprocess.Popen(["stress-ng", "--cpu", "2", "--cpu-method", "matrixprod", "--timeout",
                               f"{int(minutes * 60)}s", "--quiet"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stress.wait()
    with open(server_log, errors="replace") as handle:
        handle.seek(log_start)
        server_lines = handle.read().splitlines()
    deadline = time.monotonic() + 60
    for process in processes.values():
        try:
            process.wait(max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stop(process)
    results = {}
    for player in bench.players:
        samples = recorders[player].stop()
        count, total, longest = gaps(samples, RATE // 1000)
        results[player] = {"dropouts": count, "droppedMs": round(total / RATE * 1000, 1),
                           "longestDropoutMs": round(longest / RATE * 1000, 1),
                           "playedSeconds": round(float(audible_mask(samples).sum()) / RATE, 1),
                           "exit": processes[player].returncode,
                           "serverLatencyMs": [stream["latencyMs"] for stream in streams.get(sink_of(player), [])],
                           "serverUnderruns": server_underruns(server_lines, streams, sink_of(player))}
    with open(logs["earshot"]) as handle:
        counted = [line.split("underruns=")[1].split()[0] for line in handle if "state=finished underruns=" in line]
    results["earshot"]["ownUnderruns"] = int(counted[-1]) if counted else None
    return {"minutes": minutes, "targetLatencyMs": latency_ms, "players": results}


def server_debug_log():
    """Turns the private PulseAudio's log level to debug (through its CLI socket) and returns its log file: at that
    level it logs "Implicit underrun of 'MEDIA NAME'" (or "Actual underrun") each time a stream's buffer runs dry."""
    socket_path = os.path.join(os.environ["XDG_RUNTIME_DIR"], "pulse", "bench-cli")
    if not os.path.exists(socket_path):
        pactl("load-module", "module-cli-protocol-unix", f"socket={socket_path}")
    import socket
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(socket_path)
        connection.sendall(b"set-log-level 4\n")
        time.sleep(0.2)
    return os.path.join(os.environ["SOUNDSERVER_ROOT"], "pulseaudio.log")


def sink_inputs_by_sink():
    """For each sink name, its streams as the server lists them: (media.name, buffer latency in ms)."""
    sinks = {line.split("\t")[0]: line.split("\t")[1] for line in pactl("list", "short", "sinks").splitlines()}
    result = {}
    current = None
    for line in pactl("list", "sink-inputs").splitlines():
        stripped = line.strip()
        if stripped.startswith("Sink Input #"):
            current = {"name": None, "latencyMs": None}
        elif stripped.startswith("Sink: ") and current is not None:
            result.setdefault(sinks.get(stripped[6:]), []).append(current)
        elif stripped.startswith("Buffer Latency: ") and current is not None:
            current["latencyMs"] = round(int(stripped.split()[2]) / 1000, 1)
        elif stripped.startswith("media.name = ") and current is not None:
            current["name"] = stripped[len("media.name = "):].strip('"')
    return result


def server_underruns(lines, streams, sink):
    """How many underruns the server logged for the stream on SINK; None when its name is not unique."""
    mine = [stream["name"] for stream in streams.get(sink, [])]
    others = [stream["name"] for name, listed in streams.items() if name != sink for stream in listed]
    if len(mine) != 1 or mine[0] is None or mine[0] in others:
        return None
    return sum(1 for line in lines if ("Implicit underrun of '" in line or "Actual underrun of '" in line)
               and line.endswith(f"'{mine[0]}'"))


def measure_startup(bench, tracks, repetitions):
    """Time from starting the command until the first audible sample on headphones.monitor (ms), REPETITIONS each.

    The players take turns, one run each per round, and each round starts with the next player (a rotation), so
    that a slow moment of the shared machine, or whatever the one before leaves behind, falls on every player alike;
    the table shows each one's median. One run is noisy (a few ms either way: where the first sample lands in the
    sink's rendering, and what else the two cores are doing), hence the many rounds."""
    layout()
    headphones = Recorder(bench.work, "headphones")
    results = {}
    for round_index in range(repetitions):
        turn = round_index % len(bench.players)
        for player in bench.players[turn:] + bench.players[:turn]:
            mark = headphones.frame_at(time.monotonic())
            process = bench.start(player, tracks["position_mp3"], tracks["position_wav"])
            # Searched from 100 ms before the mark (the sink is silent then: the last player stopped 0.5 s
            # earlier), so that a sink rendering ahead of the clock shows as a negative time, not as zero.
            first = headphones.first_audible_after(mark - RATE // 10, timeout=20)
            stop(process)
            if first is not None:
                results.setdefault(player, []).append(round((first - mark) / RATE * 1000, 1))
            time.sleep(0.5)
    headphones.stop()
    return results


def measure_big_queue(bench, tracks, count):
    """Peak RSS of `earshot serve` holding a COUNT-track queue (one small file listed COUNT times in a playlist)."""
    home = os.path.join(bench.work, "serve")
    os.makedirs(os.path.join(home, "config"), exist_ok=True)
    env = dict(bench.env)
    env.update({"XDG_CONFIG_HOME": os.path.join(home, "config"), "XDG_STATE_HOME": os.path.join(home, "state"),
                "EARSHOT_SOCKET": os.path.join(home, "control.sock")})
    playlist = os.path.join(home, "queue.m3u")
    with open(playlist, "w") as handle:
        handle.write(f"{tracks['tiny_mp3']}\n" * count)
    # The same queue in playlists of 1000 entries, in case one request for all of it is refused.
    batch = 1000
    batches = []
    for first in range(0, count, batch):
        path = os.path.join(home, f"part-{first // batch}.m3u")
        with open(path, "w") as handle:
            handle.write(f"{tracks['tiny_mp3']}\n" * min(batch, count - first))
        batches.append(path)
    serve = subprocess.Popen([bench.earshot, "serve"], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(home, "serve.log"), "w"))

    def control(*arguments):
        return subprocess.run([bench.earshot, *arguments], env=env, capture_output=True, text=True, timeout=60)

    deadline = time.monotonic() + 30
    while control("status").returncode != 0:
        if serve.poll() is not None or time.monotonic() > deadline:
            stop(serve)
            with open(os.path.join(home, "serve.log")) as handle:
                return {"error": "earshot serve did not answer: " + handle.read()[-400:]}
        time.sleep(0.2)
    idle = peak_rss_kib(serve.pid)
    added = control("add", playlist)
    result = {"tracks": count, "oneAddExit": added.returncode}
    if added.returncode != 0:
        result["oneAddError"] = added.stderr.strip()[-200:]
        result["addedInBatchesOf"] = batch
        for path in batches:
            control("add", path)
    control("play")
    time.sleep(8)
    status = json.loads(control("status", "--json").stdout or "{}")
    peak = peak_rss_kib(serve.pid)
    stop(serve, grace=10)
    result.update({"queued": status.get("trackCount"), "playback": status.get("playback"),
                   "idleMaxRssKiB": idle, "maxRssKiB": peak})
    return result


def thread_counters(pid):
    """For each thread of process PID, by thread id: (name, voluntary context switches, CPU clock ticks of user and
    system time) so far ({} once it has exited)."""
    counters = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return counters
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as handle:
                name = handle.read().strip()
            with open(f"/proc/{pid}/task/{task}/stat") as handle:
                # The name (field 2) may hold spaces and parentheses: fields after its last ")" start at 3.
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/task/{task}/status") as handle:
                switches = next(int(line.split()[1]) for line in handle if line.startswith("voluntary_ctxt_switches:"))
            counters[task] = (name, switches, int(fields[11]) + int(fields[12]))
        except (OSError, StopIteration, IndexError, ValueError):
            pass
    return counters


class ThreadCounter:
    """The voluntary context switches and CPU time of each thread of process PID from its first poll() to its last.
    Threads that come and go (a thread pool's) are read at every poll, so one that ends keeps the count last read;
    poll every 20 ms and at most its last 20 ms are missed. Reading /proc does not wake the process."""

    def __init__(self, pid):
        self.pid = pid
        self.first = None
        self.last = {}
        self.started = self.ended = None

    def poll(self):
        now = thread_counters(self.pid)
        if self.first is None:
            self.first, self.started = now, time.monotonic()
        self.last.update(now)
        self.ended = time.monotonic()

    def seconds(self):
        return max(self.ended - self.started, 1e-3) if self.started is not None else 1e-3

    def total(self):
        return sum(switches - self.first.get(task, (name, 0, 0))[1]
                   for task, (name, switches, _) in self.last.items())

    def by_thread(self):
        """Switches and CPU milliseconds by thread name (threads of one name summed), busiest first."""
        names = {}
        tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
        for task, (name, switches, ticks) in self.last.items():
            _, switches_before, ticks_before = self.first.get(task, (name, 0, 0))
            entry = names.setdefault(name, {"threads": 0, "switches": 0, "cpuMs": 0})
            entry["threads"] += 1
            entry["switches"] += switches - switches_before
            entry["cpuMs"] += round((ticks - ticks_before) * tick_ms)
        return dict(sorted(names.items(), key=lambda item: -item[1]["switches"]))


def switches_over(pid, seconds):
    """A ThreadCounter of all of PID's threads over the next SECONDS."""
    counter = ThreadCounter(pid)
    counter.poll()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.02)
        counter.poll()
    return counter


def measure_wakeups(bench, tracks, seconds=10):
    """How often `earshot serve` (with MPRIS on a private session bus) wakes up: the voluntary context switches of
    all its threads over SECONDS while playing, while paused and while stopped; mpg123 while playing (it has no
    pause without a terminal)."""
    home = os.path.join(bench.work, "wakeups")
    os.makedirs(os.path.join(home, "config", "earshot"), exist_ok=True)
    if bench.earshot_latency_ms is not None:
        # `earshot serve` takes its target latency from its configuration file (`earshot play` from --latency).
        with open(os.path.join(home, "config", "earshot", "config.json"), "w") as handle:
            json.dump({"targetLatencyMilliseconds": bench.earshot_latency_ms}, handle)
    env = dict(bench.env)
    env.update({"XDG_CONFIG_HOME": os.path.join(home, "config"), "XDG_STATE_HOME": os.path.join(home, "state"),
                "EARSHOT_SOCKET": os.path.join(home, "control.sock")})
    bus = None
    if shutil.which("dbus-daemon"):
        bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
    serve = subprocess.Popen([bench.earshot, "serve"], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(home, "serve.log"), "w"))

    def control(*arguments):
        return subprocess.run([bench.earshot, *arguments], env=env, capture_output=True, text=True, timeout=60)

    def playback():
        # `earshot status --json` prints the status object itself.
        reply = json.loads(control("status", "--json").stdout or "{}")
        status = reply.get("status", reply)
        return f"{status.get('playback')} at {status.get('positionMs')} ms"

    result = {"seconds": seconds, "mpris": bus is not None}
    try:
        deadline = time.monotonic() + 30
        while control("status").returncode != 0:
            if serve.poll() is not None or time.monotonic() > deadline:
                return {"error": "earshot serve did not answer"}
            time.sleep(0.2)
        control("add", tracks["cpu_mp3"])
        time.sleep(2)
        for state, command, settle in (("Stopped", None, 0), ("Playing", "play", 3), ("Paused", "pause", 1)):
            if command:
                control(command)
                time.sleep(settle)
            counter = switches_over(serve.pid, seconds)
            result[f"earshot{state}"] = counter.total()
            result[f"earshot{state}Threads"] = counter.by_thread()
            if command:
                result[f"{state.lower()}Status"] = playback()
    finally:
        stop(serve, grace=10)
        if bus:
            stop(bus)
    mpg123 = bench.start("mpg123", tracks["cpu_mp3"], tracks["cpu_wav"])
    time.sleep(3)
    counter = switches_over(mpg123.pid, seconds)
    result["mpg123Playing"] = counter.total()
    result["mpg123PlayingThreads"] = counter.by_thread()
    stop(mpg123)
    return result


def peak_rss_kib(pid):
    """The process's peak resident set (VmHWM) in KiB, or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------------------------------------------
# The table


def summary(results):
    rows = []
    mpg = results.get("cpu", {}).get("mpg123", {})

    def ratio(a, b):
        return f"{a / b:.2f}x" if a is not None and b else "n/a"

    leak = results["unplug"]["leakedMs"]
    window = results["unplug"]["windowMs"]
    for player in PLAYERS:
        row = {"player": player}
        values = leak.get(player, [])
        if values:
            row["leakMedianMs"] = round(statistics.median(values), 1)
            row["leakWorstMs"] = round(max(values), 1)
            row["unplugs"] = len(values)
        call = results["call"]["players"].get(player, {})
        row["callLostMs"] = call.get("lostMs")
        row["callPositionErrorMs"] = call.get("positionErrorMs")
        row["callSilentAfterMs"] = call.get("silentAfterCallStartMs")
        row["callAudibleAfterMs"] = call.get("audibleAfterCallEndMs")
        row["callNote"] = call.get("note") or call.get("error")
        cpu = results["cpu"].get(player, {})
        row["cpuSeconds"] = cpu.get("cpuSeconds")
        row["maxRssMiB"] = round(cpu["maxRssKiB"] / 1024, 1) if "maxRssKiB" in cpu else None
        row["cpuRatio"] = round(cpu["cpuSeconds"] / mpg["cpuSeconds"], 2) if cpu.get("cpuSeconds") is not None \
            and mpg.get("cpuSeconds") else None
        row["rssRatio"] = round(cpu["maxRssKiB"] / mpg["maxRssKiB"], 2) if "maxRssKiB" in cpu and \
            mpg.get("maxRssKiB") else None
        stress = results["stress"]["players"].get(player, {})
        row["stressDropouts"] = stress.get("dropouts")
        row["stressDroppedMs"] = stress.get("droppedMs")
        row["stressOwnUnderruns"] = stress.get("ownUnderruns")
        row["stressServerUnderruns"] = stress.get("serverUnderruns")
        wakeups = results["wakeups"]
        row["wakeupsPlaying"] = wakeups.get(f"{player}Playing")
        row["wakeupsPaused"] = wakeups.get(f"{player}Paused")
        starts = results["startup"].get(player, [])
        row["startupMedianMs"] = round(statistics.median(starts), 1) if starts else None
        # The spread beside the median: the first and third quartile of the runs.
        quartiles = statistics.quantiles(starts, n=4) if len(starts) >= 2 else None
        row["startupQuartilesMs"] = [round(quartiles[0], 1), round(quartiles[2], 1)] if quartiles else None
        row["startupRuns"] = len(starts)
        rows.append(row)
    mpg_start = next((r["startupMedianMs"] for r in rows if r["player"] == "mpg123"), None)
    for row in rows:
        row["startupRatio"] = round(row["startupMedianMs"] / mpg_start, 2) \
            if row["startupMedianMs"] is not None and mpg_start else None
    return rows, window


def fmt(value, suffix=""):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:g}{suffix}"
    return f"{value}{suffix}"


def print_table(results):
    rows, window = summary(results)
    stress = results["stress"]
    queue = results["queue"]
    lines = []
    lines.append(f"| measure | " + " | ".join(r["player"] for r in rows) + " |")
    lines.append("|---|" + "---|" * len(rows))

    def line(name, cells):
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    line(f"leak on speakers after unplug, median / worst ms (unplugs; window {window:g} ms)",
         [f"{fmt(r.get('leakMedianMs'))} / {fmt(r.get('leakWorstMs'))} ({r.get('unplugs', 0)})" for r in rows])
    line(f"track lost over a {results['call']['callSeconds']:g} s phone call, ms",
         [fmt(r["callLostMs"]) for r in rows])
    line("position error at resume, ms", [fmt(r["callPositionErrorMs"]) for r in rows])
    line("call start -> player silent, ms", [fmt(r["callSilentAfterMs"]) if r["callSilentAfterMs"] is not None
                                             else "never" for r in rows])
    line("call end -> player audible, ms", [fmt(r["callAudibleAfterMs"]) for r in rows])
    line("play 60 s: CPU s (ratio to mpg123)",
         [f"{fmt(r['cpuSeconds'])} ({fmt(r['cpuRatio'], 'x')})" for r in rows])
    line("play 60 s: peak RSS MiB (ratio to mpg123)",
         [f"{fmt(r['maxRssMiB'])} ({fmt(r['rssRatio'], 'x')})" for r in rows])
    line(f"{stress['minutes']:g} min at {stress['targetLatencyMs']} ms under stress-ng: dropouts heard (ms)",
         [f"{fmt(r['stressDropouts'])} ({fmt(r['stressDroppedMs'])})" for r in rows])
    line("  same run: underruns the server logged", [fmt(r["stressServerUnderruns"]) for r in rows])
    line("  same run: underruns Earshot counted", [fmt(r["stressOwnUnderruns"]) for r in rows])
    line("command -> first audible sample, median ms (ratio to mpg123)",
         [f"{fmt(r['startupMedianMs'])} ({fmt(r['startupRatio'], 'x')})" for r in rows])
    line("  same: first / third quartile ms (runs)",
         [f"{fmt((r['startupQuartilesMs'] or [None])[0])} / {fmt((r['startupQuartilesMs'] or [None, None])[1])} "
          f"({r['startupRuns']})" for r in rows])
    seconds = results["wakeups"].get("seconds", 10)
    line(f"playing: voluntary context switches of all threads in {seconds} s",
         [fmt(r["wakeupsPlaying"]) for r in rows])
    line(f"paused: voluntary context switches of all threads in {seconds} s (`earshot serve`, MPRIS on)",
         [fmt(r["wakeupsPaused"]) for r in rows])
    for key, what in (("earshotPlayingThreads", "earshot serve playing"), ("earshotPausedThreads", "earshot serve paused"),
                      ("mpg123PlayingThreads", "mpg123 playing")):
        if results["wakeups"].get(key):
            lines.append(f"| {what}: switches (CPU ms) by thread in {seconds} s | "
                         + ", ".join(f"{name} x{entry['threads']}: {entry['switches']} ({entry['cpuMs']})"
                                     for name, entry in results["wakeups"][key].items() if entry["switches"])
                         + " |" + " |" * (len(rows) - 1))
    lines.append("")
    decode = results.get("decode")
    if decode:
        lines.append(f"decode a 300 s file: earshot {decode['earshotCpuSeconds']:.3f} CPU s, `mpg123 -t` "
                     f"{decode['mpg123CpuSeconds']:.3f} CPU s: {decode['throughputRatio']:.2f}x mpg123's throughput")
    references = {"flac": "`flac -d`", "vorbis": "`oggdec`", "opus": "`opusdec`"}
    for name, entry in results.get("formatDecode", {}).items():
        lines.append(f"decode the same as {name}: earshot {entry['earshotCpuSeconds']:.3f} CPU s, "
                     f"{references.get(name, name)} {entry['referenceCpuSeconds']:.3f} CPU s: "
                     f"{entry['throughputRatio']:.2f}x its throughput")
    if "error" in queue:
        lines.append(f"earshot serve with a {queue.get('tracks', '?')}-track queue: {queue['error']}")
    else:
        lines.append(f"earshot serve, peak RSS: {queue['idleMaxRssKiB'] / 1024:.1f} MiB with an empty queue, "
                     f"{queue['maxRssKiB'] / 1024:.1f} MiB with a {queue['queued']}-track queue, playing")
        if queue.get("oneAddError"):
            lines.append(f"  one `earshot add` of the {queue['tracks']}-entry playlist was refused "
                         f"({queue['oneAddError']}); added in playlists of {queue['addedInBatchesOf']}")
    lines.extend(saving_lines(results.get("saving")))
    print("\n".join(lines))
    return rows


def measure_sweep(bench, tracks, latencies, unplugs):
    """The buffer sweep on the running server: at each of LATENCIES (Earshot's --latency, ms), UNPLUGS unplugs, one
    phone call, and Earshot and mpg123 (at its own default) playing the sweep's track at once, each on its own sink
    (CPU and context switches per second). The same measurements as the full bench, with Earshot only."""
    bench.players = ["earshot"]
    rows = []
    for latency in latencies:
        bench.earshot_latency_ms = latency
        log(f"sweep at {latency} ms: {unplugs} unplugs, a phone call, CPU and wake-ups against mpg123")
        leaks = measure_unplug(bench, tracks, {"earshot": unplugs})["leakedMs"].get("earshot", [])
        call = measure_call(bench, tracks, tracks["phone_seconds"])["players"].get("earshot", {})
        bench.players = ["earshot", "mpg123"]
        modules = bench_sinks(bench)
        cpu = measure_cpu(bench, tracks, "sweep_mp3", "sweep_wav", "sweep_seconds")
        for module in modules:
            pactl("unload-module", module)
        bench.players = ["earshot"]
        earshot, mpg123 = cpu.get("earshot", {}), cpu.get("mpg123", {})
        rows.append({
            "latencyMs": latency, "leakedMs": leaks,
            "leakMedianMs": round(statistics.median(leaks), 1) if leaks else None,
            "leakWorstMs": round(max(leaks), 1) if leaks else None,
            "callSilentAfterMs": call.get("silentAfterCallStartMs"), "callLostMs": call.get("lostMs"),
            "callNote": call.get("note") or call.get("error"),
            "cpuSeconds": earshot.get("cpuSeconds"), "mpg123CpuSeconds": mpg123.get("cpuSeconds"),
            "cpuRatio": round(earshot["cpuSeconds"] / mpg123["cpuSeconds"], 2)
            if earshot.get("cpuSeconds") is not None and mpg123.get("cpuSeconds") else None,
            "switchesPerSecond": earshot.get("switchesPerSecond"),
            "mpg123SwitchesPerSecond": mpg123.get("switchesPerSecond"),
            "threads": earshot.get("threads"),
        })
    bench.earshot_latency_ms = None
    return {"trackSeconds": tracks["sweep_seconds"], "unplugs": unplugs, "rows": rows}


def print_sweep(sweeps):
    """The markdown table of one or more sweeps (one per server), rows by server and latency."""
    lines = ["| server | target latency ms | CPU (ratio to mpg123) | context switches/s (mpg123) "
             "| unplug leak median / worst ms | call start -> silent ms | track lost over the call ms |",
             "|---|---|---|---|---|---|---|"]
    for sweep in sweeps:
        for row in sweep["sweep"]["rows"]:
            lines.append(
                f"| {sweep['server']} | {row['latencyMs']} | {fmt(row['cpuSeconds'])} s ({fmt(row['cpuRatio'], 'x')}) "
                f"| {fmt(row['switchesPerSecond'])} ({fmt(row['mpg123SwitchesPerSecond'])}) "
                f"| {fmt(row['leakMedianMs'])} / {fmt(row['leakWorstMs'])} ({len(row['leakedMs'])}) "
                f"| {fmt(row['callSilentAfterMs']) if row['callSilentAfterMs'] is not None else 'never'} "
                f"| {fmt(row['callLostMs'])}{' (' + row['callNote'] + ')' if row['callNote'] else ''} |")
    if sweeps:
        first = sweeps[0]
        lines.append("")
        lines.append(f"{first['date']}; CPU of playing a {first['sweep']['trackSeconds']} s track, Earshot and "
                     f"`mpg123 -o pulse` (its own default buffer) at once, each on its own null sink; context switches "
                     f"per second of all threads while playing; {first['sweep']['unplugs']} unplugs per row.")
    text = "\n".join(lines)
    print(text)
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--earshot", required=True)
    parser.add_argument("--tracks", required=True, help="JSON with the generated files")
    parser.add_argument("--stress-minutes", type=float, default=10)
    parser.add_argument("--earshot-unplugs", type=int, default=20)
    parser.add_argument("--other-unplugs", type=int, default=4)
    parser.add_argument("--output", required=True)
    parser.add_argument("--decode", help="CPU seconds of `earshot decode` and `mpg123 -t` on one file")
    parser.add_argument("--format-decode", action="append", default=[],
                        help="FORMAT, then CPU seconds of `earshot decode` and of the format's reference decoder")
    parser.add_argument("--only", default="unplug,call,cpu,stress,startup,queue,wakeups,saving")
    parser.add_argument("--sweep", help="the buffer sweep instead: Earshot's target latencies (ms), comma-separated")
    parser.add_argument("--sweep-report", nargs="+", metavar="JSON",
                        help="print the table of these sweep results (one per server) and write it to --output")
    args = parser.parse_args()
    if args.sweep_report:
        sweeps = []
        for path in args.sweep_report:
            with open(path) as handle:
                sweeps.append(json.load(handle))
        with open(args.output, "w") as handle:
            handle.write(print_sweep(sweeps) + "\n")
        return
    with open(args.tracks) as handle:
        tracks = json.load(handle)
    bench = Bench(args)
    only = set(args.only.split(","))
    results = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "server": server_name()}
    layout()
    if args.sweep:
        results["sweep"] = measure_sweep(bench, tracks, [int(value) for value in args.sweep.split(",")],
                                         args.earshot_unplugs)
        print_sweep([results])
        os.makedirs(os.path.dirname(args.output), exist_ok=True)
        with open(args.output, "w") as handle:
            json.dump(results, handle, indent=2)
        return
    if "unplug" in only:
        log(f"unplug: {args.earshot_unplugs} for earshot, {args.other_unplugs} for each other player")
        repetitions = {player: args.other_unplugs for player in PLAYERS}
        repetitions["earshot"] = args.earshot_unplugs
        results["unplug"] = measure_unplug(bench, tracks, repetitions)
    if "call" in only:
        log("phone call")
        results["call"] = measure_call(bench, tracks, tracks["phone_seconds"])
    if "startup" in only:
        log("command to first audible sample")
        results["startup"] = measure_startup(bench, tracks, STARTUP_ROUNDS)
    if "queue" in only:
        log("earshot serve with a 10 000-track queue")
        results["queue"] = measure_big_queue(bench, tracks, 10_000)
    if "wakeups" in only:
        log("wake-ups: voluntary context switches of earshot serve playing, paused and stopped, and of mpg123")
        results["wakeups"] = measure_wakeups(bench, tracks)
    if "saving" in only:
        log("saving: bytes written and flushes of earshot serve playing a 10 000-track queue for 60 s (strace)")
        results["saving"] = measure_saving(bench, tracks)
    if "cpu" in only or "stress" in only:
        # Loaded only now: while they exist, unloading headphones could send a stream to one of them.
        modules = bench_sinks(bench)
        if "cpu" in only:
            log(f"CPU and RSS: every player plays {tracks['cpu_seconds']} s at once, each on its own sink")
            results["cpu"] = measure_cpu(bench, tracks)
        if "stress" in only:
            log(f"underruns: {args.stress_minutes:g} min at 20 ms with stress-ng --cpu 2, every player at once")
            results["stress"] = measure_stress(bench, tracks, args.stress_minutes, 20)
        for module in modules:
            pactl("unload-module", module)
    if args.decode:
        earshot_decode, mpg123_decode = (float(x) for x in args.decode.split())
        results["decode"] = {"earshotCpuSeconds": earshot_decode, "mpg123CpuSeconds": mpg123_decode,
                             "throughputRatio": round(mpg123_decode / earshot_decode, 3)}
    for entry in args.format_decode:
        name, earshot_seconds, reference_seconds = entry.split()
        results.setdefault("formatDecode", {})[name] = {
            "earshotCpuSeconds": float(earshot_seconds), "referenceCpuSeconds": float(reference_seconds),
            "throughputRatio": round(float(reference_seconds) / max(float(earshot_seconds), 1e-6), 3)}
    for key, empty in (("unplug", {"windowMs": 0, "leakedMs": {}}), ("call", {"callSeconds": 0, "players": {}}),
                       ("cpu", {}), ("stress", {"minutes": 0, "targetLatencyMs": 0, "players": {}}),
                       ("startup", {}), ("queue", {"error": "not measured"}), ("wakeups", {})):
        results.setdefault(key, empty)
    results["table"] = print_table(results)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as handle:
        json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
