# shellcheck shell=bash
# Sourced by scripts/test: builds the fake sound card for PulseAudio 16 (Tests/FakeCardModule, a test-only module,
# module-earshot-fakecard.so; see the banner of Tests/FakeCardModule/fakecard-module.h) and exports
# EARSHOT_FAKECARD_MODULE, its absolute path, for the end-to-end tests that load and drive it (FakeCardJackTests,
# FakeCardHeadsetTests, through EarshotTestSupport's FakeCard).
#
# PulseAudio's module headers (pulsecore) are in no Debian binary package, so the module is compiled against the
# source of the PulseAudio the system runs: Debian 12's pulseaudio 16.1+dfsg1-2 source package, fetched once with a
# private apt configuration (a deb-src sources file of its own, its own lists; the system's apt sources are not
# touched) into ${EARSHOT_SCRATCH_PATH:-.build}/pulseaudio-16-source/, unpacked with dpkg-source (Debian's patches
# applied). Instead of configuring the tree with meson, a config.h of the few answers the headers ask for is written
# beside it. The module links to the installed server's own libpulsecore-16.1 and libpulsecommon-16.1, and is built
# again when its sources change. A first build takes about 3 s here (fetch 1.5 MB, unpack, compile), a later one none.

# The source package and version the module is built against: the server's own.
FAKECARD_MODULE_PA_SOURCE=pulseaudio=16.1+dfsg1-2
FAKECARD_MODULE_PA_LIBS=/usr/lib/x86_64-linux-gnu/pulseaudio

_fakecard_module_log() { printf '[fakecard-module] %s\n' "$*" >&2; }

# Fetches and unpacks the PulseAudio source into FOLDER/tree, once.
_fakecard_module_source() {
    local folder=$1 mirror
    [ -f "$folder/tree/.complete" ] && return 0
    # shellcheck source=pipewire-prefix.sh
    source "$EARSHOT_ROOT/scripts/lib/pipewire-prefix.sh"
    mirror=$(_pipewire_prefix_mirror) || {
        _fakecard_module_log "no Debian bookworm archive found in the system's apt sources"
        return 1
    }
    rm -rf "$folder"
    mkdir -p "$folder/apt/sources" "$folder/apt/lists/partial" "$folder/apt/archives/partial" "$folder/download"
    cat >"$folder/apt/sources/earshot-pulseaudio-source.sources" <<SOURCES
Types: deb-src
URIs: $mirror
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    _fakecard_module_log "fetching the source of $FAKECARD_MODULE_PA_SOURCE (private apt lists)"
    _pipewire_prefix_apt "$folder" apt-get update >/dev/null || return 1
    (cd "$folder/download" && _pipewire_prefix_apt "$folder" apt-get source --download-only \
        "$FAKECARD_MODULE_PA_SOURCE" >/dev/null) || return 1
    # apt checked the download against the archive's signed lists; dpkg-source cannot check the .dsc's own signature
    # without Debian's developer keyrings, and says so: that warning is not shown.
    dpkg-source -x "$folder"/download/pulseaudio_*.dsc "$folder/tree" >/dev/null 2>&1 || return 1
    touch "$folder/tree/.complete"
}

# The answers pulsecore's headers ask of config.h on Debian 12 x86_64 (meson's for this build of 16.1).
_fakecard_module_config() {
    cat <<'CONFIG'
/* Written by scripts/lib/fakecard-module.sh: what PulseAudio 16.1's meson build says on Debian 12 (x86_64), only as
 * far as the pulsecore headers the fake card module includes ask. */
#define PACKAGE "pulseaudio"
#define PACKAGE_VERSION "16.1"
#define HAVE_ATOMIC_BUILTINS 1
#define HAVE_ATOMIC_BUILTINS_MEMORY_MODEL 1
#define SUPPORT_TLS___THREAD 1
#define HAVE_FAST_64BIT_OPERATIONS 1
#define HAVE_CLOCK_GETTIME 1
#define HAVE_POLL_H 1
#define HAVE_SYS_SOCKET_H 1
#define HAVE_BYTESWAP_H 1
#define HAVE_CREDS 1
#define HAVE_MEMFD 1
#define HAVE_PTHREAD 1
CONFIG
}

