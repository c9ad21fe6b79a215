/* fakecard: a fake sound card for Earshot's end-to-end tests on PipeWire (no hardware, no kernel module).
 *
 *   fakecard analog|headset      (commands on standard input, one a line; replies on standard output)
 *
 * What it fakes: a device as the daemon and pipewire-pulse see one. This client exports a `struct spa_device` of its
 * own with pw_core_export (libpipewire-module-client-device carries its methods and events over the protocol), so
 * the daemon lists a device with media.class=Audio/Device, which pipewire-pulse shows as a card with profiles and
 * ports. The device's nodes are null audio sinks made in the daemon by this client through the `adapter` factory,
 * each carrying device.id (the device's global id) and card.profile.device, which is how pipewire-pulse ties a sink
 * or a source to its card (pa_sink_info.card, the card's ports on the sink). analog.c and headset.c say what each
 * kind offers.
 *
 * What it does not fake: any audio hardware (the nodes are null sinks: what is played is dropped, and their
 * monitors are what tests record), the session manager's part (a real card's nodes are made by WirePlumber from the
 * device's object_info; here the device makes them itself, and WirePlumber sees only the device and the nodes),
 * jack detection (availability changes only by command), volumes (routes carry no props), and anything a real
 * driver does about timing. When the process dies, the daemon removes the device and its nodes with the client:
 * that is a card unplugged as a whole.
 *
 * Protocol: after startup the helper prints `ready device=ID` (the device's global id) once the daemon has the
 * device and the first profile's nodes. Each command line is answered, after a round trip to the daemon (so the
 * daemon has applied it), by `ok VERB` or `error VERB: REASON`. End of input quits. Common verbs: `remove` (the whole
 * card goes, nodes and device; the process stays until its input ends), `quit`. Each kind adds its own. Notes for a
 * human (what WirePlumber asked for, errors) go to standard error.
 *
 * Built by scripts/test (scripts/lib/fakecard.sh) with cc against Debian 12's libpipewire-0.3-dev (0.3.65); the
 * protocol it speaks is the same for the daemons of PipeWire 0.3.65, 1.4.2 and 1.6.9 (docs/testing.md).
 */
#include "fakecard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pipewire/impl.h>
#include <spa/monitor/device.h>
#include <spa/param/audio/raw.h>
#include <spa/param/props.h>
#include <spa/param/route.h>
#include <spa/monitor/utils.h>
#include <spa/pod/filter.h>
#include <spa/utils/result.h>

/* The longest command line accepted (longer ones are cut off and answered with an error). */
#define FAKECARD_LINE_MAX 256
/* How many replies may wait for the daemon at once (more are answered without waiting). */
#define FAKECARD_PENDING_MAX 512

struct fakecard {
    const struct fakecard_kind *kind;
    struct pw_main_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct spa_hook core_listener;

    /* The device this client implements and exports. */
    struct spa_device device;
    struct spa_hook_list hooks;
    struct spa_device_info info;
    struct spa_param_info params[FAKECARD_PARAM_COUNT];
    struct pw_properties *properties;
    struct pw_proxy *device_proxy;
    struct spa_hook device_proxy_listener;
    uint32_t device_id;

    /* Standard input, and the part of a line read so far. */
    struct spa_source *input;
    char line[FAKECARD_LINE_MAX];
    size_t line_length;

    /* The work fakecard_later deferred, and its timer. */
    struct spa_source *later_timer;
    void (*later_work)(struct fakecard *card);

    /* The replies waiting for the daemon's answers to their round trips (pw_core_sync), oldest first: commands may
     * come faster than the daemon answers (a flapping jack). */
    struct fakecard_reply {
        int seq;
        char text[2 * FAKECARD_LINE_MAX + 64];
    } pending[FAKECARD_PENDING_MAX];
    uint32_t pending_first, pending_count;
};

uint32_t fakecard_device_id(const struct fakecard *card)
{
    return card->device_id;
}

