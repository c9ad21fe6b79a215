// CPulse: brings libpulse (asynchronous API with the threaded mainloop) into Swift.
#include <pulse/pulseaudio.h>
