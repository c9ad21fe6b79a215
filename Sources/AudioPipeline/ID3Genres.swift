// ID3Genres: the genre numbers of ID3 (ID3v1's genre byte, and ID3v2's TCON references to it) and their names: the
// 80 of the ID3v1 list, then Winamp's extensions up to 191 as taggers and readers commonly name them. Data, and the
// one rule of reading a TCON frame.

/// The ID3 genre numbers and their names.
enum ID3Genres {
    /// The name of each genre number, the number being the index.
    static let names: [String] = [
        // 0-79: ID3v1's own list.
        "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
        "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
        "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop", "Vocal",
        "Jazz+Funk", "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game", "Sound Clip", "Gospel",
        "Noise", "Alternative Rock", "Bass", "Soul", "Punk", "Space", "Meditative", "Instrumental Pop",
        "Instrumental Rock", "Ethnic", "Gothic", "Darkwave", "Techno-Industrial", "Electronic", "Pop-Folk",
        "Eurodance", "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta", "Top 40", "Christian Rap", "Pop/Funk",
        "Jungle", "Native American", "Cabaret", "New Wave", "Psychedelic", "Rave", "Showtunes", "Trailer", "Lo-Fi",
        "Tribal", "Acid Punk", "Acid Jazz", "Polka", "Retro", "Musical", "Rock & Roll", "Hard Rock",
        // 80-125: Winamp's first extensions.
        "Folk", "Folk-Rock", "National Folk", "Swing", "Fast Fusion", "Bebop", "Latin", "Revival", "Celtic",
        "Bluegrass", "Avantgarde", "Gothic Rock", "Progressive Rock", "Psychedelic Rock", "Symphonic Rock",
        "Slow Rock", "Big Band", "Chorus", "Easy Listening", "Acoustic", "Humour", "Speech", "Chanson", "Opera",
        "Chamber Music", "Sonata", "Symphony", "Booty Bass", "Primus", "Porn Groove", "Satire", "Slow Jam", "Club",
        "Tango", "Samba", "Folklore", "Ballad", "Power Ballad", "Rhythmic Soul", "Freestyle", "Duet", "Punk Rock",
        "Drum Solo", "A Cappella", "Euro-House", "Dance Hall",
        // 126-147: Winamp 1.91 and later.
        "Goa", "Drum & Bass", "Club-House", "Hardcore Techno", "Terror", "Indie", "Britpop", "Worldbeat",
        "Polsk Punk", "Beat", "Christian Gangsta Rap", "Heavy Metal", "Black Metal", "Crossover",
        "Contemporary Christian", "Christian Rock", "Merengue", "Salsa", "Thrash Metal", "Anime", "Jpop", "Synthpop",
        // 148-191: Winamp 5.6.
        "Abstract", "Art Rock", "Baroque", "Bhangra", "Big Beat", "Breakbeat", "Chillout", "Downtempo", "Dub", "EBM",
        "Eclectic", "Electro", "Electroclash", "Emo", "Experimental", "Garage", "Global", "IDM", "Illbient",
        "Industro-Goth", "Jam Band", "Krautrock", "Leftfield", "Lounge", "Math Rock", "New Romantic", "Nu-Breakz",
        "Post-Punk", "Post-Rock", "Psytrance", "Shoegaze", "Space Rock", "Trop Rock", "World Music", "Neoclassical",
        "Audiobook", "Audio Theatre", "Neue Deutsche Welle", "Podcast", "Indie Rock", "G-Funk", "Dubstep",
        "Garage Rock", "Psybient",
    ]

    /// The name of genre `number`; nil for 255 (ID3v1's "none") and every number the list does not have.
    static func name(_ number: Int) -> String? {
        names.indices.contains(number) ? names[number] : nil
    }

    /// A genre as an ID3v2 TCON frame (or a Vorbis GENRE carried over from one) writes it, as its name.
    ///
    /// ID3v2.3 writes references to the list in parentheses, optionally refined by a name after them: "(13)" is
    /// "Pop", "(4)Eurodisco" is "Eurodisco", "(RX)" and "(CR)" are "Remix" and "Cover", and "((" starts a name that
    /// begins with a parenthesis. With `bareNumbers` (ID3v2.4, and 2.3 taggers in practice) a whole text of digits up
    /// to 255 is a reference too: "13" is "Pop". A reference to a number the list lacks, with no name after it, is no
    /// genre.
    static func named(_ text: String, bareNumbers: Bool) -> String? {
        // Numbers past a byte's are no reference to the list: kept as written.
        if bareNumbers, let number = Int(text), number <= 255, text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return name(number)
        }
        var rest = Substring(text)
        var references: [String?] = []
        // The references, each "(N)", "(RX)" or "(CR)"; "((" is no reference but an escaped "(".
        while rest.hasPrefix("("), !rest.hasPrefix("(("), let close = rest.firstIndex(of: ")") {
            let inside = rest[rest.index(after: rest.startIndex)..<close]
            switch inside {
            case "RX": references.append("Remix")
            case "CR": references.append("Cover")
            default:
                guard !inside.isEmpty, inside.count <= 3, inside.allSatisfy({ $0.isASCII && $0.isNumber }),
                      let number = Int(inside) else { return text }
                references.append(name(number))
            }
            rest = rest[rest.index(after: close)...]
        }
        if rest.hasPrefix("((") { rest = rest.dropFirst() }
        if let refinement = TagText.trimmed(String(rest)) { return refinement }
        guard let reference = references.first else { return text }
        return reference
    }
}
