package execgw

import (
	"context"
	"errors"
	"fmt"

	"novaos.dev/novaos/gateway"
)

// errStop is a mutation's answer that the run is no longer its to change
// (it ended, or another dispatcher holds it): nothing is written.
var errStop = errors.New("execgw: the run moved on")

// maxMutateTries bounds the compare-and-set retries of one change: a run
// has few writers (its dispatcher, a cancel, a reply), so more conflicts
// than this mean something is wrong.
const maxMutateTries = 16

// mutate applies change to the run and writes it with the events change
// returns, retrying on a version conflict with the run read again. cur is
// the caller's latest copy (nil: read it); the stored result is returned.
// change sees a copy it may modify; an error from it is returned as it
// is, nothing written.
func (s *Service) mutate(ctx context.Context, cur *gateway.Run, id string, change func(r *gateway.Run) ([]gateway.Event, error)) (*gateway.Run, []gateway.Event, error) {
	for range maxMutateTries {
		if cur == nil {
			r, err := s.store.GetRun(ctx, "", id)
			if err != nil {
				return nil, nil, err
			}
			cur = &r
		}
		next := *cur
		events, err := change(&next)
		if err != nil {
			return cur, nil, err
		}
		stampTrace(ctx, events)
		now := s.o.Now()
		s.hub.writeBegins(id)
		stored, written, err := s.store.WriteRun(ctx, gateway.RunWrite{Run: next, ExpectVersion: cur.Version, Events: events, Now: now})
		if err != nil {
			s.hub.writeEnds(id, nil)
		}
		if errors.Is(err, gateway.ErrConflict) {
			cur = nil
			continue
		}
		if err != nil {
			return cur, nil, err
		}
		s.remember(&stored, now)
		s.tel.wrote(cur, &stored)
		s.hub.writeEnds(id, written)
		return &stored, written, nil
	}
	return nil, nil, fmt.Errorf("execgw: run %s: %w after %d tries", id, gateway.ErrConflict, maxMutateTries)
}
