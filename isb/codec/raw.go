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
// Decode refuses a bool byte other than 0 or 1 with a *BoolError (under an
// *Error matching ErrDecode), since arbitrary bytes would make invalid bools.
func Raw[T any]() (Codec[T], error) {
	t := reflect.TypeFor[T]()
	if err := checkRaw(t, t, t.String()); err != nil {
		return nil, err
	}
	return rawCodec[T]{size: int(t.Size()), bools: boolRuns(t, 0, nil)}, nil
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

// BoolError is the cause (under an *Error matching ErrDecode) when Raw
// decodes a byte other than 0 or 1 into a bool: Go assumes a bool's byte is
// one of those two, so any other value would make the decoded item behave
// unpredictably (true and not equal to true at once).
type BoolError struct {
	Path   string // the bool's field path, e.g. "pkg.T.Flags[3]"
	Offset int    // the byte's offset in the decoded input
	Value  byte   // the byte found
}

// Error names the field, the byte offset and the byte found.
func (e *BoolError) Error() string {
	return fmt.Sprintf("byte %d (%s) is 0x%02x, a bool must be 0 or 1", e.Offset, e.Path, e.Value)
}

// boolRun is a run of n consecutive bool bytes starting at off.
type boolRun struct{ off, n int }

// boolRuns appends the bool bytes of t, placed at base, to runs, merging
// adjacent ones so that a [N]bool costs one run, not N.
func boolRuns(t reflect.Type, base int, runs []boolRun) []boolRun {
	switch t.Kind() {
	case reflect.Bool:
		if k := len(runs) - 1; k >= 0 && runs[k].off+runs[k].n == base {
			runs[k].n++
			return runs
		}
		return append(runs, boolRun{off: base, n: 1})
	case reflect.Array:
		size := int(t.Elem().Size())
		for i := range t.Len() {
			runs = boolRuns(t.Elem(), base+i*size, runs)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			runs = boolRuns(f.Type, base+int(f.Offset), runs)
		}
	}
	return runs
}

// boolPath names the bool at byte off of t; it is only called on the error
// path, so the codec keeps offsets, not one string per bool.
func boolPath(t reflect.Type, off int, path string) string {
	switch t.Kind() {
	case reflect.Array:
		size := int(t.Elem().Size())
		i := off / size
		return boolPath(t.Elem(), off-i*size, fmt.Sprintf("%s[%d]", path, i))
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if off >= int(f.Offset) && off < int(f.Offset+f.Type.Size()) {
				return boolPath(f.Type, off-int(f.Offset), path+"."+f.Name)
			}
		}
	}
	return path
}

type rawCodec[T any] struct {
	size  int
	bools []boolRun // where T holds bools, checked on decode
}

func (rawCodec[T]) Name() string { return "raw" }

func (c rawCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&v)), c.size)...), nil
}

func (c rawCodec[T]) Decode(src []byte, v *T) error {
	if len(src) != c.size {
		return &Error{Codec: "raw", Op: opDecode, Err: fmt.Errorf("got %d bytes, %v needs exactly %d", len(src), reflect.TypeFor[T](), c.size)}
	}
	// Check before copying, so that *v never holds an invalid bool.
	for _, r := range c.bools {
		for i := r.off; i < r.off+r.n; i++ {
			if src[i] > 1 {
				t := reflect.TypeFor[T]()
				return &Error{Codec: "raw", Op: opDecode, Err: &BoolError{Path: boolPath(t, i, t.String()), Offset: i, Value: src[i]}}
			}
		}
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(v)), c.size), src)
	return nil
}
