# shellcheck shell=bash
# Sourced by scripts/test, scripts/bench, scripts/run and scripts/lib/soundserver-ctl: starts and stops a private
# sound server with two virtual outputs, `headphones` (the default sink) and `speakers`.
#
# Which server: EARSHOT_TEST_SERVER=pulseaudio (the default), pipewire, pipewire-1.4, pipewire-1.6 or pulseaudio-17.
#   pulseaudio  `pulseaudio -n -F Config/pulse-test.pa` (null sinks, module-role-cork, a null default source).
#   pipewire    the system's PipeWire 0.3.65 and WirePlumber 0.4.13: a private session bus (`dbus-daemon
#               --session`, WirePlumber needs one), then `pipewire`, `wireplumber` (Config/wireplumber-test/: no
#               hardware monitors, no stream restore) and `pipewire-pulse`; the null sinks are made with
#               `pactl load-module module-null-sink`, and so is the microphone `mic`, the default source.
#   pipewire-1.4  the same stack from PipeWire 1.4.2 and WirePlumber 0.5.8 of bookworm-backports, unpacked into a
#               private prefix under the build folder (scripts/lib/pipewire-prefix.sh; downloaded once), with
#               WirePlumber 0.5's SPA-JSON configuration (Config/wireplumber-0.5-test/).
#   pipewire-1.6  the same stack from PipeWire 1.6.9 and WirePlumber 0.5.12 of trixie-backports (the same
#               configuration), its session bus too, chrooted in a Debian 13 root made once under the build folder
#               (scripts/lib/debian13-root.sh, scripts/lib/soundserver-chroot.sh; needs root). WirePlumber 0.5.11
#               and later send MPRIS `Pause` to a player whose output went away: to a player on
#               SOUNDSERVER_DBUS_ADDRESS, the bus WirePlumber is on.
#   pulseaudio-17 PulseAudio 17.0 of trixie with Config/pulse-test.pa, chrooted in the same root.
# All run as the caller (root in CI), headless, without systemd, and are up in about a second. The chrooted ones
# run in private mount namespaces, with SOUNDSERVER_ROOT bound at the same path inside: the host's pactl, the
# tests and Earshot reach them through the same PULSE_SERVER and XDG_RUNTIME_DIR as the others.
#
# After `soundserver_start` these are exported:
#   PULSE_SERVER        the server's native socket (libpulse, pactl, paplay and parec use it)
#   XDG_RUNTIME_DIR     the server's private runtime folder (short: socket paths are limited to 108 bytes)
#   EARSHOT_TEST_SERVER and SOUNDSERVER_KIND   `pulseaudio`, `pipewire`, `pipewire-1.4`, `pipewire-1.6` or
#                       `pulseaudio-17`
#   SOUNDSERVER_ROOT    the private folder with logs, pid files and (pipewire) XDG_CONFIG_HOME / XDG_STATE_HOME
#   SOUNDSERVER_PID     the process serving PULSE_SERVER (pulseaudio, or pipewire-pulse) when it started; a
#                       restart changes it: ask `soundserver-ctl pid`
#   SOUNDSERVER_CTL     scripts/lib/soundserver-ctl: kill / start / restart / unplug / replug from a test
#   SOUNDSERVER_PERIOD_FRAMES  (pipewire) the graph's smallest period, in frames at its 48 kHz (see
#                       _soundserver_set_min_quantum): PipeWire corks, moves and drops a stream at a period's edge,
#                       so what it reports of a stopped stream is exact to one period; 0 on pulseaudio
#   SOUNDSERVER_DBUS_ADDRESS   (pipewire kinds) the private session bus the stack uses. It is NOT exported as
#                       DBUS_SESSION_BUS_ADDRESS, so programs under test see the same session bus on both servers.
# The daemons get their own HOME, XDG_CONFIG_HOME and XDG_STATE_HOME inside SOUNDSERVER_ROOT; the caller's are
# left alone.
#
# Recorders: on pipewire give `parec` `--property=node.dont-reconnect=true` (WirePlumber otherwise moves a recorder
# whose monitor went away to the new default source); on pulseaudio the default source is the null source
# `silence`. On both, name the monitor explicitly.
#
# `soundserver_stop` stops every process it started (also those a `soundserver-ctl start` started) by the pids in
# SOUNDSERVER_ROOT/pids, then removes SOUNDSERVER_ROOT. Safe to call twice and after a failed start.