static void emit_info(struct fakecard *card, uint64_t change_mask)
{
    card->info.change_mask = change_mask;
    spa_device_emit_info(&card->hooks, &card->info);
    card->info.change_mask = 0;
}

void fakecard_params_changed(struct fakecard *card, uint32_t changed)
{
    for (uint32_t index = 0; index < FAKECARD_PARAM_COUNT; index++) {
        if (changed & (1u << index))
            card->params[index].flags ^= SPA_PARAM_INFO_SERIAL;
    }
    emit_info(card, SPA_DEVICE_CHANGE_MASK_PARAMS);
}

void fakecard_add_route_props(struct spa_pod_builder *builder)
{
    // Why this is not optional: pipewire-pulse (collect.c, collect_device_info) parses an active Route's props as
    // an optional pod into a pointer it never initialises, and parses whatever that pointer holds as volumes when
    // the Route has none. On 0.3.65 and 1.6.9 the stack happened to hold something harmless; on 1.4.2 it held a
    // stale pointer, and pipewire-pulse segfaulted in its volume parsing whenever it looked at the card's sink
    // (2026-12-03, docs/measured.md). A real device never sends an active Route without props.
    const float volumes[2] = {1.0f, 1.0f};
    const uint32_t positions[2] = {SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR};
    struct spa_pod_frame props;
    spa_pod_builder_prop(builder, SPA_PARAM_ROUTE_props, 0);
    spa_pod_builder_push_object(builder, &props, SPA_TYPE_OBJECT_Props, SPA_PARAM_Route);
    spa_pod_builder_add(builder, SPA_PROP_mute, SPA_POD_Bool(false), SPA_PROP_channelVolumes,
                        SPA_POD_Array(sizeof(float), SPA_TYPE_Float, 2, volumes), SPA_PROP_volumeBase,
                        SPA_POD_Float(1.0f), SPA_PROP_volumeStep, SPA_POD_Float(1.0f / 65536.0f),
                        SPA_PROP_channelMap, SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Id, 2, positions),
                        SPA_PROP_softVolumes, SPA_POD_Array(sizeof(float), SPA_TYPE_Float, 2, volumes),
                        SPA_PROP_latencyOffsetNsec, SPA_POD_Long(0), 0);
    spa_pod_builder_pop(builder, &props);
}

struct pw_proxy *fakecard_node_create(struct fakecard *card, const char *const *properties)
{
    char device_id[16];
    snprintf(device_id, sizeof(device_id), "%u", card->device_id);
    struct pw_properties *all = pw_properties_new(
        PW_KEY_FACTORY_NAME, "support.null-audio-sink", "audio.channels", "2", "audio.position", "FL,FR",
        "monitor.channel-volumes", "true", PW_KEY_DEVICE_ID, device_id, NULL);
    if (all == NULL)
        return NULL;
    for (size_t index = 0; properties[index] != NULL && properties[index + 1] != NULL; index += 2)
        pw_properties_set(all, properties[index], properties[index + 1]);
    struct pw_proxy *node =
        pw_core_create_object(card->core, "adapter", PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, &all->dict, 0);
    pw_properties_free(all);
    if (node == NULL)
        fprintf(stderr, "fakecard: could not create a node: %s\n", strerror(errno));
    return node;
}

void fakecard_node_destroy(struct pw_proxy **node)
{
    // Destroying the proxy of an object this client created removes the object from the daemon (no object.linger).
    if (*node != NULL)
        pw_proxy_destroy(*node);
    *node = NULL;
}

static void on_later_timer(void *data, uint64_t expirations)
{
    struct fakecard *card = data;
    void (*work)(struct fakecard *card) = card->later_work;
    (void)expirations;
    card->later_work = NULL;
    if (work != NULL)
        work(card);
}

