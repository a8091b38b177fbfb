//go:build !unix

package pin

import "errors"

func helperHold() { helperFail(errors.New("no flock on this platform")) }
