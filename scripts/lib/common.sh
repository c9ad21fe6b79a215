# Sourced by the scripts: logging and installing what is missing from Debian's packages.

# ensure_packages PKG...: installs the Debian packages that are not installed yet (apt-get update first).
ensure_packages() {
    local missing=() package
    for package in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$package")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    printf '[setup] installing: %s\n' "${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq </dev/null >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        </dev/null >&2
}

# ensure_swift: puts the toolchain on PATH when it is installed in /opt/swift but not on PATH.
ensure_swift() {
    command -v swift >/dev/null 2>&1 && return 0
    if [ -x /opt/swift/usr/bin/swift ]; then
        PATH="/opt/swift/usr/bin:$PATH"
        export PATH
        return 0
    fi
    printf '[setup] error: swift is not on PATH (Swift 6 is expected, e.g. in /opt/swift)\n' >&2
    exit 1
}
