/* The analog card: a laptop's built-in sound card with a headphone jack, as PipeWire's ALSA card profiles show one.
 *
 * What it fakes: one profile (`output:analog-stereo`) with one sink (`fakecard_analog`, card.profile.device 0), and
 * two output routes on it: `analog-output-headphones` (type headphones, the higher priority) and
 * `analog-output-speaker` (type speaker). It starts with headphones plugged in and active. Commands:
 *   unplug            the headphones route becomes unavailable and the speaker route active, as a real jack does
 *   plug              the headphones route becomes available and active again
 *   select ROUTE      `headphones` or `speaker` becomes active, availability unchanged (a user's choice of port)
 *   nodevices         the headphones route lists no devices any more (EnumRoute's `devices` array empty) and stays
 *                     the active one, as a broken driver might say it (issue 25's bad input); `plug` mends it
 * A Route set by WirePlumber or `pactl set-sink-port` is honoured when the route is available.
 *
 * What it does not fake: the card's other profiles (`off`, inputs), volumes and mutes on the routes, and a jack
 * that senses anything: availability changes only by command.
 */
#include "fakecard.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <spa/param/param.h>
#include <spa/param/profile.h>
#include <spa/param/route.h>
#include <spa/pod/parser.h>

enum { ROUTE_HEADPHONES, ROUTE_SPEAKER, ROUTE_COUNT };

/* The profile's index, and the sink's index within it (card.profile.device). */
#define ANALOG_PROFILE 1
#define ANALOG_SINK_DEVICE 0

static const struct analog_route {
    const char *name;
    const char *description;
    const char *type;
    int32_t priority;
} routes[ROUTE_COUNT] = {
    [ROUTE_HEADPHONES] = {"analog-output-headphones", "Headphones", "headphones", 9900},
    [ROUTE_SPEAKER] = {"analog-output-speaker", "Speakers", "speaker", 9000},
};

static struct analog_state {
    bool headphones_available;
    /* False after `nodevices`: the headphones route belongs to no device of the card. */
    bool headphones_have_devices;
    uint32_t active_route;
    struct pw_proxy *sink;
    /* A route asked for by set_param, made active a moment later (see fakecard_later). */
    uint32_t requested_route;
} state = {.headphones_available = true, .headphones_have_devices = true, .active_route = ROUTE_HEADPHONES};

static bool route_available(uint32_t route)
{
    return route != ROUTE_HEADPHONES || state.headphones_available;
}

static struct spa_pod *build_profile(uint32_t id, struct spa_pod_builder *builder)
{
    struct spa_pod_frame object, classes;
    const uint32_t devices[1] = {ANALOG_SINK_DEVICE};
    spa_pod_builder_push_object(builder, &object, SPA_TYPE_OBJECT_ParamProfile, id);
    spa_pod_builder_add(builder, SPA_PARAM_PROFILE_index, SPA_POD_Int(ANALOG_PROFILE), SPA_PARAM_PROFILE_name,
                        SPA_POD_String("output:analog-stereo"), SPA_PARAM_PROFILE_description,
                        SPA_POD_String("Analog Stereo Output"), SPA_PARAM_PROFILE_priority, SPA_POD_Int(6500),
                        SPA_PARAM_PROFILE_available, SPA_POD_Id(SPA_PARAM_AVAILABILITY_yes), 0);
    // How many sinks the profile has (pactl's "sinks: 1"), and which of the card's devices they are.
    spa_pod_builder_prop(builder, SPA_PARAM_PROFILE_classes, 0);
    spa_pod_builder_push_struct(builder, &classes);
    spa_pod_builder_int(builder, 1);
    spa_pod_builder_add_struct(builder, SPA_POD_String("Audio/Sink"), SPA_POD_Int(1),
                               SPA_POD_String("card.profile.devices"),
                               SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Int, 1, devices));
    spa_pod_builder_pop(builder, &classes);
    return spa_pod_builder_pop(builder, &object);
}

/* A route as EnumRoute lists it (every route, with the profiles and devices it belongs to) or as Route gives the
 * active one (with the device and profile it is active on). */
static struct spa_pod *build_route(uint32_t id, uint32_t route, struct spa_pod_builder *builder)
{
    struct spa_pod_frame object, info;
    const struct analog_route *r = &routes[route];
    spa_pod_builder_push_object(builder, &object, SPA_TYPE_OBJECT_ParamRoute, id);
    spa_pod_builder_add(builder, SPA_PARAM_ROUTE_index, SPA_POD_Int(route), SPA_PARAM_ROUTE_direction,
                        SPA_POD_Id(SPA_DIRECTION_OUTPUT), SPA_PARAM_ROUTE_name, SPA_POD_String(r->name),
                        SPA_PARAM_ROUTE_description, SPA_POD_String(r->description), SPA_PARAM_ROUTE_priority,
                        SPA_POD_Int(r->priority), SPA_PARAM_ROUTE_available,
                        SPA_POD_Id(route_available(route) ? SPA_PARAM_AVAILABILITY_yes : SPA_PARAM_AVAILABILITY_no),
                        0);
    // The port's type: pipewire-pulse reads it from this info struct (count, then key/value pairs), lower case.
    spa_pod_builder_prop(builder, SPA_PARAM_ROUTE_info, 0);
    spa_pod_builder_push_struct(builder, &info);
    spa_pod_builder_int(builder, 1);
    spa_pod_builder_add(builder, SPA_POD_String("port.type"), SPA_POD_String(r->type), 0);
    spa_pod_builder_pop(builder, &info);
    if (id == SPA_PARAM_EnumRoute) {
        const uint32_t profiles[1] = {ANALOG_PROFILE}, devices[1] = {ANALOG_SINK_DEVICE};
        const uint32_t device_count = route != ROUTE_HEADPHONES || state.headphones_have_devices ? 1 : 0;
        spa_pod_builder_add(builder, SPA_PARAM_ROUTE_profiles,
                            SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Int, 1, profiles), SPA_PARAM_ROUTE_devices,
                            SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Int, device_count, devices), 0);
    } else {
        spa_pod_builder_add(builder, SPA_PARAM_ROUTE_device, SPA_POD_Int(ANALOG_SINK_DEVICE),
                            SPA_PARAM_ROUTE_profile, SPA_POD_Int(ANALOG_PROFILE), 0);
        fakecard_add_route_props(builder);
    }
    return spa_pod_builder_pop(builder, &object);
}

