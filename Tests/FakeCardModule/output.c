/* A profile's devices, clocked as a null sink is: the sink takes audio from its streams at the sample rate, against
 * the monotonic clock, and drops it after PulseAudio has copied it to the sink's monitor (which the tests record);
 * the source, when there is one, hands its recorders silence at the same pace.
 *
 * How the clock works: `rendered_until` is the moment up to which the sink has taken audio. The I/O thread sleeps
 * until that moment, then takes enough to reach `now + block` (block: the latency the streams asked for, at most
 * MAX_BLOCK_USEC), so it is always up to one block ahead of real time. What is taken ahead can be given back when a
 * stream corks or seeks (a rewind), as on a real sound card: only what is still ahead of `now` can.
 *
 * What it does not fake: hardware volume, latency offsets, suspend on idle (the core's own module-suspend-on-idle is
 * not loaded by the tests), and timing jitter: the clock is exact.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fakecard-module.h"

#include <pulse/rtclock.h>
#include <pulse/timeval.h>
#include <pulse/xmalloc.h>

#include <pulsecore/log.h>
#include <pulsecore/memblock.h>
#include <pulsecore/rtpoll.h>
#include <pulsecore/sample-util.h>
#include <pulsecore/thread-mq.h>
#include <pulsecore/thread.h>

/* The most audio the sink takes ahead of real time, and the latency it reports when no stream asks for less. */
#define MAX_BLOCK_USEC (2 * PA_USEC_PER_SEC)
/* How much silence the source hands out at a time. */
#define SOURCE_CHUNK_USEC (10 * PA_USEC_PER_MSEC)

struct fakecard_output {
    pa_core *core;
    pa_module *module;
    pa_sink *sink;
    pa_source *source;

    pa_thread *thread;
    pa_thread_mq thread_mq;
    pa_rtpoll *rtpoll;
    bool thread_mq_ready;

    /* I/O thread only, once it runs. */
    pa_usec_t block_usec;
    pa_usec_t rendered_until;
    pa_usec_t recorded_until;
};

/* I/O thread: how far ahead the sink has rendered is its latency (negative when it is late). */
static int sink_message(pa_msgobject *object, int code, void *data, int64_t offset, pa_memchunk *chunk) {
    struct fakecard_output *output = PA_SINK(object)->userdata;

    if (code == PA_SINK_MESSAGE_GET_LATENCY) {
        *(int64_t *)data = (int64_t)output->rendered_until - (int64_t)pa_rtclock_now();
        return 0;
    }
    return pa_sink_process_msg(object, code, data, offset, chunk);
}

/* I/O thread: a block's worth may be asked for at once, and given back. */
static void apply_block(struct fakecard_output *output) {
    size_t bytes = pa_usec_to_bytes(output->block_usec, &output->sink->sample_spec);

    pa_sink_set_max_request_within_thread(output->sink, bytes);
    pa_sink_set_max_rewind_within_thread(output->sink, bytes);
}

/* I/O thread: a sink that starts running starts its clock now. */
static int sink_state_changed(pa_sink *sink, pa_sink_state_t state, pa_suspend_cause_t cause) {
    struct fakecard_output *output = sink->userdata;

    (void)cause;
    if (!PA_SINK_IS_OPENED(sink->thread_info.state) && PA_SINK_IS_OPENED(state)) {
        output->rendered_until = pa_rtclock_now();
        apply_block(output);
    }
    return 0;
}

/* I/O thread: the block follows the smallest latency a stream asked for. */
static void sink_latency_requested(pa_sink *sink) {
    struct fakecard_output *output = sink->userdata;
    pa_usec_t requested = pa_sink_get_requested_latency_within_thread(sink);

    output->block_usec = requested == (pa_usec_t)-1 ? sink->thread_info.max_latency : requested;
    apply_block(output);
}