# The repository root, when the caller did not say.
: "${EARSHOT_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

# shellcheck source=pipewire-prefix.sh
source "$EARSHOT_ROOT/scripts/lib/pipewire-prefix.sh"
# shellcheck source=soundserver-chroot.sh
source "$EARSHOT_ROOT/scripts/lib/soundserver-chroot.sh"

# The control script tests run through Process (see its header).
SOUNDSERVER_CTL="$EARSHOT_ROOT/scripts/lib/soundserver-ctl"

# The sinks of the standard layout and their descriptions.
SOUNDSERVER_SINKS=(headphones speakers)
# The private PipeWire's smallest graph period, in frames (see _soundserver_set_min_quantum).
SOUNDSERVER_PIPEWIRE_PERIOD_FRAMES=1024
declare -gA SOUNDSERVER_SINK_DESCRIPTIONS=([headphones]=Headphones [speakers]=Speakers)

_soundserver_log() { printf '[soundserver] %s\n' "$*" >&2; }

# soundserver_start: starts the server chosen by EARSHOT_TEST_SERVER in a fresh private folder and waits until it
# answers with the standard layout. A server this shell already started and that is still running is reused.
soundserver_start() {
    if [ -n "${SOUNDSERVER_ROOT:-}" ] && [ -d "$SOUNDSERVER_ROOT" ] && _soundserver_running; then
        return 0
    fi
    local kind="${EARSHOT_TEST_SERVER:-pulseaudio}"
    case "$kind" in
        pulseaudio | pipewire) ;;
        pipewire-1.4)
            # Prepared before the private folder exists: a failed download leaves nothing to clean up.
            pipewire_prefix_prepare >/dev/null || {
                _soundserver_log "the PipeWire 1.4 prefix could not be prepared"
                return 1
            }
            ;;
        pipewire-1.6 | pulseaudio-17) _soundserver_chroot_prepare || return 1 ;;
        *)
            _soundserver_log "EARSHOT_TEST_SERVER must be pulseaudio, pipewire, pipewire-1.4, pipewire-1.6 or" \
                "pulseaudio-17, not '$kind'"
            return 1
            ;;
    esac
    local root
    # Short: the sockets live below it and a unix socket path longer than 108 bytes cannot be bound.
    root=$(mktemp -d /tmp/es-snd.XXXXXX) || return 1
    mkdir -p "$root/run" "$root/pids" && chmod 700 "$root/run"
    printf '%s\n' "$kind" >"$root/kind"
    _soundserver_chroot_record "$root" "$kind"
    SOUNDSERVER_ROOT="$root"
    SOUNDSERVER_KIND="$kind"
    EARSHOT_TEST_SERVER="$kind"
    SOUNDSERVER_PERIOD_FRAMES=0
    [[ "$kind" == pulseaudio* ]] || SOUNDSERVER_PERIOD_FRAMES=$SOUNDSERVER_PIPEWIRE_PERIOD_FRAMES
    export SOUNDSERVER_ROOT SOUNDSERVER_KIND EARSHOT_TEST_SERVER SOUNDSERVER_CTL SOUNDSERVER_PERIOD_FRAMES
    _soundserver_export_addresses
    if ! _soundserver_launch_retrying "start"; then
        _soundserver_log "the private $kind did not start; logs follow"
        _soundserver_dump_logs
        soundserver_stop
        return 1
    fi
    SOUNDSERVER_PID=$(_soundserver_server_pid)
    export SOUNDSERVER_PID
    return 0
}

# soundserver_stop: stops everything started in SOUNDSERVER_ROOT (by pid, SIGTERM then SIGKILL after 5 s) and removes
# the folder.
soundserver_stop() {
    if [ -n "${SOUNDSERVER_ROOT:-}" ] && [ -d "$SOUNDSERVER_ROOT/pids" ]; then
        _soundserver_kill_all TERM
        # The bus goes last: WirePlumber and pipewire-pulse talk to it while they shut down.
        _soundserver_stop_process dbus TERM
        _soundserver_chroot_stop
        rm -rf "$SOUNDSERVER_ROOT"
    fi
    SOUNDSERVER_ROOT=
    SOUNDSERVER_PID=
    unset SOUNDSERVER_DBUS_ADDRESS
}

