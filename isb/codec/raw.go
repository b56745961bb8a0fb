package codec

import (
	"fmt"
	"reflect"
	"unsafe"
)

// TypeError reports why Raw rejected a type: the path of the first field
// (or array element) that holds a pointer or has no fixed size.
type TypeError struct {
	Type reflect.Type // the type given to Raw
	Path string       // e.g. "Order.Customer.Name"; the type name when T itself is rejected
	Kind reflect.Kind // the rejected kind, e.g. reflect.String
}

// Error names the type, the rejected field path and its kind.
func (e *TypeError) Error() string {
	return fmt.Sprintf("codec: raw cannot copy %v: %s is a %v (only fixed-size values without pointers: bools, numbers, arrays and structs of them)", e.Type, e.Path, e.Kind)
}

// Is makes errors.Is(err, ErrUnsupportedType) true.
func (e *TypeError) Is(target error) bool { return target == ErrUnsupportedType }

// Raw returns a codec that stores the memory of T as is. T must have a fixed
// size and hold no pointers: bools, integers, floats, complex numbers, and
// arrays and structs of those. Strings, slices, maps, pointers, interfaces,
// channels, functions and uintptr (often a disguised pointer) are rejected
// with a *TypeError naming the field.
//
// The bytes use the machine's byte order and Go's field layout, padding
// included: they are not portable across architectures or changes of T.
func Raw[T any]() (Codec[T], error) {
	t := reflect.TypeFor[T]()
	if err := checkRaw(t, t, t.String()); err != nil {
		return nil, err
	}
	return rawCodec[T]{size: int(t.Size())}, nil
}

// checkRaw walks t and returns the first part that is not plain memory.
func checkRaw(root, t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return nil
	case reflect.Array:
		return checkRaw(root, t.Elem(), path+"[]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if err := checkRaw(root, f.Type, path+"."+f.Name); err != nil {
				return err
			}
		}
		return nil
	default:
		return &TypeError{Type: root, Path: path, Kind: t.Kind()}
	}
}

type rawCodec[T any] struct{ size int }

func (rawCodec[T]) Name() string { return "raw" }

func (c rawCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&v)), c.size)...), nil
}

func (c rawCodec[T]) Decode(src []byte, v *T) error {
	if len(src) != c.size {
		return &Error{Codec: "raw", Op: opDecode, Err: fmt.Errorf("got %d bytes, %v needs exactly %d", len(src), reflect.TypeFor[T](), c.size)}
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(v)), c.size), src)
	return nil
}
