package a2aclient_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
)

// finisher records its Before, After and Finish calls.
type finisher struct {
	name   string
	refuse error
	mu     sync.Mutex
	log    *[]string
}

func (f *finisher) add(s string) {
	f.mu.Lock()
	*f.log = append(*f.log, s)
	f.mu.Unlock()
}

func (f *finisher) Before(ctx context.Context, call *a2aclient.Call) (context.Context, error) {
	f.add(f.name + " before " + call.Method)
	return ctx, f.refuse
}

func (f *finisher) After(ctx context.Context, call *a2aclient.Call, result any, err error) error {
	f.add(f.name + " after " + call.Method)
	return err
}

func (f *finisher) Finish(ctx context.Context, call *a2aclient.Call, err error) {
	f.add(fmt.Sprintf("%s finish %s err=%v", f.name, call.Method, err != nil))
}

func TestFinisherEndsEveryCall(t *testing.T) {
	a := newAgent(t, nil)
	deny := errors.New("denied")
	cases := []struct {
		name   string
		refuse error // the second interceptor's Before
		call   func(c *a2aclient.Client) error
		want   []string
	}{
		{"unary", nil, func(c *a2aclient.Client) error {
			_, err := c.SendMessage(t.Context(), msgReq("m1", "reply hi"))
			return err
		}, []string{
			"one before SendMessage", "two before SendMessage", "two after SendMessage", "one after SendMessage",
			"two finish SendMessage err=false", "one finish SendMessage err=false",
		}},
		{"unary error", nil, func(c *a2aclient.Client) error {
			_, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "missing"})
			if errors.Is(err, a2a.ErrTaskNotFound) {
				return nil
			}
			return err
		}, []string{
			"one before GetTask", "two before GetTask", "two after GetTask", "one after GetTask",
			"two finish GetTask err=true", "one finish GetTask err=true",
		}},
		{"refused by a later Before", deny, func(c *a2aclient.Client) error {
			if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"}); !errors.Is(err, deny) {
				return fmt.Errorf("got %v, want the refusal", err)
			}
			return nil
		}, []string{"one before GetTask", "two before GetTask", "one finish GetTask err=true"}},
		{"stream to its final frame", nil, func(c *a2aclient.Client) error {
			for _, err := range c.SendStreamingMessage(t.Context(), msgReq("m2", "reply hi")) {
				if err != nil {
					return err
				}
			}
			return nil
		}, []string{
			"one before SendStreamingMessage", "two before SendStreamingMessage",
			"two after SendStreamingMessage", "one after SendStreamingMessage", // the reply, which is final
			"two finish SendStreamingMessage err=false", "one finish SendStreamingMessage err=false",
		}},
		{"stream the consumer leaves", nil, func(c *a2aclient.Client) error {
			for _, err := range c.SendStreamingMessage(t.Context(), msgReq("m3", "steps 3")) {
				if err != nil {
					return err
				}
				break
			}
			return nil
		}, []string{
			"one before SendStreamingMessage", "two before SendStreamingMessage",
			"two after SendStreamingMessage", "one after SendStreamingMessage",
			"two finish SendStreamingMessage err=false", "one finish SendStreamingMessage err=false",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			c, err := a2aclient.New(a.card, &a2aclient.Options{Interceptors: []a2aclient.Interceptor{
				&finisher{name: "one", log: &log}, &finisher{name: "two", refuse: tc.refuse, log: &log},
			}})
			must(t, err)
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, log); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}
