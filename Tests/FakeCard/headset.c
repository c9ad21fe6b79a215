/* The Bluetooth headset: a headset connected through BlueZ, as PipeWire's bluez5 device shows one.
 *
 * What it fakes: a card with api.bluez5.address 00:11:22:33:44:55 (device.api bluez5, device.bus bluetooth) and
 * three profiles, as PipeWire names them: `off` (no nodes), `a2dp-sink` (one sink, the higher priority) and
 * `headset-head-unit` (a sink and a source). Its nodes are named as a real headset's are: the sink
 * `bluez_output.00_11_22_33_44_55.1` (card.profile.device 1, in both profiles, api.bluez5.profile telling which)
 * and, in headset-head-unit, the microphone `bluez_input.00_11_22_33_44_55.0` (card.profile.device 0). Switching
 * profile replaces the nodes (the old ones go, then the card's profile changes, then the new ones come), as a real
 * headset's do. It starts in a2dp-sink. Commands:
 *   profile NAME      switch to profile NAME (what WirePlumber or PulseAudio does for a call, and back)
 *   remove            (common) the card goes, nodes and all: the headset disconnected
 * A Profile set by WirePlumber or `pactl set-card-profile` is honoured the same way.
 * It also makes what WirePlumber 0.5 makes for a real headset beside the device's own nodes: a source
 * `bluez_input.00_11_22_33_44_55` of the card in every profile but `off`, which a calling application opens before
 * the switch (WirePlumber 0.5 switches to the headset profile when a capture links to it). Here that source is a
 * plain null source: it is never linked to the headset's microphone, and nothing switches by itself.
 *
 * Both sources are null sinks of class Audio/Source/Virtual (a real headset's microphone is Audio/Source): a null
 * sink made with class Audio/Source failed to start when a capture linked to it ("Start error: Operation not
 * supported" on 0.3.65), the virtual class records silence, as the tests' microphone `mic` does.
 *
 * What it does not fake: BlueZ, codecs (the profile names carry none, the sinks say sbc or msbc), the transport's
 * timing and its volume, HSP, A2DP sources and the audio gateway role.
 */
#include "fakecard.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <spa/param/param.h>
#include <spa/param/profile.h>
#include <spa/param/route.h>
#include <spa/pod/parser.h>

#define HEADSET_ADDRESS "00:11:22:33:44:55"
#define HEADSET_NAME_PART "00_11_22_33_44_55"

enum { PROFILE_OFF, PROFILE_A2DP, PROFILE_HEADSET, PROFILE_COUNT };
/* The devices of the card (card.profile.device), as PipeWire's bluez5 device numbers them. */
enum { DEVICE_SOURCE = 0, DEVICE_SINK = 1 };

static const struct headset_profile {
    const char *name;
    const char *description;
    int32_t priority;
    uint32_t sinks;
    uint32_t sources;
} profiles[PROFILE_COUNT] = {
    [PROFILE_OFF] = {"off", "Off", 0, 0, 0},
    [PROFILE_A2DP] = {"a2dp-sink", "High Fidelity Playback (A2DP Sink)", 16, 1, 0},
    [PROFILE_HEADSET] = {"headset-head-unit", "Headset Head Unit (HSP/HFP)", 1, 1, 1},
};

/* The routes: the A2DP output, and the headset profile's output and input. */
enum { ROUTE_OUTPUT, ROUTE_HF_OUTPUT, ROUTE_HF_INPUT, ROUTE_COUNT };
static const struct headset_route {
    const char *name;
    const char *description;
    enum spa_direction direction;
    uint32_t profile;
    uint32_t device;
} routes[ROUTE_COUNT] = {
    [ROUTE_OUTPUT] = {"headset-output", "Headset", SPA_DIRECTION_OUTPUT, PROFILE_A2DP, DEVICE_SINK},
    [ROUTE_HF_OUTPUT] = {"headset-hf-output", "Handsfree", SPA_DIRECTION_OUTPUT, PROFILE_HEADSET, DEVICE_SINK},
    [ROUTE_HF_INPUT] = {"headset-hf-input", "Handsfree", SPA_DIRECTION_INPUT, PROFILE_HEADSET, DEVICE_SOURCE},
};

static struct headset_state {
    uint32_t profile;
    bool save_profile;
    /* A profile asked for by set_param, switched to a moment later. */
    uint32_t requested_profile;
    bool requested_save;
    struct pw_proxy *sink;
    struct pw_proxy *microphone;
    struct pw_proxy *call_source;
} state = {.profile = PROFILE_A2DP};