void fakecard_later(struct fakecard *card, void (*work)(struct fakecard *card))
{
    struct pw_loop *loop = pw_main_loop_get_loop(card->loop);
    struct timespec in_a_millisecond = {.tv_sec = 0, .tv_nsec = 1000000};
    if (card->later_timer == NULL)
        card->later_timer = pw_loop_add_timer(loop, on_later_timer, card);
    card->later_work = work;
    pw_loop_update_timer(loop, card->later_timer, &in_a_millisecond, NULL, false);
}

void fakecard_quit(struct fakecard *card)
{
    pw_main_loop_quit(card->loop);
}

/* ---- The spa_device methods the daemon calls through the protocol ---- */

static int device_add_listener(void *object, struct spa_hook *listener, const struct spa_device_events *events,
                               void *data)
{
    struct fakecard *card = object;
    struct spa_hook_list saved;
    // The new listener alone hears the full info at once, as a real device's new listener does.
    spa_hook_list_isolate(&card->hooks, &saved, listener, events, data);
    if (events->info != NULL)
        emit_info(card, SPA_DEVICE_CHANGE_MASK_FLAGS | SPA_DEVICE_CHANGE_MASK_PROPS | SPA_DEVICE_CHANGE_MASK_PARAMS);
    spa_hook_list_join(&card->hooks, &saved);
    return 0;
}

static int device_sync(void *object, int seq)
{
    struct fakecard *card = object;
    spa_device_emit_result(&card->hooks, seq, 0, 0, NULL);
    return 0;
}

static int device_enum_params(void *object, int seq, uint32_t id, uint32_t start, uint32_t max,
                              const struct spa_pod *filter)
{
    struct fakecard *card = object;
    uint32_t emitted = 0;
    for (uint32_t index = start; emitted < max; index++) {
        uint8_t buffer[4096], filtered_buffer[4096];
        struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
        struct spa_pod *param = card->kind->build_param(card, id, index, &builder);
        if (param == NULL)
            break;
        struct spa_pod_builder filtered = SPA_POD_BUILDER_INIT(filtered_buffer, sizeof(filtered_buffer));
        struct spa_result_device_params result = {.id = id, .index = index, .next = index + 1};
        if (spa_pod_filter(&filtered, &result.param, param, filter) < 0)
            continue;
        spa_device_emit_result(&card->hooks, seq, 0, SPA_RESULT_TYPE_DEVICE_PARAMS, &result);
        emitted++;
    }
    return 0;
}

static int device_set_param(void *object, uint32_t id, uint32_t flags, const struct spa_pod *param)
{
    struct fakecard *card = object;
    (void)flags;
    if (param == NULL)
        return -EINVAL;
    card->kind->set_param(card, id, param);
    return 0;
}

static const struct spa_device_methods device_methods = {
    SPA_VERSION_DEVICE_METHODS,
    .add_listener = device_add_listener,
    .sync = device_sync,
    .enum_params = device_enum_params,
    .set_param = device_set_param,
};

/* ---- Commands and replies ---- */

/* Answers the current command after a round trip to the daemon: by then it has applied what the command sent. */
static void reply_after_round_trip(struct fakecard *card, const char *reply)
{
    if (card->pending_count == FAKECARD_PENDING_MAX) {
        printf("%s\n", reply);
        return;
    }
    struct fakecard_reply *slot = &card->pending[(card->pending_first + card->pending_count) % FAKECARD_PENDING_MAX];
    snprintf(slot->text, sizeof(slot->text), "%s", reply);
    slot->seq = pw_core_sync(card->core, PW_ID_CORE, 0);
    card->pending_count++;
}

static void remove_card(struct fakecard *card)
{
    card->kind->command(card, "remove", "");
    if (card->device_proxy != NULL) {
        spa_hook_remove(&card->device_proxy_listener);
        pw_proxy_destroy(card->device_proxy);
        card->device_proxy = NULL;
    }
}

