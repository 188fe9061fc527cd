package schematest

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaJSON is the A2A project's schema bundle, kept in the repository so
// the tests need nothing beside it; testdata/README.md says where it comes
// from and under which licence.
//
//go:embed testdata/a2a-v1.0.0.schema.json
var schemaJSON []byte

// SchemaFile names the embedded schema in messages.
const SchemaFile = "internal/schematest/testdata/a2a-v1.0.0.schema.json"

// base is the URL every definition is registered under. The schema was
// generated from one file per proto message, so its $refs name sibling files
// ("lf.a2a.v1.Task.jsonschema.json"); registering each definition as its own
// resource in one directory lets those relative refs resolve unchanged.
const base = "https://a2a-protocol.org/schema/v1.0.0/"

// wellKnown are the google.protobuf definitions; everything else is lf.a2a.v1.
var wellKnown = map[string]bool{"Struct": true, "Timestamp": true, "Value": true}

type compiled struct {
	schemas map[string]*jsonschema.Schema
	names   []string
	err     error
}

var (
	once  sync.Once
	state compiled
)

// Validate fails t (without stopping it) when payload is not valid JSON or
// does not match definition; it stops t when the schema itself cannot be
// loaded or definition does not exist.
func Validate(t testing.TB, definition string, payload []byte) {
	t.Helper()
	report(t, definition, check(definition, payload), payload)
}

// Check is Validate without a testing.TB, for fuzz targets and helpers that
// want to branch on the result.
func Check(definition string, payload []byte) error {
	return check(definition, payload)
}

// Definitions lists the schema's definition names, sorted.
func Definitions() ([]string, error) {
	once.Do(load)
	if state.err != nil {
		return nil, state.err
	}
	return slices.Clone(state.names), nil
}

type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

func check(definition string, payload []byte) error {
	once.Do(load)
	if state.err != nil {
		return &setupError{state.err}
	}
	sch, ok := state.schemas[definition]
	if !ok {
		return &setupError{fmt.Errorf("no definition %q in the schema (have %s)", definition, strings.Join(state.names, ", "))}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return sch.Validate(doc)
}

func load() {
	state.err = func() error {
		path := SchemaFile
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		top, ok := doc.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: top level is not an object", path)
		}
		defs, ok := top["definitions"].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: no definitions object", path)
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		c.UseLoader(noLoader{})
		for name, def := range defs {
			if err := c.AddResource(resourceURL(name), def); err != nil {
				return fmt.Errorf("add %q: %w", name, err)
			}
		}
		state.schemas = make(map[string]*jsonschema.Schema, len(defs))
		for name := range defs {
			sch, err := c.Compile(resourceURL(name))
			if err != nil {
				return fmt.Errorf("compile %q: %w", name, err)
			}
			state.schemas[name] = sch
			state.names = append(state.names, name)
		}
		slices.Sort(state.names)
		return nil
	}()
}

// resourceURL turns a definition name such as "Agent Card" into the file name
// its $refs use: lf.a2a.v1.AgentCard.jsonschema.json.
func resourceURL(name string) string {
	pkg := "lf.a2a.v1."
	if wellKnown[name] {
		pkg = "google.protobuf."
	}
	return base + pkg + strings.ReplaceAll(name, " ", "") + ".jsonschema.json"
}

// noLoader keeps compilation offline: every $ref must name a definition.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("unresolved $ref %s (no such definition)", url)
}

func abbreviate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
