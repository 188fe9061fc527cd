package adapter

import (
	"regexp"
	"strconv"

	"novaos.dev/novaos/delivery"
)

// Bounds of a heartbeat's fields.
const (
	HeartbeatMaxNameChars    = 64   // adapter and runtime names
	HeartbeatMaxVersionChars = 64   // adapter and protocol versions
	HeartbeatMaxReasonChars  = 64   // each degraded reason
	HeartbeatMaxReasons      = 16   // degraded reasons
	HeartbeatMaxActiveRuns   = 1000 // active run ids
	HeartbeatMaxRunIDChars   = 128  // each active run id
)

// The forms of a heartbeat's words: narrow enough that no path, URL,
// sentence or (mixed-case) secret fits, because the platform shows a
// heartbeat to people who must see none of those.
var (
	heartbeatName    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	heartbeatVersion = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]*$`)
	heartbeatReason  = regexp.MustCompile(`^[a-z0-9][a-z0-9_.:-]*$`)
	heartbeatRunID   = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._:-]*$`)
)

// HeartbeatInput is what an adapter tells of itself in a heartbeat.
type HeartbeatInput struct {
	// AdapterName and AdapterVersion name the adapter program: a name
	// of lower-case letters, digits and . _ - (starting with a letter or
	// digit), a version of letters, digits and . + _ -.
	AdapterName, AdapterVersion string
	// RuntimeName names the agent runtime behind the adapter, in the
	// name form.
	RuntimeName string
	// ProtocolVersion is the gateway protocol spoken (default
	// delivery.ProtocolVersion).
	ProtocolVersion string
	// Capabilities are what the agent can do beyond plain runs.
	// Followups is "", "steer" or "queue".
	Capabilities delivery.Capabilities
	// ActiveRuns are the ids of the runs this adapter is working on.
	ActiveRuns []string
	// DegradedReasons, when any, make the status degraded; each a code
	// of lower-case letters, digits and _ . : -.
	DegradedReasons []string
}

// HeartbeatError says which field of a heartbeat is not acceptable and
// why; it never repeats the field's value, which may be anything.
type HeartbeatError struct {
	// Field is the field's JSON path, such as details.adapter.name or
	// details.active_runs[2].
	Field string
	// Rule is what the field must be.
	Rule string
}

func (e *HeartbeatError) Error() string {
	return "adapter: heartbeat field " + e.Field + ": " + e.Rule
}

// BuildHeartbeat builds a heartbeat from what the adapter tells of
// itself, refusing any field outside its form or bounds with a
// *HeartbeatError: the heartbeat's details are a closed set of keys,
// and none may carry a secret, content or a path. The status is
// degraded when there are degraded reasons, else ok.
func BuildHeartbeat(in HeartbeatInput) (delivery.Heartbeat, error) {
	hb := delivery.Heartbeat{Status: delivery.HeartbeatOK}
	d := &hb.Details

	if in.AdapterName != "" || in.AdapterVersion != "" {
		if err := heartbeatWord("details.adapter.name", in.AdapterName, heartbeatName, HeartbeatMaxNameChars, "a name"); err != nil {
			return delivery.Heartbeat{}, err
		}
		if in.AdapterVersion != "" {
			if err := heartbeatWord("details.adapter.version", in.AdapterVersion, heartbeatVersion, HeartbeatMaxVersionChars, "a version"); err != nil {
				return delivery.Heartbeat{}, err
			}
		}
		d.Adapter = &delivery.NameVersion{Name: in.AdapterName, Version: in.AdapterVersion}
	}
	if in.RuntimeName != "" {
		if err := heartbeatWord("details.runtime.name", in.RuntimeName, heartbeatName, HeartbeatMaxNameChars, "a name"); err != nil {
			return delivery.Heartbeat{}, err
		}
		d.Runtime = &delivery.NameVersion{Name: in.RuntimeName}
	}
	d.ProtocolVersion = in.ProtocolVersion
	if d.ProtocolVersion == "" {
		d.ProtocolVersion = delivery.ProtocolVersion
	}
	if err := heartbeatWord("details.protocol_version", d.ProtocolVersion, heartbeatVersion, HeartbeatMaxVersionChars, "a version"); err != nil {
		return delivery.Heartbeat{}, err
	}

	switch in.Capabilities.Followups {
	case "", "steer", "queue":
	default:
		return delivery.Heartbeat{}, &HeartbeatError{"details.capabilities.followups", `must be "steer", "queue" or empty`}
	}
	if in.Capabilities != (delivery.Capabilities{}) {
		c := in.Capabilities
		d.Capabilities = &c
	}

	runs, err := heartbeatList("details.active_runs", in.ActiveRuns, HeartbeatMaxActiveRuns, heartbeatRunID, HeartbeatMaxRunIDChars, "a run id")
	if err != nil {
		return delivery.Heartbeat{}, err
	}
	d.ActiveRuns = runs
	reasons, err := heartbeatList("details.degraded_reasons", in.DegradedReasons, HeartbeatMaxReasons, heartbeatReason, HeartbeatMaxReasonChars, "a code")
	if err != nil {
		return delivery.Heartbeat{}, err
	}
	d.DegradedReasons = reasons
	if len(reasons) > 0 {
		hb.Status = delivery.HeartbeatDegraded
	}
	return hb, nil
}

func heartbeatWord(field, s string, form *regexp.Regexp, maxLen int, what string) error {
	if len(s) > maxLen || !form.MatchString(s) {
		return &HeartbeatError{field, "must be " + what + " matching " + form.String() + " of at most " + strconv.Itoa(maxLen) + " characters"}
	}
	return nil
}

// heartbeatList checks a list's length, each item's form, and that no
// item is there twice; it returns a copy, nil for an empty list.
func heartbeatList(field string, items []string, maxItems int, form *regexp.Regexp, maxLen int, what string) ([]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	if len(items) > maxItems {
		return nil, &HeartbeatError{field, "must have at most " + strconv.Itoa(maxItems) + " items"}
	}
	seen := make(map[string]bool, len(items))
	for i, s := range items {
		f := field + "[" + strconv.Itoa(i) + "]"
		if err := heartbeatWord(f, s, form, maxLen, what); err != nil {
			return nil, err
		}
		if seen[s] {
			return nil, &HeartbeatError{f, "repeats an earlier item"}
		}
		seen[s] = true
	}
	return append([]string(nil), items...), nil
}
