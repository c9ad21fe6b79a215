# shellcheck shell=bash
# Sourced by scripts/lib/soundserver.sh: a private install of PipeWire 1.4.2 and WirePlumber 0.5.8 from Debian's
# bookworm-backports, for EARSHOT_TEST_SERVER=pipewire-1.4, beside the system's own PipeWire 0.3.65.
#
# The system's apt sources and its installed packages are not touched: the .deb files are fetched with a private
# apt configuration (its own sources file naming bookworm and bookworm-backports on the mirror the system already
# uses, its own lists and archive folders), unpacked with `dpkg -x` into a prefix, and the daemons are started with
# the prefix's programs, libraries, SPA plugins, modules and configuration (see pipewire_prefix_environment). What
# those libraries need from Debian 12 itself (glib, libsndfile, ...) is read from the packages' Depends fields and
# installed like any other package the scripts need.
#
# Everything lives under the build folder, ${EARSHOT_SCRATCH_PATH:-.build}/pipewire-1.4/, and is downloaded once:
#   apt/      the private apt configuration, lists and archives
#   debs/     the downloaded packages
#   prefix/   their contents; prefix/.complete marks a finished unpack of the packages in debs/

# The packages of the prefix, each from bookworm-backports unless it names its suite.
PIPEWIRE_PREFIX_PACKAGES=(pipewire/bookworm-backports pipewire-bin/bookworm-backports
    pipewire-pulse/bookworm-backports libpipewire-0.3-0/bookworm-backports libpipewire-0.3-modules/bookworm-backports
    libspa-0.2-modules/bookworm-backports wireplumber/bookworm-backports libwireplumber-0.5-0/bookworm-backports
    liblua5.4-0/bookworm)
# The versions the prefix must hold (checked after the download: backports can move on).
PIPEWIRE_PREFIX_VERSIONS=("pipewire 1.4.2" "wireplumber 0.5.8")

_pipewire_prefix_log() { printf '[pipewire-1.4] %s\n' "$*" >&2; }

# pipewire_prefix_folder: prints the folder that holds the download and the prefix.
pipewire_prefix_folder() {
    printf '%s/pipewire-1.4\n' "${EARSHOT_SCRATCH_PATH:-$EARSHOT_ROOT/.build}"
}

