/* scripts/lib/taglib-read.c: reads the tags of every track below each FOLDER with TagLib's C binding (libtagc0), one
 * JSON object a line, for `scripts/bench --library`, which sets it beside `earshot decode --tags` on the same files.
 *
 * It takes what the library takes (names ending in .mp3, .flac, .ogg, .oga or .opus; hidden names skipped; links
 * followed) and prints what TagLib 1.13's C API gives: title, artist, album, genre, year and track as numbers (0 when
 * absent), and the length in whole seconds with the sample rate. Nothing else is there to ask for: no album artist,
 * disc, composer, MusicBrainz id or picture (those need the C++ API, or TagLib 2's property calls).
 * A file TagLib cannot open prints {"file":...,"failed":true}. Build: gcc -O2 taglib-read.c $(pkg-config --cflags
 * --libs taglib_c). */
#define _GNU_SOURCE /* nftw's FTW_ACTIONRETVAL, to skip hidden folders */
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <tag_c.h>

static size_t root_length;
static int failures;

/* TEXT as a JSON string: quotes, backslashes and control characters escaped; other bytes as they are (UTF-8). */
static void print_string(const char *text) {
    putchar('"');
    for (const unsigned char *at = (const unsigned char *) text; *at; ++at) {
        if (*at == '"' || *at == '\\') printf("\\%c", *at);
        else if (*at < 0x20) printf("\\u%04x", *at);
        else putchar(*at);
    }
    putchar('"');
}

/* ,"KEY":"VALUE" when VALUE is not empty. */
static void print_text(const char *key, const char *value) {
    if (!value || !*value) return;
    printf(",\"%s\":", key);
    print_string(value);
}

static int is_track(const char *path) {
    static const char *const endings[] = {".mp3", ".flac", ".ogg", ".oga", ".opus"};
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/')) return 0;
    for (size_t index = 0; index < sizeof endings / sizeof *endings; ++index)
        if (strcasecmp(dot, endings[index]) == 0) return 1;
    return 0;
}

static int visit(const char *path, const struct stat *status, int type, struct FTW *where) {
    (void) status;
    const char *name = path + where->base;
    if (where->level > 0 && name[0] == '.') return type == FTW_D ? FTW_SKIP_SUBTREE : FTW_CONTINUE;
    if (type != FTW_F || !is_track(path)) return FTW_CONTINUE;
    printf("{\"file\":");
    print_string(path + root_length + 1);
    TagLib_File *file = taglib_file_new(path);
    if (!file || !taglib_file_is_valid(file)) {
        printf(",\"failed\":true}\n");
        ++failures;
        if (file) taglib_file_free(file);
        return FTW_CONTINUE;
    }
    TagLib_Tag *tag = taglib_file_tag(file);
    if (tag) {
        print_text("title", taglib_tag_title(tag));
        print_text("artist", taglib_tag_artist(tag));
        print_text("album", taglib_tag_album(tag));
        print_text("genre", taglib_tag_genre(tag));
        printf(",\"year\":%u,\"track\":%u", taglib_tag_year(tag), taglib_tag_track(tag));
    }
    const TagLib_AudioProperties *properties = taglib_file_audioproperties(file);
    if (properties)
        printf(",\"seconds\":%d,\"sampleRate\":%d", taglib_audioproperties_length(properties),
               taglib_audioproperties_samplerate(properties));
    printf("}\n");
    taglib_tag_free_strings();
    taglib_file_free(file);
    return FTW_CONTINUE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs("usage: taglib-read FOLDER...\n", stderr);
        return 2;
    }
    taglib_set_strings_unicode(1);
    for (int arg = 1; arg < argc; ++arg) {
        root_length = strlen(argv[arg]);
        while (root_length > 1 && argv[arg][root_length - 1] == '/') --root_length;
        if (nftw(argv[arg], visit, 64, FTW_ACTIONRETVAL) != 0) {
            perror(argv[arg]);
            return 1;
        }
    }
    return failures ? 1 : 0;
}
