package adapter

import (
	"errors"

	"novaos.dev/novaos/delivery"
)

// Placeholders until the client's errors land (removed at merge).
var (
	ErrBaseVersionConflict = errors.New("tmp base_version_conflict")
	ErrRunNotActive        = errors.New("tmp run_not_active")
	ErrRunInactive         = errors.New("tmp run_inactive")
)

func CurrentRun(err error) (delivery.Run, bool) {
	var c interface{ CurrentRun() (delivery.Run, bool) }
	if errors.As(err, &c) {
		return c.CurrentRun()
	}
	return delivery.Run{}, false
}
