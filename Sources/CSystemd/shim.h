// CSystemd: brings libsystemd's sd-bus (the D-Bus client library) into Swift for MPRIS and the rtkit call.
#include <systemd/sd-bus.h>