# soundserver_kill: kills the sound server the hard way (SIGKILL), as a crash would, and waits until it is gone.
# The private bus and folder stay, so `soundserver_relaunch` can start it again at the same address.
soundserver_kill() {
    _soundserver_require_root || return 1
    _soundserver_kill_all KILL
}

# soundserver_relaunch: starts the server again at the same address with the standard layout (after
# soundserver_kill, or after it died). Does nothing when it is running.
soundserver_relaunch() {
    _soundserver_require_root || return 1
    _soundserver_running && return 0
    _soundserver_kill_all KILL
    if ! _soundserver_launch_retrying "start again"; then
        _soundserver_log "the private $SOUNDSERVER_KIND did not start again; logs follow"
        _soundserver_dump_logs
        return 1
    fi
}

# _soundserver_launch_retrying WHAT: launches the stack, and from scratch up to twice more if it did not come up, the
# last time after a pause. A stack of three daemons sometimes comes up without its graph (seen with pipewire restarted
# in a hurry: wireplumber "Failed to connect to PipeWire"), or refuses its layout (pactl's "Failure: Not supported" 2 s
# into a start: PipeWire 1.6.9 in a Debian 13 root just made, 2026-12-04; PipeWire 0.3.65 started beside the other
# lane's PulseAudio, 2026-12-05, where a second launch once came up and, in two runs of scripts/test, no launch did).
# The step that answers so is setting the default sink, now retried on its own (_soundserver_set_default_sink).
_soundserver_launch_retrying() {
    local attempt
    for attempt in 1 2 3; do
        if [ "$attempt" -gt 1 ]; then
            _soundserver_log "the private $SOUNDSERVER_KIND did not $1; trying again"
            _soundserver_kill_all KILL
            [ "$attempt" -lt 3 ] || sleep 3
        fi
        _soundserver_launch && return 0
    done
    return 1
}

# soundserver_freeze: stops the process that runs the audio graph (SIGSTOP: pulseaudio, or the pipewire daemon)
# so that no stream is asked for data any more, while (on pipewire) pipewire-pulse still answers: a stall with no
# callback at all. soundserver_thaw (SIGCONT) lets it go on; soundserver_stop thaws first.
soundserver_freeze() {
    _soundserver_require_root || return 1
    _soundserver_signal_graph STOP
}

# soundserver_thaw: lets a frozen server go on.
soundserver_thaw() {
    _soundserver_require_root || return 1
    _soundserver_signal_graph CONT
}

# soundserver_unplug SINK: "unplugs" the device SINK as a USB or Bluetooth removal does: unloads the module that
# created its null sink (on both servers).
soundserver_unplug() {
    local sink="$1" module
    module=$(_soundserver_sink_module "$sink")
    if [ -z "$module" ]; then
        _soundserver_log "unplug: no sink called $sink"
        return 1
    fi
    _soundserver_pactl unload-module "$module"
}

# soundserver_replug SINK: "plugs" SINK back in (a null sink of that name); headphones becomes the default again.
soundserver_replug() {
    local sink="$1"
    if [ -z "$(_soundserver_sink_module "$sink")" ]; then
        _soundserver_pactl load-module module-null-sink "sink_name=$sink" \
            "sink_properties=device.description=${SOUNDSERVER_SINK_DESCRIPTIONS[$sink]:-$sink}" || return 1
    fi
    if [ "$sink" = headphones ]; then
        _soundserver_set_default_sink headphones
    fi
}

# soundserver_layout: puts the standard layout back (both sinks present, headphones the default sink).
soundserver_layout() {
    local sink
    for sink in "${SOUNDSERVER_SINKS[@]}"; do
        soundserver_replug "$sink" || return 1
    done
}

# _soundserver_set_default_sink SINK: makes SINK the default, trying for up to 2 s: right after its null sink was
# loaded, pipewire-pulse 1.6.9 once answered "Failure: Not supported" and the whole start was thrown away
# (2026-12-05; the same words made every launch of PipeWire 0.3.65 fail in stop 31's runs).
_soundserver_set_default_sink() {
    _soundserver_wait_for 20 "$(_soundserver_server_name)" pactl set-default-sink "$1" \
        || _soundserver_pactl set-default-sink "$1"
}

