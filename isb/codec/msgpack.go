package codec

import "github.com/vmihailenco/msgpack/v5"

// MsgPack returns the MessagePack codec (github.com/vmihailenco/msgpack/v5).
// Struct fields are encoded by name, as msgpack tags (or field names) say.
func MsgPack[T any]() Codec[T] { return msgpackCodec[T]{} }

type msgpackCodec[T any] struct{}

func (msgpackCodec[T]) Name() string { return "msgpack" }

func (msgpackCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return dst, &Error{Codec: "msgpack", Op: opEncode, Err: err}
	}
	return append(dst, b...), nil
}

func (msgpackCodec[T]) Decode(src []byte, v *T) error {
	// Like JSON, msgpack decodes into the existing value; reset it first.
	var zero T
	*v = zero
	if err := msgpack.Unmarshal(src, v); err != nil {
		return &Error{Codec: "msgpack", Op: opDecode, Err: err}
	}
	return nil
}
