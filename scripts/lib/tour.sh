# shellcheck shell=bash
# shellcheck disable=SC2154  # earshot, timeline and work are set by scripts/run before it sources this file
# Sourced by scripts/run for `scripts/run --tour`: a guided walk through what makes Earshot polite, on a private
# PulseAudio with virtual `headphones` and `speakers` (never the user's own devices), while both sinks' monitors
# are recorded. At the end it draws what each device played, Earshot's state and the tour's steps on one timeline
# (SVG, and PNG when rsvg-convert or ImageMagick can convert it) and prints where the picture is.
#
# Expects from scripts/run: EARSHOT_ROOT, log/die, the sound server functions (scripts/lib/soundserver.sh),
# `earshot` and `timeline` (the release binaries), `work` (a scratch folder it removes) and make_sample.
#
# Files, in out/tour-<time>/ (kept):
#   recordings/SINK-N.raw   what SINK's monitor played (stereo s16le, 44.1 kHz), one file per time the sink existed,
#   recordings/SINK-N.raw.times   `SECONDS TOTAL_BYTES` per block, as `earshot-timeline record` received it
#   marks.tsv               the tour's steps: `SECONDS<TAB>KIND<TAB>LABEL[<TAB>SINK]` (wall-clock seconds since the
#                           epoch; KIND is callStart, callEnd, user, unplug, replug, move or jack)
#   events.log              Earshot's event log
#   timeline.svg, timeline.png   the picture

TOUR_RATE=44100
# Seconds of music between steps: long enough to see on the picture, short enough to keep the tour near a minute.
TOUR_BREATH=3

_tour_bold=""; _tour_dim=""; _tour_green=""; _tour_red=""; _tour_reset=""
if [ -t 1 ]; then
    _tour_bold=$'\e[1m'; _tour_dim=$'\e[2m'; _tour_green=$'\e[32m'; _tour_red=$'\e[31m'; _tour_reset=$'\e[0m'
fi

# Narration goes to stdout; the event log, indented, joins it as it happens.
_tour_step() { printf '\n%s== %s%s\n' "$_tour_bold" "$1" "$_tour_reset"; shift; printf '   %s\n' "$@"; }
_tour_say() { printf '   %s\n' "$*"; }

# _tour_mark KIND LABEL [SINK]: notes the step on the timeline, now.
_tour_mark() { printf '%s\t%s\t%s%s\n' "$EPOCHREALTIME" "$1" "$2" "${3:+$'\t'$3}" >>"$tour_dir/marks.tsv"; }