# _soundserver_pactl ARGS...: `pactl ARGS`, quiet when it succeeds; when it fails, says which command failed and
# what pactl answered (a bare "Failure: Not supported" in a test run's log names no step of a start).
_soundserver_pactl() {
    local said
    said=$(pactl "$@" 2>&1 >/dev/null) && return 0
    _soundserver_log "pactl $* failed: ${said:-(no message)}"
    return 1
}

# ---------------------------------------------------------------------------------------------------------------
# Internals. State lives in files under SOUNDSERVER_ROOT, so that soundserver-ctl (another process) and the shell
# that started the server agree on what runs: kind, and one pid file per process ("PID STARTTIME", the start time
# from /proc guarding against a reused pid).

_soundserver_require_root() {
    if [ -z "${SOUNDSERVER_ROOT:-}" ] || [ ! -f "$SOUNDSERVER_ROOT/kind" ]; then
        _soundserver_log "no private sound server here (SOUNDSERVER_ROOT is unset or gone): run scripts/test"
        return 1
    fi
    SOUNDSERVER_KIND=$(cat "$SOUNDSERVER_ROOT/kind")
}

_soundserver_export_addresses() {
    XDG_RUNTIME_DIR="$SOUNDSERVER_ROOT/run"
    PULSE_RUNTIME_PATH="$XDG_RUNTIME_DIR/pulse"
    PULSE_SERVER="unix:$XDG_RUNTIME_DIR/pulse/native"
    export XDG_RUNTIME_DIR PULSE_RUNTIME_PATH PULSE_SERVER
    if [[ "$SOUNDSERVER_KIND" != pulseaudio* ]]; then
        SOUNDSERVER_DBUS_ADDRESS="unix:path=$XDG_RUNTIME_DIR/bus"
        export SOUNDSERVER_DBUS_ADDRESS
    else
        unset SOUNDSERVER_DBUS_ADDRESS
    fi
}

# The start time of process PID in clock ticks since boot (field 22 of /proc/PID/stat), or nothing.
_soundserver_start_time() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    # The command name (field 2) may contain spaces: cut after its closing parenthesis.
    stat=${stat##*) }
    # shellcheck disable=SC2086
    set -- $stat
    # Fields from 3 on: state is $1, starttime (field 22) is ${20}.
    [ "$1" != Z ] || return 1
    printf '%s\n' "${20}"
}

# Whether the process recorded in pid file NAME is alive (and not a zombie, nor a different process on a reused pid).
_soundserver_alive() {
    local file="$SOUNDSERVER_ROOT/pids/$1.pid" pid started now
    [ -f "$file" ] || return 1
    read -r pid started <"$file" || return 1
    now=$(_soundserver_start_time "$pid") || return 1
    [ "$now" = "$started" ]
}

_soundserver_pid_of() {
    local pid _
    [ -f "$SOUNDSERVER_ROOT/pids/$1.pid" ] || return 1
    read -r pid _ <"$SOUNDSERVER_ROOT/pids/$1.pid" && printf '%s\n' "$pid"
}

# Runs its arguments as a clean daemon: no signal blocked, SIGTERM, SIGINT, SIGHUP and SIGPIPE at their defaults,
# and no descriptor open but 0, 1 and 2. Both matter when a test runs soundserver-ctl through Foundation's Process:
#   - the test thread blocks almost every signal, the child inherits that mask (bash passes it on too), and a daemon
#     with SIGTERM blocked could only be stopped with SIGKILL;
#   - Foundation learns that its child exited when a socket it shares with the child closes; a daemon that inherited
#     that socket keeps it open, and the test's waitUntilExit() would hang until the daemon dies.
# (perl-base is Essential on Debian, so perl is always there.)
# shellcheck disable=SC2016  # Perl code: its $ variables are Perl's.
_SOUNDSERVER_CLEAN_DAEMON='sigprocmask(SIG_SETMASK, POSIX::SigSet->new()); $SIG{$_} = "DEFAULT" for qw(TERM INT HUP PIPE);
opendir(my $fds, "/proc/self/fd") or die "no /proc/self/fd: $!\n"; my @open = grep { /^\d+$/ && $_ > 2 } readdir($fds);
closedir($fds); POSIX::close($_) for @open; exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\n"'

