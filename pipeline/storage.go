package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"time"

	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/vertex"
)

// Storage is where a pipeline keeps its buffers: one topic of
// vertex.Message[T] per reading vertex, named after it, with the vertex's
// partition count and capacity. [Memory] is the default; [MMap] keeps them in memory-mapped files under a data
// directory, so a pipeline stopped or killed and started again on the same
// directory resumes where its vertices had acknowledged.
//
// # Why a description, not an interface with an Open method
//
// Opening a buffer is generic (its element type is vertex.Message[T]) and Go
// interfaces cannot have generic methods. The two ways around that are a
// storage that opens untyped topics of []byte, to which the pipeline adds
// the envelope encoding, or a non-generic description of the storage that
// a generic function of this package ([openTopic]) switches on. The first
// would be open to storages outside this package, but it costs a copy of
// every message between the two layers, gives memory storage nothing to
// store without encoding, and hides the element type from durable storage,
// which records it to refuse a topic reopened as another type. So a
// Storage is a description, and each kind is one case of openTopic: the
// JetStream storage of a later issue is a third constructor here and a
// third case there; package forwarder never names a storage package, it
// only sees *isb.Topic values.
type Storage interface {
	// String describes the storage for logs, e.g. "mmap(/var/lib/app)".
	String() string
	// Durable reports whether buffers survive the process: a source's
	// message is acknowledged once it is durable in the first buffer,
	// instead of once it is in memory.
	Durable() bool

	// storage seals the interface: only this package's storages exist
	// (see openTopic).
	storage()
}

// Memory returns the memory storage, the default: buffers live in the
// process, values are passed without encoding. A process that stops loses
// what is in them (see the package doc, "Delivery guarantees").
func Memory() Storage { return memoryStorage{} }

type memoryStorage struct{}

func (memoryStorage) String() string { return "memory" }
func (memoryStorage) Durable() bool  { return false }
func (memoryStorage) storage()       {}

// MMap returns durable storage under dir: the buffers of pipeline p are
// isb/mmap topics in dir/{p}/{vertex}/, each message stored in the
// envelope encoding (internal/envelope) with its value encoded by the
// codec [WithCodec] gives for its type (JSON by default). opts are
// passed to mmap.New after the pipeline's defaults for buffers
// (SegmentSize(32 MiB); MaxRetainedConsumedSegments(0): a consumed segment
// is deleted), so they override them.
//
// What durable means: with mmap's default flush policy, Immediate, a write
// to a buffer returns once it is flushed to disk, so what a source was
// told was delivered survives a crash of the process and of the machine.
// mmap.Flush(mmap.Interval(d)) returns once the write is in the file's page
// cache, which survives the process (kill -9, a panic, an OOM kill) but
// not the machine until the next flush, and runs a durable pipeline
// several times as fast (docs/benchmarks.md), since under Immediate every
// write waits for the disk (concurrent writers to a buffer share a
// flush). An invalid
// option is reported by Run, naming it.
func MMap(dir string, opts ...mmap.Option) Storage {
	return &mmapStorage{dir: dir, opts: opts}
}

type mmapStorage struct {
	dir  string
	opts []mmap.Option
}

func (s *mmapStorage) String() string { return fmt.Sprintf("mmap(%s)", s.dir) }
func (s *mmapStorage) Durable() bool  { return true }
func (s *mmapStorage) storage()       {}

// Defaults of buffers on mmap storage: segments small enough that a
// consumed one is deleted soon after (a pipeline's buffers are queues, not
// archives), large enough that rollovers, each a flush, stay rare.
const (
	mmapBufferSegment = 32 << 20
	mmapRetained      = 0
)

// WithStorage sets where the pipeline keeps its buffers (default
// Memory()).
func WithStorage(s Storage) Option { return func(c *config) { c.storage = s } }

// WithCodec sets the codec of values of type T in the buffers of durable
// storage (default codec.JSON[T]()); memory storage does not encode. It
// applies to every buffer whose messages carry a T. The codec's name is
// stored with each buffer, so a pipeline reopened with another codec for
// a buffer is refused instead of misreading it.
func WithCodec[T any](c codec.Codec[T]) Option {
	return func(cfg *config) {
		if cfg.codecs == nil {
			cfg.codecs = map[reflect.Type]any{}
		}
		cfg.codecs[reflect.TypeFor[T]()] = c
	}
}

// defaultCommitInterval is how often durable storage persists the
// buffers' consumer commits unless CommitInterval says otherwise (20ms, as
// CommitInterval's doc states).
const defaultCommitInterval = 20 * time.Millisecond

