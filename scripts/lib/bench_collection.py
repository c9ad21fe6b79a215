# scripts/lib/bench_collection.py: the generated collection of `scripts/bench --library` (bench_library.py), and what
# it wrote into each file's tags, which bench_tags.py checks the tag readers against.
#
# TRACKS files under artist/album folders (artists with non-ASCII names among them, albums of two discs), with tags
# written here in front of a tiny encoded body (0.2 s of a tone: short audio, so the collection stays small and what
# is measured is the scan, not the disk). Of every 20 files: 9 FLAC (Vorbis comments), 1 Ogg Vorbis or Opus from its
# encoder (up to 400 in all: they take a process each, so FLAC beyond), and 10 MP3: 5 ID3v2.3 (UTF-16, TYER), 4
# ID3v2.4 (UTF-8, a full TDRC date) and 1 with an ID3v1.1 tag alone (Latin-1, 30 bytes a field, a genre by number
# where ID3v1's list has it). The ID3v2.4, FLAC, Vorbis and Opus files carry an album artist, a composer and
# MusicBrainz track and album ids too, and one album in ten an embedded cover (a 1x1 PNG) in the ID3v2 and FLAC files
# and Vorbis comments (METADATA_BLOCK_PICTURE).
import base64
import json
import os
import random
import struct
import subprocess
import uuid
import zlib

WORDS = ["blue", "night", "river", "señor", "café", "über", "ørsted", "smile", "kind", "green", "road", "light",
         "dream", "stone", "fire", "åland", "heart", "rain", "glass", "moon", "paper", "winter", "élan", "ocean"]
ARTISTS = ["Sigur Rós", "Björk", "Mötley Crüe", "Ελένη Καραΐνδρου", "Miles Davis", "The Beatles", "Caetano Veloso",
           "Kraftwerk", "Anouar Brahem", "Zoë Keating"]
GENRES = ["Jazz", "Rock", "Post-Rock", "Electronic", "Classical", "MPB", "Folk"]
COMPOSERS = ["Arvo Pärt", "Antonín Dvořák", "Heitor Villa-Lobos", "Kaija Saariaho", "Duke Ellington"]
# The genres ID3v1's list numbers (the rest cannot be written there: 255, none).
ID3V1_GENRES = {"Jazz": 8, "Rock": 17, "Classical": 32, "Electronic": 52, "Folk": 80}
SECONDS = 0.2


def id3_frame(frame, text, version):
    if version == 4:
        body = b"\x03" + text.encode() if isinstance(text, str) else text  # UTF-8
        size = bytes([(len(body) >> shift) & 0x7F for shift in (21, 14, 7, 0)])  # syncsafe in 2.4
    else:
        body = b"\x01" + text.encode("utf-16") if isinstance(text, str) else text  # UTF-16 with a byte-order mark
        size = struct.pack(">I", len(body))
    return frame.encode() + size + b"\x00\x00" + body


def id3_tag(frames, version=3):
    """An ID3v2.VERSION tag of FRAMES: (id, text or raw bytes) pairs."""
    data = b"".join(id3_frame(frame, value, version) for frame, value in frames)
    size = len(data)
    syncsafe = bytes([(size >> 21) & 0x7F, (size >> 14) & 0x7F, (size >> 7) & 0x7F, size & 0x7F])
    return b"ID3" + bytes([version, 0, 0]) + syncsafe + data


def latin1_field(text, width):
    return text.encode("latin-1", errors="replace")[:width].ljust(width, b"\x00")


def id3v1_tag(tags):
    """An ID3v1.1 tag, and the values it holds as a reader should give them back."""
    genre = ID3V1_GENRES.get(tags["genre"], 255)
    data = (b"TAG" + latin1_field(tags["title"], 30) + latin1_field(tags["artist"], 30)
            + latin1_field(tags["album"], 30) + latin1_field(tags["date"], 4) + b"\x00" * 28
            + bytes([0, int(tags["track"]), genre]))
    held = {key: latin1_field(tags[key], 30).rstrip(b"\x00").decode("latin-1").strip()
            for key in ("title", "artist", "album")}
    held.update(date=tags["date"], track=tags["track"])
    if genre != 255:
        held["genre"] = tags["genre"]
    return data, held


