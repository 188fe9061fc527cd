package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// walk is Check through encoding/json's tokens: slow, and the one that
// says what is wrong.
func walk(data []byte, c *config) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, c: c}
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
		if err := w.next(depth, sub); err != nil {
			return err
		}
		w.steps = w.steps[:len(w.steps)-1]
	}
	if _, err := w.dec.Token(); err != nil { // the closing brace
		return w.fail(Syntax, err)
	}
	return nil
}
