package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/datadir"
	"github.com/runnel-dev/runnel/internal/envelope"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/memory"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/watermark"
)

// Storage is where a pipeline keeps what must outlive one message's trip
// through it: the buffers between vertices, a resumable source's state, a
// reduce vertex's write-ahead log, the watermarks and the identity of the
// run. [Memory] is the default; [MMap] keeps everything under a data
// directory, so a pipeline stopped or killed and started again on the same
// directory resumes where its vertices had acknowledged; package
// pipeline/jsstorage keeps it in NATS JetStream, so that one pipeline runs
// over several processes (see [Only]).
//
// The whole contract is this interface; the pipeline checks what it gets
// once, at Run, and refuses a durable storage that keeps no reduce log or
// no source state rather than run without them.
//
// # Why buffers are opened as bytes
//
// Go interfaces cannot have generic methods, so OpenBuffer opens a backend
// of encoded messages and the pipeline encodes each vertex.Message (its
// envelope encoding, internal/envelope, around the codec [WithCodec]
// gives). That costs a copy per message between the two layers; the two
// storages of this package skip it (memory passes values unencoded, mmap
// encodes straight into its segments), which is why their OpenBuffer is
// the fallback path a wrapper of them takes, not the path Run takes.
type Storage interface {
	// String describes the storage for logs, e.g. "mmap(/var/lib/app)".
	String() string
	// Durable reports whether buffers survive the process: a source's
	// message is acknowledged once it is durable in the first buffer,
	// instead of once it is in memory. Durable storage must keep source
	// state and reduce logs (SourceState and ReduceLog).
	Durable() bool
	// Shared reports whether processes other than this one open the same
	// buffers, claims and state: only then can a process run a subset of
	// the pipeline (Only, Replicas) while other processes run the rest.
	Shared() bool

	// OpenBuffer opens the storage of one buffer, spec.Vertex's input: a
	// backend of encoded messages, which the pipeline opens a topic on.
	OpenBuffer(spec BufferSpec) (isb.Backend[[]byte], error)
	// SourceState returns where a resumable source vertex keeps its
	// position: one value replaced atomically. nil for storage that
	// keeps none (the source starts from its beginning every run).
	SourceState(pipeline, vertex string) (StateStore, error)
	// ReduceLog returns the directory of a reduce vertex's write-ahead log
	// (created by the pipeline if missing): on the local disk of the
	// process running it. "" for storage that keeps none.
	ReduceLog(pipeline, vertex string) (string, error)
	// Watermarks returns the store of the pipeline's watermarks, or nil
	// for the WatermarkStore option's (by default a new memory store per
	// run).
	Watermarks(pipeline string) (watermark.Store, error)
	// JoinRun returns the run this process takes part in: every process
	// running vertices of one pipeline run gets the same one, so that ends
	// of stream and watermarks of an earlier run are told apart from this
	// run's. Storage one process owns starts a new run every time; shared
	// storage keeps the run until EndRun recorded the end of every sink
	// replica.
	JoinRun(pipeline string) (Run, error)
	// EndRun records that processor (a sink replica, "vertex/replica")
	// ended run by its end of stream; all names every sink replica of the
	// pipeline. Once every one of them ended, the next JoinRun starts a new
	// run.
	EndRun(pipeline, run, processor string, all []string) error
}

// Run is the run of a pipeline a process joined (Storage.JoinRun).
type Run struct {
	// ID identifies the run: end-of-stream messages and the names of
	// watermark processors carry it.
	ID string
	// After is the run recorded before this one, when the join started a
	// new run because every sink replica had ended that one; "" when the
	// join found its run going on, or none recorded. A process restarted
	// after its run ended joins the next run and waits for that run's
	// upstream: the pipeline logs After so that its operator sees why.
	After string
}

// BufferSpec is one buffer to open: the input of vertex Vertex of pipeline
// Pipeline.
type BufferSpec struct {
	Pipeline   string
	Vertex     string
	Partitions int
	// Capacity is the vertex's BufferCapacity, in messages (0: unbounded).
	// Storage whose backends keep their own limits (isb.Caps.OwnsLimits)
	// enforces it; for any other the pipeline's topic does.
	Capacity int64
	// Codec names the encoding of the messages (the envelope's name and its
	// value codec's), for storage that records it to refuse a buffer
	// reopened with another.
	Codec string
	// Events, when not nil, is told what the buffer's storage does: its
	// flushes and failed calls, which Stats and the metrics show.
	Events BufferEvents
}

