package vertex

// Resumable is implemented by sources that can continue after a restart
// from a position they saved, instead of from their beginning. On durable
// storage the pipeline calls Resume once, before the first Read, with the
// source vertex's own store (which survives the process); on memory
// storage it never calls it, so the source starts from its beginning, as
// the buffers do.
//
// A resumable source saves its position as the pipeline acknowledges what
// it read (see [Acker]): the first message not yet acknowledged, so that
// nothing acknowledged is read again and nothing unacknowledged is
// skipped, or an earlier position (which only repeats messages).
//
// Which built-in sources are replayable: [Generator] (Resumable: it resumes
// after the messages acknowledged) and [FromTopic] (its progress is the
// consumer group's commit in the topic: a durable topic resumes). The
// others, [FromChannel], [FromSeq], [FromSlice] and [FromMessages], hold
// their data in the process: they start from their beginning in every run,
// and a restarted pipeline that must not repeat or lose their data needs a
// source that is.
type Resumable interface {
	Resume(store StateStore) error
}

// StateStore keeps one small value for one source vertex across runs.
// Save replaces it durably before it returns; Load returns what the last
// completed Save stored, or ok false if nothing was ever saved. Calls do
// not overlap.
type StateStore interface {
	Load() (state []byte, ok bool, err error)
	Save(state []byte) error
}