/* I/O thread: a source that starts running starts its clock now. */
static int source_state_changed(pa_source *source, pa_source_state_t state, pa_suspend_cause_t cause) {
    struct fakecard_output *output = source->userdata;

    (void)cause;
    if (!PA_SOURCE_IS_OPENED(source->thread_info.state) && PA_SOURCE_IS_OPENED(state))
        output->recorded_until = pa_rtclock_now();
    return 0;
}

/* I/O thread: gives back what was rendered but is still ahead of NOW, up to what the server asks for. */
static void give_back(struct fakecard_output *output, pa_usec_t now) {
    size_t wanted = output->sink->thread_info.rewind_nbytes, ahead;

    if (!PA_SINK_IS_OPENED(output->sink->thread_info.state) || wanted == 0 || output->rendered_until <= now) {
        pa_sink_process_rewind(output->sink, 0);
        return;
    }
    ahead = pa_usec_to_bytes(output->rendered_until - now, &output->sink->sample_spec);
    if (wanted > ahead)
        wanted = ahead;
    pa_sink_process_rewind(output->sink, wanted);
    output->rendered_until -= pa_bytes_to_usec(wanted, &output->sink->sample_spec);
}

/* I/O thread: takes audio from the streams until the sink is a block ahead of NOW (at most one max_request). */
static void render(struct fakecard_output *output, pa_usec_t now) {
    const pa_sample_spec *spec = &output->sink->sample_spec;
    size_t taken = 0;

    while (output->rendered_until < now + output->block_usec && taken < output->sink->thread_info.max_request) {
        pa_memchunk chunk;
        size_t bytes = pa_usec_to_bytes(now + output->block_usec - output->rendered_until, spec);

        if (bytes > output->sink->thread_info.max_request)
            bytes = output->sink->thread_info.max_request;
        pa_sink_render(output->sink, bytes, &chunk);
        pa_memblock_unref(chunk.memblock);
        output->rendered_until += pa_bytes_to_usec(chunk.length, spec);
        taken += chunk.length;
    }
}

/* I/O thread: hands the source's recorders the silence of the time gone by, a chunk at a time. */
static void record(struct fakecard_output *output, pa_usec_t now) {
    while (output->recorded_until + SOURCE_CHUNK_USEC <= now) {
        pa_memchunk chunk;

        pa_silence_memchunk_get(&output->core->silence_cache, output->core->mempool, &chunk,
                                &output->source->sample_spec,
                                pa_usec_to_bytes(SOURCE_CHUNK_USEC, &output->source->sample_spec));
        pa_source_post(output->source, &chunk);
        pa_memblock_unref(chunk.memblock);
        output->recorded_until += SOURCE_CHUNK_USEC;
    }
}

static void io_thread(void *userdata) {
    struct fakecard_output *output = userdata;

    pa_thread_mq_install(&output->thread_mq);
    output->rendered_until = output->recorded_until = pa_rtclock_now();
    for (;;) {
        pa_usec_t now = pa_rtclock_now(), wake = 0;
        bool sink_open = PA_SINK_IS_OPENED(output->sink->thread_info.state);
        bool source_open = output->source && PA_SOURCE_IS_OPENED(output->source->thread_info.state);
        int status;

        if (output->sink->thread_info.rewind_requested)
            give_back(output, now);
        if (sink_open) {
            if (output->rendered_until <= now)
                render(output, now);
            wake = output->rendered_until;
        }
        if (source_open) {
            record(output, now);
            if (wake == 0 || output->recorded_until + SOURCE_CHUNK_USEC < wake)
                wake = output->recorded_until + SOURCE_CHUNK_USEC;
        }
        if (wake)
            pa_rtpoll_set_timer_absolute(output->rtpoll, wake);
        else
            pa_rtpoll_set_timer_disabled(output->rtpoll);

        status = pa_rtpoll_run(output->rtpoll);
        if (status == 0)
            return; /* PA_MESSAGE_SHUTDOWN: fakecard_output_free is stopping the thread */
        if (status < 0)
            break;
    }
    /* The poll failed: ask the main thread to unload the module, then wait to be shut down. */
    pa_asyncmsgq_post(output->thread_mq.outq, PA_MSGOBJECT(output->core), PA_CORE_MESSAGE_UNLOAD_MODULE,
                      output->module, 0, NULL, NULL);
    pa_asyncmsgq_wait_for(output->thread_mq.inq, PA_MESSAGE_SHUTDOWN);
}

