// MPRISServer's properties (see MPRISServer.swift for the threading): reads answered from the last published snapshot,
// writes turned into commands for the owner's handler, and the readers of a message's arguments they and the methods
// share. All of it runs on the bus thread.
import CMPRISShim
import CSystemd

extension MPRISServer {
    /// Fails a call with `InvalidArgs` and `message`.
    func invalidArguments(_ error: UnsafeMutablePointer<sd_bus_error>, _ message: String) -> Int32 {
        sd_bus_error_set(error, "org.freedesktop.DBus.Error.InvalidArgs", message)
    }

    /// Reads an `x` argument.
    func readInt64(_ message: OpaquePointer) -> Int64? {
        var value: Int64 = 0
        return sd_bus_message_read_basic(message, BusType.int64, &value) > 0 ? value : nil
    }

    /// Reads a `d` argument.
    func readDouble(_ message: OpaquePointer) -> Double? {
        var value: Double = 0
        return sd_bus_message_read_basic(message, BusType.double, &value) > 0 ? value : nil
    }

    /// Reads a `b` argument.
    func readBoolean(_ message: OpaquePointer) -> Bool? {
        var value: Int32 = 0
        return sd_bus_message_read_basic(message, BusType.boolean, &value) > 0 ? value != 0 : nil
    }

    /// Reads a string-like argument; sd-bus hands out a pointer into the message, copied here.
    func readString(_ message: OpaquePointer, type: CChar) -> String? {
        var pointer: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, type, &pointer) > 0, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// Answers a property read from the last published snapshot (`Position` from the provider).
    func propertyRead(
        interface: String, property: String, reply: OpaquePointer, error: UnsafeMutablePointer<sd_bus_error>
    ) -> Int32 {
        let writer = BusWriter(message: reply)
        do throws(BusWriter.Failure) {
            switch (interface, property) {
            case (Self.rootInterface, "CanQuit"): try writer.boolean(true)
            case (Self.rootInterface, "CanRaise"): try writer.boolean(false)
            case (Self.rootInterface, "HasTrackList"): try writer.boolean(false)
            case (Self.rootInterface, "Identity"): try writer.string("Earshot")
            case (Self.rootInterface, "DesktopEntry"): try writer.string("earshot")
            case (Self.rootInterface, "SupportedUriSchemes"): try writer.strings(["file", "http", "https"])
            case (Self.rootInterface, "SupportedMimeTypes"): try writer.strings(supportedMimeTypes)
            case (Self.playerInterface, "PlaybackStatus"): try writer.string(published.playbackStatus.rawValue)
            case (Self.playerInterface, "LoopStatus"): try writer.string(published.loopStatus.rawValue)
            case (Self.playerInterface, "Rate"), (Self.playerInterface, "MinimumRate"),
                 (Self.playerInterface, "MaximumRate"):
                try writer.double(1.0)
            case (Self.playerInterface, "Shuffle"): try writer.boolean(published.shuffle)
            case (Self.playerInterface, "Metadata"): try writeMetadata(writer)
            case (Self.playerInterface, "Volume"): try writer.double(published.volume)
            case (Self.playerInterface, "Position"): try writer.int64(max(0, positionProvider()))
            case (Self.playerInterface, "CanGoNext"): try writer.boolean(published.canGoNext)
            case (Self.playerInterface, "CanGoPrevious"): try writer.boolean(published.canGoPrevious)
            case (Self.playerInterface, "CanPlay"): try writer.boolean(published.canPlay)
            case (Self.playerInterface, "CanPause"): try writer.boolean(published.canPause)
            case (Self.playerInterface, "CanSeek"): try writer.boolean(published.canSeek)
            case (Self.playerInterface, "CanControl"): try writer.boolean(true)
            default:
                return sd_bus_error_set(
                    error, "org.freedesktop.DBus.Error.UnknownProperty", "unknown property \(property)")
            }
        } catch {
            return error.code
        }
        return 1
    }

