# Sourced by scripts/test, scripts/bench and scripts/run: starts and stops a private PulseAudio.
# After `soundserver_start`, PULSE_SERVER and XDG_RUNTIME_DIR point at it and SOUNDSERVER_PID is set.
# The server loads only Config/pulse-test.pa (`-n`): sinks `headphones` (default) and `speakers`.

# The repository root, when the caller did not say.
: "${EARSHOT_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

soundserver_start() {
    if [ -n "${SOUNDSERVER_PID:-}" ] && kill -0 "$SOUNDSERVER_PID" 2>/dev/null; then
        return 0
    fi
    if ! command -v pulseaudio >/dev/null 2>&1; then
        echo "soundserver: pulseaudio is not installed (apt-get install pulseaudio pulseaudio-utils)" >&2
        return 1
    fi
    local root
    # Short paths: a unix socket path longer than 108 bytes cannot be bound.
    root=$(mktemp -d /tmp/earshot-pa.XXXXXX)
    export XDG_RUNTIME_DIR="$root/run"
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    export PULSE_RUNTIME_PATH="$XDG_RUNTIME_DIR/pulse"
    export HOME_FOR_PULSE="$root/home"
    mkdir -p "$HOME_FOR_PULSE"
    SOUNDSERVER_ROOT="$root"
    # stdin from /dev/null: in CI there is none, and the server must not hold the caller's terminal.
    HOME="$HOME_FOR_PULSE" pulseaudio -n -F "$EARSHOT_ROOT/Config/pulse-test.pa" \
        --exit-idle-time=-1 --daemonize=no --use-pid-file=no --disallow-exit \
        --log-target=file:"$root/pulseaudio.log" </dev/null &
    SOUNDSERVER_PID=$!
    export PULSE_SERVER="unix:$XDG_RUNTIME_DIR/pulse/native"
    export SOUNDSERVER_PID
    local i
    for i in $(seq 1 100); do
        if pactl info >/dev/null 2>&1; then return 0; fi
        kill -0 "$SOUNDSERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "soundserver: the private PulseAudio did not come up; its log:" >&2
    cat "$root/pulseaudio.log" >&2 || true
    soundserver_stop
    return 1
}

soundserver_stop() {
    if [ -n "${SOUNDSERVER_PID:-}" ]; then
        kill "$SOUNDSERVER_PID" 2>/dev/null || true
        # A server stuck in a module must not hang the caller's exit: give it 5 s, then kill it.
        local i
        for i in $(seq 1 50); do
            kill -0 "$SOUNDSERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$SOUNDSERVER_PID" 2>/dev/null || true
        wait "$SOUNDSERVER_PID" 2>/dev/null || true
        SOUNDSERVER_PID=
    fi
    if [ -n "${SOUNDSERVER_ROOT:-}" ]; then
        rm -rf "$SOUNDSERVER_ROOT"
        SOUNDSERVER_ROOT=
    fi
}
