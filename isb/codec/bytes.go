package codec

// Bytes returns the codec of byte slices that are their own encoding: a
// topic of []byte whose items are already encoded (the pipeline's buffers
// on storage outside package pipeline, which encodes each message itself).
// Decode gives each value its own copy, as the Codec contract asks.
func Bytes() Codec[[]byte] { return bytesCodec{} }

type bytesCodec struct{}

func (bytesCodec) Name() string { return "bytes" }

func (bytesCodec) Append(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }

func (bytesCodec) Decode(src []byte, v *[]byte) error {
	*v = append([]byte(nil), src...)
	return nil
}
