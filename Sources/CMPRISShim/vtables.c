// The static vtables of Earshot's MPRIS object and the trampolines that forward to Swift.
//
// Property flags say what Earshot promises clients: CONST for values that never change (no signal
// needed), EMITS_CHANGE for values the Swift side announces in PropertiesChanged, and no flag for
// Position, which the MPRIS specification says is read on demand and never announced.
#include "CMPRISShim.h"

#include <systemd/sd-bus.h>

static int forward_method(sd_bus_message *message, void *userdata, sd_bus_error *error) {
    const EarshotMPRISCallbacks *callbacks = userdata;
    return callbacks->method(message, callbacks->owner, error);
}

static int forward_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    (void)bus;
    (void)path;
    const EarshotMPRISCallbacks *callbacks = userdata;
    return callbacks->get(interface, property, reply, callbacks->owner, error);
}

static int forward_set(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *value, void *userdata, sd_bus_error *error) {
    (void)bus;
    (void)path;
    const EarshotMPRISCallbacks *callbacks = userdata;
    return callbacks->set(interface, property, value, callbacks->owner, error);
}

#define CONSTANT SD_BUS_VTABLE_PROPERTY_CONST
#define ANNOUNCED SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE

static const sd_bus_vtable root_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Raise", "", "", forward_method, 0),
    SD_BUS_METHOD("Quit", "", "", forward_method, 0),
    SD_BUS_PROPERTY("CanQuit", "b", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("CanRaise", "b", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("HasTrackList", "b", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("Identity", "s", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("DesktopEntry", "s", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("SupportedUriSchemes", "as", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("SupportedMimeTypes", "as", forward_get, 0, CONSTANT),
    SD_BUS_VTABLE_END,
};

static const sd_bus_vtable player_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Next", "", "", forward_method, 0),
    SD_BUS_METHOD("Previous", "", "", forward_method, 0),
    SD_BUS_METHOD("Pause", "", "", forward_method, 0),
    SD_BUS_METHOD("PlayPause", "", "", forward_method, 0),
    SD_BUS_METHOD("Stop", "", "", forward_method, 0),
    SD_BUS_METHOD("Play", "", "", forward_method, 0),
    SD_BUS_METHOD_WITH_NAMES("Seek", "x", SD_BUS_PARAM(Offset), "", "", forward_method, 0),
    SD_BUS_METHOD_WITH_NAMES("SetPosition", "ox", SD_BUS_PARAM(TrackId) SD_BUS_PARAM(Position), "", "",
                             forward_method, 0),
    SD_BUS_METHOD_WITH_NAMES("OpenUri", "s", SD_BUS_PARAM(Uri), "", "", forward_method, 0),
    SD_BUS_SIGNAL_WITH_NAMES("Seeked", "x", SD_BUS_PARAM(Position), 0),
    SD_BUS_PROPERTY("PlaybackStatus", "s", forward_get, 0, ANNOUNCED),
    // Writable because the specification says so; Earshot accepts only the one value it supports.
    SD_BUS_WRITABLE_PROPERTY("LoopStatus", "s", forward_get, forward_set, 0, ANNOUNCED),
    SD_BUS_WRITABLE_PROPERTY("Rate", "d", forward_get, forward_set, 0, ANNOUNCED),
    SD_BUS_WRITABLE_PROPERTY("Shuffle", "b", forward_get, forward_set, 0, ANNOUNCED),
    SD_BUS_PROPERTY("Metadata", "a{sv}", forward_get, 0, ANNOUNCED),
    SD_BUS_WRITABLE_PROPERTY("Volume", "d", forward_get, forward_set, 0, ANNOUNCED),
    SD_BUS_PROPERTY("Position", "x", forward_get, 0, 0),
    SD_BUS_PROPERTY("MinimumRate", "d", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("MaximumRate", "d", forward_get, 0, CONSTANT),
    SD_BUS_PROPERTY("CanGoNext", "b", forward_get, 0, ANNOUNCED),
    SD_BUS_PROPERTY("CanGoPrevious", "b", forward_get, 0, ANNOUNCED),
    SD_BUS_PROPERTY("CanPlay", "b", forward_get, 0, ANNOUNCED),
    SD_BUS_PROPERTY("CanPause", "b", forward_get, 0, ANNOUNCED),
    SD_BUS_PROPERTY("CanSeek", "b", forward_get, 0, ANNOUNCED),
    SD_BUS_PROPERTY("CanControl", "b", forward_get, 0, CONSTANT),
    SD_BUS_VTABLE_END,
};

const void *earshot_mpris_root_vtable(void) {
    return root_vtable;
}

const void *earshot_mpris_player_vtable(void) {
    return player_vtable;
}
