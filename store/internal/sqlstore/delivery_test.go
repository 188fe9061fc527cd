package sqlstore

import (
	"encoding/json"
	"errors"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/delivery"
)

func TestPlanAppend(t *testing.T) {
	ev := func(agent, id, key string) delivery.StoredEvent {
		return delivery.StoredEvent{AgentID: agent, TenantID: "acme", ID: id, Type: "t", DedupeKey: key, Payload: json.RawMessage(`{}`)}
	}
	storedK := ev("a", "old", "k")
	storedK.Seq = 4
	for _, c := range []struct {
		name   string
		events []delivery.StoredEvent
		heads  map[string]int64 // before
		new    []int
		ranks  []int64
		seqs   []int64 // of the answer
		ids    []string
		after  map[string]int64
	}{
		{
			name:   "new events of two agents",
			events: []delivery.StoredEvent{ev("a", "1", ""), ev("b", "2", ""), ev("a", "3", "x")},
			heads:  map[string]int64{"a": 7},
			new:    []int{0, 1, 2}, ranks: []int64{1, 1, 2},
			seqs: []int64{8, 1, 9}, ids: []string{"1", "2", "3"},
			after: map[string]int64{"a": 9, "b": 1},
		},
		{
			name:   "a stored key and a repeat within the batch",
			events: []delivery.StoredEvent{ev("a", "1", "k"), ev("a", "2", "j"), ev("a", "3", "j"), ev("b", "4", "k"), ev("a", "5", "")},
			heads:  map[string]int64{"a": 7},
			new:    []int{1, 3, 4}, ranks: []int64{1, 1, 2},
			seqs: []int64{4, 8, 8, 1, 9}, ids: []string{"old", "2", "2", "4", "5"},
			after: map[string]int64{"a": 9, "b": 1},
		},
		{
			name:   "only repeats",
			events: []delivery.StoredEvent{ev("a", "1", "k"), ev("a", "2", "k")},
			seqs:   []int64{4, 4}, ids: []string{"old", "old"},
			after: map[string]int64{},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanAppend(c.events, func(agent, key string) (delivery.StoredEvent, bool, error) {
				if agent == "a" && key == "k" {
					return storedK, true, nil
				}
				return delivery.StoredEvent{}, false, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := gocmp.Diff(c.new, p.New); d != "" {
				t.Errorf("New (-want +got):\n%s", d)
			}
			if d := gocmp.Diff(c.ranks, p.Ranks()); len(c.ranks) > 0 && d != "" {
				t.Errorf("Ranks (-want +got):\n%s", d)
			}
			after, err := p.Number(func(agent string) (int64, error) { return c.heads[agent], nil })
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			var ids []string
			for _, e := range p.Out {
				seqs, ids = append(seqs, e.Seq), append(ids, e.ID)
			}
			if d := gocmp.Diff(c.seqs, seqs); d != "" {
				t.Errorf("sequences (-want +got):\n%s", d)
			}
			if d := gocmp.Diff(c.ids, ids); d != "" {
				t.Errorf("ids (-want +got):\n%s", d)
			}
			if d := gocmp.Diff(c.after, after); d != "" {
				t.Errorf("heads after (-want +got):\n%s", d)
			}
		})
	}
	// Repeats within a batch are answered with copies of their own.
	p, _ := PlanAppend([]delivery.StoredEvent{ev("a", "1", "j"), ev("a", "2", "j")}, func(string, string) (delivery.StoredEvent, bool, error) {
		return delivery.StoredEvent{}, false, nil
	})
	p.Number(func(string) (int64, error) { return 0, nil })
	p.Out[0].Payload[0] = 'X'
	if string(p.Out[1].Payload) != `{}` {
		t.Errorf("a repeat shares its payload with the event it repeats")
	}
	// A lookup's failure is the plan's.
	boom := errors.New("boom")
	if _, err := PlanAppend([]delivery.StoredEvent{ev("a", "1", "k")}, func(string, string) (delivery.StoredEvent, bool, error) {
		return delivery.StoredEvent{}, false, boom
	}); !errors.Is(err, boom) {
		t.Errorf("PlanAppend with a failing lookup = %v", err)
	}
}