static void run_command(struct fakecard *card, char *line)
{
    char reply[2 * FAKECARD_LINE_MAX + 64];
    char *argument = strchr(line, ' ');
    if (argument != NULL)
        *argument++ = '\0';
    else
        argument = "";
    if (line[0] == '\0')
        return;
    if (strcmp(line, "quit") == 0) {
        fakecard_quit(card);
        return;
    }
    if (card->device_proxy == NULL) {
        snprintf(reply, sizeof(reply), "error %s: the card was removed", line);
        reply_after_round_trip(card, reply);
        return;
    }
    if (strcmp(line, "remove") == 0) {
        remove_card(card);
        snprintf(reply, sizeof(reply), "ok %s", line);
    } else if (card->kind->command(card, line, argument) == 0) {
        snprintf(reply, sizeof(reply), "ok %s", line);
    } else {
        snprintf(reply, sizeof(reply), "error %s: unknown command or argument '%s'", line, argument);
    }
    reply_after_round_trip(card, reply);
}

static void on_input(void *data, int fd, uint32_t mask)
{
    struct fakecard *card = data;
    char chunk[FAKECARD_LINE_MAX];
    (void)mask;
    ssize_t count = read(fd, chunk, sizeof(chunk));
    if (count <= 0) {
        if (count < 0 && (errno == EINTR || errno == EAGAIN))
            return;
        // End of input: the test is done with the card.
        fakecard_quit(card);
        return;
    }
    for (ssize_t index = 0; index < count; index++) {
        if (chunk[index] != '\n') {
            if (card->line_length < sizeof(card->line) - 1)
                card->line[card->line_length++] = chunk[index];
            continue;
        }
        card->line[card->line_length] = '\0';
        card->line_length = 0;
        run_command(card, card->line);
    }
}

/* ---- The daemon's side: the device's global id, round trips, errors ---- */

static void on_device_bound(void *data, uint32_t global_id)
{
    struct fakecard *card = data;
    if (card->device_id != SPA_ID_INVALID)
        return;
    card->device_id = global_id;
    card->kind->start(card);
    char reply[64];
    snprintf(reply, sizeof(reply), "ready device=%u", global_id);
    reply_after_round_trip(card, reply);
    // Commands are read only once the card is there.
    card->input = pw_loop_add_io(pw_main_loop_get_loop(card->loop), STDIN_FILENO, SPA_IO_IN | SPA_IO_HUP, false,
                                 on_input, card);
}

static const struct pw_proxy_events device_proxy_events = {
    PW_VERSION_PROXY_EVENTS,
    .bound = on_device_bound,
};

static void on_core_done(void *data, uint32_t id, int seq)
{
    struct fakecard *card = data;
    if (id != PW_ID_CORE)
        return;
    // The daemon answers round trips in order: this one and every earlier one are done.
    for (uint32_t index = 0; index < card->pending_count; index++) {
        if (card->pending[(card->pending_first + index) % FAKECARD_PENDING_MAX].seq != seq)
            continue;
        for (uint32_t done = 0; done <= index; done++) {
            printf("%s\n", card->pending[card->pending_first].text);
            card->pending_first = (card->pending_first + 1) % FAKECARD_PENDING_MAX;
        }
        card->pending_count -= index + 1;
        return;
    }
}

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message)
{
    struct fakecard *card = data;
    fprintf(stderr, "fakecard: error from the daemon on object %u (seq %d): %s (%s)\n", id, seq, message,
            spa_strerror(res));
    // Losing the connection ends the fake card, as unplugging a real one ends its device.
    if (id == PW_ID_CORE && res == -EPIPE)
        fakecard_quit(card);
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = on_core_done,
    .error = on_core_error,
};

