package execgw

import (
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
)

// The revocation cache: bounded, newer news wins, an ending is for good,
// and news of later events drops what was known of a live run.
func TestRunStates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	known := func(c *runStates, id string, now time.Time) (ended, ok bool) {
		_, ended, ok = c.get(id, now)
		return ended, ok
	}

	t.Run("bounded", func(t *testing.T) {
		c := newRunStates(2)
		c.put("a", "t", false, at(10), 1)
		c.put("b", "t", false, at(10), 1)
		c.get("a", t0) // a is the most recent now
		c.put("c", "t", false, at(10), 1)
		for id, want := range map[string]bool{"a": true, "b": false, "c": true} {
			if _, ok := known(c, id, t0); ok != want {
				t.Errorf("%s known: %v, want %v", id, ok, want)
			}
		}
	})

	t.Run("newer news wins", func(t *testing.T) {
		c := newRunStates(8)
		c.put("a", "t", false, at(1), 5)
		c.update("a", false, at(9), 4) // older than what is known
		if _, ok := known(c, "a", at(2)); ok {
			t.Fatal("older news extended a live run's trust")
		}
		c.update("a", false, at(9), 5) // the same events, read again
		if _, ok := known(c, "a", at(2)); !ok {
			t.Fatal("news of the same events did not extend the trust")
		}
		c.put("a", "t", false, at(20), 7)
		if _, ok := known(c, "a", at(15)); !ok {
			t.Fatal("newer news did not extend the trust")
		}
		c.update("missing", true, at(9), 1)
		if _, ok := known(c, "missing", t0); ok {
			t.Fatal("update made an entry")
		}
	})

	t.Run("an ending is for good", func(t *testing.T) {
		c := newRunStates(8)
		c.put("a", "t", false, at(1), 1)
		c.update("a", true, at(1), 2)
		c.update("a", false, at(1), 3)
		c.forget("a", 9)
		c.forget("", -1)
		if ended, ok := known(c, "a", at(100)); !ok || !ended {
			t.Fatalf("ended run: ended %v, known %v", ended, ok)
		}
	})

	t.Run("forget", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			seq  int64
			id   string
			last int64
			kept bool
		}{
			{"news of what was read", 5, "a", 5, true},
			{"news of older events", 5, "a", 4, true},
			{"news of a later event", 5, "a", 6, false},
			{"news lost", 5, "a", -1, false},
			{"news of the first event of a run read empty", 0, "a", 0, true},
			{"news lost for every run", 5, "", -1, false},
			{"news lost for every run, said with 0", 5, "", 0, false},
			{"news of another run", 5, "b", 9, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := newRunStates(8)
				c.put("a", "t", false, at(10), tc.seq)
				c.forget(tc.id, tc.last)
				if _, ok := known(c, "a", t0); ok != tc.kept {
					t.Fatalf("kept %v, want %v", ok, tc.kept)
				}
			})
		}
	})
}

// remember tells the cache of a run this process delivers, and only
// updates what it knows of any other.
func TestRemember(t *testing.T) {
	s := New(gateway.NewMemoryStore(), Deps{Tokens: noTokens{}}, nil)
	now := time.Unix(1000, 0)
	mine := gateway.Run{ID: "mine", TenantID: "t", Status: gateway.StatusRunning, LeaseOwner: s.owner, LastSequence: 2}
	theirs := gateway.Run{ID: "theirs", TenantID: "t", Status: gateway.StatusRunning, LeaseOwner: "other", LastSequence: 2}
	ended := gateway.Run{ID: "ended", TenantID: "t", Status: gateway.StatusCompleted, LastSequence: 4}
	for _, r := range []*gateway.Run{&mine, &theirs, &ended} {
		s.remember(r, now)
	}
	for id, want := range map[string]bool{"mine": true, "theirs": false, "ended": false} {
		if _, _, ok := s.revocations.get(id, now); ok != want {
			t.Errorf("%s known: %v, want %v", id, ok, want)
		}
	}
	// Once the run delivered here ends, that is known.
	mine.Status, mine.LastSequence = gateway.StatusCancelled, 4
	s.remember(&mine, now)
	if _, isEnded, ok := s.revocations.get("mine", now.Add(time.Hour)); !ok || !isEnded {
		t.Fatalf("the ended run: known %v, ended %v", ok, isEnded)
	}
}