// CommitInterval sets how often durable storage persists what each vertex
// has acknowledged of its input buffer (default 20ms; 0
// persists every commit before the reader goes on, one checkpoint file
// write with two fsyncs each). A vertex commits only what it has written
// durably downstream, so a commit that a crash loses makes the vertex
// process those messages again (duplicates), never lose them: d bounds the
// duplicates a crash causes, about d times the pipeline's rate per vertex.
// A clean stop persists every commit. Memory storage ignores it.
func CommitInterval(d time.Duration) Option { return func(c *config) { c.commitEvery = d } }

// checkStorage validates the storage options once, for newConfig.
func checkStorage(c *config) error {
	if c.storage == nil {
		c.storage = Memory()
	}
	if c.commitEvery < 0 {
		return &isb.OptionError{Package: "pipeline", Option: "CommitInterval", Value: c.commitEvery, Reason: "must not be negative"}
	}
	if s, ok := c.storage.(*mmapStorage); ok && s.dir == "" {
		return &isb.OptionError{Package: "pipeline", Option: "MMap", Value: "", Reason: "needs a directory"}
	}
	for t, cd := range c.codecs {
		if reflect.ValueOf(cd).Kind() == reflect.Invalid {
			return &isb.OptionError{Package: "pipeline", Option: fmt.Sprintf("WithCodec for %v", t), Value: nil, Reason: "the codec must not be nil"}
		}
	}
	return nil
}

// topicSpec is what storage needs to open a vertex's buffer.
type topicSpec struct {
	pipeline   string // the pipeline's name
	vertex     string // the reading vertex: the topic's name
	partitions int
	capacity   int64
}

// openTopic opens the buffer described by spec on storage s: the one
// place that turns a storage description into a typed topic.
func openTopic[T any](c *config, spec topicSpec) (*isb.Topic[vertex.Message[T]], error) {
	t, _, err := openTopicBackend[T](c, spec)
	return t, err
}

// openTopicBackend is openTopic that also returns the topic's backend, whose
// logs a resumable source's recovery reads (source_resume.go).
func openTopicBackend[T any](c *config, spec topicSpec) (*isb.Topic[vertex.Message[T]], isb.Backend[vertex.Message[T]], error) {
	topicOpts := []isb.TopicOption{isb.Partitions(spec.partitions), isb.Capacity(spec.capacity)}
	switch s := c.storage.(type) {
	case memoryStorage:
		// A partition keeps enough recycled segments to hold its share of
		// the capacity, so a buffer that fills and drains at steady state
		// reuses its segments instead of allocating (and collecting) new
		// ones.
		free := memory.DefaultMaxFreeSegments
		if spec.capacity > 0 {
			perPart := (spec.capacity + int64(spec.partitions) - 1) / int64(spec.partitions)
			free = max(free, int((perPart+memory.DefaultSegmentSize-1)/memory.DefaultSegmentSize)+1)
		}
		backend, err := memory.New[vertex.Message[T]](memory.MaxFreeSegments(free))
		if err != nil {
			return nil, nil, err
		}
		t, err := isb.NewTopic(spec.pipeline+"-"+spec.vertex, isb.Backend[vertex.Message[T]](backend), topicOpts...)
		return t, backend, err
	case *mmapStorage:
		opts := append([]mmap.Option{
			mmap.SegmentSize(mmapBufferSegment),
			mmap.MaxRetainedConsumedSegments(mmapRetained),
			mmap.WithCodec(envelope.Codec(valueCodec[T](c))),
		}, s.opts...)
		b, err := mmap.New[vertex.Message[T]](filepath.Join(s.dir, spec.pipeline), opts...)
		if err != nil {
			return nil, nil, err
		}
		var backend isb.Backend[vertex.Message[T]] = b
		if c.commitEvery > 0 {
			backend = newGroupCommits(backend, c.commitEvery)
		}
		t, err := isb.NewTopic(spec.vertex, backend, topicOpts...)
		if err != nil {
			return nil, nil, errors.Join(err, backend.Close())
		}
		return t, backend, nil
	}
	return nil, nil, &isb.OptionError{Package: "pipeline", Option: "storage", Value: c.storage, Reason: "unknown storage"}
}

// valueCodec is the codec WithCodec set for T, or JSON.
func valueCodec[T any](c *config) codec.Codec[T] {
	if cd, ok := c.codecs[reflect.TypeFor[T]()].(codec.Codec[T]); ok {
		return cd
	}
	return codec.JSON[T]()
}
