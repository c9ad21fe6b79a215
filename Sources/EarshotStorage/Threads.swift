// EarshotStorage: the disk, on threads that may wait for it.
//
// A note on threading
// -------------------
// The owner hands work over through the interfaces it defines (EarshotService's OwnerInterfaces.swift) and never
// waits for the disk: `StateWriter.save` takes a lock for a few assignments and signals; `CoverArtWorker.submit` fills
// a slot of a lock-free ring and posts a semaphore. Every wait is on a thread of this target's own:
// - "earshot-store" writes `state.json` (temporary file, fsync, rename, fsync of the directory) and `position.json`
//   (one pwrite, fsync only at a clean exit) through `StateStore`, the latest of each, coalesced (StateWriter).
// - "earshot-covers", at SCHED_IDLE, reads, hashes and writes cover pictures into the art cache (CoverArtCache).
// - The service's main thread, before the owner starts and after it stops: reading the saved state
//   (`StateWriter.loadSavedState`), waiting for the last save (`StateWriter.finish`); and the command line's, before
//   anything starts: the configuration file (ConfigurationFile) and the files, directories and playlists a user names
//   (QueueInput).
// This target depends on the owner's (for its values and interfaces), never the other way round (LayeringTests).
