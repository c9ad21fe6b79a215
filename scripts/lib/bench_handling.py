# scripts/lib/bench_handling.py: how long the owner of `earshot serve` takes to handle one input while everything
# that could make it wait happens at once (issue 21), for scripts/lib/bench.py (`--only handling`).
#
# The service (release) plays a 10 000-track queue whose first track is a FLAC with an 8 MiB cover picture, and for
# SECONDS, all at once:
#   - 50 `earshot events` followers, half of them stopped (SIGSTOP) from the start, so their queues fill and drop;
#   - one control client that sends requests and never reads a reply;
#   - a flood of control requests (status, and a seek in the covered track every tenth), each on its own connection;
#   - phone calls: `paplay --property=media.role=phone` streams of 0.3 s, three overlapping every 1.5 s, each burst
#     pausing the music and its end resuming it.
# Then it reads the service's own `slowestHandlingMicros` (the longest the owner took over one input since it started:
# a command, a server notice, a decoder report, a timer), the kind of input that took it (`slowestHandlingKind`) and
# the slowest of each kind, and the slowest control round trip seen by the flood.
# issue 21's target: slowestHandlingMicros at most 5 ms.
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time

from bench_common import service_env

FOLLOWERS = 50
COVER_BYTES = (8 << 20) - 4096


def cover_track(work, seconds=30):
    """A FLAC of SECONDS of tone with a front cover picture of just under 8 MiB (a PNG by its signature)."""
    path = os.path.join(work, "large-cover.flac")
    if os.path.exists(path):
        return path
    picture = os.path.join(work, "large-cover.png")
    generator = random.Random(0xB16C)
    with open(picture, "wb") as handle:
        handle.write(b"\x89PNG\r\n\x1a\n" + generator.randbytes(COVER_BYTES - 8))
    wav = os.path.join(work, "large-cover.wav")
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", str(seconds), "sine", "330",
                    "vol", "0.3"], check=True)
    subprocess.run(["flac", "-s", "-f", f"--picture=3|image/png|cover|16x16x24|{picture}", "-o", path, wav],
                   check=True)
    os.remove(wav)
    return path


