package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
	printer     = message.NewPrinter(language.English)
)

// compileSchema compiles (and caches by content) a JSON Schema document.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	key := string(canonicalJSON(raw))
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s, ok := schemaCache[key]; ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///params.json", doc); err != nil {
		return nil, err
	}
	s, err := c.Compile("mem:///params.json")
	if err != nil {
		return nil, err
	}
	if len(schemaCache) > 1024 {
		schemaCache = map[string]*jsonschema.Schema{}
	}
	schemaCache[key] = s
	return s, nil
}

// roundTrip turns a Go value into the plain JSON form the validator wants
// (float64 numbers become json.Number-free values it understands).
func roundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func asValidationError(err error, target **jsonschema.ValidationError) bool {
	return errors.As(err, target)
}

// leaves returns the innermost causes of a validation error.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func leafMessage(ve *jsonschema.ValidationError) string {
	return ve.ErrorKind.LocalizedString(printer)
}

// pointer renders an instance location as a JSON Pointer.
func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		s = strings.ReplaceAll(s, "~", "~0")
		b.WriteString(strings.ReplaceAll(s, "/", "~1"))
	}
	return b.String()
}
