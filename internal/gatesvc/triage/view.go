package triage

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/webui"
)

// listView is one page of the list.
type listView struct {
	Rows  []listRow
	Admin bool   // show the tenant column
	Next  string // the next page's path, "" on the last
	First string // the first page's path, when this is not it
}

type listRow struct {
	Tenant, ActionType, Agent, Session, ActionID string
	State, StateClass                            string
	TimeLeft, Rule, Age                          string
	Link                                         string
}

func (h *handler) listView(l gate.ActionList, paged, admin bool) *listView {
	v := &listView{Admin: admin}
	now := h.now()
	for _, a := range l.Actions {
		v.Rows = append(v.Rows, listRow{
			Tenant: a.TenantID, ActionType: a.ActionType, Agent: a.AgentID, Session: a.SessionID, ActionID: a.ActionID,
			State: stateLabel(a.State), StateClass: string(a.State),
			TimeLeft: timeLeft(a, now), Rule: a.RuleIDCited, Age: age(now.Sub(a.CreatedAt)),
			Link: h.actionPath(a.TenantID, a.SessionID, a.ActionID, admin),
		})
	}
	if l.Next != "" {
		v.Next = h.path + "?after=" + url.QueryEscape(l.Next)
	}
	if paged {
		v.First = h.path
	}
	return v
}

// stateLabel is the word operators see, after the Python gate SDK's PAUSED
// for a held write.
func stateLabel(s gate.ActionState) string {
	switch s {
	case gate.ActionHeld:
		return "PAUSED"
	case gate.ActionUnconfirmed:
		return "UNCONFIRMED"
	case gate.ActionKilled:
		return "BLOCKED"
	}
	return strings.ToUpper(string(s))
}

// timeLeft is what remains of a hold's window.
func timeLeft(a gate.ActionRecord, now time.Time) string {
	switch {
	case a.State != gate.ActionHeld:
		return "—"
	case a.HoldIndefinite && a.HoldExpiresAt.IsZero():
		return "indefinite"
	case a.HoldExpiresAt.IsZero():
		return "—"
	}
	left := a.HoldExpiresAt.Sub(now)
	if left <= 0 {
		return "expired"
	}
	return duration(left)
}

// duration writes d to the second, rounding up so "0s" never shows for a
// hold that is still open.
func duration(d time.Duration) string {
	d = (d + time.Second - 1).Truncate(time.Second)
	return d.String()
}

func age(d time.Duration) string {
	if d < 0 {
		return "0s"
	}
	return d.Truncate(time.Second).String() + " ago"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// detailView is everything the detail page shows of one action.
type detailView struct {
	Rec        gate.ActionRecord
	State      string
	StateClass string
	Created    string
	Updated    string

	// Hold.
	HoldWindow  string
	HoldExpires string
	TimeLeft    string
	DecidedAt   string
	// Claim.
	ClaimedAt      string
	AcknowledgedAt string

	// The submitted action: StrictError is set when gate.DecodeAction
	// refuses it, RawError when it is not even loose JSON of an action, in
	// which case only RawAction shows.
	StrictError string
	RawError    string
	Action      *looseAction
	ContextJSON string
	Evidence    []evidenceView
	RawAction   string

	// The decision record.
	Decision      *gate.Decision
	DecisionError string
	RawDecision   string
	Aggregates    []aggregate

	// Forms.
	Tenant     string // the hidden tenant field (admin)
	DecidePath string
	CanHold    bool // approve / deny
	CanConfirm bool // confirm executed / not executed
}

// looseAction reads the parts of a submitted action the page shows
// besides the record's own fields, without gate.Action's checks, so the
// page shows what was sent even when it does not validate.
type looseAction struct {
	ContextType string          `json:"context_type"`
	Context     json.RawMessage `json:"context"`
	Evidence    []gate.Evidence `json:"evidence"`
	Reasoning   string          `json:"reasoning"`
	Resume      bool            `json:"resume"`
}

type evidenceView struct {
	gate.Evidence
	ObservedAt string
	Arguments  string
	Result     string
}

type aggregate struct {
	Name  string
	Value string
}

func (h *handler) detailView(rec gate.ActionRecord) *detailView {
	now := h.now()
	v := &detailView{
		Rec: rec, State: stateLabel(rec.State), StateClass: string(rec.State),
		Created: stamp(rec.CreatedAt), Updated: stamp(rec.UpdatedAt),
		HoldExpires: stamp(rec.HoldExpiresAt), TimeLeft: timeLeft(rec, now), DecidedAt: stamp(rec.DecidedAt),
		ClaimedAt: stamp(rec.ClaimedAt), AcknowledgedAt: stamp(rec.AcknowledgedAt),
		Tenant: rec.TenantID,
		// The detail page is reached with the tenant in the query for the
		// admin; the form carries it in a hidden field instead.
		DecidePath: h.actionPath("", rec.SessionID, rec.ActionID, false) + "/decide",
		CanHold:    rec.State == gate.ActionHeld,
		CanConfirm: rec.State == gate.ActionUnconfirmed,
	}
	switch {
	case rec.HoldIndefinite:
		v.HoldWindow = "indefinite"
	case rec.HoldWindow > 0:
		v.HoldWindow = rec.HoldWindow.String()
	}

	v.RawAction = webui.PrettyJSON(rec.Action)
	if _, err := gate.DecodeAction(rec.Action); err != nil {
		v.StrictError = err.Error()
	}
	var a looseAction
	if err := json.Unmarshal(rec.Action, &a); err != nil {
		v.RawError = err.Error()
	} else {
		v.Action = &a
		if len(a.Context) > 0 {
			v.ContextJSON = webui.PrettyJSON(a.Context)
		}
		for _, e := range a.Evidence {
			ev := evidenceView{Evidence: e, ObservedAt: stamp(e.Provenance.ObservedAt)}
			if len(e.Arguments) > 0 {
				ev.Arguments = webui.PrettyJSON(e.Arguments)
			}
			if len(e.Result) > 0 {
				ev.Result = webui.PrettyJSON(e.Result)
			}
			v.Evidence = append(v.Evidence, ev)
		}
	}

	if len(rec.Decision) > 0 {
		var d gate.Decision
		if err := json.Unmarshal(rec.Decision, &d); err != nil {
			v.DecisionError = err.Error()
			v.RawDecision = webui.PrettyJSON(rec.Decision)
		} else {
			v.Decision = &d
			for _, k := range slices.Sorted(maps.Keys(d.Aggregates)) {
				v.Aggregates = append(v.Aggregates, aggregate{Name: k, Value: strconv.FormatFloat(d.Aggregates[k], 'g', -1, 64)})
			}
		}
	}
	return v
}

// micros writes a latency in microseconds as a duration.
func micros(us int64) string {
	return (time.Duration(us) * time.Microsecond).String()
}
