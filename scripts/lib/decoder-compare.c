// decoder-compare: measures, for one file, what a decoding library delivers: the frame count, the offset of the
// decoded audio against the source (0 means the encoder's delay and padding were trimmed exactly: gapless), how far
// a seek lands from where it was asked to, and the decode speed. Built and run by scripts/compare-decoders on audio
// it makes with sox, flac, oggenc and opusenc; it chose libsndfile or the reference libraries for issue 15.
//
//   decoder-compare LIBRARY FILE SOURCE.raw
//   decoder-compare LIBRARY FILE      (a damaged file: decodes it all, prints frames=N or open-failed)
//   LIBRARY: sndfile | flac | vorbisfile | opusfile;  SOURCE.raw: the encoder's input, s16 stereo interleaved
// Prints one line: library frames=N source=N offset=N seek_max_error=N seek_mean_error=N seconds=S realtime=R
#include <FLAC/stream_decoder.h>
#include <opus/opusfile.h>
#include <sndfile.h>
#include <vorbis/vorbisfile.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// One open file of one library: reads s16 stereo frames, seeks to a frame.
typedef struct Reader {
    void *state;
    long (*read)(struct Reader *, short *, long frames);
    int (*seek)(struct Reader *, long frame);
    int rate;
} Reader;

// --- libsndfile
static long sndfile_read(Reader *r, short *out, long frames) { return (long)sf_readf_short(r->state, out, frames); }
static int sndfile_seek(Reader *r, long frame) { return sf_seek(r->state, frame, SEEK_SET) == frame ? 0 : -1; }
static int open_sndfile(Reader *r, const char *path) {
    SF_INFO info = {0};
    SNDFILE *file = sf_open(path, SFM_READ, &info);
    if (!file || info.channels != 2) return -1;
    r->state = file; r->read = sndfile_read; r->seek = sndfile_seek; r->rate = info.samplerate;
    return 0;
}

// --- libvorbisfile
static long vorbis_read(Reader *r, short *out, long frames) {
    long done = 0;
    while (done < frames) {
        int section;
        long bytes = ov_read(r->state, (char *)(out + done * 2), (int)((frames - done) * 4), 0, 2, 1, &section);
        if (bytes == OV_HOLE) continue;
        if (bytes <= 0) break;
        done += bytes / 4;
    }
    return done;
}
static int vorbis_seek(Reader *r, long frame) { return ov_pcm_seek(r->state, frame); }
static int open_vorbisfile(Reader *r, const char *path) {
    OggVorbis_File *file = calloc(1, sizeof *file);
    if (ov_fopen(path, file) != 0) return -1;
    r->state = file; r->read = vorbis_read; r->seek = vorbis_seek; r->rate = (int)ov_info(file, -1)->rate;
    return 0;
}

// --- libopusfile (always 48 kHz)
static long opus_read(Reader *r, short *out, long frames) {
    long done = 0;
    while (done < frames) {
        int got = op_read_stereo(r->state, out + done * 2, (int)((frames - done) * 2));
        if (got == OP_HOLE) continue;
        if (got <= 0) break;
        done += got;
    }
    return done;
}
static int opus_seek(Reader *r, long frame) { return op_pcm_seek(r->state, frame); }
static int open_opusfile(Reader *r, const char *path) {
    int error = 0;
    OggOpusFile *file = op_open_file(path, &error);
    if (!file) return -1;
    r->state = file; r->read = opus_read; r->seek = opus_seek; r->rate = 48000;
    return 0;
}