struct fakecard_output *fakecard_output_new(pa_module *module, pa_sink_new_data *sink_data,
                                            pa_source_new_data *source_data) {
    struct fakecard_output *output = pa_xnew0(struct fakecard_output, 1);
    size_t block_bytes;

    output->core = module->core;
    output->module = module;
    output->block_usec = MAX_BLOCK_USEC;
    output->rtpoll = pa_rtpoll_new();
    if (pa_thread_mq_init(&output->thread_mq, module->core->mainloop, output->rtpoll) < 0)
        goto fail;
    output->thread_mq_ready = true;

    sink_data->driver = __FILE__;
    sink_data->module = module;
    pa_sink_new_data_set_sample_spec(sink_data, &module->core->default_sample_spec);
    pa_sink_new_data_set_channel_map(sink_data, &module->core->default_channel_map);
    output->sink = pa_sink_new(module->core, sink_data, PA_SINK_LATENCY | PA_SINK_DYNAMIC_LATENCY);
    if (!output->sink)
        goto fail;
    output->sink->parent.process_msg = sink_message;
    output->sink->set_state_in_io_thread = sink_state_changed;
    output->sink->update_requested_latency = sink_latency_requested;
    output->sink->userdata = output;
    pa_sink_set_asyncmsgq(output->sink, output->thread_mq.inq);
    pa_sink_set_rtpoll(output->sink, output->rtpoll);
    block_bytes = pa_usec_to_bytes(MAX_BLOCK_USEC, &output->sink->sample_spec);
    pa_sink_set_max_request(output->sink, block_bytes);
    pa_sink_set_max_rewind(output->sink, block_bytes);
    pa_sink_set_latency_range(output->sink, 0, MAX_BLOCK_USEC);

    if (source_data) {
        source_data->driver = __FILE__;
        source_data->module = module;
        pa_source_new_data_set_sample_spec(source_data, &module->core->default_sample_spec);
        pa_source_new_data_set_channel_map(source_data, &module->core->default_channel_map);
        output->source = pa_source_new(module->core, source_data, 0);
        if (!output->source)
            goto fail;
        output->source->set_state_in_io_thread = source_state_changed;
        output->source->userdata = output;
        pa_source_set_asyncmsgq(output->source, output->thread_mq.inq);
        pa_source_set_rtpoll(output->source, output->rtpoll);
    }

    output->thread = pa_thread_new("earshot-fakecard", io_thread, output);
    if (!output->thread)
        goto fail;
    pa_sink_put(output->sink);
    if (output->source)
        pa_source_put(output->source);
    return output;

fail:
    pa_log("earshot fake card: could not make the profile's devices");
    fakecard_output_free(output);
    return NULL;
}

pa_sink *fakecard_output_sink(struct fakecard_output *output) {
    return output->sink;
}

void fakecard_output_free(struct fakecard_output *output) {
    if (!output)
        return;
    if (output->sink)
        pa_sink_unlink(output->sink);
    if (output->source)
        pa_source_unlink(output->source);
    if (output->thread) {
        pa_asyncmsgq_send(output->thread_mq.inq, NULL, PA_MESSAGE_SHUTDOWN, NULL, 0, NULL);
        pa_thread_free(output->thread);
    }
    if (output->thread_mq_ready)
        pa_thread_mq_done(&output->thread_mq);
    if (output->sink)
        pa_sink_unref(output->sink);
    if (output->source)
        pa_source_unref(output->source);
    if (output->rtpoll)
        pa_rtpoll_free(output->rtpoll);
    pa_xfree(output);
}
