package testutil

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
)

// HoldsSecret reports whether b holds marker as is, hex-encoded or
// base64-encoded (standard or URL alphabet, at any of the three byte
// alignments, the groups it shares with its neighbours left out): the
// ways a record would carry a file's content. marker must be at least 9
// bytes long so that every alignment leaves something to look for.
func HoldsSecret(b []byte, marker string) bool {
	needles := []string{marker, hex.EncodeToString([]byte(marker))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := range 3 {
			s := enc.EncodeToString(append(make([]byte, k), marker...))
			start := 0
			if k > 0 {
				start = 4 // the group holding the k bytes before
			}
			needles = append(needles, s[start:len(s)-4]) // and the one after
		}
	}
	for _, n := range needles {
		if bytes.Contains(b, []byte(n)) {
			return true
		}
	}
	return false
}