static struct spa_pod *build_profile(uint32_t id, uint32_t profile, struct spa_pod_builder *builder)
{
    struct spa_pod_frame object, classes;
    const struct headset_profile *p = &profiles[profile];
    const uint32_t sinks[1] = {DEVICE_SINK}, sources[1] = {DEVICE_SOURCE};
    spa_pod_builder_push_object(builder, &object, SPA_TYPE_OBJECT_ParamProfile, id);
    spa_pod_builder_add(builder, SPA_PARAM_PROFILE_index, SPA_POD_Int(profile), SPA_PARAM_PROFILE_name,
                        SPA_POD_String(p->name), SPA_PARAM_PROFILE_description, SPA_POD_String(p->description),
                        SPA_PARAM_PROFILE_priority, SPA_POD_Int(p->priority), SPA_PARAM_PROFILE_available,
                        SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes), 0);
    if (p->sinks + p->sources > 0) {
        // The profile's nodes by class (pactl's "sinks: 1, sources: 1"), and which of the card's devices they are.
        spa_pod_builder_prop(builder, SPA_PARAM_PROFILE_classes, 0);
        spa_pod_builder_push_struct(builder, &classes);
        spa_pod_builder_int(builder, (p->sinks > 0) + (p->sources > 0));
        if (p->sources > 0)
            spa_pod_builder_add_struct(builder, SPA_POD_String("Audio/Source"), SPA_POD_Int(p->sources),
                                       SPA_POD_String("card.profile.devices"),
                                       SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Int, 1, sources));
        if (p->sinks > 0)
            spa_pod_builder_add_struct(builder, SPA_POD_String("Audio/Sink"), SPA_POD_Int(p->sinks),
                                       SPA_POD_String("card.profile.devices"),
                                       SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Int, 1, sinks));
        spa_pod_builder_pop(builder, &classes);
    }
    // The active profile says whether whoever chose it asked for it to be kept (pactl does, WirePlumber's switch
    // for a call does not), as a real device echoes it.
    if (id == SPA_PARAM_Profile)
        spa_pod_builder_add(builder, SPA_PARAM_PROFILE_save, SPA_POD_Bool(state.save_profile), 0);
    return spa_pod_builder_pop(builder, &object);
}

static struct spa_pod *build_route(uint32_t id, uint32_t route, struct spa_pod_builder *builder)
{
    struct spa_pod_frame object, info;
    const struct headset_route *r = &routes[route];
    spa_pod_builder_push_object(builder, &object, SPA_TYPE_OBJECT_ParamRoute, id);
    spa_pod_builder_add(builder, SPA_PARAM_ROUTE_index, SPA_POD_Int(route), SPA_PARAM_ROUTE_direction,
                        SPA_POD_Id(r->direction), SPA_PARAM_ROUTE_name, SPA_POD_String(r->name),
                        SPA_PARAM_ROUTE_description, SPA_POD_String(r->description), SPA_PARAM_ROUTE_priority,
                        SPA_POD_Int(0), SPA_PARAM_ROUTE_available, SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes), 0);
    spa_pod_builder_prop(builder, SPA_PARAM_ROUTE_info, 0);
    spa_pod_builder_push_struct(builder, &info);
    spa_pod_builder_int(builder, 1);
    spa_pod_builder_add(builder, SPA_POD_String("port.type"), SPA_POD_String("headset"), 0);
    spa_pod_builder_pop(builder, &info);
    if (id == SPA_PARAM_EnumRoute) {
        const uint32_t route_profiles[1] = {r->profile}, devices[1] = {r->device};
        spa_pod_builder_add(builder, SPA_PARAM_ROUTE_profiles,
                            SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Int, 1, route_profiles),
                            SPA_PARAM_ROUTE_devices, SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Int, 1, devices), 0);
    } else {
        spa_pod_builder_add(builder, SPA_PARAM_ROUTE_device, SPA_POD_Int(r->device), SPA_PARAM_ROUTE_profile,
                            SPA_POD_Int(r->profile), 0);
        fakecard_add_route_props(builder);
    }
    return spa_pod_builder_pop(builder, &object);
}

static struct spa_pod *headset_build_param(struct fakecard *card, uint32_t id, uint32_t index,
                                           struct spa_pod_builder *builder)
{
    (void)card;
    switch (id) {
    case SPA_PARAM_EnumProfile:
        return index < PROFILE_COUNT ? build_profile(id, index, builder) : NULL;
    case SPA_PARAM_Profile:
        return index == 0 ? build_profile(id, state.profile, builder) : NULL;
    case SPA_PARAM_EnumRoute:
        return index < ROUTE_COUNT ? build_route(id, index, builder) : NULL;
    case SPA_PARAM_Route: {
        // The active routes: those of the current profile, one per device.
        uint32_t seen = 0;
        for (uint32_t route = 0; route < ROUTE_COUNT; route++) {
            if (routes[route].profile == state.profile && seen++ == index)
                return build_route(id, route, builder);
        }
        return NULL;
    }
    default:
        return NULL;
    }
}

