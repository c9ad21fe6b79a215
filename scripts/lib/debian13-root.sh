# shellcheck shell=bash
# Sourced by scripts/lib/soundserver.sh: a Debian 13 (trixie) root for EARSHOT_TEST_SERVER=pulseaudio-17 and
# =pipewire-1.6, the newest servers. PulseAudio 17.0 (trixie) and PipeWire 1.6.9 + WirePlumber 0.5.12
# (trixie-backports) need trixie's glibc, so unlike PipeWire 1.4 (scripts/lib/pipewire-prefix.sh) they cannot be
# unpacked into a prefix on Debian 12: their daemons run chrooted in this root.
#
# One root holds both servers: Debian lets pulseaudio and pipewire-pulse be installed side by side (a desktop picks
# one by its user units), nothing starts by itself in a chroot without systemd, and each run has its own runtime
# folder, so the two never meet; one root costs one debootstrap (about 30 s and 150 MB) instead of two.
#
# The root is made once, under ${EARSHOT_SCRATCH_PATH:-.build}/debian13/:
#   root/                      `debootstrap --variant=minbase trixie` from the mirror this machine's apt uses, then,
#                              with a sources file inside the root only (trixie and trixie-backports; the host's apt
#                              sources are never touched), the servers and a session bus daemon
#   root/.earshot-complete     written last, naming the packages: a root without it (an interrupted debootstrap or
#                              install) is removed and made again
#   making.log                 debootstrap's and apt's output of the last making
# Making it needs root (debootstrap, chroot, mount). Nothing is ever mounted on the host: debootstrap, apt and
# every daemon run in a private mount namespace (`unshare --mount`) where /proc, /dev and /sys are bound into the
# root, together with the run's private folder (SOUNDSERVER_ROOT, at the same path inside, so that the runtime
# folder, sockets, configuration and logs have one name on both sides). Those mounts vanish with the last process
# of the namespace, on every exit path, even when the caller is killed.

# The packages of the root, installed with `-t trixie-backports`: what backports has (PipeWire, WirePlumber and
# their libraries) comes from there, the rest (PulseAudio, the bus) from trixie.
DEBIAN13_PACKAGES=(pipewire pipewire-bin pipewire-pulse wireplumber pulseaudio dbus-daemon)
# The versions the root must hold (checked after the install: backports can move on).
DEBIAN13_VERSIONS=("pipewire 1.6.9" "wireplumber 0.5.12" "pulseaudio 17.0")
# The PATH inside the root.
DEBIAN13_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

_debian13_log() { printf '[debian13] %s\n' "$*" >&2; }

# debian13_folder: prints the folder holding the root and its logs.
debian13_folder() {
    printf '%s/debian13\n' "${EARSHOT_SCRATCH_PATH:-$EARSHOT_ROOT/.build}"
}

# debian13_root: prints the root's path (made or not).
debian13_root() {
    printf '%s/root\n' "$(debian13_folder)"
}

# debian13_exec ROOT SHARED COMMAND...: runs COMMAND chrooted in ROOT (see debian13_exec_command).
debian13_exec() {
    debian13_exec_command "$1" "$2"
    shift 2
    "${DEBIAN13_EXEC[@]}" "$@"
}

# debian13_exec_command ROOT SHARED: sets DEBIAN13_EXEC to the start of a command line that runs the rest of it
# chrooted in ROOT, in a private mount namespace that has /proc, /dev (with the host's /dev/shm, where libpulse's
# shared memory lives) and /sys bound in, and SHARED (a folder of the host; none when empty) bound at the same path
# inside; with an empty environment but PATH and LANG (give others as VAR=value words before the program). The
# process keeps its pid through every step (unshare without --fork, then exec), so a background call's $! is the
# pid of the program itself, and a wrapper that execs it (the clean-daemon perl of soundserver.sh) may come first.
debian13_exec_command() {
    # shellcheck disable=SC2016  # the inner script's variables are its own
    DEBIAN13_EXEC=(unshare --mount --propagation private -- sh -c '
        set -e
        root=$1 shared=$2
        shift 2
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount --rbind /sys "$root/sys"
        if [ -n "$shared" ]; then mkdir -p "$root$shared" && mount --bind "$shared" "$root$shared"; fi
        exec chroot "$root" /usr/bin/env -i PATH="$0" LANG=C.UTF-8 "$@"' "$DEBIAN13_PATH" "$1" "$2")
}

# Whether anything is mounted at FOLDER or below it (in this, the host's, mount namespace).
_debian13_mounted_under() {
    awk -v dir="$1" '$5 == dir || index($5, dir "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# Removes a half-made root, refusing while anything is mounted in it (rm -rf through a bind of /dev would destroy
# the host's) or anything runs in it.
_debian13_remove() {
    local root=$1 pid
    [ -e "$root" ] || return 0
    for pid in /proc/[0-9]*; do
        if [ "$(readlink "$pid/root" 2>/dev/null)" = "$root" ]; then
            _debian13_log "process ${pid#/proc/} still runs in $root: not removing it"
            return 1
        fi
    done
    if _debian13_mounted_under "$root"; then
        _debian13_log "something is mounted in $root: not removing it (unmount it first)"
        return 1
    fi
    rm -rf --one-file-system "$root"
}

# Checks that ROOT holds the versions the tests are meant for.
_debian13_check_versions() {
    local root=$1 wanted name version installed
    for wanted in "${DEBIAN13_VERSIONS[@]}"; do
        read -r name version <<<"$wanted"
        # shellcheck disable=SC2016  # ${Version} is dpkg-query's field
        installed=$(chroot "$root" dpkg-query -W -f='${Version}' "$name" 2>/dev/null) || installed=
        case "$installed" in
            "$version" | "$version"-* | "$version"+*) ;;
            *)
                _debian13_log "$name is '${installed:-not installed}' in the Debian 13 root, not $version" \
                    "(did trixie or trixie-backports move on? see DEBIAN13_VERSIONS in scripts/lib/debian13-root.sh)"
                return 1
                ;;
        esac
    done
}

