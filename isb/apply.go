package isb

import (
	"fmt"
	"strings"
)

// ApplyOptions applies opts to c in order: the one way runnel's packages
// apply their functional options, so a nil option means the same
// everywhere. A nil option is refused with NilOption's error and nothing
// after it is applied.
func ApplyOptions[C any, O ~func(*C)](c *C, kind string, opts []O) error {
	for i, o := range opts {
		if o == nil {
			return NilOption(kind, i, len(opts))
		}
		o(c)
	}
	return nil
}

// NilOption is the error for a nil option at index i of n options of the
// given kind (e.g. "vertex.Option"): an *OptionError naming the kind and
// the position. A nil option is refused, never skipped: it usually comes
// from an option variable left unset, and skipping it would hide that the
// caller's setting was lost. Packages whose options are not plain
// func(*config) values (they validate as they apply) call it from their
// own loop; the others use ApplyOptions.
func NilOption(kind string, i, n int) error {
	pkg, _, _ := strings.Cut(kind, ".")
	return &OptionError{Package: pkg, Option: kind, Value: nil,
		Reason: fmt.Sprintf("must not be nil (option %d of %d)", i+1, n)}
}
