# Sourced by scripts/test, scripts/bench and scripts/run: starts and stops a private PulseAudio.
# After `soundserver_start`, PULSE_SERVER and XDG_RUNTIME_DIR point at it and SOUNDSERVER_PID is set.

soundserver_start() {
    local root
    root=$(mktemp -d /tmp/earshot-pa.XXXXXX)
    export XDG_RUNTIME_DIR="$root/run"
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    export PULSE_RUNTIME_PATH="$XDG_RUNTIME_DIR/pulse"
    export HOME_FOR_PULSE="$root/home"
    mkdir -p "$HOME_FOR_PULSE"
    SOUNDSERVER_ROOT="$root"
    HOME="$HOME_FOR_PULSE" pulseaudio -n -F "$EARSHOT_ROOT/Config/pulse-test.pa" \
        --exit-idle-time=-1 --daemonize=no --use-pid-file=no --disallow-exit \
        --log-target=file:"$root/pulseaudio.log" &
    SOUNDSERVER_PID=$!
    export PULSE_SERVER="unix:$XDG_RUNTIME_DIR/pulse/native"
    export SOUNDSERVER_PID
    local i
    for i in $(seq 1 100); do
        if pactl info >/dev/null 2>&1; then return 0; fi
        kill -0 "$SOUNDSERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$root/pulseaudio.log" >&2 || true
    return 1
}

soundserver_stop() {
    if [ -n "${SOUNDSERVER_PID:-}" ]; then
        kill "$SOUNDSERVER_PID" 2>/dev/null || true
        wait "$SOUNDSERVER_PID" 2>/dev/null || true
        SOUNDSERVER_PID=
    fi
    if [ -n "${SOUNDSERVER_ROOT:-}" ]; then rm -rf "$SOUNDSERVER_ROOT"; fi
}
