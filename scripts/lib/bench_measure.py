# scripts/lib/bench_measure.py: scripts/lib/bench.py's measurements, one function each: the unplug's leak, a phone
# call, CPU and memory, the stress run, start-up, the long queue, and wake-ups. Each returns plain data for the table.
from bench_common import *  # noqa: F401,F403 (the shared constants, helpers and modules)

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
    # Positions 30 ms inside the music on both sides of the pause, carried to the edges. A pause and a resume fade
    # (Earshot's fadeMs): the half-level edges fall inside the fades, and the track plays on through them, so the
    # positions are carried further, to where the music is faint (a thirtieth of its level, about -30 dB): the end of
    # the fade-out and the start of the fade-in. The timings above stay at half level: audible means half as loud.
    last_heard = sweep_position(signal_, silent_from - int(0.030 * RATE))
    first_heard = sweep_position(signal_, resumed + int(0.030 * RATE))
    if last_heard is None or first_heard is None or position_before_call is None:
        result["note"] = "position not readable"
        return result
    faint = music >= level / 30
    fade_end = numpy.nonzero((centres >= silent_from) & ~faint)[0]
    stopped = centres[fade_end[0]] if fade_end.size else silent_from
    # The fade-in: back from the half-level edge to the last window under the faint level (the click of the call's
    # own end can be faintly above it earlier).
    quiet = numpy.nonzero((centres > call_end) & (centres < resumed) & ~faint)[0]
    restarted = centres[quiet[-1] + 1] if quiet.size else resumed
    # Even a hard cut puts the two edges apart by the analysis window's own slope: that much is no fade.
    slope = cut_edge_frames(window, 1 / 30) - cut_edge_frames(window, 1 / 2)
    fade_out = max(0, stopped - silent_from - slope) / RATE
    fade_in = max(0, resumed - restarted - slope) / RATE
    last_heard += 0.030 + fade_out
    first_heard -= 0.030 + fade_in
    result["fadeOutMs"], result["fadeInMs"] = round(fade_out * 1000, 1), round(fade_in * 1000, 1)
    result["positionErrorMs"] = round((first_heard - last_heard) * 1000, 1)
    result["lostMs"] = round((first_heard - position_before_call) * 1000, 1)
    return result


def cut_edge_frames(window, fraction):
    """How many frames after a hard cut a WINDOW-frame Hann window's band amplitude (band_amplitude) falls under
    FRACTION of the level before it."""
    energy = numpy.hanning(window) ** 2
    # Centred `offset` frames past the cut, the window still holds the sound in its first window // 2 - offset frames.
    for offset in range(-(window // 2), window // 2 + 1):
        if numpy.sqrt(energy[:max(0, window // 2 - offset)].sum() / energy.sum()) < fraction:
            return offset
    return window // 2


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
    env = service_env(bench, home)
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
        return earshot_control(bench, env, *arguments)

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
    env = service_env(bench, home)
    if bench.earshot_latency_ms is not None:
        # `earshot serve` takes its target latency from its configuration file (`earshot play` from --latency).
        with open(os.path.join(home, "config", "earshot", "config.json"), "w") as handle:
            json.dump({"targetLatencyMilliseconds": bench.earshot_latency_ms}, handle)
    bus = None
    if shutil.which("dbus-daemon"):
        bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
    serve = subprocess.Popen([bench.earshot, "serve"], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(home, "serve.log"), "w"))

    def control(*arguments):
        return earshot_control(bench, env, *arguments)

    def playback():
        status = earshot_status(bench, env)
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
    return status_kib(pid, "VmHWM")


# ---------------------------------------------------------------------------------------------------------------
# The table
