/* The Bluetooth headset for PulseAudio 16: a headset connected through BlueZ, as PulseAudio's module-bluez5-device
 * shows one.
 *
 * What it fakes: a card `bluez_card.00_11_22_33_44_55` with the properties such a card has (device.string the
 * address, device.api bluez, device.bus bluetooth, device.form_factor headset, bluez.path, bluez.alias) and three
 * profiles, as PulseAudio names them: `a2dp_sink` (one sink, the higher priority), `headset_head_unit` (a sink and a
 * source) and `off`. Its devices are named as the bluez5 module names them, per profile: the sink
 * `bluez_sink.00_11_22_33_44_55.a2dp_sink` or `bluez_sink.00_11_22_33_44_55.headset_head_unit`, the microphone
 * `bluez_source.00_11_22_33_44_55.headset_head_unit`, each with `bluetooth.protocol` saying its profile, and the
 * card's ports `headset-output` and `headset-input`. Switching profile replaces the devices as the bluez5 module does:
 * the old ones go (their streams moved by the server), the new ones come, then the card's profile changes. It starts
 * in a2dp_sink. Commands (`pactl send-message /card/bluez_card.00_11_22_33_44_55/earshot COMMAND`):
 *   profile NAME      switch to profile NAME (what module-bluetooth-policy does for a call, and back)
 *   remove            (module.c) the card goes, devices and all: the headset disconnected
 * `pactl set-card-profile` is honoured the same way.
 *
 * What it does not fake: BlueZ and its transports, codecs and their sample formats (the devices take the server's
 * default), volumes, the audio gateway roles, and module-bluetooth-policy: nothing switches by itself.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fakecard-module.h"

#include <string.h>

#include <pulse/xmalloc.h>

#include <pulsecore/core-util.h>
#include <pulsecore/device-port.h>
#include <pulsecore/log.h>

#define HEADSET_ADDRESS "00:11:22:33:44:55"
/* The address as PulseAudio's names carry it (its name registry turns ':' into '_'). */
#define HEADSET_NAME_ADDRESS "00_11_22_33_44_55"

struct headset_card {
    pa_module *module;
    pa_card *card;
    pa_device_port *output_port;
    pa_device_port *input_port;
    struct fakecard_output *output;
};

/* Makes one of the card's two ports, of type headset, valid in the profiles given (NULL-terminated). */
static pa_device_port *new_port(pa_core *core, const char *name, const char *description, pa_direction_t direction,
                                pa_card_profile *const *profiles) {
    pa_device_port_new_data data;
    pa_device_port *port;

    pa_device_port_new_data_init(&data);
    pa_device_port_new_data_set_name(&data, name);
    pa_device_port_new_data_set_description(&data, description);
    pa_device_port_new_data_set_direction(&data, direction);
    pa_device_port_new_data_set_type(&data, PA_DEVICE_PORT_TYPE_HEADSET);
    pa_device_port_new_data_set_available(&data, PA_AVAILABLE_YES);
    port = pa_device_port_new(core, &data, 0);
    pa_device_port_new_data_done(&data);
    for (; *profiles; profiles++)
        pa_hashmap_put(port->profiles, (*profiles)->name, *profiles);
    return port;
}

static pa_card_profile *new_profile(const char *name, const char *description, unsigned priority, unsigned sinks,
                                    unsigned sources) {
    pa_card_profile *profile = pa_card_profile_new(name, description, 0);

    profile->priority = priority;
    profile->available = PA_AVAILABLE_YES;
    profile->n_sinks = sinks;
    profile->n_sources = sources;
    profile->max_sink_channels = sinks ? (strcmp(name, "a2dp_sink") == 0 ? 2 : 1) : 0;
    profile->max_source_channels = sources ? 1 : 0;
    if (sinks)
        profile->output_name = pa_xstrdup(name);
    if (sources)
        profile->input_name = pa_xstrdup(name);
    return profile;
}

/* The properties PulseAudio's bluez5 module gives a headset's sinks and sources. */
static void set_device_properties(pa_proplist *list, const char *protocol) {
    pa_proplist_sets(list, PA_PROP_DEVICE_DESCRIPTION, "Fake Headset");
    pa_proplist_sets(list, PA_PROP_DEVICE_STRING, HEADSET_ADDRESS);
    pa_proplist_sets(list, PA_PROP_DEVICE_API, "bluez");
    pa_proplist_sets(list, PA_PROP_DEVICE_BUS, "bluetooth");
    pa_proplist_sets(list, PA_PROP_DEVICE_FORM_FACTOR, "headset");
    pa_proplist_sets(list, "bluetooth.protocol", protocol);
}

