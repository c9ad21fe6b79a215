#!/usr/bin/env bash
# scripts/lib/stress-run.sh: plays one long track with `earshot play` on a private sound server while stress-ng keeps
# every core busy, and reports the underruns three ways:
#   - Earshot's `underruns`: write callbacks that found the ring short (the decoder was late);
#   - Earshot's `serverUnderflows`: the server's own underflow events (it ran out of our data: the write callback
#     was late, or the ring was short);
#   - gaps heard: runs of silence (>= 1 ms) in a recording of the sink's monitor, inside the music (a steady sine);
# plus the realtime scheduling status reported. Numbers, never assertions. For scripts/bench to call, or by hand:
#   scripts/lib/stress-run.sh --minutes 10 --latency 20
# Options: --minutes N (default 10; --seconds N for short trials), --latency MS (default 20, written to the
# configuration file), --server pulseaudio|pipewire (default pulseaudio), --earshot PATH (default: build release),
# --no-stress (the same run without stress-ng, for comparison), --json FILE (also write the numbers there).
# STRESS_RUN_KEEP=1 keeps the work folder (recording, status samples, earshot's log) for a closer look.
set -euo pipefail

usage() {
    echo "usage: scripts/lib/stress-run.sh [--minutes N | --seconds N] [--latency MS] [--server pulseaudio|pipewire]" \
        "[--earshot PATH] [--no-stress] [--json FILE]"
}
log() { printf '[stress-run] %s\n' "$*" >&2; }
die() { printf '[stress-run] error: %s\n' "$*" >&2; exit 1; }

seconds=600
latency=20
server=pulseaudio
earshot=
stress=true
json_out=
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) seconds=$((${2:?} * 60)); shift 2 ;;
        --seconds) seconds=${2:?}; shift 2 ;;
        --latency) latency=${2:?}; shift 2 ;;
        --server) server=${2:?}; shift 2 ;;
        --earshot) earshot=${2:?}; shift 2 ;;
        --no-stress) stress=false; shift ;;
        --json) json_out=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

EARSHOT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export EARSHOT_ROOT
cd "$EARSHOT_ROOT"
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/soundserver.sh
source scripts/lib/soundserver.sh
ensure_swift

packages=(pulseaudio pulseaudio-utils lame sox stress-ng python3)
[ "$server" != pipewire ] || packages+=(pipewire pipewire-pulse wireplumber dbus-daemon)
# The build's packages (scripts/lib/common.sh: build_packages) only when it builds (no --earshot given).
if [ -z "$earshot" ]; then ensure_build_packages "${packages[@]}"; else ensure_packages "${packages[@]}"; fi

if [ -z "$earshot" ]; then
    scratch=()
    [ -z "${EARSHOT_SCRATCH_PATH:-}" ] || scratch=(--scratch-path "$EARSHOT_SCRATCH_PATH")
    log "building Earshot (release)"
    swift build -c release --product earshot "${scratch[@]}" >&2
    earshot="$(swift build -c release --show-bin-path "${scratch[@]}")/earshot"
fi
[ -x "$earshot" ] || die "no earshot binary at $earshot"