// BufferEvents receives what a buffer's storage reports about its own
// work, for Stats (VertexStats.Flush, StorageErrors) and the metrics of
// package pipeline/monitor. A Storage passes the events its backends can
// report; the methods are quick and safe for concurrent use.
type BufferEvents interface {
	// Flushed reports a flush to disk that made appended messages durable,
	// and how long it took.
	Flushed(d time.Duration)
	// Failed reports a failed call to remote storage, which may be retried:
	// op is "publish", "fetch" or the call's name ("commit", ...).
	Failed(op string, err error)
}

// StateStore is where a storage keeps one source vertex's state: a value
// replaced atomically (after a crash Load returns the last value saved in
// full). The pipeline frames what it saves with a checksum and the anchors
// of the source's output buffers (storage_state.go).
type StateStore interface {
	vertex.StateStore
	// String names the place in errors: a file's path, a bucket and key.
	String() string
}

// Memory returns the memory storage, the default: buffers live in the
// process, values are passed without encoding. A process that stops loses
// what is in them (see the package doc, "Delivery guarantees").
func Memory() Storage { return memoryStorage{} }

type memoryStorage struct{}

func (memoryStorage) String() string { return "memory" }
func (memoryStorage) Durable() bool  { return false }
func (memoryStorage) Shared() bool   { return false }

// OpenBuffer opens a memory backend of encoded messages: the path of a
// wrapper of Memory(); Run opens typed memory buffers instead.
func (memoryStorage) OpenBuffer(BufferSpec) (isb.Backend[[]byte], error) {
	return memory.New[[]byte]()
}
func (memoryStorage) SourceState(string, string) (StateStore, error) { return nil, nil }
func (memoryStorage) ReduceLog(string, string) (string, error)       { return "", nil }
func (memoryStorage) Watermarks(string) (watermark.Store, error)     { return nil, nil }
func (memoryStorage) JoinRun(string) (Run, error)                    { return Run{ID: newRunID()}, nil }
func (memoryStorage) EndRun(string, string, string, []string) error  { return nil }

// newRunID is the identity of a run on storage one process owns: every Run
// is a new run.
func newRunID() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// MMap returns durable storage under dir: the buffers of pipeline p are
// isb/mmap topics in dir/{p}/{vertex}/, each message stored in the
// envelope encoding (internal/envelope) with its value encoded by the
// codec [WithCodec] gives for its type (JSON by default); a resumable
// source's state is dir/{p}/{vertex}.source and a reduce vertex's WAL
// dir/{p}.wal/{vertex}/. opts are
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
func (s *mmapStorage) Shared() bool   { return false }

// OpenBuffer opens an mmap backend of encoded messages: the path of a
// wrapper of MMap(dir); Run opens typed mmap buffers instead.
func (s *mmapStorage) OpenBuffer(spec BufferSpec) (isb.Backend[[]byte], error) {
	return mmap.New[[]byte](filepath.Join(s.dir, spec.Pipeline), s.bufferOptions(spec, mmap.WithCodec(codec.Bytes()))...)
}

// bufferOptions are the options of spec's buffer whose items are encoded
// by withCodec (an mmap.WithCodec).
func (s *mmapStorage) bufferOptions(spec BufferSpec, withCodec mmap.Option) []mmap.Option {
	opts := []mmap.Option{
		mmap.SegmentSize(mmapBufferSegment),
		mmap.MaxRetainedConsumedSegments(mmapRetained),
		withCodec,
	}
	if spec.Events != nil {
		opts = append(opts, mmap.OnFlush(spec.Events.Flushed))
	}
	return append(opts, s.opts...)
}

func (s *mmapStorage) SourceState(pipeline, vertex string) (StateStore, error) {
	dir := filepath.Join(s.dir, pipeline)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("source state: %w", err)
	}
	return fileState(filepath.Join(dir, vertex+stateSuffix)), nil
}

func (s *mmapStorage) ReduceLog(pipeline, vertex string) (string, error) {
	return filepath.Join(s.dir, pipeline+datadir.WALSuffix, vertex), nil
}

func (s *mmapStorage) Watermarks(string) (watermark.Store, error)    { return nil, nil }
func (s *mmapStorage) JoinRun(string) (Run, error)                   { return Run{ID: newRunID()}, nil }
func (s *mmapStorage) EndRun(string, string, string, []string) error { return nil }

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

