// CMPRISShim: the sd-bus vtables of Earshot's MPRIS object.
//
// sd-bus describes an object with a `sd_bus_vtable[]` built from C macros (designated initializers and
// compound literals), which Swift cannot express. This target keeps the two tables as static data and
// routes every method call, property read and property write to three callbacks the Swift side supplies
// through `EarshotMPRISCallbacks`, passed as the object's userdata.
//
// The header deliberately does not include <systemd/sd-bus.h>: messages and errors travel as `void *`
// (an `sd_bus_message *` and an `sd_bus_error *`), so this module and CSystemd never declare the same
// types twice.
#ifndef EARSHOT_CMPRISSHIM_H
#define EARSHOT_CMPRISSHIM_H

/// Handles a method call `message` (an `sd_bus_message *`); fills `error` (an `sd_bus_error *`) and
/// returns a negative errno to refuse. Returns 1 after sending its own reply.
typedef int (*EarshotMPRISMethod)(void *message, void *owner, void *error);

/// Appends the value of `interface`.`property` to `reply` (an `sd_bus_message *` with the variant open).
typedef int (*EarshotMPRISGetter)(const char *interface, const char *property, void *reply, void *owner,
                                  void *error);

/// Reads a new value of `interface`.`property` from `value` (an `sd_bus_message *` inside the variant).
typedef int (*EarshotMPRISSetter)(const char *interface, const char *property, void *value, void *owner,
                                  void *error);

/// What the vtables call back into: the owner (an unretained Swift object) and its three entry points.
typedef struct EarshotMPRISCallbacks {
    void *owner;
    EarshotMPRISMethod method;
    EarshotMPRISGetter get;
    EarshotMPRISSetter set;
} EarshotMPRISCallbacks;

/// The vtable of `org.mpris.MediaPlayer2` (an `const sd_bus_vtable *`); userdata must be an
/// `EarshotMPRISCallbacks *` that outlives the registration.
const void *earshot_mpris_root_vtable(void);

/// The vtable of `org.mpris.MediaPlayer2.Player`, with the same userdata contract.
const void *earshot_mpris_player_vtable(void);

#endif
