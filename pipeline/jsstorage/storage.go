package jsstorage

import (
	"fmt"
	"math"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/codec"
	"github.com/runnel-dev/runnel/isb/jetstream"
	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

// Storage is the JetStream storage of pipelines: create it with New and
// give it to pipeline.WithStorage. It is durable and shared: several
// processes, each with a Storage of its own on its own connection, run
// one pipeline together. It is safe for concurrent use, holds no
// goroutine and needs no Close; the connection stays the caller's.
type Storage struct {
	nc     *nats.Conn
	cfg    config
	js     natsjs.JetStream
	legacy nats.JetStreamContext // leader reads of the state bucket (leader.go)
	wm     *jskv.Store

	mu      sync.Mutex
	buckets map[string]natsjs.KeyValue // state buckets bound, by name
}

var _ pipeline.Storage = (*Storage)(nil)

// New checks opts and returns the storage of pipelines on the JetStream
// server nc is connected to. Nothing is asked of the server until a
// pipeline runs. Connect nc with nats.MaxReconnects(-1), so that buffers
// pause through a server restart instead of failing.
func New(nc *nats.Conn, opts ...Option) (*Storage, error) {
	cfg, o, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, optErr("New", nil, "needs a NATS connection")
	}
	// The buffer options are checked here, once, by a backend that is
	// never opened (New asks nothing of the server).
	if _, err := jetstream.New[[]byte](nc, cfg.buffer...); err != nil {
		return nil, err
	}
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jsstorage: %w", err)
	}
	legacy, err := nc.JetStream()
	if err != nil {
		return nil, fmt.Errorf("jsstorage: %w", err)
	}
	wm, err := jskv.New(js, o.watermark...)
	if err != nil {
		return nil, err
	}
	return &Storage{nc: nc, cfg: cfg, js: js, legacy: legacy, wm: wm, buckets: map[string]natsjs.KeyValue{}}, nil
}

// String names the server, e.g. "jetstream(nats://127.0.0.1:4222)"
// (credentials redacted).
func (s *Storage) String() string {
	u := s.nc.ConnectedUrlRedacted()
	if u == "" {
		u = "disconnected"
	}
	return "jetstream(" + u + ")"
}

// Durable is true: buffers, states and runs outlive the process.
func (s *Storage) Durable() bool { return true }

// Shared is true: other processes open the same buffers, claims and state.
func (s *Storage) Shared() bool { return true }

// OpenBuffer opens the isb/jetstream backend of spec's buffer: streams
// {P}__{vertex}-{p} whose MaxMsgs is the buffer's capacity per partition
// and whose recorded codec is spec.Codec (see the package doc).
func (s *Storage) OpenBuffer(spec pipeline.BufferSpec) (isb.Backend[[]byte], error) {
	base, err := pipelineBase(spec.Pipeline)
	if err != nil {
		return nil, err
	}
	commits, err := bucketName(spec.Pipeline, isbSuffix+"-claims") // the longer of the two
	if err != nil {
		return nil, err
	}
	commits = commits[:len(commits)-len("-claims")]
	if spec.Partitions < 1 {
		return nil, optErr("Partitions", spec.Partitions, "must be at least 1")
	}
	if spec.Capacity < 0 {
		return nil, optErr("BufferCapacity", spec.Capacity, "must be 0 (unbounded) or positive")
	}
	var opts []jetstream.Option
	if s.cfg.packed {
		opts = append(opts, jetstream.Packed())
	}
	opts = append(append(opts, s.cfg.buffer...),
		jetstream.Prefix(base),
		jetstream.Bucket(commits),
		jetstream.WithCodec[[]byte](namedBytes(spec.Codec)))
	if spec.Events != nil {
		opts = append(opts, jetstream.OnError(spec.Events.Failed)) // the pipeline's storage errors
	}
	if spec.Capacity > 0 {
		perPart := (spec.Capacity + int64(spec.Partitions) - 1) / int64(spec.Partitions)
		opts = append(opts, jetstream.MaxMsgs(perPart*retainFactor), jetstream.UsageLimit(1.0/retainFactor))
	} else {
		opts = append(opts, jetstream.MaxMsgs(math.MaxInt64))
	}
	return jetstream.New[[]byte](s.nc, opts...)
}

// retainFactor is how many times a partition's share of the capacity its
// stream may retain. The capacity bounds what is uncommitted (the usage
// limit, where producers see the buffer full); a stream also retains
// messages every group committed while a writer holds them to find again
// after a crash (isb.Topic.Retain: a resumable source holds what it wrote
// since its last saved position, up to 20ms of writes). A stream limit
// equal to the capacity filled with such held messages and refused every
// append (DiscardNew) with nothing uncommitted: a BufferCapacity(2000)
// pipeline stopped for good after its first 2000 messages.
const retainFactor = 4

// namedBytes is codec.Bytes() under the name of the codec that encoded the
// bytes: isb/jetstream records a codec's name in each stream and refuses a
// stream recorded with another, so the envelope codec is recorded and
// checked without decoding anything twice.
type namedBytes string

func (n namedBytes) Name() string {
	if n == "" {
		return codec.Bytes().Name()
	}
	return string(n)
}
func (namedBytes) Append(dst, v []byte) ([]byte, error) { return codec.Bytes().Append(dst, v) }
func (namedBytes) Decode(src []byte, v *[]byte) error   { return codec.Bytes().Decode(src, v) }

// ReduceLog is {ReduceLogDir}/{pipeline}.wal/{vertex}, on this process's
// disk.
func (s *Storage) ReduceLog(p, vertex string) (string, error) {
	if p == "" || vertex == "" {
		return "", optErr("ReduceLog", p+"/"+vertex, "needs a pipeline and a vertex name")
	}
	return filepath.Join(s.cfg.reduceLogDir, p+".wal", vertex), nil
}

// Watermarks returns the storage's watermark/jskv store. The pipeline
// names its buckets after itself (watermark.EdgeBucket), so pipelines
// with vertices of the same names keep apart on one server.
func (s *Storage) Watermarks(p string) (watermark.Store, error) {
	if _, err := pipelineBase(p); err != nil {
		return nil, err
	}
	return s.wm, nil
}
