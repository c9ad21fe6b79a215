# shellcheck shell=bash
# Sourced by scripts/fresh-check: its parts about the .deb, and what they share.
#   package   the .deb (built on this machine, Debian 12) in a fresh Debian 12 root without the toolchain: installed,
#             played on a private PulseAudio, purged.
#   debian13  the same .deb in a copy of the Debian 13 root the tests already make (scripts/lib/debian13-root.sh,
#             made once under the build folder): installed with its dependencies from trixie, and played on that
#             root's own PulseAudio 17.0, recorded and checked to be audible. The copy is thrown away afterwards; the
#             tests' root is never changed. It costs a copy of the root (about 200 MB), an apt install and the
#             sample's 12 s.
# Uses fresh-check's helpers (phase, log, new_root, mount_system, in_root, root_apt_install, record_start,
# record_stop, check_audible, keep_debs) and its variables (cache, sha, EARSHOT_ROOT, the sample's lengths).

# The .deb built by build_deb in this run (built once for both parts).
package_deb=

# check_removal ROOT: purges earshot in ROOT; every path the package listed must be gone afterwards, except the
# folders another installed package still owns (/usr/share/applications, /usr/share/icons/hicolor, ...).
check_removal() {
    local root=$1 listed left=() path
    listed=$(in_root "$root" dpkg-query -L earshot </dev/null) || { log "FAILED: dpkg-query -L earshot"; return 1; }
    in_root "$root" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq earshot' </dev/null \
        >"$root.purge.log" 2>&1 || { tail -n 20 "$root.purge.log" >&2; log "FAILED: apt-get purge earshot"; return 1; }
    installed_in "$root" earshot && { log "FAILED: earshot is still installed after the purge"; return 1; }
    while IFS= read -r path; do
        [ -n "$path" ] && [ "$path" != /. ] || continue
        [ -e "$root$path" ] || [ -L "$root$path" ] || continue
        # A folder that stays must belong to another package.
        if [ -d "$root$path" ] && in_root "$root" dpkg-query -S "$path" </dev/null >/dev/null 2>&1; then continue; fi
        left+=("$path")
    done <<<"$listed"
    if [ ${#left[@]} -gt 0 ]; then
        log "FAILED: the purge left ${left[*]}"
        return 1
    fi
    log "purged: none of the package's $(wc -l <<<"$listed") paths is left but folders other packages own"
}

# ---- part package: the .deb on a machine without the toolchain ----

# build_deb: scripts/package on this machine, in a clone at the commit; its path in package_deb (once per run).
build_deb() {
    local clone="$cache/package-clone" deb
    [ -z "$package_deb" ] || return 0
    # A clone kept between runs, checked out at the commit (so a warm run rebuilds only what changed). It borrows
    # this repository's objects (--shared), so any commit here can be checked out without a fetch.
    if [ ! -f "$clone/.git/objects/info/alternates" ]; then
        remove_root "$clone" || return 1
        git clone -q --shared --no-checkout "$EARSHOT_ROOT" "$clone" || { log "git clone failed"; return 1; }
    fi
    if ! { git -C "$clone" checkout -q -f --detach "$sha" && git -C "$clone" clean -q -ffdx -e .build; }; then
        log "checking out $sha in $clone failed"
        return 1
    fi
    [ -x "$clone/scripts/package" ] || { log "FAILED: commit $sha has no scripts/package"; return 1; }
    deb=$(cd "$clone" && scripts/package </dev/null | tail -n 1) || { log "FAILED: scripts/package failed"; return 1; }
    case "$deb" in /*) ;; *) deb="$clone/$deb" ;; esac
    if [[ ! -f "$deb" || "$deb" != *_amd64.deb ]]; then
        log "FAILED: the last line scripts/package printed is not a .deb's path: '$deb'"
        return 1
    fi
    log "package: $deb ($(du -k "$deb" | cut -f1) kB)"
    package_deb=$deb
}

# stage_package ROOT: copies the .deb, the test server's configuration (the commit's) and an MP3 sample (two steady tones with a
# slow tremolo, made here: the root gets the MP3 only) into ROOT's /tmp/fresh-check.
stage_package() {
    local folder="$1/tmp/fresh-check"
    mkdir -p "$folder"
    cp "$package_deb" "$folder/"
    cp "$cache/package-clone/Config/pulse-test.pa" "$folder/pulse.pa"
    if ! { sox -n -r 44100 -c 2 "$folder/sample.wav" synth "$PACKAGE_SAMPLE_SECONDS" sine 220 sine 330 \
        tremolo 3 40 vol 0.4 fade 0.2 "$PACKAGE_SAMPLE_SECONDS" 0.5 \
        && lame --quiet -b 192 "$folder/sample.wav" "$folder/sample.mp3"; }; then
        log "making the sample failed"
        return 1
    fi
    rm -f "$folder/sample.wav"
}

# play_sample ROOT NAME: in ROOT, starts a private PulseAudio (the root's own) on the test configuration, plays the
# sample with the installed `earshot play`, records the headphones' monitor and checks that enough of it is audible.
play_sample() {
    local root=$1 name=$2 runtime=/tmp/fresh-check/run server_pid status recording="$cache/$2-monitor.raw" _
    mkdir -p "$root$runtime" && chmod 700 "$root$runtime"
    in_root "$root" XDG_RUNTIME_DIR="$runtime" pulseaudio -n -F /tmp/fresh-check/pulse.pa --exit-idle-time=-1 \
        --daemonize=no --use-pid-file=no --disallow-exit --log-target=stderr </dev/null 2>"$cache/$name-pulse.log" &
    server_pid=$!
    background+=("$server_pid")
    local server="unix:$runtime/pulse/native"
    for _ in $(seq 1 100); do
        in_root "$root" PULSE_SERVER="$server" pactl info >/dev/null 2>&1 && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    in_root "$root" PULSE_SERVER="$server" pactl info >/dev/null 2>&1 \
        || { tail -n 20 "$cache/$name-pulse.log" >&2; log "FAILED: the private PulseAudio did not start"; return 1; }
    log "playing on $(in_root "$root" PULSE_SERVER="$server" pactl info 2>/dev/null | grep -m 1 '^Server Version' \
        || echo 'an unknown server')"
    rm -f "$recording"
    record_start "$root" "$server" "$recording"
    # A recorder on an idle null sink gets its first data up to ~2 s late.
    sleep 2
    status=0
    in_root "$root" XDG_RUNTIME_DIR="$runtime" PULSE_SERVER="$server" timeout 120 earshot play \
        /tmp/fresh-check/sample.mp3 </dev/null >&2 || status=$?
    sleep 1
    kill "$recorder_pid" 2>/dev/null || true
    record_stop
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    [ "$status" -eq 0 ] || { log "FAILED: earshot play exited with status $status"; return 1; }
    log "the sample is $PACKAGE_SAMPLE_SECONDS s long; $PACKAGE_AUDIBLE_SECONDS s must be audible"
    check_audible "$recording" "$PACKAGE_AUDIBLE_SECONDS"
}

# ---- part package: the .deb on a machine without the toolchain ----

part_package() {
    local root
    phase "package: scripts/package (this machine)"
    build_deb || return 1

    phase "package: root and sample"
    new_root package
    root=$new_root_dir
    stage_package "$root" || return 1

    phase "package: apt-get install ./$(basename "$package_deb")"
    root_apt_install "$root" "./tmp/fresh-check/$(basename "$package_deb")" pulseaudio pulseaudio-utils \
        || { log "FAILED: apt-get install of the package failed"; return 1; }
    keep_debs "$root"
    [ ! -e "$root/opt/swift" ] || [ -z "$(ls -A "$root/opt/swift")" ] \
        || { log "FAILED: a toolchain is in the package root"; return 1; }
    local version
    version=$(in_root "$root" earshot --version </dev/null) || { log "FAILED: earshot --version failed"; return 1; }
    log "earshot --version: $version"
    local installed
    for installed in /usr/share/applications/earshot.desktop /usr/share/icons/hicolor/scalable/apps/earshot.svg \
        /usr/lib/systemd/user/earshot.service; do
        [ -s "$root$installed" ] || { log "FAILED: the package did not install $installed"; return 1; }
    done
    log "the desktop entry, its icon and the user unit are installed"

    phase "package: play on a private PulseAudio"
    play_sample "$root" package || return 1

    phase "package: apt-get purge earshot"
    check_removal "$root" || return 1
    phase
    $keep_roots || remove_root "$root" || return 1
}

# ---- part debian13: the same .deb on Debian 13 and PulseAudio 17 ----

part_debian13() {
    local tests_root root="$cache/roots/debian13"
    phase "debian13: the tests' Debian 13 root (made once)"
    # shellcheck source=pipewire-prefix.sh
    source "$EARSHOT_ROOT/scripts/lib/pipewire-prefix.sh"
    # shellcheck source=debian13-root.sh
    source "$EARSHOT_ROOT/scripts/lib/debian13-root.sh"
    tests_root=$(debian13_prepare) || { log "FAILED: the Debian 13 root could not be made"; return 1; }

    phase "debian13: scripts/package (this machine, Debian 12)"
    build_deb || return 1

    phase "debian13: a copy of the root, and the sample"
    remove_root "$root" || return 1
    mkdir -p "$root"
    roots+=("$root")
    cp -a "$tests_root/." "$root/" || { log "FAILED: copying $tests_root"; return 1; }
    cp --remove-destination -L /etc/resolv.conf "$root/etc/resolv.conf"
    mount_system "$root"
    stage_package "$root" || return 1

    phase "debian13: apt-get install ./$(basename "$package_deb")"
    # pactl and parec, for the recording; PulseAudio 17.0 itself is in the root already.
    root_apt_install "$root" "./tmp/fresh-check/$(basename "$package_deb")" pulseaudio-utils \
        || { log "FAILED: apt-get install of the package on Debian 13 failed"; return 1; }
    local version
    version=$(in_root "$root" earshot --version </dev/null) || { log "FAILED: earshot --version failed"; return 1; }
    log "earshot --version on Debian $(cat "$root/etc/debian_version"): $version"

    phase "debian13: play on PulseAudio 17"
    play_sample "$root" debian13 || return 1
    phase
    $keep_roots || remove_root "$root" || return 1
}
