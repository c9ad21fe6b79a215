// LibraryStatus: what `status` shows of the music library, as its scanning thread last reported it through the inbox
// (`PlayerInbox.library`). The owner only keeps the latest one and shows it; it never asks the library anything.

/// The library's state for `status`: a scan running and how far it is, or the last scan's counts.
public struct LibraryStatus: Equatable, Sendable {
    /// Whether a scan is running.
    public var scanning: Bool
    /// Files read so far, and files to read in all, in the running (or last) scan.
    public var filesDone: Int
    public var filesToDo: Int
    /// Tracks in the library after the last scan; nil before one ended.
    public var tracks: Int?
    /// Files and folders the last scan skipped, by reason (hidden ones apart).
    public var skipped: [String: Int]
    /// The state of the database when it is not usable ("unavailable", "failed"), with a reason; nil when it is.
    public var problem: String?
    /// Scans finished since the service started: `earshot update` waits for this to grow.
    public var scansFinished: Int
    /// Tracks whose tags carry no gain: how many have gains the library measured, and how many wait to be measured
    /// (nil before the first measuring pass ended).
    public var gainsMeasured: Int?
    public var gainsToMeasure: Int?

    /// A status; see the properties.
    public init(scanning: Bool, filesDone: Int = 0, filesToDo: Int = 0, tracks: Int? = nil,
                skipped: [String: Int] = [:], problem: String? = nil, scansFinished: Int = 0) {
        self.scanning = scanning
        self.filesDone = filesDone
        self.filesToDo = filesToDo
        self.tracks = tracks
        self.skipped = skipped
        self.problem = problem
        self.scansFinished = scansFinished
    }

    /// The status object's `library` field.
    var jsonObject: [String: Any] {
        var object: [String: Any] = ["scanning": scanning, "filesDone": filesDone, "filesToDo": filesToDo,
                                     "skipped": skipped, "scansFinished": scansFinished]
        if let tracks { object["tracks"] = tracks }
        if let problem { object["problem"] = problem }
        if let gainsMeasured { object["gainsMeasured"] = gainsMeasured }
        if let gainsToMeasure { object["gainsToMeasure"] = gainsToMeasure }
        return object
    }
}
