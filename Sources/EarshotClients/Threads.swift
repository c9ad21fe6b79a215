// EarshotClients: what talks to the clients of Earshot, on threads that may wait for them.
//
// A note on threading
// -------------------
// Nothing here runs on the owner's thread except the hand-overs the owner makes through the interfaces it defines
// (EarshotService's OwnerInterfaces.swift), and those only append to a bounded queue or fill a reply box, under a lock
// held for no system call, and return. Every wait is on a thread of this target's own:
// - "earshot-control" accepts connections; one "earshot-client" thread per control client (at most
//   `ControlServer.clientLimit`) reads its requests, waits up to 10 s for the owner's answer (`ReplySlot`, also used
//   by the MPRIS bus thread), and writes the reply with a blocking send: a client that never reads stops only its
//   own thread.
// - "earshot-events" writes the event log to its followers (`earshot events`) with non-blocking sends, from a bounded
//   `FollowerQueue` each: a follower that falls behind loses lines, marked, or its connection (EventLog+Followers).
// - "earshot-stderr" writes the log's echo and the player's messages to standard error, and "earshot-stdout" the
//   foreground player's progress line to standard output, each with blocking writes from a bounded queue of its own:
//   a stream nobody reads (or a terminal stopped with Ctrl-S) loses lines, marked (StandardStreamWriter).
// - `earshot events` (the client side, EventsClient) reads its socket on "earshot-follow" while the calling thread
//   writes to its standard output at the output's pace.
// This target depends on the owner's (for its values and interfaces), never the other way round (LayeringTests).
