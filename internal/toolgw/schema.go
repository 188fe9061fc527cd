package toolgw

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// maxSchemaBytes bounds a tool's input schema the gateway compiles.
const maxSchemaBytes = 256 << 10

// schemas compiles tools' input schemas once and checks calls' arguments
// against them. A tool's schema comes from its provider, an upstream
// server among them, so it is untrusted: it may reference nothing outside
// itself.
type schemas struct {
	mu sync.Mutex
	m  map[[32]byte]*compiledSchema
}

type compiledSchema struct {
	s   *jsonschema.Schema
	err error
}

const maxCachedSchemas = 4096

// validate checks args (decoded with encoding/json) against t's input
// schema. A tool without one takes any object.
func (sc *schemas) validate(t *Tool, args map[string]any) error {
	raw := t.InputSchema
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	key := sha256.Sum256(raw)
	sc.mu.Lock()
	if sc.m == nil {
		sc.m = map[[32]byte]*compiledSchema{}
	}
	c, ok := sc.m[key]
	sc.mu.Unlock()
	if !ok {
		c = compileSchema(raw)
		sc.mu.Lock()
		if len(sc.m) >= maxCachedSchemas {
			clear(sc.m)
		}
		sc.m[key] = c
		sc.mu.Unlock()
	}
	if c.err != nil {
		return fmt.Errorf("the tool's schema cannot be used: %w", c.err)
	}
	// The validator reads numbers as json.Number or float64 alike; an
	// object decoded by encoding/json is what it expects.
	obj := make(map[string]any, len(args))
	for k, v := range args {
		obj[k] = v
	}
	if err := c.s.Validate(obj); err != nil {
		if ve, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
			return errors.New(leafError(ve))
		}
		return err
	}
	return nil
}

// leafError is the first innermost cause of a validation error: where
// the arguments broke which rule.
func leafError(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := "/"
	if len(ve.InstanceLocation) > 0 {
		loc = ""
		for _, p := range ve.InstanceLocation {
			loc += "/" + p
		}
	}
	return clip(fmt.Sprintf("at %s: %s", loc, ve.ErrorKind.LocalizedString(printer)))
}

func compileSchema(raw []byte) *compiledSchema {
	if len(raw) > maxSchemaBytes {
		return &compiledSchema{err: fmt.Errorf("over %d bytes", maxSchemaBytes)}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &compiledSchema{err: err}
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	const loc = "urn:novaos:tool-input"
	if err := comp.AddResource(loc, doc); err != nil {
		return &compiledSchema{err: err}
	}
	s, err := comp.Compile(loc)
	return &compiledSchema{s: s, err: err}
}

// noLoader refuses every reference out of a schema: a file or URL named
// by an upstream's schema is never read.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %q; schemas may not refer outside themselves", clip(url))
}