// --- libFLAC: the write callback fills a staging buffer the reader drains.
typedef struct {
    FLAC__StreamDecoder *decoder;
    short *pending; long pendingFrames, pendingStart, capacity;
    int rate, bits;
} FlacState;
static FLAC__StreamDecoderWriteStatus flac_write(const FLAC__StreamDecoder *d, const FLAC__Frame *frame,
                                                 const FLAC__int32 *const buffer[], void *data) {
    (void)d;
    FlacState *s = data;
    long n = frame->header.blocksize;
    if (n > s->capacity) { s->pending = realloc(s->pending, (size_t)n * 4); s->capacity = n; }
    int shift = (int)frame->header.bits_per_sample - 16;
    for (long i = 0; i < n; i++) {
        for (int c = 0; c < 2; c++) {
            FLAC__int32 v = buffer[frame->header.channels > 1 ? c : 0][i];
            s->pending[i * 2 + c] = (short)(shift >= 0 ? v >> shift : v << -shift);
        }
    }
    s->pendingFrames = n; s->pendingStart = 0;
    return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE;
}
static void flac_metadata(const FLAC__StreamDecoder *d, const FLAC__StreamMetadata *m, void *data) {
    (void)d;
    if (m->type == FLAC__METADATA_TYPE_STREAMINFO) ((FlacState *)data)->rate = (int)m->data.stream_info.sample_rate;
}
static void flac_error(const FLAC__StreamDecoder *d, FLAC__StreamDecoderErrorStatus status, void *data) {
    (void)d; (void)status; (void)data;
}
static long flac_read(Reader *r, short *out, long frames) {
    FlacState *s = r->state;
    long done = 0;
    while (done < frames) {
        if (s->pendingFrames == 0) {
            if (FLAC__stream_decoder_get_state(s->decoder) == FLAC__STREAM_DECODER_END_OF_STREAM) break;
            if (!FLAC__stream_decoder_process_single(s->decoder)) break;
            continue;
        }
        long take = s->pendingFrames < frames - done ? s->pendingFrames : frames - done;
        memcpy(out + done * 2, s->pending + s->pendingStart * 2, (size_t)take * 4);
        s->pendingStart += take; s->pendingFrames -= take; done += take;
    }
    return done;
}
static int flac_seek(Reader *r, long frame) {
    FlacState *s = r->state;
    s->pendingFrames = 0;
    // The seek decodes the target block through the write callback: its frames are the pending ones.
    return FLAC__stream_decoder_seek_absolute(s->decoder, (FLAC__uint64)frame) ? 0 : -1;
}
static int open_flac(Reader *r, const char *path) {
    FlacState *s = calloc(1, sizeof *s);
    s->decoder = FLAC__stream_decoder_new();
    if (FLAC__stream_decoder_init_file(s->decoder, path, flac_write, flac_metadata, flac_error, s)
        != FLAC__STREAM_DECODER_INIT_STATUS_OK) return -1;
    if (!FLAC__stream_decoder_process_until_end_of_metadata(s->decoder)) return -1;
    r->state = s; r->read = flac_read; r->seek = flac_seek; r->rate = s->rate;
    return 0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// The shift of `window` (frames) within `haystack` around `expected` that matches best (least squared difference
// of the left channel), searched within +-`reach` frames: how far from `expected` the window really came from.
static long best_offset(const short *haystack, long haystackFrames, const short *window, long frames, long expected,
                        long reach) {
    long best = 0;
    double bestError = INFINITY;
    for (long shift = -reach; shift <= reach; shift++) {
        long start = expected + shift;
        if (start < 0 || start + frames > haystackFrames) continue;
        double error = 0;
        for (long i = 0; i < frames; i++) {
            double d = (double)haystack[(start + i) * 2] - (double)window[i * 2];
            error += d * d;
        }
        if (error < bestError) { bestError = error; best = shift; }
    }
    return best;
}

static int open_reader(Reader *reader, const char *library, const char *path) {
    return !strcmp(library, "sndfile") ? open_sndfile(reader, path)
        : !strcmp(library, "flac") ? open_flac(reader, path)
        : !strcmp(library, "vorbisfile") ? open_vorbisfile(reader, path)
        : !strcmp(library, "opusfile") ? open_opusfile(reader, path) : -2;
}

// Without a source: decodes the whole (damaged) file and says whether it opened and how many frames came out.
static int decode_only(const char *library, const char *path) {
    Reader reader = {0};
    if (open_reader(&reader, library, path) != 0) { printf("%s open-failed\n", library); return 0; }
    static short buffer[4096 * 2];
    long frames = 0, got;
    while ((got = reader.read(&reader, buffer, 4096)) > 0) frames += got;
    printf("%s frames=%ld\n", library, frames);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3) return decode_only(argv[1], argv[2]);
    if (argc != 4) {
        fprintf(stderr, "usage: decoder-compare sndfile|flac|vorbisfile|opusfile FILE SOURCE.raw\n");
        return 2;
    }
    const char *library = argv[1];
    Reader reader = {0};
    int opened = open_reader(&reader, library, argv[2]);
    if (opened != 0) { fprintf(stderr, "%s cannot open %s\n", library, argv[2]); return 1; }

    FILE *sourceFile = fopen(argv[3], "rb");
    if (!sourceFile) { perror(argv[3]); return 1; }
    fseek(sourceFile, 0, SEEK_END);
    long sourceFrames = ftell(sourceFile) / 4;
    rewind(sourceFile);
    short *source = malloc((size_t)sourceFrames * 4);
    if (fread(source, 4, (size_t)sourceFrames, sourceFile) != (size_t)sourceFrames) return 1;
    fclose(sourceFile);

    long capacity = sourceFrames + 48000;
    short *decoded = malloc((size_t)capacity * 4);
    double started = now();
    long frames = 0, got;
    while (frames < capacity && (got = reader.read(&reader, decoded + frames * 2, 4096 < capacity - frames
                                                   ? 4096 : capacity - frames)) > 0)
        frames += got;
    double seconds = now() - started;

    // Where the decoded audio sits against the source: measured one second in, on 2048 frames.
    long offset = best_offset(source, sourceFrames, decoded + reader.rate * 2, 2048, reader.rate, 2000);

    // Seeks to 20 places spread over the file; each lands where its first 1024 frames best match the full decode.
    long maxError = 0;
    double sumError = 0;
    short window[1024 * 2];
    for (int i = 1; i <= 20; i++) {
        long target = (long)((double)(frames - 4 * reader.rate) * i / 21.0) + reader.rate + (i * 7919) % 1000;
        if (reader.seek(&reader, target) != 0) { fprintf(stderr, "seek to %ld failed\n", target); return 1; }
        if (reader.read(&reader, window, 1024) != 1024) { fprintf(stderr, "read after seek failed\n"); return 1; }
        long error = labs(best_offset(decoded, frames, window, 1024, target, 2000));
        if (error > maxError) maxError = error;
        sumError += (double)error;
    }
    printf("%s frames=%ld source=%ld offset=%ld seek_max_error=%ld seek_mean_error=%.1f seconds=%.3f realtime=%.0f\n",
           library, frames, sourceFrames, offset, maxError, sumError / 20, seconds,
           (double)frames / reader.rate / seconds);
    return 0;
}
