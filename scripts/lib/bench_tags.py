# scripts/lib/bench_tags.py: Earshot's own tag readers against TagLib on the collection of `scripts/bench --library`
# (issue 36: which tag reader the library uses, with a measured reason).
#
# The two readers walk the same folder, one process each, in turns (ROUNDS rounds, the best CPU of each kept):
#   - `earshot decode --tags MUSIC`: the library's own scan (LibraryScanner's walk and reading: the kind by content,
#     the tags, the length and rate from the decoder's open), without the database, one JSON object a track;
#   - scripts/lib/taglib-read.c on TagLib 1.13's C binding (libtagc0), compiled here with gcc and pkg-config: the
#     same walk, and every field its C API has.
# For each: CPU seconds (user + system) and wall time per 10 000 files, and peak RSS (GNU time's); and,
# by format, how many of the fields bench_collection.py wrote each gives back right.
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
# What TagLib 1.13's C API has no call for (tag_c.h: title, artist, album, comment, genre, year, track; the length in
# whole seconds, bitrate, sample rate, channels), and Earshot's library needs.
TAGLIB_C_LACKS = ("disc", "albumartist", "composer", "musicbrainz", "cover")
FORMATS = ["MP3 ID3v2.3", "MP3 ID3v2.4", "MP3 ID3v1.1", "FLAC", "Ogg Vorbis", "Opus"]
# (column, written key that must be present, Earshot's check, TagLib's check): each check takes (reading, written).
FIELDS = [
    ("title", "title", lambda r, w: r.get("title") == w["title"], lambda r, w: r.get("title") == w["title"]),
    ("artist", "artist", lambda r, w: r.get("artist") == w["artist"], lambda r, w: r.get("artist") == w["artist"]),
    ("album", "album", lambda r, w: r.get("album") == w["album"], lambda r, w: r.get("album") == w["album"]),
    ("genre", "genre", lambda r, w: r.get("genre") == w["genre"], lambda r, w: r.get("genre") == w["genre"]),
    # TagLib's C API gives a year, as a number: right when it is the date's year.
    ("date (TagLib: year)", "date", lambda r, w: r.get("date") == w["date"],
     lambda r, w: r.get("year") == int(w["date"][:4])),
    ("track", "track", lambda r, w: r.get("track") == int(w["track"]), lambda r, w: r.get("track") == int(w["track"])),
    ("disc", "disc", lambda r, w: r.get("disc") == int(w["disc"]), None),
    ("album artist", "albumartist", lambda r, w: r.get("albumartist") == w["albumartist"], None),
    ("composer", "composer", lambda r, w: r.get("composer") == w["composer"], None),
    ("MusicBrainz ids", "mb_track", lambda r, w: r.get("musicbrainz_trackid") == w["mb_track"]
     and r.get("musicbrainz_albumid") == w["mb_album"], None),
    ("cover (has one or not)", "cover", lambda r, w: bool(r.get("cover")) == w["cover"], None),
    # The length as played (0.2 s; an MP3 lame wrote no LAME tag in plays its whole frames, 288 ms) to 20 ms for
    # Earshot; TagLib's C API gives whole seconds, right when it is the floor.
    ("length (TagLib: whole s)", "seconds", lambda r, w: abs(r.get("durationMs", -1e9) / 1000 - w["seconds"]) <= 0.02,
     lambda r, w: r.get("seconds") == int(w["seconds"])),
    ("sample rate", "rate", lambda r, w: r.get("sampleRate") == w["rate"],
     lambda r, w: r.get("sampleRate") == w["rate"]),
]


def build_taglib_reader(work):
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "taglib_c"], check=True, capture_output=True,
                           text=True).stdout.split()
    binary = os.path.join(work, "taglib-read")
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", binary, os.path.join(HERE, "taglib-read.c"),
                    *flags], check=True)
    return binary


def run_reader(command, output, work):
    """Runs COMMAND with its output into the file OUTPUT: (wall s, CPU s, peak RSS KiB, exit status), as GNU time
    reports them. (Not getrusage of a child of this process: its peak RSS would count the Python copy it was forked as,
    kept over exec.)"""
    report = os.path.join(work, "time.txt")
    with open(output, "wb") as handle:
        finished = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", report, *command], stdout=handle,
                                  stderr=subprocess.DEVNULL)
    wall, user, system, rss = open(report).read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss), finished.returncode


def readings(path):
    found = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                reading = json.loads(line)
                found[reading["file"]] = reading
    return found


def score(written, found, reader):
    """{format: {"files": N, column: [right, of]}}: how many of the fields written READER ("earshot", "taglib") read
    right, by format; a field its API has no call for is None."""
    table = {}
    for path, wrote in written.items():
        row = table.setdefault(wrote["format"], {"files": 0})
        row["files"] += 1
        reading = found.get(path, {})
        for column, key, earshot_check, taglib_check in FIELDS:
            if key not in wrote or (key == "cover" and wrote["format"] == "MP3 ID3v1.1"):
                continue
            check = earshot_check if reader == "earshot" else taglib_check
            if check is None:
                row[column] = None
                continue
            tally = row.setdefault(column, [0, 0])
            tally[1] += 1
            try:
                tally[0] += bool(check(reading, wrote))
            except (TypeError, ValueError):
                pass
    return table


