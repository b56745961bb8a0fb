package vertex

// Resumable is implemented by sources that can continue after a restart
// from a position they saved, instead of from their beginning. On durable
// storage the pipeline calls Resume once, before the first Read, with the
// source vertex's own store (which survives the process); on memory
// storage it never calls it, so the source starts from its beginning, as
// the buffers do.
//
// A resumable source saves its position as the pipeline acknowledges what
// it read (see [Acker]): what it was told is acknowledged, so that nothing
// acknowledged is read again and nothing unacknowledged is skipped, or an
// earlier position (which only repeats messages).
//
// A resumable source that is also an [Acker] and an [Acknowledged] is
// never written twice to the pipeline's buffers across crashes, when it
// keeps these promises (the generator does):
//   - its IDs are unique and stable: a message read again after a restart
//     has the ID it had;
//   - it calls Save only from Ack, with a state covering that Ack and
//     every earlier one, or from Close (with everything);
//   - it takes an Ack, after Resume and before the first Read, of messages
//     an earlier run read: the pipeline finds them in the buffers the
//     source writes to, written after the saved position, and acknowledges
//     them so that the source does not hand them over again.
//
// A position saved some time after the acknowledgement (the generator
// saves at most every 20ms) then costs nothing but the reading back of
// what was written since (see package pipeline, "Delivery guarantees").
//
// Which built-in sources are replayable: [Generator] (Resumable: it resumes
// after the messages acknowledged, and repeats none) and [FromTopic] (its
// progress is the consumer group's commit in the topic: a durable topic
// resumes, and repeats what was written after its last commit). The
// others, [FromChannel], [FromSeq], [FromSlice] and [FromMessages], hold
// their data in the process: they start from their beginning in every run,
// and a restarted pipeline that must not repeat or lose their data needs a
// source that is.
// Of the connectors, the line source of package vertex/file is Resumable,
// an Acker and an Acknowledged as the generator is (its position is the
// byte ranges acknowledged per file); the sources of vertex/kafka and
// vertex/jetstream are replayable without being Resumable (the broker
// keeps their position: a consumer group's commits, a durable consumer);
// each connector's package doc says.
type Resumable interface {
	Resume(store StateStore) error
}

// Acknowledged is implemented by a resumable source that can tell, after
// Resume and before anything else, whether the position it resumed from
// covers the message with the given ID (the generator can). The pipeline
// asks it about a message it finds in some of the source's buffers and
// not in others: one the position covers was written to all of them, and
// only its record in the others lay below where the pipeline looked, so it
// is not written again. Without it such a message is written again to the
// buffers where it was not found (at least once there).
type Acknowledged interface {
	Acknowledged(id string) bool
}

// StateStore keeps one small value for one source vertex across runs.
// Save replaces it durably before it returns; Load returns what the last
// completed Save stored, or ok false if nothing was ever saved. Calls do
// not overlap.
type StateStore interface {
	Load() (state []byte, ok bool, err error)
	Save(state []byte) error
}
