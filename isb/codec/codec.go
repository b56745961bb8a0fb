package codec

import (
	"errors"
	"fmt"
)

// Codec turns values of T into bytes and back. Implementations are safe for
// concurrent use.
type Codec[T any] interface {
	// Name identifies the codec in errors and logs, e.g. "json".
	Name() string
	// Append appends the encoding of v to dst and returns the extended
	// slice. On error the returned slice is dst unchanged in length.
	Append(dst []byte, v T) ([]byte, error)
	// Decode replaces *v with the value encoded in src. It does not retain
	// src. Fields absent from src are left at their zero value, not at
	// whatever *v held before.
	Decode(src []byte, v *T) error
}

// Sentinel errors, matched with errors.Is.
var (
	// ErrEncode is matched by every encode failure (an *Error with Op "encode").
	ErrEncode = errors.New("codec: encode failed")
	// ErrDecode is matched by every decode failure (an *Error with Op "decode").
	ErrDecode = errors.New("codec: decode failed")
	// ErrUnsupportedType is matched by every *TypeError: Raw was asked for a
	// type it cannot copy as bytes.
	ErrUnsupportedType = errors.New("codec: unsupported type")
)

// Error reports a failed encode or decode. It unwraps to the underlying
// serializer's error and matches ErrEncode or ErrDecode.
type Error struct {
	Codec string // "json", "msgpack" or "raw"
	Op    string // "encode" or "decode"
	Err   error
}

// Error names the codec, the operation and the underlying error.
func (e *Error) Error() string { return fmt.Sprintf("codec: %s %s: %v", e.Codec, e.Op, e.Err) }

// Unwrap returns the underlying serializer's error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrEncode) or errors.Is(err, ErrDecode) true.
func (e *Error) Is(target error) bool {
	return (target == ErrEncode && e.Op == opEncode) || (target == ErrDecode && e.Op == opDecode)
}

const (
	opEncode = "encode"
	opDecode = "decode"
)
