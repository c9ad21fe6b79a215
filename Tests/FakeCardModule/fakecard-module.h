/* The fake sound card for PulseAudio 16 (issue 25): a test-only module, module-earshot-fakecard.so, loaded by
 * absolute path into the tests' private PulseAudio (`pactl load-module /abs/module-earshot-fakecard.so kind=analog`
 * or `kind=headset`), built by scripts/lib/fakecard-module.sh against the PulseAudio 16.1 source tree.
 *
 * It makes a card of one kind (analog.c, headset.c), each with its own banner, and takes commands through PulseAudio's
 * message API: `pactl send-message /card/CARD/earshot COMMAND [ARGUMENT]`, answered with an empty reply or an error.
 * The card's sinks are clocked like a null sink (output.c): audio flows at the sample rate and their monitors record
 * it; the headset's microphone records silence.
 *
 * A note on threading: everything here runs on PulseAudio's main thread (module load and unload, the message handler,
 * the card's and the sink's callbacks), except output.c's I/O thread, which only renders the sink, posts silence to
 * the source and answers the I/O messages PulseAudio sends it.
 */
#ifndef EARSHOT_FAKECARD_MODULE_H
#define EARSHOT_FAKECARD_MODULE_H

/* core.h first: included after card.h, it reaches device-port.h before card.h has defined pa_available_t. */
#include <pulsecore/core.h>
#include <pulsecore/card.h>
#include <pulsecore/json.h>
#include <pulsecore/module.h>
#include <pulsecore/sink.h>
#include <pulsecore/source.h>

/* One profile's devices: a sink and (optionally) a source, clocked by one I/O thread. */
struct fakecard_output;

/* Makes and starts the sink of SINK_DATA and, when SOURCE_DATA is not NULL, the source of SOURCE_DATA, for MODULE; the
 * data's name, card and properties are the caller's, the sample format the server's default. NULL on failure. */
struct fakecard_output *fakecard_output_new(pa_module *module, pa_sink_new_data *sink_data,
                                            pa_source_new_data *source_data);
/* Unlinks the devices (their streams go where the server moves them), stops the thread and frees everything. */
void fakecard_output_free(struct fakecard_output *output);
/* The output's sink. */
pa_sink *fakecard_output_sink(struct fakecard_output *output);

/* One kind of card: makes it (0, or a negative PulseAudio error), answers one command, frees it. */
struct fakecard_kind {
    const char *name;
    int (*create)(pa_module *module, void **card);
    /* Runs COMMAND with ARGUMENT (NULL when none); 0, or a negative PulseAudio error with *response saying why. */
    int (*command)(void *card, const char *command, const char *argument, char **response);
    pa_card *(*pa_card)(void *card);
    void (*free)(void *card);
};

extern const struct fakecard_kind fakecard_analog;
extern const struct fakecard_kind fakecard_headset;

#endif
