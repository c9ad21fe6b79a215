// CSystemd: brings libsystemd's sd-bus (the D-Bus client library) into Swift for MPRIS.
#include <systemd/sd-bus.h>
