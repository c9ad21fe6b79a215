# shellcheck shell=bash
# Sourced by scripts/lib/soundserver.sh: what the chrooted servers (EARSHOT_TEST_SERVER=pipewire-1.6 and
# =pulseaudio-17, in the Debian 13 root of scripts/lib/debian13-root.sh) need beyond what the others do.
#
# Every daemon is started through debian13_exec_command: its own private mount namespace with /proc, /dev, /sys
# and SOUNDSERVER_ROOT bound into the root, then chroot, keeping its pid, so it is recorded, signalled and stopped
# by pid like the others. Nothing is mounted on the host, so nothing can stay mounted: a namespace's mounts go
# with its process. SOUNDSERVER_ROOT also holds:
#   chroot   the root the run's daemons run in
#   owner    "PID STARTTIME" of the shell that started the server: a folder whose owner is gone was left by a run
#            that was killed before its cleanup (its socket is dead, or its daemons are orphans); the next start of
#            a chrooted server stops those daemons by their recorded pids and removes the folder.

# debian13-root.sh is sourced here, so that soundserver.sh names one file for the chrooted servers.
# shellcheck source=debian13-root.sh
source "$EARSHOT_ROOT/scripts/lib/debian13-root.sh"

# The start of the command line of a daemon or tool of the chrooted server (set by _soundserver_chroot_command);
# empty for the other servers.
SOUNDSERVER_CHROOT_EXEC=()
# A run folder younger than this (seconds) is never taken for a stale one: its owner may still be writing it.
SOUNDSERVER_CHROOT_STALE_AGE=60

# Whether the server of this run is a chrooted one.
_soundserver_chrooted() {
    [[ "${SOUNDSERVER_KIND:-}" == pipewire-1.6 || "${SOUNDSERVER_KIND:-}" == pulseaudio-17 ]]
}

# The root the run's daemons run in.
_soundserver_chroot_dir() {
    cat "$SOUNDSERVER_ROOT/chroot"
}

# Makes sure the Debian 13 root is complete, and cleans up what killed runs left in it.
_soundserver_chroot_prepare() {
    local root
    root=$(debian13_prepare) || {
        _soundserver_log "the Debian 13 root for $kind could not be made (see the lines above)"
        return 1
    }
    _soundserver_chroot_clean_stale "$root"
}

# _soundserver_chroot_record FOLDER KIND: notes the root and the owner in a new run folder (chrooted kinds only).
_soundserver_chroot_record() {
    local folder=$1 kind=$2
    [[ "$kind" == pipewire-1.6 || "$kind" == pulseaudio-17 ]] || return 0
    debian13_root >"$folder/chroot"
    printf '%s %s\n' "$$" "$(_soundserver_start_time "$$")" >"$folder/owner"
}

# Sets SOUNDSERVER_CHROOT_EXEC: the root's private namespace and chroot, with the daemons' environment (the same
# variables _soundserver_spawn gives the others, at the same paths). Empty for the other servers.
_soundserver_chroot_command() {
    SOUNDSERVER_CHROOT_EXEC=()
    _soundserver_chrooted || return 0
    debian13_exec_command "$(_soundserver_chroot_dir)" "$SOUNDSERVER_ROOT"
    SOUNDSERVER_CHROOT_EXEC=("${DEBIAN13_EXEC[@]}" HOME="$SOUNDSERVER_ROOT/home" XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR"
        XDG_CONFIG_HOME="$SOUNDSERVER_ROOT/config" XDG_STATE_HOME="$SOUNDSERVER_ROOT/state"
        DBUS_SESSION_BUS_ADDRESS="${SOUNDSERVER_DBUS_ADDRESS:-}" PULSE_RUNTIME_PATH="$PULSE_RUNTIME_PATH")
}

# _soundserver_tool [VAR=value...] PROGRAM ARGS...: runs a tool of the server (pw-metadata) in the foreground: in the
# root for a chrooted server, else on the host with the VAR=value assignments given (PipeWire 1.4's prefix).
_soundserver_tool() {
    _soundserver_chroot_command
    if _soundserver_chrooted; then
        "${SOUNDSERVER_CHROOT_EXEC[@]}" "$@"
    else
        env "$@"
    fi
}

# Whether PROGRAM is installed in the root; says so when it is not.
_soundserver_chroot_has() {
    local root
    root=$(_soundserver_chroot_dir)
    [ -x "$root/usr/bin/$1" ] && return 0
    _soundserver_log "$1 is missing from the Debian 13 root $root (remove $root/.earshot-complete to make it again)"
    return 1
}