static struct spa_pod *analog_build_param(struct fakecard *card, uint32_t id, uint32_t index,
                                          struct spa_pod_builder *builder)
{
    (void)card;
    switch (id) {
    case SPA_PARAM_EnumProfile:
    case SPA_PARAM_Profile:
        return index == 0 ? build_profile(id, builder) : NULL;
    case SPA_PARAM_EnumRoute:
        return index < ROUTE_COUNT ? build_route(id, index, builder) : NULL;
    case SPA_PARAM_Route:
        return index == 0 ? build_route(id, state.active_route, builder) : NULL;
    default:
        return NULL;
    }
}

/* Makes ROUTE active (and sets the headphones' availability), telling the daemon when anything changed. */
static void set_routes(struct fakecard *card, bool headphones_available, uint32_t active_route)
{
    if (state.headphones_available == headphones_available && state.active_route == active_route)
        return;
    state.headphones_available = headphones_available;
    state.active_route = active_route;
    fakecard_params_changed(card, FAKECARD_ROUTES_CHANGED);
}

static void activate_requested_route(struct fakecard *card)
{
    if (route_available(state.requested_route))
        set_routes(card, state.headphones_available, state.requested_route);
}

static void analog_set_param(struct fakecard *card, uint32_t id, const struct spa_pod *param)
{
    int32_t route = -1, device = ANALOG_SINK_DEVICE;
    if (id != SPA_PARAM_Route) {
        fprintf(stderr, "fakecard: set_param %u ignored (one profile only)\n", id);
        return;
    }
    if (spa_pod_parse_object(param, SPA_TYPE_OBJECT_ParamRoute, NULL, SPA_PARAM_ROUTE_index, SPA_POD_Int(&route),
                             SPA_PARAM_ROUTE_device, SPA_POD_OPT_Int(&device)) < 0
        || route < 0 || route >= ROUTE_COUNT || device != ANALOG_SINK_DEVICE) {
        fprintf(stderr, "fakecard: a Route set_param that names no route of this card, ignored\n");
        return;
    }
    fprintf(stderr, "fakecard: set_param Route %s (%s)\n", routes[route].name,
            route_available((uint32_t)route) ? "done" : "ignored: unavailable");
    state.requested_route = (uint32_t)route;
    fakecard_later(card, activate_requested_route);
}

static void analog_start(struct fakecard *card)
{
    static const char *const sink[] = {
        PW_KEY_NODE_NAME, "fakecard_analog", PW_KEY_NODE_DESCRIPTION, "Fake Analog Stereo", PW_KEY_MEDIA_CLASS,
        "Audio/Sink", "card.profile.device", "0", PW_KEY_DEVICE_API, "alsa", NULL,
    };
    state.sink = fakecard_node_create(card, sink);
}

static int analog_command(struct fakecard *card, const char *verb, const char *argument)
{
    if (strcmp(verb, "unplug") == 0) {
        set_routes(card, false, ROUTE_SPEAKER);
    } else if (strcmp(verb, "plug") == 0) {
        if (!state.headphones_have_devices) {
            state.headphones_have_devices = true;
            fakecard_params_changed(card, FAKECARD_ROUTES_CHANGED);
        }
        set_routes(card, true, ROUTE_HEADPHONES);
    } else if (strcmp(verb, "nodevices") == 0) {
        state.headphones_have_devices = false;
        fakecard_params_changed(card, FAKECARD_ROUTES_CHANGED);
    } else if (strcmp(verb, "select") == 0) {
        uint32_t route = strcmp(argument, "headphones") == 0 ? ROUTE_HEADPHONES
                         : strcmp(argument, "speaker") == 0  ? ROUTE_SPEAKER
                                                             : ROUTE_COUNT;
        if (route == ROUTE_COUNT || !route_available(route))
            return -EINVAL;
        set_routes(card, state.headphones_available, route);
    } else if (strcmp(verb, "remove") == 0) {
        fakecard_node_destroy(&state.sink);
    } else {
        return -EINVAL;
    }
    return 0;
}

static const char *const analog_properties[] = {
    PW_KEY_MEDIA_CLASS, "Audio/Device", PW_KEY_DEVICE_NAME, "fakecard_analog", PW_KEY_DEVICE_DESCRIPTION,
    "Fake Analog Card", PW_KEY_DEVICE_API, "alsa", PW_KEY_DEVICE_BUS, "pci", PW_KEY_DEVICE_FORM_FACTOR, "internal",
    NULL,
};

const struct fakecard_kind fakecard_analog = {
    .name = "analog",
    .properties = analog_properties,
    .build_param = analog_build_param,
    .set_param = analog_set_param,
    .start = analog_start,
    .command = analog_command,
};
