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
#
# The measurements are in bench_measure.py, what they share in bench_common.py, the saving figures in
# bench_saving.py; this file makes the tables and runs what was asked for.
import argparse
import json
import sys

from bench_common import *  # noqa: F401,F403
from bench_measure import *  # noqa: F401,F403
from bench_handling import handling_lines, measure_handling
from bench_radio import measure_radio, radio_error, radio_lines
from bench_radio_live import measure_live_buffer, measure_radio_call, radio_live_lines
from bench_saving import measure_saving, saving_lines

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
    gain = results.get("replayGainDecode")
    if gain:
        lines.append(f"ReplayGain's cost on the 300 s MP3: earshot {gain['earshotGainCpuSeconds']:.3f} CPU s with the "
                     f"gain, {gain['earshotCpuSeconds']:.3f} without ({gain['earshotCostPercent']:+.1f} %); "
                     f"`mpg123 -t --rva-mix` {gain['mpg123RvaCpuSeconds']:.3f}, without "
                     f"{gain['mpg123CpuSeconds']:.3f} ({gain['mpg123CostPercent']:+.1f} %)")
    for name, entry in results.get("formatGain", {}).items():
        lines.append(f"ReplayGain's cost on the 300 s {name}: earshot {entry['earshotGainCpuSeconds']:.3f} CPU s with "
                     f"-6 dB, {entry['earshotCpuSeconds']:.3f} without ({entry['costPercent']:+.1f} %)")
    r128 = results.get("r128")
    if r128:
        lines.append(f"R128 analysis of {r128['tracks']} tracks of 30 s: earshot {r128['earshotTracksPerCpuSecond']:.1f} "
                     f"tracks a CPU s, libsndfile + libebur128 {r128['referenceTracksPerCpuSecond']:.1f}: "
                     f"{r128['throughputRatio']:.2f}x; loudness differs by at most {r128['maxDifferenceLU']:.2f} LU "
                     f"({'within' if r128['agree'] else 'NOT within'} 0.5 LU)")
    if "error" in queue:
        lines.append(f"earshot serve with a {queue.get('tracks', '?')}-track queue: {queue['error']}")
    else:
        lines.append(f"earshot serve, peak RSS: {queue['idleMaxRssKiB'] / 1024:.1f} MiB with an empty queue, "
                     f"{queue['maxRssKiB'] / 1024:.1f} MiB with a {queue['queued']}-track queue, playing")
        if queue.get("oneAddError"):
            lines.append(f"  one `earshot add` of the {queue['tracks']}-entry playlist was refused "
                         f"({queue['oneAddError']}); added in playlists of {queue['addedInBatchesOf']}")
    lines.extend(saving_lines(results.get("saving")))
    lines.extend(handling_lines(results.get("handling")))
    lines.extend(radio_lines(results.get("radio")))
    lines.extend(radio_live_lines(results.get("radioCall"), results.get("radioBuffer")))
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


def r128_comparison(fields):
    """The R128 speed and agreement: `tracks earshot_cpu reference_cpu earshot.txt reference.txt`."""
    tracks, earshot_cpu, reference_cpu = int(fields[0]), float(fields[1]), float(fields[2])

    def loudness(path):
        with open(path) as handle:
            return [line.split()[0].removeprefix("lufs=") for line in handle if line.strip()]

    ours, theirs = loudness(fields[3]), loudness(fields[4])
    differences = [abs(float(a) - float(b)) for a, b in zip(ours, theirs) if a not in ("none", "failed")
                   and b not in ("none", "failed")]
    both_measured = len(ours) == len(theirs) == tracks and len(differences) == tracks
    worst = max(differences) if differences else float("nan")
    return {"tracks": tracks, "earshotCpuSeconds": earshot_cpu, "referenceCpuSeconds": reference_cpu,
            "earshotTracksPerCpuSecond": round(tracks / max(earshot_cpu, 1e-6), 1),
            "referenceTracksPerCpuSecond": round(tracks / max(reference_cpu, 1e-6), 1),
            "throughputRatio": round(reference_cpu / max(earshot_cpu, 1e-6), 3),
            "maxDifferenceLU": round(worst, 2), "agree": both_measured and worst <= 0.5}


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
    parser.add_argument("--replaygain-decode",
                        help="CPU seconds of `earshot decode --gain`, without, `mpg123 -t --rva-mix`, without")
    parser.add_argument("--format-decode", action="append", default=[],
                        help="FORMAT, then CPU seconds of `earshot decode` and of the format's reference decoder")
    parser.add_argument("--format-gain", action="append", default=[],
                        help="FORMAT, then CPU seconds of `earshot decode --gain` and of `earshot decode`")
    parser.add_argument("--r128", help="tracks, CPU seconds of `earshot decode --loudness` and of the reference, and "
                                       "the two outputs' files")
    parser.add_argument("--only", default="unplug,call,cpu,stress,startup,queue,wakeups,saving,handling,radio")
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
    if "handling" in only:
        log("handling: the owner's slowest input while followers, a deaf client, calls and requests flood it")
        results["handling"] = measure_handling(bench, tracks)
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
    if "radio" in only:
        log(f"internet radio: earshot, mpg123 and mpv on one Icecast2 mount for {tracks['radio_seconds']} s at once")
        try:
            results["radio"] = measure_radio(bench, tracks, tracks["radio_seconds"])
        except (RuntimeError, OSError, KeyError) as error:
            results["radio"] = radio_error(error)
        log(f"internet radio: a {tracks['phone_seconds']} s call over the station, earshot, mpg123 and mpv in turn")
        try:
            results["radioCall"] = measure_radio_call(bench, tracks)
        except (RuntimeError, OSError, KeyError, subprocess.CalledProcessError) as error:
            results["radioCall"] = radio_error(error)
        log("internet radio: earshot serve paused on a station while 30 minutes of it arrive at once")
        try:
            results["radioBuffer"] = measure_live_buffer(bench, tracks)
        except (RuntimeError, OSError, KeyError, ValueError) as error:
            results["radioBuffer"] = radio_error(error)
    if args.decode:
        earshot_decode, mpg123_decode = (float(x) for x in args.decode.split())
        results["decode"] = {"earshotCpuSeconds": earshot_decode, "mpg123CpuSeconds": mpg123_decode,
                             "throughputRatio": round(mpg123_decode / earshot_decode, 3)}
    if args.replaygain_decode:
        gain, plain, rva, unscaled = (float(x) for x in args.replaygain_decode.split())
        results["replayGainDecode"] = {
            "earshotGainCpuSeconds": gain, "earshotCpuSeconds": plain, "mpg123RvaCpuSeconds": rva,
            "mpg123CpuSeconds": unscaled, "earshotCostPercent": round(100 * (gain - plain) / max(plain, 1e-6), 1),
            "mpg123CostPercent": round(100 * (rva - unscaled) / max(unscaled, 1e-6), 1)}
    for entry in args.format_decode:
        name, earshot_seconds, reference_seconds = entry.split()
        results.setdefault("formatDecode", {})[name] = {
            "earshotCpuSeconds": float(earshot_seconds), "referenceCpuSeconds": float(reference_seconds),
            "throughputRatio": round(float(reference_seconds) / max(float(earshot_seconds), 1e-6), 3)}
    for entry in args.format_gain:
        name, gain, plain = entry.split()
        results.setdefault("formatGain", {})[name] = {
            "earshotGainCpuSeconds": float(gain), "earshotCpuSeconds": float(plain),
            "costPercent": round(100 * (float(gain) - float(plain)) / max(float(plain), 1e-6), 1)}
    if args.r128:
        results["r128"] = r128_comparison(args.r128.split())
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