# The archive the system's apt already uses for Debian itself: the first `URIs:` of a deb822 sources file, or the
# first `deb` line of sources.list, that serves bookworm.
_pipewire_prefix_mirror() {
    local file
    for file in /etc/apt/sources.list.d/*.sources; do
        [ -f "$file" ] || continue
        awk '/^URIs:/ { uri = $2 } /^Suites:/ && / bookworm( |$)/ && uri != "" { print uri; exit }' "$file"
    done | head -n 1 | grep . && return 0
    awk '$1 == "deb" && $3 == "bookworm" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -n 1 | grep .
}

# apt-get or apt-cache with the private configuration of FOLDER.
_pipewire_prefix_apt() {
    local folder=$1 tool=$2
    shift 2
    "$tool" -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$folder/apt/sources" \
        -o Dir::State::Lists="$folder/apt/lists" -o Dir::Cache::Archives="$folder/apt/archives" \
        -o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache="" -o APT::Sandbox::User=root "$@"
}

# Downloads the packages into FOLDER/debs with the private apt configuration.
_pipewire_prefix_download() {
    local folder=$1 mirror
    mirror=$(_pipewire_prefix_mirror) || {
        _pipewire_prefix_log "no Debian bookworm archive found in /etc/apt/sources.list.d or /etc/apt/sources.list"
        return 1
    }
    rm -rf "$folder/apt" "$folder/debs"
    mkdir -p "$folder/apt/sources" "$folder/apt/lists/partial" "$folder/apt/archives/partial" "$folder/debs"
    cat >"$folder/apt/sources/earshot-backports.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    _pipewire_prefix_log "fetching PipeWire 1.4 and WirePlumber 0.5 from bookworm-backports (private apt lists)"
    _pipewire_prefix_apt "$folder" apt-get update >/dev/null || return 1
    (cd "$folder/debs" && _pipewire_prefix_apt "$folder" apt-get download "${PIPEWIRE_PREFIX_PACKAGES[@]}" >/dev/null) \
        || return 1
}

# Checks that FOLDER/debs holds the versions the tests are meant for.
_pipewire_prefix_check_versions() {
    local folder=$1 wanted name version deb
    for wanted in "${PIPEWIRE_PREFIX_VERSIONS[@]}"; do
        read -r name version <<<"$wanted"
        deb=$(find "$folder/debs" -name "${name}_*.deb" | head -n 1)
        if [ -z "$deb" ]; then
            _pipewire_prefix_log "$name was not downloaded"
            return 1
        fi
        case "$(dpkg-deb -f "$deb" Version)" in
            "$version"-*) ;;
            *)
                _pipewire_prefix_log "$name is $(dpkg-deb -f "$deb" Version) in bookworm-backports, not $version"
                return 1
                ;;
        esac
    done
}

# The Debian 12 packages the prefix's packages depend on, outside the prefix: the first alternative of each
# dependency, without versions, less the prefix's own packages and what only a packaged system service needs.
_pipewire_prefix_dependencies() {
    local folder=$1 own=() deb
    for deb in "$folder"/debs/*.deb; do own+=("$(dpkg-deb -f "$deb" Package)"); done
    for deb in "$folder"/debs/*.deb; do dpkg-deb -f "$deb" Depends; done \
        | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' | grep . | sort -u \
        | grep -vxF -f <(printf '%s\n' "${own[@]}" adduser init-system-helpers default-dbus-session-bus \
            dbus-session-bus dconf-gsettings-backend gsettings-backend)
}

# pipewire_prefix_prepare: makes sure the prefix is unpacked and its dependencies are installed; prints its path.
pipewire_prefix_prepare() {
    local folder prefix deb dependencies=()
    folder=$(pipewire_prefix_folder)
    prefix="$folder/prefix"
    if [ ! -f "$prefix/.complete" ]; then
        _pipewire_prefix_download "$folder" || { _pipewire_prefix_log "the download failed"; return 1; }
        _pipewire_prefix_check_versions "$folder" || return 1
        rm -rf "$prefix"
        mkdir -p "$prefix"
        for deb in "$folder"/debs/*.deb; do dpkg -x "$deb" "$prefix" || return 1; done
        touch "$prefix/.complete"
        _pipewire_prefix_log "unpacked into $prefix"
    fi
    mapfile -t dependencies < <(_pipewire_prefix_dependencies "$folder")
    if ! declare -F ensure_packages >/dev/null; then
        # shellcheck source=common.sh
        source "$EARSHOT_ROOT/scripts/lib/common.sh"
    fi
    ensure_packages "${dependencies[@]}" || return 1
    printf '%s\n' "$prefix"
}

# pipewire_prefix_environment PREFIX: prints, one a line, the VAR=value assignments that make the daemons run from
# PREFIX: its programs first on PATH, its libraries, SPA plugins and modules, and its configuration and data. The
# user configuration folder comes first for WirePlumber, so the tests' own fragments (Config/wireplumber-0.5-test)
# are read, as a user's ~/.config/wireplumber would be.
pipewire_prefix_environment() {
    local prefix=$1 lib
    # The multiarch folder (x86_64-linux-gnu here), as the packages were built for this machine's architecture.
    lib=$(find "$prefix/usr/lib" -mindepth 1 -maxdepth 1 -type d -name '*-linux-*' | head -n 1)
    printf '%s\n' "PATH=$prefix/usr/bin:$PATH" "LD_LIBRARY_PATH=$lib" "SPA_PLUGIN_DIR=$lib/spa-0.2" \
        "PIPEWIRE_MODULE_DIR=$lib/pipewire-0.3" "PIPEWIRE_CONFIG_DIR=$prefix/usr/share/pipewire" \
        "WIREPLUMBER_MODULE_DIR=$lib/wireplumber-0.5" \
        "WIREPLUMBER_CONFIG_DIR=$SOUNDSERVER_ROOT/config/wireplumber:$prefix/usr/share/wireplumber" \
        "WIREPLUMBER_DATA_DIR=$prefix/usr/share/wireplumber"
}