work=$(mktemp -d /tmp/earshot-stress.XXXXXX)
stress_pid=
recorder_pid=
player_pid=
cleanup() {
    for pid in "$player_pid" "$recorder_pid" "$stress_pid"; do
        [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    soundserver_stop
    [ -n "${STRESS_RUN_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "making a ${seconds}-second track (a steady 440 Hz sine, 44.1 kHz stereo, 192 kb/s)"
sox -n -r 44100 -c 2 -b 16 "$work/track.wav" synth "$seconds" sine 440 vol 0.4 2>/dev/null
lame --quiet -b 192 "$work/track.wav" "$work/track.mp3"
rm -f "$work/track.wav"

mkdir -p "$work/config/earshot" "$work/state"
printf '{ "targetLatencyMilliseconds": %d }\n' "$latency" >"$work/config/earshot/config.json"

export EARSHOT_TEST_SERVER=$server
log "starting a private $server"
soundserver_start || die "the private $server did not start"

# The recorder first: on an idle null sink its first data comes up to 2 s late (PLATFORM.md).
parec --device=headphones.monitor --rate=44100 --channels=2 --format=s16le --raw --latency-msec=50 \
    --property=node.dont-reconnect=true "$work/monitor.raw" &
recorder_pid=$!
for _ in $(seq 1 100); do
    [ -s "$work/monitor.raw" ] && break
    sleep 0.05
done
[ -s "$work/monitor.raw" ] || die "the monitor recorder got no data"

if $stress; then
    log "starting stress-ng --cpu 2 --cpu-method matrixprod (for the whole run)"
    stress-ng --cpu 2 --cpu-method matrixprod --timeout "$((seconds + 120))s" --quiet &
    stress_pid=$!
    sleep 2
fi

export EARSHOT_SOCKET="$work/control.sock" XDG_CONFIG_HOME="$work/config" XDG_STATE_HOME="$work/state"
log "playing for ${seconds} s at a ${latency} ms target latency"
"$earshot" play "$work/track.mp3" 2>"$work/earshot.log" &
player_pid=$!

# Status every 5 s while it plays. A player that pauses by itself (its stall watchdog: the server stopped asking for
# audio) would wait forever: it gets until the track's length plus a minute, then its last status is the result.
: >"$work/status.jsonl"
deadline=$((SECONDS + seconds + 60))
while kill -0 "$player_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
    if reply=$("$earshot" status --json 2>/dev/null); then
        printf '%s\n' "$reply" >>"$work/status.jsonl"
    fi
    sleep 5
done
player_status=0
if kill -0 "$player_pid" 2>/dev/null; then
    log "earshot play did not finish in time; stopping it"
    kill "$player_pid" 2>/dev/null || true
    wait "$player_pid" 2>/dev/null || true
    player_status=124
else
    wait "$player_pid" || player_status=$?
fi
player_pid=
sleep 1
kill "$recorder_pid" 2>/dev/null || true
wait "$recorder_pid" 2>/dev/null || true
recorder_pid=
if [ -n "$stress_pid" ]; then
    kill "$stress_pid" 2>/dev/null || true
    wait "$stress_pid" 2>/dev/null || true
    stress_pid=
fi
[ "$player_status" -eq 0 ] || log "earshot play exited with $player_status; its log:"$'\n'"$(cat "$work/earshot.log")"

python3 - "$work" "$seconds" "$latency" "$server" "$stress" "$player_status" "$json_out" <<'PY'
import array, json, re, sys
work, seconds, latency, server, stress, player_status, json_out = sys.argv[1:8]
statuses = [json.loads(line) for line in open(f"{work}/status.jsonl") if line.strip()]
log = open(f"{work}/earshot.log").read()
finished = re.findall(r"state=finished underruns=(\d+) serverUnderflows=(\d+)", log)
realtime = statuses[-1].get("realtime") if statuses else None

# Gaps heard: runs of >= 1 ms of digital silence between the first and the last loud sample of the recording.
samples = array.array("h")
with open(f"{work}/monitor.raw", "rb") as raw:
    samples.frombytes(raw.read())
left = samples[0::2]
first = next((i for i, value in enumerate(left) if abs(value) > 1000), None)
last = next((i for i in range(len(left) - 1, -1, -1) if abs(left[i]) > 1000), None)
gaps, longest, run = 0, 0, 0
rate = 44100
if first is not None:
    for value in left[first:last + 1]:
        if -2 <= value <= 2:
            run += 1
        else:
            if run >= rate // 1000:
                gaps += 1
                longest = max(longest, run)
            run = 0
heard_seconds = (last - first + 1) / rate if first is not None else 0.0
result = {
    "server": server, "stress": stress == "true", "seconds": int(seconds), "targetLatencyMs": int(latency),
    "exitStatus": int(player_status), "realtime": realtime,
    # The finished line when it ran to the end, else the last status.
    "underruns": int(finished[-1][0]) if finished else (statuses[-1]["underruns"] if statuses else None),
    "serverUnderflows": int(finished[-1][1]) if finished else (statuses[-1]["serverUnderflows"] if statuses else None),
    "finalPlayback": statuses[-1]["playback"] if statuses else None,
    "pauseReason": statuses[-1].get("pauseReason") if statuses else None,
    "heardSeconds": round(heard_seconds, 1), "gapsHeard": gaps, "longestGapMs": round(longest * 1000 / rate, 1),
    "statusSamples": len(statuses),
}
for key, value in result.items():
    print(f"{key:>18}: {value}")
if json_out:
    with open(json_out, "w") as out:
        json.dump(result, out, indent=2)
PY