# fakecard_module_build: builds the module into the build folder when its sources are newer than it, and exports
# EARSHOT_FAKECARD_MODULE. Fails (saying why) when it cannot be built.
fakecard_module_build() {
    local sources="$EARSHOT_ROOT/Tests/FakeCardModule" build folder output
    build=${EARSHOT_SCRATCH_PATH:-$EARSHOT_ROOT/.build}
    folder="$build/pulseaudio-16-source"
    output="$build/fakecard-module/module-earshot-fakecard.so"
    [ -f "$FAKECARD_MODULE_PA_LIBS/libpulsecore-16.1.so" ] || {
        _fakecard_module_log "no $FAKECARD_MODULE_PA_LIBS/libpulsecore-16.1.so: is pulseaudio 16.1 installed?"
        return 1
    }
    if [ ! -f "$output" ] || [ -n "$(find "$sources" -newer "$output" -print -quit)" ]; then
        if ! _fakecard_module_source "$folder"; then
            _fakecard_module_log "the PulseAudio source could not be fetched"
            return 1
        fi
        mkdir -p "$(dirname "$output")"
        _fakecard_module_config >"$(dirname "$output")/config.h"
        _fakecard_module_log "building $output"
        # PulseAudio's headers as system headers: their own warnings are not the module's.
        # PA_MODULE_NAME: the prefix of the entry points' names that libltdl looks for first.
        cc -std=gnu11 -O1 -g -fPIC -shared -Wall -Wextra -Werror -DHAVE_CONFIG_H \
            -DPA_MODULE_NAME=module_earshot_fakecard -I"$(dirname "$output")" -isystem "$folder/tree/src" \
            -o "$output" "$sources"/*.c \
            -L"$FAKECARD_MODULE_PA_LIBS" -Wl,-rpath,"$FAKECARD_MODULE_PA_LIBS" -l:libpulsecore-16.1.so \
            -l:libpulsecommon-16.1.so -lpulse || return 1
    fi
    EARSHOT_FAKECARD_MODULE=$output
    export EARSHOT_FAKECARD_MODULE
}

# fakecard_module_load KIND: loads the module (a card of KIND, analog or headset) into the private PulseAudio that
# PULSE_SERVER names, for a script (the tests' FakeCard does the same from Swift). `pactl load-module` refuses a path,
# so it goes through PulseAudio's command line, on a TCP port of the loopback for the moment it takes (bash reaches
# TCP by itself; module-cli-protocol-unix would need a client program). Waits until the card's first sink is there.
fakecard_module_load() {
    local kind=$1 port module sink=fakecard_analog cli _
    [ "$kind" = analog ] || sink=bluez_sink.00_11_22_33_44_55.a2dp_sink
    [ -n "${EARSHOT_FAKECARD_MODULE:-}" ] || { _fakecard_module_log "not built (fakecard_module_build)"; return 1; }
    for _ in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 20000))
        module=$(pactl load-module module-cli-protocol-tcp listen=127.0.0.1 port="$port" 2>/dev/null) && break
        module=""
    done
    [ -n "$module" ] || { _fakecard_module_log "the command line could not be loaded"; return 1; }
    if ! { exec {cli}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
        pactl unload-module "$module"
        _fakecard_module_log "the command line did not answer on port $port"
        return 1
    fi
    printf 'load-module %s kind=%s\n' "$EARSHOT_FAKECARD_MODULE" "$kind" >&"$cli"
    for _ in $(seq 1 50); do
        pactl list short sinks | cut -f2 | grep -qx "$sink" && break
        sleep 0.1
    done
    exec {cli}>&-
    pactl unload-module "$module"
    pactl list short sinks | cut -f2 | grep -qx "$sink" || {
        _fakecard_module_log "the module did not load (the server's log says why)"
        return 1
    }
}
