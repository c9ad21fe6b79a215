// libFuzzer target for the decoders fed arbitrary bytes: the decoder the input's signature chooses
// (`AudioFileKind.openDecoder`: MP3Decoder on libmpg123, SndfileDecoder on libsndfile for FLAC, Ogg Vorbis and Opus)
// opening, decoding and seeking a file holding the input. Not a SwiftPM target: scripts/fuzz compiles it with the
// decoders' sources in Sources/AudioPipeline, FrameRing.swift and the CMPG123 and CSndfile module maps.
//
// libmpg123 reads files by path, so each input is written to one scratch file (in $EARSHOT_FUZZ_TMPDIR, else
// /tmp) first. Besides "never crash or hang", it checks the decoder's promises: whole frames that fit the
// buffer, stereo at an accepted rate, and error messages that never contain the file's path.
import Glibc
import TrackPaths

/// The scratch file every input is written to; one per fuzzing process.
private let scratchPath: String = {
    let folder = getenv("EARSHOT_FUZZ_TMPDIR").map { String(cString: $0) } ?? "/tmp"
    return "\(folder)/earshot-fuzz-decoder-\(getpid()).mp3"
}()

/// Room for 1152 stereo frames (one MPEG-1 layer III frame), as the decode worker asks for about that much.
private let bufferSamples = 1152 * FrameRing.samplesPerFrame

/// The most decode calls one input may take; the inputs are small, so more means a loop that never ends.
private let callLimit = 100_000

/// Stops the process with `message` when `condition` is false (fatalError keeps its message in -O builds).
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// Writes `bytes` to the scratch file, replacing what it held.
private func writeScratchFile(_ bytes: UnsafeBufferPointer<UInt8>) {
    let descriptor = open(scratchPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    require(descriptor >= 0, "cannot create the scratch file \(scratchPath)")
    defer { close(descriptor) }
    var written = 0
    while written < bytes.count {
        let count = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
        require(count > 0 || errno == EINTR, "cannot write the scratch file")
        if count > 0 { written += count }
    }
}

/// Checks an error's promises: a message, and never the path of the file.
private func check(_ error: DecodeError) {
    require(!error.message.isEmpty, "an error without a message")
    require(!error.description.contains(scratchPath), "an error message contains the file's path")
}

/// Decodes up to `maximumCalls` steps into `buffer`, checking each; returns whether the track ended (or failed).
@discardableResult
private func decode(_ decoder: any AudioDecoder, into buffer: UnsafeMutableBufferPointer<Int16>, maximumCalls: Int) -> Bool {
    for _ in 0..<maximumCalls {
        do {
            switch try decoder.decode(into: buffer) {
            case .frames(let count):
                require(count > 0 && count * FrameRing.samplesPerFrame <= buffer.count, "bad frame count \(count)")
            case .formatChanged(let format):
                require(decoder is MP3Decoder && format.channels == 2
                            && MP3Decoder.nativeOutputRates.contains(format.sampleRate), "a format change to \(format)")
            case .finished:
                return true
            }
        } catch {
            check(error)
            return true
        }
    }
    return false
}

/// Opens the scratch file (at its own rate, or converted to `outputRate`), decodes and seeks it.
private func exercise(outputRate: Int?, buffer: UnsafeMutableBufferPointer<Int16>, fullDecode: Bool) {
    let decoder: any AudioDecoder
    do {
        decoder = try AudioFileKind.openDecoder(path: TrackPath(scratchPath), outputRate: outputRate)
    } catch {
        check(error)
        return
    }
    require(decoder.format.channels == 2, "opened as \(decoder.format)")
    // libmpg123 delivers the asked-for rate, or one of its native ones; libsndfile the file's own, which is positive.
    if decoder is MP3Decoder {
        require(outputRate.map { decoder.format.sampleRate == $0 }
                    ?? MP3Decoder.nativeOutputRates.contains(decoder.format.sampleRate), "opened as \(decoder.format)")
    } else {
        require(decoder.format.sampleRate > 0, "opened as \(decoder.format)")
    }
    _ = decoder.metadata
    if fullDecode {
        let ended = decode(decoder, into: buffer, maximumCalls: callLimit)
        require(ended, "decoding did not end within \(callLimit) calls")
    } else {
        decode(decoder, into: buffer, maximumCalls: 4)
    }
    // Seeks: back to the start, into the middle and past the end, each followed by a little decoding.
    for target in [0, (decoder.lengthFrames ?? 0) / 2, (decoder.lengthFrames ?? 0) + 10_000] {
        do {
            try decoder.seek(toFrame: target)
        } catch {
            check(error)
            continue
        }
        decode(decoder, into: buffer, maximumCalls: 4)
    }
}

/// libFuzzer's entry point: the bytes as an MP3 file, decoded as the player would, then at a forced 48 kHz.
@_cdecl("LLVMFuzzerTestOneInput")
public func mp3DecoderFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    writeScratchFile(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: bufferSamples)
    defer { buffer.deallocate() }
    buffer.initialize(repeating: 0)
    exercise(outputRate: nil, buffer: buffer, fullDecode: true)
    exercise(outputRate: 48_000, buffer: buffer, fullDecode: false)
    return 0
}