# Starts a daemon NAME in the background with the private environment, its output in SOUNDSERVER_ROOT/NAME.log,
# and records its pid. stdin is /dev/null and stdout/stderr go to the log, so that a caller reading our output
# through a pipe (a test running soundserver-ctl) is not held open by the daemon.
_soundserver_spawn() {
    local name="$1" prefix_environment=()
    shift
    # The chrooted servers' daemons, and their bus, run in the Debian 13 root (scripts/lib/soundserver-chroot.sh).
    _soundserver_chroot_command
    # PipeWire 1.4's daemons run from the prefix (its PATH, libraries, plugins and configuration); the bus does not.
    if [ "$SOUNDSERVER_KIND" = pipewire-1.4 ] && [ "$name" != dbus ]; then
        mapfile -t prefix_environment < <(pipewire_prefix_environment "$(pipewire_prefix_folder)/prefix")
    fi
    env HOME="$SOUNDSERVER_ROOT/home" XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" \
        XDG_CONFIG_HOME="$SOUNDSERVER_ROOT/config" XDG_STATE_HOME="$SOUNDSERVER_ROOT/state" \
        DBUS_SESSION_BUS_ADDRESS="${SOUNDSERVER_DBUS_ADDRESS:-}" PULSE_RUNTIME_PATH="$PULSE_RUNTIME_PATH" \
        "${prefix_environment[@]}" perl -MPOSIX -e "$_SOUNDSERVER_CLEAN_DAEMON" "${SOUNDSERVER_CHROOT_EXEC[@]}" "$@" \
        </dev/null >>"$SOUNDSERVER_ROOT/$name.log" 2>&1 &
    local pid=$! started
    # Not a job of the calling shell: no "Killed" report when a test kills it, and the shell still reaps it.
    disown "$pid" 2>/dev/null || true
    started=$(_soundserver_start_time "$pid") || started=gone
    printf '%s %s\n' "$pid" "$started" >"$SOUNDSERVER_ROOT/pids/$name.pid"
}

_soundserver_signal_graph() {
    local name=pulseaudio
    [[ "$SOUNDSERVER_KIND" == pulseaudio* ]] || name=pipewire
    _soundserver_alive "$name" || { _soundserver_log "the $name process is not running"; return 1; }
    kill "-$1" "$(_soundserver_pid_of "$name")"
}

# Sends SIGNAL to process NAME, waits up to 5 s for it to go (then SIGKILL), and forgets it.
_soundserver_stop_process() {
    local name="$1" signal="$2" pid _
    if _soundserver_alive "$name"; then
        pid=$(_soundserver_pid_of "$name")
        # A frozen (SIGSTOPped) process would not act on SIGTERM.
        kill -CONT "$pid" 2>/dev/null || true
        kill "-$signal" "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            _soundserver_alive "$name" || break
            sleep 0.1
        done
        if _soundserver_alive "$name"; then
            kill -KILL "$pid" 2>/dev/null || true
            for _ in $(seq 1 20); do
                _soundserver_alive "$name" || break
                sleep 0.05
            done
        fi
    fi
    rm -f "$SOUNDSERVER_ROOT/pids/$name.pid"
}

# Stops the sound server's processes (not the bus), clients before the daemon they talk to.
_soundserver_kill_all() {
    local name
    for name in pulseaudio pipewire-pulse wireplumber pipewire; do
        _soundserver_stop_process "$name" "$1"
    done
}

_soundserver_server_pid() {
    _soundserver_pid_of "$(_soundserver_server_name)"
}

# The name of the process serving PULSE_SERVER: pulseaudio, or pipewire-pulse.
_soundserver_server_name() {
    case "$SOUNDSERVER_KIND" in
        pulseaudio | pulseaudio-17) echo pulseaudio ;;
        pipewire | pipewire-1.4 | pipewire-1.6) echo pipewire-pulse ;;
    esac
}

# Whether the process serving PULSE_SERVER is alive and answers.
_soundserver_running() {
    [ -n "${SOUNDSERVER_ROOT:-}" ] && [ -f "$SOUNDSERVER_ROOT/kind" ] || return 1
    case "$(cat "$SOUNDSERVER_ROOT/kind")" in
        pulseaudio | pulseaudio-17) _soundserver_alive pulseaudio ;;
        pipewire | pipewire-1.4 | pipewire-1.6)
            _soundserver_alive pipewire && _soundserver_alive wireplumber && _soundserver_alive pipewire-pulse ;;
    esac || return 1
    pactl info >/dev/null 2>&1
}

