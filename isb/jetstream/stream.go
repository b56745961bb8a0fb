package jetstream

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/isb"
)

// The versions of what a stream holds, its runnel.format: each message's
// payload is the codec's encoding of one item, nothing else (unpacked), or
// a frame of items (packed, frame.go).
const (
	formatVersion       = "1"
	formatVersionPacked = "2"
)

// format is the runnel.format of the backend's streams.
func (c *config[T]) format() string {
	if c.packed() {
		return formatVersionPacked
	}
	return formatVersion
}

// Metadata keys a stream records when this package creates it.
const (
	metaFormat     = "runnel.format"
	metaPartitions = "runnel.partitions"
	metaCodec      = "runnel.codec"
	metaType       = "runnel.type"
)

// typeName names T as precisely as reflection allows, as isb/mmap does.
func typeName[T any]() string {
	t := reflect.TypeFor[T]()
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

// streamConfig is the configuration of partition p's stream.
func (b *Backend[T]) streamConfig(p, partitions int) natsjs.StreamConfig {
	name := b.names.stream(p)
	storage := natsjs.FileStorage
	if b.cfg.memory {
		storage = natsjs.MemoryStorage
	}
	return natsjs.StreamConfig{
		Name:        name,
		Subjects:    []string{name},
		Retention:   natsjs.LimitsPolicy,
		Discard:     natsjs.DiscardNew,
		MaxMsgs:     b.cfg.maxMsgs,
		MaxBytes:    b.cfg.maxBytes,
		MaxAge:      b.cfg.maxAge,
		Storage:     storage,
		Replicas:    b.cfg.replicas,
		Duplicates:  b.cfg.duplicates,
		AllowDirect: true,
		Metadata: map[string]string{
			metaFormat:     b.cfg.format(),
			metaPartitions: strconv.Itoa(partitions),
			metaCodec:      b.cfg.codec.Name(),
			metaType:       typeName[T](),
		},
	}
}

// ensureStream creates partition p's stream, or checks that the existing
// one has the settings this backend relies on.
func (b *Backend[T]) ensureStream(ctx context.Context, p, partitions int) (natsjs.Stream, error) {
	want := b.streamConfig(p, partitions)
	s, err := b.js.Stream(ctx, want.Name)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		s, err = b.js.CreateStream(ctx, want)
		if errors.Is(err, natsjs.ErrStreamNameAlreadyInUse) { // another process created it meanwhile
			s, err = b.js.Stream(ctx, want.Name)
		}
	}
	if err != nil {
		return nil, streamErr(want.Name, "open", err)
	}
	if err := checkStream(want, s.CachedInfo().Config); err != nil {
		return nil, err
	}
	return s, nil
}

// checkStream compares what a stream has with what this backend asks for.
// Only what changes the storage's guarantees or the meaning of its data is
// compared; what the server adds (its own metadata, defaults) is not.
func checkStream(want, got natsjs.StreamConfig) error {
	mismatch := func(setting string, stored, asked any) error {
		return &MismatchError{Stream: want.Name, Setting: setting, Stored: stored, Asked: asked}
	}
	for _, k := range []string{metaFormat, metaPartitions, metaCodec, metaType} {
		if got.Metadata[k] != want.Metadata[k] {
			setting := strings.TrimPrefix(k, "runnel.")
			if got.Metadata[k] == "" {
				setting += " (the stream was not made by runnel)"
			}
			return mismatch(setting, got.Metadata[k], want.Metadata[k])
		}
	}
	switch {
	case !slices.Equal(got.Subjects, want.Subjects):
		return mismatch("Subjects", got.Subjects, want.Subjects)
	case got.Retention != want.Retention:
		return mismatch("Retention", got.Retention, want.Retention)
	case got.Discard != want.Discard:
		return mismatch("Discard", got.Discard, want.Discard)
	case got.Storage != want.Storage:
		return mismatch("Storage", got.Storage, want.Storage)
	case got.Replicas != want.Replicas:
		return mismatch("Replicas", got.Replicas, want.Replicas)
	case got.MaxMsgs != want.MaxMsgs:
		return mismatch("MaxMsgs", got.MaxMsgs, want.MaxMsgs)
	case got.MaxBytes != want.MaxBytes:
		return mismatch("MaxBytes", got.MaxBytes, want.MaxBytes)
	case got.MaxAge != want.MaxAge:
		return mismatch("MaxAge", got.MaxAge, want.MaxAge)
	case got.Duplicates != want.Duplicates:
		return mismatch("Duplicates", got.Duplicates, want.Duplicates)
	case !got.AllowDirect:
		return mismatch("AllowDirect", got.AllowDirect, true)
	}
	return nil
}

// streamErr wraps err of op on stream with the kind it falls under.
func streamErr(stream, op string, err error) error {
	var se *StreamError
	if errors.As(err, &se) || errors.Is(err, isb.ErrClosed) {
		return err
	}
	var me *MismatchError
	if errors.As(err, &me) {
		return err
	}
	return &StreamError{Stream: stream, Op: op, Kind: kindOf(err), Err: err}
}

// kindOf classifies an error of nats.go or the server.
func kindOf(err error) error {
	var apiErr *natsjs.APIError
	switch {
	case errors.Is(err, natsjs.ErrStreamNotFound):
		return ErrStreamDeleted
	case errors.Is(err, nats.ErrPermissionViolation), errors.As(err, &apiErr) && apiErr.Code == 403:
		return ErrDenied
	case transient(err), errors.Is(err, nats.ErrConnectionClosed):
		return ErrUnreachable
	}
	return nil
}

// Transient reports whether err, of nats.go or the server, may heal by
// itself: the server is down or restarting, the connection is
// reconnecting, a stream has no leader yet, a request timed out. The
// backend retries such failures for RetryTimeout; code that talks to the
// same server beside it (pipeline/jsstorage's state bucket) retries the
// same ones.
func Transient(err error) bool { return transient(err) }

// transient is Transient.
func transient(err error) bool {
	var apiErr *natsjs.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case natsjs.JSErrCodeJetStreamNotEnabled, natsjs.JSErrCodeJetStreamNotEnabledForAccount:
			return true
		}
		// 503: JetStream or the stream's leader is not available yet.
		return apiErr.Code == 503 && !storageFull(err)
	}
	// The same from nats.go's older JetStream API, which the leader reads
	// use (internal/kvleader: a message get, which the new API lacks).
	var oldErr *nats.APIError
	if errors.As(err, &oldErr) {
		switch oldErr.ErrorCode {
		case nats.JSErrCodeJetStreamNotEnabled, nats.JSErrCodeJetStreamNotEnabledForAccount:
			return true
		}
		return oldErr.Code == 503
	}
	return errors.Is(err, errNotYet) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, natsjs.ErrNoStreamResponse) ||
		errors.Is(err, natsjs.ErrAsyncPublishTimeout) || errors.Is(err, natsjs.ErrTooManyStalledMsgs) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrReconnectBufExceeded) || errors.Is(err, natsjs.ErrJetStreamPublisherClosed)
}

// jsErrStoreFailed is the server's code for a message it could not store,
// which with DiscardNew includes a stream at its limits.
const jsErrStoreFailed = 10077

// storageFull reports whether err is the stream refusing a message at its
// MaxMsgs or MaxBytes (DiscardNew).
func storageFull(err error) bool {
	var apiErr *natsjs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrStoreFailed {
		return false
	}
	return strings.Contains(apiErr.Description, "maximum messages") || strings.Contains(apiErr.Description, "maximum bytes")
}
