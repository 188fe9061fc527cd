package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// walk is Check through encoding/json's tokens: slow, and the one that
// says what is wrong.
func walk(data []byte, c *config) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{in: data, dec: dec, c: c}
	t, err := dec.Token()
	if err != nil {
		return &Error{Problem: Syntax, Path: "$", Err: err}
	}
	if d, ok := t.(json.Delim); c.Object && (!ok || d != '{') {
		return &Error{Problem: NotObject, Path: "$"}
	}
	if err := w.value(t, 0, c.Fields); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &Error{Problem: Trailing, Path: "$"}
	}
	return nil
}

// walker checks one document's tokens. The path to the current value is
// kept as steps and spelled out only for an error: most documents have
// none, and building every member's path cost more than the walk.
type walker struct {
	in    []byte
	base  int // where in the document in starts
	dec   *json.Decoder
	c     *config
	steps []step
}

func (w *walker) fail(problem string, err error) error {
	return &Error{Problem: problem, Path: render(w.steps), Err: err}
}

// value checks the value that starts with token t; depth counts the
// containers around it.
func (w *walker) value(t json.Token, depth int, f *Fields) error {
	d, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	if depth+1 > w.c.MaxDepth {
		return &Error{Problem: Depth, Path: render(w.steps), Limit: w.c.MaxDepth}
	}
	switch d {
	case '{':
		return w.object(depth+1, f)
	case '[':
		for i := 0; w.dec.More(); i++ {
			w.steps = append(w.steps, step{index: i})
			if err := w.next(depth+1, f.items()); err != nil {
				return err
			}
			w.steps = w.steps[:len(w.steps)-1]
		}
		if _, err := w.dec.Token(); err != nil { // the closing bracket
			return w.fail(Syntax, err)
		}
		return nil
	}
	return w.fail(Syntax, fmt.Errorf("unexpected %v", d))
}

// next reads the next token and checks the value it starts.
func (w *walker) next(depth int, f *Fields) error {
	t, err := w.dec.Token()
	if err != nil {
		return w.fail(Syntax, err)
	}
	return w.value(t, depth, f)
}

func (w *walker) object(depth int, f *Fields) error {
	var seen map[string]struct{}
	u := f.union()
	var (
		tag       *string
		body      [2]int // where the union's body is, while it waits for its tag
		bodySteps []step
	)
	for w.dec.More() {
		t, err := w.dec.Token()
		if err != nil {
			return w.fail(Syntax, err)
		}
		name, ok := t.(string)
		if !ok {
			return w.fail(Syntax, errors.New("object key is not a string"))
		}
		w.steps = append(w.steps, step{name: name, isName: true})
		sub, known := f.member([]byte(name))
		if !known {
			return &Error{Problem: Unknown, Path: render(w.steps), Key: name}
		}
		key := w.c.key([]byte(name))
		if _, dup := seen[key]; dup {
			return &Error{Problem: Duplicate, Path: render(w.steps), Key: name}
		}
		if seen == nil {
			seen = make(map[string]struct{}, 8)
		}
		seen[key] = struct{}{}
		isBody := u != nil && name == u.Body
		switch {
		case u != nil && name == u.Tag:
			t, err := w.dec.Token()
			if err != nil {
				return w.fail(Syntax, err)
			}
			if s, ok := t.(string); ok {
				tag = &s
			}
			if err := w.value(t, depth, sub); err != nil {
				return err
			}
		case isBody && tag != nil:
			if err := w.next(depth, u.variant(*tag)); err != nil {
				return err
			}
		case isBody:
			start := w.base + int(w.dec.InputOffset())
			if err := w.next(depth, nil); err != nil {
				return err
			}
			body = [2]int{start, w.base + int(w.dec.InputOffset())}
			bodySteps = slices.Clone(w.steps)
		default:
			if err := w.next(depth, sub); err != nil {
				return err
			}
		}
		w.steps = w.steps[:len(w.steps)-1]
	}
	if _, err := w.dec.Token(); err != nil { // the closing brace
		return w.fail(Syntax, err)
	}
	if bodySteps != nil && tag != nil {
		return w.again(body, bodySteps, depth, u.variant(*tag))
	}
	return nil
}

// again walks the value at in[span[0]:span[1]] (after a member name: a
// colon, then the value) once more under f, for a union body read before
// its tag.
func (w *walker) again(span [2]int, steps []step, depth int, f *Fields) error {
	in := w.in[span[0]-w.base : span[1]-w.base]
	i := skipSpace(in, 0)
	if i < len(in) && in[i] == ':' {
		i++
	}
	sub := walker{in: in[i:], base: span[0] + i, dec: json.NewDecoder(bytes.NewReader(in[i:])), c: w.c, steps: steps}
	sub.dec.UseNumber()
	return sub.next(depth, f)
}