# _tour_snapshot: reads Earshot's state once (`earshot status --json`) into tour_playback, tour_reason and tour_on
# (its sink).
_tour_snapshot() {
    local json
    json=$("$earshot" status --json 2>/dev/null) || json=""
    _tour_field() { sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" <<<"$json" | tr -d '"'; }
    tour_playback=$(_tour_field playback)
    tour_reason=$(_tour_field pauseReason)
    tour_on=$(_tour_field sink)
    [ "$tour_reason" != null ] || tour_reason=""
    [ "$tour_on" != null ] || tour_on=""
}

# _tour_expect PLAYBACK [REASON] [SINK]: waits up to 3 s for Earshot to report that state; says what it found.
_tour_expect() {
    local playback="$1" reason="${2:-}" sink="${3:-}" _
    for _ in $(seq 1 15); do
        _tour_snapshot
        if [ "$tour_playback" = "$playback" ] && { [ -z "$reason" ] || [ "$tour_reason" = "$reason" ]; } \
            && { [ -z "$sink" ] || [ "$tour_on" = "$sink" ]; }; then
            printf '   %s✓ Earshot: %s%s%s%s\n' "$_tour_green" "$tour_playback" "${reason:+ ($tour_reason)}" \
                "${tour_on:+ on $tour_on}" "$_tour_reset"
            return 0
        fi
        sleep 0.2
    done
    printf '   %s✗ expected %s%s%s, but Earshot is %s (%s) on %s%s\n' "$_tour_red" "$playback" \
        "${reason:+ ($reason)}" "${sink:+ on $sink}" "$tour_playback" "$tour_reason" "$tour_on" "$_tour_reset"
    tour_surprises=$((tour_surprises + 1))
}

# _tour_hold SECONDS: lets SECONDS (e.g. 3 or 1.5) pass while Earshot should stay as it is, and says so when it
# changes by itself (a pause nobody asked for, or a start it should not make).
_tour_hold() {
    local whole="${1%.*}" tenths=0 deadline playback reason
    [[ "$1" != *.* ]] || tenths="${1#*.}"
    deadline=$(( ${EPOCHREALTIME/./} + whole * 1000000 + ${tenths:0:1} * 100000 ))
    _tour_snapshot
    playback=$tour_playback reason=$tour_reason
    while [ "${EPOCHREALTIME/./}" -lt "$deadline" ]; do
        sleep 0.4
        _tour_snapshot
        if [ "$tour_playback" != "$playback" ] || [ "$tour_reason" != "$reason" ]; then
            printf '   %s✗ Earshot changed by itself: %s%s -> %s%s%s\n' "$_tour_red" "$playback" \
                "${reason:+ ($reason)}" "$tour_playback" "${tour_reason:+ ($tour_reason)}" "$_tour_reset"
            [ "$tour_reason" != outputLost ] || _tour_say "  (output lost: the event log above says why)"
            tour_surprises=$((tour_surprises + 1))
            playback=$tour_playback reason=$tour_reason
        fi
    done
}

# _tour_record SINK...: starts recording each SINK's monitor into the next recordings/SINK-N.raw (parec into
# `earshot-timeline record`, which notes when each block arrives) and returns once data arrives from all of them
# (an idle null sink's monitor takes a second or two to deliver its first block).
_tour_record() {
    local sink n fifo raws=() raw _
    for sink in "$@"; do
        n=1
        while [ -e "$tour_dir/recordings/$sink-$n.raw" ]; do n=$((n + 1)); done
        raw="$tour_dir/recordings/$sink-$n.raw"
        raws+=("$raw")
        fifo="$work/$sink-$n.fifo"
        mkfifo "$fifo"
        "$timeline" record "$raw" <"$fifo" &
        tour_pids["$sink.writer"]=$!
        parec --device="$sink.monitor" --raw --format=s16le --rate=$TOUR_RATE --channels=2 --latency-msec=10 \
            --client-name="earshot tour recorder" --stream-name="monitor of $sink" >"$fifo" &
        tour_pids["$sink.parec"]=$!
    done
    for raw in "${raws[@]}"; do
        for _ in $(seq 1 50); do
            [ -s "$raw" ] && continue 2
            sleep 0.1
        done
        die "the recorder for $(basename "$raw") delivered nothing in 5 s"
    done
}

# _tour_stop_recording SINK: stops SINK's recorder and waits until its files are complete.
_tour_stop_recording() {
    local sink="$1"
    [ -n "${tour_pids[$sink.parec]:-}" ] || return 0
    kill -INT "${tour_pids[$sink.parec]}" 2>/dev/null || true
    wait "${tour_pids[$sink.parec]}" 2>/dev/null || true
    wait "${tour_pids[$sink.writer]}" 2>/dev/null || true
    unset "tour_pids[$sink.parec]" "tour_pids[$sink.writer]"
}

# _tour_call SECONDS: a phone call's sound, SECONDS long: a two-tone ring, on for 0.8 s, off for 0.4 s.
_tour_call_sound() {
    local seconds="$1" out="$work/call-$1.wav"
    if [ ! -f "$out" ]; then
        sox -n -r $TOUR_RATE -c 2 "$work/ring.wav" synth 0.8 sine 440 sine 480 remix 1,2 1,2 vol 0.35 \
            fade 0.02 0.8 0.05 pad 0 0.4 2>/dev/null
        sox "$work/ring.wav" "$out" repeat $(( (seconds * 10 + 11) / 12 - 1 )) trim 0 "$seconds" 2>/dev/null
    fi
    printf '%s\n' "$out"
}

# _tour_start_call SECONDS: a phone stream (media.role=phone) on the sink Earshot plays to, in the background.
_tour_start_call() {
    local sound
    sound=$(_tour_call_sound "$1")
    _tour_mark callStart "call starts"
    paplay --device="$tour_sink" --property=media.role=phone --client-name="earshot tour phone" \
        --stream-name="a phone call" "$sound" &
    tour_pids[call]=$!
}

_tour_end_call() {
    wait "${tour_pids[call]}" || true
    unset "tour_pids[call]"
    _tour_mark callEnd "call ends"
}

# The sink input of Earshot's stream (by its process id).
_tour_sink_input() {
    pactl list sink-inputs | awk -v pid="$tour_pid" '
        /^Sink Input #/ { index_ = substr($3, 2) }
        /application.process.id = / { gsub(/"/, "", $3); if ($3 == pid) { print index_; exit } }'
}

_tour_cleanup() {
    local key
    for key in "${!tour_pids[@]}"; do
        kill "${tour_pids[$key]}" 2>/dev/null || true
    done
    for key in "${!tour_pids[@]}"; do
        wait "${tour_pids[$key]}" 2>/dev/null || true
    done
}

run_tour() {
    declare -gA tour_pids=()
    tour_surprises=0
    tour_dir="$EARSHOT_ROOT/out/tour-$(date +%Y%m%d-%H%M%S)"
    mkdir -p "$tour_dir/recordings"
    : >"$tour_dir/marks.tsv"

    log "starting a private PulseAudio with virtual headphones and speakers (your own devices are left alone)"
    # A fresh one even when this shell inherited another private server (SOUNDSERVER_ROOT) or sees the user's.
    # shellcheck disable=SC2034  # read by soundserver_start
    SOUNDSERVER_ROOT=
    EARSHOT_TEST_SERVER=pulseaudio soundserver_start || die "the private PulseAudio did not start"
    export EARSHOT_SOCKET="$work/control.sock"
    trap '_tour_cleanup; cleanup' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    log "making the music (three times a 20 s sample, played gaplessly) and a phone ring"
    make_sample "$work/sample.mp3"

    _tour_step "The stage" \
        "Two virtual devices: 'headphones' (the default) and 'speakers'. Both are recorded from now on;" \
        "Earshot's event log appears below as it happens, indented."
    _tour_record headphones speakers

    # With the default configuration, not yours (a `resumeAfterInterruption: false` would change the story).
    mkdir -p "$work/config"
    XDG_CONFIG_HOME="$work/config" "$earshot" play "$work/sample.mp3" "$work/sample.mp3" "$work/sample.mp3" \
        >/dev/null 2>"$tour_dir/events.log" &
    tour_pid=$!
    tour_pids[earshot]=$tour_pid
    for _ in $(seq 1 100); do
        "$earshot" status >/dev/null 2>&1 && break
        kill -0 "$tour_pid" 2>/dev/null || die "earshot ended early: $(cat "$tour_dir/events.log")"
        sleep 0.1
    done
    "$earshot" events 2>/dev/null | sed -u "s/^[0-9-]*T\([0-9:.]*\)Z /   $_tour_dim│ \1 /; s/\$/$_tour_reset/" &
    tour_pids[events]=$!

    _tour_step "1. Music" "Earshot plays on the headphones."
    _tour_expect playing "" headphones
    tour_sink=$tour_on
    _tour_hold "$TOUR_BREATH"

    _tour_step "2. A phone call" \
        "A stream with media.role=phone starts on the headphones: Earshot pauses for it, keeping its place," \
        "and carries on by itself when the call ends."
    _tour_start_call 5
    _tour_expect paused interruption
    _tour_end_call
    _tour_expect playing
    _tour_hold "$TOUR_BREATH"

    _tour_step "3. You pause during a call" \
        "Another call; this time you pause Earshot while it rings. When the call ends, Earshot stays paused:" \
        "it resumes only because you ask."
    _tour_start_call 6
    _tour_expect paused interruption
    _tour_hold 1.5
    _tour_say "\$ earshot pause"
    _tour_mark user "you pause"
    "$earshot" pause
    _tour_end_call
    _tour_hold 2
    _tour_expect paused
    _tour_say "\$ earshot resume"
    _tour_mark user "you resume"
    "$earshot" resume
    _tour_expect playing
    _tour_hold "$TOUR_BREATH"

    _tour_step "4. Unplug the headphones" \
        "The headphones' sink goes away (as a USB or Bluetooth headset does). Earshot pauses at once;" \
        "nothing of it reaches the speakers."
    _tour_mark unplug "unplug" headphones
    soundserver_unplug headphones
    _tour_stop_recording headphones
    _tour_expect paused outputLost
    _tour_hold "$TOUR_BREATH"

    _tour_step "5. Plug them back in" \
        "The headphones return. Earshot does not start by itself; you resume it, and it plays on the headphones."
    _tour_mark replug "replug" headphones
    soundserver_replug headphones
    _tour_record headphones
    _tour_hold 1
    _tour_expect paused outputLost
    _tour_say "\$ earshot resume"
    _tour_mark user "you resume"
    "$earshot" resume
    _tour_expect playing "" headphones
    _tour_hold "$TOUR_BREATH"

    _tour_step "6. Move it to the speakers" \
        "You move Earshot's stream to the speakers on purpose (pavucontrol, or pactl move-sink-input):" \
        "it keeps playing there."
    local input
    input=$(_tour_sink_input)
    [ -n "$input" ] || die "Earshot's stream is not on the server"
    _tour_say "\$ pactl move-sink-input $input speakers"
    _tour_mark move "move to speakers"
    pactl move-sink-input "$input" speakers
    _tour_expect playing "" speakers
    _tour_hold $((TOUR_BREATH + 1))

    # 7: where the fake sound card's module is built (scripts/run, fakecard_module_build), a headphone jack.
    local lanes=(--lane headphones=Headphones --lane speakers=Speakers) story="an unplug, a replug and a move"
    if [ -n "${EARSHOT_FAKECARD_MODULE:-}" ] && fakecard_module_load analog; then
        _tour_step "7. Pull the headphone jack" \
            "A laptop's sound card appears, with a headphone jack (a fake one: a test module of PulseAudio)." \
            "Earshot moves to it and plays on its headphones. The jack is pulled: the card stays, its headphones" \
            "port goes and its speakers take over. Earshot pauses at once: nothing comes out of the speakers."
        _tour_record fakecard_analog
        input=$(_tour_sink_input)
        [ -n "$input" ] || die "Earshot's stream is not on the server"
        _tour_mark move "move to the laptop card"
        pactl move-sink-input "$input" fakecard_analog
        _tour_expect playing "" fakecard_analog
        _tour_hold "$TOUR_BREATH"
        _tour_say "\$ pactl send-message /card/fakecard_analog_card/earshot unplug   (the jack is pulled)"
        # Marked once the server has pulled it (pactl returns with its reply): until then the card's sink plays on
        # its headphones port, as it should, and starting pactl takes longer than the rules' 10 ms.
        pactl send-message /card/fakecard_analog_card/earshot unplug >/dev/null
        _tour_mark jack "jack pulled" fakecard_analog
        _tour_expect paused outputLost
        _tour_hold "$TOUR_BREATH"
        _tour_step "8. Plug the jack back in" "The headphones are back; Earshot stays paused until you resume it."
        _tour_mark replug "jack back in" fakecard_analog
        pactl send-message /card/fakecard_analog_card/earshot plug >/dev/null
        # Longer than a step's breath: the picture's words on what followed the pulled jack need the room.
        _tour_hold $((TOUR_BREATH + 3))
        _tour_expect paused outputLost
        lanes+=(--lane "fakecard_analog=Laptop card")
        story="an unplug, a replug, a move and a pulled jack"
    else
        log "the fake sound card's module is not available: the tour has no headphone jack"
    fi

    _tour_step "The end" "Stopping Earshot and the recorders, then drawing the timeline."
    kill -TERM "$tour_pid" 2>/dev/null || true
    wait "$tour_pid" 2>/dev/null || true
    unset "tour_pids[earshot]"
    sleep 0.3
    _tour_stop_recording headphones
    _tour_stop_recording speakers
    _tour_stop_recording fakecard_analog
    kill "${tour_pids[events]}" 2>/dev/null || true
    wait "${tour_pids[events]}" 2>/dev/null || true
    unset "tour_pids[events]"

    "$timeline" draw --recordings "$tour_dir/recordings" --marks "$tour_dir/marks.tsv" \
        --events "$tour_dir/events.log" "${lanes[@]}" \
        --title "Earshot tour: what each device played" \
        --subtitle "$(date '+%Y-%m-%d %H:%M'), private PulseAudio $(pactl info | sed -n 's/^Server Version: //p'); two calls (you pause during the second), $story" \
        "$tour_dir/timeline.svg" >"$work/measured" || die "the timeline could not be drawn"
    local picture="$tour_dir/timeline.svg"
    if command -v rsvg-convert >/dev/null 2>&1; then
        rsvg-convert --zoom 1.5 --background-color white -o "$tour_dir/timeline.png" "$tour_dir/timeline.svg" \
            && picture="$tour_dir/timeline.png"
    elif command -v convert >/dev/null 2>&1 && convert -version 2>/dev/null | grep -q '^Version: ImageMagick'; then
        convert -density 144 "$tour_dir/timeline.svg" "$tour_dir/timeline.png" && picture="$tour_dir/timeline.png"
    else
        log "no SVG converter (rsvg-convert or ImageMagick): the picture is SVG only"
    fi
    echo
    # What reached the speakers after the unplug, measured on their recording (RULES.md: at most 10 ms).
    local line ms
    while read -r line; do
        ms=$(sed -n 's/.*: \([0-9]*\) ms of sound.*/\1/p' <<<"$line")
        if [ "${ms:-0}" -le 10 ]; then
            printf '%s✓ %s%s\n' "$_tour_green" "$line" "$_tour_reset"
        else
            printf '%s✗ %s (the rules allow 10 ms)%s\n' "$_tour_red" "$line" "$_tour_reset"
            tour_surprises=$((tour_surprises + 1))
        fi
    done <"$work/measured"
    if [ "$tour_surprises" -eq 0 ]; then
        printf '%sEvery step went as the rules say.%s\n' "$_tour_green" "$_tour_reset"
    else
        printf '%s%d step(s) did not go as expected (see the ✗ lines above).%s\n' "$_tour_red" "$tour_surprises" \
            "$_tour_reset"
    fi
    echo "The timeline: $picture"
    [ "$picture" = "$tour_dir/timeline.svg" ] || echo "          (and $tour_dir/timeline.svg)"
    [ "$tour_surprises" -eq 0 ]
}
