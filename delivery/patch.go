package delivery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a run's progress, which a patch may not exceed.
const (
	MaxPatchOps        = 100
	MaxStatusLineChars = 200
	MaxExcerptChars    = 1000
	MaxModelChars      = 200
	MaxMetrics         = 64
	MaxPlanItems       = 100
	MaxSteps           = 1000
	MaxStepTextChars   = 2000
	MaxFollowups       = 1000
)

// PatchPath is one row of PatchPaths: a path pattern (a segment in
// braces stands for a name or id) and the operations allowed on it.
type PatchPath struct {
	Pattern string
	Ops     []string
}

// PatchPaths are the only paths a RunPatch may touch. Set semantics: add
// and replace set a member whether or not it is there, and remove of an
// absent member changes nothing, so a patch sent again after a rebase
// does what it did the first time. /state and everything else are
// refused with patch_path_forbidden.
var PatchPaths = []PatchPath{
	{"/status_line", []string{"add", "replace", "remove"}},
	{"/last_text_excerpt", []string{"add", "replace", "remove"}},
	{"/model", []string{"add", "replace", "remove"}},
	{"/metrics/{name}", []string{"add", "replace", "remove"}},
	{"/last_api_retry", []string{"add", "replace", "remove"}},
	{"/cost", []string{"add", "replace"}},
	{"/plan", []string{"add", "replace", "remove"}},
	{"/steps/-", []string{"add"}},
	{"/steps/{step_id}/status", []string{"add", "replace"}},
	{"/steps/{step_id}/title", []string{"add", "replace", "remove"}},
	{"/steps/{step_id}/detail", []string{"add", "replace", "remove"}},
	{"/steps/{step_id}/finished_at", []string{"add", "replace"}},
	{"/followups/{message_id}", []string{"add", "replace"}},
}

// Field error codes of a refused patch (Problem.Errors[i].Code), each
// with the pointer "/ops/<i>" of the operation.
const (
	CodePatchPathForbidden = "patch_path_forbidden"
	CodePatchValueInvalid  = "patch_value_invalid"
	CodePatchStepUnknown   = "patch_step_unknown"
	CodePatchTooLarge      = "patch_too_large"
)

