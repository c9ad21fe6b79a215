/* The analog card for PulseAudio 16: a laptop's built-in sound card with a headphone jack, as PulseAudio's ALSA card
 * module shows one.
 *
 * What it fakes: a card `fakecard_analog_card` with one profile (`output:analog-stereo`) and one sink
 * (`fakecard_analog`) with two ports: `analog-output-headphones` (type headphones, the higher priority) and
 * `analog-output-speaker` (type speaker). It starts with the headphones plugged in and active. Commands
 * (`pactl send-message /card/fakecard_analog_card/earshot COMMAND`):
 *   unplug            the headphones port becomes unavailable, then the speaker port active, as a real jack and
 *                     module-switch-on-port-available do (CARD CHANGE, then SINK CHANGE)
 *   plug              the headphones port becomes available, then active again
 *   select PORT       `headphones` or `speaker` becomes active, availability unchanged (a user's choice of port)
 *   nodevices         the headphones port belongs to no profile any more and stays the sink's active port (CARD
 *                     CHANGE only): the nearest PulseAudio has to the PipeWire helper's route that lists no devices
 *                     (a sink's active port cannot leave the sink's own ports here); `plug` mends it
 * `pactl set-sink-port` is honoured when the port is available, refused otherwise.
 *
 * What it does not fake: the card's other profiles (`off`, inputs), hardware volumes and mutes, and a jack that senses
 * anything: availability changes only by command.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fakecard-module.h"

#include <string.h>

#include <pulse/xmalloc.h>

#include <pulsecore/core-subscribe.h>
#include <pulsecore/core-util.h>
#include <pulsecore/device-port.h>
#include <pulsecore/log.h>

/* The card and its sink (one name registry holds both, so they cannot share a name, as ALSA's do not). */
#define ANALOG_CARD "fakecard_analog_card"
#define ANALOG_SINK "fakecard_analog"
#define HEADPHONES "analog-output-headphones"
#define SPEAKER "analog-output-speaker"

struct analog_card {
    pa_card *card;
    pa_device_port *headphones;
    pa_device_port *speaker;
    struct fakecard_output *output;
};

/* Makes an output port of the card's one profile. */
static pa_device_port *new_port(pa_core *core, const char *name, const char *description, pa_device_port_type_t type,
                                unsigned priority, pa_card_profile *profile) {
    pa_device_port_new_data data;
    pa_device_port *port;

    pa_device_port_new_data_init(&data);
    pa_device_port_new_data_set_name(&data, name);
    pa_device_port_new_data_set_description(&data, description);
    pa_device_port_new_data_set_direction(&data, PA_DIRECTION_OUTPUT);
    pa_device_port_new_data_set_type(&data, type);
    pa_device_port_new_data_set_available(&data, PA_AVAILABLE_YES);
    port = pa_device_port_new(core, &data, 0);
    pa_device_port_new_data_done(&data);
    port->priority = priority;
    pa_hashmap_put(port->profiles, profile->name, profile);
    return port;
}

/* `pactl set-sink-port` (and this file's own switches): an unavailable port cannot be chosen. */
static int sink_port_chosen(pa_sink *sink, pa_device_port *port) {
    (void)sink;
    return port->available == PA_AVAILABLE_NO ? -PA_ERR_NOTSUPPORTED : 0;
}

