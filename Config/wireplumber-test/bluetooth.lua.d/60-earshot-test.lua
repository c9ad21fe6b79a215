-- Read by WirePlumber 0.4 in the private PipeWire stack that scripts/lib/soundserver.sh starts for the tests
-- (copied to $XDG_CONFIG_HOME/wireplumber/bluetooth.lua.d of a fresh per-run XDG_CONFIG_HOME).
-- No Bluetooth in the test server: BlueZ lives on the system bus, which the private stack neither has nor needs.
bluez_monitor.enabled = false
