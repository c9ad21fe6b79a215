# scripts/lib/bench_common.py: what scripts/lib/bench.py's measurements share: the constants of the test audio, the
# bench's private files and players (`Bench`), the sound server's control through pactl, the monitor recorder, and the
# signal analysis that reads a recording (audible stretches, the position sweep's frequency, gaps).
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


def service_env(bench, home, **more):
    """The environment of an `earshot serve` of the bench's own: its configuration (HOME/config/earshot, made here),
    state and control socket under HOME; MORE adds variables."""
    os.makedirs(os.path.join(home, "config", "earshot"), exist_ok=True)
    env = dict(bench.env)
    env.update({"XDG_CONFIG_HOME": os.path.join(home, "config"), "XDG_STATE_HOME": os.path.join(home, "state"),
                "EARSHOT_SOCKET": os.path.join(home, "control.sock")}, **more)
    return env


def earshot_control(bench, env, *arguments):
    """`earshot ARGUMENTS` as a client of the service ENV names."""
    return subprocess.run([bench.earshot, *arguments], env=env, capture_output=True, text=True, timeout=60)


def earshot_status(bench, env):
    """The status object of `earshot status --json` (empty while the service does not answer)."""
    reply = json.loads(earshot_control(bench, env, "status", "--json").stdout or "{}")
    return reply.get("status", reply)


def status_kib(pid, field):
    """FIELD of the process's /proc status (VmRSS, VmHWM) in KiB, or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_kib(pid):
    """The process's resident set now (VmRSS) in KiB; 0 once it has exited."""
    return status_kib(pid, "VmRSS") or 0


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