def measure_readers(earshot, music, work, results, rounds=2):
    """Both readers on MUSIC, ROUNDS times in turns; into RESULTS["tag_readers"]."""
    written = json.load(open(os.path.join(work, "written.json"), encoding="utf-8"))
    commands = {"earshot": [earshot, "decode", "--tags", music], "taglib": [build_taglib_reader(work), music]}
    best = {}
    for _ in range(rounds):
        for name, command in commands.items():
            load = os.getloadavg()[0]
            output = os.path.join(work, f"tags-{name}.jsonl")
            wall, cpu, rss, status = run_reader(command, output, work)
            # A reader that failed, or read less than was written, is no measure of reading it all: said, not kept.
            if status != 0 or len(readings(output)) < len(written):
                best.setdefault(name, {"failed": f"exit {status}, {len(readings(output))} of {len(written)} read"})
                continue
            if "cpu" not in best.get(name, {}) or cpu < best[name]["cpu"]:
                best[name] = {"wall": wall, "cpu": cpu, "rss_kib": rss, "load": load}
    measured = {"files": len(written), "load_after": os.getloadavg()[0]}
    for name in commands:
        found = readings(os.path.join(work, f"tags-{name}.jsonl"))
        if "cpu" not in best[name]:
            measured[name] = dict(best[name], files_read=len(found))
            continue
        per = 10_000 / max(1, len(written))
        measured[name] = dict(best[name], files_read=len(found), cpu_per_10k=best[name]["cpu"] * per,
                              wall_per_10k=best[name]["wall"] * per, fields=score(written, found, name),
                              wrong=wrong_examples(written, found, name))
    results["tag_readers"] = measured
    print(f"[bench] tag readers: {len(written)} files read by Earshot and by TagLib, best of {rounds} in turns",
          flush=True)


def wrong_examples(written, found, reader, most=3):
    """A few (format, column, written, read) of what READER read wrong, for the JSON."""
    examples = {}
    for path, wrote in written.items():
        reading = found.get(path, {})
        for column, key, earshot_check, taglib_check in FIELDS:
            check = earshot_check if reader == "earshot" else taglib_check
            if key not in wrote or check is None or (key == "cover" and wrote["format"] == "MP3 ID3v1.1"):
                continue
            try:
                right = check(reading, wrote)
            except (TypeError, ValueError):
                right = False
            listed = examples.setdefault(f"{wrote['format']}: {column}", [])
            if not right and len(listed) < most:
                listed.append({"file": path, "wrote": wrote.get(key), "read": reading})
    return {key: value for key, value in examples.items() if value}


def table(measured):
    """The markdown of the tag readers' rows."""
    earshot, taglib = measured["earshot"], measured["taglib"]
    failed = [f"{name}: {entry['failed']}" for name, entry in (("Earshot", earshot), ("TagLib", taglib))
              if "failed" in entry]
    if failed:
        return ["", f"Tag readers on the same {measured['files']} files: failed ({'; '.join(failed)})"]
    lines = [f"\nTag readers on the same {measured['files']} files (best CPU of 2 runs in turns; load average "
             f"{earshot['load']:.1f} and {taglib['load']:.1f} at their starts):",
             "", "| tag reader | Earshot (`earshot decode --tags`) | TagLib 1.13 C API (taglib-read.c) | ratio |",
             "|---|---|---|---|"]
    for label, key, form in (("CPU s per 10 000 files", "cpu_per_10k", "{:.2f}"),
                             ("wall s per 10 000 files", "wall_per_10k", "{:.2f}"),
                             ("peak RSS, KiB", "rss_kib", "{}"), ("files read", "files_read", "{}")):
        ratio = f"{earshot[key] / taglib[key]:.2f}x" if taglib[key] else "-"
        lines.append(f"| {label} | {form.format(earshot[key])} | {form.format(taglib[key])} | {ratio} |")
    columns = [column for column, *_ in FIELDS]
    lines += ["", "Fields read right of those written, by format (Earshot / TagLib; `no call`: TagLib's C API has "
              "none for it; `-`: not written):", "",
              "| format | files | " + " | ".join(columns) + " |", "|---" * (len(columns) + 2) + "|"]
    for form in FORMATS:
        mine, theirs = earshot["fields"].get(form), taglib["fields"].get(form)
        if not mine:
            continue
        cells = []
        for column in columns:
            if column not in mine:
                cells.append("-")
                continue
            right, of = mine[column]
            other = theirs.get(column)
            cells.append(f"{right} / " + ("no call" if other is None else f"{other[0]}") + f" of {of}")
        lines.append(f"| {form} | {mine['files']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
