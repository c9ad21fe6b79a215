/* The fake sound card's shared part: a PipeWire client that exports one device (a `struct spa_device` of its own,
 * through libpipewire-module-client-device) and creates that device's nodes in the daemon, driven by one-line
 * commands on standard input. fakecard.c holds the machinery (loop, export, nodes, commands, replies); each device
 * kind (analog.c, headset.c) says what it offers through `struct fakecard_kind`.
 *
 * Threading: everything runs on the one pw_main_loop thread (standard input is one of the loop's sources), so no
 * state here is shared between threads and nothing takes a lock.
 */
#ifndef EARSHOT_FAKECARD_H
#define EARSHOT_FAKECARD_H

#include <stdbool.h>
#include <stdint.h>

#include <pipewire/pipewire.h>
#include <spa/pod/builder.h>

/* The four params a card announces; their order is that of the info's params array. */
enum fakecard_param {
    FAKECARD_ENUM_PROFILE,
    FAKECARD_PROFILE,
    FAKECARD_ENUM_ROUTE,
    FAKECARD_ROUTE,
    FAKECARD_PARAM_COUNT,
};

/* Which params changed (bits of 1 << enum fakecard_param), for fakecard_params_changed. */
#define FAKECARD_PROFILES_CHANGED ((1u << FAKECARD_ENUM_PROFILE) | (1u << FAKECARD_PROFILE))
#define FAKECARD_ROUTES_CHANGED ((1u << FAKECARD_ENUM_ROUTE) | (1u << FAKECARD_ROUTE))

struct fakecard;

/* What one kind of fake device offers; the shared part calls these on the loop thread. */
struct fakecard_kind {
    /* The kind's name on the command line (`fakecard analog`). */
    const char *name;
    /* The exported device's global properties, as key/value pairs ending with NULL. They must carry
     * media.class=Audio/Device: pipewire-pulse decides what is a card from the registry's properties. */
    const char *const *properties;
    /* Builds param `id` (SPA_PARAM_EnumProfile, Profile, EnumRoute or Route) number `index` into `builder`; returns
     * the pod, or NULL when there is no such index (the end of the list). */
    struct spa_pod *(*build_param)(struct fakecard *card, uint32_t id, uint32_t index, struct spa_pod_builder *builder);
    /* A set_param from the daemon (WirePlumber's or pactl's choice of profile or route). */
    void (*set_param)(struct fakecard *card, uint32_t id, const struct spa_pod *param);
    /* The device has its global id: create the nodes of the starting profile. */
    void (*start)(struct fakecard *card);
    /* One command from standard input, split into its verb and the rest (maybe ""): 0 when done, -EINVAL when the
     * kind does not know it. */
    int (*command)(struct fakecard *card, const char *verb, const char *argument);
};

/* The device kinds (analog.c, headset.c). */
extern const struct fakecard_kind fakecard_analog;
extern const struct fakecard_kind fakecard_headset;

/* The device's global id in the daemon (valid once `start` has been called). */
uint32_t fakecard_device_id(const struct fakecard *card);

/* Tells the daemon that params changed: toggles their SPA_PARAM_INFO_SERIAL flag (that bit, not a counter, is what
 * makes the server read them again) and emits the device's info. */
void fakecard_params_changed(struct fakecard *card, uint32_t changed);

/* Adds the `props` of an active Route (a Props object: unmuted, stereo FL/FR at full volume, no latency offset) to
 * the ParamRoute object being built, as every real device's active Route carries them: PipeWire's ALSA and bluez5
 * devices always do, and pipewire-pulse reads a Route's props without checking they were there (1.4.2 crashed; see
 * fakecard.c). */
void fakecard_add_route_props(struct spa_pod_builder *builder);

/* Creates a node in the daemon from the `adapter` factory around a null audio sink, with the given key/value pairs
 * (ending with NULL) on top of the ones every fake node has (factory, stereo, device.id); NULL on failure. */
struct pw_proxy *fakecard_node_create(struct fakecard *card, const char *const *properties);

/* Removes a node made by fakecard_node_create (and sets *node to NULL). */
void fakecard_node_destroy(struct pw_proxy **node);

/* Runs `work` on the loop thread a millisecond from now, outside the call being handled (one at a time: a later
 * call replaces a pending one). A device answers a set_param this way, as a real one switches asynchronously. */
void fakecard_later(struct fakecard *card, void (*work)(struct fakecard *card));

/* Leaves the loop: the process exits, and the daemon removes the device and its nodes with the client. */
void fakecard_quit(struct fakecard *card);

#endif