// maxMemoryFreeSegments caps the recycled segments a partition of memory
// storage keeps: 1024 of memory.DefaultSegmentSize hold 4 Mi messages, a
// refill of a partition that large allocates only beyond them, and a
// buffer drained from larger gives the rest back to the garbage collector.
const maxMemoryFreeSegments = 1024

// openTopic opens the buffer described by spec on the pipeline's storage.
func openTopic[T any](c *config, spec BufferSpec) (*isb.Topic[vertex.Message[T]], error) {
	t, _, err := openTopicBackend[T](c, spec)
	return t, err
}

// openTopicBackend opens the buffer described by spec on the pipeline's
// storage, and returns the topic's backend too, whose logs a resumable
// source's recovery reads (source_resume.go): the one place that turns a
// storage into a typed topic.
func openTopicBackend[T any](c *config, spec BufferSpec) (*isb.Topic[vertex.Message[T]], isb.Backend[vertex.Message[T]], error) {
	// The topic reports producers blocked on the full buffer (every 10 s,
	// naming the groups behind) in the pipeline's log.
	topicOpts := []isb.TopicOption{isb.Partitions(spec.Partitions), isb.Capacity(spec.Capacity),
		isb.TopicLogger(c.logger.With(zap.String("pipeline", spec.Pipeline), zap.String("buffer", spec.Vertex)))}
	name := spec.Vertex
	var backend isb.Backend[vertex.Message[T]]
	switch s := c.storage.(type) {
	case memoryStorage:
		// A partition keeps enough recycled segments to hold its share of
		// the capacity, so a buffer that fills and drains at steady state
		// reuses its segments instead of allocating (and collecting) new
		// ones; up to maxMemoryFreeSegments: the pool is a cache, and a
		// capacity near vertex.BufferCapacity's bound (2^32) would
		// otherwise ask for a million.
		free := memory.DefaultMaxFreeSegments
		if spec.Capacity > 0 {
			perPart := (spec.Capacity + int64(spec.Partitions) - 1) / int64(spec.Partitions)
			segs := (perPart+memory.DefaultSegmentSize-1)/memory.DefaultSegmentSize + 1
			free = int(max(int64(free), min(segs, maxMemoryFreeSegments)))
		}
		b, err := memory.New[vertex.Message[T]](memory.MaxFreeSegments(free))
		if err != nil {
			return nil, nil, err
		}
		backend, name = b, spec.Pipeline+"-"+spec.Vertex
	case *mmapStorage:
		b, err := mmap.New[vertex.Message[T]](filepath.Join(s.dir, spec.Pipeline),
			s.bufferOptions(spec, mmap.WithCodec(envelopeOf[T](c)))...)
		if err != nil {
			return nil, nil, err
		}
		backend = b
	default:
		cd := envelopeOf[T](c)
		spec.Codec = cd.Name()
		b, err := c.storage.OpenBuffer(spec)
		if err != nil {
			return nil, nil, err
		}
		enc := newEncodedBackend(b, cd)
		caps, err := enc.Open(name, spec.Partitions) // NewTopic's Open returns the same
		if err != nil {
			return nil, nil, errors.Join(err, b.Close())
		}
		if caps.OwnsLimits {
			topicOpts = slices.Delete(topicOpts, 1, 2) // no isb.Capacity: the storage enforces BufferSpec.Capacity
		}
		backend = enc
	}
	if c.storage.Durable() && c.commitEvery > 0 {
		backend = newGroupCommits(backend, c.commitEvery)
	}
	t, err := isb.NewTopic(name, backend, topicOpts...)
	if err != nil {
		return nil, nil, errors.Join(err, backend.Close())
	}
	return t, backend, nil
}

// envelopeOf is the encoding of messages of T in durable buffers: the
// envelope around the value codec.
func envelopeOf[T any](c *config) codec.Codec[vertex.Message[T]] {
	return envelope.Codec(valueCodec[T](c))
}

// valueCodec is the codec WithCodec set for T, or JSON.
func valueCodec[T any](c *config) codec.Codec[T] {
	if cd, ok := c.codecs[reflect.TypeFor[T]()].(codec.Codec[T]); ok {
		return cd
	}
	return codec.JSON[T]()
}
