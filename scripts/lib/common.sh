# shellcheck shell=bash
# Sourced by the scripts: logging and installing what is missing from Debian's packages.
#
# What a build of Earshot needs from Debian is read from Package.swift (build_packages): the `.apt([...])`
# providers of its system-library targets. Every script that builds installs those plus only what it needs
# beyond the build (a sound server, sox, playerctl, ...). scripts/fresh-check proves on a fresh Debian 12 root
# that nothing is missing.

# The repository this file belongs to (the scripts that source it may not have set EARSHOT_ROOT yet).
_COMMON_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# build_packages: prints the Debian packages a `swift build` of Earshot needs, one a line: the `.apt([...])`
# providers of the system-library targets in Package.swift (CPulse, CMPG123, CSystemd, ...). Beyond those the
# build needs only the Swift toolchain and what swift.org lists as its prerequisites.
build_packages() {
    local manifest="$_COMMON_ROOT/Package.swift" names
    # The manifest read as one line, so a provider list may span lines; then every quoted name inside .apt([...]).
    names=$(tr '\n' ' ' <"$manifest" | grep -o '\.apt( *\[[^]]*\]' | grep -o '"[^"]*"' | tr -d '"' | sort -u) || true
    if [ -z "$names" ]; then
        printf '[setup] error: no .apt([...]) providers found in %s; build_packages cannot say what a build needs\n' \
            "$manifest" >&2
        exit 1
    fi
    printf '%s\n' "$names"
}

# test_packages: prints what the test suites run beyond the build, one a line (scripts/test, and scripts/ci-checks
# for the sanitizer runs of the same suites): the private PulseAudio with pactl/paplay/parec, sox, lame, its MP3
# format and mpg123 for test audio, a private dbus-daemon and playerctl for the MPRIS tests, systemd, and for the
# call tests a browser that makes real calls (chromium, headless) and curl to read its pages' titles; for the session
# tests a fake logind (python3-dbusmock, run by Debian's /usr/bin/python3); what the fake sound card
# (Tests/FakeCard, scripts/lib/fakecard.sh) is built with: libpipewire-0.3-dev and pkg-config, and its PulseAudio
# module (Tests/FakeCardModule, scripts/lib/fakecard-module.sh): dpkg-dev (dpkg-source unpacks PulseAudio's source)
# and libltdl-dev, whose header PulseAudio's module.h includes; desktop-file-validate for the desktop entry;
# espeak-ng for the screen reader's speech the ducking tests play; stress-ng, which loads the cores beside the
# suites that scripts/ci-repeat runs again and again; MPD's clients, mpc, python3-mpd and ncmpcpp (in tmux), for the MPD
# front-end, and Debian's MPD itself, which the comparison suite runs beside Earshot; and for internet radio, openssl
# (the certificate the stream fetcher must refuse, and the TLS server that offers it), and Debian's Icecast2 with
# GStreamer's shout2send (gst-launch-1.0 from gstreamer1.0-tools, the shout2 and MP3-parsing plugins from
# gstreamer1.0-plugins-good) as the station's source: ices2 sends only Ogg Vorbis, and Debian 12's ffmpeg has no
# libshout output. icecast2's package installs its system service disabled (update-rc.d defaults-disabled), and
# ensure_test_packages makes sure none is left running; the tests run their own.
test_packages() {
    printf '%s\n' pulseaudio pulseaudio-utils lame sox libsox-fmt-mp3 mpg123 flac vorbis-tools opus-tools dbus-daemon \
        dbus-bin playerctl systemd chromium curl python3-dbusmock libpipewire-0.3-dev pkg-config desktop-file-utils \
        espeak-ng dpkg-dev libltdl-dev stress-ng mpc python3-mpd mpd ncmpcpp tmux openssl icecast2 gstreamer1.0-tools \
        gstreamer1.0-plugins-good
}

# icecast_system_service_pid: prints the pid of Debian's icecast2 system service when one runs (the init script starts
# `/usr/bin/icecast2 -b -c /etc/icecast2/icecast.xml`), else nothing. The tests' own icecast2 reads a configuration
# in a temporary folder and is never this one.
icecast_system_service_pid() {
    local entry command
    for entry in /proc/[0-9]*; do
        command=$(tr '\0' ' ' 2>/dev/null <"$entry/cmdline") || continue
        case "$command" in
            */icecast2\ *-c\ /etc/icecast2/icecast.xml*) printf '%s\n' "${entry#/proc/}"; return 0 ;;
        esac
    done
}

# ensure_test_packages PKG...: ensure_build_packages with PKG..., and when that installed icecast2 just now, makes sure
# its system service is not left running: Debian's package installs it disabled (update-rc.d defaults-disabled) and
# invoke-rc.d does not start it, but a machine's own policy could; the tests run a private icecast2 of their own. A
# system icecast2 that ran before (the machine owner's) is left alone.
ensure_test_packages() {
    local had_icecast=true
    [ -n "$(_missing_packages icecast2)" ] && had_icecast=false
    ensure_build_packages "$@" || return 1
    if ! $had_icecast && [ -n "$(icecast_system_service_pid)" ]; then
        printf '[setup] stopping the icecast2 system service that its package started (the tests run their own)\n' >&2
        invoke-rc.d icecast2 stop >/dev/null 2>&1 || /etc/init.d/icecast2 stop >/dev/null 2>&1 || true
    fi
}

# ensure_build_packages [PKG...]: ensure_packages with what the build needs (build_packages) plus PKG...
ensure_build_packages() {
    local build
    build=$(build_packages) || return 1
    # shellcheck disable=SC2086  # one package name a line, none with spaces
    ensure_packages $build "$@"
}