# Makes the root in FOLDER/root from nothing. Its output goes to FOLDER/making.log.
_debian13_make() {
    local folder=$1 root=$1/root mirror log=$1/making.log
    mirror=$(_pipewire_prefix_mirror) || {
        _debian13_log "no Debian archive found in /etc/apt/sources.list.d or /etc/apt/sources.list"
        return 1
    }
    local tool
    for tool in debootstrap unshare chroot; do
        command -v "$tool" >/dev/null 2>&1 && continue
        if [ "$tool" = debootstrap ] && ensure_packages debootstrap; then continue; fi
        _debian13_log "$tool is missing (apt-get install debootstrap util-linux coreutils)"
        return 1
    done
    _debian13_log "making a Debian 13 root in $root (debootstrap --variant=minbase trixie $mirror; once)"
    : >"$log"
    # In a private mount namespace: debootstrap mounts /proc and /sys in the target, and an interrupted one would
    # otherwise leave them mounted on the host.
    if ! unshare --mount --propagation private -- \
        debootstrap --variant=minbase trixie "$root" "$mirror" >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        _debian13_log "debootstrap of Debian 13 failed (its log: $log)"
        return 1
    fi
    # The root's own apt sources: trixie and trixie-backports, on the same mirror.
    rm -f "$root/etc/apt/sources.list"
    cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: trixie trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    cp --remove-destination -L /etc/resolv.conf "$root/etc/resolv.conf"
    # The host's machine id: libpulse and the servers take a client with the same id for one on the same machine.
    [ ! -s /etc/machine-id ] || cp --remove-destination /etc/machine-id "$root/etc/machine-id"
    _debian13_log "installing ${DEBIAN13_PACKAGES[*]} in the root"
    if ! debian13_exec "$root" "" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends -t trixie-backports "$@" && apt-get clean' apt-install "${DEBIAN13_PACKAGES[@]}" \
        </dev/null >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        _debian13_log "installing the servers in the Debian 13 root failed (its log: $log)"
        return 1
    fi
    _debian13_check_versions "$root" || return 1
    printf '%s\n' "${DEBIAN13_PACKAGES[@]}" >"$root/.earshot-complete"
}

# debian13_prepare: makes sure the root is complete (making it when it is missing or half made); prints its path.
# Fails with a message saying why when it cannot be made. Safe when two runs call it at once (a lock file).
debian13_prepare() {
    local folder root lock status=0
    folder=$(debian13_folder)
    root="$folder/root"
    mkdir -p "$folder" || return 1
    if [ "$(id -u)" -ne 0 ]; then
        _debian13_log "the Debian 13 servers need root (chroot and mounts in a private namespace)"
        return 1
    fi
    exec {lock}>"$folder/.lock"
    flock "$lock"
    if [ ! -f "$root/.earshot-complete" ] \
        || [ "$(cat "$root/.earshot-complete")" != "$(printf '%s\n' "${DEBIAN13_PACKAGES[@]}")" ]; then
        if [ -e "$root" ]; then
            _debian13_log "the Debian 13 root in $root is half made or out of date: making it again"
        fi
        if ! _debian13_remove "$root"; then
            status=1
        elif ! _debian13_make "$folder"; then
            _debian13_log "the Debian 13 root could not be made; the half-made root stays in $root and is made" \
                "again on the next run"
            status=1
        fi
    fi
    exec {lock}>&-
    [ "$status" -eq 0 ] || return 1
    printf '%s\n' "$root"
}
