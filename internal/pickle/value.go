package pickle

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/nlpodyssey/gopickle/types"
)

// ShortValue formats a decoded pickle value for an error message, cut to a readable length.
// Decoded values can nest deeply, share parts and contain themselves: the formatting looks
// at most two levels down and stops at 80 characters.
func ShortValue(v any) string {
	var b strings.Builder
	writeShortValue(&b, v, 2)
	s := b.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func writeShortValue(b *strings.Builder, v any, depth int) {
	if b.Len() > 80 {
		return
	}
	switch x := v.(type) {
	case string:
		if len(x) > 80 {
			x = x[:80]
		}
		fmt.Fprintf(b, "%q", x)
	case []byte:
		if len(x) > 80 {
			x = x[:80]
		}
		fmt.Fprintf(b, "b%q", x)
	case nil:
		b.WriteString("None")
	case int, bool, float64, *big.Int:
		fmt.Fprint(b, x)
	case *types.Tuple:
		if depth == 0 {
			fmt.Fprintf(b, "a tuple of %d items", x.Len())
			return
		}
		b.WriteString("(")
		for i := range x.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			if b.Len() > 80 {
				b.WriteString("...")
				break
			}
			writeShortValue(b, x.Get(i), depth-1)
		}
		b.WriteString(")")
	case *types.List:
		fmt.Fprintf(b, "a list of %d items", x.Len())
	case *types.Dict:
		fmt.Fprintf(b, "a dict of %d items", x.Len())
	default:
		// Not %v: containers decoded from a pickle may contain themselves.
		fmt.Fprintf(b, "a value of type %T", x)
	}
}
