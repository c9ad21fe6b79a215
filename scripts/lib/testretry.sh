# shellcheck shell=bash
# The one retry rule for runs against a real sound server (scripts/test, and the sanitized end-to-end step of
# scripts/ci-checks). A real server on a shared 2-core machine has bad moments, so a run that failed in a few tests
# (at most $TESTRETRY_MAX) runs just those once more, alone; the run passes only if all of them pass then, and the
# caller names each of them as flaky in its closing lines, so they are looked at rather than forgotten. A crash, or
# more failures than that, is never retried; for a crash, testretry_unfinished names the test that was running.

# Five: one bad moment of a server can fail every test of one scenario at once (on 2026-12-06, under the load of
# two lanes and the sanitizer builds, WirePlumber 0.4.13 left the default sink on `headphones` after a fake headset's
# profile switch in four tests of two fake-card suites; each passed alone and in the lane's order on a quiet machine;
# the cause, found later, was a card profile `off` WirePlumber had kept from an earlier test: docs/measured.md).
TESTRETRY_MAX=5
# The tests the last successful testretry_again ran again ("Module.Type/function").
TESTRETRY_NAMES=()

# testretry_failed_tests XUNIT: prints "Module.Type/function" for each failed test case in XUNIT, the Swift Testing
# file that `swift test --xunit-output X.xml` writes beside X.xml as X-swift-testing.xml.
testretry_failed_tests() {
    awk '
        /<testcase / {
            current = ""
            if (match($0, /classname="[^"]*"/)) { cls = substr($0, RSTART + 11, RLENGTH - 12) }
            if (match($0, / name="[^"(]*/)) { current = cls "/" substr($0, RSTART + 7, RLENGTH - 7) }
        }
        /<failure/ && current != "" && !(current in seen) { seen[current] = 1; print current }
    ' "$1"
}

# testretry_outcomes XUNIT: prints "passed Module.Type/function" or "failed Module.Type/function" for each test case
# in XUNIT (a Swift Testing file, as for testretry_failed_tests), in the file's order; scripts/ci-repeat counts them.
testretry_outcomes() {
    awk '
        /<testcase / {
            current = ""
            if (match($0, /classname="[^"]*"/)) { cls = substr($0, RSTART + 11, RLENGTH - 12) }
            if (match($0, / name="[^"(]*/)) { current = cls "/" substr($0, RSTART + 7, RLENGTH - 7) }
            if (current != "" && !(current in seen)) { seen[current] = 1; order[++count] = current }
        }
        /<failure/ && current != "" { failed[current] = 1 }
        END { for (i = 1; i <= count; i++) print (order[i] in failed ? "failed " : "passed ") order[i] }
    ' "$1"
}

# testretry_failure_messages XUNIT: prints "[testretry] failure in Module.Type/function: MESSAGE" for each failure in
# XUNIT (a Swift Testing file), its message cut to 400 characters: .ci/run's summary keeps these lines, so that a test
# saved by its retry says why it failed the first time even where only the end of the CI log is kept.
testretry_failure_messages() {
    awk '
        /<testcase / {
            current = ""
            if (match($0, /classname="[^"]*"/)) { cls = substr($0, RSTART + 11, RLENGTH - 12) }
            if (match($0, / name="[^"(]*/)) { current = cls "/" substr($0, RSTART + 7, RLENGTH - 7) }
        }
        /<failure/ && current != "" {
            message = ""
            if (match($0, /message="[^"]*"/)) { message = substr($0, RSTART + 9, RLENGTH - 10) }
            else if (match($0, /message=".*/)) { message = substr($0, RSTART + 9) }
            gsub(/&#10;|&#xA;/, " / ", message); gsub(/&#8594;/, "->", message); gsub(/&quot;/, "\"", message); gsub(/&apos;/, "\047", message)
            gsub(/&lt;/, "<", message); gsub(/&gt;/, ">", message); gsub(/&amp;/, "\\&", message)
            printf "[testretry] failure in %s: %s\n", current, substr(message, 1, 400)
        }
    ' "$1"
}

# testretry_again XUNIT COMMAND...: XUNIT is the path the failed run gave --xunit-output. When 1 to $TESTRETRY_MAX
# tests failed there, runs COMMAND (a `swift test` command line, possibly behind `env`) with a --filter for each,
# its output on standard error, and returns 0 if they all passed then, with their names in TESTRETRY_NAMES.
# Returns 1 otherwise, or when there is nothing to retry.
testretry_again() {
    local swift_testing=${1%.xml}-swift-testing.xml
    shift
    TESTRETRY_NAMES=()
    [ -f "$swift_testing" ] || return 1
    local names=() filters=() name output status=0
    mapfile -t names < <(testretry_failed_tests "$swift_testing")
    if [ ${#names[@]} -eq 0 ] || [ ${#names[@]} -gt "$TESTRETRY_MAX" ]; then
        return 1
    fi
    printf '[testretry] %d test(s) failed; running them once more: %s\n' "${#names[@]}" "${names[*]}" >&2
    testretry_failure_messages "$swift_testing" >&2
    for name in "${names[@]}"; do filters+=(--filter "$name"); done
    output=$(mktemp /tmp/earshot-test-retry.XXXXXX)
    "$@" "${filters[@]}" </dev/null 2>&1 | tee "$output" >&2 || status=${PIPESTATUS[0]}
    if [ "$status" -eq 0 ] && grep -q 'Test run with .* passed' "$output"; then
        TESTRETRY_NAMES=("${names[@]}")
        status=0
    else
        status=1
    fi
    rm -f "$output"
    return "$status"
}

# testretry_unfinished LOG: prints, in the order they started, the tests that LOG (a `swift test` run's plain output,
# NO_COLOR) shows started and never passed, failed or skipped: after a run that died on a signal, the test that was
# running when it did (one at a time, --no-parallel), so that the closing lines name it.
testretry_unfinished() {
    awk '
        /^◇ Test ".*" started\.$/ {
            name = $0; sub(/^◇ Test /, "", name); sub(/ started\.$/, "", name)
            order[++count] = name; open[name] = 1; next
        }
        /^(✔|✘|➜) Test "/ && (/ (passed|failed) after [0-9.]+ seconds/ || / skipped/) {
            for (name in open) if (index($0, "Test " name " ") > 0) delete open[name]
        }
        END { for (i = 1; i <= count; i++) if (order[i] in open) { print order[i]; delete open[order[i]] } }
    ' "$1"
}
