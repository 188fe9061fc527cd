package schedsvc

import (
	"errors"
	"slices"
	"strings"
	"time"
	// The zones' rules for a host that has no zone database (a scratch
	// container) or lacks a zone.
	_ "time/tzdata"
)

//go:generate go run zones_gen.go

// Which time zone names a schedule takes must not depend on the host: a
// config one replica takes, every replica must take, and read alike.
// time.LoadLocation reads the host's zone directory before the binary's
// own copy, so it takes names only some hosts have: the posix/ and
// right/ copies of the database (right/ zones count leap seconds, which
// no clock here does), names an older database had, Local and
// localtime (whatever zone the host is in), a newer database's zones,
// and, on a case-insensitive file system, any spelling of a name. So a
// name is taken when it is one of the binary's own database (zoneNames,
// written from the time/tzdata it embeds), byte for byte, and only then
// loaded.

// loadZone reads a schedule's time zone: a name of the IANA database the
// binary embeds.
func loadZone(name string) (*time.Location, error) {
	if _, known := slices.BinarySearch(zoneNames[:], name); !known {
		return nil, zoneRefusal(name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		// The host has a file by the name that is no zone, and the
		// binary's copy could not be read.
		return nil, errors.New("time zone " + quote(name) + " could not be read: " + err.Error())
	}
	return loc, nil
}

// zoneRefusal says why name is not taken, and what to give instead when
// that is plain.
func zoneRefusal(name string) error {
	for _, prefix := range []string{"posix/", "right/"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			msg := "time zone " + quote(name) + " is refused: the " + prefix +
				" copies of the zone database are not taken (their presence depends on the host, and right/ zones count leap seconds)"
			if _, known := slices.BinarySearch(zoneNames[:], rest); known {
				return errors.New(msg + "; give " + quote(rest))
			}
			return errors.New(msg + "; give an IANA name such as Europe/Berlin")
		}
	}
	if len(name) <= 64 {
		for _, z := range zoneNames {
			if strings.EqualFold(z, name) {
				return errors.New("unknown time zone " + quote(name) + ": names are case-sensitive; give " + quote(z))
			}
		}
	}
	return errors.New("unknown time zone " + quote(name) + ": give an IANA name such as Europe/Berlin or UTC (this server knows the " +
		zoneDatabase + " database)")
}