# Waits up to TENTHS tenths of a second for a command to succeed, failing early when process NAME dies.
_soundserver_wait_for() {
    local tenths="$1" name="$2" _
    shift 2
    for _ in $(seq 1 "$tenths"); do
        "$@" >/dev/null 2>&1 && return 0
        _soundserver_alive "$name" || { "$@" >/dev/null 2>&1; return; }
        sleep 0.1
    done
    return 1
}

_soundserver_launch() {
    mkdir -p "$SOUNDSERVER_ROOT/home"
    case "$SOUNDSERVER_KIND" in
        pulseaudio) _soundserver_launch_pulseaudio ;;
        pulseaudio-17) _soundserver_chroot_launch_pulseaudio ;;
        pipewire | pipewire-1.4 | pipewire-1.6) _soundserver_launch_pipewire ;;
    esac || return 1
    _soundserver_check_layout
}

_soundserver_launch_pulseaudio() {
    if ! command -v pulseaudio >/dev/null 2>&1; then
        _soundserver_log "pulseaudio is not installed (apt-get install pulseaudio pulseaudio-utils)"
        return 1
    fi
    _soundserver_spawn pulseaudio pulseaudio -n -F "$EARSHOT_ROOT/Config/pulse-test.pa" \
        --exit-idle-time=-1 --daemonize=no --use-pid-file=no --disallow-exit --log-target=stderr
    _soundserver_wait_for 100 pulseaudio pactl info
}

_soundserver_launch_pipewire() {
    local program configuration=wireplumber-test
    [ "$SOUNDSERVER_KIND" = pipewire ] || configuration=wireplumber-0.5-test
    for program in dbus-daemon pipewire wireplumber pipewire-pulse; do
        if _soundserver_chrooted; then
            _soundserver_chroot_has "$program" || return 1
            continue
        fi
        if [ "$SOUNDSERVER_KIND" = pipewire-1.4 ] && [ "$program" != dbus-daemon ]; then
            [ -x "$(pipewire_prefix_folder)/prefix/usr/bin/$program" ] && continue
            _soundserver_log "$program is missing from the PipeWire 1.4 prefix ($(pipewire_prefix_folder)/prefix)"
            return 1
        fi
        if ! command -v "$program" >/dev/null 2>&1; then
            _soundserver_log "$program is not installed (apt-get install pipewire pipewire-pulse wireplumber dbus-daemon)"
            return 1
        fi
    done
    # Fresh configuration and state for every start: WirePlumber remembers where streams were moved, and a
    # remembered target would decide where the next test's stream starts.
    rm -rf "$SOUNDSERVER_ROOT/config" "$SOUNDSERVER_ROOT/state"
    mkdir -p "$SOUNDSERVER_ROOT/config/wireplumber" "$SOUNDSERVER_ROOT/state"
    cp -R "$EARSHOT_ROOT/Config/$configuration/." "$SOUNDSERVER_ROOT/config/wireplumber/"

    if ! _soundserver_alive dbus; then
        rm -f "$XDG_RUNTIME_DIR/bus"
        _soundserver_spawn dbus dbus-daemon --session --nofork --nopidfile --address="$SOUNDSERVER_DBUS_ADDRESS"
        _soundserver_wait_for 50 dbus test -S "$XDG_RUNTIME_DIR/bus" || return 1
    fi
    # A killed pipewire leaves its socket behind: waiting for the socket would then pass at once, and WirePlumber,
    # started before the new pipewire listens, would fail ("Failed to connect to PipeWire") and leave no graph.
    rm -f "$XDG_RUNTIME_DIR/pipewire-0" "$XDG_RUNTIME_DIR/pipewire-0.lock"
    _soundserver_spawn pipewire pipewire
    _soundserver_wait_for 50 pipewire test -S "$XDG_RUNTIME_DIR/pipewire-0" || return 1
    _soundserver_set_min_quantum || return 1
    _soundserver_spawn wireplumber wireplumber
    _soundserver_spawn pipewire-pulse pipewire-pulse
    _soundserver_wait_for 100 pipewire-pulse pactl info || return 1
    # The null sinks come from pipewire-pulse's module-null-sink (module-null-source and module-role-cork are
    # refused there).
    soundserver_layout >/dev/null || return 1
    _soundserver_make_microphone
}