# ensure_packages PKG...: installs the Debian packages that are not installed yet (apt-get update first). When they
# cannot be installed (not root and no usable sudo, or apt-get fails), prints one line naming them and the command
# that installs them, and fails (a script under `set -e` stops there). apt-get's own output is kept in a log and its
# first error quoted on that line.
ensure_packages() {
    local missing=() found
    found=$(_missing_packages "$@")
    [ -n "$found" ] || return 0
    mapfile -t missing <<<"$found"
    local install="apt-get install ${missing[*]}"
    [ "$(id -u)" -eq 0 ] || install="sudo $install"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            _packages_error "${missing[*]}" "$install" "not root and no sudo"
            return 1
        fi
        # Without a terminal sudo must not wait for a password nobody can type.
        if [ -t 0 ]; then sudo=(sudo); else sudo=(sudo -n); fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        _packages_error "${missing[*]}" "$install" "no apt-get here"
        return 1
    fi
    printf '[setup] installing: %s\n' "${missing[*]}" >&2
    local apt_log
    apt_log=$(mktemp /tmp/earshot-apt.XXXXXX)
    if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}"; } </dev/null >"$apt_log" 2>&1; then
        local reason
        reason=$(grep -m1 -E '^(E:|sudo:)' "$apt_log" || tail -n 1 "$apt_log")
        rm -f "$apt_log"
        _packages_error "${missing[*]}" "$install" "apt-get failed: ${reason:-no output}"
        return 1
    fi
    rm -f "$apt_log"
    found=$(_missing_packages "$@")
    [ -z "$found" ] || mapfile -t missing <<<"$found"
    if [ -n "$found" ]; then
        _packages_error "${missing[*]}" "$install" \
            "apt-get finished but they are still not installed"
        return 1
    fi
}

# The packages among PKG... that dpkg does not list as installed, one a line.
_missing_packages() {
    local package
    for package in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
            printf '%s\n' "$package"
        fi
    done
}

# _packages_error PACKAGES COMMAND REASON: the one line a script stops with when packages cannot be installed.
_packages_error() {
    printf '[setup] error: missing Debian packages: %s; install them with: %s (%s)\n' "$1" "$2" "$3" >&2
}

# ensure_swift: puts the toolchain on PATH when it is installed in /opt/swift but not on PATH.
ensure_swift() {
    command -v swift >/dev/null 2>&1 && return 0
    if [ -x /opt/swift/usr/bin/swift ]; then
        PATH="/opt/swift/usr/bin:$PATH"
        export PATH
        return 0
    fi
    printf '[setup] error: no Swift toolchain: swift is neither on PATH nor in /opt/swift/usr/bin (install Swift 6' \
        >&2
    printf ' from swift.org, e.g. unpacked into /opt/swift)\n' >&2
    exit 1
}

# release_build_arguments: sets the array RELEASE_BUILD (the `swift build` arguments of the binary users install,
# without --product or --show-bin-path), for scripts/package and scripts/bench, which must measure what ships:
#   --static-swift-stdlib    the Swift runtime linked in, so the binary runs without a toolchain;
#   -z now                   every symbol bound at start (Debian's "bindnow" hardening);
#   lld (the toolchain's)    for the two options below, which gold lacks;
#   -z pack-relative-relocs  the 880 KB of relative relocations a position-independent Swift binary carries, packed
#                            into 7 KB (DT_RELR, glibc 2.36): the dynamic loader no longer reads them all at start;
#   --symbol-ordering-file   the functions a run of the service executes, laid out together at the front of .text
#                            (Config/earshot.order, made by scripts/order-file). The kernel maps a binary's code in
#                            64 KiB windows around each page touched, so code used at start scattered over 9 MiB of
#                            text made 6.4 MiB of it resident; together, about 3 MiB. A function missing from the file
#                            (renamed since it was made) only stays where the linker put it: no warning, no failure;
#   -L <build>/static-libstdc++  a folder holding only libstdc++.a, searched before the compiler's own, so that the
#                            runtime's -lstdc++ links the C++ library in: the loader then binds 1 700 fewer symbols at
#                            every start and maps one library less (a 0.5 s `earshot play` took 1.2 ms less CPU, median
#                            of 80 runs each, 2026-12-05). Left out, with a note, where the compiler knows no such file.
# EARSHOT_SCRATCH_PATH=DIR builds in DIR. EARSHOT_NO_ORDER=1 leaves the ordering out (scripts/order-file profiles
# a binary built so, so that the file never depends on itself).
release_build_arguments() {
    RELEASE_BUILD=(-c release --static-swift-stdlib -Xlinker -z -Xlinker now
        -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
    if [ -z "${EARSHOT_NO_ORDER:-}" ]; then
        RELEASE_BUILD+=(-Xlinker "--symbol-ordering-file=$_COMMON_ROOT/Config/earshot.order"
            -Xlinker --no-warn-symbol-ordering)
    fi
    [ -z "${EARSHOT_SCRATCH_PATH:-}" ] || RELEASE_BUILD+=(--scratch-path "$EARSHOT_SCRATCH_PATH")
    local archive folder="${EARSHOT_SCRATCH_PATH:-$_COMMON_ROOT/.build}/static-libstdc++"
    archive=$("$(dirname "$(command -v swiftc)")/clang" -print-file-name=libstdc++.a 2>/dev/null) || archive=
    if [ -f "$archive" ]; then
        mkdir -p "$folder"
        ln -sfn "$archive" "$folder/libstdc++.a"
        RELEASE_BUILD+=(-Xswiftc -L -Xswiftc "$folder")
    else
        printf '[setup] note: no libstdc++.a found; the release build links libstdc++ as a shared library\n' >&2
    fi
}
