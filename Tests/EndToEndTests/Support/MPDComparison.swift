// The MPD comparison's script and requests (MPDComparisonTests): the same request lines sent to Earshot and to
// Debian's MPD on the same music, each reply compared as the table says.
enum MPDComparison {
    /// The comparing client (Python's standard library only): `python3 -c SCRIPT EARSHOT MPD TABLE_FILE`.
    static let script = #"""
# The MPD comparison (MPDComparisonTests): the same request lines sent to Earshot and to Debian's MPD on the same
# music, each reply compared as the test's table says: `same` (the whole reply, files by their last component, the
# stored playlists' dates left out), `exact` (the whole reply as sent, times and order included), `fields K...` (those
# fields only), `files` (the same files, in any order: the
# two order a whole library differently), `keys` (the same field names, values aside),
# `ack` (both refuse, with the same code and command) or `ok` (both accept). Prints one line per difference and
# `compared N` at the end; exits 1 when a reply differs.
import socket, sys


class Connection:
    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.socket = socket.create_connection((host, int(port)), timeout=30)
        self.stream = self.socket.makefile("rb", buffering=0)
        greeting = self.stream.readline()
        assert greeting.startswith(b"OK MPD "), greeting

    def ask(self, line):
        self.socket.sendall(line.encode() + b"\n")
        lines = []
        while True:
            reply = self.stream.readline().decode("utf-8", "replace").rstrip("\n")
            if reply == "OK" or reply.startswith("ACK") or reply == "":
                return lines, reply
            if reply.startswith("binary: "):
                self.stream.read(int(reply[8:]) + 1)
            lines.append(reply)


def normalized(lines):
    result = []
    for line in lines:
        key, _, value = line.partition(": ")
        if key in ("file", "directory"):
            value = value.rsplit("/", 1)[-1]
        if key == "Last-Modified":
            value = "-"
        result.append((key, value))
    return result


def compare(kind, earshot, mpd):
    (e_lines, e_end), (m_lines, m_end) = earshot, mpd
    if kind == "ack":
        return e_end.startswith("ACK") and e_end.split("}")[0] == m_end.split("}")[0] and m_end.startswith("ACK")
    if kind == "ok":
        return e_end == "OK" and m_end == "OK"
    if e_end != m_end:
        return False
    if kind == "same":
        return normalized(e_lines) == normalized(m_lines)
    if kind == "exact":
        return e_lines == m_lines
    if kind == "files":
        return sorted(v for k, v in normalized(e_lines) if k == "file") == \
            sorted(v for k, v in normalized(m_lines) if k == "file")
    if kind == "keys":
        return [key for key, _ in normalized(e_lines)] == [key for key, _ in normalized(m_lines)]
    wanted = kind.split()[1:]
    pick = lambda lines: [(k, v) for k, v in normalized(lines) if k in wanted]
    return pick(e_lines) == pick(m_lines)


def main():
    earshot, mpd = Connection(sys.argv[1]), Connection(sys.argv[2])
    differences = 0
    count = 0
    for row in open(sys.argv[3], encoding="utf-8"):
        row = row.rstrip("\n")
        if not row or row.startswith("#"):
            continue
        kind, line = row.split(" | ", 1)
        # `setup` lines run on both, unchecked but for succeeding alike.
        replies = earshot.ask(line), mpd.ask(line)
        count += 1
        if not compare("ok" if kind == "setup" else kind, *replies):
            differences += 1
            print("DIFF %s: %r\n  earshot: %r\n  mpd:     %r" % (kind, line, replies[0], replies[1]))
    print("compared %d" % count)
    sys.exit(1 if differences else 0)


main()
"""#

    /// The requests, one a line: `KIND | REQUEST`. `same`: the whole reply (files by their last component, the stored
    /// playlists' dates left out); `exact`: the whole reply as sent; `fields K...`: those fields only; `files`: the
    /// same files in any order; `keys`: the same field names; `ack`: both refuse with the same code and command; `ok`: both accept; `setup`: run on both,
    /// both must accept.
    static let requests = #"""
# The comparison's requests (mpd_compare.py): KIND | REQUEST. Run from a stopped, emptied queue on the same music
# (a.mp3 and b.mp3 at the top, c.mp3 in album/, untagged; tagged/1.flac by Sigur Rós, 2.flac, 3.flac by Miles Davis).
# Replies that may differ are in docs/mpd.md's divergences.
setup | stop
setup | clear
# The library: listall and listallinfo walk it (a folder's files, then each folder and its content), count counts it.
fields directory file | listall
fields directory file | listall "album"
fields directory file Time | listallinfo
fields songs | count file "a.mp3"
fields songs | count group artist
fields Artist songs | count group artist
fields songs | count album ""
same | count "(artist == 'Miles Davis')"
same | count "(base 'tagged')" group artist
fields songs | count "(!(base 'tagged'))"
ack | count "(artist == 'x'"
# listfiles: the disk, not the library (album/ holds a text file, a hidden one, a link and a name with a line break
# beside c.mp3), in the disk's order with sizes and times; both read the same folders.
exact | listfiles
exact | listfiles ""
exact | listfiles "album"
exact | listfiles "album/"
exact | listfiles "./tagged"
exact | listfiles "tagged/../album"
ack | listfiles "nothing"
ack | listfiles "a.mp3"
ack | listfiles "album/notes.txt"
ack | listfiles "/"
ack | listfiles "/tmp"
ack | listfiles "file:///tmp"
ack | listfiles a b
setup | add "a.mp3"
setup | add "b.mp3"
setup | addid "album/c.mp3" 1
fields file Pos | playlistinfo
fields state playlistlength song | status
setup | move 0 2
fields file Pos | playlistinfo
setup | swap 0 1
fields file Pos | playlistinfo
fields cpos | plchangesposid 0
fields file Pos | playlistid
setup | delete 1
fields file Pos | playlistinfo
fields file | playlistfind file "a.mp3"
setup | play 1
fields state song playlistlength | status
setup | pause 1
fields state song | status
setup | pause 0
fields state | status
setup | stop
fields state | status
setup | repeat 1
setup | random 1
fields repeat random single consume | status
setup | single 1
setup | consume 1
fields repeat random single consume | status
setup | single oneshot
fields single | status
setup | repeat 0
setup | random 0
setup | single 0
# Consume: the track left by next leaves the queue, the next plays at its place.
setup | play 0
setup | next
fields file Pos | playlistinfo
fields state song playlistlength consume | status
setup | stop
setup | consume 0
setup | replay_gain_mode album
same | replay_gain_status
setup | replay_gain_mode off
keys | outputs
fields outputid outputenabled | outputs
# Stored playlists.
setup | save "compare-one"
ack | save "compare-one"
fields playlist | listplaylists
fields file | listplaylist "compare-one"
setup | playlistadd "compare-one" "a.mp3"
fields file | listplaylist "compare-one"
setup | playlistdelete "compare-one" 0
fields file | listplaylist "compare-one"
setup | rename "compare-one" "compare-two"
ack | rename "compare-one" "compare-three"
setup | clear
setup | load "compare-two"
fields playlistlength | status
setup | playlistclear "compare-two"
same | listplaylist "compare-two"
setup | rm "compare-two"
ack | rm "compare-two"
ack | load "compare-nothing"
ack | save "a/b"
ack | playlistdelete "compare-nothing" 0
# Refusals: code and command agree.
ack | move 9 0
ack | listall "nothing"
ack | count group nonsense
ack | count artist
ack | deleteid 999
ack | playid 999
ack | swap 0 9
ack | moveid 999 0
ack | seekid 999 1
ack | delete 9
ack | playlistid 999
ack | enableoutput 5
ack | replay_gain_mode loud
ack | binarylimit 10
ack | single 2
ack | consume 2
ack | consume oneshot
ack | single on
ack | prio 300 0
ack | password wrong
ack | plchanges x
ack | frobnicate
ack | status 1
ack | play x
ack | setvol 101
ack | delete 5:2
ack | addid "missing.mp3"
ack | playlistadd "compare-four" "missing.mp3"
# MPD's filter expressions: find exact, search without case, a tag a track lacks is '', albumartist falls back.
fields file Title | find "(artist == 'Miles Davis')"
same | find "(artist == 'miles davis')"
fields file | search "(artist == 'miles davis')"
fields file | find "(title contains 'Tune')"
same | find "(title contains 'tune')"
fields file | search "(title contains 'TUNE')"
fields file | find "((artist == 'Miles Davis') AND (track == '2'))"
fields file | find "((genre == 'Jazz') AND (!(composer == 'Miles Davis')) AND (date == '1959'))"
files | find "(!(artist == 'Miles Davis'))"
files | find "(composer != 'Miles Davis')"
files | find "(title !contains 'e')"
files | find "(composer == '')"
files | find "(base 'tagged')"
same | find "(base 'tag')"
same | find "((title == 'x') AND (base 'nowhere'))"
same | list album "(base 'tag')" group artist
fields file | find "(file == 'tagged/3.flac')"
fields file | find "(albumartist == 'Miles Davis')"
fields file | find "(any == 'Jazz')"
fields file | find "(AlbumArtist == \"Sigur Rós\")"
fields file | find "(title == 'Freddie\\'s Tune')"
fields file | find "(title == \"Freddie's Tune\")"
fields file | search "( title  contains  'so' ) "
fields file | find "(artist == 'Miles Davis')" "album" "Kind of Blue" "title" "So What"
same | list album "(artist == 'Miles Davis')"
same | list genre "(base 'tagged')"
same | list title "((genre == 'Jazz') AND (track == '1'))"
# list ... group: the last group outermost, '' for a tag a track lacks, byte order at every level.
same | list album group artist
same | list album group albumartist
same | list title "(base 'tagged')" group date group genre
same | list track "(artist == 'Miles Davis')" group composer
same | list genre group date group artist
same | list title artist "Miles Davis" group album
ack | list album group album
ack | list album group colour
ack | list album group artist group artist
ack | list album group file
setup | clear
setup | findadd "(album == 'Kind of Blue')"
fields file | playlistinfo
setup | searchadd "(album contains 'BYRJUN')"
fields file | playlistinfo
setup | clear
# sort TAG (stable, -TAG descending, numbers as numbers) and window START:END, on find, search and findadd.
fields file | find "(base 'tagged')" sort title
fields file | find "(base 'tagged')" sort -Title
fields file | find "(artist == 'Miles Davis')" sort -track
fields file | search "(title contains 'S')" sort title window 1:3
fields file | find "(base 'tagged')" sort title window 1:
fields file | find "(base 'tagged')" sort title window 2
same | find "(base 'tagged')" sort title window 5:9
setup | findadd "(base 'tagged')" sort -title window 0:2
fields file | playlistinfo
setup | clear
ack | find "(base 'tagged')" sort colour
ack | find "(base 'tagged')" window 3:1
ack | find "(base 'tagged')" window x
ack | find "(artist == 'x'"
ack | find "(artist == 'x') x"
ack | find "((artist == 'a') OR (album == 'b'))"
ack | find "(colour == 'x')"
ack | find "(artist = 'x')"
ack | find "(modified-since 'soon')"
ack | find "(artist == 'x') title"
ack | search "(!artist == 'x')"
ack | list album "(artist == 'x'"
ok | ping
ok | binarylimit 4096
ok | prio 3 0
ok | clearerror
"""#
}