static int export_device(struct fakecard *card)
{
    card->device_id = SPA_ID_INVALID;
    spa_hook_list_init(&card->hooks);
    card->device.iface = SPA_INTERFACE_INIT(SPA_TYPE_INTERFACE_Device, SPA_VERSION_DEVICE, &device_methods, card);
    card->properties = pw_properties_new(NULL, NULL);
    if (card->properties == NULL)
        return -errno;
    for (size_t index = 0; card->kind->properties[index] != NULL; index += 2)
        pw_properties_set(card->properties, card->kind->properties[index], card->kind->properties[index + 1]);
    card->params[FAKECARD_ENUM_PROFILE] = SPA_PARAM_INFO(SPA_PARAM_EnumProfile, SPA_PARAM_INFO_READ);
    card->params[FAKECARD_PROFILE] = SPA_PARAM_INFO(SPA_PARAM_Profile, SPA_PARAM_INFO_READWRITE);
    card->params[FAKECARD_ENUM_ROUTE] = SPA_PARAM_INFO(SPA_PARAM_EnumRoute, SPA_PARAM_INFO_READ);
    card->params[FAKECARD_ROUTE] = SPA_PARAM_INFO(SPA_PARAM_Route, SPA_PARAM_INFO_READWRITE);
    card->info = SPA_DEVICE_INFO_INIT();
    card->info.props = &card->properties->dict;
    card->info.params = card->params;
    card->info.n_params = FAKECARD_PARAM_COUNT;
    // The same properties on the global (pipewire-pulse reads media.class there) and in the info.
    card->device_proxy = pw_core_export(card->core, SPA_TYPE_INTERFACE_Device, &card->properties->dict,
                                        &card->device, 0);
    if (card->device_proxy == NULL)
        return -errno;
    pw_proxy_add_listener(card->device_proxy, &card->device_proxy_listener, &device_proxy_events, card);
    return 0;
}

int main(int argc, char *argv[])
{
    static const struct fakecard_kind *const kinds[] = {&fakecard_analog, &fakecard_headset};
    struct fakecard card = {0};
    for (size_t index = 0; argc == 2 && index < SPA_N_ELEMENTS(kinds); index++) {
        if (strcmp(argv[1], kinds[index]->name) == 0)
            card.kind = kinds[index];
    }
    if (card.kind == NULL) {
        fprintf(stderr, "usage: fakecard analog|headset   (commands on standard input; see fakecard.c)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    pw_init(&argc, &argv);
    card.loop = pw_main_loop_new(NULL);
    card.context = card.loop ? pw_context_new(pw_main_loop_get_loop(card.loop), NULL, 0) : NULL;
    if (card.context == NULL) {
        fprintf(stderr, "fakecard: no PipeWire loop or context: %s\n", strerror(errno));
        return 1;
    }
    // What lets this client export a device (the daemon loads the same module on its side). The default client
    // configuration may have loaded it already (EEXIST).
    if (pw_context_load_module(card.context, "libpipewire-module-client-device", NULL, NULL) == NULL
        && errno != EEXIST) {
        fprintf(stderr, "fakecard: cannot load libpipewire-module-client-device: %s\n", strerror(errno));
        return 1;
    }
    struct pw_properties *client_properties =
        pw_properties_new(PW_KEY_APP_NAME, "Earshot fake card", PW_KEY_APP_ID, "earshot.fakecard", NULL);
    card.core = pw_context_connect(card.context, client_properties, 0);
    if (card.core == NULL) {
        fprintf(stderr, "fakecard: cannot connect to PipeWire: %s\n", strerror(errno));
        return 1;
    }
    pw_core_add_listener(card.core, &card.core_listener, &core_events, &card);
    int res = export_device(&card);
    if (res < 0) {
        fprintf(stderr, "fakecard: cannot export the device: %s\n", spa_strerror(res));
        return 1;
    }
    pw_main_loop_run(card.loop);

    remove_card(&card);
    if (card.input != NULL)
        pw_loop_destroy_source(pw_main_loop_get_loop(card.loop), card.input);
    if (card.later_timer != NULL)
        pw_loop_destroy_source(pw_main_loop_get_loop(card.loop), card.later_timer);
    pw_core_disconnect(card.core);
    pw_context_destroy(card.context);
    pw_main_loop_destroy(card.loop);
    pw_properties_free(card.properties);
    pw_deinit();
    return 0;
}
