package codec

import "encoding/json"

// JSON returns the encoding/json codec, the default of durable storage.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Name() string { return "json" }

func (jsonCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, &Error{Codec: "json", Op: opEncode, Err: err}
	}
	return append(dst, b...), nil
}

func (jsonCodec[T]) Decode(src []byte, v *T) error {
	// json.Unmarshal merges into an existing value; start from zero so a
	// reused buffer never leaks fields of the previous item.
	var zero T
	*v = zero
	if err := json.Unmarshal(src, v); err != nil {
		return &Error{Codec: "json", Op: opDecode, Err: err}
	}
	return nil
}
