// Package bytesize reads and writes the byte sizes of mcphost's config
// and messages ("256KiB", "2GiB", "4096"), so that a size a person writes
// and the size a message gives back are spelled the same way.
package bytesize

import (
	"errors"
	"strconv"
	"strings"
)

// ErrSyntax is returned by Parse for a text that is not a size.
var ErrSyntax = errors.New("not a size")

// units are the suffixes Parse reads; each is matched as a suffix, so "B"
// comes after every other that ends with it.
var units = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"bytes", 1}, {"byte", 1}, {"B", 1},
}

// Parse reads a byte size: a whole number, optionally followed (with or
// without a space) by one of B, bytes, KiB, MiB, GiB, TiB (powers of
// 1024) or KB, MB, GB, TB (powers of 1000). It returns ErrSyntax for anything else, a
// negative number included, and for a size of 2^62 bytes or more.
func Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62-1)/mult {
		return 0, ErrSyntax
	}
	return n * mult, nil
}

// Format writes n in the largest binary unit that divides it ("96MiB"),
// else as a number of bytes ("1 byte", "1000 bytes"). For 0 <= n < 2^62,
// Parse reads what Format writes back to n.
func Format(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