var (
	metricName = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)
	idSegment  = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._:-]{0,127}$`)
	currency   = regexp.MustCompile(`^[A-Z]{3}$`)
)

// matchPath finds the row of PatchPaths that path matches and the value
// of its one braced segment.
func matchPath(path string) (row PatchPath, param string, ok bool) {
	segs := strings.Split(path, "/")
	for _, r := range PatchPaths {
		pat := strings.Split(r.Pattern, "/")
		if len(pat) != len(segs) {
			continue
		}
		param, ok = "", true
		for i, p := range pat {
			if strings.HasPrefix(p, "{") {
				if !idSegment.MatchString(segs[i]) {
					ok = false
					break
				}
				param = segs[i]
			} else if p != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return r, param, true
		}
	}
	return PatchPath{}, "", false
}

// CheckPatch refuses a patch whose operations touch a path or use an
// operation PatchPaths does not allow, or are too many; it does not look
// at values (ApplyPatch does). A client checks before it sends.
func CheckPatch(ops []PatchOp) []FieldError {
	if len(ops) > MaxPatchOps {
		return []FieldError{{Code: CodePatchTooLarge, Pointer: "/ops", Detail: fmt.Sprintf("at most %d operations", MaxPatchOps)}}
	}
	var errs []FieldError
	for i, op := range ops {
		row, _, ok := matchPath(op.Path)
		if !ok || !contains(row.Ops, op.Op) {
			errs = append(errs, FieldError{Code: CodePatchPathForbidden, Pointer: "/ops/" + strconv.Itoa(i),
				Detail: "operation " + quote(op.Op) + " is not allowed on path " + quote(op.Path)})
		}
	}
	return errs
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// quote bounds what a refusal repeats of a caller's input.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// ApplyPatch applies ops to p, all or nothing: on any refused operation
// it returns the field errors and leaves p as it was.
func ApplyPatch(p *Progress, ops []PatchOp) []FieldError {
	if errs := CheckPatch(ops); errs != nil {
		return errs
	}
	next := p.clone()
	for i, op := range ops {
		if err := next.apply(op); err != nil {
			code := CodePatchValueInvalid
			if pe, ok := err.(*patchErr); ok {
				code = pe.code
			}
			return []FieldError{{Code: code, Pointer: "/ops/" + strconv.Itoa(i), Detail: err.Error()}}
		}
	}
	*p = next
	return nil
}

type patchErr struct{ code, msg string }

func (e *patchErr) Error() string { return e.msg }

func (p Progress) clone() Progress {
	c := p
	if p.Metrics != nil {
		c.Metrics = make(map[string]float64, len(p.Metrics))
		for k, v := range p.Metrics {
			c.Metrics[k] = v
		}
	}
	if p.LastAPIRetry != nil {
		r := *p.LastAPIRetry
		c.LastAPIRetry = &r
	}
	if p.Cost != nil {
		m := *p.Cost
		c.Cost = &m
	}
	if p.Plan != nil {
		c.Plan = &Plan{Items: append([]PlanItem(nil), p.Plan.Items...)}
	}
	c.Steps = append([]Step(nil), p.Steps...)
	if p.Followups != nil {
		c.Followups = make(map[string]FollowupState, len(p.Followups))
		for k, v := range p.Followups {
			c.Followups[k] = v
		}
	}
	return c
}

// decodeValue reads an operation's value into v strictly: the value as
// JSON, no unknown members.
func decodeValue(value any, v any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("value is not JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("value is not of the path's shape: %w", err)
	}
	return nil
}

func text(value any, max int) (string, error) {
	var s string
	if err := decodeValue(value, &s); err != nil {
		return "", err
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max {
		return "", fmt.Errorf("value must be UTF-8 text of at most %d characters", max)
	}
	return s, nil
}

func (p *Progress) apply(op PatchOp) error {
	row, param, _ := matchPath(op.Path)
	remove := op.Op == "remove"
	switch row.Pattern {
	case "/status_line":
		return setText(&p.StatusLine, op, remove, MaxStatusLineChars)
	case "/last_text_excerpt":
		return setText(&p.LastTextExcerpt, op, remove, MaxExcerptChars)
	case "/model":
		return setText(&p.Model, op, remove, MaxModelChars)
	case "/metrics/{name}":
		if !metricName.MatchString(param) {
			return fmt.Errorf("metric names match %s", metricName)
		}
		if remove {
			delete(p.Metrics, param)
			return nil
		}
		var f float64
		if err := decodeValue(op.Value, &f); err != nil {
			return err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("a metric is a finite number")
		}
		if _, ok := p.Metrics[param]; !ok && len(p.Metrics) >= MaxMetrics {
			return fmt.Errorf("at most %d metrics", MaxMetrics)
		}
		if p.Metrics == nil {
			p.Metrics = map[string]float64{}
		}
		p.Metrics[param] = f
	case "/last_api_retry":
		if remove {
			p.LastAPIRetry = nil
			return nil
		}
		var r APIRetry
		if err := decodeValue(op.Value, &r); err != nil {
			return err
		}
		if r.Attempt < 0 || utf8.RuneCountInString(r.Reason) > MaxStatusLineChars {
			return fmt.Errorf("attempt is not negative and reason at most %d characters", MaxStatusLineChars)
		}
		p.LastAPIRetry = &r
	case "/cost":
		var m Money
		if err := decodeValue(op.Value, &m); err != nil {
			return err
		}
		if m.AmountMicros < 0 || !currency.MatchString(m.Currency) || !m.IsEstimate {
			return fmt.Errorf("a cost is a non-negative estimate (is_estimate true) in an ISO 4217 currency")
		}
		p.Cost = &m
	case "/plan":
		if remove {
			p.Plan = nil
			return nil
		}
		var pl Plan
		if err := decodeValue(op.Value, &pl); err != nil {
			return err
		}
		if len(pl.Items) > MaxPlanItems {
			return fmt.Errorf("at most %d plan items", MaxPlanItems)
		}
		for _, it := range pl.Items {
			if utf8.RuneCountInString(it.Title) > MaxStepTextChars {
				return fmt.Errorf("a plan item's title is at most %d characters", MaxStepTextChars)
			}
		}
		p.Plan = &pl
	case "/steps/-":
		var s Step
		if err := decodeValue(op.Value, &s); err != nil {
			return err
		}
		if err := checkStep(s); err != nil {
			return err
		}
		for _, have := range p.Steps {
			if have.ID == s.ID {
				return nil // sent again after a rebase: it is there
			}
		}
		if len(p.Steps) >= MaxSteps {
			return fmt.Errorf("at most %d steps", MaxSteps)
		}
		if s.Status == "" {
			s.Status = StepRunning
		}
		s.Ordinal = len(p.Steps) + 1
		p.Steps = append(p.Steps, s)
	case "/steps/{step_id}/status", "/steps/{step_id}/title", "/steps/{step_id}/detail", "/steps/{step_id}/finished_at":
		i := p.step(param)
		if i < 0 {
			return &patchErr{CodePatchStepUnknown, "no step " + quote(param)}
		}
		st := &p.Steps[i]
		switch row.Pattern[strings.LastIndexByte(row.Pattern, '/')+1:] {
		case "status":
			var s StepStatus
			if err := decodeValue(op.Value, &s); err != nil {
				return err
			}
			if !s.valid() {
				return fmt.Errorf("a step's status is running, succeeded, failed or skipped")
			}
			st.Status = s
		case "title":
			return setText(&st.Title, op, remove, MaxStepTextChars)
		case "detail":
			return setText(&st.Detail, op, remove, MaxStepTextChars)
		case "finished_at":
			var t time.Time
			if err := decodeValue(op.Value, &t); err != nil {
				return err
			}
			st.FinishedAt = t
		}
	case "/followups/{message_id}":
		var f FollowupState
		if err := decodeValue(op.Value, &f); err != nil {
			return err
		}
		if f != FollowupDelivered && f != FollowupAbsorbed {
			return fmt.Errorf("a follow-up is delivered or absorbed")
		}
		have, ok := p.Followups[param]
		if !ok && len(p.Followups) >= MaxFollowups {
			return fmt.Errorf("at most %d follow-ups", MaxFollowups)
		}
		if have == FollowupAbsorbed {
			return nil // forward only
		}
		if p.Followups == nil {
			p.Followups = map[string]FollowupState{}
		}
		p.Followups[param] = f
	}
	return nil
}

func setText(dst *string, op PatchOp, remove bool, max int) error {
	if remove {
		*dst = ""
		return nil
	}
	s, err := text(op.Value, max)
	if err != nil {
		return err
	}
	*dst = s
	return nil
}

func (p *Progress) step(id string) int {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return i
		}
	}
	return -1
}

func (s StepStatus) valid() bool {
	switch s {
	case StepRunning, StepSucceeded, StepFailed, StepSkipped:
		return true
	}
	return false
}

func checkStep(s Step) error {
	if !idSegment.MatchString(s.ID) {
		return fmt.Errorf("a step needs an id (letters, digits, . _ : -)")
	}
	if s.ParentStepID != "" && !idSegment.MatchString(s.ParentStepID) {
		return fmt.Errorf("parent_step_id is not an id")
	}
	if s.Kind == "" || utf8.RuneCountInString(s.Kind) > 64 || utf8.RuneCountInString(s.Name) > 200 {
		return fmt.Errorf("a step has a kind of at most 64 characters and a name of at most 200")
	}
	if utf8.RuneCountInString(s.Title) > MaxStepTextChars || utf8.RuneCountInString(s.Detail) > MaxStepTextChars {
		return fmt.Errorf("a step's title and detail are at most %d characters", MaxStepTextChars)
	}
	if s.Status != "" && !s.Status.valid() {
		return fmt.Errorf("a step's status is running, succeeded, failed or skipped")
	}
	return nil
}
