package schematest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaPath is where the schema sits relative to the module root.
const SchemaPath = "../shared/a2a/a2a-v1.0.0.schema.json"

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
	if err := check(definition, payload); err != nil {
		var setup *setupError
		if errors.As(err, &setup) {
			t.Fatalf("schematest: %v", err)
		}
		t.Errorf("schematest: %s: %v\npayload: %s", definition, err, abbreviate(payload, 2000))
	}
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
		root, err := ModuleRoot()
		if err != nil {
			return err
		}
		path := filepath.Join(root, filepath.FromSlash(SchemaPath))
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("open schema (expected beside the repository): %w", err)
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
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

// ModuleRoot walks up from the working directory to the directory holding
// go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

func abbreviate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