def request(path, fields, timeout=10.0):
    """One control request on its own connection: (reply or None, seconds it took)."""
    started = time.monotonic()
    try:
        with socket.socket(socket.AF_UNIX) as connection:
            connection.settimeout(timeout)
            connection.connect(path)
            connection.sendall((json.dumps(fields) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = connection.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data or b"{}"), time.monotonic() - started
    except (OSError, ValueError):
        return None, time.monotonic() - started


def measure_handling(bench, tracks, seconds=30, count=10_000):
    """slowestHandlingMicros of `earshot serve` under SECONDS of followers, floods and seeks (see the top)."""
    home = os.path.join(bench.work, "handling")
    env = service_env(bench, home)
    control_socket = env["EARSHOT_SOCKET"]
    covered = cover_track(bench.work)
    playlist = os.path.join(home, "queue.m3u")
    with open(playlist, "w") as handle:
        handle.write(f"{covered}\n" + f"{tracks['tiny_mp3']}\n" * (count - 1))
    service = subprocess.Popen([bench.earshot, "serve"], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    helpers = []
    never_reads = None
    result = {"seconds": seconds, "tracks": count, "followers": FOLLOWERS, "stoppedFollowers": FOLLOWERS // 2,
              "coverBytes": COVER_BYTES}
    try:
        deadline = time.monotonic() + 30
        while request(control_socket, {"command": "status"})[0] is None:
            if service.poll() is not None or time.monotonic() > deadline:
                return {"error": "earshot serve did not answer"}
            time.sleep(0.2)
        added = subprocess.run([bench.earshot, "add", playlist], env=env, capture_output=True, text=True, timeout=60)
        if added.returncode != 0:
            return {"error": f"earshot add: {added.stderr.strip()[-200:]}"}
        for index in range(FOLLOWERS):
            follower = subprocess.Popen([bench.earshot, "events"], env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            helpers.append(follower)
            if index % 2 == 0:
                follower.send_signal(signal.SIGSTOP)
            else:
                # A follower that keeps reading: its output is drained and dropped.
                threading.Thread(target=lambda stream=follower.stdout: [None for _ in stream], daemon=True).start()
        # Adding the queue is the owner's largest single input: reported apart from the stress that follows.
        before, _ = request(control_socket, {"command": "status"})
        before = (before or {}).get("status") or {}
        result["slowestHandlingMicrosAfterAdd"] = before.get("slowestHandlingMicros")
        result["slowestHandlingKindAfterAdd"] = before.get("slowestHandlingKind")
        never_reads = socket.socket(socket.AF_UNIX)
        never_reads.connect(control_socket)
        request(control_socket, {"command": "play"})
        ends = time.monotonic() + seconds
        trips = []
        sent_unread = 0
        pauses = []

        # Bursts of three overlapping calls every 1.5 s: each pauses the music and its end resumes it, so the
        # owner decides, corks and uncorks all through the run.
        def calls():
            while time.monotonic() < ends:
                for _ in range(3):
                    helpers.append(subprocess.Popen(
                        ["paplay", "--property=media.role=phone", tracks["phone_wav_short"]], env=env,
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                    time.sleep(0.1)
                time.sleep(1.2)

        caller = threading.Thread(target=calls, daemon=True)
        caller.start()
        number = 0
        while time.monotonic() < ends:
            number += 1
            fields = {"command": "seek", "seconds": float(number % 25)} if number % 10 == 0 else {"command": "status"}
            reply, took = request(control_socket, fields)
            trips.append(took if reply is not None else float("inf"))
            playback = ((reply or {}).get("status") or {}).get("playback")
            if playback and (not pauses or pauses[-1] != playback):
                pauses.append(playback)
            if number % 5 == 0:
                try:
                    never_reads.setblocking(False)
                    never_reads.send(b'{"command": "status"}\n')
                    sent_unread += 1
                except OSError:
                    pass
        caller.join(5)
        status, _ = request(control_socket, {"command": "status"})
        status = (status or {}).get("status", {})
        answered = [trip for trip in trips if trip != float("inf")]
        result.update({
            "slowestHandlingMicros": status.get("slowestHandlingMicros"),
            "slowestHandlingKind": status.get("slowestHandlingKind"),
            "slowestHandlingByKind": status.get("slowestHandlingByKind") or {},
            "slowestHandlingCPUMicros": status.get("slowestHandlingCPUMicros"),
            "slowestHandlingWaits": status.get("slowestHandlingWaits"),
            "slowestHandlingPreemptions": status.get("slowestHandlingPreemptions"),
            "handledInputs": status.get("handledInputs"), "slowHandlings": status.get("slowHandlings") or {},
            "requests": len(trips), "unanswered": len(trips) - len(answered),
            "slowestRoundTripMs": round(max(answered) * 1000, 1) if answered else None,
            "medianRoundTripMs": round(sorted(answered)[len(answered) // 2] * 1000, 2) if answered else None,
            "requestsNeverRead": sent_unread, "playbackChanges": len(pauses) - 1,
            "serviceRunning": service.poll() is None,
            "playback": status.get("playback"), "queued": status.get("trackCount")})
    finally:
        if never_reads is not None:
            never_reads.close()
        for helper in helpers:
            if helper.poll() is None:
                helper.send_signal(signal.SIGCONT)
                helper.kill()
            helper.wait()
        if service.poll() is None:
            service.send_signal(signal.SIGTERM)
            try:
                service.wait(10)
            except subprocess.TimeoutExpired:
                service.kill()
                service.wait()
    return result


def handling_lines(handling):
    """The bench table's lines for the result of measure_handling."""
    if not handling:
        return []
    if "error" in handling:
        return [f"earshot serve under stress: {handling['error']}"]
    slowest = handling["slowestHandlingMicros"]
    verdict = "met" if slowest is not None and slowest <= 5000 else "not met"
    # The five slowest kinds of input, each with its own slowest handling.
    kinds = sorted(handling["slowestHandlingByKind"].items(), key=lambda item: -item[1])[:5]
    return [
        f"earshot serve under stress for {handling['seconds']} s ({handling['queued']} tracks, an "
        f"{handling['coverBytes'] / 1048576:.0f} MiB cover, {handling['followers']} followers of which "
        f"{handling['stoppedFollowers']} stopped, a client that never reads, {handling['requests']} requests, a "
        f"burst of three phone calls every 1.5 s, {handling['playbackChanges']} changes of playback seen): "
        f"slowestHandlingMicros {slowest}, a `{handling['slowestHandlingKind']}` (the owner ran "
        f"{handling['slowestHandlingCPUMicros']} us of it, waited {handling['slowestHandlingWaits']} times, was "
        f"preempted {handling['slowestHandlingPreemptions']} times; target <= 5000: {verdict}; "
        f"{handling['slowestHandlingMicrosAfterAdd']}, a `{handling['slowestHandlingKindAfterAdd']}`, after adding "
        f"the queue, before the stress); {handling['slowHandlings'].get('count')} of {handling['handledInputs']} "
        f"inputs over 5 ms ({handling['slowHandlings'].get('waited')} of them waited, "
        f"{handling['slowHandlings'].get('preempted')} were preempted without waiting); "
        f"slowest kinds: {', '.join(f'{kind} {micros}' for kind, micros in kinds)}; "
        f"request round trips median {handling['medianRoundTripMs']} "
        f"ms, slowest {handling['slowestRoundTripMs']} ms, {handling['unanswered']} unanswered; still running: "
        f"{handling['serviceRunning']}",
    ]