# Starts PulseAudio 17 in the root with the standard layout of Config/pulse-test.pa (copied into the run folder,
# which the root sees).
_soundserver_chroot_launch_pulseaudio() {
    _soundserver_chroot_has pulseaudio || return 1
    cp "$EARSHOT_ROOT/Config/pulse-test.pa" "$SOUNDSERVER_ROOT/pulse-test.pa" || return 1
    _soundserver_spawn pulseaudio pulseaudio -n -F "$SOUNDSERVER_ROOT/pulse-test.pa" \
        --exit-idle-time=-1 --daemonize=no --use-pid-file=no --disallow-exit --log-target=stderr
    _soundserver_wait_for 100 pulseaudio pactl info
}

# The pids of the processes running in ROOT whose runtime folder is RUNTIME (so another run's daemons in the same
# root are never touched).
_soundserver_chroot_pids() {
    local root=$1 runtime=$2 link process
    # One find over /proc (a readlink per process would fork hundreds of times).
    while read -r link; do
        process=${link%/root}
        tr '\0' '\n' <"$process/environ" 2>/dev/null | grep -qxF "XDG_RUNTIME_DIR=$runtime" || continue
        printf '%s\n' "${process#/proc/}"
    done < <(find /proc -mindepth 2 -maxdepth 2 -name root -lname "$root" 2>/dev/null)
}

# Ends what still runs in the root for RUN_FOLDER (TERM, then KILL after 5 s), by pid.
_soundserver_chroot_end_processes() {
    local root=$1 folder=$2 signal pids _
    for signal in TERM KILL; do
        mapfile -t pids < <(_soundserver_chroot_pids "$root" "$folder/run")
        [ ${#pids[@]} -gt 0 ] || return 0
        [ "$signal" = TERM ] || _soundserver_log "killing what is left running in $root for $folder: ${pids[*]}"
        kill -CONT "${pids[@]}" 2>/dev/null || true
        kill "-$signal" "${pids[@]}" 2>/dev/null || true
        for _ in $(seq 1 50); do
            [ -n "$(_soundserver_chroot_pids "$root" "$folder/run")" ] || return 0
            sleep 0.1
        done
    done
}

# After soundserver_stop stopped the recorded daemons: ends any process of this run still in the root (a child a
# daemon started), and removes the run folder's mount point in the root (an empty folder: the mounts were only in
# the daemons' namespaces).
_soundserver_chroot_stop() {
    [ -f "$SOUNDSERVER_ROOT/chroot" ] || return 0
    local root
    root=$(_soundserver_chroot_dir)
    _soundserver_chroot_end_processes "$root" "$SOUNDSERVER_ROOT"
    rmdir "$root$SOUNDSERVER_ROOT" 2>/dev/null || true
}

# Whether the process recorded as "PID STARTTIME" in FILE is alive.
_soundserver_chroot_recorded_alive() {
    local pid started
    read -r pid started <"$1" 2>/dev/null || return 1
    [ "$(_soundserver_start_time "$pid" 2>/dev/null)" = "$started" ]
}

# Cleans up after runs of ROOT that were killed before their cleanup: their run folders (a runtime folder with a dead
# socket, or one whose daemons outlived their owner) and the mount points they left in the root.
_soundserver_chroot_clean_stale() {
    local root=$1 folder pidfile now age
    now=$(date +%s)
    for folder in /tmp/es-snd.*; do
        [ -f "$folder/chroot" ] && [ "$(cat "$folder/chroot")" = "$root" ] || continue
        age=$((now - $(stat -c %Y "$folder/chroot")))
        [ "$age" -ge "$SOUNDSERVER_CHROOT_STALE_AGE" ] || continue
        ! _soundserver_chroot_recorded_alive "$folder/owner" || continue
        _soundserver_log "a run that was killed left $folder ($(cat "$folder/kind" 2>/dev/null)): stopping what it" \
            "left running and removing it"
        for pidfile in "$folder"/pids/*.pid; do
            [ -f "$pidfile" ] || continue
            if _soundserver_chroot_recorded_alive "$pidfile"; then
                kill -CONT "$(cut -d' ' -f1 "$pidfile")" 2>/dev/null || true
                kill -TERM "$(cut -d' ' -f1 "$pidfile")" 2>/dev/null || true
            fi
        done
        _soundserver_chroot_end_processes "$root" "$folder"
        rmdir "$root$folder" 2>/dev/null || true
        rm -rf "$folder"
    done
    # Mount points in the root whose run folder is gone.
    for folder in "$root"/tmp/es-snd.*; do
        [ -d "$folder" ] && [ ! -e "${folder#"$root"}" ] || continue
        rmdir "$folder" 2>/dev/null || true
    done
}
