package bytesize

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"1", 1}, {"0", 0}, {"7B", 7}, {"1 byte", 1}, {"1000 bytes", 1000},
		{"256KiB", 256 << 10}, {"1MiB", 1 << 20}, {" 2GiB ", 2 << 30}, {"1TiB", 1 << 40},
		{"2KB", 2000}, {"3 MB", 3e6}, {"4GB", 4e9}, {"5TB", 5e12},
	} {
		if got, err := Parse(tt.in); err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "KiB", "-1", "1.5MiB", "1 KiB B", "0x10", "1PiB", "4194304TiB", "99999999999999999999", "1e3"} {
		if n, err := Parse(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %d, %v; want ErrSyntax", in, n, err)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1: "1 byte", 1000: "1000 bytes", 1 << 10: "1KiB", 1536: "1536 bytes",
		96 << 20: "96MiB", 2 << 30: "2GiB", 3 << 40: "3TiB", 1<<40 + 1<<30: "1025GiB",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("256KiB", int64(96<<20))
	f.Add("1 byte", int64(1))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if got, err := Parse(s); err == nil && (got < 0 || got >= 1<<62) {
			t.Fatalf("Parse(%q) = %d: out of range", s, got)
		}
		if n < 0 || n >= 1<<62 {
			return
		}
		if got, err := Parse(Format(n)); err != nil || got != n {
			t.Fatalf("Parse(Format(%d) = %q) = %d, %v", n, Format(n), got, err)
		}
	})
}