def png_1x1():
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x80\x00")) + chunk(b"IEND", b""))


def flac_picture(png):
    """A FLAC PICTURE structure: a front cover, PNG, 1x1."""
    mime = b"image/png"
    return (struct.pack(">II", 3, len(mime)) + mime + struct.pack(">IIIIII", 0, 1, 1, 24, 0, len(png)) + png)


def flac_with_comments(template, comments, picture=None):
    """The FLAC file `template` (bytes) with its metadata blocks replaced by STREAMINFO, these comments (a dict) and
    PICTURE (a FLAC picture structure) when given."""
    assert template[:4] == b"fLaC"
    offset, streaminfo = 4, None
    while True:
        header = template[offset]
        length = int.from_bytes(template[offset + 1:offset + 4], "big")
        if header & 0x7F == 0:
            streaminfo = template[offset + 4:offset + 4 + length]
        offset += 4 + length
        if header & 0x80:
            break
    vendor = b"earshot bench"
    body = struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", len(comments))
    for key, value in comments.items():
        entry = f"{key}={value}".encode()
        body += struct.pack("<I", len(entry)) + entry
    blocks = bytes([0]) + len(streaminfo).to_bytes(3, "big") + streaminfo
    if picture:
        blocks += bytes([6]) + len(picture).to_bytes(3, "big") + picture
    blocks += bytes([0x84]) + len(body).to_bytes(3, "big") + body
    return b"fLaC" + blocks + template[offset:]


def mpeg_rate(data):
    """The sample rate of the first MPEG audio frame in DATA (lame resamples what it encodes at 32 kbit/s)."""
    rates = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}  # MPEG 1, 2, 2.5
    for offset in range(len(data) - 3):
        if data[offset] == 0xFF and data[offset + 1] & 0xE0 == 0xE0:
            version, index = (data[offset + 1] >> 3) & 3, (data[offset + 2] >> 2) & 3
            if version in rates and index < 3:
                return rates[version][index]
    raise ValueError("no MPEG frame")


def played_seconds(path, rate):
    """How long mpg123, gapless, plays the MP3 at PATH: lame leaves its LAME tag (the encoder delay and padding to trim)
    out of a frame too small for it, as at 16 kHz and 32 kbit/s, and then every reader plays the whole frames."""
    pcm = subprocess.run(["mpg123", "-q", "--stereo", "-s", path], check=True, capture_output=True).stdout
    return len(pcm) / 4 / rate


