package runspage

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/webui"
)

// statuses are the filter's choices, in lifecycle order.
var statuses = []gateway.Status{gateway.StatusQueued, gateway.StatusRunning, gateway.StatusWaitingUser,
	gateway.StatusCompleted, gateway.StatusFailed, gateway.StatusCancelled}

// listView is one page of the list.
type listView struct {
	Rows []listRow
	// Admin shows the tenant column and the tenant filter; Service the
	// caller column (a user's runs are all their own).
	Admin, Service bool
	Tenant         string // the operator's tenant filter
	Status         string // the status filter
	Statuses       []gateway.Status
	Next           string // the next page's path, "" on the last
	First          string // the first page's path, when this is not it
}

type listRow struct {
	ID, Tenant, Instance, Caller string
	Status, StatusClass          string
	Started, Reason              string
	Link                         string
}

func (h *handler) listView(runs []gateway.Run, f gateway.RunFilter, p Principal, tenant, status string, paged bool) *listView {
	v := &listView{Admin: p.Admin, Service: p.Admin || p.Service, Tenant: tenant, Status: status, Statuses: statuses}
	for _, r := range runs {
		started := r.StartedAt
		if started.IsZero() {
			started = r.CreatedAt
		}
		v.Rows = append(v.Rows, listRow{ID: r.ID, Tenant: r.TenantID, Instance: r.InstanceID, Caller: callerText(r.Caller),
			Status: string(r.Status), StatusClass: statusClass(r.Status), Started: stamp(started),
			Reason: shorten(r.Reason, 200), Link: h.runPath(r.ID)})
	}
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if p.Admin && tenant != "" {
		q.Set("tenant", tenant)
	}
	if paged {
		v.First = h.path + query(q)
	}
	if n := len(runs); n > 0 && n == f.Limit {
		q.Set("after", cursor(runs[n-1]))
		v.Next = h.path + query(q)
	}
	return v
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func callerText(c gateway.Caller) string {
	switch {
	case c.UserID != "":
		return "user " + c.UserID
	case c.Service:
		return "service " + c.Subject
	}
	return c.Subject
}

// statusClass is a status as a CSS class: waiting_user, completed…
func statusClass(s gateway.Status) string { return strings.ToLower(string(s)) }

// stamp writes a time as the page shows it, in UTC to the millisecond
// (the live rows' script writes the same form).
func stamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// runView is a run's page.
type runView struct {
	Run         *gateway.Run
	Status      string
	StatusClass string
	Caller      string
	Created     string
	Started     string
	Ended       string
	Artifacts   []artifactView
	Events      []eventRow
	// After is the sequence the live stream starts after; Stream its URL
	// ("" for a run that has ended: nothing more will come).
	After     int64
	Stream    string
	CanCancel bool
	Pause     *pauseView
	Path      string
}

func (h *handler) runView(run *gateway.Run, events []gateway.Event) *runView {
	v := &runView{Run: run, Status: string(run.Status), StatusClass: statusClass(run.Status), Caller: callerText(run.Caller),
		Created: stamp(run.CreatedAt), Started: stamp(run.StartedAt), Ended: stamp(run.EndedAt),
		CanCancel: !run.Status.Terminal(), Path: h.runPath(run.ID)}
	for _, a := range run.Artifacts {
		v.Artifacts = append(v.Artifacts, artifactOf(a))
	}
	for _, e := range events {
		v.Events = append(v.Events, rowOf(e))
		v.After = e.Sequence
	}
	if !run.Status.Terminal() {
		v.Stream = h.runPath(run.ID) + "/events?after=" + strconv.FormatInt(v.After, 10)
	}
	if run.Status == gateway.StatusWaitingUser {
		v.Pause = pauseOf(run.Pause)
	}
	return v
}

// eventRow is one event as the page lists it.
type eventRow struct {
	Seq     int64
	At      string
	Type    string
	Summary string
	Class   string
}

// maxSummary bounds an event's text on the page; the script cuts at the
// same length.
const maxSummary = 2000

func rowOf(e gateway.Event) eventRow {
	return eventRow{Seq: e.Sequence, At: stamp(e.At), Type: e.Type, Summary: summary(e.Payload), Class: typeClass(e.Type)}
}

// typeClass is an event type as a CSS class: message.delta →
// t-message-delta.
func typeClass(t string) string {
	var b strings.Builder
	b.WriteString("t-")
	for _, r := range t {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// summary is what a row says of a payload: its content, message, the
// artifact it carries, or status (with its reason), else the payload as JSON, cut to maxSummary
// characters. runs.js says the same of a live event.
func summary(payload json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(payload, &m) == nil {
		if s, ok := m["content"].(string); ok && s != "" {
			return cut(s)
		}
		if s, ok := m["message"].(string); ok && s != "" {
			return cut(s)
		}
		if id, ok := m["artifact_id"].(string); ok && id != "" {
			return cut(artifactSummary(m, id))
		}
		if s, ok := m["status"].(string); ok && s != "" {
			if r, ok := m["reason"].(string); ok && r != "" {
				s += ": " + r
			}
			return cut(s)
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, payload) != nil {
		return cut(string(payload))
	}
	return cut(webui.PrettyJSON(buf.Bytes()))
}

// artifactSummary names an artifact event's artifact and its text.
func artifactSummary(m map[string]any, id string) string {
	label := id
	if n, ok := m["name"].(string); ok && n != "" {
		label = n
	}
	var text []string
	parts, _ := m["parts"].([]any)
	for _, p := range parts {
		if pm, ok := p.(map[string]any); ok {
			if t, ok := pm["text"].(string); ok && t != "" {
				text = append(text, t)
			}
		}
	}
	if len(text) == 0 {
		return "artifact " + label
	}
	return "artifact " + label + ": " + strings.Join(text, "")
}

// cut bounds s to maxSummary characters, marking the cut.
func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxSummary {
		return s
	}
	return string([]rune(s)[:maxSummary]) + "…"
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// artifactView is an artifact as the page shows it: its text parts as
// text, data as JSON, files by name, the skill's metadata as a table.
type artifactView struct {
	ID, Name, Description string
	Parts                 []partView
	Skill                 []kv
}

type partView struct {
	Text      string // a text part
	JSON      string // a data part
	File      string // a file part's name
	URL       string // a file part's URL, shown as text
	MediaType string
	Bytes     int
}

type kv struct{ Key, Value string }

func artifactOf(a gateway.Artifact) artifactView {
	v := artifactView{ID: a.ArtifactID, Name: a.Name, Description: a.Description}
	for _, p := range a.Parts {
		// Control data for the platform never shows, even if a store
		// kept some.
		if hitl.Tagged(p, hitl.MetadataMediaType) || hitl.Tagged(p, hitl.SkillMetadataMediaType) {
			continue
		}
		pv := partView{MediaType: p.MediaType}
		switch p.Kind {
		case a2a.PartText:
			pv.Text = p.Text
		case a2a.PartData:
			pv.JSON = webui.PrettyJSON(p.Data)
		case a2a.PartRaw:
			pv.File, pv.Bytes = fileName(p.Filename), len(p.Raw)
		case a2a.PartURL:
			pv.File, pv.URL = fileName(p.Filename), p.URL
		default:
			continue
		}
		v.Parts = append(v.Parts, pv)
	}
	for _, k := range slices.Sorted(maps.Keys(a.SkillMetadata)) {
		v.Skill = append(v.Skill, kv{Key: k, Value: valueText(a.SkillMetadata[k])})
	}
	return v
}

func fileName(n string) string {
	if n == "" {
		return "(unnamed file)"
	}
	return n
}

// valueText shows a metadata value: a string as it is, anything else as
// JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return webui.PrettyJSON(b)
}

// pauseView is the reply box of a WAITING_USER run.
type pauseView struct {
	Kind    string // "hitl", "oauth", "write" or "text" (no payload the page knows)
	Content string

	// A HITL request.
	HITLType    string
	Actions     []hitl.Action
	InputType   string // the HTML input type
	Textarea    bool
	Options     []option
	Placeholder string
	Required    bool
	Fields      []hitl.InputField
	Plan        string

	// A connector's OAuth pause.
	Connector string
	AuthURL   string // only an http or https URL
	RawURL    string // what the agent sent, shown when AuthURL is refused

	// A write confirmation.
	Tool, CallID string
	Details      string
}

type option struct{ Value, Label string }

// pausePayload is Run.Pause: the pause's event type and payload.
type pausePayload struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	CallID  string          `json:"call_id"`
}

// htmlInput maps a HITL input type to an HTML one; the agent checks the
// value either way.
var htmlInput = map[hitl.InputType]string{hitl.InputText: "text", hitl.InputNumber: "number", hitl.InputEmail: "email",
	hitl.InputURL: "url", hitl.InputDate: "date", hitl.InputPassword: "password"}

func pauseOf(raw json.RawMessage) *pauseView {
	var pp pausePayload
	var body map[string]json.RawMessage
	if json.Unmarshal(raw, &pp) != nil || json.Unmarshal(pp.Payload, &body) != nil {
		return &pauseView{Kind: "text"}
	}
	v := &pauseView{}
	str := func(key string) string {
		var s string
		_ = json.Unmarshal(body[key], &s)
		return s
	}
	v.Content = str("content")
	switch pp.Type {
	case gateway.EventWriteConfirmationRequired:
		v.Kind, v.Tool, v.CallID = "write", str("tool_name"), pp.CallID
		if v.CallID == "" {
			v.CallID = str("call_id")
		}
		var wc hitl.WriteConfirmation
		if json.Unmarshal(body[hitl.KeyWriteConfirmation], &wc) == nil && len(wc.Extra) > 0 {
			b, _ := json.Marshal(wc.Extra)
			v.Details = webui.PrettyJSON(b)
		}
	case gateway.EventOAuthRequired:
		v.Kind, v.Connector, v.RawURL = "oauth", str("connector"), str("auth_url")
		if u, err := url.Parse(v.RawURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			v.AuthURL = v.RawURL
		}
	case gateway.EventHITL:
		var h hitl.HITL
		if json.Unmarshal(body[hitl.KeyHITL], &h) != nil {
			v.Kind = "text"
			return v
		}
		v.Kind, v.HITLType, v.Actions, v.Fields = "hitl", string(h.Type), h.Actions, h.Fields
		if h.Content != "" {
			v.Content = h.Content
		}
		v.InputType = htmlInput[h.InputType]
		switch h.InputType {
		case hitl.InputTextarea:
			v.Textarea = true
		case hitl.InputBoolean:
			v.Options = []option{{"true", "Yes"}, {"false", "No"}}
		}
		if val := h.Validation; val != nil {
			v.Placeholder, v.Required = val.Placeholder, val.Required
			if h.InputType == hitl.InputSelect {
				for _, o := range val.Options {
					label := o["label"]
					if label == "" {
						label = o["value"]
					}
					v.Options = append(v.Options, option{o["value"], label})
				}
			}
		}
		if v.InputType == "" && !v.Textarea && v.Options == nil {
			v.InputType = "text"
		}
		if h.Plan != nil {
			b, _ := json.Marshal(h.Plan)
			v.Plan = webui.PrettyJSON(b)
		}
	default:
		v.Kind = "text"
	}
	return v
}