/* The devices of PROFILE: none for `off`, a sink for A2DP, a sink and a microphone for the headset profile. */
static int make_devices(struct headset_card *headset, pa_card_profile *profile) {
    pa_sink_new_data sink_data;
    pa_source_new_data source_data;
    bool has_source = profile->n_sources > 0;
    char *sink_name;

    if (profile->n_sinks == 0)
        return 0;
    pa_sink_new_data_init(&sink_data);
    sink_data.card = headset->card;
    sink_data.namereg_fail = false;
    sink_name = pa_sprintf_malloc("bluez_sink.%s.%s", HEADSET_NAME_ADDRESS, profile->name);
    pa_sink_new_data_set_name(&sink_data, sink_name);
    pa_xfree(sink_name);
    set_device_properties(sink_data.proplist, profile->name);
    pa_hashmap_put(sink_data.ports, headset->output_port->name, pa_device_port_ref(headset->output_port));

    if (has_source) {
        pa_source_new_data_init(&source_data);
        source_data.card = headset->card;
        source_data.namereg_fail = false;
        pa_source_new_data_set_name(&source_data, "bluez_source." HEADSET_NAME_ADDRESS ".headset_head_unit");
        set_device_properties(source_data.proplist, profile->name);
        pa_hashmap_put(source_data.ports, headset->input_port->name, pa_device_port_ref(headset->input_port));
    }
    headset->output = fakecard_output_new(headset->module, &sink_data, has_source ? &source_data : NULL);
    pa_sink_new_data_done(&sink_data);
    if (has_source)
        pa_source_new_data_done(&source_data);
    return headset->output ? 0 : -PA_ERR_INTERNAL;
}

/* The card's profile callback (`pactl set-card-profile`, and the `profile` command through pa_card_set_profile):
 * the old devices go, then the new ones come; the core changes the card's active profile once this returns. */
static int profile_chosen(pa_card *card, pa_card_profile *profile) {
    struct headset_card *headset = card->userdata;

    fakecard_output_free(headset->output);
    headset->output = NULL;
    return make_devices(headset, profile);
}

static int headset_create(pa_module *module, void **result) {
    struct headset_card *headset = pa_xnew0(struct headset_card, 1);
    pa_card_new_data card_data;
    pa_card_profile *a2dp, *head_unit, *off;

    *result = headset;
    headset->module = module;
    pa_card_new_data_init(&card_data);
    card_data.driver = __FILE__;
    card_data.module = module;
    pa_card_new_data_set_name(&card_data, "bluez_card." HEADSET_ADDRESS);
    card_data.namereg_fail = false;
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_DESCRIPTION, "Fake Headset");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_STRING, HEADSET_ADDRESS);
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_API, "bluez");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_CLASS, "sound");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_BUS, "bluetooth");
    pa_proplist_sets(card_data.proplist, PA_PROP_DEVICE_FORM_FACTOR, "headset");
    pa_proplist_sets(card_data.proplist, "bluez.path", "/org/bluez/hci0/dev_00_11_22_33_44_55");
    pa_proplist_sets(card_data.proplist, "bluez.alias", "Fake Headset");

    a2dp = new_profile("a2dp_sink", "High Fidelity Playback (A2DP Sink)", 40, 1, 0);
    head_unit = new_profile("headset_head_unit", "Headset Head Unit (HSP/HFP)", 30, 1, 1);
    off = new_profile("off", "Off", 0, 0, 0);
    pa_hashmap_put(card_data.profiles, a2dp->name, a2dp);
    pa_hashmap_put(card_data.profiles, head_unit->name, head_unit);
    pa_hashmap_put(card_data.profiles, off->name, off);
    headset->output_port = new_port(module->core, "headset-output", "Headset", PA_DIRECTION_OUTPUT,
                                    (pa_card_profile *[]){a2dp, head_unit, NULL});
    headset->input_port = new_port(module->core, "headset-input", "Headset", PA_DIRECTION_INPUT,
                                   (pa_card_profile *[]){head_unit, NULL});
    pa_hashmap_put(card_data.ports, headset->output_port->name, headset->output_port);
    pa_hashmap_put(card_data.ports, headset->input_port->name, headset->input_port);

    headset->card = pa_card_new(module->core, &card_data);
    pa_card_new_data_done(&card_data);
    if (!headset->card)
        return -PA_ERR_INTERNAL;
    headset->card->userdata = headset;
    headset->card->set_profile = profile_chosen;
    pa_card_choose_initial_profile(headset->card);
    pa_card_put(headset->card);
    return make_devices(headset, headset->card->active_profile);
}

static int headset_command(void *card, const char *command, const char *argument, char **response) {
    struct headset_card *headset = card;

    if (strcmp(command, "profile") == 0 && argument) {
        pa_card_profile *profile = pa_hashmap_get(headset->card->profiles, argument);

        if (!profile) {
            *response = pa_sprintf_malloc("no profile %s (a2dp_sink, headset_head_unit, off)", argument);
            return -PA_ERR_NOENTITY;
        }
        return pa_card_set_profile(headset->card, profile, false);
    }
    *response = pa_sprintf_malloc("unknown command %s (profile NAME, remove)", command);
    return -PA_ERR_NOTIMPLEMENTED;
}

static pa_card *headset_pa_card(void *card) {
    return ((struct headset_card *)card)->card;
}

static void headset_free(void *card) {
    struct headset_card *headset = card;

    fakecard_output_free(headset->output);
    if (headset->card)
        pa_card_free(headset->card);
    pa_xfree(headset);
}

const struct fakecard_kind fakecard_headset = {
    .name = "headset",
    .create = headset_create,
    .command = headset_command,
    .pa_card = headset_pa_card,
    .free = headset_free,
};
