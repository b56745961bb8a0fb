package forwarder

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Config is what one replica of a vertex needs besides its function and
// buffers.
type Config struct {
	Vertex   string
	Replica  int
	Options  Options // validated
	Counters *Counters
	Logger   *zap.Logger // nil logs nothing
	// Failures rate-limits the lines logged about retried failures; the
	// replicas of a vertex share one so that the limit is the vertex's
	// (nil: each replica gets its own).
	Failures *FailureLog
	// Drops rate-limits the lines logged about messages dropped or sent to
	// the fallback sink, shared by the replicas as Failures is (nil: each
	// replica gets its own).
	Drops *DropLog
	Hooks Hooks
	// Run identifies this run of the pipeline (optional): end-of-stream
	// messages carry it, and a reader ignores the ends of another run
	// (stale ones a killed run left in a durable buffer, see eos.go).
	Run string
	// KeepOpenOnStop makes a source replica that stop ended write no end
	// of stream: its readers, possibly in other processes, wait for it to
	// be started again instead of draining and ending (a pipeline over
	// several processes, where stopping one process must not end the
	// others). An exhausted source still ends its output Final.
	KeepOpenOnStop bool
}

// Input is a replica's input buffer: its consumer, the buffer's partition
// count, and how many processors write to each partition. The consumer must
// use isb.ManualCommit (an auto commit on the next Pull would commit
// messages not yet acked) and a batch size of at most Options.BatchSize (the
// reader holds one permit per message, and acquires BatchSize permits per
// Pull).
type Input[T any] struct {
	Consumer   *isb.PullConsumer[vertex.Message[T]]
	Partitions int
	// Writers is the number of processors that write to each partition:
	// the replicas of every vertex feeding the buffer. Each ends its output
	// with an end-of-stream message per partition, and the replica ends once
	// it has read all of them on every partition it reads (see eos.go).
	// Zero: the input never ends by itself; the replica runs until stop.
	Writers int
	// Ended, when not nil, returns the processors (as Config.Processor
	// names them) whose stream on partition is over for good, as known
	// outside the buffer, with the offset of each one's end of stream there: a reader restarted after it committed past their
	// ends does not read them again, and on storage shared by processes
	// the processor that wrote them may never run again (an exhausted
	// source). The pipeline answers from the final WMBs in the watermark
	// store. It is called before the first read, and then every idle
	// interval (Hooks.IdleInterval) from another goroutine until every
	// partition has all its ends or the replica drains, since an upstream
	// publishes its final WMB after it wrote its end to the buffer.
	// A reader counts an end it will not read again: one below where its
	// consumer starts.
	Ended func(partition int) map[string]int64
}

// output is a Writer of any element type, as a replica runs its idle loop
// and ends its output.
type output interface {
	// idleLoop runs the publisher's idle hook until ctx ends; it returns
	// the hook's error (nil once ctx ended).
	idleLoop(ctx context.Context, idle IdlePublisher, every time.Duration) error
	WriteEnd(ctx context.Context, processor string, kind EndKind) error
}

// asProcessError names the vertex and replica in err unless it already does.
func asProcessError(cfg Config, err error) error {
	var pe *vertex.ProcessError
	if errors.As(err, &pe) {
		return err
	}
	return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, Err: err}
}

// exhausted applies the retry policy's verdict to a message whose attempts
// are used up: it returns nil when the message is to be dropped (and
// counts it), or the error that fails the pipeline.
func exhausted(ctx context.Context, cfg Config, id string, attempts int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cfg.Counters.NoteError(err)
	if cfg.Options.Retry.OnExhausted == vertex.DropMessage {
		cfg.Counters.drop(reasonRetries, 1)
		cfg.reportDrop(DropExhausted, 1, zap.String("id", id), zap.Int("attempts", attempts), zap.Error(err))
		return nil
	}
	return &vertex.ProcessError{Vertex: cfg.Vertex, Replica: cfg.Replica, MessageID: id, Attempts: attempts, Err: err}
}

// withFailures gives cfg a FailureLog and a DropLog of its own when it has
// none.
func (cfg Config) withFailures() Config {
	if cfg.Failures == nil {
		cfg.Failures = &FailureLog{}
	}
	if cfg.Drops == nil {
		cfg.Drops = &DropLog{}
	}
	return cfg
}

// reportDrop logs on cfg.Logger (which names the vertex and replica),
// rate-limited (Drops), n messages not delivered for reason; the counters
// count them where they are dropped.
func (cfg *Config) reportDrop(reason string, n int, fields ...zap.Field) {
	if cfg.Drops == nil || cfg.Logger == nil {
		return
	}
	cfg.Drops.record(cfg.Logger, reason, int64(n), fields...)
}