def make_collection(root, tracks, work):
    """Writes the collection; returns the FLAC template (a file added later is made of it). What was written goes to
    WORK/written.json: each file's path below ROOT, its format, and the fields as a reader should give them."""
    random.seed(36)
    wav = os.path.join(work, "tone.wav")
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", str(SECONDS), "sine", "440",
                    "gain", "-6"], check=True)
    subprocess.run(["lame", "--quiet", "-b", "32", "--cbr", wav, os.path.join(work, "t.mp3")], check=True)
    subprocess.run(["flac", "-s", "-f", "--no-padding", "-o", os.path.join(work, "t.flac"), wav], check=True)
    mp3 = open(os.path.join(work, "t.mp3"), "rb").read()
    mp3_seconds = played_seconds(os.path.join(work, "t.mp3"), mpeg_rate(mp3))
    flac = open(os.path.join(work, "t.flac"), "rb").read()
    png = png_1x1()
    picture = flac_picture(png)
    apic = lambda version: (bytes([3 if version == 4 else 1]) + b"image/png\x00" + b"\x03"
                            + ("\x00".encode() if version == 4 else "".encode("utf-16") + b"\x00\x00") + png)
    written = {}
    encoded = 0
    per_album, discs = 10, 2
    albums = (tracks + per_album - 1) // per_album
    count = 0
    for album in range(albums):
        artist = f"{ARTISTS[album % len(ARTISTS)]} {album // len(ARTISTS) // 5}"
        year = 1950 + album % 70
        title = " ".join(random.choice(WORDS) for _ in range(2)).title()
        folder = os.path.join(root, artist, f"{year} {title} {album}")
        os.makedirs(folder, exist_ok=True)
        album_id = str(uuid.UUID(int=random.getrandbits(128), version=4))
        cover = album % 10 == 3
        for number in range(1, per_album + 1):
            if count == tracks:
                break
            disc = 1 + (number - 1) * discs // per_album
            song = " ".join(random.choice(WORDS) for _ in range(3)).capitalize()
            tags = {"artist": artist, "album": f"{title} {album}", "title": song, "date": str(year),
                    "track": str(number), "disc": str(disc), "genre": GENRES[album % len(GENRES)]}
            more = {"albumartist": artist, "composer": COMPOSERS[album % len(COMPOSERS)],
                    "mb_track": str(uuid.UUID(int=random.getrandbits(128), version=4)), "mb_album": album_id}
            kind = count % 20
            stem = os.path.join(folder, f"{disc}-{number:02d} {song}")
            comments = {"ARTIST": artist, "ALBUM": tags["album"], "TITLE": song, "DATE": str(year),
                        "TRACKNUMBER": str(number), "DISCNUMBER": str(disc), "GENRE": tags["genre"],
                        "ALBUMARTIST": more["albumartist"], "COMPOSER": more["composer"],
                        "MUSICBRAINZ_TRACKID": more["mb_track"], "MUSICBRAINZ_ALBUMID": album_id}
            if kind == 19 and encoded < 400:
                # One in twenty an Ogg Vorbis or Opus file from its encoder, up to 400.
                vorbis = encoded % 2 == 1
                name, form = stem + (".ogg" if vorbis else ".opus"), "Ogg Vorbis" if vorbis else "Opus"
                lines = [f"{key}={value}" for key, value in comments.items()]
                if cover:
                    lines.append("METADATA_BLOCK_PICTURE=" + base64.b64encode(picture).decode())
                if vorbis:
                    command = ["oggenc", "-Q", "-q", "0", "-o", name, wav]
                    for line in lines:
                        command[1:1] = ["-c", line]
                else:
                    command = ["opusenc", "--quiet", "--bitrate", "16"]
                    for line in lines:
                        command += ["--comment", line]
                    command += [wav, name]
                subprocess.run(command, check=True)
                encoded += 1
                fields = dict(tags, **more, rate=48000 if not vorbis else 44100)
            elif kind % 2:
                name, form = stem + ".flac", "FLAC"
                open(name, "wb").write(flac_with_comments(flac, comments, picture if cover else None))
                fields = dict(tags, **more, rate=44100)
            elif kind // 2 == 9:
                name, form = stem + ".mp3", "MP3 ID3v1.1"
                data, fields = id3v1_tag(tags)
                open(name, "wb").write(mp3 + data)
                fields["rate"] = mpeg_rate(mp3)
            else:
                version = 4 if kind // 2 >= 5 else 3
                name, form = stem + ".mp3", f"MP3 ID3v2.{version}"
                frames = [("TPE1", artist), ("TALB", tags["album"]), ("TIT2", song), ("TRCK", str(number)),
                          ("TPOS", str(disc)), ("TCON", tags["genre"])]
                fields = dict(tags, rate=mpeg_rate(mp3))
                if version == 4:
                    tags_date = f"{year}-{1 + number % 12:02d}-{1 + album % 28:02d}"
                    fields.update(more, date=tags_date)
                    frames += [("TDRC", tags_date), ("TPE2", more["albumartist"]), ("TCOM", more["composer"]),
                               ("UFID", b"http://musicbrainz.org\x00" + more["mb_track"].encode()),
                               ("TXXX", b"\x03MusicBrainz Album Id\x00" + album_id.encode())]
                else:
                    frames.append(("TYER", str(year)))
                if cover:
                    frames.append(("APIC", apic(version)))
                open(name, "wb").write(id3_tag(frames, version) + mp3)
            fields["cover"] = bool(cover) and form != "MP3 ID3v1.1"
            fields["seconds"] = mp3_seconds if form.startswith("MP3") else SECONDS
            written[os.path.relpath(name, root)] = dict(fields, format=form)
            count += 1
    with open(os.path.join(work, "written.json"), "w") as handle:
        json.dump(written, handle, ensure_ascii=False)
    return os.path.join(work, "t.flac")
