-- Read by WirePlumber 0.4 in the private PipeWire stack that scripts/lib/soundserver.sh starts for the tests
-- (EARSHOT_TEST_SERVER=pipewire): the script copies Config/wireplumber-test/ to $XDG_CONFIG_HOME/wireplumber of a
-- fresh per-run XDG_CONFIG_HOME, where it runs after Debian's 50-*.lua and before 90-enable-all.lua.
--
-- The test server has only the null sinks `headphones` and `speakers` that the script creates with pactl:
-- no hardware monitors, so a developer's real sound cards and cameras are never opened (the developer's own
-- PipeWire owns them) and the stack starts in well under a second.
alsa_monitor.enabled = false
v4l2_monitor.enabled = false
libcamera_monitor.enabled = false

-- Every test starts from the same policy: WirePlumber must not restore where an earlier test moved a stream with
-- the same application name, nor the volume or mute an earlier test set (restore-stream.lua would otherwise
-- start the next Earshot stream on `speakers`, or muted). Relinking after a device removal does not depend on it.
stream_defaults.properties["restore-target"] = false
stream_defaults.properties["restore-props"] = false

-- Nor the profile an earlier test chose for a card with pactl (which asks for it to be kept): the fake headset is the
-- same device in every test, and a stored `off` brings the next test's headset up with no sink (issue 41; see
-- Config/wireplumber-0.5-test, whose `device.restore-profile = false` says the same to WirePlumber 0.5). 0.4 keeps
-- profiles in its default-profile module, which device_defaults.enable() adds with the other device choices; it is
-- taken out again here, and policy-device-profile.lua then chooses each card's best profile, as on its first
-- appearance.
local enable_device_defaults = device_defaults.enable
function device_defaults.enable()
  enable_device_defaults()
  components["default-profile"] = nil
end
