// CSndfile: brings libsndfile (FLAC, Ogg Vorbis and Ogg Opus decoding) into Swift.
#include <sndfile.h>