    /// Writes `Metadata`: the published track's entries, only those it has.
    func writeMetadata(_ writer: BusWriter) throws(BusWriter.Failure) {
        let snapshot = published
        var trackId = snapshot.trackId ?? Self.noTrackId
        // An invalid object path would make the whole reply fail; fall back to "no track" instead.
        if sd_bus_object_path_is_valid(trackId) == 0 { trackId = Self.noTrackId }
        try writer.container(BusType.array, "{sv}") { () throws(BusWriter.Failure) in
            try writer.entry("mpris:trackid", BusType.objectPath) { () throws(BusWriter.Failure) in
                try writer.objectPath(trackId)
            }
            if let length = snapshot.lengthMicroseconds, length > 0 {
                try writer.entry("mpris:length", BusType.int64) { () throws(BusWriter.Failure) in
                    try writer.int64(length)
                }
            }
            if let title = snapshot.title {
                try writer.entry("xesam:title", BusType.string) { () throws(BusWriter.Failure) in
                    try writer.string(title)
                }
            }
            if !snapshot.artists.isEmpty {
                try writer.entry("xesam:artist", "as") { () throws(BusWriter.Failure) in
                    try writer.strings(snapshot.artists)
                }
            }
            if let album = snapshot.album {
                try writer.entry("xesam:album", BusType.string) { () throws(BusWriter.Failure) in
                    try writer.string(album)
                }
            }
            if let albumArtist = snapshot.albumArtist {
                try writer.entry("xesam:albumArtist", "as") { () throws(BusWriter.Failure) in
                    try writer.strings([albumArtist])
                }
            }
            if let number = snapshot.trackNumber, let value = Int32(exactly: number) {
                try writer.entry("xesam:trackNumber", BusType.int32) { () throws(BusWriter.Failure) in
                    try writer.int32(value)
                }
            }
            if let art = snapshot.artPath {
                try writer.entry("mpris:artUrl", BusType.string) { () throws(BusWriter.Failure) in
                    try writer.string(art.fileURI)
                }
            }
            if let path = snapshot.filePath {
                try writer.entry("xesam:url", BusType.string) { () throws(BusWriter.Failure) in
                    // A stream's URL is its own xesam:url; a file's is its file:// URI.
                    try writer.string(path.isStreamURL ? path.string ?? path.fileURI : path.fileURI)
                }
            }
            // Not in the MPRIS specification (its keys may be extended under a player's own prefix): which gain the
            // track plays at and where it came from.
            if let source = snapshot.replayGainSource {
                try writer.entry("earshot:replayGainSource", BusType.string) { () throws(BusWriter.Failure) in
                    try writer.string(source)
                }
            }
            if let decibels = snapshot.replayGainDb {
                try writer.entry("earshot:replayGainDb", BusType.double) { () throws(BusWriter.Failure) in
                    try writer.double(decibels)
                }
            }
        }
    }

    /// Turns a property write into a command for the handler (`Volume`, `Rate`, `LoopStatus`, `Shuffle`).
    func propertyWritten(
        interface: String, property: String, value: OpaquePointer, error: UnsafeMutablePointer<sd_bus_error>
    ) -> Int32 {
        let notSupported = "org.freedesktop.DBus.Error.NotSupported"
        switch (interface, property) {
        case (Self.playerInterface, "Volume"):
            guard let volume = readDouble(value), !volume.isNaN else {
                return invalidArguments(error, "Volume must be a number")
            }
            // The MPRIS rule: a negative volume means 0.
            return answer(handler(.setVolume(max(0, volume))), error: error)
        case (Self.playerInterface, "Rate"):
            guard let rate = readDouble(value) else { return invalidArguments(error, "Rate must be a number") }
            // The MPRIS rule: a rate of 0.0 acts as Pause.
            if rate == 0 { return answer(handler(.pause(MPRISSender.of(message: value))), error: error) }
            if rate == 1 { return 1 }
            return sd_bus_error_set(error, notSupported, "Earshot plays at rate 1.0 only")
        case (Self.playerInterface, "LoopStatus"):
            guard let status = readString(value, type: BusType.string) else {
                return invalidArguments(error, "LoopStatus must be a string")
            }
            guard let loop = MPRISSnapshot.LoopStatus(rawValue: status) else {
                return invalidArguments(error, "LoopStatus must be None, Track or Playlist")
            }
            return answer(handler(.setLoopStatus(loop)), error: error)
        case (Self.playerInterface, "Shuffle"):
            guard let shuffle = readBoolean(value) else { return invalidArguments(error, "Shuffle must be a boolean") }
            return answer(handler(.setShuffle(shuffle)), error: error)
        default:
            return sd_bus_error_set(error, "org.freedesktop.DBus.Error.PropertyReadOnly", "\(property) is read-only")
        }
    }

    /// The handler's reply as sd-bus's return value: done, or a `Failed` error with its reason.
    func answer(_ reply: MPRISReply, error: UnsafeMutablePointer<sd_bus_error>) -> Int32 {
        switch reply {
        case .done: return 1
        case .refused(let reason): return sd_bus_error_set(error, "org.freedesktop.DBus.Error.Failed", reason)
        }
    }
}