static void create_nodes(struct fakecard *card)
{
    const char *profile = profiles[state.profile].name;
    if (state.profile == PROFILE_OFF)
        return;
    const char *const sink[] = {
        PW_KEY_NODE_NAME, "bluez_output." HEADSET_NAME_PART ".1", PW_KEY_NODE_DESCRIPTION, "Fake Headset",
        PW_KEY_MEDIA_CLASS, "Audio/Sink", "card.profile.device", "1", PW_KEY_DEVICE_API, "bluez5",
        "api.bluez5.address", HEADSET_ADDRESS, "api.bluez5.profile", profile, "api.bluez5.codec",
        state.profile == PROFILE_A2DP ? "sbc" : "msbc", NULL,
    };
    state.sink = fakecard_node_create(card, sink);
    if (state.profile == PROFILE_HEADSET) {
        const char *const microphone[] = {
            PW_KEY_NODE_NAME, "bluez_input." HEADSET_NAME_PART ".0", PW_KEY_NODE_DESCRIPTION, "Fake Headset",
            PW_KEY_MEDIA_CLASS, "Audio/Source/Virtual", "card.profile.device", "0", PW_KEY_DEVICE_API, "bluez5",
            "api.bluez5.address", HEADSET_ADDRESS, "api.bluez5.profile", profile, "api.bluez5.codec", "msbc", NULL,
        };
        state.microphone = fakecard_node_create(card, microphone);
    }
    if (state.call_source == NULL) {
        static const char *const call_source[] = {
            PW_KEY_NODE_NAME, "bluez_input." HEADSET_NAME_PART, PW_KEY_NODE_DESCRIPTION, "Fake Headset (call)",
            PW_KEY_MEDIA_CLASS, "Audio/Source/Virtual", PW_KEY_DEVICE_API, "bluez5", "api.bluez5.address",
            HEADSET_ADDRESS, NULL,
        };
        state.call_source = fakecard_node_create(card, call_source);
    }
}

static void destroy_nodes(bool with_call_source)
{
    fakecard_node_destroy(&state.sink);
    fakecard_node_destroy(&state.microphone);
    if (with_call_source)
        fakecard_node_destroy(&state.call_source);
}

/* Switches profile as PipeWire's bluez5 device does: the old nodes go, the new ones come, then the card announces
 * its new profile and routes (the list of profiles stays the same: WirePlumber 0.4 chooses a profile again whenever
 * EnumProfile changes). All are sent in this order within one turn of the loop, as bluez5-device.c's set_profile
 * sends them. */
static void switch_profile(struct fakecard *card, uint32_t profile, bool save)
{
    state.save_profile = save;
    if (profile == state.profile)
        return;
    destroy_nodes(profile == PROFILE_OFF);
    state.profile = profile;
    create_nodes(card);
    fakecard_params_changed(card, (1u << FAKECARD_PROFILE) | FAKECARD_ROUTES_CHANGED);
}

static void switch_to_requested_profile(struct fakecard *card)
{
    switch_profile(card, state.requested_profile, state.requested_save);
}

static void headset_set_param(struct fakecard *card, uint32_t id, const struct spa_pod *param)
{
    int32_t profile = -1;
    bool save = false;
    if (id != SPA_PARAM_Profile) {
        fprintf(stderr, "fakecard: set_param %u ignored (routes follow the profile)\n", id);
        return;
    }
    if (spa_pod_parse_object(param, SPA_TYPE_OBJECT_ParamProfile, NULL, SPA_PARAM_PROFILE_index,
                             SPA_POD_Int(&profile), SPA_PARAM_PROFILE_save, SPA_POD_OPT_Bool(&save)) < 0
        || profile < 0 || profile >= PROFILE_COUNT) {
        fprintf(stderr, "fakecard: a Profile set_param that names no profile of this card, ignored\n");
        return;
    }
    fprintf(stderr, "fakecard: set_param Profile %s%s\n", profiles[profile].name, save ? " (save)" : "");
    // A moment later, not within the daemon's call: a real headset switches once its codec is switched, outside the
    // call too. (Switching within the call was once suspected of pipewire-pulse 1.4.2's crash, and works there now:
    // the crash came from the Route's missing props, fakecard_add_route_props.)
    state.requested_profile = (uint32_t)profile;
    state.requested_save = save;
    fakecard_later(card, switch_to_requested_profile);
}

static void headset_start(struct fakecard *card)
{
    create_nodes(card);
}

static int headset_command(struct fakecard *card, const char *verb, const char *argument)
{
    if (strcmp(verb, "profile") == 0) {
        for (uint32_t profile = 0; profile < PROFILE_COUNT; profile++) {
            if (strcmp(argument, profiles[profile].name) == 0) {
                switch_profile(card, profile, false);
                return 0;
            }
        }
        return -EINVAL;
    }
    if (strcmp(verb, "remove") == 0) {
        destroy_nodes(true);
        return 0;
    }
    return -EINVAL;
}

static const char *const headset_properties[] = {
    PW_KEY_MEDIA_CLASS, "Audio/Device", PW_KEY_DEVICE_NAME, "bluez_card." HEADSET_NAME_PART,
    PW_KEY_DEVICE_DESCRIPTION, "Fake Headset", PW_KEY_DEVICE_API, "bluez5", PW_KEY_DEVICE_BUS, "bluetooth",
    PW_KEY_DEVICE_FORM_FACTOR, "headset", PW_KEY_DEVICE_ICON_NAME, "audio-headset-bluetooth", "api.bluez5.address",
    HEADSET_ADDRESS, NULL,
};

const struct fakecard_kind fakecard_headset = {
    .name = "headset",
    .properties = headset_properties,
    .build_param = headset_build_param,
    .set_param = headset_set_param,
    .start = headset_start,
    .command = headset_command,
};
