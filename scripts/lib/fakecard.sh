# shellcheck shell=bash
# Sourced by scripts/test: builds the fake sound card (Tests/FakeCard, a small C PipeWire client that exports a
# device with ports or profiles; see the banner of Tests/FakeCard/fakecard.c) and exports EARSHOT_FAKECARD, its path,
# for the end-to-end tests that drive it (FakeCardJackTests, FakeCardHeadsetTests).
#
# It is built with cc against Debian 12's libpipewire-0.3-dev (PipeWire 0.3.65; test_packages in common.sh installs
# it) and linked to the system's libpipewire. The prefix of PipeWire 1.4.2 and the Debian 13 root have no headers;
# the helper needs none of theirs: it only speaks PipeWire's native protocol to the daemon, the same on 0.3.65, 1.4.2
# and 1.6.9 (docs/testing.md, "The fake sound card").

# fakecard_build: compiles the helper into the build folder when its sources are newer than the binary, and exports
# EARSHOT_FAKECARD. Fails (with the compiler's words) when it cannot be built.
fakecard_build() {
    local sources="$EARSHOT_ROOT/Tests/FakeCard" output
    output="${EARSHOT_SCRATCH_PATH:-$EARSHOT_ROOT/.build}/fakecard/fakecard"
    mkdir -p "$(dirname "$output")"
    if [ ! -x "$output" ] || [ -n "$(find "$sources" -newer "$output" -print -quit)" ]; then
        printf '[fakecard] building %s\n' "$output" >&2
        local cflags libs
        cflags=$(pkg-config --cflags libpipewire-0.3) || return 1
        libs=$(pkg-config --libs libpipewire-0.3) || return 1
        # The PipeWire headers as system headers: their own unused parameters are not the helper's warnings.
        # shellcheck disable=SC2086  # pkg-config's words, one flag each
        cc -std=gnu11 -O1 -g -Wall -Wextra -Werror ${cflags//-I/-isystem } -o "$output" "$sources"/*.c $libs \
            || return 1
    fi
    EARSHOT_FAKECARD=$output
    export EARSHOT_FAKECARD
}
