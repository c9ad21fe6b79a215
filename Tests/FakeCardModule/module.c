/* module-earshot-fakecard: the module's entry points and its message handler (see fakecard-module.h for what the
 * module is, analog.c and headset.c for the cards).
 *
 * Arguments: `kind=analog` or `kind=headset`. Commands: `pactl send-message /card/CARD/earshot COMMAND [ARGUMENT]`,
 * where CARD is the card's name (`fakecard_analog_card`, `bluez_card.00_11_22_33_44_55`) and the commands are each
 * card's, plus `remove`: the module unloads itself, its card and devices with it, as PulseAudio's bluez5 device
 * module does when a headset disconnects.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fakecard-module.h"

#include <string.h>

#include <pulse/xmalloc.h>

#include <pulsecore/core-util.h>
#include <pulsecore/log.h>
#include <pulsecore/message-handler.h>
#include <pulsecore/modargs.h>

PA_MODULE_AUTHOR("Earshot's tests");
PA_MODULE_DESCRIPTION("A fake sound card for tests: an analog card with a headphone jack, or a Bluetooth headset");
PA_MODULE_VERSION(PACKAGE_VERSION);
PA_MODULE_LOAD_ONCE(false);
PA_MODULE_USAGE("kind=<analog or headset>");

static const char *const arguments[] = {"kind", NULL};

struct module_state {
    const struct fakecard_kind *kind;
    void *card;
    char *path;
};

/* The message handler: one command, with at most one argument (pactl wraps a bare word into a JSON string). */
static int handle_message(const char *path, const char *message, const pa_json_object *parameters, char **response,
                          void *userdata) {
    pa_module *module = userdata;
    struct module_state *state = module->userdata;
    const char *argument = NULL;
    int result;

    (void)path;
    if (parameters && pa_json_object_get_type(parameters) == PA_JSON_TYPE_STRING)
        argument = pa_json_object_get_string(parameters);
    else if (parameters && pa_json_object_get_type(parameters) != PA_JSON_TYPE_NULL) {
        *response = pa_xstrdup("the argument must be one word");
        return -PA_ERR_INVALID;
    }
    pa_log_info("earshot fake card: %s %s", message, argument ? argument : "");
    if (strcmp(message, "remove") == 0) {
        pa_module_unload_request(module, true);
        result = 0;
    } else
        result = state->kind->command(state->card, message, argument, response);
    /* The reply the tests wait for, as the PipeWire helper's: `ok COMMAND` (an error says why in *response). */
    if (result >= 0)
        *response = pa_sprintf_malloc("ok %s", message);
    return result;
}

int pa__init(pa_module *module) {
    static const struct fakecard_kind *const kinds[] = {&fakecard_analog, &fakecard_headset};
    struct module_state *state;
    pa_modargs *parsed;
    const char *kind_name;
    unsigned i;

    if (!(parsed = pa_modargs_new(module->argument, arguments))) {
        pa_log("earshot fake card: the arguments are kind=analog or kind=headset");
        return -1;
    }
    kind_name = pa_modargs_get_value(parsed, "kind", "analog");
    module->userdata = state = pa_xnew0(struct module_state, 1);
    for (i = 0; i < PA_ELEMENTSOF(kinds); i++)
        if (strcmp(kinds[i]->name, kind_name) == 0)
            state->kind = kinds[i];
    if (!state->kind)
        pa_log("earshot fake card: no card of kind %s (analog, headset)", kind_name);
    pa_modargs_free(parsed);
    if (!state->kind)
        goto fail;
    if (state->kind->create(module, &state->card) < 0)
        goto fail;
    state->path = pa_sprintf_malloc("/card/%s/earshot", state->kind->pa_card(state->card)->name);
    pa_message_handler_register(module->core, state->path, "Earshot's fake sound card: its test commands",
                                handle_message, module);
    return 0;

fail:
    pa__done(module);
    return -1;
}

void pa__done(pa_module *module) {
    struct module_state *state = module->userdata;

    if (!state)
        return;
    if (state->path) {
        pa_message_handler_unregister(module->core, state->path);
        pa_xfree(state->path);
    }
    if (state->card)
        state->kind->free(state->card);
    pa_xfree(state);
    module->userdata = NULL;
}