static int analog_create(pa_module *module, void **result) {
    struct analog_card *analog = pa_xnew0(struct analog_card, 1);
    pa_card_new_data card_data;
    pa_sink_new_data sink_data;
    pa_card_profile *profile;

    *result = analog;
    pa_card_new_data_init(&card_data);
    card_data.driver = __FILE__;
    card_data.module = module;
    pa_card_new_data_set_name(&card_data, ANALOG_CARD);
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_DESCRIPTION, "Fake Built-in Audio");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_API, "alsa");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_CLASS, "sound");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_BUS, "pci");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_FORM_FACTOR, "internal");

    profile = pa_card_profile_new("output:analog-stereo", "Analog Stereo Output", 0);
    profile->output_name = pa_xstrdup("analog-stereo");
    profile->priority = 6500;
    profile->available = PA_AVAILABLE_YES;
    profile->n_sinks = 1;
    profile->max_sink_channels = 2;
    pa_hashmap_put(card_data.profiles, profile->name, profile);

    analog->headphones = new_port(module->core, HEADPHONES, "Headphones", PA_DEVICE_PORT_TYPE_HEADPHONES, 9900,
                                  profile);
    analog->speaker = new_port(module->core, SPEAKER, "Speakers", PA_DEVICE_PORT_TYPE_SPEAKER, 9000, profile);
    pa_hashmap_put(card_data.ports, analog->headphones->name, analog->headphones);
    pa_hashmap_put(card_data.ports, analog->speaker->name, analog->speaker);

    analog->card = pa_card_new(module->core, &card_data);
    pa_card_new_data_done(&card_data);
    if (!analog->card)
        return -PA_ERR_INTERNAL;
    analog->card->userdata = analog;
    pa_card_choose_initial_profile(analog->card);
    pa_card_put(analog->card);

    pa_sink_new_data_init(&sink_data);
    pa_sink_new_data_set_name(&sink_data, ANALOG_SINK);
    sink_data.card = analog->card;
    sink_data.namereg_fail = true;
    pa_proplist_sets(sink_data.proplist, PA_PROP_DEVICE_DESCRIPTION, "Fake Built-in Audio Analog Stereo");
    pa_proplist_sets(sink_data.proplist, PA_PROP_DEVICE_CLASS, "sound");
    pa_proplist_sets(sink_data.proplist, "alsa.card_name", "Earshot fake card");
    pa_hashmap_put(sink_data.ports, analog->headphones->name, pa_device_port_ref(analog->headphones));
    pa_hashmap_put(sink_data.ports, analog->speaker->name, pa_device_port_ref(analog->speaker));
    pa_sink_new_data_set_port(&sink_data, HEADPHONES);
    analog->output = fakecard_output_new(module, &sink_data, NULL);
    pa_sink_new_data_done(&sink_data);
    if (!analog->output)
        return -PA_ERR_INTERNAL;
    fakecard_output_sink(analog->output)->set_port = sink_port_chosen;
    return 0;
}

/* Makes PORT the sink's active port. */
static int activate(struct analog_card *analog, pa_device_port *port) {
    return pa_sink_set_port(fakecard_output_sink(analog->output), port->name, false);
}

static int analog_command(void *card, const char *command, const char *argument, char **response) {
    struct analog_card *analog = card;

    if (strcmp(command, "unplug") == 0 && !argument) {
        pa_device_port_set_available(analog->headphones, PA_AVAILABLE_NO);
        return activate(analog, analog->speaker);
    }
    if (strcmp(command, "nodevices") == 0 && !argument) {
        // The port's profile set holds the card's profiles without owning them: emptied, nothing is freed.
        pa_hashmap_remove_all(analog->headphones->profiles);
        pa_subscription_post(analog->card->core, PA_SUBSCRIPTION_EVENT_CARD | PA_SUBSCRIPTION_EVENT_CHANGE,
                             analog->card->index);
        return 0;
    }
    if (strcmp(command, "plug") == 0 && !argument) {
        pa_card_profile *profile = analog->card->active_profile;
        if (!pa_hashmap_get(analog->headphones->profiles, profile->name))
            pa_hashmap_put(analog->headphones->profiles, profile->name, profile);
        pa_device_port_set_available(analog->headphones, PA_AVAILABLE_YES);
        return activate(analog, analog->headphones);
    }
    if (strcmp(command, "select") == 0 && argument) {
        pa_device_port *port = strcmp(argument, "headphones") == 0 ? analog->headphones
                               : strcmp(argument, "speaker") == 0  ? analog->speaker
                                                                   : NULL;
        if (!port) {
            *response = pa_xstrdup("select headphones or speaker");
            return -PA_ERR_INVALID;
        }
        return activate(analog, port);
    }
    *response = pa_sprintf_malloc("unknown command %s (unplug, plug, select PORT, nodevices, remove)", command);
    return -PA_ERR_NOTIMPLEMENTED;
}

static pa_card *analog_pa_card(void *card) {
    return ((struct analog_card *)card)->card;
}

static void analog_free(void *card) {
    struct analog_card *analog = card;

    fakecard_output_free(analog->output);
    if (analog->card)
        pa_card_free(analog->card);
    pa_xfree(analog);
}

const struct fakecard_kind fakecard_analog = {
    .name = "analog",
    .create = analog_create,
    .command = analog_command,
    .pa_card = analog_pa_card,
    .free = analog_free,
};
