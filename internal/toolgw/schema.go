package toolgw

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"novaos.dev/novaos/schemacheck"
)

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
		// The first rule broken is enough for the caller to fix its call.
		return errors.New(clip(schemacheck.Messages(err)[0]))
	}
	return nil
}

func compileSchema(raw []byte) *compiledSchema {
	if len(raw) > maxSchemaBytes {
		return &compiledSchema{err: fmt.Errorf("over %d bytes", maxSchemaBytes)}
	}
	s, err := schemacheck.Compile(json.RawMessage(raw), maxSchemaBytes)
	return &compiledSchema{s: s, err: err}
}
