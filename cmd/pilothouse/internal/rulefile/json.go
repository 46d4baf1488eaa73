package rulefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// jsonError locates a rule file's JSON error as path:line:column, as
// editors and compilers do, with the offending line and a caret.
func jsonError(path string, b []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		return fmt.Errorf("%s: not a JSON object: %w", path, err)
	}
	if typ != nil && typ.Field == "" {
		err = fmt.Errorf("want a JSON object, found %s", typ.Value)
	}
	line, col, text := position(b, off)
	return fmt.Errorf("%s:%d:%d: %v\n  %s\n  %*s", path, line, col, err, text, col, "^")
}

// position turns a byte offset (where the decoder stopped: just past the
// offending byte, or the end) into a 1-based line and column and the
// line's text.
func position(b []byte, off int64) (line, col int, text string) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	if off > 0 {
		off-- // the decoder's offset is past the byte it stumbled on
	}
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	col = int(off) - start + 1
	end := bytes.IndexByte(b[start:], '\n')
	if end < 0 {
		end = len(b) - start
	}
	return line, col, string(bytes.TrimRight(b[start:start+end], "\r"))
}