# A microphone for the call tests (a browser's getUserMedia, pw-record, parecord record from the default source):
# pipewire-pulse refuses module-null-source, so a null sink made with the class of a virtual source stands in for
# one (PLATFORM.md, "Calls as real applications make them"), and becomes the default source. Monitor recorders
# name their sink's monitor and carry node.dont-reconnect, so a new default source does not move them. PulseAudio
# has its null source `silence` as the default source (Config/pulse-test.pa), which serves as the microphone there.
_soundserver_make_microphone() {
    if ! pactl list short sources 2>/dev/null | cut -f2 | grep -qx mic; then
        _soundserver_pactl load-module module-null-sink sink_name=mic media.class=Audio/Source/Virtual \
            channel_map=front-left,front-right || return 1
    fi
    _soundserver_pactl set-default-source mic
}

# The graph runs in periods of at least SOUNDSERVER_PIPEWIRE_PERIOD_FRAMES (1024 frames, 21.3 ms at 48 kHz: PipeWire's
# default period), even when a client asks for less: the tests' parec asks for 10 ms and Earshot's buffer is 50 ms, and
# PipeWire chose 512-frame periods for them (as `pw-top` showed). On the virtual machines the tests run on, a virtual
# CPU can take milliseconds to get going again, and with 512-frame periods the graph missed cycles: a paplay with 10 s
# buffered played with gaps on both PipeWires (10 to 200 short dropouts in a 4 s tone on PipeWire 0.3, in most runs),
# and with 1024 frames it played cleanly in 16 of 18 runs (one short gap in each of the other two). A busy loop at
# SCHED_IDLE on each CPU, keeping them awake, helped only partly. PulseAudio buffers per stream and was not affected.
# (Both PipeWires round a minimum down to a power of two: 768 gave 512-frame periods.)
_soundserver_set_min_quantum() {
    local prefix_environment=() frames=$SOUNDSERVER_PIPEWIRE_PERIOD_FRAMES settings _
    if [ "$SOUNDSERVER_KIND" = pipewire-1.4 ]; then
        mapfile -t prefix_environment < <(pipewire_prefix_environment "$(pipewire_prefix_folder)/prefix")
    fi
    # The settings metadata appears a moment after the socket.
    for _ in $(seq 1 50); do
        if _soundserver_tool "${prefix_environment[@]}" pw-metadata -n settings 0 clock.min-quantum "$frames" \
            >/dev/null 2>&1 \
            && settings=$(_soundserver_tool "${prefix_environment[@]}" pw-metadata -n settings 2>/dev/null) \
            && [[ "$settings" == *"clock.min-quantum' value:'$frames'"* ]]; then
            return 0
        fi
        sleep 0.1
    done
    _soundserver_log "could not set the graph's minimum period (pw-metadata -n settings 0 clock.min-quantum $frames)"
    return 1
}

# The index of the module that created the sink called NAME (its null-sink module), or nothing.
_soundserver_sink_module() {
    # `pactl list sinks` prints "Name:" before "Owner Module:" in each sink's block, on both servers.
    pactl list sinks 2>/dev/null | awk -v wanted="$1" '
        /^Sink #/ { name = "" }
        /^[ \t]+Name: / { name = $2 }
        /^[ \t]+Owner Module: / { if (name == wanted && !found) { print $3; found = 1 } }'
}

# Checks the standard layout: both sinks and their monitors exist, headphones is the default, and (pipewire)
# WirePlumber has applied it. Waits up to 5 s, since WirePlumber picks up a new default asynchronously.
_soundserver_check_layout() {
    local _ sinks sources default
    for _ in $(seq 1 50); do
        sinks=$(pactl list short sinks 2>/dev/null | cut -f2 | sort | tr '\n' ' ')
        sources=$(pactl list short sources 2>/dev/null | cut -f2 | tr '\n' ' ')
        default=$(pactl get-default-sink 2>/dev/null)
        if [[ " $sinks" == *" headphones "* && " $sinks" == *" speakers "* && " $sources " == *" headphones.monitor "* \
            && " $sources " == *" speakers.monitor "* && "$default" == headphones ]]; then
            return 0
        fi
        sleep 0.1
    done
    _soundserver_log "layout not reached: sinks [$sinks], sources [$sources], default sink '$default'"
    return 1
}

_soundserver_dump_logs() {
    local log
    for log in "$SOUNDSERVER_ROOT"/*.log; do
        [ -f "$log" ] || continue
        printf -- '--- %s\n' "$(basename "$log")" >&2
        tail -n 40 "$log" >&2
    done
}
